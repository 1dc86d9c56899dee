package exec

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

// RowKind is the change a row represents, with Flink's byte values.
type RowKind int8

const (
	Insert       RowKind = 0 // +I
	UpdateBefore RowKind = 1 // -U
	UpdateAfter  RowKind = 2 // +U
	Delete       RowKind = 3 // -D
)

// String returns Flink's short form: +I, -U, +U, -D.
func (k RowKind) String() string {
	switch k {
	case Insert:
		return "+I"
	case UpdateBefore:
		return "-U"
	case UpdateAfter:
		return "+U"
	case Delete:
		return "-D"
	}
	return "??"
}

// IsAdd reports whether the row adds to the result (+I, +U).
func (k RowKind) IsAdd() bool { return k == Insert || k == UpdateAfter }

// Batch is a record batch with the change kind of each row. Ops == nil means
// every row is an insert (+I), the common case of append-only streams.
// Otherwise len(Ops) == Rec.NumRows().
type Batch struct {
	Rec arrow.Record
	Ops []RowKind
	// Hashes, when set, are the HashKeys of the rows over columns HashedBy:
	// a hash exchange hands the hashes it routed by to the receiving
	// subtask, whose keyed operator would hash the same columns again
	// (keyHashes). Read-only; nil when not known. They describe Rec: a
	// Batch built around another record must not carry them (build it
	// afresh, as every operator does; the exec tests check every batch's
	// hashes, verifyBatchHashes).
	Hashes   []uint64
	HashedBy []int
}

// Op returns the kind of row i.
func (b Batch) Op(i int) RowKind {
	if b.Ops == nil {
		return Insert
	}
	return b.Ops[i]
}

// Rows returns the number of rows.
func (b Batch) Rows() int { return int(b.Rec.NumRows()) }

// MsgKind tells what a Message carries.
type MsgKind uint8

const (
	MsgData      MsgKind = iota // a Batch
	MsgBarrier                  // a checkpoint barrier
	MsgWatermark                // an event-time watermark
	MsgEnd                      // end of data on this channel (operators finish)
	// MsgShutdown follows MsgEnd when checkpointing is on: after the end of
	// data, barriers still flow (the final checkpoint commits the last
	// output); shutdown says nothing more will come.
	MsgShutdown
	// MsgCancel is Flink's cancel-checkpoint marker: an upstream subtask
	// could not take its snapshot for Barrier.ID, so consumers abort that
	// alignment at once (instead of blocking until the next checkpoint)
	// and forward the marker.
	MsgCancel
	// MsgIdle says the channel's producer has no data for now: its
	// watermark does not hold back the consumer's until it sends again.
	MsgIdle
)

// BarrierKind distinguishes checkpoints from savepoints.
type BarrierKind uint8

const (
	Checkpoint BarrierKind = iota
	Savepoint
)

// Barrier is a checkpoint barrier travelling in-band between batches.
// Final marks the checkpoint taken after every source ended: it commits
// the job's last output.
type Barrier struct {
	ID    int64
	Kind  BarrierKind
	Final bool
	// Triggered is when the coordinator triggered it (unix nanoseconds,
	// this process's clock): with an aligned-checkpoint-timeout, a barrier
	// older than the timeout is taken unaligned.
	Triggered int64
}

// Message is the one kind of value on every edge of the DAG. A MsgData message
// hands over exactly one reference to Batch.Rec: the receiver releases it or
// forwards it, and calls Retain only to keep it. Batch.Ops is immutable once
// sent (a broadcast shares it between receivers): an operator that changes
// row kinds builds a new slice.
type Message struct {
	Kind      MsgKind
	Batch     Batch
	Barrier   Barrier
	Watermark int64
	from      int // the channel it came on, at the consumer's gate
}

// SourceContext is what one parallel subtask of a source is given.
type SourceContext struct {
	Subtask     int
	Parallelism int
	Mem         memory.Allocator
	BatchSize   int           // rows per batch (execution.batch-size)
	Linger      time.Duration // flush a partial batch after this long (execution.batch-linger)
	Table       *catalog.Table
	Schema      catalog.Schema // the table's physical columns, in order
	// Columns says which columns of Schema (and fields of its ROWs) the
	// job reads (projection push-down); nil: all. A source may fill what
	// is not read with nulls.
	Columns []ColumnUse
	// SkippedRecords counts bad records skipped by ignore-parse-errors.
	SkippedRecords *atomic.Int64
	// PartitionFilter, over Schema and reading partition columns only,
	// says which partitions of a partitioned table to read (nil: all).
	PartitionFilter planner.Expr
}

// Source is one parallel instance of a source connector.
type Source interface {
	// Run produces batches until the input ends (return nil) or ctx is done
	// (return ctx.Err()). Each full batch (BatchSize rows, or fewer when Linger
	// elapsed or the input ended) is passed to emit, which takes ownership.
	// While idle, Run calls emit(nil) at least every Linger so the runtime can
	// act between batches. An error returned by emit must be returned by Run.
	Run(ctx context.Context, emit func(arrow.Record) error) error
	// Close releases resources; idempotent.
	Close() error
}

// SourceOutput is what a MessageSource emits to: batches (ownership passes
// to Emit), watermarks (event time up to which the source has emitted
// everything) and idleness (no data for now: downstream watermarks are not
// held back by this split until it emits again). An error returned by a
// method must be returned by RunMessages.
type SourceOutput interface {
	Emit(rec arrow.Record) error
	EmitWatermark(wm int64) error
	MarkIdle() error
	// Heartbeat lets the runtime act between batches (barriers, commits);
	// call it at least every Linger while nothing is emitted.
	Heartbeat() error
}

// MessageSource is a source that emits messages, not only batches. The
// runtime prefers RunMessages over Run when a source implements it.
type MessageSource interface {
	Source
	RunMessages(ctx context.Context, out SourceOutput) error
}

// SinkContext is what one parallel subtask of a sink is given.
type SinkContext struct {
	// Ctx is done when the job attempt ends: a sink blocked on its external
	// system must give up then.
	Ctx context.Context
	// JobID is JobConfig.JobID: the same in every attempt of the job.
	JobID       string
	Subtask     int
	Parallelism int
	Mem         memory.Allocator
	Table       *catalog.Table
	Schema      catalog.Schema
	// Updating is true when the input carries -U/+U/-D rows.
	Updating bool
	// Checkpointing is true when the job takes checkpoints: a TwoPhaseSink
	// then never commits on its own (no rollover commits; Finish only
	// flushes) and makes output visible only in Commit.
	Checkpointing bool
	// Stdout is where the print sink writes (os.Stdout unless redirected by
	// the shell or tests). Writes of whole batches are serialised by the sink.
	Stdout io.Writer
	// Clock is the job's processing time (injectable in tests).
	Clock Clock
	// Shared returns the value the subtasks of this sink task share under
	// key in this job attempt, made by mk on first use (safe for concurrent
	// use; the value itself must be). It is how the subtasks of one sink
	// coordinate, e.g. the file sink's partition committer; a restarted
	// attempt starts with none.
	Shared func(key string, mk func() any) any
}

// WatermarkSink is a sink that acts on event time: the runtime hands it
// every advance of its input's watermark (the minimum over its input
// channels), on the sink's goroutine.
type WatermarkSink interface {
	OnWatermark(wm int64) error
}

// Ticker is implemented by sinks that act on processing time even when no
// input arrives (e.g. the file sink's rollover interval). The runtime calls
// Tick about every batch linger, on the sink's own goroutine.
type Ticker interface {
	Tick(now time.Time) error
}

// Sink is one parallel instance of a sink connector.
type Sink interface {
	// Write consumes a batch. The sink does not own b.Rec: it must Retain it
	// to keep it beyond the call.
	Write(b Batch) error
	// Finish is called at end of input: flush and commit everything.
	Finish() error
	// Close releases resources; uncommitted data is discarded. Idempotent.
	Close() error
}

// CheckpointedSource is a source whose position can be saved at a barrier
// and restored after a failure. SnapshotState is called on the source's
// goroutine between two batches (inside emit, or when Run has returned);
// the state must describe exactly the records emitted so far.
// RestoreState is called before Run.
type CheckpointedSource interface {
	Source
	SnapshotState() ([]byte, error)
	RestoreState(state []byte) error
}

// RescalableSource can take over the states of several subtasks of an
// earlier run at another parallelism (old subtask i goes to new subtask
// i mod parallelism; a new subtask may get none). Each split of the input
// (a file, a generator sequence) must then be read by exactly one subtask.
type RescalableSource interface {
	CheckpointedSource
	RestoreStates(states [][]byte) error
}

// SplitSource keeps its state split by split (a file, a generator
// sequence, later a Kafka partition) and is rescaled by split, not by
// subtask. After a change of parallelism every new subtask gets the states
// of all old subtasks, by old index (the same list on every new subtask),
// and owned[i] says whether old state i is its own (i mod parallelism ==
// subtask: per-subtask counters such as skipped records go to exactly one
// owner). It takes its share of the splits by a rule every subtask applies
// alike, so that each split is read by exactly one subtask and the
// subtasks get about the same number of splits.
type SplitSource interface {
	CheckpointedSource
	RestoreSplits(states [][]byte, owned []bool) error
}

// AsyncPreCommitSink is a TwoPhaseSink whose pre-commit leaves the work
// that makes its output durable (a file sink's fsyncs) running in the
// background: on a barrier the runtime calls PreCommitAsync instead of
// PreCommit, and the checkpoint coordinator waits for done (when not nil)
// before it writes the checkpoint's metadata, so the subtask goes on with
// its input meanwhile. An error from done fails the attempt: the output it
// covers may not be durable, and only a restore replays it.
type AsyncPreCommitSink interface {
	TwoPhaseSink
	PreCommitAsync(checkpointID int64) (state []byte, done func() error, err error)
}

// RescalableSink can complete the pending commits of several subtasks of an
// earlier run at another parallelism and discard their uncommitted output.
type RescalableSink interface {
	TwoPhaseSink
	RestoreStates(states [][]byte) error
}

// TwoPhaseSink is a sink whose output becomes visible only when a
// checkpoint completes (exactly-once). On barrier n the runtime calls
// PreCommit(n), which makes everything written so far durable but hidden
// and returns the sink's state (what is pending for n and earlier); when
// checkpoint n completes, Commit(n) makes the pending output of epochs <= n
// visible. After a failure, RestoreState(state of the restored checkpoint)
// completes the commits that were pending in it (idempotently: a file
// already committed is left alone) and discards everything written after
// it. With checkpointing on, Finish only flushes: the final checkpoint
// commits.
type TwoPhaseSink interface {
	Sink
	PreCommit(checkpointID int64) ([]byte, error)
	Commit(checkpointID int64) error
	RestoreState(state []byte) error
}
