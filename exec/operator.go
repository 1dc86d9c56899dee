package exec

import (
	"fmt"
	"math"
	"reflect"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/planner"
)

// Collector receives what an operator emits. Collect takes ownership of
// b.Rec; EmitWatermark forwards event time (the operator has emitted
// everything up to it).
type Collector interface {
	Collect(b Batch) error
	EmitWatermark(wm int64) error
}

// NoWatermark is the watermark before any has been seen; MaxWatermark ends
// event time (every timer fires, every window closes).
const (
	NoWatermark  int64 = math.MinInt64
	MaxWatermark int64 = math.MaxInt64
)

// Clock tells processing time; tests inject their own.
type Clock interface{ Now() time.Time }

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// OpContext is what an operator is opened with: one parallel subtask's
// view of the job.
type OpContext struct {
	OpID        string // stable operator id: the scope of its state
	Subtask     int
	Parallelism int
	// KeyGroups is the range of key groups this subtask owns.
	KeyGroups KeyGroups
	// Checkpointing is true when the job takes checkpoints: keyed state
	// tracks changes only then.
	Checkpointing bool
	Mem           memory.Allocator
	BatchSize     int
	Clock         Clock
	Metrics       *Metrics
	// StateTTL is table.exec.state.ttl (0: keep state forever).
	StateTTL time.Duration
	// NewSource opens a table's source (the runtime's): a lookup join
	// reads its dimension table with it (lookupjoin.go).
	NewSource func(t *catalog.Table, sc *SourceContext) (Source, error)
	// StateBackend, StateMemory and StateDir configure KV state (see
	// JobConfig and KVOptions).
	StateBackend string
	StateMemory  int64
	StateDir     string
	// Committed is the checkpoint store's committed state, when the job's
	// state backend offers it (a tiered KV reads its cold keys from it).
	Committed state.Committed
	// StateTierHotBytes is JobConfig's (tests).
	StateTierHotBytes int64

	wakeups *wakeups // processing-time wake-ups of the subtask (see WakeAt)
	opIndex int
	// markIdle tells the consumers of the subtask's output that it has no
	// data for now (nil: not run by the runtime).
	markIdle func() error
}

// Operator is the API every operator of a task chain implements (v2),
// instantiated per subtask and driven by the runtime on the subtask's
// goroutine only, in this order: Open; Restore (only when restoring); then
// any interleaving of ProcessBatch, ProcessWatermark, Snapshot,
// NotifyComplete and NotifyAborted; Finish at the end of data; Close
// always (also after failures; idempotent).
//
// Checkpoint protocol: Snapshot(n) is called when barrier n passes the
// operator (every record before the barrier processed, none after) and
// writes the operator's state changes for n. NotifyComplete(n) says
// checkpoint n is committed (state of every epoch <= n is durable);
// NotifyAborted(n) says it failed: changes written by Snapshot(n) must be
// written again by a later Snapshot. Notifications may arrive after later
// snapshots; state.Table handles both orders.
type Operator interface {
	Open(ctx *OpContext) error
	// ProcessBatch consumes b (taking ownership of b.Rec) from input
	// `input` (the index of the task's input edge; 0 for chained operators).
	ProcessBatch(input int, b Batch, out Collector) error
	// ProcessWatermark is called when the event time of the operator's
	// inputs advances (the minimum over input channels): fire what is due,
	// then forward it (or a smaller one) with out.EmitWatermark.
	ProcessWatermark(wm int64, out Collector) error
	Snapshot(checkpointID int64, w checkpoint.StateWriter) error
	Restore(r checkpoint.StateReader) error
	NotifyComplete(checkpointID int64) error
	NotifyAborted(checkpointID int64) error
	// Finish is called once at end of data; it may emit final results.
	Finish(out Collector) error
	Close() error
}

// InputHolder is an operator whose state may ask its task to stop taking
// input until the pending checkpoint completes or aborts: state that only
// a completed checkpoint lets leave memory (an insert-only join side)
// would otherwise grow with the input while commits lag. The runtime asks
// before each input message; HoldInput returns the id of the pending
// checkpoint the operator waits for (0: it takes input). While any
// operator of the task holds, the task handles only the coordinator's
// notifications, its timers and cancellation, and its input channels fill
// (backpressure). An operator may hold only while a checkpoint it has
// snapshotted is pending. With aligned (or at-least-once) barriers its
// completion or abort then needs nothing more from the task. With
// unaligned checkpoints it may: an upstream subtask acknowledges only after
// reading up to its barriers, and may be blocked sending to this task; so
// the runtime honours a hold then only once every subtask acknowledged the
// checkpoint (what is left, the commit, needs no subtask).
type InputHolder interface {
	HoldInput() int64
}

// Stateless provides the defaults of a stateless operator: no state,
// watermarks forwarded, nothing to finish or close. Embed it.
type Stateless struct{}

func (Stateless) Open(*OpContext) error                          { return nil }
func (Stateless) ProcessWatermark(wm int64, out Collector) error { return out.EmitWatermark(wm) }
func (Stateless) Snapshot(int64, checkpoint.StateWriter) error   { return nil }
func (Stateless) Restore(checkpoint.StateReader) error           { return nil }
func (Stateless) NotifyComplete(int64) error                     { return nil }
func (Stateless) NotifyAborted(int64) error                      { return nil }
func (Stateless) Finish(Collector) error                         { return nil }
func (Stateless) Close() error                                   { return nil }

// Factory builds an operator from its plan node.
type Factory func(spec planner.Op, ctx *OpContext) (Operator, error)

var registry = struct {
	sync.RWMutex
	m map[reflect.Type]Factory
}{m: map[reflect.Type]Factory{}}

// RegisterOperator makes plan nodes of type T run as the operators f
// builds. Operators register themselves in init functions; a later
// registration of the same type replaces the earlier one.
func RegisterOperator[T planner.Op](f func(spec T, ctx *OpContext) (Operator, error)) {
	var zero T
	registry.Lock()
	defer registry.Unlock()
	registry.m[reflect.TypeOf(zero)] = func(spec planner.Op, ctx *OpContext) (Operator, error) {
		return f(spec.(T), ctx)
	}
}

func newOperator(spec planner.Op, ctx *OpContext) (Operator, error) {
	registry.RLock()
	f := registry.m[reflect.TypeOf(spec)]
	registry.RUnlock()
	if f == nil {
		return nil, fmt.Errorf("no operator is registered for %T", spec)
	}
	return f(spec, ctx)
}

// fireBatch is the most rows an operator emits in one batch of what a
// watermark releases at once (the job's batch size; defaultFireBatch when
// the context sets none, as tests' may).
func (c *OpContext) fireBatch() int {
	if c.BatchSize <= 0 {
		return defaultFireBatch
	}
	return c.BatchSize
}

// KVOptions returns the options of an operator's KV state (joins, TopN):
// its id, key groups, checkpointing, TTL and the job's state backend. The
// operator must Close the KV when it closes.
func (c *OpContext) KVOptions(maxParallelism int) state.Options {
	o := state.Options{OpID: c.OpID, MaxParallelism: maxParallelism, Checkpointing: c.Checkpointing,
		TTL: c.StateTTL, Backend: c.StateBackend, MemoryBudget: c.StateMemory, SpillDir: c.StateDir,
		Committed: c.Committed, TierHotBytes: c.StateTierHotBytes}
	if c.KeyGroups.End > c.KeyGroups.Start {
		o.KeyGroupStart, o.KeyGroupEnd = c.KeyGroups.Start, c.KeyGroups.End
	}
	return o
}
