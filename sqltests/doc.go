// Package sqltests owns streamsql's golden-file SQL tests: the runner (used
// by `go test` and by the `streamsql test` command) and the test files in
// testdata/.
//
// Test files use cockroachdb/datadriven's format (a directive line, input,
// "----", expected output); README.md documents the directives. Each file
// runs in one session, top to bottom; the canonical run uses
// parallelism.default=1 and execution.batch-size=1 and its output is the
// golden text. With Options.Variants the whole file runs again per variant
// (parallelism 1 and 4, batch sizes 1, 7 and 1024) in a fresh session and
// temp directory, and the variant-independent part of every case (final
// tables, folded print-sink output, folded sink files, job failures) must
// equal the canonical run's. With Options.Crash the file also runs in the
// crash variant (crash.go): every job crashes right after a seeded random
// checkpoint and is restored, and the outputs must equal an uninterrupted
// run's. The crash variant sets the session's CheckpointTestHook, whose
// argument type is exec.CheckpointConfig: the only use of exec here.
//
// Invariants:
//   - Outputs never depend on the machine: $TMP and $TESTDATA are
//     substituted back into outputs, print-sink lines and files are sorted,
//     job ids are never printed, RESET restores the runner's parallelism and
//     batch size rather than the machine's defaults.
//   - A case never waits on wall-clock time except a generous timeout that
//     only turns a hung query (an unbounded source) into an error.
//   - Every query is drained to its end and every session closed, so a
//     checked allocator ends at zero bytes.
//
// This package uses only public APIs (parser, session, catalog options); it
// must not reach into exec or the planner.
package sqltests
