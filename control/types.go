package control

import (
	"context"
	"errors"
)

// Engine is what the REST server controls: the jobs of one process. The
// session package implements it. Methods are called from the server's
// goroutines, concurrently.
type Engine interface {
	// Jobs lists the process's jobs in start order; Savepoints may be left
	// empty (Job fills it).
	Jobs() []JobDetails
	// Job returns one job's details, with its savepoints; ErrNoJob when
	// there is no such job.
	Job(id string) (JobDetails, error)
	// Checkpoints lists a job's checkpoints on disk.
	Checkpoints(id string) (CheckpointStats, error)
	// Savepoint takes a savepoint into a new directory under dir (the
	// job's default when empty) and returns its path.
	Savepoint(ctx context.Context, id, dir string) (string, error)
	// StopWithSavepoint stops the job at a savepoint and returns its path
	// once the job ended.
	StopWithSavepoint(ctx context.Context, id, dir string, drain bool) (string, error)
	// Cancel cancels the job and returns once it ended.
	Cancel(ctx context.Context, id string) error
}

// ErrNoJob is returned (wrapped) for an unknown job id; the server answers
// 404.
var ErrNoJob = errors.New("no such job")

// Job states, as Flink names them.
const (
	StateRunning  = "RUNNING"
	StateFinished = "FINISHED"
	StateCanceled = "CANCELED"
	StateFailed   = "FAILED"
)

// JobStatus is an element of GET /jobs.
type JobStatus struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// JobsResponse is GET /jobs.
type JobsResponse struct {
	Jobs []JobStatus `json:"jobs"`
}

// JobOverview is an element of GET /jobs/overview.
type JobOverview struct {
	ID        string `json:"jid"`
	Name      string `json:"name"`
	State     string `json:"state"`
	StartTime int64  `json:"start-time"` // ms since the epoch
}

// OverviewResponse is GET /jobs/overview.
type OverviewResponse struct {
	Jobs []JobOverview `json:"jobs"`
}

// JobDetails is GET /jobs/:id. The first fields are Flink's; the rest are
// streamsql's (Flink spreads them over several endpoints).
type JobDetails struct {
	ID          string `json:"jid"`
	Name        string `json:"name"`
	State       string `json:"state"`
	StartTime   int64  `json:"start-time"` // ms since the epoch
	Parallelism int    `json:"parallelism"`

	RecordsIn        int64    `json:"records-in"`
	RecordsOut       int64    `json:"records-out"`
	SkippedRecords   int64    `json:"skipped-records"`
	LateRecords      int64    `json:"late-records"`
	InputHolds       int64    `json:"input-holds"`
	InFlightRestored int64    `json:"in-flight-restored"` // unaligned channel-state batches replayed
	RowsMapped       int64    `json:"rows-mapped"`        // join rows moved to mapped files (checkpoints failing)
	Attempts         int      `json:"attempts"`
	Failures         []string `json:"failures,omitempty"`      // causes of restarted attempts
	FailureCause     string   `json:"failure-cause,omitempty"` // cause of FAILED
	CheckpointDir    string   `json:"checkpoint-dir,omitempty"`
	Checkpoints      int      `json:"checkpoints"`
	LastCheckpoint   int64    `json:"last-checkpoint"`
	RestoredFrom     string   `json:"restored-from,omitempty"`
	// SavepointDir is the default target of savepoints
	// (state.savepoints.dir); empty when unset.
	SavepointDir string          `json:"savepoint-dir,omitempty"`
	Savepoints   []SavepointInfo `json:"savepoints,omitempty"`
}

// SavepointInfo is one savepoint of a job.
type SavepointInfo struct {
	Location string `json:"location"`
	// Status is COMPLETED, or INCOMPLETE for a directory without a valid
	// _metadata (never restorable).
	Status string `json:"status"`
	Time   int64  `json:"time,omitempty"` // ms since the epoch
}

// SavepointRequest is the body of POST /jobs/:id/savepoints.
type SavepointRequest struct {
	TargetDirectory string `json:"target-directory,omitempty"`
	CancelJob       bool   `json:"cancel-job"`
}

// StopRequest is the body of POST /jobs/:id/stop.
type StopRequest struct {
	TargetDirectory string `json:"targetDirectory,omitempty"`
	Drain           bool   `json:"drain"`
}

// TriggerResponse answers a savepoint or stop trigger (202 Accepted).
type TriggerResponse struct {
	RequestID string `json:"request-id"`
}

// Asynchronous operation states.
const (
	InProgress = "IN_PROGRESS"
	Completed  = "COMPLETED"
)

// AsyncStatus is GET /jobs/:id/savepoints/:request-id.
type AsyncStatus struct {
	Status struct {
		ID string `json:"id"` // IN_PROGRESS or COMPLETED
	} `json:"status"`
	// Operation is set once COMPLETED: Location on success, FailureCause
	// otherwise.
	Operation *Operation `json:"operation,omitempty"`
}

// Operation is the outcome of a completed savepoint or stop.
type Operation struct {
	Location     string        `json:"location,omitempty"`
	FailureCause *FailureCause `json:"failure-cause,omitempty"`
}

// FailureCause is a failed operation's cause, in Flink's shape (no Java
// stack: the message is in stack-trace).
type FailureCause struct {
	Class      string `json:"class"`
	StackTrace string `json:"stack-trace"`
}

// CheckpointStats is GET /jobs/:id/checkpoints.
type CheckpointStats struct {
	Counts struct {
		Restored   int `json:"restored"`
		Total      int `json:"total"`
		InProgress int `json:"in_progress"`
		Completed  int `json:"completed"`
		Failed     int `json:"failed"`
	} `json:"counts"`
	Latest struct {
		Completed *CheckpointEntry `json:"completed"`
		Savepoint *CheckpointEntry `json:"savepoint"`
		Restored  *RestoredEntry   `json:"restored"`
	} `json:"latest"`
	// History lists the checkpoints on disk, ascending id; INCOMPLETE
	// entries are directories without a valid _metadata.
	History []CheckpointEntry `json:"history"`
}

// CheckpointEntry is one checkpoint (or savepoint) of CheckpointStats.
type CheckpointEntry struct {
	ID                 int64  `json:"id"`
	Status             string `json:"status"` // COMPLETED or INCOMPLETE
	IsSavepoint        bool   `json:"is_savepoint"`
	LatestAckTimestamp int64  `json:"latest_ack_timestamp"` // ms since the epoch
	StateSize          int64  `json:"state_size"`
	CheckpointedSize   int64  `json:"checkpointed_size"` // bytes this checkpoint added
	EndToEndDuration   int64  `json:"end_to_end_duration"`
	ExternalPath       string `json:"external_path"`
}

// RestoredEntry is where a job was restored from.
type RestoredEntry struct {
	ExternalPath string `json:"external_path"`
}

// ErrorResponse is the body of every error answer.
type ErrorResponse struct {
	Errors []string `json:"errors"`
}
