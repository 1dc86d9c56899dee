package planner

import (
	"testing"

	"github.com/streamsql/streamsql/catalog"
)

// TestMergeCalc: the outer Calc is rewritten over the inner one's input,
// filters are ANDed (inner first), and a computed inner column used twice
// is not merged (it would be computed twice).
func TestMergeCalc(t *testing.T) {
	b := catalog.BigInt
	col := func(i int) Expr { return &ColRef{Index: i, Name: "c", T: b} }
	plus := func(x, y Expr) Expr { return &Call{Fn: "+", Args: []Expr{x, y}, T: b} }
	gt := func(x Expr, v int64) Expr {
		return &Call{Fn: ">", Args: []Expr{x, &Literal{Value: v, T: b}}, T: catalog.Boolean}
	}
	inner := &CalcOp{Filter: gt(col(0), 1), Projs: []Expr{plus(col(0), col(1)), col(2)}}
	outer := &CalcOp{Filter: gt(col(1), 5), Projs: []Expr{col(0)}}
	m, ok := mergeCalc(inner, outer)
	if !ok {
		t.Fatal("not merged")
	}
	if got := m.Filter.String(); got != "and(>($0:c, 1), >($2:c, 5))" {
		t.Errorf("filter %s", got)
	}
	if len(m.Projs) != 1 || m.Projs[0].String() != "+($0:c, $1:c)" {
		t.Errorf("projections %v", m.Projs)
	}
	twice := &CalcOp{Projs: []Expr{col(0), plus(col(0), col(1))}}
	if _, ok := mergeCalc(inner, twice); ok {
		t.Error("merged although the inner sum would be computed twice")
	}
	pick := &CalcOp{Projs: []Expr{col(1), col(1)}} // a column used twice is fine
	if _, ok := mergeCalc(inner, pick); !ok {
		t.Error("a picked column used twice was not merged")
	}
}
