package expr

import (
	"github.com/streamsql/streamsql/internal/memtest"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/planner"
)

// A guarded operand (the right side of AND/OR, a CASE branch, a COALESCE
// argument that can fail) is evaluated on its rows only; those rows are
// gathered for the columns it reads, not for the whole record.
func TestGuardedEvaluation(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    func(t testing.TB) planner.Expr
		want string
	}{
		{"and guard", func(t testing.TB) planner.Expr {
			return call(t, "and", call(t, "<>", col("z"), lit(0)), call(t, "<", call(t, "/", col("i"), col("z")), lit(0)))
		}, "FALSE,TRUE,FALSE,NULL"},
		{"or guard", func(t testing.TB) planner.Expr {
			return call(t, "or", call(t, "=", col("z"), lit(0)), call(t, ">", call(t, "%", col("b"), col("z")), lit(0)))
		}, "TRUE,FALSE,TRUE,NULL"},
		{"case guard with strings", func(t testing.TB) planner.Expr {
			return call(t, "case", call(t, "=", col("z"), lit(0)), col("s"), call(t, "concat", col("s"), cast(t, call(t, "/", col("i"), col("z")), col("s").Type())))
		}, "'Hello','  wörld  -3','a_b%c',NULL"},
		{"coalesce guard", func(t testing.TB) planner.Expr {
			return call(t, "coalesce", col("z"), call(t, "/", col("i"), col("z")), lit(5))
		}, "0,2,0,5"},
	} {
		got, err := evalExpr(t, tc.e(t))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestTakeColumns(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	rec := testRecord(mem)
	defer rec.Release()
	cols := colsOf(call(t, "+", col("b"), col("i")))
	sub := takeColumns(rec, cols, []int32{2, 0}, mem)
	defer sub.Release()
	if sub.NumRows() != 2 || sub.NumCols() != rec.NumCols() {
		t.Fatalf("shape %d x %d", sub.NumRows(), sub.NumCols())
	}
	if got := render(sub.Column(1)); got != "9223372036854775807,10" {
		t.Fatalf("b gathered: %s", got)
	}
	if got := render(sub.Column(0)); got != "2147483647,7" {
		t.Fatalf("i gathered: %s", got)
	}
	// s is not read: the first two rows, shared with the input (no copy).
	s := sub.Column(4).(*array.String)
	if s.Len() != 2 || s.Value(0) != "Hello" || &s.ValueBytes()[0] != &rec.Column(4).(*array.String).ValueBytes()[0] {
		t.Fatalf("s should be a zero-copy slice of the input")
	}
}

func TestCanFailDivisionByConstant(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    func(t testing.TB) planner.Expr
		want bool
	}{
		{"bigint mod 123", func(t testing.TB) planner.Expr { return call(t, "%", col("b"), lit(123)) }, false},
		{"int div -1", func(t testing.TB) planner.Expr { return call(t, "/", col("i"), lit(-1)) }, false},
		{"mod 0", func(t testing.TB) planner.Expr { return call(t, "%", col("b"), lit(0)) }, true},
		{"div by column", func(t testing.TB) planner.Expr { return call(t, "/", col("i"), col("z")) }, true},
		{"decimal div", func(t testing.TB) planner.Expr { return call(t, "/", col("m"), lit("dec:2")) }, true},
	} {
		if got := canFail(tc.e(t)); got != tc.want {
			t.Errorf("%s: canFail = %v, want %v", tc.name, got, tc.want)
		}
	}
}
