// Package exec runs physical plans: the message type, the fused operators,
// the exchanges and the job runtime.
//
// # One stream of messages
//
// Every edge of the DAG carries Message values in order per pair of
// producing and consuming subtask: a record batch, or a signal (barrier,
// cancel marker, watermark, idleness, end of data, shutdown). Each consumer
// reads all its input channels from one Go channel through its input gate
// (gate.go); every channel has credits for ChannelCapacity batches, so a
// slow consumer blocks its producers: that is backpressure, and it reaches
// the sources. Signals take no credit and never travel on side channels.
// Batch.Ops is immutable once sent.
//
// # Operators and checkpoints
//
// Operators implement Operator (operator.go) and are built from a registry;
// keyed state lives in package exec/state. The coordinator
// (coordinator.go) triggers checkpoints in the sources and tells every
// subtask when one completes or aborts; aligned, at-least-once and
// unaligned barrier handling is the gate's (unaligned.go: channel state).
// Event time reaches operators as ProcessWatermark (the minimum over input
// channels); processing time as OnProcessingTime, when the job's Clock
// passes a time the operator asked for with OpContext.WakeAt (proctime.go).
//
// # Ownership rule
//
// A message carrying a record hands over exactly one reference. The receiver
// releases it or forwards it; it calls Retain only to keep it longer (the
// broadcast exchange and a task with several output edges retain once per
// extra receiver). Operators own the
// batch passed to Process and pass ownership of what they emit to their
// Collector. Sinks do not own what Write receives. Kernels (package
// exec/expr) read typed slices and never touch reference counts. When RunJob
// returns, every goroutine has exited and every in-flight record has been
// released (tests use memory.NewCheckedAllocator to prove it).
//
// # Execution
//
// Each task of the plan runs Parallelism subtasks, one goroutine each, under
// one errgroup: the first failure cancels the job's context, which every
// blocking send and receive observes. Stateless operators are fused into the
// task's chain and called directly. A task ends in a sink or in one or
// more output edges (a source shared by a statement set's INSERTs feeds
// each reader; every batch and signal goes down every edge in the same
// order). Hash exchanges route each row to the
// subtask owning its key group (hash mod max parallelism, then
// keyGroup*parallelism/maxParallelism, as Flink) so that state can later be
// redistributed by key group.
//
// This package must not import the session, the shell, or the parser.
package exec
