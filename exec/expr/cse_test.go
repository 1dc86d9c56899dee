package expr

import (
	"math/rand"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/internal/memtest"
	"github.com/streamsql/streamsql/planner"
)

// TestCommonSubexpressions: seeded random expressions that repeat
// sub-expressions (in CASE conditions and branches, under AND/OR, inside
// other repeated ones, some that fail at run time on some rows) give with
// sharing what they give without it, row by row, error for error, over
// several batches, and leak nothing; sharing does happen.
func TestCommonSubexpressions(t *testing.T) {
	rng := rand.New(rand.NewSource(17))
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	full := testRecord(mem)
	recs := []arrow.Record{full, full.NewSlice(1, 4), full.NewSlice(0, 2)}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	// pieces over the test batch's columns: numeric ones (i, b, z: z is
	// 0 on some rows, so i / z fails there) and strings (s, u)
	nums := func() planner.Expr {
		switch rng.Intn(5) {
		case 0:
			return call(t, "+", col("i"), lit(rng.Intn(5)))
		case 1:
			return call(t, "*", col("b"), lit(int64(2)))
		case 2:
			return call(t, "/", col("i"), col("z")) // fails where z = 0
		case 3:
			return call(t, "abs", col("i"))
		}
		return col("i")
	}
	strs := func() planner.Expr {
		switch rng.Intn(3) {
		case 0:
			return call(t, "lower", col("s"))
		case 1:
			return call(t, "upper", col("u"))
		}
		return call(t, "concat", col("s"), lit("x"))
	}
	shared := 0
	for iter := 0; iter < 300; iter++ {
		n1, n2, s1 := nums(), nums(), strs()
		var e planner.Expr
		switch rng.Intn(4) {
		case 0: // CASE over a repeated numeric expression
			e = call(t, "case", call(t, ">", n1, lit(0)), n1, call(t, "<", n1, n2), n2, lit(nil))
		case 1: // AND/OR of comparisons of the same expression
			e = call(t, "or", call(t, "and", call(t, ">", n1, lit(-3)), call(t, "<", n1, lit(9))), call(t, "=", n1, n2))
		case 2: // strings: a CASE on a repeated LOWER/UPPER
			e = call(t, "case", call(t, "=", s1, lit("hello")), lit("a"), call(t, "=", s1, lit("x")), lit("b"), s1)
		default: // a repeated expression inside a repeated expression
			inner := call(t, "+", n1, n2)
			outer := call(t, "*", inner, inner)
			e = call(t, "case", call(t, ">", outer, lit(int64(10))), outer, call(t, "-", outer, inner))
		}
		withCSE, err1 := Compile(e)
		cp := &compiler{} // no sharing
		plain, err2 := cp.compile(e)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("%s: compile errors %v / %v", e, err1, err2)
		}
		if err1 != nil {
			continue
		}
		if r, ok := withCSE.(*cseRoot); ok && len(r.nodes) > 0 {
			shared++
		}
		for _, rec := range append(recs, recs[0]) { // other rows, then the first record again
			a, errA := withCSE.Eval(rec, mem)
			b, errB := plain.Eval(rec, mem)
			if (errA == nil) != (errB == nil) || (errA != nil && errA.Error() != errB.Error()) {
				t.Fatalf("%s: errors %v / %v", e, errA, errB)
			}
			if errA != nil {
				continue
			}
			if !array.Equal(a, b) {
				t.Fatalf("%s: %s, want %s", e, render(a), render(b))
			}
			a.Release()
			b.Release()
		}
	}
	if shared < 200 {
		t.Fatalf("only %d of 300 expressions shared a sub-expression", shared)
	}
	// the clock is never shared
	later := &planner.Call{Fn: "dt_add_ms", Args: []planner.Expr{
		&planner.Call{Fn: "current_timestamp", T: catalog.Timestamp}, col("b")}, T: catalog.Timestamp}
	if got := sharedCalls(&planner.Call{Fn: "=", Args: []planner.Expr{later, later}, T: catalog.Boolean}); got != nil {
		t.Fatalf("CURRENT_TIMESTAMP + b shared: %v", got)
	}
}
