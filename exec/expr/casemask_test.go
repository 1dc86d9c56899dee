package expr

import (
	"math/rand"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/internal/memtest"
	"github.com/streamsql/streamsql/planner"
)

// maskSchema: a condition column and values of the types a FILTER's
// argument takes.
var maskSchema = catalog.Schema{
	{Name: "c", Type: catalog.Boolean},
	{Name: "b", Type: catalog.BigInt},
	{Name: "i", Type: catalog.Int},
	{Name: "s", Type: catalog.String},
	{Name: "d", Type: catalog.Double},
	{Name: "f", Type: catalog.Boolean},
	{Name: "t", Type: catalog.Timestamp},
}

// maskRecord is a seeded batch of n rows with NULLs in every column.
func maskRecord(mem memory.Allocator, n int, seed int64) arrow.Record {
	r := rand.New(rand.NewSource(seed))
	b := array.NewRecordBuilder(mem, maskSchema.Arrow())
	defer b.Release()
	for i := 0; i < n; i++ {
		null := func() bool { return r.Intn(7) == 0 }
		for f := range maskSchema {
			fb := b.Field(f)
			if null() {
				fb.AppendNull()
				continue
			}
			switch x := fb.(type) {
			case *array.BooleanBuilder:
				x.Append(r.Intn(2) == 0)
			case *array.Int64Builder:
				x.Append(r.Int63n(1000) - 500)
			case *array.Int32Builder:
				x.Append(int32(r.Intn(1000)))
			case *array.StringBuilder:
				x.Append(string(rune('a'+r.Intn(26))) + "xyz"[:r.Intn(4)])
			case *array.Float64Builder:
				x.Append(r.NormFloat64())
			case *array.TimestampBuilder:
				x.Append(arrow.Timestamp(r.Int63n(1 << 40)))
			}
		}
	}
	return b.NewRecord()
}

// TestCaseMaskedMatchesGeneral: CASE WHEN c THEN v END (the plan of an
// aggregate's FILTER) shares v's buffers under a new validity; it must
// give what the general CASE gives, for every value type, conditions
// with NULLs and FALSE, batch sizes not a multiple of 64, and sliced
// batches (which take the general path).
func TestCaseMaskedMatchesGeneral(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	conds := []planner.Expr{
		&planner.ColRef{Index: 0, Name: "c", T: catalog.Boolean},
		call(t, ">", &planner.ColRef{Index: 1, Name: "b", T: catalog.BigInt}, lit(int64(0))),
		lit(nil),
	}
	for _, rows := range []int{1, 63, 64, 65, 200, 1024} {
		rec := maskRecord(mem, rows, int64(rows))
		for ci, cond := range conds {
			for v := 1; v < len(maskSchema); v++ {
				val := &planner.ColRef{Index: v, Name: maskSchema[v].Name, T: maskSchema[v].Type}
				e := call(t, "case", cond, val, lit(nil))
				ev, err := Compile(e)
				if err != nil {
					t.Fatal(err)
				}
				n := ev.(*caseNode)
				if !n.masked {
					t.Fatalf("%s: not compiled as a masked CASE", e)
				}
				for _, sliced := range []bool{false, true} {
					in := rec
					if sliced {
						if rows < 3 {
							continue
						}
						in = rec.NewSlice(1, int64(rows)) // bit offset 1: the general path
					}
					fast, err := n.evalMasked(in, mem)
					if err != nil {
						t.Fatal(err)
					}
					if (fast == nil) != sliced {
						t.Fatalf("%s rows %d sliced %v: fast path taken = %v", e, rows, sliced, fast != nil)
					}
					got, err := n.Eval(in, mem)
					if err != nil {
						t.Fatal(err)
					}
					n.masked = false
					bl := n.blend
					n.blend = nil // the row-by-row path
					want, err := n.Eval(in, mem)
					n.masked, n.blend = true, bl
					if err != nil {
						t.Fatal(err)
					}
					if g, w := render(got), render(want); g != w || got.NullN() != want.NullN() {
						t.Fatalf("%s (cond %d) rows %d sliced %v:\n got %s (%d nulls)\nwant %s (%d nulls)", e, ci, rows, sliced, g, got.NullN(), w, want.NullN())
					}
					if !arrow.TypeEqual(got.DataType(), want.DataType()) {
						t.Fatalf("%s: type %s, want %s", e, got.DataType(), want.DataType())
					}
					if fast != nil {
						fast.Release()
					}
					got.Release()
					want.Release()
					if sliced {
						in.Release()
					}
				}
			}
		}
		rec.Release()
	}
}

// TestCaseBlendMatchesGeneral: a CASE of fixed-width values that cannot
// fail (the Nexmark views' dateTime) copies the ELSE array and overwrites
// each condition's rows; it must give what the row-by-row CASE gives:
// several conditions (the first true one wins), NULL and constant
// values, NULL conditions, no row left to the ELSE, no row to any
// condition, sizes around 64 and batches sliced at a bit offset.
func TestCaseBlendMatchesGeneral(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	col := maskCol
	c, b, i, d, ts := col(0), col(1), col(2), col(4), col(6)
	exprs := []planner.Expr{
		call(t, "case", c, b, call(t, ">", b, lit(int64(0))), lit(int64(5)), b),
		call(t, "case", call(t, ">", b, lit(int64(100))), i, c, lit(3), lit(nil)),
		call(t, "case", c, d, call(t, ">", b, lit(int64(0))), d, lit(-1.5)),
		call(t, "case", c, ts, lit(true), ts, lit(nil)),
		call(t, "case", lit(nil), b, lit(false), lit(int64(9)), b),
		call(t, "case", call(t, "=", i, lit(7)), lit(nil), c, b, lit(int64(1))),
	}
	checkCasePath(t, mem, exprs, "a blended CASE", func(n *caseNode) bool {
		return n.blend != nil && !n.masked && n.consts == nil
	}, func(n *caseNode) func(on bool) {
		bl := n.blend
		return func(on bool) {
			if n.blend = nil; on {
				n.blend = bl
			}
		}
	})
}

// TestCaseConstsMatchesGeneral: a CASE of constants (COUNT(*) FILTER
// (WHERE c) is planned as CASE WHEN c THEN 1 END) gives what the
// row-by-row CASE gives, with one value that is not NULL (every row holds
// it under the validity) or several, NULL conditions, and batches sliced
// at a bit offset.
func TestCaseConstsMatchesGeneral(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	col := maskCol
	c, b, i := col(0), col(1), col(2)
	exprs := []planner.Expr{
		call(t, "case", c, lit(1), lit(nil)),
		call(t, "case", call(t, ">", b, lit(int64(0))), lit(int64(5)), c, lit(nil), lit(nil)),
		call(t, "case", call(t, "=", i, lit(7)), lit(nil), c, lit(int64(3)), lit(nil)),
		call(t, "case", call(t, ">", b, lit(int64(0))), lit(int64(5)), lit(int64(6))),
	}
	checkCasePath(t, mem, exprs, "a CASE of constants", func(n *caseNode) bool { return n.consts != nil },
		func(n *caseNode) func(on bool) {
			cs := n.consts
			return func(on bool) {
				if n.consts = nil; on {
					n.consts = cs
				}
			}
		})
}

// checkCasePath compiles each of exprs, which must take the fast path
// is tells (named kind), and checks it against the general path (toggle
// turns it off and on again) on batches of sizes around 64 and slices.
func checkCasePath(t *testing.T, mem memory.Allocator, exprs []planner.Expr, kind string, is func(*caseNode) bool, toggle func(*caseNode) func(on bool)) {
	t.Helper()
	for _, rows := range []int{1, 63, 64, 65, 200, 1024} {
		rec := maskRecord(mem, rows, int64(rows)+100)
		for _, e := range exprs {
			ev, err := Compile(e)
			if err != nil {
				t.Fatal(err)
			}
			n := ev.(*caseNode)
			if !is(n) {
				t.Fatalf("%s: not compiled as %s", e, kind)
			}
			checkCaseGeneral(t, mem, e, n, rec, rows, toggle(n))
		}
		rec.Release()
	}
}

// checkCaseGeneral evaluates CASE n on rec's rows from 0, 1 and 64 on with
// its fast path on and off (path) and fails where they differ.
func checkCaseGeneral(t *testing.T, mem memory.Allocator, e planner.Expr, n *caseNode, rec arrow.Record, rows int, path func(on bool)) {
	t.Helper()
	for _, lo := range []int64{0, 1, 64} {
		if lo >= int64(rows) {
			continue
		}
		in := rec.NewSlice(lo, int64(rows))
		got, err := n.Eval(in, mem)
		if err != nil {
			t.Fatal(err)
		}
		path(false)
		want, err := n.Eval(in, mem)
		path(true)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := render(got), render(want); g != w || got.NullN() != want.NullN() || !arrow.TypeEqual(got.DataType(), want.DataType()) {
			t.Fatalf("%s rows %d from %d:\n got %s %s (%d nulls)\nwant %s %s (%d nulls)", e, rows, lo, got.DataType(), g, got.NullN(), want.DataType(), w, want.NullN())
		}
		got.Release()
		want.Release()
		in.Release()
	}
}

// maskCol is column i of maskSchema.
func maskCol(i int) planner.Expr {
	return &planner.ColRef{Index: i, Name: maskSchema[i].Name, T: maskSchema[i].Type}
}
