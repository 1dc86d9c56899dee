package exec

import (
	"context"
	"errors"
	"fmt"
	"github.com/streamsql/streamsql/internal/memtest"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

// genSource emits batches of (k BIGINT, v BIGINT) rows: row n of the whole
// table has k = n % keys and v = n; subtask i of p emits rows i, i+p, ...
// It is unbounded when total < 0.
type genSource struct {
	sc       *SourceContext
	total    int64
	keys     int64
	emitted  *atomic.Int64
	n        int64 // next row number
	restored bool
}

// SnapshotState and RestoreState make genSource a CheckpointedSource: its
// state is the next row number.
func (g *genSource) SnapshotState() ([]byte, error) { return []byte(fmt.Sprint(g.n)), nil }
func (g *genSource) RestoreState(b []byte) error {
	g.restored = true
	_, err := fmt.Sscan(string(b), &g.n)
	return err
}

func (g *genSource) Run(ctx context.Context, emit func(arrow.Record) error) error {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	if !g.restored {
		g.n = int64(g.sc.Subtask)
	}
	p := int64(g.sc.Parallelism)
	for g.total < 0 || g.n < g.total {
		if err := ctx.Err(); err != nil {
			return err
		}
		kb := array.NewInt64Builder(g.sc.Mem)
		vb := array.NewInt64Builder(g.sc.Mem)
		for i := 0; i < g.sc.BatchSize && (g.total < 0 || g.n < g.total); i++ {
			kb.Append(g.n % g.keys)
			vb.Append(g.n)
			g.n += p
		}
		k, v := kb.NewArray(), vb.NewArray()
		kb.Release()
		vb.Release()
		rec := array.NewRecord(schema, []arrow.Array{k, v}, int64(k.Len()))
		k.Release()
		v.Release()
		if g.emitted != nil {
			g.emitted.Add(1)
		}
		if err := emit(rec); err != nil {
			return err
		}
	}
	return nil
}

func (g *genSource) Close() error { return nil }

var kvSchema = catalog.Schema{{Name: "k", Type: catalog.BigInt}, {Name: "v", Type: catalog.BigInt}}

// aggPlan is: gen source -> HASH(k) -> GroupAggregate(k, COUNT(*), SUM(v)) -> client.
func aggPlan(par int) *planner.Physical {
	src := &planner.Task{Name: "src", Parallelism: par, Source: &planner.SourceSpec{Table: &catalog.Table{Name: "gen"}, Schema: kvSchema}, OutSchema: kvSchema}
	out := catalog.Schema{{Name: "k", Type: catalog.BigInt}, {Name: "c", Type: catalog.BigInt}, {Name: "s", Type: catalog.BigInt}}
	agg := &planner.AggOp{Keys: []int{0}, KeyNames: []string{"k"}, Out: out, Aggs: []planner.AggCall{
		{Fn: "count_star", Arg: -1, T: catalog.BigInt},
		{Fn: "sum", Arg: 1, ArgType: catalog.BigInt, T: catalog.BigInt},
	}}
	at := &planner.Task{Name: "agg", Parallelism: par, Ops: []planner.Op{agg}, OutSchema: out, OutMode: planner.Retract}
	sink := &planner.Task{Name: "sink", Parallelism: 1, Sink: &planner.SinkSpec{Schema: out, Mode: planner.Retract}}
	e1 := &planner.Edge{From: src, To: at, Kind: planner.Hash, Keys: []int{0}}
	e2 := &planner.Edge{From: at, To: sink, Kind: planner.Global, Mode: planner.Retract}
	src.Outputs, at.Inputs, at.Outputs, sink.Inputs = []*planner.Edge{e1}, []*planner.Edge{e1}, []*planner.Edge{e2}, []*planner.Edge{e2}
	return &planner.Physical{Tasks: []*planner.Task{src, at, sink}, Edges: []*planner.Edge{e1, e2}}
}

// fold applies a changelog to a table keyed by the row's text.
type folded map[string]int

func (f folded) apply(b Batch) {
	for i := 0; i < b.Rows(); i++ {
		row := ""
		for c := 0; c < int(b.Rec.NumCols()); c++ {
			row += fmt.Sprintf("%v|", b.Rec.Column(c).(*array.Int64).Value(i))
		}
		if b.Op(i).IsAdd() {
			f[row]++
		} else {
			f[row]--
			if f[row] == 0 {
				delete(f, row)
			}
		}
	}
}

func (f folded) sorted() []string {
	var out []string
	for k, n := range f {
		for i := 0; i < n; i++ {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func TestGroupAggregateAcrossParallelismAndBatchSizes(t *testing.T) {
	const total, keys = 5000, 37
	want := expectedCounts(total, keys)
	for _, par := range []int{1, 2, 4} {
		for _, bs := range []int{1, 7, 1024} {
			t.Run(fmt.Sprintf("p%d/b%d", par, bs), func(t *testing.T) {
				mem := memtest.NewChecked()
				defer mem.AssertSize(t, 0)
				got := folded{}
				cfg := JobConfig{Mem: mem, BatchSize: bs, Collect: func(b Batch) error { got.apply(b); return nil },
					NewSource: func(tb *catalog.Table, sc *SourceContext) (Source, error) {
						return &genSource{sc: sc, total: total, keys: keys}, nil
					}}
				if err := RunJob(context.Background(), aggPlan(par), cfg); err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got.sorted()) != fmt.Sprint(want.sorted()) {
					t.Fatalf("final table differs:\n got %v\nwant %v", got.sorted(), want.sorted())
				}
			})
		}
	}
}

func TestCancelReleasesEverythingAndLeaksNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	mem := memtest.NewChecked()
	ctx, cancel := context.WithCancel(context.Background())
	var seen atomic.Int64
	cfg := JobConfig{Mem: mem, BatchSize: 64, Collect: func(b Batch) error {
		if seen.Add(1) == 50 {
			cancel() // cancel from inside the running job
		}
		return nil
	}, NewSource: func(tb *catalog.Table, sc *SourceContext) (Source, error) {
		return &genSource{sc: sc, total: -1, keys: 1000}, nil
	}}
	err := RunJob(ctx, aggPlan(4), cfg)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if seen.Load() < 50 {
		t.Fatalf("job ended before the cancel fired: %d batches", seen.Load())
	}
	mem.AssertSize(t, 0)
	waitGoroutines(t, before)
}

func TestFailureStopsJobAndReleases(t *testing.T) {
	before := runtime.NumGoroutine()
	mem := memtest.NewChecked()
	boom := errors.New("boom")
	var calls atomic.Int64
	cfg := JobConfig{Mem: mem, BatchSize: 16, Collect: func(b Batch) error {
		if calls.Add(1) == 10 {
			return boom
		}
		return nil
	}, NewSource: func(tb *catalog.Table, sc *SourceContext) (Source, error) {
		return &genSource{sc: sc, total: -1, keys: 100}, nil
	}}
	err := RunJob(context.Background(), aggPlan(3), cfg)
	if !errors.Is(err, boom) {
		t.Fatalf("want boom, got %v", err)
	}
	if calls.Load() != 10 {
		t.Fatalf("collector called %d times after failing at call 10", calls.Load())
	}
	mem.AssertSize(t, 0)
	waitGoroutines(t, before)
}

// TestBackpressureBoundsMemory runs an unbounded fast source into a client
// that consumes slowly (it waits for the test); memory in flight must stay
// bounded by the channel capacities, not grow with the source's speed.
func TestBackpressureBoundsMemory(t *testing.T) {
	mem := memtest.NewChecked()
	ctx, cancel := context.WithCancel(context.Background())
	var emitted atomic.Int64
	var maxInUse int
	var mu sync.Mutex
	consumed := 0
	cfg := JobConfig{Mem: mem, BatchSize: 256, ChannelCapacity: 2, Collect: func(b Batch) error {
		mu.Lock()
		defer mu.Unlock()
		if n := mem.CurrentAlloc(); n > maxInUse {
			maxInUse = n
		}
		consumed++
		if consumed == 300 {
			cancel()
		}
		return nil
	}, NewSource: func(tb *catalog.Table, sc *SourceContext) (Source, error) {
		return &genSource{sc: sc, total: -1, keys: 1 << 40, emitted: &emitted}, nil
	}}
	RunJob(ctx, aggPlan(2), cfg)
	// Each batch is ~4 KiB of source data; with 2 subtasks, capacity-2
	// channels and a few batches held by operators, far less than 1 MiB may
	// be in flight. Without backpressure the source would run ahead freely.
	if maxInUse > 1<<20 {
		t.Fatalf("%d bytes in flight: backpressure does not bound memory", maxInUse)
	}
	if emitted.Load() == 0 {
		t.Fatal("source emitted nothing")
	}
	mem.AssertSize(t, 0)
}

// waitGoroutines waits until the goroutine count is back to n, yielding the
// processor instead of sleeping.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < 1_000_000; i++ {
		if runtime.NumGoroutine() <= n {
			return
		}
		runtime.Gosched()
	}
	buf := make([]byte, 1<<16)
	t.Fatalf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
}

// idleSource emits nothing but heartbeats until cancelled.
type idleSource struct{ sc *SourceContext }

func (s *idleSource) Run(ctx context.Context, emit func(arrow.Record) error) error {
	t := time.NewTicker(s.sc.Linger)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if err := emit(nil); err != nil {
				return err
			}
		}
	}
}
func (s *idleSource) Close() error { return nil }

type tickSink struct{ ticks chan struct{} }

func (s *tickSink) Write(Batch) error { return nil }
func (s *tickSink) Finish() error     { return nil }
func (s *tickSink) Close() error      { return nil }
func (s *tickSink) Tick(time.Time) error {
	select {
	case s.ticks <- struct{}{}:
	default:
	}
	return nil
}

// TestIdleSinksTick checks that a sink implementing Ticker gets processing
// time calls while no data flows, both when chained to its source and
// behind an exchange.
func TestIdleSinksTick(t *testing.T) {
	for _, chained := range []bool{true, false} {
		t.Run(fmt.Sprintf("chained=%v", chained), func(t *testing.T) {
			sinkT := &catalog.Table{Name: "s"}
			src := &planner.Task{Name: "src", Parallelism: 1, Source: &planner.SourceSpec{Table: &catalog.Table{Name: "idle"}, Schema: kvSchema}, OutSchema: kvSchema}
			plan := &planner.Physical{Tasks: []*planner.Task{src}}
			if chained {
				src.Sink = &planner.SinkSpec{Table: sinkT, Schema: kvSchema}
			} else {
				snk := &planner.Task{Name: "sink", Parallelism: 2, Sink: &planner.SinkSpec{Table: sinkT, Schema: kvSchema}}
				e := &planner.Edge{From: src, To: snk, Kind: planner.Rebalance}
				src.Outputs, snk.Inputs = []*planner.Edge{e}, []*planner.Edge{e}
				plan.Tasks, plan.Edges = append(plan.Tasks, snk), []*planner.Edge{e}
			}
			ticks := make(chan struct{}, 1)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() {
				done <- RunJob(ctx, plan, JobConfig{Linger: time.Millisecond,
					NewSource: func(_ *catalog.Table, sc *SourceContext) (Source, error) { return &idleSource{sc: sc}, nil },
					NewSink:   func(*catalog.Table, *SinkContext) (Sink, error) { return &tickSink{ticks: ticks}, nil },
				})
			}()
			<-ticks // the condition: a tick arrived with no data flowing
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
		})
	}
}

// TestExchanges runs a source at parallelism 2 into a collecting sink task
// through each exchange kind and checks every row arrives the expected
// number of times (broadcast: once per consumer; others: once).
func TestExchanges(t *testing.T) {
	const total = 3000
	cases := []struct {
		kind    planner.ExchangeKind
		to      int
		copies  int
		perSink bool // rows of a source subtask must all reach the same sink subtask
	}{
		{planner.Forward, 2, 1, true},
		{planner.Rebalance, 3, 1, false},
		{planner.Broadcast, 3, 3, false},
		{planner.Global, 1, 1, true},
		{planner.Hash, 3, 1, false},
	}
	for _, c := range cases {
		t.Run(c.kind.String(), func(t *testing.T) {
			mem := memtest.NewChecked()
			src := &planner.Task{Name: "src", Parallelism: 2, Source: &planner.SourceSpec{Table: &catalog.Table{Name: "gen"}, Schema: kvSchema}, OutSchema: kvSchema}
			snk := &planner.Task{Name: "sink", Parallelism: c.to, Sink: &planner.SinkSpec{Table: &catalog.Table{Name: "s"}, Schema: kvSchema}}
			e := &planner.Edge{From: src, To: snk, Kind: c.kind, Keys: []int{0}}
			src.Outputs, snk.Inputs = []*planner.Edge{e}, []*planner.Edge{e}
			plan := &planner.Physical{Tasks: []*planner.Task{src, snk}, Edges: []*planner.Edge{e}}
			var mu sync.Mutex
			seen := map[int64]int{}
			keyAt := map[int64]int{} // key -> sink subtask (hash: one owner per key)
			cfg := JobConfig{Mem: mem, BatchSize: 100,
				NewSource: func(_ *catalog.Table, sc *SourceContext) (Source, error) {
					return &genSource{sc: sc, total: total, keys: 50}, nil
				},
				NewSink: func(_ *catalog.Table, sc *SinkContext) (Sink, error) {
					return &funcSink{write: func(b Batch) {
						mu.Lock()
						defer mu.Unlock()
						ks := b.Rec.Column(0).(*array.Int64)
						vs := b.Rec.Column(1).(*array.Int64)
						for i := 0; i < b.Rows(); i++ {
							seen[vs.Value(i)]++
							if c.kind == planner.Hash {
								if prev, ok := keyAt[ks.Value(i)]; ok && prev != sc.Subtask {
									t.Errorf("key %d reached subtasks %d and %d", ks.Value(i), prev, sc.Subtask)
								}
								keyAt[ks.Value(i)] = sc.Subtask
							}
							if c.kind == planner.Forward && int(vs.Value(i))%2 != sc.Subtask {
								t.Errorf("forward: row %d of source subtask %d reached sink subtask %d", vs.Value(i), vs.Value(i)%2, sc.Subtask)
							}
						}
					}}, nil
				}}
			if err := RunJob(context.Background(), plan, cfg); err != nil {
				t.Fatal(err)
			}
			if len(seen) != total {
				t.Fatalf("%d distinct rows arrived, want %d", len(seen), total)
			}
			for v, n := range seen {
				if n != c.copies {
					t.Fatalf("row %d arrived %d times, want %d", v, n, c.copies)
				}
			}
			mem.AssertSize(t, 0)
		})
	}
}

type funcSink struct{ write func(Batch) }

func (s *funcSink) Write(b Batch) error { s.write(b); return nil }
func (s *funcSink) Finish() error       { return nil }
func (s *funcSink) Close() error        { return nil }

// expectedCounts is the final table of aggPlan over total rows of genSource:
// per key k, COUNT(*) and SUM(v) of the rows n with n % keys == k.
func expectedCounts(total, keys int64) folded {
	want := folded{}
	for k := int64(0); k < keys; k++ {
		var c, s int64
		for n := k; n < total; n += keys {
			c++
			s += n
		}
		want[fmt.Sprintf("%d|%d|%d|", k, c, s)] = 1
	}
	return want
}
