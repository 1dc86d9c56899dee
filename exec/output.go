package exec

import (
	"fmt"
	"slices"
	"sync"

	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/planner"
)

// output is the end of a subtask's chain: an exchange to the next task, a
// sink, or the client.
type output interface {
	Collector
	// end signals end of data downstream (flushes a sink, and commits it
	// when checkpointing is off).
	end() error
	// forwardBarrier sends a checkpoint barrier downstream (exchanges).
	forwardBarrier(b Barrier) error
	// cancel sends a cancel marker for checkpoint id downstream (exchanges).
	cancel(id int64) error
	// idle tells downstream that this producer has no data for now.
	idle() error
	// shutdown tells downstream that nothing more will come (exchanges).
	shutdown() error
	close()
}

// exchangeOutput routes batches to the subtasks of the next task.
type exchangeOutput struct {
	st     *subtask
	edge   *planner.Edge
	chans  []*outChan // indexed by target subtask; nil where not routed
	rr     int
	hashes []uint64
	route  []int32 // key group -> target (Hash)
	idx    [][]int32
}

func newExchangeOutput(st *subtask, e *planner.Edge, chans []*outChan) *exchangeOutput {
	return &exchangeOutput{st: st, edge: e, chans: chans, rr: st.index}
}

// fanOut is the output of a task with several output edges (a source
// shared by the statements of a statement set): every batch and every
// signal goes to each edge, in the same order on all of them, so barriers
// stay between the same batches everywhere. Each edge gets its own
// reference of a batch's record (records are immutable once sent).
type fanOut struct{ outs []*exchangeOutput }

func (f *fanOut) Collect(b Batch) error {
	if b.Rows() == 0 {
		b.Rec.Release()
		return nil
	}
	for i := 1; i < len(f.outs); i++ {
		b.Rec.Retain()
	}
	for i, o := range f.outs {
		if err := o.Collect(b); err != nil {
			for j := i + 1; j < len(f.outs); j++ { // references of edges not reached
				b.Rec.Release()
			}
			return err
		}
	}
	return nil
}

func (f *fanOut) each(fn func(o *exchangeOutput) error) error {
	for _, o := range f.outs {
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

func (f *fanOut) EmitWatermark(wm int64) error {
	return f.each(func(o *exchangeOutput) error { return o.EmitWatermark(wm) })
}
func (f *fanOut) forwardBarrier(b Barrier) error {
	return f.each(func(o *exchangeOutput) error { return o.forwardBarrier(b) })
}
func (f *fanOut) cancel(id int64) error {
	return f.each(func(o *exchangeOutput) error { return o.cancel(id) })
}
func (f *fanOut) idle() error     { return f.each((*exchangeOutput).idle) }
func (f *fanOut) end() error      { return f.each((*exchangeOutput).end) }
func (f *fanOut) shutdown() error { return f.each((*exchangeOutput).shutdown) }
func (f *fanOut) close() {
	for _, o := range f.outs {
		o.close()
	}
}

func (o *exchangeOutput) send(target int, m Message) error {
	return o.chans[target].send(o.st.ctx, m)
}

// signal sends a signal message on every output channel, in order after
// the batches sent before it.
func (o *exchangeOutput) signal(m Message) error {
	for t, ch := range o.chans {
		if ch == nil {
			continue
		}
		if err := o.send(t, m); err != nil {
			return err
		}
	}
	return nil
}

func (o *exchangeOutput) EmitWatermark(wm int64) error {
	return o.signal(Message{Kind: MsgWatermark, Watermark: wm})
}
func (o *exchangeOutput) forwardBarrier(b Barrier) error {
	return o.signal(Message{Kind: MsgBarrier, Barrier: b})
}
func (o *exchangeOutput) cancel(id int64) error {
	return o.signal(Message{Kind: MsgCancel, Barrier: Barrier{ID: id}})
}
func (o *exchangeOutput) idle() error     { return o.signal(Message{Kind: MsgIdle}) }
func (o *exchangeOutput) end() error      { return o.signal(Message{Kind: MsgEnd}) }
func (o *exchangeOutput) shutdown() error { return o.signal(Message{Kind: MsgShutdown}) }

func (o *exchangeOutput) Collect(b Batch) error {
	if b.Rows() == 0 {
		b.Rec.Release()
		return nil
	}
	switch o.edge.Kind {
	case planner.Forward:
		return o.send(o.st.index, Message{Kind: MsgData, Batch: b})
	case planner.Global:
		return o.send(0, Message{Kind: MsgData, Batch: b})
	case planner.Rebalance:
		o.rr = (o.rr + 1) % len(o.chans)
		return o.send(o.rr, Message{Kind: MsgData, Batch: b})
	case planner.Broadcast:
		n := len(o.chans)
		for i := 1; i < n; i++ {
			b.Rec.Retain()
		}
		for i := 0; i < n; i++ {
			if err := o.send(i, Message{Kind: MsgData, Batch: b}); err != nil {
				for j := i + 1; j < n; j++ { // references of targets not reached
					b.Rec.Release()
				}
				return err
			}
		}
		return nil
	case planner.Hash:
		return o.hashRoute(b)
	}
	b.Rec.Release()
	return fmt.Errorf("unknown exchange %v", o.edge.Kind)
}

func (o *exchangeOutput) hashRoute(b Batch) error {
	n := b.Rows()
	p := len(o.chans)
	if p == 1 {
		return o.send(0, Message{Kind: MsgData, Batch: b})
	}
	o.hashes = HashKeys(b.Rec, o.edge.Keys, o.hashes[:0])
	if len(o.route) == 0 {
		// the target of each key group (as KeyGroupRange assigns them)
		maxP := o.st.cfg.MaxParallelism
		o.route = make([]int32, maxP)
		for kg := range o.route {
			o.route[kg] = int32(uint64(kg) * uint64(p) / uint64(maxP))
		}
	}
	if len(o.idx) != p {
		o.idx = make([][]int32, p)
	}
	for t := range o.idx {
		o.idx[t] = o.idx[t][:0]
	}
	route, maxP := o.route, len(o.route)
	for i, h := range o.hashes {
		t := route[keyGroup(h, maxP)]
		o.idx[t] = append(o.idx[t], int32(i))
	}
	// The receivers get the hashes too (Batch.Hashes): a keyed operator
	// there hashes the same columns. Each part has its own (the receiver
	// may keep them while the next batch is routed).
	for t, idx := range o.idx {
		if len(idx) == n { // every row to one target: the batch as it is
			b.Hashes, b.HashedBy = slices.Clone(o.hashes), o.edge.Keys
			return o.send(t, Message{Kind: MsgData, Batch: b})
		}
	}
	var err error
	for t, idx := range o.idx {
		if len(idx) == 0 || err != nil {
			continue
		}
		part := Batch{Rec: expr.TakeRecord(b.Rec, idx, o.st.cfg.Mem), Hashes: make([]uint64, len(idx)), HashedBy: o.edge.Keys}
		for k, i := range idx {
			part.Hashes[k] = o.hashes[i]
		}
		if b.Ops != nil {
			part.Ops = make([]RowKind, len(idx))
			for k, i := range idx {
				part.Ops[k] = b.Ops[i]
			}
		}
		err = o.send(t, Message{Kind: MsgData, Batch: part})
	}
	b.Rec.Release()
	return err
}

func (o *exchangeOutput) close() {}

// sinkOutput writes to a sink connector or to the client.
type sinkOutput struct {
	st      *subtask
	sink    Sink // nil for the client
	collect func(Batch) error
	closed  bool
}

func newSinkOutput(st *subtask) (output, error) {
	spec := st.task.Sink
	o := &sinkOutput{st: st}
	if spec.Table == nil {
		if st.cfg.Collect == nil {
			return nil, fmt.Errorf("no client to collect the results")
		}
		o.collect = st.cfg.Collect
		return o, nil
	}
	sc := &SinkContext{
		Ctx:           st.ctx,
		JobID:         st.cfg.JobID,
		Subtask:       st.index,
		Parallelism:   st.task.Parallelism,
		Mem:           st.cfg.Mem,
		Table:         spec.Table,
		Schema:        spec.Schema,
		Updating:      spec.Mode == planner.Retract,
		Stdout:        st.cfg.Stdout,
		Checkpointing: st.checkpointing(),
		Clock:         st.cfg.Clock,
		Shared: func(key string, mk func() any) any {
			return st.cfg.shared.get(st.task.Name+"\x00"+key, mk)
		},
	}
	s, err := st.cfg.NewSink(spec.Table, sc)
	if err != nil {
		return nil, err
	}
	o.sink = s
	return o, nil
}

func (o *sinkOutput) Collect(b Batch) error {
	defer b.Rec.Release()
	o.st.cfg.Metrics.RecordsOut.Add(int64(b.Rows()))
	if o.sink == nil {
		return o.collect(b)
	}
	return o.sink.Write(b)
}

func (o *sinkOutput) end() error {
	if o.sink == nil {
		return nil
	}
	return o.sink.Finish()
}

// twoPhase reports whether the sink commits with checkpoints.
func (o *sinkOutput) twoPhase() bool {
	_, ok := o.sink.(TwoPhaseSink)
	return ok && o.sink != nil
}

// Sinks end the stream: signals stop here (the subtask takes the sink's
// pre-commit into its snapshot).
func (o *sinkOutput) EmitWatermark(wm int64) error {
	if ws, ok := o.sink.(WatermarkSink); ok {
		return ws.OnWatermark(wm)
	}
	return nil
}
func (o *sinkOutput) forwardBarrier(Barrier) error { return nil }
func (o *sinkOutput) cancel(int64) error           { return nil }
func (o *sinkOutput) idle() error                  { return nil }
func (o *sinkOutput) shutdown() error              { return nil }

func (o *sinkOutput) commit(id int64) error { return o.sink.(TwoPhaseSink).Commit(id) }

func (o *sinkOutput) restore(state []byte) error {
	return o.sink.(TwoPhaseSink).RestoreState(state)
}

func (o *sinkOutput) close() {
	if o.closed {
		return
	}
	o.closed = true
	if o.sink != nil {
		o.sink.Close()
	}
}

// sharedValues holds the values the subtasks of a task share in one job
// attempt (SinkContext.Shared).
type sharedValues struct {
	mu sync.Mutex
	m  map[string]any
}

func (s *sharedValues) get(key string, mk func() any) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.m[key]; ok {
		return v
	}
	if s.m == nil {
		s.m = map[string]any{}
	}
	v := mk()
	s.m[key] = v
	return v
}
