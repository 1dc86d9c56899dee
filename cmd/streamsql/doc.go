// Command streamsql is the command-line client of the streamsql engine: an
// interactive SQL shell (the default), `run` for job files (`--from` restores
// them from a checkpoint), `checkpoints` to list a checkpoint directory,
// `test` for the golden-file suite, `version` and help; and job control
// across processes: `list`, `savepoint`, `stop` and `cancel` (jobctl.go).
//
// Every shell and `run` process serves the REST API of package control for
// its session (started once the -i file ran, from rest.address, rest.port,
// rest.token or $STREAMSQL_REST_TOKEN) and registers itself in the job
// registry; the entry is removed on every exit path, including os.Exit
// after a second signal (atExit hooks). Statements then run through
// session.Control, so that SET never races with the API reading options.
// The verbs find the process that owns a job through the registry and talk
// REST; directories given to them are made absolute first (the other
// process has its own working directory).
//
// It owns flags and presentation only: reading input (readline in a
// terminal, plain lines from a pipe), history and tab completion, boxed
// tables and Flink's "tableau" rendering of streaming results, error
// formatting (FILE:line:col: message for files, Flink's "[ERROR] Could not
// execute SQL statement." in the shell), signals and exit codes. Parsing,
// planning and running statements belong to the parser and session packages.
//
// Invariants:
//   - A user mistake never panics: it prints a message naming the place and
//     the shell keeps running, while `run` exits 1.
//   - Exit codes: 0 success, 1 SQL or job error, 2 usage error (bad flag or
//     arguments), 130 after SIGINT and 143 after SIGTERM during `run` (jobs
//     are cancelled first, via session.Close).
//   - Every job the process started is cancelled or finished before it exits
//     (cancelling deletes its checkpoints unless RETAIN_ON_CANCELLATION; the
//     session does that). A killed process leaves them for `run --from`.
//   - `run` writes results to stdout only; job messages (submitted,
//     checkpoints, failed attempts and restarts, summaries) go to stderr.
//   - Rendering never truncates a boxed table; tableau mode fixes the column
//     widths when the header is printed (rows stream) and cuts longer values
//     with "...".
//
// It must not reach into the engine's internals (planner, exec): results come
// to it only as session.Result values.
package main
