// Package connectors owns streamsql's built-in sources and sinks: datagen,
// filesystem (source and sink), socket, print and blackhole.
//
// NewSource and NewSink dispatch on the table's 'connector' option after
// catalog.ValidateTable has checked every option, so the connectors only read
// values that are known to be well formed.
//
// Invariants:
//   - A source's Run hands each record it emits over to emit (one reference).
//     Sources build whole columns at a time (datagen fills typed buffers; the
//     file and socket sources go through the format decoders).
//   - Sources are exec.CheckpointedSource. Their state (state.go: a version
//     byte, a connector byte, subtask and parallelism, then the fields)
//     describes exactly the records already passed to emit: datagen the rows
//     of this subtask emitted, the file source the first record not yet
//     emitted (file, byte offset, line) plus the files left and the bad
//     records skipped so far (restored into SkippedRecords, so each is
//     counted once). Positions only move when a batch is emitted. A restore
//     that cannot find its input (missing file, file shorter than the
//     offset) fails naming the file; it never rewinds or skips. The socket
//     source cannot seek: after a restore it is at-most-once.
//   - Sources are also exec.RescalableSource and the file sink an
//     exec.RescalableSink: restored at another parallelism, new subtask j
//     takes over the states of old subtasks i with i mod parallelism == j
//     (possibly none). The input is made of splits, each owned by exactly
//     one state: datagen progressions (start, step, bound, rows emitted),
//     files with a start offset; a subtask reads the union of its states'
//     splits (none: it ends at once) and snapshots all of them, so a job
//     can be rescaled again. Skipped-record counts are summed once. The
//     file sink completes the pending commits of each given old subtask
//     (names carry the old index) and deletes that subtask's other hidden
//     files, plus its own hidden files; nothing else.
//   - States carry a per-kind format version (state.go); older versions
//     stay readable.
//   - Sinks never keep a batch beyond Write. The file sink writes hidden
//     in-progress part files and makes them visible only on commit (see
//     PartFiles). With checkpointing it is an exec.TwoPhaseSink (pre-commit
//     on barrier n, commit when checkpoint n completes; a restore completes
//     pending commits exactly once and discards later output); print is
//     at-least-once, blackhole keeps nothing.
//   - Close is idempotent and leaks no goroutine (the socket reader is joined).
//
// This package must not import exec/expr or the planner: connectors neither
// evaluate expressions nor know about plans.
package connectors
