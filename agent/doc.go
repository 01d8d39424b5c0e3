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
// files, one stop each:
//
//  1. input.go: runningInput.loop calls gatherOnce every interval, which calls the plugin's
//     Gather with the input's accumulator; a service input was given the same kind of
//     accumulator by runningInput.start and adds to it whenever it receives, a listener a
//     batch at a time (morse.MetricBatch), a queue consumer a group at a time (tracking.go).
//  2. accumulator.go: AddMetric, or AddMetrics for a batch, applies the input's options to
//     each metric (process: the input's filter, its name options, its tags and the global
//     tags, the precision and time_source's time) and hands the result to every output of
//     the current agentState (fanOut, fanOutBatch). flow.go remembers which outputs an
//     input feeds, so that a listener can wait for room in them (WaitForRoom, WaitForDisk)
//     before it adds.
//  3. processing.go, only when the config has processors or aggregators, between the two
//     steps of accumulator.go: stage.run applies the processors in order and hands each
//     metric to the aggregators, which may drop the original. The aggregators' summaries
//     take the rest of the path later, each period, from emitSummaries, through the
//     processors again unless skip_processors_after_aggregators.
//  4. output.go: runningOutput.add, or addBatch for a batch, applies the output's filter,
//     expands a line metric that the output does not write as text, renames it, and calls
//     batch.Writer.Write or WriteBatch, once per batch.
//  5. Package batch takes it from there: writer.go's WriteBatch takes the references of the
//     tracked metrics with one call of morse.RetainTracked (the root package's tracking.go,
//     where they are settled too) and adds the batch to the buffer; then the scheduler, the
//     flusher and the chain retry → isolate → timeout → Output.Write, with every drop
//     counted by reason (see that package's doc). output.go's startOutput built the Writer
//     from the output's config, with buffer.go's buffer (memory or disk) and deadletter.go's
//     dead-letter file.
//
// So a listener's batch goes from AddMetrics to the buffer in 6 stops, 8 with processors,
// and climbs back up once, from the root package to batch:
//
//	accumulator.go → [processing.go → accumulator.go →] output.go → batch/writer.go →
//	    tracking.go (morse) → batch/writer.go → batch/memory.go (or the disk buffer)
//
// A stop is the file of a function that takes the batch; Metric's own methods and the
// filter's, which each stop calls on single metrics, are not counted.
//
// The path reads the agentState through an atomic pointer and takes no lock. A reload
// (reload.go) prepares the new plugins, keeps each running input and output whose config
// did not change (and an output's buffer with it), and then stores the new agentState.
// Shutdown (shutdown.go) stops the inputs and then closes every Writer, which flushes what
// it holds, all within one shutdown_timeout.
package agent
