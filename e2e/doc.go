// Package e2e holds streamsql's process-level tests: they build the
// streamsql binary once, run job files with it as separate processes and
// check what the processes committed against an independent oracle
// (SQLite) or against what the test fed them.
//
//   - Kill tests (kill_test.go): kill `streamsql run` with SIGKILL at
//     random (seeded) moments, resume it with `run --from`, and compare the
//     folded output with SQLite's answer.
//   - Job-control tests (savepoint_test.go, rescale_test.go,
//     upgrade_test.go, stop_test.go; helpers in jobctl_helpers_test.go):
//     the savepoint demo over a socket source, rescaling through
//     savepoints, relocation of a savepoint, upgrades (`run --check`, the
//     restore's report, --allow-non-restored-state), a kill while a
//     savepoint is written, and stop with savepoint with and without
//     drain, all driven through the CLI verbs (list, savepoint, stop,
//     cancel) the way a person would.
//
// What it owns: tests only (no library code). Everything is skipped with
// -short.
//
// Invariants:
//   - A test never sleeps to wait for an event: it waits for the lines the
//     process prints (checkpoint completions, the job's summary) or for the
//     process to exit, checking conditions on the sink's files whenever a
//     line arrives. The only timed pauses are the random extra delays that
//     choose when to kill, and pollFor's 1 ms period where the condition
//     is a file appearing (a savepoint being written) that no line
//     announces.
//   - Every process a test starts is killed or waited for before the test
//     ends; data, checkpoints, savepoints and output live in t.TempDir(),
//     and job-control tests point XDG_RUNTIME_DIR at a private directory so
//     that `streamsql list` sees only their own processes.
//
// It must not import the engine's internals to produce results: the engine
// runs as a separate process; only the checkpoint package's listing and
// metadata readers are used to inspect what a process left on disk.
package e2e
