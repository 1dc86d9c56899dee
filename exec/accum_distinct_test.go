package exec

import (
	"github.com/streamsql/streamsql/internal/memtest"
	"math"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

// TestCountDistinctNaN: COUNT(DISTINCT x) of DOUBLE counts every NaN (any
// payload) as one value and -0.0 as 0.0, as DISTINCT and GROUP BY do; a
// retracted NaN is removed; the state survives encode and decode.
func TestCountDistinctNaN(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	acc, err := newAccumulator(planner.AggCall{Fn: "count", Distinct: true, ArgType: catalog.Double, T: catalog.BigInt}, true)
	if err != nil {
		t.Fatal(err)
	}
	acc.grow(2)
	count := func(g int32) int64 {
		t.Helper()
		r := acc.result([]int32{g}, mem)
		defer r.Release()
		return r.(*array.Int64).Value(0)
	}
	apply := func(vals []float64, kind RowKind) {
		t.Helper()
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		b.AppendValues(vals, nil)
		col := b.NewArray()
		defer col.Release()
		gids := make([]int32, len(vals))
		ops := make([]RowKind, len(vals))
		for i := range ops {
			ops[i] = kind
		}
		acc.update(gids, col, ops)
	}
	otherNaN := math.Float64frombits(0xFFF8000000000000) // what 0.0/0.0 gives on amd64
	apply([]float64{math.NaN(), math.NaN(), otherNaN, 1, math.Copysign(0, -1), 0}, Insert)
	if n := count(0); n != 3 {
		t.Fatalf("NaN, NaN, NaN, 1, -0.0, 0.0: COUNT(DISTINCT) = %d, want 3", n)
	}
	apply([]float64{math.NaN(), otherNaN}, Delete)
	if n := count(0); n != 3 {
		t.Fatalf("after retracting two of three NaNs: %d, want 3", n)
	}
	state := acc.encode(nil, 0)
	acc.reset(0)
	if _, err := acc.decode(state, 0); err != nil {
		t.Fatal(err)
	}
	apply([]float64{otherNaN}, Delete)
	if n := count(0); n != 2 {
		t.Fatalf("after a restore and retracting the last NaN: %d, want 2", n)
	}
	// A state written before holds one entry per NaN; decode merges them.
	var oldSet multiset[float64]
	oldSet.add(math.NaN(), 1)
	oldSet.add(otherNaN, 2)
	oldSet.add(1, 1)
	old := appendMultiset(nil, &oldSet)
	if _, err := acc.decode(old, 1); err != nil {
		t.Fatal(err)
	}
	if n := count(1); n != 2 {
		t.Fatalf("old state with two NaN entries: %d, want 2", n)
	}
	apply1 := func(v float64) { // retract from slot 1
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		b.Append(v)
		col := b.NewArray()
		defer col.Release()
		acc.update([]int32{1}, col, []RowKind{Delete})
	}
	for i := 0; i < 3; i++ {
		apply1(math.NaN())
	}
	if n := count(1); n != 1 {
		t.Fatalf("old state after retracting its three NaNs: %d, want 1", n)
	}
}
