package session

import (
	"io"
	"time"

	"github.com/streamsql/streamsql/checkpoint"
)

// ResultKind tells how a statement's result is presented.
type ResultKind uint8

const (
	// ResultOK is a one-line acknowledgement (Message), e.g. for CREATE TABLE:
	// "[INFO] Execute statement succeeded."
	ResultOK ResultKind = iota
	// ResultTable is a small table (SHOW TABLES, DESCRIBE, SET, SHOW JOBS, EXPLAIN
	// is ResultText).
	ResultTable
	// ResultText is free text (EXPLAIN, SHOW CREATE TABLE, HELP).
	ResultText
	// ResultStream is a continuous query's changelog (SELECT).
	ResultStream
	// ResultJob is a submitted job (INSERT, EXECUTE STATEMENT SET).
	ResultJob
	// ResultQuit asks the shell to exit.
	ResultQuit
)

// Result is what executing one statement produced.
type Result struct {
	Kind    ResultKind
	Message string     // ResultOK, ResultText, ResultJob (human-readable)
	Columns []string   // ResultTable, ResultStream
	Rows    [][]string // ResultTable
	Stream  *Stream    // ResultStream
	JobID   string     // ResultJob: 32 hex digits
	// Warning, when not empty, is one line to show before the result (also
	// where acknowledgements are not shown), e.g. for SET of a Flink option
	// streamsql does not act on: "[WARNING] ...".
	Warning string
}

// Change is one changelog row of a SELECT's result, its values rendered as
// Flink's SQL client renders them (NULL as "<NULL>" in tableau mode is up to
// the presenter: Values[i] is nil for NULL).
type Change struct {
	Op     string    // "+I", "-U", "+U", "-D"
	Values []*string // nil element = SQL NULL
}

// Stream delivers a SELECT's changelog until the query ends or is cancelled.
type Stream struct {
	// Changes is closed when the query ends (bounded input), fails or is
	// cancelled; then Err tells which.
	Changes <-chan []Change
	cancel  func()
	err     func() error
}

// Cancel stops the query; idempotent. Changes is closed soon after.
func (s *Stream) Cancel() { s.cancel() }

// Err returns nil after a normal end, the failure otherwise (context.Canceled
// after Cancel). Valid once Changes is closed.
func (s *Stream) Err() error { return s.err() }

// JobInfo is a row of SHOW JOBS.
type JobInfo struct {
	ID          string
	Name        string
	Status      string // RUNNING, FINISHED, FAILED, CANCELED
	StartTime   time.Time
	RecordsIn   int64
	RecordsOut  int64
	SkippedBad  int64 // records skipped by ignore-parse-errors
	LateRecords int64 // rows dropped by windows that had fired
	// InputHolds counts the times a task stopped taking input until a
	// checkpoint completed because a join side held too many rows no
	// completed checkpoint has (exec.Metrics.InputHolds): commits lag
	InputHolds int64
	// InFlightRestored counts the batches of in-flight data (unaligned
	// checkpoints' channel state) restored attempts replayed
	// (exec.Metrics.ChannelStateReplayed).
	InFlightRestored int64
	// RowsMapped counts the rows join sides moved out of memory to mapped
	// files while no completed checkpoint held them (exec.Metrics.RowsMapped:
	// checkpoints failing; docs/state.md, "Mapped chunks").
	RowsMapped  int64
	Err         error // cause of FAILED
	Parallelism int
	// Attempts counts job attempts (1 + restarts); Failures lists the cause
	// of each failed attempt that was followed by a restart.
	Attempts int
	Failures []string
	// CheckpointDir is <state.checkpoints.dir>/<job id> when checkpointing.
	CheckpointDir string
	// Checkpoints counts completed checkpoints; LastCheckpoint is the latest.
	Checkpoints    int
	LastCheckpoint int64
	RestoredFrom   string
}

// Config configures a session.
type Config struct {
	// Stdout receives the print sink's output (default os.Stdout).
	Stdout io.Writer
	// Log receives job lifecycle messages (default io.Discard).
	Log io.Writer
	// OnCheckpoint, if set, is called with every completed checkpoint and
	// savepoint of every job (from the job's coordinator goroutine; it must
	// not block). Benchmarks and monitoring read durations and sizes here.
	OnCheckpoint func(jobID string, info checkpoint.Info)
}
