package checkpoint

// This file is the contract between the runtime (exec, session) and the
// checkpoint package. The implementation lives in the other files.

// StateWriter receives the state changes a subtask makes at one barrier.
// Keys are relative to the writer's scope (see Scoped); values are opaque.
// Not safe for concurrent use: each subtask has its own.
type StateWriter interface {
	Put(key, value []byte) error
	Delete(key []byte) error
}

// MergeWriter is a StateWriter that also takes merge operands: Merge
// appends value to key's current value (Pebble's default merger,
// concatenation: the committed state reads the key as its last Put
// followed by every Merge since, in order). State whose value only grows
// by appending (a COUNT(DISTINCT) set of an insert-only input) writes what
// it appended since the last checkpoint instead of the whole value. A
// writer without Merge gets whole values (Put).
type MergeWriter interface {
	StateWriter
	Merge(key, value []byte) error
}

// RangeDeleter is a StateWriter that also deletes ranges of keys:
// DeleteRange removes every key in [start, end) that earlier checkpoints
// wrote. The checkpoint's own writes (Put, Merge, Delete) apply after it
// whatever their order, so a key written in the same checkpoint stays.
// State that frees many keys at once in key order (a window aggregation's
// fired slices) writes one range instead of a Delete per key.
type RangeDeleter interface {
	StateWriter
	DeleteRange(start, end []byte) error
}

// StateReader reads restored state. Scan calls fn for every key with the
// given prefix, in key order; key and value are only valid during the call.
type StateReader interface {
	Scan(prefix []byte, fn func(key, value []byte) error) error
}

// Kind of a snapshot.
type Kind string

const (
	KindCheckpoint Kind = "CHECKPOINT"
	KindSavepoint  Kind = "SAVEPOINT"
)

// Info describes one complete checkpoint, as recorded in its _metadata.
type Info struct {
	ID      int64  `json:"id"`
	JobID   string `json:"job_id"`
	Kind    Kind   `json:"kind"`
	Path    string `json:"path"`     // the chk-<n> directory
	TimeMS  int64  `json:"time_ms"`  // completion time, ms since the epoch
	Size    int64  `json:"size"`     // bytes of every file it references
	Written int64  `json:"written"`  // bytes this checkpoint added (incremental size)
	SyncMS  int64  `json:"sync_ms"`  // synchronous part (state commit)
	AsyncMS int64  `json:"async_ms"` // asynchronous part (durable copy + _metadata)
	// DurationMS is Flink's end-to-end duration: from the trigger to the
	// completion (barrier alignment, snapshots, commit and persist). Set by
	// the coordinator after _metadata is written; not stored in it.
	DurationMS int64 `json:"duration_ms,omitempty"`

	Files int               `json:"file_count"`     // number of files it references
	Meta  map[string]string `json:"meta,omitempty"` // free-form: job name, SQL, parallelism...
	// Skipped lists newer complete checkpoints that a restore passed over
	// because they failed verification, each with the reason. Not stored.
	Skipped []string `json:"-"`
}
