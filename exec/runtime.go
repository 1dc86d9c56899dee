package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"golang.org/x/sync/errgroup"

	"github.com/streamsql/streamsql/catalog"
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
	for _, t := range plan.Tasks {
		for s := 0; s < t.Parallelism; s++ {
			st := &subtask{task: t, index: s, cfg: &cfg, ctx: gctx}
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
			g.Go(func() error {
				err := st.run()
				if err != nil && !errors.Is(err, context.Canceled) {
					return fmt.Errorf("%s (subtask %d/%d): %w", t.Name, s+1, t.Parallelism, err)
				}
				return err
			})
		}
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
}

func (st *subtask) run() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	if err := st.build(); err != nil {
		st.close()
		return err
	}
	defer st.close()
	if st.task.Source != nil {
		err = st.runSource()
	} else {
		err = st.runInputs()
	}
	if err != nil {
		return err
	}
	// End of input: finish the chain front to back, then the output.
	for i, op := range st.ops {
		var next Collector = st.out
		if i+1 < len(st.ops) {
			next = &link{op: st.ops[i+1], next: nextOf(st, i+1)}
		}
		if err := op.Finish(next); err != nil {
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
	return nil
}

func (st *subtask) close() {
	for _, op := range st.ops {
		op.Close()
	}
	if st.out != nil {
		st.out.close()
	}
}

func (st *subtask) runSource() error {
	t := st.task
	if t.Source.Values {
		rec := array.NewRecord(arrow.NewSchema(nil, nil), nil, 1)
		st.cfg.Metrics.RecordsIn.Add(1)
		return st.head.Collect(Batch{Rec: rec})
	}
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
	defer src.Close()
	return src.Run(st.ctx, func(rec arrow.Record) error {
		if rec == nil { // idle heartbeat
			if err := st.ctx.Err(); err != nil {
				return err
			}
			return st.tick()
		}
		if err := st.ctx.Err(); err != nil {
			rec.Release()
			return err
		}
		st.cfg.Metrics.RecordsIn.Add(rec.NumRows())
		return st.head.Collect(Batch{Rec: rec})
	})
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

func (st *subtask) runInputs() error {
	n := len(st.inputs)
	ended := 0
	tickC, stop := st.ticks()
	defer stop()
	if n == 1 {
		ch := st.inputs[0]
		for {
			var m Message
			select {
			case m = <-ch:
			case <-tickC:
				if err := st.tick(); err != nil {
					return err
				}
				continue
			case <-st.ctx.Done():
				return st.ctx.Err()
			}
			if done, err := st.handle(m); err != nil || done {
				return err
			}
		}
	}
	cases := make([]reflect.SelectCase, n+2)
	for i, ch := range st.inputs {
		cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)}
	}
	cases[n] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(st.ctx.Done())}
	cases[n+1] = reflect.SelectCase{Dir: reflect.SelectRecv}
	if tickC != nil {
		cases[n+1].Chan = reflect.ValueOf(tickC)
	}
	for ended < n {
		i, v, _ := reflect.Select(cases)
		if i == n {
			return st.ctx.Err()
		}
		if i == n+1 {
			if err := st.tick(); err != nil {
				return err
			}
			continue
		}
		m := v.Interface().(Message)
		if m.Kind == MsgEnd {
			ended++
			cases[i].Chan = reflect.Value{} // never selected again
			continue
		}
		if _, err := st.handle(m); err != nil {
			return err
		}
	}
	return nil
}

// handle processes one message; done reports end of input (single input).
func (st *subtask) handle(m Message) (done bool, err error) {
	switch m.Kind {
	case MsgData:
		return false, st.head.Collect(m.Batch)
	case MsgEnd:
		return true, nil
	}
	return false, nil
}
