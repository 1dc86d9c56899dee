package exec

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

// procTestOp is a processing-time window aggregation (count(*), sum(v) by
// k) on clock, with its own wake-ups (as the runtime gives a subtask).
func procTestOp(t *testing.T, mem memory.Allocator, clock Clock, spec planner.WindowSpec) (*procWindowAgg, *wakeups) {
	t.Helper()
	big, ts := catalog.BigInt, catalog.Timestamp.WithNotNull(true)
	s := &planner.WindowAggOp{ID: "w", Keys: []int{0}, KeyNames: []string{"k"}, TimeCol: 1, TimeName: "p", Window: spec, Proctime: true,
		Aggs: []planner.AggCall{{Fn: "count_star", Arg: -1, T: big}, {Fn: "sum", Arg: 2, ArgType: big, T: big}},
		Out: catalog.Schema{{Name: "k", Type: big}, {Name: "window_start", Type: ts}, {Name: "window_end", Type: ts}, {Name: "window_time", Type: ts},
			{Name: "n", Type: big}, {Name: "s", Type: big}}}
	wk := &wakeups{clock: clock, at: make([]int64, 1)}
	ctx := &OpContext{OpID: "w", Parallelism: 1, KeyGroups: KeyGroups{Start: 0, End: 8, MaxParallelism: 8}, Checkpointing: true,
		Mem: mem, BatchSize: 16, Clock: clock, Metrics: &Metrics{}, wakeups: wk}
	op, err := newOperator(s, ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := op.(*procWindowAgg)
	if !ok {
		t.Fatalf("a Proctime WindowAggOp runs as %T", op)
	}
	return p, wk
}

// fireDue calls the operator's OnProcessingTime when its wake-up is due,
// as the runtime does between batches (fireProcessingTime).
func fireDue(t *testing.T, op *procWindowAgg, wk *wakeups, clock Clock, out Collector) bool {
	t.Helper()
	if !wk.due() {
		return false
	}
	wk.at[0], wk.next = 0, 0
	if err := op.OnProcessingTime(clock.Now(), out); err != nil {
		t.Fatal(err)
	}
	return true
}

// TestProcWindowTimersAndRestore: rows are assigned by the clock when they
// arrive (their time column is ignored), a window fires once the clock
// reaches its end (not on event-time watermarks, which are forwarded),
// restored windows whose end passed fire at the first wake-up, and the end
// of input fires the open ones.
func TestProcWindowTimersAndRestore(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	clock := &manualClock{now: time.UnixMilli(1000)}
	tumble := planner.WindowSpec{Kind: planner.Tumble, Size: 10_000}
	op, wk := procTestOp(t, mem, clock, tumble)
	out := &rowsOut{}
	// time column -5: not read
	if err := op.ProcessBatch(0, winTestBatch(mem, [3]int64{1, -5, 1}, [3]int64{2, -5, 5}), out); err != nil {
		t.Fatal(err)
	}
	if wk.next != time.UnixMilli(10_000).UnixNano() {
		t.Fatalf("wake-up at %d, want the window end 10000 ms", wk.next/1e6)
	}
	clock.Advance(8 * time.Second) // 9000
	if err := op.ProcessBatch(0, winTestBatch(mem, [3]int64{1, 50_000, 3}), out); err != nil {
		t.Fatal(err)
	}
	if err := op.ProcessWatermark(60_000, out); err != nil { // event time: forwarded only
		t.Fatal(err)
	}
	if fireDue(t, op, wk, clock, out) || len(out.rows) != 0 || fmt.Sprint(out.wms) != "[60000]" {
		t.Fatalf("before 10000 ms: rows %v, watermarks %v", out.rows, out.wms)
	}
	clock.Advance(time.Second) // 10000: [0, 10000) ends
	if !fireDue(t, op, wk, clock, out) {
		t.Fatal("no wake-up at the window end")
	}
	sort.Strings(out.rows)
	if want := "[1|0|10000|9999|2|4| 2|0|10000|9999|1|5|]"; fmt.Sprint(out.rows) != want {
		t.Fatalf("at 10000 ms: %v, want %s", out.rows, want)
	}
	clock.Advance(2 * time.Second) // 12000
	if err := op.ProcessBatch(0, winTestBatch(mem, [3]int64{3, 0, 7}), out); err != nil {
		t.Fatal(err)
	}
	st := memState{}
	if err := op.Snapshot(1, st); err != nil {
		t.Fatal(err)
	}
	op.NotifyComplete(1)
	op.Close()

	// Restored at 25000 ms: [10000, 20000) ended while the job was down.
	clock2 := &manualClock{now: time.UnixMilli(25_000)}
	op2, wk2 := procTestOp(t, mem, clock2, tumble)
	if err := op2.Restore(st); err != nil {
		t.Fatal(err)
	}
	out2 := &rowsOut{}
	if err := op2.ProcessBatch(0, winTestBatch(mem, [3]int64{3, 0, 1}), out2); err != nil {
		t.Fatal(err)
	}
	if !fireDue(t, op2, wk2, clock2, out2) {
		t.Fatal("the restored window whose end passed did not fire at the first wake-up")
	}
	if want := "[3|10000|20000|19999|1|7|]"; fmt.Sprint(out2.rows) != want {
		t.Fatalf("after the restore: %v, want %s", out2.rows, want)
	}
	if err := op2.ProcessWatermark(MaxWatermark, out2); err != nil { // end of input
		t.Fatal(err)
	}
	if want := "[3|10000|20000|19999|1|7| 3|20000|30000|29999|1|1|]"; fmt.Sprint(out2.rows) != want {
		t.Fatalf("at the end of input: %v, want %s", out2.rows, want)
	}
	if n := op2.ctx.Metrics.LateRecords.Load(); n != 0 {
		t.Errorf("%d late records in processing time", n)
	}
	op2.Close()
}

// TestProcWindowRandomized drives processing-time TUMBLE, HOP, CUMULATE and
// SESSION windows with seeded random batches, clock steps and a
// checkpoint/restore, and checks against an oracle that assigns each row
// to windows by the clock when it arrived: every window is emitted once
// with the oracle's count and sum, at a wake-up no earlier than its end,
// and no window whose end the clock passed is left open after the
// wake-up.
func TestProcWindowRandomized(t *testing.T) {
	specs := []planner.WindowSpec{
		{Kind: planner.Tumble, Size: 1000},
		{Kind: planner.Hop, Size: 3000, Slide: 1000},
		{Kind: planner.Cumulate, Size: 4000, Slide: 1000},
		{Kind: planner.Session, Gap: 700},
	}
	for seed := uint64(1); seed <= 8; seed++ {
		for _, spec := range specs {
			t.Run(fmt.Sprintf("%s/seed%d", spec.Kind, seed), func(t *testing.T) {
				procRandomRun(t, seed, spec)
			})
		}
	}
}

type procArrival struct{ k, t, v int64 }

func procRandomRun(t *testing.T, seed uint64, spec planner.WindowSpec) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(seed, 12))
	clock := &manualClock{now: time.UnixMilli(r.Int64N(5000))}
	op, wk := procTestOp(t, mem, clock, spec)
	out := &rowsOut{}
	var arrivals []procArrival
	emittedAt := map[string]int64{} // window row -> clock at emission
	collect := func(now int64) {
		for _, row := range out.rows {
			if _, dup := emittedAt[row]; dup {
				t.Fatalf("%s emitted twice", row)
			}
			emittedAt[row] = now
		}
		out.rows = out.rows[:0]
	}
	batches := 30 + r.IntN(30)
	crashAt := r.IntN(batches)
	for bi := 0; bi < batches; bi++ {
		// random steps, and steps to just before and onto a second (the
		// slices' ends)
		step := r.Int64N(900)
		switch cur := clock.Now().UnixMilli(); r.IntN(3) {
		case 0:
			step = 999 - cur%1000
		case 1:
			step = 1000 - cur%1000
		}
		clock.Advance(time.Duration(step) * time.Millisecond)
		now := clock.Now().UnixMilli()
		if fireDue(t, op, wk, clock, out) {
			collect(now)
		}
		var rows [][3]int64
		for i := r.IntN(6); i > 0; i-- {
			row := [3]int64{r.Int64N(4), r.Int64N(1 << 40), 1 + r.Int64N(100)}
			rows = append(rows, row)
			arrivals = append(arrivals, procArrival{row[0], now, row[2]})
		}
		if len(rows) > 0 {
			if err := op.ProcessBatch(0, winTestBatch(mem, rows...), out); err != nil {
				t.Fatal(err)
			}
		}
		collect(now)
		if bi == crashAt {
			st := memState{}
			if err := op.Snapshot(1, st); err != nil {
				t.Fatal(err)
			}
			op.Close()
			op, wk = procTestOp(t, mem, clock, spec)
			if err := op.Restore(st); err != nil {
				t.Fatal(err)
			}
		}
	}
	endNow := clock.Now().UnixMilli()
	if err := op.ProcessWatermark(MaxWatermark, out); err != nil {
		t.Fatal(err)
	}
	final := map[string]bool{}
	for _, row := range out.rows {
		final[row] = true
	}
	collect(endNow + 1<<40) // the end of input: any time
	op.Close()

	want := procOracle(spec, arrivals)
	var got []string
	for row, at := range emittedAt {
		got = append(got, row)
		f := strings.Split(row, "|")
		var end int64
		fmt.Sscan(f[2], &end)
		if at < end {
			t.Errorf("%s emitted at %d ms, before its end", row, at)
		}
		if final[row] && end <= endNow {
			t.Errorf("%s ended at %d ms but was left open until the end of input (clock %d)", row, end, endNow)
		}
	}
	sort.Strings(got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("seed %d %s:\n got %v\nwant %v", seed, spec, got, want)
	}
}

// procOracle computes the windows of rows arriving at the given times.
func procOracle(spec planner.WindowSpec, rows []procArrival) []string {
	type agg struct{ n, s int64 }
	res := map[[3]int64]*agg{} // k, start, end
	add := func(k, s, e, v int64) {
		key := [3]int64{k, s, e}
		if res[key] == nil {
			res[key] = &agg{}
		}
		res[key].n++
		res[key].s += v
	}
	switch spec.Kind {
	case planner.Tumble:
		for _, a := range rows {
			s := a.t - a.t%spec.Size
			add(a.k, s, s+spec.Size, a.v)
		}
	case planner.Hop:
		for _, a := range rows {
			for s := a.t - a.t%spec.Slide; s > a.t-spec.Size; s -= spec.Slide {
				add(a.k, s, s+spec.Size, a.v)
			}
		}
	case planner.Cumulate:
		for _, a := range rows {
			s := a.t - a.t%spec.Size
			for e := a.t - a.t%spec.Slide + spec.Slide; e <= s+spec.Size; e += spec.Slide {
				add(a.k, s, e, a.v)
			}
		}
	case planner.Session:
		byKey := map[int64][]procArrival{}
		for _, a := range rows {
			byKey[a.k] = append(byKey[a.k], a) // arrival order is time order
		}
		for k, as := range byKey {
			start, last := as[0].t, as[0].t
			var n, sum int64
			for i, a := range as {
				// a row at last+gap or later: the session fired at its
				// wake-up before the row's batch (fireDue first)
				if i > 0 && a.t-last >= spec.Gap {
					res[[3]int64{k, start, last + spec.Gap}] = &agg{n, sum}
					start, n, sum = a.t, 0, 0
				}
				last = a.t
				n++
				sum += a.v
			}
			res[[3]int64{k, start, last + spec.Gap}] = &agg{n, sum}
		}
	}
	var out []string
	for key, a := range res {
		out = append(out, fmt.Sprintf("%d|%d|%d|%d|%d|%d|", key[0], key[1], key[2], key[2]-1, a.n, a.s))
	}
	sort.Strings(out)
	return out
}
