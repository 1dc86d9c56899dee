package exec

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/internal/memtest"
	"github.com/streamsql/streamsql/planner"
)

// TestSharedDistinctMatchesOwnSets: COUNT(DISTINCT x) calls sharing one
// set (each with its own FILTER: its column is x or NULL per row, as CASE
// WHEN c THEN x END gives) count what each call's own multiset counts,
// over random batches of additions and retractions into several groups,
// for integer and string x; the shared state survives its encoding
// (format 2) and reads a state of the calls' own multisets (format 1):
// both give the shared state the same bytes.
func TestSharedDistinctMatchesOwnSets(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	for _, typ := range []catalog.Type{catalog.BigInt, catalog.String, catalog.Int} {
		for seed := uint64(1); seed <= 6; seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", typ, seed), func(t *testing.T) {
				checkSharedDistinct(t, mem, typ, seed)
			})
		}
	}
}

func checkSharedDistinct(t *testing.T, mem memory.Allocator, typ catalog.Type, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	m := 2 + r.IntN(4)
	const groups = 3
	calls := make([]planner.AggCall, m)
	own := make([]accumulator, m)
	shared := make([]accumulator, m)
	for j := range calls {
		calls[j] = planner.AggCall{Fn: "count", Distinct: true, ArgType: typ, T: catalog.BigInt, Share: 1}
		var err error
		if own[j], err = newAccumulator(calls[j], true); err != nil {
			t.Fatal(err)
		}
		if shared[j], err = newAccumulator(calls[j], true); err != nil {
			t.Fatal(err)
		}
	}
	shared, shares := shareDistinct(calls, shared, false)
	if len(shares) != 1 {
		t.Fatalf("%d shares, want 1", len(shares))
	}
	if _, ok := shared[0].(*shareMember[int64]); !ok && typ.Kind == catalog.KindBigInt {
		t.Fatalf("BIGINT calls not shared: %T", shared[0])
	}
	for _, accs := range [][]accumulator{own, shared} {
		for _, a := range accs {
			a.grow(groups)
		}
	}
	// live[g][j][v] is the net count the rows gave value v in call j of
	// group g: retractions only take back what was added (a retracting
	// input), apart from a few retractions of values never added.
	live := make([][]map[int64]int64, groups)
	for g := range live {
		live[g] = make([]map[int64]int64, m)
		for j := range live[g] {
			live[g][j] = map[int64]int64{}
		}
	}
	for batch := 0; batch < 40; batch++ {
		n := 1 + r.IntN(60)
		gids := make([]int32, n)
		ops := make([]RowKind, n)
		vals := make([]int64, n)
		valid := make([][]bool, m)
		for j := range valid {
			valid[j] = make([]bool, n)
		}
		for i := range n {
			g := r.IntN(groups)
			gids[i] = int32(g)
			vals[i] = int64(r.IntN(25))
			ops[i] = Insert
			if r.IntN(3) == 0 {
				ops[i] = Delete
			}
			for j := range m {
				valid[j][i] = r.IntN(3) > 0
			}
			if ops[i] == Delete && r.IntN(10) > 0 {
				// mostly retract what a call counts
				for j := range m {
					valid[j][i] = valid[j][i] && live[g][j][vals[i]] > 0
				}
			}
			for j := range m {
				if valid[j][i] {
					live[g][j][vals[i]] += sign(ops, i)
				}
			}
		}
		cols := make([]arrow.Array, m)
		for j := range m {
			cols[j] = distinctColumn(mem, typ, vals, valid[j])
		}
		for j := range m {
			own[j].update(gids, cols[j], ops)
			shared[j].update(gids, cols[j], ops)
		}
		for _, c := range cols {
			c.Release()
		}
		compareDistinct(t, mem, own, shared, groups, batch)
	}
	for g := int32(0); g < groups; g++ {
		v2 := shared[0].encode(nil, g)
		for j := 1; j < m; j++ {
			if b := shared[j].encode(nil, g); len(b) != 0 {
				t.Fatalf("call %d of the share wrote %d bytes, want 0", j, len(b))
			}
		}
		// format 1: every call's own multiset
		var v1 []byte
		for j := range m {
			v1 = own[j].encode(v1, g)
		}
		for _, st := range []struct {
			name string
			f    byte
			b    []byte
		}{{"format 2", aggStateV2, v2}, {"format 1", aggStateV1, v1}} {
			shares[0].setFormat(st.f)
			rest := st.b
			for j := range m {
				k, err := shared[j].decode(rest, g)
				if err != nil {
					t.Fatalf("%s: decode of call %d: %v", st.name, j, err)
				}
				rest = rest[k:]
			}
			if len(rest) != 0 {
				t.Fatalf("%s: %d bytes left", st.name, len(rest))
			}
			shares[0].setFormat(aggStateV2)
			if again := shared[0].encode(nil, g); !bytes.Equal(again, v2) {
				t.Fatalf("%s: the decoded set encodes to other bytes", st.name)
			}
		}
	}
	compareDistinct(t, mem, own, shared, groups, -1)
	// A set shared by another number of calls is refused.
	shares[0].setFormat(aggStateV2)
	other, _ := shareDistinct(append(calls[:0:0], calls[0], calls[0], calls[0], calls[0], calls[0], calls[0], calls[0]), make([]accumulator, 7), false)
	other[0].grow(1)
	if _, err := other[0].decode(shared[0].encode(nil, 0), 0); err == nil {
		t.Fatal("a set of another number of calls was read")
	}
}

// distinctColumn builds x's column of a call: vals where valid, NULL
// elsewhere.
func distinctColumn(mem memory.Allocator, typ catalog.Type, vals []int64, valid []bool) arrow.Array {
	switch typ.Kind {
	case catalog.KindString:
		b := array.NewStringBuilder(mem)
		defer b.Release()
		for i, v := range vals {
			if valid[i] {
				b.Append(fmt.Sprintf("v%03d", v))
			} else {
				b.AppendNull()
			}
		}
		return b.NewArray()
	case catalog.KindInt:
		b := array.NewInt32Builder(mem)
		defer b.Release()
		for i, v := range vals {
			if valid[i] {
				b.Append(int32(v) - 12) // negative values too
			} else {
				b.AppendNull()
			}
		}
		return b.NewArray()
	}
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for i, v := range vals {
		if valid[i] {
			b.Append(v << 40)
		} else {
			b.AppendNull()
		}
	}
	return b.NewArray()
}

func compareDistinct(t *testing.T, mem memory.Allocator, own, shared []accumulator, groups int, batch int) {
	t.Helper()
	slots := make([]int32, groups)
	for g := range slots {
		slots[g] = int32(g)
	}
	for j := range own {
		a, b := own[j].result(slots, mem), shared[j].result(slots, mem)
		if !array.Equal(a, b) {
			t.Fatalf("after batch %d, call %d: shared %v, own %v", batch, j, b, a)
		}
		a.Release()
		b.Release()
	}
}
