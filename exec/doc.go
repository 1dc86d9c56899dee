// Package exec runs physical plans: the message type, the fused operators,
// the exchanges and the job runtime.
//
// # One stream of messages
//
// Every edge of the DAG is a set of bounded Go channels (one per producing
// subtask and consuming subtask) carrying Message values in order: a record
// batch, or a signal (end of input now; barriers and watermarks later). A
// full channel blocks its producer: that is backpressure, and it reaches the
// sources. Signals never travel on side channels.
//
// # Ownership rule
//
// A message carrying a record hands over exactly one reference. The receiver
// releases it or forwards it; it calls Retain only to keep it longer (the
// broadcast exchange retains once per extra receiver). Operators own the
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
// task's chain and called directly. Hash exchanges route each row to the
// subtask owning its key group (hash mod max parallelism, then
// keyGroup*parallelism/maxParallelism, as Flink) so that state can later be
// redistributed by key group.
//
// This package must not import the session, the shell, or the parser.
package exec
