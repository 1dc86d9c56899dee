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
		if err := op.ProcessWatermark(12000, out); err != nil {
			t.Fatal(err)
		}
		if want := "[1|2000|9|0|10000|1| 1|3000|7|0|10000|2|]"; fmt.Sprint(out.rows) != want {
			t.Fatalf("before the checkpoint: %v, want %s", out.rows, want)
		}
		st := memState{}
		if err := op.Snapshot(1, st); err != nil {
			t.Fatal(err)
		}
		op.Close()
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
			got = append(got, o.rows...)
			r.Close()
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
