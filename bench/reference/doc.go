// Package reference holds hand-written kernels for Nexmark q1, q2, q5 and
// q17 (issue 11's "reference kernels"): a plain Go loop over the same Arrow
// batches the engine's nexmark source produces, computing the same answer,
// so that the benchmark table can show the engine's ratio to the practical
// limit of this machine.
//
// # Same input
//
// Run plans the query file (bench/nexmark: ddl_gen.sql, ddl_views.sql,
// qN.sql) with the engine's own session and planner at parallelism 1 and
// builds the nexmark source exactly as the runtime does: the datagen table
// of the plan, and the columns and ROW fields the plan pushes down
// (exec.SourceColumnUse), so the generator does the same work in both
// (TestSourceColumns pins the sets). Event count, seed (0) and options are
// the benchmark's; the batch size is the caller's (the engine's default is
// 1024).
//
// # Same answer
//
// Each kernel reads the batch's typed columns (event_type, the bid ROW's
// field arrays, the dateTime fields) and writes its output rows into
// buffers reused across batches: the columns a sink would receive, never
// just a count (the engine materialises its output for the blackhole sink
// too). TestKernelsMatchEngine runs the engine on the same query file and
// events with its sink written as JSON and compares: the multiset of rows
// (q1, q2; q5's folded updating result) and, for q17, the final row of
// every key and the numbers of +I, -U and +U rows (one update per changed
// key per input batch, as the engine's group aggregation).
//
// The kernels rely on what the generator guarantees: event_type and the
// fields of a bid are never NULL. They do no per-row allocation, interface
// call or boxing (TestKernelsDoNotAllocate).
//
// # Measurement
//
// Result.CPU is the user + system CPU of the whole process (getrusage)
// during the run: generation and kernel. The generator's own CPU cannot be
// separated from inside the source, so Run runs the same source a second
// time into a no-op emit and reports that pass's CPU as GenCPU; CPU -
// GenCPU is the kernel's share.
package reference
