package exec

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

// rankTestRow is (k, ts, v) of a row in the 10 s tumbling window of ts.
type rankTestRow [3]int64

var rankTestSchema = catalog.Schema{{Name: "k", Type: catalog.BigInt}, {Name: "ts", Type: catalog.Timestamp}, {Name: "v", Type: catalog.BigInt},
	{Name: "window_start", Type: catalog.Timestamp.WithNotNull(true)}, {Name: "window_end", Type: catalog.Timestamp.WithNotNull(true)}}

func rankTestBatch(mem memory.Allocator, rows ...rankTestRow) Batch {
	b := array.NewRecordBuilder(mem, rankTestSchema.Arrow())
	defer b.Release()
	for _, r := range rows {
		ws := r[1] / 10_000 * 10_000
		b.Field(0).(*array.Int64Builder).Append(r[0])
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(r[1]))
		b.Field(2).(*array.Int64Builder).Append(r[2])
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(ws))
		b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(ws + 10_000))
	}
	return Batch{Rec: b.NewRecord()}
}

// rankTestOp is the top 2 by v DESC per window and k, subtask sub of par.
func rankTestOp(t *testing.T, mem memory.Allocator, m *Metrics, sub, par int) *windowRank {
	out := append(append(catalog.Schema{}, rankTestSchema...), catalog.Column{Name: "rownum", Type: catalog.BigInt.WithNotNull(true)})
	s := &planner.WindowRankOp{ID: "r", PartKeys: []int{0}, PartNames: []string{"k"}, WinStart: 3, WinEnd: 4,
		Order: []planner.SortKey{{Col: 2, Name: "v", Desc: true}}, RankType: planner.RowNumber, RankStart: 1, RankEnd: 2,
		OutputRank: true, Out: out}
	const maxP = 8
	kg := KeyGroups{Start: (sub*maxP + par - 1) / par, End: ((sub+1)*maxP + par - 1) / par, MaxParallelism: maxP}
	op, err := newWindowRank(s, &OpContext{OpID: "r", Subtask: sub, Parallelism: par, KeyGroups: kg, Checkpointing: true, Mem: mem, BatchSize: 16, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// TestWindowRankRestoreFiresOnce: a checkpoint taken after window [0, 10 s)
// fired and after the last rows of window [10 s, 20 s) but before the
// watermark that closes it (a crash in between). The restored operator, at
// the same parallelism and at two subtasks, drops a row for the fired
// window as late, keeps the open window's buffer (a row arriving after the
// restore competes with the restored ones) and fires it exactly once.
// The fired window's slot leaves the state as a range deletion (its key
// was written by an earlier checkpoint); the restore at two subtasks
// reads the state in format 1.
func TestWindowRankRestoreFiresOnce(t *testing.T) {
	for _, par := range []int{1, 2} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		m := &Metrics{}
		op := rankTestOp(t, mem, m, 0, 1)
		out := &rowsOut{}
		if err := op.ProcessBatch(0, rankTestBatch(mem, rankTestRow{1, 1000, 5}, rankTestRow{1, 2000, 9}, rankTestRow{1, 3000, 7},
			rankTestRow{1, 15000, 4}, rankTestRow{2, 16000, 3}, rankTestRow{1, 17000, 8}), out); err != nil {
			t.Fatal(err)
		}
		cs := &countState{memState: memState{}}
		if err := op.Snapshot(1, cs); err != nil {
			t.Fatal(err)
		}
		op.NotifyComplete(1)
		if err := op.ProcessWatermark(12000, out); err != nil {
			t.Fatal(err)
		}
		if want := "[1|2000|9|0|10000|1| 1|3000|7|0|10000|2|]"; fmt.Sprint(out.rows) != want {
			t.Fatalf("before the checkpoint: %v, want %s", out.rows, want)
		}
		if err := op.Snapshot(2, cs); err != nil {
			t.Fatal(err)
		}
		if cs.dels != 0 || cs.ranges == 0 || len(cs.slotKeys("r")) != op.tbl.Len() {
			t.Fatalf("%d point and %d range deletions, %d slots in the state, %d live", cs.dels, cs.ranges, len(cs.slotKeys("r")), op.tbl.Len())
		}
		st := cs.memState
		if par == 2 && st.toFormat1("r", windowRankStateV1, windowRankStateV2, false) == 0 {
			t.Fatal("no slot to convert to format 1")
		}
		op.Close()
		after := st.clone() // the restored subtasks' last checkpoint
		var got []string
		for sub := 0; sub < par; sub++ {
			r := rankTestOp(t, mem, m, sub, par)
			if err := r.Restore(st); err != nil {
				t.Fatal(err)
			}
			o := &rowsOut{}
			var rows []rankTestRow
			for _, row := range []rankTestRow{{1, 4000, 100}, {1, 18000, 6}, {2, 19000, 1}} {
				kb := rankTestBatch(mem, row)
				h := HashKeys(kb.Rec, []int{0}, nil)[0] % 8
				kb.Rec.Release()
				if int(h) >= r.ctx.KeyGroups.Start && int(h) < r.ctx.KeyGroups.End {
					rows = append(rows, row)
				}
			}
			if len(rows) > 0 {
				if err := r.ProcessBatch(0, rankTestBatch(mem, rows...), o); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.ProcessWatermark(19998, o); err != nil {
				t.Fatal(err)
			}
			if len(o.rows) != 0 {
				t.Errorf("p%d: fired before its end: %v", par, o.rows)
			}
			if err := r.ProcessWatermark(19999, o); err != nil {
				t.Fatal(err)
			}
			if err := r.ProcessWatermark(MaxWatermark, o); err != nil {
				t.Fatal(err)
			}
			if err := r.Snapshot(3, after); err != nil {
				t.Fatal(err)
			}
			got = append(got, o.rows...)
			r.Close()
		}
		if left := after.slotKeys("r"); len(left) != 0 {
			t.Errorf("p%d: %d slots left in the state after every window fired", par, len(left))
		}
		sort.Strings(got)
		want := []string{"1|17000|8|10000|20000|1|", "1|18000|6|10000|20000|2|", "2|16000|3|10000|20000|1|", "2|19000|1|10000|20000|2|"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("p%d after the restore: %v, want %v", par, got, want)
		}
		if n := m.LateRecords.Load(); n != 1 {
			t.Errorf("p%d: %d late records, want 1", par, n)
		}
		mem.AssertSize(t, 0)
	}
}

// TestSortKeysOrder checks the sort key encoding against a direct
// comparison on seeded random rows of (DOUBLE ASC, STRING DESC, INT ASC)
// with NULLs, NaN, -0, and strings with zero bytes and common prefixes.
func TestSortKeysOrder(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(3))
	schema := catalog.Schema{{Name: "d", Type: catalog.Double}, {Name: "s", Type: catalog.String}, {Name: "i", Type: catalog.Int}}
	type row struct {
		d       float64
		s       string
		i       int32
		dn, sn  bool
		encoded []byte
	}
	floats := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), -1.5, 1.5, 2, -2, 1e300, -1e-300}
	strs := []string{"", "a", "a\x00", "a\x00b", "ab", "b", "\x00", "\xff", "a\xff"}
	const n = 500
	rows := make([]row, n)
	b := array.NewRecordBuilder(mem, schema.Arrow())
	for i := range rows {
		r := &rows[i]
		r.d, r.s, r.i = floats[rng.Intn(len(floats))], strs[rng.Intn(len(strs))], int32(rng.Intn(5)-2)
		r.dn, r.sn = rng.Intn(8) == 0, rng.Intn(8) == 0
		if r.dn {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Float64Builder).Append(r.d)
		}
		if r.sn {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(r.s)
		}
		b.Field(2).(*array.Int32Builder).Append(r.i)
	}
	rec := b.NewRecord()
	b.Release()
	defer rec.Release()
	var e sortEncoder
	e.encode(rec, []planner.SortKey{{Col: 0}, {Col: 1, Desc: true}, {Col: 2}})
	for i := range rows {
		rows[i].encoded = append([]byte(nil), e.key(i)...)
	}
	cmpF := func(a, b row) int { // NULL smallest, NaN largest, -0 = 0
		switch {
		case a.dn || b.dn:
			return boolCmp(!a.dn, !b.dn)
		case math.IsNaN(a.d) || math.IsNaN(b.d):
			return boolCmp(math.IsNaN(a.d), math.IsNaN(b.d))
		case a.d < b.d:
			return -1
		case a.d > b.d:
			return 1
		}
		return 0
	}
	cmpS := func(a, b row) int {
		if a.sn || b.sn {
			return boolCmp(!a.sn, !b.sn)
		}
		return strings.Compare(a.s, b.s)
	}
	want := func(a, b row) int {
		if c := cmpF(a, b); c != 0 {
			return c
		}
		if c := cmpS(a, b); c != 0 {
			return -c
		}
		return boolCmp(a.i > b.i, a.i < b.i)
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if got, w := bytes.Compare(rows[i].encoded, rows[j].encoded), want(rows[i], rows[j]); got != w {
				t.Fatalf("rows %+v and %+v: encoded compare %d, want %d", rows[i], rows[j], got, w)
			}
		}
	}
}

// boolCmp orders false before true: -1 if a < b, 1 if a > b, else 0.
func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}

// BenchmarkWindowRank: top 3 by v per 10 s window and key over 100 keys
// (1,000 rows per window: 10 per window and key), rows in time order with
// random values, in batches of 1,024 (b.N rows; a watermark after every
// batch fires the windows passed).
func BenchmarkWindowRank(b *testing.B) {
	mem := memory.NewGoAllocator()
	out := append(append(catalog.Schema{}, rankTestSchema...), catalog.Column{Name: "rownum", Type: catalog.BigInt.WithNotNull(true)})
	s := &planner.WindowRankOp{ID: "r", PartKeys: []int{0}, PartNames: []string{"k"}, WinStart: 3, WinEnd: 4,
		Order: []planner.SortKey{{Col: 2, Name: "v", Desc: true}}, RankType: planner.RowNumber, RankStart: 1, RankEnd: 3,
		OutputRank: true, Out: out}
	op, err := newWindowRank(s, &OpContext{OpID: "r", Parallelism: 1, KeyGroups: KeyGroups{Start: 0, End: 128, MaxParallelism: 128},
		Checkpointing: true, Mem: mem, BatchSize: 1024})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	const batch = 1024
	var batches []arrow.Record
	ts := int64(0)
	for i := 0; i < 64; i++ {
		rows := make([]rankTestRow, batch)
		for j := range rows {
			ts += 10 // 100,000 rows per 1 000 s: a 10 s window has 1,000 rows
			rows[j] = rankTestRow{int64(rng.Intn(100)), ts, int64(rng.Intn(1_000_000))}
		}
		batches = append(batches, rankTestBatch(mem, rows...).Rec)
	}
	span := ts
	sink := &countOut{}
	b.ResetTimer()
	for n, i := 0, 0; n < b.N; n, i = n+batch, i+1 {
		rec := batches[i%len(batches)]
		// shift the batch by whole rounds of the data set in time
		shift := int64(i/len(batches)) * (span + 10_000)
		shifted := shiftTimes(mem, rec, shift)
		if err := op.ProcessBatch(0, Batch{Rec: shifted}, sink); err != nil {
			b.Fatal(err)
		}
		if err := op.ProcessWatermark(shift+int64(i%len(batches)+1)*batch*10-1, sink); err != nil {
			b.Fatal(err)
		}
		if i%64 == 63 { // a checkpoint now and then writes the changes
			if err := op.Snapshot(int64(i), discardState{}); err != nil {
				b.Fatal(err)
			}
			op.NotifyComplete(int64(i))
		}
	}
	b.StopTimer()
	if sink.rows == 0 {
		b.Fatal("no output")
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

type countOut struct{ rows int }

func (c *countOut) Collect(b Batch) error     { c.rows += b.Rows(); b.Rec.Release(); return nil }
func (c *countOut) EmitWatermark(int64) error { return nil }

// shiftTimes returns rec with ts, window_start and window_end moved by d.
func shiftTimes(mem memory.Allocator, rec arrow.Record, d int64) arrow.Record {
	cols := make([]arrow.Array, rec.NumCols())
	for c := range cols {
		col := rec.Column(c)
		if tc, ok := col.(*array.Timestamp); ok && d != 0 {
			bld := array.NewTimestampBuilder(mem, tc.DataType().(*arrow.TimestampType))
			for _, v := range tc.TimestampValues() {
				bld.Append(v + arrow.Timestamp(d))
			}
			cols[c] = bld.NewArray()
			bld.Release()
		} else {
			col.Retain()
			cols[c] = col
		}
	}
	out := array.NewRecord(rec.Schema(), cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return out
}

// discardState is a StateWriter that keeps nothing.
type discardState struct{}

func (discardState) Put(k, v []byte) error           { return nil }
func (discardState) Delete(k []byte) error           { return nil }
func (discardState) DeleteRange(lo, hi []byte) error { return nil }

// windowRankSchedPlan is planWindowRank of the fault schedule: the window
// job's source and watermark, a TUMBLE(1 s) window TVF chained to them,
// HASH(k), then per window and k the 2 rows of largest v (v is unique: a
// total order) with the two-phase sink chained.
func windowRankSchedPlan(par int) *planner.Physical {
	ts := catalog.Timestamp.WithNotNull(true)
	tvfOut := append(append(catalog.Schema{}, windowSchedSchema...),
		catalog.Column{Name: "window_start", Type: ts}, catalog.Column{Name: "window_end", Type: ts}, catalog.Column{Name: "window_time", Type: ts})
	src := &planner.Task{Name: "src", Parallelism: par, Source: &planner.SourceSpec{Table: &catalog.Table{Name: "gen"}, Schema: windowSchedSchema, ID: "src"},
		Ops: []planner.Op{&planner.WatermarkAssignerOp{ID: "wm", TimeCol: 2, TimeName: "t", Delay: windowSchedDelay},
			&planner.WindowTVFOp{ID: "tvf", TimeCol: 2, TimeName: "t", Window: planner.WindowSpec{Kind: planner.Tumble, Size: windowRankSchedSize}, Out: tvfOut}},
		OutSchema: tvfOut}
	out := append(append(catalog.Schema{}, tvfOut...), catalog.Column{Name: "rownum", Type: catalog.BigInt.WithNotNull(true)})
	rank := &planner.WindowRankOp{ID: "rank", PartKeys: []int{0}, PartNames: []string{"k"}, WinStart: 3, WinEnd: 4,
		Order: []planner.SortKey{{Col: 1, Name: "v", Desc: true}}, RankType: planner.RowNumber, RankStart: 1, RankEnd: 2,
		OutputRank: true, Out: out}
	rt := &planner.Task{Name: "rank", Parallelism: par, Ops: []planner.Op{rank}, OutSchema: out, OutMode: planner.InsertOnly,
		Sink: &planner.SinkSpec{Table: &catalog.Table{Name: "txn"}, ID: "sink", Schema: out, Mode: planner.InsertOnly}}
	e := &planner.Edge{From: src, To: rt, Kind: planner.Hash, Keys: []int{0}}
	src.Outputs, rt.Inputs = []*planner.Edge{e}, []*planner.Edge{e}
	return &planner.Physical{Tasks: []*planner.Task{src, rt}, Edges: []*planner.Edge{e}}
}

const windowRankSchedSize = 1000

// windowRankSchedWant is the folded output of the uninterrupted
// planWindowRank job: per key and 1 s window its two largest v.
func windowRankSchedWant() []string {
	type row struct{ v, t int64 }
	groups := map[[2]int64][]row{}
	for j := int64(0); j < schedSplits; j++ {
		for i := int64(0); i < schedRows/schedSplits; i++ {
			k, v, t := windowSchedRow(j, i)
			key := [2]int64{k, t / windowRankSchedSize * windowRankSchedSize}
			groups[key] = append(groups[key], row{v, t})
		}
	}
	f := folded{}
	for key, rows := range groups {
		sort.Slice(rows, func(a, b int) bool { return rows[a].v > rows[b].v })
		ws := key[1]
		for n, r := range rows[:min(2, len(rows))] {
			f[fmt.Sprintf("%d|%d|%d|%d|%d|%d|%d|", key[0], r.v, r.t, ws, ws+windowRankSchedSize, ws+windowRankSchedSize-1, n+1)]++
		}
	}
	return f.sorted()
}

// TestWindowRankFireBatches: a watermark that closes windows of many keys
// emits their top rows a batch (16 rows, the operator's batch size) at a
// time, the same rows as one unbounded batch: the top 2 values per key
// and window.
func TestWindowRankFireBatches(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var rows []rankTestRow
	want := map[string][]int64{} // k|window -> values
	for i := int64(0); i < 900; i++ {
		r := rankTestRow{i % 41, i * 37 % 30_000, i * 7919 % 1000}
		rows = append(rows, r)
		w := fmt.Sprintf("%d|%d", r[0], r[1]/10_000*10_000)
		want[w] = append(want[w], r[2])
	}
	run := func(batchSize int) (*sizesOut, []string) {
		op := rankTestOp(t, mem, nil, 0, 1)
		op.ctx.BatchSize = batchSize
		defer op.Close()
		var in []Batch
		for a := 0; a < len(rows); a += 100 {
			in = append(in, rankTestBatch(mem, rows[a:a+100]...))
		}
		return fireAll(t, op, in)
	}
	got, batches := firedInBatches(t, run)
	top := map[string][]int64{}
	for _, r := range got {
		var k, ts, v, ws, we, rn int64
		if _, err := fmt.Sscanf(r, "%d|%d|%d|%d|%d|%d|", &k, &ts, &v, &ws, &we, &rn); err != nil {
			t.Fatal(r, err)
		}
		w := fmt.Sprintf("%d|%d", k, ws)
		top[w] = append(top[w], v)
	}
	if len(top) != len(want) || batches < 2*len(want)/16 {
		t.Fatalf("%d windows in %d batches, want %d windows", len(top), batches, len(want))
	}
	for w, vs := range want {
		sort.Slice(vs, func(a, b int) bool { return vs[a] > vs[b] })
		got := top[w]
		sort.Slice(got, func(a, b int) bool { return got[a] > got[b] })
		if fmt.Sprint(got) != fmt.Sprint(vs[:min(2, len(vs))]) {
			t.Fatalf("window %s: top %v, want %v", w, got, vs[:min(2, len(vs))])
		}
	}
}
