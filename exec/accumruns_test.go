package exec

import (
	"bytes"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/internal/memtest"
	"github.com/streamsql/streamsql/planner"
)

// TestUpdateRunsMatchesRows: every accumulator that updates by runs of
// one slot's rows (runUpdater) ends with the state, byte for byte, of the
// same batches applied row by row: COUNT(*), COUNT(x), SUM and AVG of INT
// and BIGINT, MIN and MAX of INT, BIGINT and TIMESTAMP, with and without
// NULLs, in sliced columns, over batches whose slots come in runs of
// random lengths (one row too). A DOUBLE sum declines (its rounding would
// depend on where runs break).
func TestUpdateRunsMatchesRows(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	const slots = 50
	calls := []planner.AggCall{
		{Fn: "count_star", T: catalog.BigInt},
		{Fn: "count", ArgType: catalog.BigInt, T: catalog.BigInt},
		{Fn: "sum", ArgType: catalog.Int, T: catalog.Int},
		{Fn: "sum", ArgType: catalog.BigInt, T: catalog.BigInt},
		{Fn: "avg", ArgType: catalog.BigInt, T: catalog.BigInt},
		{Fn: "min", ArgType: catalog.BigInt, T: catalog.BigInt},
		{Fn: "max", ArgType: catalog.BigInt, T: catalog.BigInt},
		{Fn: "min", ArgType: catalog.Int, T: catalog.Int},
		{Fn: "max", ArgType: catalog.Int, T: catalog.Int},
		{Fn: "max", ArgType: catalog.Timestamp, T: catalog.Timestamp},
		{Fn: "min", ArgType: catalog.Timestamp, T: catalog.Timestamp},
	}
	for _, withNulls := range []bool{false, true} {
		for _, c := range calls {
			rng := rand.New(rand.NewSource(int64(len(c.Fn)) * 31))
			byRows, err := newAccumulator(c, false)
			if err != nil {
				t.Fatal(err)
			}
			byRuns, _ := newAccumulator(c, false)
			byRows.grow(slots)
			byRuns.grow(slots)
			used := 0
			for batch := 0; batch < 30; batch++ {
				n := 1 + rng.Intn(300)
				gids := make([]int32, 0, n)
				for len(gids) < n {
					g := int32(rng.Intn(slots))
					for k := 1 + rng.Intn(40); k > 0 && len(gids) < n; k-- {
						gids = append(gids, g)
					}
				}
				col := runsTestColumn(t, mem, c.ArgType, n, withNulls && batch%3 != 0, withNulls, rng)
				runs, ok := gidRuns(gids, nil, n+1)
				if !ok || runs[len(runs)-1] != int32(n) {
					t.Fatalf("gidRuns of %d rows: %v, %v", n, runs, ok)
				}
				byRows.update(gids, col, nil)
				if !byRuns.(runUpdater).updateRuns(gids, runs, col) {
					t.Fatalf("%s(%s) declined runs", c.Fn, c.ArgType)
				}
				used++
				if col != nil {
					col.Release()
				}
			}
			for g := int32(0); g < slots; g++ {
				if a, b := byRows.encode(nil, g), byRuns.encode(nil, g); !bytes.Equal(a, b) {
					t.Fatalf("%s(%s), NULLs %v, slot %d: by rows %x, by runs %x", c.Fn, c.ArgType, withNulls, g, a, b)
				}
			}
		}
	}
	dbl, _ := newAccumulator(planner.AggCall{Fn: "sum", ArgType: catalog.Double, T: catalog.Double}, false)
	dbl.grow(1)
	if dbl.(runUpdater).updateRuns([]int32{0}, []int32{0, 1}, nil) {
		t.Fatal("a DOUBLE sum took runs")
	}
}

// runsTestColumn returns n random values of type ty (nil for COUNT(*)),
// negative or positive, some NULL when nulls is set, as a slice of a
// longer array.
func runsTestColumn(t *testing.T, mem memory.Allocator, ty catalog.Type, n int, nulls, negative bool, rng *rand.Rand) arrow.Array {
	t.Helper()
	if ty.Kind == 0 {
		return nil
	}
	b := array.NewBuilder(mem, ty.ArrowType())
	defer b.Release()
	for i := 0; i < n+3; i++ {
		if nulls && rng.Intn(4) == 0 {
			b.AppendNull()
			continue
		}
		v := 1 + rng.Int63n(1_000_000) // of one sign: a slot's first extreme is never beaten by 0
		if negative {
			v = -v
		}
		switch bb := b.(type) {
		case *array.Int32Builder:
			bb.Append(int32(v))
		case *array.Int64Builder:
			bb.Append(v)
		case *array.TimestampBuilder:
			bb.Append(arrow.Timestamp(v))
		default:
			t.Fatalf("no test values for %s", ty)
		}
	}
	whole := b.NewArray()
	defer whole.Release()
	return array.NewSlice(whole, 3, int64(n+3))
}

// TestGidRuns: each run's first row then the row count; false past max
// runs.
func TestGidRuns(t *testing.T) {
	gids := []int32{4, 4, 7, 7, 7, 4, 9}
	runs, ok := gidRuns(gids, nil, 4)
	if !ok || !slices.Equal(runs, []int32{0, 2, 5, 6, 7}) {
		t.Fatalf("gidRuns: %v, %v", runs, ok)
	}
	if _, ok := gidRuns(gids, nil, 3); ok {
		t.Fatal("4 runs taken with at most 3")
	}
	if runs, ok := gidRuns(nil, nil, 1); !ok || !slices.Equal(runs, []int32{0}) {
		t.Fatalf("no rows: %v, %v", runs, ok)
	}
}

// BenchmarkCountFilter: COUNT(x) of 8192 rows of which a third are valid
// (a FILTER's CASE column), over 600 slots.
func BenchmarkCountFilter(b *testing.B) {
	mem := memtest.NewChecked()
	rng := rand.New(rand.NewSource(5))
	bl := array.NewInt32Builder(mem)
	gids := make([]int32, 8192)
	for i := range gids {
		gids[i] = int32(rng.Intn(600))
		if rng.Intn(3) == 0 {
			bl.Append(1)
		} else {
			bl.AppendNull()
		}
	}
	col := bl.NewArray()
	bl.Release()
	defer col.Release()
	acc := &countAcc{nonNull: true}
	acc.grow(600)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		acc.update(gids, col, nil)
	}
}

// TestSlotBytesParts: a group's estimated memory (slotBytes, its fixed part
// summed once) equals the sum of its parts asked slot by slot: string and
// integer keys, fixed-width accumulators, MIN/MAX of BIGINT (fixed when
// insert-only, multisets under retraction) and of STRING, COUNT(DISTINCT).
func TestSlotBytesParts(t *testing.T) {
	big, str := catalog.BigInt, catalog.String
	for _, mode := range []planner.ChangelogMode{planner.InsertOnly, planner.Retract} {
		mem := memtest.NewChecked()
		out := catalog.Schema{{Name: "k", Type: big}, {Name: "s", Type: str}, {Name: "c", Type: big}, {Name: "mx", Type: big},
			{Name: "ms", Type: str}, {Name: "sm", Type: big}, {Name: "dc", Type: big}}
		spec := &planner.AggOp{ID: "agg", Keys: []int{0, 1}, KeyNames: []string{"k", "s"}, InputMode: mode, Out: out, Aggs: []planner.AggCall{
			{Fn: "count_star", Arg: -1, T: big},
			{Fn: "max", Arg: 2, ArgType: big, T: big},
			{Fn: "min", Arg: 1, ArgType: str, T: str},
			{Fn: "sum", Arg: 2, ArgType: big, T: big},
			{Fn: "count", Arg: 2, Distinct: true, ArgType: big, T: big},
		}}
		a, err := newAgg(spec, &OpContext{OpID: "agg", Parallelism: 1, KeyGroups: KeyGroups{Start: 0, End: 8, MaxParallelism: 8}, Mem: mem, BatchSize: 64})
		if err != nil {
			t.Fatal(err)
		}
		schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}, {Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
		b := array.NewRecordBuilder(mem, schema)
		for i := 0; i < 40; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i % 7))
			b.Field(1).(*array.StringBuilder).Append(strings.Repeat("x", i%5))
			b.Field(2).(*array.Int64Builder).Append(int64(i * 31))
		}
		rec := b.NewRecord()
		b.Release()
		if err := a.ProcessBatch(0, Batch{Rec: rec}, &changeTable{t: t, rows: map[string]int{}}); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		checked := 0
		for g := int32(0); int(g) < len(a.rowCount); g++ {
			if a.rowCount[g] == 0 {
				continue
			}
			want := 8 + 4
			for _, k := range a.keys {
				want += k.slotBytes(g)
			}
			for _, acc := range a.accs {
				if s, ok := acc.(accSizer); ok {
					want += s.slotBytes(g)
				} else {
					want += accSlotBytes
				}
			}
			if got := a.slotBytes(g); got != want {
				t.Fatalf("mode %v, slot %d: slotBytes %d, parts %d", mode, g, got, want)
			}
			checked++
		}
		if checked < 7 {
			t.Fatalf("mode %v: %d groups checked", mode, checked)
		}
		a.Close()
		mem.AssertSize(t, 0)
	}
}
