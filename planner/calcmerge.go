package planner

import "github.com/streamsql/streamsql/catalog"

// Adjacent Calcs of a task chain are merged into one (as Calcite's
// CalcMergeRule): the outer Calc's filter and projections are rewritten
// over the inner Calc's input, so that a chain of views computes only the
// columns the query keeps (the Nexmark views project every field of a ROW,
// a query then keeps two). The filters combine with AND, which evaluates
// its right side only on the rows its left side keeps, so an expression
// that fails on rows the inner filter drops still never sees them.

// mergeCalc returns the Calc doing inner then outer, or false when merging
// would compute an inner expression more than once (an inner projection
// that is not a column, a constant or a ROW field, used twice by outer).
func mergeCalc(inner, outer *CalcOp) (*CalcOp, bool) {
	if inner.Projs != nil {
		uses := make([]int, len(inner.Projs))
		countRefs(outer.Filter, uses)
		for _, p := range outer.Projs {
			countRefs(p, uses)
		}
		if outer.Projs == nil {
			for i := range uses {
				uses[i]++
			}
		}
		for i, n := range uses {
			if n > 1 && !isFieldPick(inner.Projs[i]) {
				return nil, false
			}
		}
	}
	m := &CalcOp{Out: outer.Out, Mode: outer.Mode, Filter: inner.Filter}
	if f := substitute(outer.Filter, inner.Projs); f != nil {
		if m.Filter == nil {
			m.Filter = f
		} else {
			m.Filter = &Call{Fn: "and", Args: []Expr{m.Filter, f}, T: catalog.Boolean}
		}
	}
	switch {
	case outer.Projs == nil:
		m.Projs = inner.Projs
	default:
		m.Projs = make([]Expr, len(outer.Projs))
		for i, p := range outer.Projs {
			m.Projs[i] = substitute(p, inner.Projs)
		}
	}
	return m, true
}

// substitute rewrites e over the input of projections projs (nil: e is
// already over it).
func substitute(e Expr, projs []Expr) Expr {
	if e == nil || projs == nil {
		return e
	}
	switch x := e.(type) {
	case *ColRef:
		return projs[x.Index]
	case *Call:
		c := *x
		c.Args = make([]Expr, len(x.Args))
		for i, a := range x.Args {
			c.Args[i] = substitute(a, projs)
		}
		return &c
	}
	return e
}

// isFieldPick reports whether e is a column, a constant or a field of a
// ROW it picks: as cheap to repeat as a column (no copy).
func isFieldPick(e Expr) bool {
	switch x := e.(type) {
	case *ColRef, *Literal:
		return true
	case *Call:
		return x.Fn == "field" && len(x.Args) == 2 && isFieldPick(x.Args[0])
	}
	return false
}

func countRefs(e Expr, uses []int) {
	switch x := e.(type) {
	case *ColRef:
		uses[x.Index]++
	case *Call:
		for _, a := range x.Args {
			countRefs(a, uses)
		}
	}
}
