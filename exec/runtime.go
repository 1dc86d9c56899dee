package exec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"golang.org/x/sync/errgroup"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec/bufpool"
	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/planner"
)

// Metrics are a job's counters, updated by its subtasks.
type Metrics struct {
	RecordsIn  atomic.Int64 // rows read by sources
	RecordsOut atomic.Int64 // rows written to sinks (or the client)
	Skipped    atomic.Int64 // bad records skipped by ignore-parse-errors
	// ChannelState counts the batches stored as channel state by unaligned
	// checkpoints (in flight when their barrier passed).
	ChannelState atomic.Int64
	// InputHolds counts the times a task stopped taking input because an
	// operator held it (InputHolder) until a checkpoint completed.
	InputHolds atomic.Int64
	// ChannelStateReplayed counts the batches of restored channel state
	// fed through their subtask's chain.
	ChannelStateReplayed atomic.Int64
	// LateRecords counts rows dropped by window operators because their
	// windows had fired (behind the watermark; window.go).
	LateRecords atomic.Int64
	// IdleMarks counts the times a source subtask was marked idle
	// (table.exec.source.idle-timeout).
	IdleMarks atomic.Int64
	// RowsMapped counts the rows insert-only join sides moved out of the
	// Go heap to mapped files while no completed checkpoint held them
	// (state.Rows: checkpoints failing), as of their last snapshot.
	RowsMapped atomic.Int64
}

// JobConfig is everything a job needs besides its plan.
type JobConfig struct {
	// JobID names the job (its sinks tell their output apart from other
	// jobs' by it: SinkContext.JobID); empty in tests that need none.
	JobID          string
	Mem            memory.Allocator
	BatchSize      int
	Linger         time.Duration
	MaxParallelism int
	// ChannelCapacity is the number of messages an edge channel buffers
	// before its producer blocks (backpressure).
	ChannelCapacity int
	Stdout          io.Writer
	// Collect receives the batches of a client sink (SELECT). It is called
	// from one goroutine; it must not keep b.Rec beyond the call.
	Collect   func(b Batch) error
	NewSource func(t *catalog.Table, sc *SourceContext) (Source, error)
	NewSink   func(t *catalog.Table, sc *SinkContext) (Sink, error)
	Metrics   *Metrics
	// Checkpoint turns checkpointing on; nil means off.
	Checkpoint *CheckpointConfig
	// StateTTL is table.exec.state.ttl: keyed state not updated for longer
	// is dropped (Flink's semantics); 0 keeps it.
	StateTTL time.Duration
	// StateBackend, StateMemory and StateDir are state.backend.type,
	// state.backend.rocksdb.memory.fixed-per-slot and
	// state.backend.rocksdb.localdir: with 'rocksdb' (or 'pebble') KV state
	// keeps cold keys in a local Pebble DB per operator subtask.
	StateBackend string
	StateMemory  int64
	StateDir     string
	// StateTierHotBytes, when > 0, is the hot share of every tiered KV's
	// budget (tests: a tiny one makes the join's state page all the time).
	StateTierHotBytes int64
	// Clock is processing time for operators (nil: the wall clock).
	Clock Clock

	shared *sharedValues // per RunJob: SinkContext.Shared
	// WrapOperator, when set, wraps every operator as it is built (tests
	// inject faults with it).
	WrapOperator func(task string, subtask int, op Operator) Operator
}

func (c *JobConfig) defaults() {
	if c.Mem == nil {
		c.Mem = bufpool.New(0)
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 1024
	}
	if c.Linger <= 0 {
		c.Linger = 200 * time.Millisecond
	}
	if c.MaxParallelism <= 0 {
		c.MaxParallelism = 128
	}
	if c.ChannelCapacity <= 0 {
		c.ChannelCapacity = 4
	}
	if c.Metrics == nil {
		c.Metrics = &Metrics{}
	}
	if c.Clock == nil {
		c.Clock = wallClock{}
	}
}

// RunJob runs the plan until every source ended and everything was flushed
// (returns nil), a subtask failed (returns its error) or ctx is cancelled
// (returns ctx.Err()). All goroutines have exited and all records are
// released when it returns.
func RunJob(ctx context.Context, plan *planner.Physical, cfg JobConfig) (err error) {
	cfg.defaults()
	cfg.shared = &sharedValues{}
	type sk struct {
		t *planner.Task
		s int
	}
	// Every consumer subtask has one gate; its channels are numbered over
	// its input edges in order, then over the producing subtasks.
	gates := map[sk]*gateChans{}
	chanInput := map[sk][]int{}
	outs := map[sk][][]*outChan{} // producer -> by output edge, by target subtask (nil: not routed)
	for _, t := range plan.Tasks {
		for s := 0; s < t.Parallelism; s++ {
			n := 0
			var ins []int
			for ei, e := range t.Inputs {
				for i := 0; i < e.From.Parallelism; i++ {
					if routes(e.Kind, i, s) {
						n++
						ins = append(ins, ei)
					}
				}
			}
			if n > 0 {
				gates[sk{t, s}] = newGateChans(n, cfg.ChannelCapacity)
				chanInput[sk{t, s}] = ins
			}
		}
	}
	for _, t := range plan.Tasks {
		for s := 0; s < t.Parallelism; s++ {
			idx := 0
			for _, e := range t.Inputs {
				for i := 0; i < e.From.Parallelism; i++ {
					if !routes(e.Kind, i, s) {
						continue
					}
					from := sk{e.From, i}
					if outs[from] == nil {
						outs[from] = make([][]*outChan, len(e.From.Outputs))
					}
					oi := slices.Index(e.From.Outputs, e)
					if outs[from][oi] == nil {
						outs[from][oi] = make([]*outChan, t.Parallelism)
					}
					outs[from][oi][s] = newOutChan(gates[sk{t, s}], idx)
					idx++
				}
			}
		}
	}
	defer func() {
		// Every goroutine has exited: release what is still in flight.
		for _, g := range gates {
			for {
				select {
				case m := <-g.in:
					m.release()
					continue
				default:
				}
				break
			}
		}
	}()

	g, gctx := errgroup.WithContext(ctx)
	var coord *coordinator
	if cfg.Checkpoint != nil {
		coord = newCoordinator(cfg.Checkpoint)
	}
	for _, t := range plan.Tasks {
		for s := 0; s < t.Parallelism; s++ {
			st := &subtask{task: t, index: s, cfg: &cfg, ctx: gctx, coord: coord,
				gchans: gates[sk{t, s}], chanInput: chanInput[sk{t, s}], outChans: outs[sk{t, s}]}
			if coord != nil {
				st.slot, st.ctl = coord.addSubtask(t.Source != nil)
			}
			g.Go(func() error {
				err := st.run()
				if err != nil && !errors.Is(err, context.Canceled) {
					return fmt.Errorf("%s (subtask %d/%d): %w", t.Name, s+1, t.Parallelism, err)
				}
				return err
			})
		}
	}
	if coord != nil {
		g.Go(func() error {
			err := coord.run(gctx)
			if errors.Is(err, context.Canceled) && gctx.Err() == nil {
				return nil
			}
			return err
		})
	}
	err = g.Wait()
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return err
}

func routes(k planner.ExchangeKind, from, to int) bool {
	switch k {
	case planner.Forward:
		return from == to
	case planner.Global:
		return to == 0
	}
	return true
}

func (m *Message) release() {
	if m.Kind == MsgData && m.Batch.Rec != nil {
		m.Batch.Rec.Release()
		m.Batch.Rec = nil
	}
}

// subtask is one parallel instance of a task, run on its own goroutine.
type subtask struct {
	task      *planner.Task
	index     int
	cfg       *JobConfig
	ctx       context.Context
	gchans    *gateChans // nil for sources
	chanInput []int      // input edge of each gate channel
	gate      *inputGate
	outChans  [][]*outChan // by output edge, by target subtask

	ops  []Operator
	next []Collector // next[i]: what operator i emits to
	out  output

	// checkpointing (nil coord: off)
	coord       *coordinator
	slot        int
	ctl         *mailbox[ctlMsg]
	src         Source
	committed   int64          // two-phase sinks: last checkpoint committed
	valuesDone  bool           // the Values source emitted its row
	stopTrigger *trigger       // the stop-with-savepoint request that ended the source
	finalID     int64          // id of the last final barrier that passed
	ended       bool           // a source's input ended (or stopped)
	triggered   int            // triggers a source handled
	shutdownReq bool           // sources: the final checkpoint completed
	done        bool           // the gate loop ends
	upend       *unalignedSnap // the unaligned checkpoint being recorded
	// takenOver lists, per operator id, the old subtasks whose non-keyed
	// state this subtask took over at a restore at lower parallelism: their
	// keys are deleted by every checkpoint, so no stale state survives.
	takenOver map[string][]int
	wakeups   *wakeups // nil: no operator with processing-time timers
	spareBuf  *checkpoint.Buffer
}

func (st *subtask) checkpointing() bool { return st.coord != nil }

// committedState is the checkpoint backend's committed state, if it offers one
// (*checkpoint.Store does).
func (st *subtask) committedState() state.Committed {
	if st.coord == nil {
		return nil
	}
	c, _ := st.coord.cfg.Backend.(state.Committed)
	return c
}

func (st *subtask) run() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v (at %s)", r, panicSite(debug.Stack()))
		}
		if st.gate != nil {
			st.gate.release()
		}
	}()
	if err := st.build(); err != nil {
		st.close()
		return err
	}
	defer func() {
		if cerr := st.close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing: %w", cerr)
		}
	}()
	if err := st.restore(); err != nil {
		return fmt.Errorf("restoring state: %w", err)
	}
	if st.task.Source != nil {
		return st.runSource()
	}
	return st.runInputs()
}

// process hands a batch of input edge `input` to the head of the chain.
func (st *subtask) process(input int, b Batch) error {
	if len(st.ops) == 0 {
		return st.out.Collect(b)
	}
	return st.ops[0].ProcessBatch(input, b, st.next[0])
}

// watermark hands an advanced watermark to the head of the chain.
func (st *subtask) watermark(wm int64) error {
	if len(st.ops) == 0 {
		return st.out.EmitWatermark(wm)
	}
	return st.ops[0].ProcessWatermark(wm, st.next[0])
}

// finish runs at the end of data: the chain finishes front to back, then
// the output (which signals the end downstream, or flushes a sink).
func (st *subtask) finish() error {
	for i, op := range st.ops {
		if err := op.Finish(st.next[i]); err != nil {
			return err
		}
	}
	return st.out.end()
}

// link adapts an operator to a Collector of its predecessor.
type link struct {
	op   Operator
	next Collector
}

func (l *link) Collect(b Batch) error        { return l.op.ProcessBatch(0, b, l.next) }
func (l *link) EmitWatermark(wm int64) error { return l.op.ProcessWatermark(wm, l.next) }

func (st *subtask) build() error {
	t := st.task
	wk := &wakeups{clock: st.cfg.Clock, at: make([]int64, len(t.Ops))}
	for i, spec := range t.Ops {
		oc := &OpContext{OpID: spec.OpID(), Subtask: st.index, Parallelism: t.Parallelism,
			KeyGroups: st.keyGroups(), Checkpointing: st.checkpointing(), Mem: st.cfg.Mem,
			BatchSize: st.cfg.BatchSize, Clock: st.cfg.Clock, Metrics: st.cfg.Metrics, StateTTL: st.cfg.StateTTL, NewSource: st.cfg.NewSource,
			StateBackend: st.cfg.StateBackend, StateMemory: st.cfg.StateMemory, StateDir: st.cfg.StateDir,
			Committed: st.committedState(), StateTierHotBytes: st.cfg.StateTierHotBytes, wakeups: wk, opIndex: i, markIdle: func() error { return st.out.idle() }}
		op, err := newOperator(spec, oc)
		if err != nil {
			return err
		}
		if st.cfg.WrapOperator != nil {
			op = st.cfg.WrapOperator(t.Name, st.index, op)
		}
		st.ops = append(st.ops, op)
		if _, ok := op.(ProcessingTimeOperator); ok {
			st.wakeups = wk
		}
		if err := op.Open(oc); err != nil {
			return fmt.Errorf("%s: %w", spec.Describe(), err)
		}
	}
	var err error
	switch {
	case t.Sink != nil:
		st.out, err = newSinkOutput(st)
	case len(t.Outputs) == 1:
		st.out = newExchangeOutput(st, t.Outputs[0], st.outChans[0])
	case len(t.Outputs) > 1:
		fan := &fanOut{}
		for i, e := range t.Outputs {
			fan.outs = append(fan.outs, newExchangeOutput(st, e, st.outChans[i]))
		}
		st.out = fan
	default:
		err = fmt.Errorf("task %s has neither sink nor output", t.Name)
	}
	if err != nil {
		return err
	}
	st.next = make([]Collector, len(st.ops))
	for i := range st.ops {
		if i+1 < len(st.ops) {
			st.next[i] = &link{op: st.ops[i+1]}
		} else {
			st.next[i] = st.out
		}
	}
	for i := 0; i+1 < len(st.ops); i++ {
		st.next[i].(*link).next = st.next[i+1]
	}
	if t.Source != nil && !t.Source.Values {
		sc := &SourceContext{
			Subtask:         st.index,
			Parallelism:     t.Parallelism,
			Mem:             st.cfg.Mem,
			BatchSize:       st.cfg.BatchSize,
			Linger:          st.cfg.Linger,
			Table:           t.Source.Table,
			Schema:          t.Source.Schema,
			Columns:         SourceColumnUse(t),
			SkippedRecords:  &st.cfg.Metrics.Skipped,
			PartitionFilter: t.Source.PartitionFilter,
		}
		src, err := st.cfg.NewSource(t.Source.Table, sc)
		if err != nil {
			return err
		}
		st.src = src
	}
	return nil
}

// close releases everything; the first error is returned (an operator that
// cannot close cleanly fails the attempt, as in Flink).
func (st *subtask) close() error {
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	for _, op := range st.ops {
		if err := op.Close(); err != nil {
			keep(err)
		}
	}
	if st.out != nil {
		st.out.close()
	}
	if st.src != nil {
		if err := st.src.Close(); err != nil {
			keep(err)
		}
	}
	return first
}

// sourceOut is the SourceOutput of a MessageSource.
type sourceOut struct{ st *subtask }

func (o sourceOut) Emit(rec arrow.Record) error { return o.st.emitRecord(rec) }
func (o sourceOut) Heartbeat() error            { return o.st.emitRecord(nil) }
func (o sourceOut) EmitWatermark(wm int64) error {
	if err := o.st.watermark(wm); err != nil {
		return err
	}
	return o.st.pollCtl()
}
func (o sourceOut) MarkIdle() error {
	if err := o.st.out.idle(); err != nil {
		return err
	}
	return o.st.pollCtl()
}

// emitRecord is the emit callback of a source: rec == nil is a heartbeat.
// Barriers are injected and notifications handled here, between batches.
func (st *subtask) emitRecord(rec arrow.Record) error {
	if err := st.ctx.Err(); err != nil {
		if rec != nil {
			rec.Release()
		}
		return err
	}
	if rec == nil {
		if err := st.tick(); err != nil {
			return err
		}
		return st.pollCtl()
	}
	st.cfg.Metrics.RecordsIn.Add(rec.NumRows())
	if err := st.process(0, Batch{Rec: rec}); err != nil {
		return err
	}
	if st.checkpointing() && st.coord.cfg.TriggerEveryBatch { // lockstep: wait for this batch's barrier
		n := st.triggered
		st.coord.batchDone()
		for st.triggered == n {
			if err := st.handleCtl(); err != nil {
				return err
			}
			if st.triggered != n {
				break
			}
			select {
			case <-st.ctl.sig:
			case <-st.ctx.Done():
				return st.ctx.Err()
			}
		}
	}
	return st.pollCtl()
}

// runSource runs the source; with checkpointing, barriers are injected
// between batches and, after the input ended, until the final checkpoint
// completed (a failed final checkpoint is retried: the source waits).
func (st *subtask) runSource() error {
	t := st.task
	if t.Source.Values {
		if !st.valuesDone && t.Source.Rows != nil { // the rows of a VALUES list (values.go)
			recs, err := valuesRecords(t.Source, st.cfg.Mem, st.cfg.BatchSize, expr.Options{Now: st.cfg.Clock.Now})
			if err != nil {
				return err
			}
			for i, rec := range recs {
				st.cfg.Metrics.RecordsIn.Add(rec.NumRows())
				if err := st.process(0, Batch{Rec: rec}); err != nil {
					for _, r := range recs[i+1:] {
						r.Release()
					}
					return err
				}
			}
			st.valuesDone = true
		}
		if !st.valuesDone { // a restored Values source emitted its row already
			rec := expr.NewRecord(arrow.NewSchema(nil, nil), nil, 1)
			st.cfg.Metrics.RecordsIn.Add(1)
			if err := st.process(0, Batch{Rec: rec}); err != nil {
				return err
			}
			st.valuesDone = true
		}
	} else {
		var err error
		if ms, ok := st.src.(MessageSource); ok {
			err = ms.RunMessages(st.ctx, sourceOut{st})
		} else {
			err = st.src.Run(st.ctx, st.emitRecord)
		}
		if errors.Is(err, errStopSource) {
			return st.stopSource()
		}
		if err != nil {
			return err
		}
		// A bounded input ends event time: every timer fires.
		if err := st.watermark(MaxWatermark); err != nil {
			return err
		}
	}
	if err := st.finish(); err != nil {
		return err
	}
	if !st.checkpointing() {
		return nil
	}
	st.ended = true
	st.coord.sourceFinished()
	return st.awaitShutdown()
}

// awaitShutdown keeps a source that ended (or stopped) taking barriers and
// notifications until the coordinator says the job's last checkpoint
// completed; then everything downstream shuts down.
func (st *subtask) awaitShutdown() error {
	for {
		if err := st.handleCtl(); err != nil {
			return err
		}
		if st.shutdownReq {
			return st.shutdown()
		}
		select {
		case <-st.ctl.sig:
		case <-st.ctx.Done():
			return st.ctx.Err()
		}
	}
}

// stopSource ends a source stopped by a stop-with-savepoint request: with
// drain, the end of data goes first (operators flush), then the savepoint
// barrier; without, the barrier was injected already and operators do not
// finish.
func (st *subtask) stopSource() error {
	tr := *st.stopTrigger
	st.ended = true
	if tr.drain {
		// Drain ends event time as the end of the input would (Flink).
		if err := st.watermark(MaxWatermark); err != nil {
			return err
		}
		if err := st.finish(); err != nil {
			return err
		}
		if err := st.barrier(barrierOf(tr)); err != nil {
			return err
		}
	}
	return st.awaitShutdown()
}

// errStopSource ends a source's Run at a stop-with-savepoint barrier.
var errStopSource = errors.New("source stopped for a savepoint")

// pollCtl handles pending coordinator messages without waiting.
// Processing-time timers that are due fire here too (between a source's
// batches).
func (st *subtask) pollCtl() error {
	if st.wakeups.due() {
		if err := st.fireProcessingTime(); err != nil {
			return err
		}
	}
	if st.ctl == nil {
		return nil
	}
	return st.handleCtl()
}

// handleCtl handles the coordinator's messages: barrier triggers (sources),
// completed and aborted checkpoints (every subtask), shutdown (sources).
func (st *subtask) handleCtl() error {
	for {
		c, ok := st.ctl.pop()
		if !ok {
			return nil
		}
		switch c.kind {
		case ctlTrigger:
			st.triggered++
			if err := st.onTrigger(c.tr); err != nil {
				return err
			}
		case ctlComplete:
			if c.buf != nil && st.spareBuf == nil {
				st.spareBuf = c.buf
			}
			if err := st.notifyComplete(c.id, c.commit); err != nil {
				return err
			}
		case ctlAbort:
			if err := st.notifyAborted(c.id); err != nil {
				return err
			}
		case ctlShutdown:
			st.shutdownReq = true
		}
	}
}

// onTrigger injects a barrier into a source. A stop request ends a running
// source's input: without drain the savepoint barrier is injected here;
// with drain it is injected after the end of data.
func (st *subtask) onTrigger(tr trigger) error {
	if tr.stop && !st.ended {
		st.stopTrigger = &tr
		if !tr.drain {
			if err := st.barrier(barrierOf(tr)); err != nil {
				return err
			}
		}
		return errStopSource
	}
	return st.barrier(barrierOf(tr))
}

// notifyComplete tells the operators that checkpoint id completed and, if
// it commits side effects, commits a two-phase sink up to it.
func (st *subtask) notifyComplete(id int64, commit bool) error {
	for i, op := range st.ops {
		if err := op.NotifyComplete(id); err != nil {
			return fmt.Errorf("%s: %w", st.task.Ops[i].Describe(), err)
		}
	}
	if !commit || id <= st.committed {
		return nil
	}
	if so, ok := st.out.(*sinkOutput); ok && so.twoPhase() {
		st.committed = id
		return so.commit(id)
	}
	return nil
}

// notifyAborted tells the operators that checkpoint id failed and aborts
// its alignment here, if it is still going on.
func (st *subtask) notifyAborted(id int64) error {
	for i, op := range st.ops {
		if err := op.NotifyAborted(id); err != nil {
			return fmt.Errorf("%s: %w", st.task.Ops[i].Describe(), err)
		}
	}
	if st.gate != nil {
		return st.gate.abortAlignment(id)
	}
	return nil
}

// barrier takes this subtask's snapshot for b (source offset, operator
// state, sink pre-commit), forwards b downstream and acknowledges. A failed
// snapshot fails the checkpoint, not the job: a cancel marker goes
// downstream instead of the barrier, so that consumers stop aligning.
func (st *subtask) barrier(b Barrier) error { return st.takeSnapshot(b, false) }

// takeSnapshot is barrier; unaligned keeps the snapshot open for the
// channel state, acknowledged by onUnalignedDone.
func (st *subtask) takeSnapshot(b Barrier, unaligned bool) error {
	buf := st.spareBuf // the last committed snapshot's buffer, handed back
	st.spareBuf = nil
	if buf == nil {
		buf = checkpoint.NewBuffer()
	}
	buf.Reset() // the store empties what it commits; a test backend may not
	if unaligned {
		st.upend = &unalignedSnap{id: b.ID, buf: buf} // snapshot keeps the channel-state key
		st.upend.state = st.channelStateHeader(nil)
	}
	var err error
	if f := st.coord.cfg.Fault; f != nil {
		err = f(StepSnapshot, b.ID)
	}
	var durable func() error
	if err == nil {
		durable, err = st.snapshot(b, buf)
	}
	if errors.Is(err, ErrInjectedCrash) {
		return err
	}
	if b.Final {
		st.finalID = b.ID
	}
	if err != nil {
		st.upend = nil
		if cerr := st.out.cancel(b.ID); cerr != nil {
			return cerr
		}
		st.coord.ackSnapshot(ack{slot: st.slot, id: b.ID, buf: buf, err: err})
		return nil
	}
	if ferr := st.out.forwardBarrier(b); ferr != nil {
		return ferr
	}
	if unaligned {
		st.upend.durable = durable
	} else {
		st.coord.ackSnapshot(ack{slot: st.slot, id: b.ID, buf: buf, durable: durable})
	}
	return nil
}

// snapshot writes the subtask's state for b into buf; durable, when not
// nil, waits for an AsyncPreCommitSink's pre-committed output.
func (st *subtask) snapshot(b Barrier, buf *checkpoint.Buffer) (durable func() error, err error) {
	if st.valuesDone {
		if err := buf.Put(checkpoint.SubtaskKey(st.task.Source.ID, st.index), []byte{1}); err != nil {
			return nil, err
		}
	}
	if cs, ok := st.src.(CheckpointedSource); ok {
		state, err := cs.SnapshotState()
		if err != nil {
			return nil, fmt.Errorf("source snapshot: %w", err)
		}
		if err := buf.Put(checkpoint.SubtaskKey(st.task.Source.ID, st.index), state); err != nil {
			return nil, err
		}
	}
	for i, op := range st.ops {
		if err := op.Snapshot(b.ID, buf); err != nil {
			return nil, fmt.Errorf("%s snapshot: %w", st.task.Ops[i].Describe(), err)
		}
	}
	if so, ok := st.out.(*sinkOutput); ok && so.twoPhase() {
		var state []byte
		var err error
		if as, ok := so.sink.(AsyncPreCommitSink); ok {
			state, durable, err = as.PreCommitAsync(b.ID)
		} else {
			state, err = so.sink.(TwoPhaseSink).PreCommit(b.ID)
		}
		if err != nil {
			return nil, fmt.Errorf("sink pre-commit: %w", err)
		}
		if err := buf.Put(checkpoint.SubtaskKey(st.task.Sink.ID, st.index), state); err != nil {
			return nil, err
		}
	}
	// An aligned snapshot has no channel state: an older unaligned one's
	// must not survive into it.
	if st.gchans != nil && (st.upend == nil || st.upend.id != b.ID) {
		if err := buf.Delete(checkpoint.SubtaskKey(st.channelStateID(), st.index)); err != nil {
			return nil, err
		}
	}
	// The states of vanished subtasks this one took over are rewritten in
	// its own: their old keys go.
	for opID, olds := range st.takenOver {
		for _, j := range olds {
			if err := buf.Delete(checkpoint.SubtaskKey(opID, j)); err != nil {
				return nil, err
			}
		}
	}
	return durable, nil
}

// restore loads this subtask's state from the checkpoint being restored.
func (st *subtask) restore() error {
	if !st.checkpointing() || !st.coord.cfg.Restore {
		if so, ok := st.out.(*sinkOutput); ok && so.twoPhase() && st.checkpointing() {
			return so.restore(nil) // a fresh attempt discards hidden output of failed ones
		}
		return nil
	}
	r := st.coord.cfg.Backend.Reader()
	if t := st.task; t.Source != nil {
		ss, err := st.subtaskStates(r, t.Source.ID)
		if err != nil {
			return err
		}
		own, mine, all := ss.own, ss.mine, len(ss.all)
		if t.Source.Values {
			st.valuesDone = len(mine) > 0
		}
		if cs, ok := st.src.(CheckpointedSource); ok && all > 0 {
			var err error
			if own != nil && all == t.Parallelism {
				err = cs.RestoreState(own)
			} else if sps, ok := cs.(SplitSource); ok {
				err = sps.RestoreSplits(ss.all, ss.owned)
			} else if rs, ok := cs.(RescalableSource); ok {
				err = rs.RestoreStates(mine)
			} else {
				err = fmt.Errorf("source '%s' cannot be restored at parallelism %d: its state was taken at parallelism %d", t.Source.Table.Name, t.Parallelism, all)
			}
			if err != nil {
				// The input no longer matches the checkpoint (a file is gone or
				// shorter, the parallelism changed): retrying cannot help.
				return &UnrecoverableError{Err: err}
			}
		}
	}
	for i, op := range st.ops {
		if err := op.Restore(r); err != nil {
			return fmt.Errorf("%s: %w", st.task.Ops[i].Describe(), err)
		}
	}
	if so, ok := st.out.(*sinkOutput); ok && so.twoPhase() {
		ss, err := st.subtaskStates(r, st.task.Sink.ID)
		if err != nil {
			return err
		}
		own, mine, all := ss.own, ss.mine, len(ss.all)
		if all == 0 || (own != nil && all == st.task.Parallelism) {
			err = so.restore(own)
		} else if rs, ok := so.sink.(RescalableSink); ok {
			err = rs.RestoreStates(mine)
		} else {
			err = fmt.Errorf("sink '%s' cannot be restored at parallelism %d: its state was taken at parallelism %d", st.task.Sink.Table.Name, st.task.Parallelism, all)
		}
		if err != nil {
			// The output the checkpoint names is gone or not this sink's:
			// retrying cannot help.
			return &UnrecoverableError{Err: err}
		}
		return nil
	}
	return nil
}

// subtaskStates are the per-subtask states of one operator in the
// checkpoint being restored.
type subtaskStates struct {
	own   []byte   // this subtask's (same index), if any
	all   [][]byte // every old subtask's, by old index (len = old parallelism)
	owned []bool   // all[i] is this subtask's to take over: i mod parallelism == index
	mine  [][]byte // the owned ones, in order
}

// subtaskStates reads the per-subtask states of operator opID. When the
// parallelism changed, old subtask i belongs to new subtask i mod
// parallelism, so that each old state has exactly one owner (split sources
// also see the others, to take their share of every split). Old subtasks
// beyond the parallelism are recorded in takenOver.
func (st *subtask) subtaskStates(r checkpoint.StateReader, opID string) (subtaskStates, error) {
	var ss subtaskStates
	k0 := checkpoint.SubtaskKey(opID, 0)
	prefix := k0[:len(k0)-4]
	err := r.Scan(prefix, func(k, v []byte) error {
		if len(k) != len(k0) {
			return nil
		}
		i := int(binary.BigEndian.Uint32(k[len(prefix):]))
		if i != len(ss.all) {
			return fmt.Errorf("operator %s: the checkpoint has no state of subtask %d", opID, len(ss.all))
		}
		v = append([]byte(nil), v...)
		ss.all = append(ss.all, v)
		if i == st.index {
			ss.own = v
		}
		mine := i%st.task.Parallelism == st.index
		ss.owned = append(ss.owned, mine)
		if mine {
			ss.mine = append(ss.mine, v)
			if i >= st.task.Parallelism {
				if st.takenOver == nil {
					st.takenOver = map[string][]int{}
				}
				st.takenOver[opID] = append(st.takenOver[opID], i)
			}
		}
		return nil
	})
	return ss, err
}

// KeyGroups is the range [Start, End) of key groups a subtask owns.
type KeyGroups struct {
	Start, End     int
	MaxParallelism int
}

// keyGroups returns the key groups of this subtask: those k with
// k*parallelism/maxParallelism == index, as the hash exchange routes them.
func (st *subtask) keyGroups() KeyGroups {
	p, maxP, i := st.task.Parallelism, st.cfg.MaxParallelism, st.index
	start := (i*maxP + p - 1) / p
	end := ((i+1)*maxP + p - 1) / p
	return KeyGroups{Start: start, End: end, MaxParallelism: maxP}
}

// shutdown ends this subtask after the final checkpoint: downstream is told
// nothing more comes; a two-phase sink first waits for the final commit.
func (st *subtask) shutdown() error {
	if so, ok := st.out.(*sinkOutput); ok {
		if so.twoPhase() {
			for st.committed < st.finalID {
				if err := st.handleCtl(); err != nil {
					return err
				}
				if st.committed >= st.finalID {
					break
				}
				select {
				case <-st.ctl.sig:
				case <-st.ctx.Done():
					return st.ctx.Err()
				}
			}
		}
		return nil
	}
	return st.out.shutdown()
}

// tick gives a ticking sink its processing-time call.
func (st *subtask) tick() error {
	if so, ok := st.out.(*sinkOutput); ok {
		if t, ok := so.sink.(Ticker); ok {
			return t.Tick(time.Now())
		}
	}
	return nil
}

// ticks returns a channel that fires every linger if this subtask ends in a
// ticking sink (nil otherwise: never fires) and a function to stop it.
func (st *subtask) ticks() (<-chan time.Time, func()) {
	if so, ok := st.out.(*sinkOutput); ok {
		if _, ok := so.sink.(Ticker); ok {
			t := time.NewTicker(st.cfg.Linger)
			return t.C, t.Stop
		}
	}
	return nil, func() {}
}

// runInputs reads the input gate until every channel shut down (or, without
// checkpointing, ended), handling the coordinator's notifications and the
// sink's ticks in between. The gate aligns barriers and combines
// watermarks; the subtask is its handler.
func (st *subtask) runInputs() error {
	var atLeastOnce bool
	var alignTimeout time.Duration
	if st.checkpointing() {
		atLeastOnce = st.coord.cfg.AtLeastOnce
		alignTimeout = st.coord.cfg.AlignedTimeout
	}
	g := newInputGate(st.gchans, len(st.chanInput), atLeastOnce, st)
	g.unaligned = st.checkpointing() && st.coord.cfg.Unaligned && !atLeastOnce
	g.alignTimeout = alignTimeout
	st.gate = g
	if err := st.replayChannelState(); err != nil {
		return err
	}
	tickC, stop := st.ticks()
	defer stop()
	var ctlSig chan struct{}
	if st.ctl != nil {
		ctlSig = st.ctl.sig
	}
	// The alignment timeout of the checkpoint being aligned (unaligned
	// mode with execution.checkpointing.aligned-checkpoint-timeout).
	var alignTimer *time.Timer
	var alignC <-chan time.Time
	alignAt := int64(0)
	defer func() {
		if alignTimer != nil {
			alignTimer.Stop()
		}
	}()
	timedOut := func() error {
		alignTimer, alignC, alignAt = nil, nil, 0
		return g.alignmentTimedOut()
	}
	defer st.wakeups.disarm()
	// Operators may hold the input while a checkpoint is pending
	// (InputHolder; unaligned: once it is acknowledged, inputGate.holding).
	if st.checkpointing() {
		g.acked = &st.coord.acked
		for _, op := range st.ops {
			if h, ok := op.(InputHolder); ok {
				g.holders = append(g.holders, h)
			}
		}
	}
	holding := false
	for !st.done {
		procC := st.wakeups.timer()
		hold := g.holding()
		if hold && !holding && st.cfg.Metrics != nil {
			st.cfg.Metrics.InputHolds.Add(1)
		}
		holding = hold
		if d := g.alignDeadline(); d != alignAt {
			if alignTimer != nil {
				alignTimer.Stop()
				alignTimer, alignC = nil, nil
			}
			if alignAt = d; d != 0 {
				alignTimer = time.NewTimer(time.Until(time.Unix(0, d)))
				alignC = alignTimer.C
			}
		}
		in := st.gchans.in
		if hold {
			// An operator waits for the pending checkpoint to complete:
			// take no input (not even what the gate queued) until then.
			in = nil
		} else if !g.queueing() && g.hasWork() {
			// Back from an unaligned checkpoint, or from a hold: take what
			// was queued, in order.
			if err := g.resume(); err != nil {
				return err
			}
			continue
		} else if g.queueing() && g.hasWork() {
			// Read eagerly what has arrived, so that barriers behind queued
			// batches are seen (and taken first), then process one message.
			for drained := false; !drained; {
				select {
				case m := <-st.gchans.in:
					if err := g.deliver(m); err != nil {
						return err
					}
				case <-ctlSig:
					if err := st.handleCtl(); err != nil {
						return err
					}
				case <-alignC:
					if err := timedOut(); err != nil {
						return err
					}
				case <-st.ctx.Done():
					return st.ctx.Err()
				default:
					drained = true
				}
			}
			if err := g.step(); err != nil {
				return err
			}
			if st.wakeups.due() {
				if err := st.fireProcessingTime(); err != nil {
					return err
				}
			}
			continue
		}
		select {
		case m := <-in:
			if err := g.deliver(m); err != nil {
				return err
			}
		case <-st.ctx.Done():
			return st.ctx.Err()
		case <-tickC:
			if err := st.tick(); err != nil {
				return err
			}
		case <-ctlSig:
			if err := st.handleCtl(); err != nil {
				return err
			}
		case <-alignC:
			if err := timedOut(); err != nil {
				return err
			}
		case <-procC:
			st.wakeups.disarm()
			if err := st.fireProcessingTime(); err != nil {
				return err
			}
		}
	}
	return nil
}

// The subtask is its gate's handler.

func (st *subtask) onBatch(ch int, b Batch) error { return st.process(st.chanInput[ch], b) }
func (st *subtask) onWatermark(wm int64) error    { return st.watermark(wm) }
func (st *subtask) onIdle() error                 { return st.out.idle() }
func (st *subtask) onBarrier(b Barrier) error     { return st.barrier(b) }
func (st *subtask) onCancel(id int64) error       { return st.out.cancel(id) }
func (st *subtask) onEnd() error {
	if err := st.finish(); err != nil {
		return err
	}
	if !st.checkpointing() {
		st.done = true
	}
	return nil
}
func (st *subtask) onShutdown() error {
	st.done = true
	return st.shutdown()
}

// onChannelWatermark tells a head operator that wants them the watermark
// of the input edge of channel ch (edgeWatermark) before the combined one
// advances (intervaljoin.go). The gate calls it when a channel's
// watermark moves and when a channel goes idle.
func (st *subtask) onChannelWatermark(ch int) error {
	if len(st.ops) == 0 {
		return nil
	}
	iw, ok := st.ops[0].(InputWatermarkOperator)
	if !ok {
		return nil
	}
	in := st.chanInput[ch]
	g := st.gate
	return iw.ProcessInputWatermark(in, edgeWatermark(in, st.chanInput, g.wm, g.idle, g.ended))
}

// edgeWatermark is the watermark of input in, over the channels c with
// chanInput[c] == in, by the gate's rules for the combined one: the
// minimum over the channels neither idle nor ended; when every channel of
// the input is idle or ended, the largest watermark of the idle ones (an
// idle partition holds nothing back, as in Flink's StatusWatermarkValve);
// MaxWatermark when all ended. The operators keep the largest value they
// were given, so a channel that comes back from idleness behind the others
// does not move an input's watermark back.
func edgeWatermark(in int, chanInput []int, wm []int64, idle, ended []bool) int64 {
	w, active, anyIdle := combineWatermarks(in, chanInput, wm, idle, ended)
	if !active && !anyIdle {
		return MaxWatermark
	}
	return w
}

// combineWatermarks combines the watermarks of the channels of input edge
// in (-1: every channel) that have not ended: the minimum over the active
// ones, else (every one idle, anyIdle) the maximum over the idle ones, else
// NoWatermark. ended may be nil (none ended).
func combineWatermarks(in int, chanInput []int, wm []int64, idle, ended []bool) (w int64, active, anyIdle bool) {
	activeMin, idleMax := MaxWatermark, NoWatermark
	for c, x := range wm {
		switch {
		case in >= 0 && chanInput[c] != in, ended != nil && ended[c]:
		case idle[c]:
			anyIdle = true
			idleMax = max(idleMax, x)
		default:
			active = true
			activeMin = min(activeMin, x)
		}
	}
	if active {
		return activeMin, true, anyIdle
	}
	return idleMax, false, anyIdle
}

// panicSite returns the function and file:line where a recovered panic
// happened, from a debug.Stack() trace.
func panicSite(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "panic(") && i+2 < len(lines) {
			return strings.TrimSpace(lines[i+1]) + " " + strings.Fields(strings.TrimSpace(lines[i+2]))[0]
		}
	}
	return "unknown"
}
