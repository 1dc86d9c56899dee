package exec

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/exec/format"
	"github.com/streamsql/streamsql/internal/memtest"
	"github.com/streamsql/streamsql/planner"
)

// TestCalcSharesFilterCalls: a Calc whose filter and projections compute
// the same calls (q21's REGEXP_EXTRACT in WHERE and CASE, q14's 0.908 *
// price) evaluates them once, and its output equals the filter and the
// projections evaluated directly, on seeded batches with NULLs; a call
// that can fail (10 / x) is not hoisted, so rows the filter drops do not
// raise its error.
func TestCalcSharesFilterCalls(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	schema := catalog.Schema{{Name: "x", Type: catalog.BigInt}, {Name: "s", Type: catalog.String}}
	x := &planner.ColRef{Index: 0, Name: "x", T: catalog.BigInt}
	s := &planner.ColRef{Index: 1, Name: "s", T: catalog.String}
	call := func(fn string, args ...planner.Expr) planner.Expr {
		e, err := planner.ResolveCall(fn, args)
		if err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		return e
	}
	lit := func(v any) planner.Expr {
		switch v := v.(type) {
		case int64:
			return &planner.Literal{Value: v, T: catalog.BigInt.WithNotNull(true)}
		case int:
			return &planner.Literal{Value: int32(v), T: catalog.Int.WithNotNull(true)}
		}
		return &planner.Literal{Value: v, T: catalog.String.WithNotNull(true)}
	}
	extract := &planner.Call{Fn: "regexp_extract", Args: []planner.Expr{s, lit("(&|^)id=([^&]*)"), lit(2)}, T: catalog.String}
	twice := call("*", x, lit(int64(2)))
	div := call("/", lit(int64(10)), x)
	cases := []struct {
		name   string
		filter planner.Expr
		projs  []planner.Expr
		shared int
	}{
		{"regexp in both", call("or", call("is_not_null", extract), call("=", s, lit(""))),
			[]planner.Expr{x, call("case", call("=", s, lit("")), lit("none"), extract)}, 2}, // and s = ''

		{"arithmetic in both", call("and", call(">", twice, lit(int64(4))), call("<", twice, lit(int64(15)))),
			[]planner.Expr{twice, call("+", twice, x)}, 1},
		{"a call that can fail", call("and", call("<>", x, lit(int64(0))), call(">", div, lit(int64(1)))),
			[]planner.Expr{div, s}, 0},
		{"nothing shared", call(">", x, lit(int64(3))), []planner.Expr{call("upper", s)}, 0},
	}
	rng := rand.New(rand.NewSource(8))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := make(catalog.Schema, len(tc.projs))
			for i, p := range tc.projs {
				out[i] = catalog.Column{Name: fmt.Sprintf("c%d", i), Type: p.Type()}
			}
			c, err := newCalc(&planner.CalcOp{Filter: tc.filter, Projs: tc.projs, Out: out}, mem, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.shared) != tc.shared {
				t.Fatalf("%d calls shared, want %d", len(c.shared), tc.shared)
			}
			filter, err := expr.Compile(tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			for batch := 0; batch < 5; batch++ {
				rb := array.NewRecordBuilder(mem, schema.Arrow())
				for i := 0; i < 300; i++ {
					if rng.Intn(10) == 0 {
						rb.Field(0).AppendNull()
					} else {
						rb.Field(0).(*array.Int64Builder).Append(rng.Int63n(12) - 2)
					}
					if rng.Intn(10) == 0 {
						rb.Field(1).AppendNull()
					} else {
						rb.Field(1).(*array.StringBuilder).Append([]string{"", "a", "id=7", "q=1&id=42&z", "xid=3", "id="}[rng.Intn(6)])
					}
				}
				rec := rb.NewRecord()
				rb.Release()
				// the oracle: the filter's mask, then each projection on the
				// rows kept
				m, err := filter.Eval(rec, mem)
				if err != nil {
					t.Fatal(err)
				}
				kept, err := expr.FilterRecord(rec, m.(*array.Boolean), mem)
				m.Release()
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for r := 0; r < int(kept.NumRows()); r++ {
					want = append(want, "")
				}
				for _, p := range tc.projs {
					ev, err := expr.Compile(p)
					if err != nil {
						t.Fatal(err)
					}
					a, err := ev.Eval(kept, mem)
					if err != nil {
						t.Fatalf("oracle %s: %v", p, err)
					}
					for r := range want {
						want[r] += cell(a, r) + "|"
					}
					a.Release()
				}
				kept.Release()
				var got recsOut
				if err := c.ProcessBatch(0, Batch{Rec: rec}, &got); err != nil {
					t.Fatal(err)
				}
				var have []string
				for _, r := range got.recs {
					for i := 0; i < int(r.NumRows()); i++ {
						row := ""
						for j := 0; j < int(r.NumCols()); j++ {
							row += cell(r.Column(j), i) + "|"
						}
						have = append(have, row)
					}
				}
				got.release()
				if fmt.Sprint(have) != fmt.Sprint(want) {
					t.Fatalf("batch %d:\n got %v\nwant %v", batch, have, want)
				}
			}
		})
	}
}

func cell(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "NULL"
	}
	return format.FormatValue(a, i)
}
