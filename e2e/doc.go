// Package e2e holds streamsql's process-level tests: they build the
// streamsql binary, run job files with it, kill it with SIGKILL at random
// (seeded) moments, resume it with `streamsql run --from`, and check the
// committed output against an independent oracle (SQLite).
//
// What it owns: tests only (no library code). Kill tests are skipped with
// -short.
//
// Invariants:
//   - A test never sleeps to wait for an event: it waits for the lines the
//     process prints (checkpoint completions, the job's summary) or for the
//     process to exit. The only timed pauses are the random extra delays
//     that choose when to kill.
//   - Every process a test starts is killed or waited for before the test
//     ends; data, checkpoints and output live in t.TempDir().
//
// It must not import the engine's internals to produce results: the engine
// runs as a separate process; only the checkpoint package's listing is
// used to inspect what a killed process left on disk.
package e2e
