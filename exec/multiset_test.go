package exec

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/internal/memtest"
	"github.com/streamsql/streamsql/planner"
)

// TestStringMultisetsOwnTheirValues: MIN, MAX (retracting) and
// COUNT(DISTINCT) of STRING over random inserts and deletes of a few values
// in several groups, each batch released (and its memory poisoned) right
// after it is applied, equal a brute-force multiset after every batch.
// A Go map assignment to a present key stores the assigned key, so a
// multiset that assigned counts by the batch's value kept views of freed
// memory (COUNT(DISTINCT) then counted a value twice).
func TestStringMultisetsOwnTheirValues(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	mk := func(fn string, distinct bool) accumulator {
		t.Helper()
		a, err := newAccumulator(planner.AggCall{Fn: fn, Distinct: distinct, ArgType: catalog.String, T: catalog.String}, true)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	const groups = 4
	maxA, minA, cntA := mk("max", false), mk("min", false), mk("count", true)
	for _, a := range []accumulator{maxA, minA, cntA} {
		a.grow(groups)
	}
	rng := rand.New(rand.NewSource(7))
	truth := make([]map[string]int, groups)
	for g := range truth {
		truth[g] = map[string]int{}
	}
	for batch := 0; batch < 400; batch++ {
		b := array.NewStringBuilder(mem)
		var gids []int32
		var ops []RowKind
		for i := rng.Intn(6); i >= 0; i-- {
			g := int32(rng.Intn(groups))
			// delete a present value half the time, else insert one
			var present []string
			for v, c := range truth[g] {
				for ; c > 0; c-- {
					present = append(present, v)
				}
			}
			sort.Strings(present)
			if len(present) > 0 && rng.Intn(2) == 0 {
				v := present[rng.Intn(len(present))]
				b.Append(v)
				ops = append(ops, Delete)
				if truth[g][v]--; truth[g][v] == 0 {
					delete(truth[g], v)
				}
			} else {
				v := fmt.Sprintf("v%02d", rng.Intn(12))
				b.Append(v)
				ops = append(ops, Insert)
				truth[g][v]++
			}
			gids = append(gids, g)
		}
		col := b.NewArray()
		b.Release()
		for _, a := range []accumulator{maxA, minA, cntA} {
			a.update(gids, col, ops)
		}
		col.Release() // poisons the batch's bytes
		slots := []int32{0, 1, 2, 3}
		mx, mn, cn := maxA.result(slots, mem), minA.result(slots, mem), cntA.result(slots, mem)
		for g := 0; g < groups; g++ {
			var vals []string
			for v := range truth[g] {
				vals = append(vals, v)
			}
			sort.Strings(vals)
			if n := cn.(*array.Int64).Value(g); n != int64(len(vals)) {
				t.Fatalf("batch %d group %d: COUNT(DISTINCT) %d, want %d %v", batch, g, n, len(vals), vals)
			}
			if len(vals) == 0 {
				if mx.IsValid(g) || mn.IsValid(g) {
					t.Fatalf("batch %d group %d: MIN/MAX of nothing is %v / %v", batch, g, mn.ValueStr(g), mx.ValueStr(g))
				}
				continue
			}
			if got := mx.(*array.String).Value(g); got != vals[len(vals)-1] {
				t.Fatalf("batch %d group %d: MAX %q, want %q", batch, g, got, vals[len(vals)-1])
			}
			if got := mn.(*array.String).Value(g); got != vals[0] {
				t.Fatalf("batch %d group %d: MIN %q, want %q", batch, g, got, vals[0])
			}
		}
		mx.Release()
		mn.Release()
		cn.Release()
	}
}
