package planner

// WITH name [(c1, ...)] AS (query), ...: common table expressions. A CTE
// is visible to the CTEs after it and to the query of its WITH, and
// shadows tables and views of the same name. Every reference plans the
// CTE's query again (as a view's), so each has its own operators and state.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// cte is a common table expression in scope.
type cte struct {
	name string // lower-case
	node ast.ResultSetNode
	cols []string
	ctx  *parser.QueryContext
}

// pushWith brings the CTEs of w into scope; pop removes them again.
func (p *Planner) pushWith(w *ast.WithClause, ctx *parser.QueryContext) (pop func(), err error) {
	if w == nil {
		return func() {}, nil
	}
	if w.IsRecursive {
		return nil, ctx.Errorf("RECURSIVE", "WITH RECURSIVE is not supported (Flink SQL has no recursive queries)")
	}
	depth := len(p.ctes)
	restore := func() { p.ctes = p.ctes[:depth] }
	seen := map[string]bool{}
	for _, c := range w.CTEs {
		name := c.Name.L
		if seen[name] {
			restore()
			return nil, ctx.Errorf(c.Name.O, "WITH names '%s' twice", c.Name.O)
		}
		seen[name] = true
		var cols []string
		for _, cn := range c.ColNameList {
			cols = append(cols, cn.O)
		}
		if c.Query == nil || c.Query.Query == nil {
			restore()
			return nil, ctx.Errorf(c.Name.O, "WITH %s needs a query", c.Name.O)
		}
		p.ctes = append(p.ctes, cte{name: name, node: c.Query.Query, cols: cols, ctx: ctx})
		// check the query now: errors show at their place, not at a reference
		r, err := p.buildCTE(len(p.ctes)-1, c.Name.O)
		if err != nil {
			restore()
			return nil, err
		}
		if len(cols) > 0 && len(cols) != len(r.schema)-r.hidden {
			restore()
			return nil, ctx.Errorf(c.Name.O, "WITH %s lists %d columns but its query produces %d", c.Name.O, len(cols), len(r.schema)-r.hidden)
		}
	}
	return restore, nil
}

// lookupCTE returns the innermost CTE named name (index into p.ctes), or -1.
func (p *Planner) lookupCTE(name string) int {
	name = strings.ToLower(name)
	for i := len(p.ctes) - 1; i >= 0; i-- {
		if p.ctes[i].name == name {
			return i
		}
	}
	return -1
}

// buildCTE plans the query of CTE i (seeing only the CTEs before it),
// named as written (as), with its column list applied.
func (p *Planner) buildCTE(i int, as string) (*rel, error) {
	c := p.ctes[i]
	saved := p.ctes
	p.ctes = p.ctes[:i:i]
	defer func() { p.ctes = saved }()
	var r *rel
	var err error
	switch x := c.node.(type) {
	case *ast.SelectStmt:
		r, err = p.buildSelect(x, c.ctx)
	case *ast.SetOprStmt:
		r, err = p.buildSetOpr(x, c.ctx)
	default:
		return nil, c.ctx.Errorf(as, "unsupported query in WITH %s", as)
	}
	if err != nil {
		return nil, err
	}
	if r.hidden > 0 {
		r = dropHidden(r)
	}
	if len(c.cols) > 0 && len(c.cols) == len(r.schema) {
		out := *r
		out.schema = append(catalog.Schema(nil), r.schema...)
		for j := range out.schema {
			out.schema[j].Name = c.cols[j]
		}
		r = &out
	}
	return r.qualify(as), nil
}

// cteRef plans a FROM reference to CTE i.
func (p *Planner) cteRef(i int, tn *ast.TableName, ctx *parser.QueryContext) (*rel, error) {
	if ref, ok := ctx.TableRef(tn); ok && ref.Options != nil {
		return nil, &parser.Error{Pos: ref.HintPos, Msg: fmt.Sprintf("'%s' is a WITH query: an OPTIONS hint applies to tables only", tn.Name.O)}
	}
	return p.buildCTE(i, tn.Name.O)
}

// Subqueries in WHERE and in the select list.
//
// A top-level conjunct of WHERE of the form
//
//	x [NOT] IN (SELECT y ...)        [NOT] EXISTS (SELECT ... WHERE ...)
//	x <op> (SELECT <one value> ...)  (a scalar subquery)
//
// becomes a join with the subquery, as Flink decorrelates them:
//
//   - IN: a SemiJoin on x = y; EXISTS: a SemiJoin on the subquery's WHERE
//     when it refers to the outer query (correlated: its equalities
//     between the two become keys, the rest the residual), else on TRUE.
//   - NOT EXISTS: an AntiJoin on the same condition. NOT IN is null-aware
//     as in Flink: x NOT IN (subquery) keeps a row only when no y equals
//     x and, unless the subquery is empty, neither x nor any y is NULL. So
//     when x or y is nullable the anti join's condition is
//     x = y OR x IS NULL OR y IS NULL (no keys: parallelism 1); when both
//     are NOT NULL it is the key x = y.
//   - a scalar subquery: an InnerJoin without keys with the subquery's
//     (single-row) result, the comparison as its residual, then the outer
//     columns again. In the select list, a LeftJoin without condition (a
//     NULL when the subquery is empty). A subquery giving more than one
//     row is not detected (Flink fails at run time).
//
// A correlated subquery may only be a simple SELECT (no GROUP BY,
// aggregates, DISTINCT, ORDER BY or LIMIT), its outer columns qualified
// when a name exists on both sides. Subqueries elsewhere (under OR or NOT,
// in HAVING or GROUP BY) are not supported yet: a clear error.

// subqueryConj is a WHERE conjunct that is a subquery predicate.
type subqueryConj struct {
	node ast.ExprNode
	typ  JoinType
	in   *ast.PatternInExpr // IN / NOT IN
	sub  *ast.SubqueryExpr
	// scalar comparison: the conjunct, with sub somewhere in it
	scalar bool
}

// whereConjuncts splits a WHERE into its top-level AND conjuncts.
func whereConjuncts(n ast.ExprNode) []ast.ExprNode {
	switch x := n.(type) {
	case *ast.BinaryOperationExpr:
		if x.Op == opcode.LogicAnd {
			return append(whereConjuncts(x.L), whereConjuncts(x.R)...)
		}
	case *ast.ParenthesesExpr:
		if b, ok := x.Expr.(*ast.BinaryOperationExpr); ok && b.Op == opcode.LogicAnd {
			return whereConjuncts(b)
		}
	}
	return []ast.ExprNode{n}
}

// classifySubquery reports whether conjunct c is a subquery predicate that
// can become a join.
func classifySubquery(c ast.ExprNode) (subqueryConj, bool) {
	n := unparen(c)
	if u, ok := n.(*ast.UnaryOperationExpr); ok && u.Op == opcode.Not {
		if ex, ok := unparen(u.V).(*ast.ExistsSubqueryExpr); ok {
			if sq, ok := ex.Sel.(*ast.SubqueryExpr); ok {
				typ := AntiJoin
				if ex.Not {
					typ = SemiJoin
				}
				return subqueryConj{node: c, typ: typ, sub: sq}, true
			}
		}
	}
	switch x := n.(type) {
	case *ast.ExistsSubqueryExpr:
		if sq, ok := x.Sel.(*ast.SubqueryExpr); ok {
			typ := SemiJoin
			if x.Not {
				typ = AntiJoin
			}
			return subqueryConj{node: c, typ: typ, sub: sq}, true
		}
	case *ast.PatternInExpr:
		if sq, ok := x.Sel.(*ast.SubqueryExpr); ok {
			typ := SemiJoin
			if x.Not {
				typ = AntiJoin
			}
			return subqueryConj{node: c, typ: typ, in: x, sub: sq}, true
		}
	case *ast.BinaryOperationExpr:
		switch x.Op {
		case opcode.EQ, opcode.NE, opcode.LT, opcode.LE, opcode.GT, opcode.GE:
			f := &subqueryFinder{}
			x.Accept(f)
			if sq, ok := f.found.(*ast.SubqueryExpr); ok {
				return subqueryConj{node: c, typ: InnerJoin, sub: sq, scalar: true}, true
			}
		}
	}
	return subqueryConj{}, false
}

// buildSubquery plans the query of a subquery expression.
func (p *Planner) buildSubquery(sq *ast.SubqueryExpr, ctx *parser.QueryContext) (*rel, error) {
	switch q := sq.Query.(type) {
	case *ast.SelectStmt:
		return p.buildSelect(q, ctx)
	case *ast.SetOprStmt:
		return p.buildSetOpr(q, ctx)
	}
	return nil, exprErr(ctx, sq, "SELECT", "unsupported subquery")
}

// simpleSelect reports whether sel can be decorrelated here.
func simpleSelect(sel *ast.SelectStmt) bool {
	return sel.From != nil && sel.GroupBy == nil && sel.Having == nil && !sel.Distinct && sel.OrderBy == nil &&
		sel.Limit == nil && sel.With == nil && !containsAgg(sel.Fields.Fields)
}

// applySubquery joins in with the subquery predicate c.
func (p *Planner) applySubquery(in *rel, c subqueryConj, ctx *parser.QueryContext) (*rel, error) {
	at := ctx.PosOf(c.sub)
	if _, pp, ok := ctx.TokenBefore(c.sub); ok && c.in != nil {
		at = pp
	}
	nl := len(in.schema) - in.hidden
	if in.hidden > 0 {
		in = dropHidden(in)
	}
	// Uncorrelated first: the subquery plans on its own.
	sub, err := p.buildSubquery(c.sub, ctx)
	correlated := false
	var corrCond Expr
	var subSel ast.ExprNode // the IN subquery's select expression (correlated)
	if err != nil {
		sel, ok := c.sub.Query.(*ast.SelectStmt)
		if !ok || !simpleSelect(sel) || c.scalar {
			var pe *parser.Error
			if errors.As(err, &pe) && strings.Contains(pe.Msg, "not found") {
				return nil, &parser.Error{Pos: pe.Pos, Msg: pe.Msg + " (a subquery that refers to the outer query is supported only as a plain SELECT ... FROM ... WHERE in [NOT] EXISTS or [NOT] IN: no GROUP BY, aggregates, DISTINCT, ORDER BY or LIMIT, and not as a scalar subquery)"}
			}
			return nil, err
		}
		// Correlated: FROM of the subquery, its WHERE over outer ++ inner.
		from, ferr := p.buildFrom(sel.From.TableRefs, ctx)
		if ferr != nil {
			return nil, ferr
		}
		if from, ferr = p.finalizeJoins(from, ctx); ferr != nil {
			return nil, ferr
		}
		if from.hidden > 0 {
			from = dropHidden(from)
		}
		both := joinOf(in, from, InnerJoin, at)
		if sel.Where != nil {
			b := &exprBuilder{p: p, ctx: ctx, in: both, clause: "WHERE"}
			cond, cerr := b.build(sel.Where)
			if cerr != nil {
				return nil, cerr
			}
			corrCond = cond
		}
		if c.in != nil {
			if len(sel.Fields.Fields) != 1 || sel.Fields.Fields[0].WildCard != nil {
				return nil, exprErr(ctx, c.sub, "SELECT", "the subquery of IN must select one column")
			}
			subSel = sel.Fields.Fields[0].Expr
		}
		sub, correlated = from, true
	}
	if sub.hidden > 0 {
		sub = dropHidden(sub)
	}
	both := joinOf(in, sub, InnerJoin, at)
	var cond Expr
	switch {
	case c.in != nil:
		var y Expr
		if correlated {
			b := &exprBuilder{p: p, ctx: ctx, in: both, clause: "SELECT"}
			if y, err = b.build(subSel); err != nil {
				return nil, err
			}
		} else {
			if len(sub.schema) != 1 {
				return nil, exprErr(ctx, c.sub, "SELECT", "the subquery of IN must select one column, it selects %d", len(sub.schema))
			}
			y = &ColRef{Index: nl, Name: sub.schema[0].Name, T: sub.schema[0].Type}
		}
		if _, isRow := unparen(c.in.Expr).(*ast.RowExpr); isRow {
			return nil, exprErr(ctx, c.in.Expr, "IN", "(a, b) IN (SELECT ...) is not supported yet; write EXISTS (SELECT ... WHERE x = a AND y = b)")
		}
		b := &exprBuilder{p: p, ctx: ctx, in: in, clause: "WHERE"}
		x, err := b.build(c.in.Expr)
		if err != nil {
			return nil, err
		}
		eq, err := ResolveCall("=", []Expr{x, y})
		if err != nil {
			return nil, exprErr(ctx, c.in.Expr, "IN", "cannot compare %s with the subquery's %s", x.Type(), y.Type())
		}
		cond = eq
		if c.typ == AntiJoin && (!x.Type().NotNull || !y.Type().NotNull) {
			// null-aware NOT IN: x = y OR x IS NULL OR y IS NULL
			xn, _ := ResolveCall("is_null", []Expr{x})
			yn, _ := ResolveCall("is_null", []Expr{y})
			if xn == nil || yn == nil {
				return nil, exprErr(ctx, c.in.Expr, "IN", "NOT IN over nullable columns is not supported yet")
			}
			or1, _ := ResolveCall("or", []Expr{eq, xn})
			cond, _ = ResolveCall("or", []Expr{or1, yn})
		}
		cond = andOf([]Expr{corrCond, cond})
	case c.scalar:
		if len(sub.schema) != 1 {
			return nil, exprErr(ctx, c.sub, "SELECT", "a scalar subquery must select one column, this one selects %d", len(sub.schema))
		}
		col := &ColRef{Index: nl, Name: sub.schema[0].Name, T: sub.schema[0].Type.Nullable()}
		b := &exprBuilder{p: p, ctx: ctx, in: both, clause: "WHERE", hook: func(n ast.ExprNode) (Expr, bool, error) {
			if n == c.sub {
				return col, true, nil
			}
			return nil, false, nil
		}}
		if cond, err = b.build(c.node); err != nil {
			return nil, err
		}
	default: // EXISTS
		cond = corrCond
	}
	typ := c.typ
	j := joinOf(in, sub, typ, at)
	j.join.cond = cond
	fin, err := p.finalizeJoins(j, ctx)
	if err != nil {
		return nil, err
	}
	if !c.scalar {
		return fin, nil
	}
	// the outer columns again
	projs := make([]Expr, nl)
	for i := range projs {
		projs[i] = &ColRef{Index: i, Name: in.schema[i].Name, T: fin.schema[i].Type}
	}
	return &rel{kind: relCalc, input: fin, schema: in.schema[:nl], quals: in.quals[:nl], mode: fin.mode, projs: projs}, nil
}

// splitWhere separates the subquery predicates among the conjuncts of
// where from the rest (rebuilt as one AND, nil when none).
func splitWhere(where ast.ExprNode) (rest ast.ExprNode, subs []subqueryConj) {
	if where == nil {
		return nil, nil
	}
	for _, c := range whereConjuncts(where) {
		if s, ok := classifySubquery(c); ok {
			subs = append(subs, s)
			continue
		}
		if rest == nil {
			rest = c
		} else {
			rest = &ast.BinaryOperationExpr{Op: opcode.LogicAnd, L: rest, R: c}
		}
	}
	return rest, subs
}

// selectSubqueries returns the scalar subqueries of sel's select list
// (nil: none, or sel aggregates, where they are not supported yet).
func selectSubqueries(sel *ast.SelectStmt) []*ast.SubqueryExpr {
	if sel.Fields == nil || sel.GroupBy != nil || sel.Having != nil || containsAgg(sel.Fields.Fields) {
		return nil
	}
	var out []*ast.SubqueryExpr
	for _, f := range sel.Fields.Fields {
		if f.Expr == nil {
			continue
		}
		v := &allSubqueries{}
		f.Expr.Accept(v)
		if v.other {
			return nil // IN / EXISTS in the select list: noSubqueries reports it
		}
		out = append(out, v.found...)
	}
	return out
}

type allSubqueries struct {
	found []*ast.SubqueryExpr
	other bool
}

func (v *allSubqueries) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.SubqueryExpr:
		v.found = append(v.found, x)
		return n, true
	case *ast.PatternInExpr:
		if x.Sel != nil {
			v.other = true
			return n, true
		}
	case *ast.ExistsSubqueryExpr, *ast.CompareSubqueryExpr:
		v.other = true
		return n, true
	}
	return n, false
}
func (v *allSubqueries) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// joinSelectSubqueries left-joins in with each (uncorrelated, single-row)
// scalar subquery of the select list, without a condition, and returns the
// hook that resolves each subquery to its column (hidden from *).
func (p *Planner) joinSelectSubqueries(in *rel, subs []*ast.SubqueryExpr, ctx *parser.QueryContext) (*rel, func(ast.ExprNode) (Expr, bool, error), error) {
	cols := map[*ast.SubqueryExpr]*ColRef{}
	if in.hidden > 0 {
		in = dropHidden(in)
	}
	nOuter := len(in.schema)
	for _, sq := range subs {
		sub, err := p.buildSubquery(sq, ctx)
		if err != nil {
			var pe *parser.Error
			if errors.As(err, &pe) && strings.Contains(pe.Msg, "not found") {
				return nil, nil, &parser.Error{Pos: pe.Pos, Msg: pe.Msg + " (a scalar subquery in the select list must not refer to the outer query)"}
			}
			return nil, nil, err
		}
		if sub.hidden > 0 {
			sub = dropHidden(sub)
		}
		if len(sub.schema) != 1 {
			return nil, nil, exprErr(ctx, sq, "SELECT", "a scalar subquery must select one column, this one selects %d", len(sub.schema))
		}
		idx := len(in.schema)
		j := joinOf(in, sub, LeftJoin, ctx.PosOf(sq))
		if in, err = p.finalizeJoins(j, ctx); err != nil {
			return nil, nil, err
		}
		cols[sq] = &ColRef{Index: idx, Name: in.schema[idx].Name, T: in.schema[idx].Type}
	}
	out := *in
	out.hidden = len(in.schema) - nOuter
	out.scalarSubs = true
	hook := func(n ast.ExprNode) (Expr, bool, error) {
		if sq, ok := n.(*ast.SubqueryExpr); ok {
			if c, ok := cols[sq]; ok {
				return c, true, nil
			}
		}
		return nil, false, nil
	}
	return &out, hook, nil
}
