// Package agent runs a config.Config: it gathers from the inputs, carries every metric
// through the processors and aggregators to one batch.Writer per output, which buffers and
// flushes it, and reloads and shuts down without losing what the writers hold. NewAgent
// prepares the plugins; Run runs them until its context ends, Once gathers once, flushes
// and closes (morse --once), and Test hands one gather's metrics to a function instead of
// the outputs (morse --test). Reload swaps in a new Config, Stuck and Status serve the
// service manager's watchdog and status line, and Outputs reports each output's counters.
//
// # The path of a batch
//
// What an input adds, one metric or a batch that a listener parsed, goes through these
// functions, file by file:
//
//  1. input.go: runningInput.loop calls gatherOnce every interval, which calls the plugin's
//     Gather with the input's accumulator; a service input was given the same kind of
//     accumulator by runningInput.start and adds to it whenever it receives. With
//     time_source, inputopts.go's timed stamps the gather's metrics with its start or end.
//  2. input.go (AddMetric) and batchacc.go (AddMetrics, for a batch): the accumulator runs
//     process on each metric (inputopts.go, then runningInput.process in input.go): the
//     input's filter, its name options, its tags and the global tags, and the precision.
//  3. processing.go: when the config has processors or aggregators, stage.run applies the
//     processors in order and hands each metric to the aggregators, which may drop the
//     original. The aggregators' summaries take the rest of the path later, each period,
//     from emitSummaries, through the processors again unless
//     skip_processors_after_aggregators.
//  4. input.go (fanOut) and batchacc.go (fanOutBatch): the result goes to every output of
//     the current agentState. flow.go remembers which outputs an input feeds, so that a
//     listener can wait for room in them (WaitForRoom, WaitForDisk) before it adds.
//  5. reload.go (runningOutput.add), batchacc.go (addBatch) and batchfilter.go
//     (addFiltered): each output applies its filter, expands a line metric that it cannot
//     write as text, renames it, and calls batch.Writer.Write or WriteBatch.
//  6. Package batch takes it from there: the buffer, the scheduler, the flusher and the
//     chain retry → isolate → timeout → Output.Write, with every drop counted by reason
//     (see that package's doc). agent.go's startOutput built the Writer from the output's
//     config, with buffer.go's buffer (memory or disk) and deadletter.go's dead-letter file.
//
// The path reads the agentState through an atomic pointer and takes no lock. A reload
// (reload.go) prepares the new plugins, keeps each running input and output whose config
// did not change (and an output's buffer with it), and then stores the new agentState.
// Shutdown (shutdown.go) stops the inputs and then closes every Writer, which flushes what
// it holds, all within one shutdown_timeout.
package agent
