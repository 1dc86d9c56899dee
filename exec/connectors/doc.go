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
//   - Sources expose their position for checkpoints: datagen Offset/SeekTo in
//     rows of this subtask, the file source (file, byte offset) of the first
//     record not yet emitted. Both only move when a batch is emitted.
//   - Sinks never keep a batch beyond Write. The file sink writes hidden
//     in-progress part files and makes them visible only on commit (see
//     PartFiles, which is ready for two-phase commit on checkpoints).
//   - Close is idempotent and leaks no goroutine (the socket reader is joined).
//
// This package must not import exec/expr or the planner: connectors neither
// evaluate expressions nor know about plans.
package connectors
