package expr

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

// TestOrOfEqualitiesAsIn: a disjunction with equalities of one column and
// constants (rewritten to IN by orToIn) gives what SQL's three-valued OR
// of the equalities gives, row by row, on seeded random data and
// expressions: NULL rows, typed NULL constants, constants on either side,
// other disjuncts mixed in, sets of a few members (searched linearly) and
// of many (a map), and NOT IN over the same sets.
func TestOrOfEqualitiesAsIn(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	words := []string{"", "a", "b", "ab", "ba", "abc", "CA", "OR", "ID", "WA", "longer word", "x", "yy", "zzz"}
	schema := catalog.Schema{{Name: "s", Type: catalog.String}, {Name: "n", Type: catalog.BigInt}}
	sCol := &planner.ColRef{Index: 0, Name: "s", T: catalog.String}
	nCol := &planner.ColRef{Index: 1, Name: "n", T: catalog.BigInt}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	const rows = 300
	sv, nv := make([]*string, rows), make([]*int64, rows)
	rb := array.NewRecordBuilder(mem, schema.Arrow())
	for i := 0; i < rows; i++ {
		if rng.Intn(6) == 0 {
			rb.Field(0).AppendNull()
		} else {
			w := words[rng.Intn(len(words))]
			sv[i] = &w
			rb.Field(0).(*array.StringBuilder).Append(w)
		}
		if rng.Intn(6) == 0 {
			rb.Field(1).AppendNull()
		} else {
			v := rng.Int63n(10)
			nv[i] = &v
			rb.Field(1).(*array.Int64Builder).Append(v)
		}
	}
	rec := rb.NewRecord()
	rb.Release()
	defer rec.Release()
	type tv int // three-valued: 0 false, 1 true, 2 null
	or := func(a, b tv) tv {
		switch {
		case a == 1 || b == 1:
			return 1
		case a == 2 || b == 2:
			return 2
		}
		return 0
	}
	rewritten := 0
	for iter := 0; iter < 300; iter++ {
		var ds []planner.Expr
		var oracle []func(i int) tv
		nd := 1 + rng.Intn(12)
		for d := 0; d < nd; d++ {
			switch k := rng.Intn(10); {
			case k < 7: // s = 'w' (either side), sometimes a typed NULL
				var l *planner.Literal
				var w *string
				if rng.Intn(12) == 0 {
					l = &planner.Literal{T: catalog.String}
				} else {
					x := words[rng.Intn(len(words))]
					w = &x
					l = &planner.Literal{Value: x, T: catalog.String.WithNotNull(true)}
				}
				args := []planner.Expr{sCol, l}
				if rng.Intn(2) == 0 {
					args[0], args[1] = args[1], args[0]
				}
				ds = append(ds, &planner.Call{Fn: "=", Args: args, T: catalog.Boolean})
				oracle = append(oracle, func(i int) tv {
					if sv[i] == nil || w == nil {
						return 2
					}
					if *sv[i] == *w {
						return 1
					}
					return 0
				})
			case k < 9: // n = k
				v := rng.Int63n(10)
				ds = append(ds, &planner.Call{Fn: "=", Args: []planner.Expr{nCol, &planner.Literal{Value: v, T: catalog.BigInt.WithNotNull(true)}}, T: catalog.Boolean})
				oracle = append(oracle, func(i int) tv {
					if nv[i] == nil {
						return 2
					}
					if *nv[i] == v {
						return 1
					}
					return 0
				})
			default: // n > k: not an equality
				v := rng.Int63n(10)
				ds = append(ds, &planner.Call{Fn: ">", Args: []planner.Expr{nCol, &planner.Literal{Value: v, T: catalog.BigInt.WithNotNull(true)}}, T: catalog.Boolean})
				oracle = append(oracle, func(i int) tv {
					if nv[i] == nil {
						return 2
					}
					if *nv[i] > v {
						return 1
					}
					return 0
				})
			}
		}
		// A left-deep OR tree, sometimes nested the other way.
		e := ds[0]
		for _, d := range ds[1:] {
			if rng.Intn(3) == 0 {
				e = &planner.Call{Fn: "or", Args: []planner.Expr{d, e}, T: catalog.Boolean}
			} else {
				e = &planner.Call{Fn: "or", Args: []planner.Expr{e, d}, T: catalog.Boolean}
			}
		}
		if c, ok := e.(*planner.Call); ok && orToIn(c) != nil {
			rewritten++
		}
		ev, err := Compile(e)
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		got, err := ev.Eval(rec, mem)
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		b := got.(*array.Boolean)
		for i := 0; i < rows; i++ {
			want := oracle[0](i)
			for _, o := range oracle[1:] {
				want = or(want, o(i))
			}
			var have tv
			switch {
			case b.IsNull(i):
				have = 2
			case b.Value(i):
				have = 1
			}
			if have != want {
				t.Fatalf("%s row %d (s %v n %v): %d, want %d", e, i, fmtPtr(sv[i]), fmtPtr(nv[i]), have, want)
			}
		}
		got.Release()
	}
	if rewritten < 100 {
		t.Fatalf("only %d of 300 expressions were rewritten: the test does not exercise orToIn", rewritten)
	}
}

func fmtPtr[T any](p *T) string {
	if p == nil {
		return "NULL"
	}
	return fmt.Sprint(*p)
}

// TestInStringSets: IN and NOT IN over string constants, a few members
// (a linear search after the length test) and many (a map), agree with
// a direct search, NULL members included.
func TestInStringSets(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	word := func() string {
		b := make([]byte, rng.Intn(5))
		for i := range b {
			b[i] = "ab"[rng.Intn(2)]
		}
		if rng.Intn(20) == 0 {
			return string(b) + " a word longer than sixty-three bytes, to take the last length bit of the mask"
		}
		return string(b)
	}
	sb := array.NewStringBuilder(mem)
	vals := make([]*string, 500)
	for i := range vals {
		if rng.Intn(7) == 0 {
			sb.AppendNull()
			continue
		}
		w := word()
		vals[i] = &w
		sb.Append(w)
	}
	arr := sb.NewStringArray()
	sb.Release()
	defer arr.Release()
	schema := catalog.Schema{{Name: "s", Type: catalog.String}}
	rec := array.NewRecord(schema.Arrow(), []arrow.Array{arr}, int64(arr.Len()))
	defer rec.Release()
	sCol := &planner.ColRef{Index: 0, Name: "s", T: catalog.String}
	for iter := 0; iter < 60; iter++ {
		members := map[string]bool{}
		args := []planner.Expr{sCol}
		hasNull := false
		for m := 1 + rng.Intn(20); m > 0; m-- {
			if rng.Intn(15) == 0 {
				hasNull = true
				args = append(args, &planner.Literal{T: catalog.String})
				continue
			}
			w := word()
			members[w] = true
			args = append(args, &planner.Literal{Value: w, T: catalog.String.WithNotNull(true)})
		}
		for _, fn := range []string{"in", "not_in"} {
			ev, err := Compile(&planner.Call{Fn: fn, Args: args, T: catalog.Boolean})
			if err != nil {
				t.Fatal(err)
			}
			got, err := ev.Eval(rec, mem)
			if err != nil {
				t.Fatal(err)
			}
			b := got.(*array.Boolean)
			for i, v := range vals {
				wantNull := v == nil || (!members[*v] && hasNull)
				want := v != nil && members[*v] == (fn == "in")
				if b.IsNull(i) != wantNull || (!wantNull && b.Value(i) != want) {
					t.Fatalf("%s %d members (null %v) row %d %q: null %v value %v, want null %v value %v",
						fn, len(members), hasNull, i, fmtPtr(v), b.IsNull(i), b.Value(i), wantNull, want)
				}
			}
			got.Release()
		}
	}
}
