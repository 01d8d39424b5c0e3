// Package sysinputs holds BenchmarkGatherSystemInputs, which measures one gather of each
// default system input (cpu, mem, disk, diskio, net, system) on the machine it runs on. It
// has no code of its own: it exists so that the benchmark can import every input without
// any one input package importing the others.
package sysinputs
