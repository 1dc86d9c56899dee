package exec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"golang.org/x/sync/errgroup"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/planner"
)

// Collector receives the batches an operator emits. Collect takes ownership
// of b.Rec.
type Collector interface {
	Collect(b Batch) error
}

// Operator is one fused operator of a task chain, instantiated per subtask.
// Operators run on their subtask's goroutine only.
type Operator interface {
	// Process consumes b (taking ownership of b.Rec) and emits to out.
	Process(b Batch, out Collector) error
	// Finish is called once at end of input; it may emit final results.
	Finish(out Collector) error
	// Close releases resources; idempotent, also called after failures.
	Close() error
}

// Metrics are a job's counters, updated by its subtasks.
type Metrics struct {
	RecordsIn  atomic.Int64 // rows read by sources
	RecordsOut atomic.Int64 // rows written to sinks (or the client)
	Skipped    atomic.Int64 // bad records skipped by ignore-parse-errors
}

// JobConfig is everything a job needs besides its plan.
type JobConfig struct {
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
	// WrapOperator, when set, wraps every operator as it is built (tests
	// inject faults with it).
	WrapOperator func(task string, subtask int, op Operator) Operator
}

func (c *JobConfig) defaults() {
	if c.Mem == nil {
		c.Mem = memory.NewGoAllocator()
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
}

// RunJob runs the plan until every source ended and everything was flushed
// (returns nil), a subtask failed (returns its error) or ctx is cancelled
// (returns ctx.Err()). All goroutines have exited and all records are
// released when it returns.
func RunJob(ctx context.Context, plan *planner.Physical, cfg JobConfig) (err error) {
	cfg.defaults()
	// Channels: for each edge, chans[from subtask][to subtask] (nil when the
	// exchange never routes that pair).
	type edgeChans [][]chan Message
	chans := make(map[*planner.Edge]edgeChans, len(plan.Edges))
	var all []chan Message
	for _, e := range plan.Edges {
		ec := make(edgeChans, e.From.Parallelism)
		for i := range ec {
			ec[i] = make([]chan Message, e.To.Parallelism)
			for j := range ec[i] {
				if routes(e.Kind, i, j) {
					ch := make(chan Message, cfg.ChannelCapacity)
					ec[i][j] = ch
					all = append(all, ch)
				}
			}
		}
		chans[e] = ec
	}
	defer func() {
		// Every goroutine has exited: release what is still in flight.
		for _, ch := range all {
			for {
				select {
				case m := <-ch:
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
	var batchTick chan struct{}
	if cfg.Checkpoint != nil {
		n := 0
		for _, t := range plan.Tasks {
			n += t.Parallelism
		}
		coord = newCoordinator(cfg.Checkpoint, n)
		if cfg.Checkpoint.TriggerEveryBatch {
			batchTick = make(chan struct{}, n)
		}
	}
	var subtasks sync.WaitGroup
	for _, t := range plan.Tasks {
		for s := 0; s < t.Parallelism; s++ {
			st := &subtask{task: t, index: s, cfg: &cfg, ctx: gctx, coord: coord, batchTick: batchTick}
			for _, e := range t.Inputs {
				for i := 0; i < e.From.Parallelism; i++ {
					if ch := chans[e][i][s]; ch != nil {
						st.inputs = append(st.inputs, ch)
					}
				}
			}
			if t.Output != nil {
				st.outChans = make([]chan Message, t.Output.To.Parallelism)
				copy(st.outChans, chans[t.Output][s])
			}
			if coord != nil && t.Source != nil {
				st.triggers = coord.addSource()
			}
			if coord != nil && t.Sink != nil {
				st.notify = coord.addSink() // used if the sink is two-phase
			}
			subtasks.Add(1)
			g.Go(func() error {
				defer subtasks.Done()
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
			err := coord.run(gctx, batchTick)
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
	task     *planner.Task
	index    int
	cfg      *JobConfig
	ctx      context.Context
	inputs   []chan Message
	outChans []chan Message

	ops  []Operator
	head Collector
	out  output

	// checkpointing (nil coord: off)
	coord       *coordinator
	triggers    chan trigger  // sources: barrier injection requests
	batchTick   chan struct{} // sources: "a batch was emitted" (TriggerEveryBatch)
	notify      chan struct{} // two-phase sinks: a checkpoint completed
	src         Source
	committed   int64    // two-phase sinks: last checkpoint committed
	valuesDone  bool     // the Values source emitted its row
	stopTrigger *trigger // the stop-with-savepoint request that ended the source
	finalID     int64    // id of the final checkpoint, once its barrier passed
}

func (st *subtask) checkpointing() bool { return st.coord != nil }

func (st *subtask) run() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v (at %s)", r, panicSite(debug.Stack()))
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

// finish runs at the end of data: the chain finishes front to back, then
// the output (which signals the end downstream, or flushes a sink).
func (st *subtask) finish() error {
	for i, op := range st.ops {
		if err := op.Finish(nextOf(st, i)); err != nil {
			return err
		}
	}
	return st.out.end()
}

func nextOf(st *subtask, i int) Collector {
	if i+1 < len(st.ops) {
		return &link{op: st.ops[i+1], next: nextOf(st, i+1)}
	}
	return st.out
}

// link adapts an operator to a Collector of its predecessor.
type link struct {
	op   Operator
	next Collector
}

func (l *link) Collect(b Batch) error { return l.op.Process(b, l.next) }

func (st *subtask) build() error {
	t := st.task
	for _, spec := range t.Ops {
		op, err := newOperator(spec, st)
		if err != nil {
			return err
		}
		if st.cfg.WrapOperator != nil {
			op = st.cfg.WrapOperator(t.Name, st.index, op)
		}
		st.ops = append(st.ops, op)
	}
	var err error
	switch {
	case t.Sink != nil:
		st.out, err = newSinkOutput(st)
	case t.Output != nil:
		st.out = newExchangeOutput(st)
	default:
		err = fmt.Errorf("task %s has neither sink nor output", t.Name)
	}
	if err != nil {
		return err
	}
	if len(st.ops) > 0 {
		st.head = &link{op: st.ops[0], next: nextOf(st, 0)}
	} else {
		st.head = st.out
	}
	if so, ok := st.out.(*sinkOutput); !ok || !so.twoPhase() {
		st.notify = nil // only two-phase sinks act on completed checkpoints
	}
	if t.Source != nil && !t.Source.Values {
		sc := &SourceContext{
			Subtask:        st.index,
			Parallelism:    t.Parallelism,
			Mem:            st.cfg.Mem,
			BatchSize:      st.cfg.BatchSize,
			Linger:         st.cfg.Linger,
			Table:          t.Source.Table,
			Schema:         t.Source.Schema,
			SkippedRecords: &st.cfg.Metrics.Skipped,
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

// runSource runs the source; with checkpointing, barriers are injected
// between batches (inside emit) and, after the input ended, until the final
// checkpoint.
func (st *subtask) runSource() error {
	t := st.task
	if t.Source.Values {
		if !st.valuesDone { // a restored Values source emitted its row already
			rec := array.NewRecord(arrow.NewSchema(nil, nil), nil, 1)
			st.cfg.Metrics.RecordsIn.Add(1)
			if err := st.head.Collect(Batch{Rec: rec}); err != nil {
				return err
			}
			st.valuesDone = true
		}
	} else {
		err := st.src.Run(st.ctx, func(rec arrow.Record) error {
			if err := st.ctx.Err(); err != nil {
				if rec != nil {
					rec.Release()
				}
				return err
			}
			if rec == nil { // idle heartbeat
				if err := st.tick(); err != nil {
					return err
				}
			} else {
				st.cfg.Metrics.RecordsIn.Add(rec.NumRows())
				if err := st.head.Collect(Batch{Rec: rec}); err != nil {
					return err
				}
				if st.batchTick != nil { // lockstep: wait for this batch's barrier
					select {
					case st.batchTick <- struct{}{}:
					case <-st.ctx.Done():
						return st.ctx.Err()
					}
					select {
					case tr := <-st.triggers:
						if err := st.onTrigger(tr); err != nil {
							return err
						}
					case <-st.ctx.Done():
						return st.ctx.Err()
					}
				}
			}
			return st.pollTriggers()
		})
		if errors.Is(err, errStopSource) {
			return st.stopSource()
		}
		if err != nil {
			return err
		}
	}
	if err := st.finish(); err != nil {
		return err
	}
	if !st.checkpointing() {
		return nil
	}
	// End of data: keep taking barriers until the final checkpoint.
	select {
	case st.coord.finished <- struct{}{}:
	case <-st.ctx.Done():
		return st.ctx.Err()
	}
	for {
		select {
		case tr := <-st.triggers:
			if err := st.barrier(barrierOf(tr), true); err != nil {
				return err
			}
			if tr.final {
				return st.shutdown()
			}
		case <-st.ctx.Done():
			return st.ctx.Err()
		}
	}
}

// stopSource ends a source stopped by a stop-with-savepoint request: with
// drain, the end of data goes first (operators flush), then the savepoint
// barrier; without, the barrier was injected already and operators do not
// finish. Then everything downstream shuts down once the savepoint is
// committed.
func (st *subtask) stopSource() error {
	tr := *st.stopTrigger
	if tr.drain {
		if err := st.finish(); err != nil {
			return err
		}
		if err := st.barrier(barrierOf(tr), true); err != nil {
			return err
		}
	}
	return st.shutdown()
}

// errStopSource ends a source's Run at a stop-with-savepoint barrier.
var errStopSource = errors.New("source stopped for a savepoint")

// pollTriggers injects the barriers the coordinator asked for. A stop
// request ends the source's input: without drain the savepoint barrier is
// injected here; with drain it is injected after the end of data.
func (st *subtask) pollTriggers() error {
	for {
		select {
		case tr := <-st.triggers:
			if err := st.onTrigger(tr); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// onTrigger injects a barrier into a running source (see pollTriggers).
func (st *subtask) onTrigger(tr trigger) error {
	if tr.stop {
		st.stopTrigger = &tr
		if !tr.drain {
			if err := st.barrier(barrierOf(tr), true); err != nil {
				return err
			}
		}
		return errStopSource
	}
	return st.barrier(barrierOf(tr), true)
}

func barrierOf(tr trigger) Barrier {
	b := Barrier{ID: tr.id, Final: tr.final}
	if tr.savepoint {
		b.Kind = Savepoint
	}
	return b
}

// barrier takes this subtask's snapshot for b (source offset, operator
// state, sink pre-commit), acknowledges it, and forwards b downstream.
func (st *subtask) barrier(b Barrier, isSource bool) error {
	buf := checkpoint.NewBuffer()
	err := st.snapshot(b, buf)
	if err == nil {
		err = st.out.barrier(b, buf)
	}
	if b.Final {
		st.finalID = b.ID
	}
	select {
	case st.coord.acks <- ack{id: b.ID, buf: buf, err: err}:
	case <-st.ctx.Done():
		return st.ctx.Err()
	}
	return nil // a failed snapshot fails the checkpoint, not the job
}

func (st *subtask) snapshot(b Barrier, buf *checkpoint.Buffer) error {
	if st.valuesDone {
		if err := buf.Put(checkpoint.SubtaskKey(st.task.Source.ID, st.index), []byte{1}); err != nil {
			return err
		}
	}
	if cs, ok := st.src.(CheckpointedSource); ok {
		state, err := cs.SnapshotState()
		if err != nil {
			return fmt.Errorf("source snapshot: %w", err)
		}
		if err := buf.Put(checkpoint.SubtaskKey(st.task.Source.ID, st.index), state); err != nil {
			return err
		}
	}
	for i, op := range st.ops {
		if so, ok := op.(StatefulOperator); ok {
			if err := so.SnapshotState(buf, st.keyGroups()); err != nil {
				return fmt.Errorf("%s snapshot: %w", st.task.Ops[i].Describe(), err)
			}
		}
	}
	return nil
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
		own, mine, all, err := st.subtaskStates(r, t.Source.ID)
		if err != nil {
			return err
		}
		if t.Source.Values {
			st.valuesDone = len(mine) > 0
		}
		if cs, ok := st.src.(CheckpointedSource); ok && all > 0 {
			var err error
			if own != nil && all == t.Parallelism {
				err = cs.RestoreState(own)
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
		if so, ok := op.(StatefulOperator); ok {
			if err := so.RestoreState(r, st.keyGroups()); err != nil {
				return fmt.Errorf("%s: %w", st.task.Ops[i].Describe(), err)
			}
		}
	}
	if so, ok := st.out.(*sinkOutput); ok && so.twoPhase() {
		own, mine, all, err := st.subtaskStates(r, st.task.Sink.ID)
		if err != nil {
			return err
		}
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

// subtaskStates reads the per-subtask states of operator opID: this
// subtask's own (at the same index), the ones assigned to it when the
// parallelism changed (old subtask i goes to new subtask i mod parallelism,
// so that each old state has exactly one owner), and how many there are
// (the old parallelism).
func (st *subtask) subtaskStates(r checkpoint.StateReader, opID string) (own []byte, mine [][]byte, all int, err error) {
	k0 := checkpoint.SubtaskKey(opID, 0)
	prefix := k0[:len(k0)-4]
	err = r.Scan(prefix, func(k, v []byte) error {
		if len(k) != len(k0) {
			return nil
		}
		i := int(binary.BigEndian.Uint32(k[len(prefix):]))
		all++
		v = append([]byte(nil), v...)
		if i == st.index {
			own = v
		}
		if i%st.task.Parallelism == st.index {
			mine = append(mine, v)
		}
		return nil
	})
	return own, mine, all, err
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
				select {
				case <-st.notify:
					if err := st.commit(); err != nil {
						return err
					}
				case <-st.ctx.Done():
					return st.ctx.Err()
				}
			}
		}
		return nil
	}
	return st.out.(*exchangeOutput).shutdown()
}

// commit commits a two-phase sink up to the latest completed checkpoint.
func (st *subtask) commit() error {
	if so, ok := st.out.(*sinkOutput); !ok || !so.twoPhase() {
		return nil
	}
	id := st.coord.latest()
	if id <= st.committed {
		return nil
	}
	st.committed = id
	return st.out.(*sinkOutput).commit(id)
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

// runInputs reads the input channels until they all shut down (or, without
// checkpointing, all ended). It is the barrier handler of every subtask: in
// exactly-once mode a channel that delivered barrier n is not read again
// until barrier n arrived on every channel (alignment); in at-least-once
// mode barriers are only counted. Then the subtask snapshots and forwards.
func (st *subtask) runInputs() error {
	n := len(st.inputs)
	const (
		extraDone = iota
		extraTick
		extraNotify
		extras
	)
	cases := make([]reflect.SelectCase, n+extras)
	for i, ch := range st.inputs {
		cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)}
	}
	tickC, stop := st.ticks()
	defer stop()
	cases[n+extraDone] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(st.ctx.Done())}
	cases[n+extraTick] = reflect.SelectCase{Dir: reflect.SelectRecv}
	if tickC != nil {
		cases[n+extraTick].Chan = reflect.ValueOf(tickC)
	}
	cases[n+extraNotify] = reflect.SelectCase{Dir: reflect.SelectRecv}
	if st.notify != nil {
		cases[n+extraNotify].Chan = reflect.ValueOf(st.notify)
	}
	ended, shut := 0, 0
	// Alignment: the barrier being aligned, which channels delivered it,
	// which are blocked (exactly-once) and which shut down (no more
	// barriers can come from those).
	var pending *Barrier
	alignID := int64(0)
	arrived := make([]bool, n)
	blocked := make([]bool, n)
	isShut := make([]bool, n)
	unblockAll := func() {
		for i := range blocked {
			arrived[i] = false
			if blocked[i] {
				blocked[i] = false
				cases[i].Chan = reflect.ValueOf(st.inputs[i])
			}
		}
	}
	// complete snapshots and forwards the pending barrier once every channel
	// delivered it or shut down (in at-least-once mode a channel may deliver
	// the barrier and then its shutdown before the others' barriers).
	complete := func() error {
		if pending == nil {
			return nil
		}
		for i := range arrived {
			if !arrived[i] && !isShut[i] {
				return nil
			}
		}
		b := *pending
		pending = nil
		if err := st.barrier(b, false); err != nil {
			return err
		}
		unblockAll()
		alignID = b.ID + 1
		return nil
	}
	// recv waits for the next event: a message of input i < n, or one of the
	// extra cases. A single input (the common case) needs no reflection.
	recv := func() (int, Message) {
		if n == 1 {
			select {
			case m := <-st.inputs[0]:
				return 0, m
			case <-st.ctx.Done():
				return n + extraDone, Message{}
			case <-tickC:
				return n + extraTick, Message{}
			case <-st.notify:
				return n + extraNotify, Message{}
			}
		}
		i, v, _ := reflect.Select(cases)
		if i < n {
			return i, v.Interface().(Message)
		}
		return i, Message{}
	}
	for {
		i, m := recv()
		switch i {
		case n + extraDone:
			return st.ctx.Err()
		case n + extraTick:
			if err := st.tick(); err != nil {
				return err
			}
			continue
		case n + extraNotify:
			if err := st.commit(); err != nil {
				return err
			}
			continue
		}
		switch m.Kind {
		case MsgData:
			if err := st.head.Collect(m.Batch); err != nil {
				return err
			}
		case MsgBarrier:
			b := m.Barrier
			if b.ID < alignID {
				continue // a barrier of an aborted checkpoint
			}
			if b.ID > alignID || pending == nil {
				unblockAll() // a newer checkpoint supersedes an unfinished alignment
				alignID, pending = b.ID, &b
			}
			arrived[i] = true
			if !st.coord.cfg.AtLeastOnce && n > 1 {
				blocked[i] = true
				cases[i].Chan = reflect.Value{}
			}
			if err := complete(); err != nil {
				return err
			}
		case MsgEnd:
			ended++
			if ended == n {
				if err := st.finish(); err != nil {
					return err
				}
				if !st.checkpointing() {
					return nil
				}
			}
		case MsgShutdown:
			shut++
			isShut[i] = true
			cases[i].Chan = reflect.Value{}
			if err := complete(); err != nil {
				return err
			}
			if shut == n {
				return st.shutdown()
			}
		}
	}
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
