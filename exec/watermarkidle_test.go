package exec

import (
	"context"
	"fmt"
	"github.com/streamsql/streamsql/internal/memtest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

// scriptedSource emits the (k, ts) batches its test sends on cmds and
// heartbeats (emit(nil)) every Linger otherwise, signalling hb after each
// heartbeat returned; it ends when cmds is closed.
type scriptedSource struct {
	sc   *SourceContext
	cmds chan [][2]int64
	hb   chan struct{}
}

var idleTestSchema = catalog.Schema{{Name: "k", Type: catalog.BigInt}, {Name: "ts", Type: catalog.Timestamp}}

func (s *scriptedSource) Run(ctx context.Context, emit func(arrow.Record) error) error {
	tick := time.NewTicker(s.sc.Linger)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case rows, ok := <-s.cmds:
			if !ok {
				return nil
			}
			b := array.NewRecordBuilder(s.sc.Mem, idleTestSchema.Arrow())
			for _, r := range rows {
				b.Field(0).(*array.Int64Builder).Append(r[0])
				b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(r[1]))
			}
			rec := b.NewRecord()
			b.Release()
			if err := emit(rec); err != nil {
				return err
			}
		case <-tick.C:
			if err := emit(nil); err != nil {
				return err
			}
			select {
			case s.hb <- struct{}{}:
			default:
			}
		}
	}
}
func (s *scriptedSource) Close() error { return nil }

// seeKey signals seen when a batch with key k reaches the operator.
type seeKey struct {
	Operator
	k    int64
	seen chan struct{}
}

func (o *seeKey) ProcessBatch(input int, b Batch, out Collector) error {
	for _, v := range b.Rec.Column(0).(*array.Int64).Int64Values() {
		if v == o.k {
			o.seen <- struct{}{}
			break
		}
	}
	return o.Operator.ProcessBatch(input, b, out)
}

// idlePlan: a source at parallelism 2 with a watermark assigner (ts, no
// delay, the idle timeout) -> HASH(k) -> TUMBLE(10 s) COUNT(*) by k -> sink.
func idlePlan(timeout time.Duration) *planner.Physical {
	big, ts := catalog.BigInt, catalog.Timestamp.WithNotNull(true)
	src := &planner.Task{Name: "src", Parallelism: 2, Source: &planner.SourceSpec{Table: &catalog.Table{Name: "s"}, Schema: idleTestSchema},
		Ops:       []planner.Op{&planner.WatermarkAssignerOp{ID: "wm", TimeCol: 1, TimeName: "ts", IdleTimeout: timeout}},
		OutSchema: idleTestSchema}
	out := catalog.Schema{{Name: "k", Type: big}, {Name: "window_start", Type: ts}, {Name: "window_end", Type: ts}, {Name: "window_time", Type: ts}, {Name: "n", Type: big}}
	win := &planner.WindowAggOp{ID: "win", Keys: []int{0}, KeyNames: []string{"k"}, TimeCol: 1, TimeName: "ts",
		Window: planner.WindowSpec{Kind: planner.Tumble, Size: 10_000},
		Aggs:   []planner.AggCall{{Fn: "count_star", Arg: -1, T: big}}, Out: out}
	wt := &planner.Task{Name: "win", Parallelism: 1, Ops: []planner.Op{win}, OutSchema: out,
		Sink: &planner.SinkSpec{Table: &catalog.Table{Name: "out"}, Schema: out}}
	e := &planner.Edge{From: src, To: wt, Kind: planner.Hash, Keys: []int{0}}
	src.Outputs, wt.Inputs = []*planner.Edge{e}, []*planner.Edge{e}
	return &planner.Physical{Tasks: []*planner.Task{src, wt}, Edges: []*planner.Edge{e}}
}

// TestSourceIdleTimeout: of two source subtasks one stays silent. With
// table.exec.source.idle-timeout = 5 s it is marked idle once the job's
// (manual) clock passed 5 s without a row from it, and the windows fire on
// the other subtask's watermark; its later rows for a fired window are
// late. Without the timeout the silent subtask holds the windows back
// however far the clock moves: its later row still lands in the first
// window. No sleeps: the test waits on heartbeats and on the sink.
func TestSourceIdleTimeout(t *testing.T) {
	for _, timeout := range []time.Duration{5 * time.Second, 0} {
		t.Run(fmt.Sprintf("timeout=%v", timeout), func(t *testing.T) {
			mem := memtest.NewChecked()
			defer mem.AssertSize(t, 0)
			clock := &manualClock{now: time.UnixMilli(1_700_000_000_000)}
			srcs := [2]*scriptedSource{}
			for i := range srcs {
				srcs[i] = &scriptedSource{cmds: make(chan [][2]int64), hb: make(chan struct{}, 1)}
			}
			var mu sync.Mutex
			var rows []string
			arrived := make(chan struct{}, 64)
			m := &Metrics{}
			seen3 := make(chan struct{}, 1)
			cfg := JobConfig{Mem: mem, Clock: clock, Linger: time.Millisecond, Metrics: m,
				WrapOperator: func(task string, _ int, op Operator) Operator {
					if task != "win" {
						return op
					}
					return &seeKey{Operator: op, k: 3, seen: seen3}
				},
				NewSource: func(_ *catalog.Table, sc *SourceContext) (Source, error) {
					srcs[sc.Subtask].sc = sc
					return srcs[sc.Subtask], nil
				},
				NewSink: func(*catalog.Table, *SinkContext) (Sink, error) {
					return &funcSink{write: func(b Batch) {
						for i := 0; i < b.Rows(); i++ {
							mu.Lock()
							rows = append(rows, fmt.Sprintf("%d|%d|%d|%d", b.Rec.Column(0).(*array.Int64).Value(i),
								b.Rec.Column(1).(*array.Timestamp).Value(i), b.Rec.Column(2).(*array.Timestamp).Value(i),
								b.Rec.Column(4).(*array.Int64).Value(i)))
							mu.Unlock()
							arrived <- struct{}{}
						}
					}}, nil
				}}
			done := make(chan error, 1)
			go func() { done <- RunJob(context.Background(), idlePlan(timeout), cfg) }()
			guard := func() <-chan time.Time { return time.After(20 * time.Second) } // against a hang only
			heartbeats := func(i int) {
				t.Helper()
				for n := 0; n < 2; n++ { // the second began after the caller's change
					select {
					case <-srcs[i].hb:
					case err := <-done:
						t.Fatalf("job ended: %v", err)
					case <-guard():
						t.Fatalf("no heartbeat of source %d", i)
					}
				}
			}
			send := func(i int, r ...[2]int64) {
				t.Helper()
				select {
				case srcs[i].cmds <- r:
				case err := <-done:
					t.Fatalf("job ended: %v", err)
				}
			}
			send(0, [2]int64{1, 1000}, [2]int64{2, 5000}, [2]int64{1, 15000}, [2]int64{1, 25000}) // watermark 24999
			heartbeats(0)
			clock.Advance(3 * time.Second)
			send(0, [2]int64{1, 26000}) // subtask 0 active at +3 s
			heartbeats(0)
			clock.Advance(3 * time.Second) // +6 s: subtask 1 silent for 6 s, subtask 0 for 3 s
			heartbeats(1)
			heartbeats(0)
			if timeout > 0 {
				for n := 0; n < 3; n++ { // [0, 10 s) of k 1 and 2, [10 s, 20 s) of k 1
					select {
					case <-arrived:
					case <-guard():
						mu.Lock()
						t.Fatalf("the windows did not fire after the idle timeout: %v", rows)
					}
				}
			} else {
				clock.Advance(time.Hour)
				heartbeats(1)
				heartbeats(0)
			}
			send(1, [2]int64{3, 2000}, [2]int64{3, 27000}) // subtask 1 is active again
			select {                                       // its rows reached the window before the end of input
			case <-seen3:
			case <-guard():
				t.Fatal("the rows of subtask 1 did not reach the window")
			}
			close(srcs[0].cmds)
			close(srcs[1].cmds)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			sort.Strings(rows)
			want := []string{"1|0|10000|1", "1|10000|20000|1", "1|20000|30000|2", "2|0|10000|1", "3|20000|30000|1"}
			late, marks := int64(1), "> 0"
			if timeout == 0 {
				want = append(want[:4], "3|0|10000|1", "3|20000|30000|1")
				late, marks = 0, "0"
			}
			if fmt.Sprint(rows) != fmt.Sprint(want) {
				t.Errorf("windows %v, want %v", rows, want)
			}
			if n := m.LateRecords.Load(); n != late {
				t.Errorf("%d late rows, want %d", n, late)
			}
			if n := m.IdleMarks.Load(); (n > 0) != (timeout > 0) {
				t.Errorf("%d idle marks, want %s", n, marks)
			}
		})
	}
}
