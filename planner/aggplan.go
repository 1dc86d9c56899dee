package planner

import (
	"fmt"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// buildAggregate plans GROUP BY / aggregates / HAVING:
//
//	in -> Calc(keys..., agg args...) -> GroupAggregate -> Calc(HAVING, select list)
func (p *Planner) buildAggregate(sel *ast.SelectStmt, in *rel, ctx *parser.QueryContext) (*rel, error) {
	win, err := p.windowOfAggregate(sel, in, ctx) // non-nil: a window aggregation (window.go)
	if err != nil {
		return nil, err
	}
	pre := &exprBuilder{p: p, ctx: ctx, in: in, clause: "GROUP BY"}
	var preProjs []Expr
	var preSchema catalog.Schema
	var keyStrs []string
	var keyNames []string
	if sel.GroupBy != nil {
		if sel.GroupBy.Rollup {
			return nil, ctx.Errorf("ROLLUP", "GROUP BY ... WITH ROLLUP is not supported yet")
		}
		for _, item := range sel.GroupBy.Items {
			if win != nil && win.groupItem(item.Expr, nil) {
				continue // the legacy window call
			}
			e, err := pre.build(item.Expr)
			if err != nil {
				return nil, err
			}
			if win != nil && win.groupItem(item.Expr, e) {
				continue // window_start, window_end, window_time
			}
			name := fmt.Sprintf("$f%d", len(preProjs))
			if cn, ok := unparen(item.Expr).(*ast.ColumnNameExpr); ok {
				name = cn.Name.Name.O
			}
			preProjs = append(preProjs, e)
			preSchema = append(preSchema, catalog.Column{Name: name, Type: e.Type()})
			keyStrs = append(keyStrs, e.String())
			keyNames = append(keyNames, name)
		}
	}
	nKeys := len(preProjs)
	aggBase := nKeys // output column of the first aggregate
	if win != nil {
		cols := []int{win.timeCol}
		if win.attached { // the rows' window bounds (window.go)
			cols = []int{win.startCol, win.endCol}
		}
		for _, i := range cols {
			c := in.schema[i]
			preProjs = append(preProjs, &ColRef{Index: i, Name: c.Name, T: c.Type})
			preSchema = append(preSchema, c)
		}
		aggBase += len(windowColumns)
	}

	// Collect the aggregate calls of the select list and HAVING.
	var calls []AggCall
	var callKeys []string
	argIndex := map[string]int{}
	distinctOf := map[string][]int{} // COUNT(DISTINCT) calls by their unfiltered argument
	var bases []string               // by call: that argument
	collect := func(n ast.ExprNode) error {
		var err error
		n.Accept(&aggVisitor{fn: func(a *ast.AggregateFuncExpr) {
			if err != nil {
				return
			}
			fn := strings.ToLower(a.F)
			call := AggCall{Fn: fn, Arg: -1, Distinct: a.Distinct}
			switch fn {
			case "count", "sum", "min", "max", "avg":
			default:
				err = aggErr(ctx, a, "unsupported aggregate function %s (supported: COUNT, SUM, MIN, MAX, AVG)", strings.ToUpper(a.F))
				return
			}
			if a.Distinct && fn != "count" {
				err = aggErr(ctx, a, "DISTINCT is supported only in COUNT(DISTINCT x)")
				return
			}
			base := "" // a COUNT(DISTINCT)'s argument without its FILTER
			isStar := fn == "count" && len(a.Args) == 1 && isStarArg(a.Args[0])
			if _, _, hasFilter := ctx.AggFilter(a); hasFilter && isStar {
				isStar = false // COUNT(*) FILTER (WHERE c) counts CASE WHEN c THEN 1 END
			}
			if isStar {
				call.Fn = "count_star"
				call.T = catalog.BigInt.WithNotNull(true)
			} else {
				if len(a.Args) != 1 {
					err = aggErr(ctx, a, "%s takes exactly one argument", strings.ToUpper(fn))
					return
				}
				arg, e := p.aggArg(ctx, in, a, fn)
				if e != nil {
					err = e
					return
				}
				call.narrow = narrowAggType(ctx, in, a, fn, p)
				t, e := aggResultType(fn, arg.Type())
				if e != nil {
					err = aggErr(ctx, a, "%v", e)
					return
				}
				call.T = t
				call.ArgType = arg.Type()
				s := arg.String()
				idx, ok := argIndex[s]
				if !ok {
					idx = len(preProjs)
					argIndex[s] = idx
					preProjs = append(preProjs, arg)
					preSchema = append(preSchema, catalog.Column{Name: fmt.Sprintf("$f%d", idx), Type: arg.Type()})
				}
				call.Arg = idx
				if call.Distinct {
					base = s
					if c, ok := arg.(*Call); ok && c.Fn == "case" && len(c.Args) == 3 {
						if _, _, hasFilter := ctx.AggFilter(a); hasFilter {
							base = c.Args[1].String() // CASE WHEN cond THEN x END: x
						}
					}
				}
			}
			k := call.String()
			for _, ck := range callKeys {
				if ck == k {
					return
				}
			}
			call.Name = fmt.Sprintf("EXPR$%d", len(calls))
			if call.Distinct {
				distinctOf[base] = append(distinctOf[base], len(calls))
			}
			bases = append(bases, base)
			calls = append(calls, call)
			callKeys = append(callKeys, k)
		}})
		return err
	}
	for _, f := range sel.Fields.Fields {
		if f.Expr != nil {
			if err := collect(f.Expr); err != nil {
				return nil, err
			}
		}
	}
	if sel.Having != nil {
		if err := collect(sel.Having.Expr); err != nil {
			return nil, err
		}
	}

	share := 0
	for i := range calls {
		if !calls[i].Distinct || calls[i].Share != 0 {
			continue
		}
		ids := distinctOf[bases[i]]
		share++
		for _, j := range ids {
			calls[j].Share = share
		}
	}

	var aggRel *rel
	if win != nil {
		if aggRel, err = p.windowAggRel(win, preProjs, preSchema, nKeys, keyNames, calls, ctx); err != nil {
			return nil, err
		}
	} else {
		preRel := &rel{kind: relCalc, input: in, schema: preSchema, quals: make([]string, len(preSchema)), mode: in.mode, projs: preProjs}
		keys := make([]int, nKeys)
		outSchema := append(catalog.Schema{}, preSchema[:nKeys]...)
		for i := range keys {
			keys[i] = i
		}
		for _, c := range calls {
			outSchema = append(outSchema, catalog.Column{Name: c.Name, Type: c.T})
		}
		op := &AggOp{Keys: keys, Aggs: calls, InputMode: in.mode, Out: outSchema, MaxParallel: p.MaxParallelism, KeyNames: keyNames}
		aggRel = &rel{kind: relAgg, input: preRel, schema: outSchema, quals: make([]string, len(outSchema)), mode: Retract, agg: op, describ: op.Describe()}
	}
	outSchema := aggRel.schema

	// After the aggregation, expressions resolve aggregate calls and grouping
	// keys to the aggregation's output columns.
	hook := func(n ast.ExprNode) (Expr, bool, error) {
		if win != nil {
			if e, ok, err := win.auxiliary(n, nKeys, ctx); ok {
				return e, true, err
			}
		}
		if a, ok := n.(*ast.AggregateFuncExpr); ok {
			var k string
			fn := strings.ToLower(a.F)
			_, _, hasFilter := ctx.AggFilter(a)
			if fn == "count" && len(a.Args) == 1 && isStarArg(a.Args[0]) && !hasFilter {
				k = "COUNT(*)"
			} else {
				arg, err := p.aggArg(ctx, in, a, fn)
				if err != nil {
					return nil, true, err
				}
				k = AggCall{Fn: fn, Arg: argIndex[arg.String()], Distinct: a.Distinct}.String()
			}
			for i, ck := range callKeys {
				if ck == k {
					var e Expr = &ColRef{Index: aggBase + i, Name: calls[i].Name, T: calls[i].T}
					if nt := calls[i].narrow; nt.Kind != catalog.KindNull {
						// SUM/AVG of TINYINT, SMALLINT, FLOAT: computed wide, typed as the input (Flink)
						e = &Call{Fn: "cast", Args: []Expr{e}, T: nt.WithNotNull(calls[i].T.NotNull)}
					}
					return e, true, nil
				}
			}
			return nil, true, aggErr(ctx, a, "internal error: aggregate %s not collected", k)
		}
		switch n.(type) {
		case ast.ValueExpr, *ast.ParenthesesExpr:
		default:
			ab := &exprBuilder{p: p, ctx: ctx, in: in}
			e, err := ab.build(n)
			if err != nil {
				if _, isCol := n.(*ast.ColumnNameExpr); isCol {
					return nil, true, err
				}
				return nil, false, nil // contains aggregates: build its parts
			}
			s := e.String()
			if j, ok := win.prop(s); ok {
				return &ColRef{Index: nKeys + j, Name: windowColumns[j], T: outSchema[nKeys+j].Type}, true, nil
			}
			for i, ks := range keyStrs {
				if ks == s {
					return &ColRef{Index: i, Name: outSchema[i].Name, T: outSchema[i].Type}, true, nil
				}
			}
			if cn, isCol := n.(*ast.ColumnNameExpr); isCol {
				return nil, true, aggErr(ctx, cn, "column '%s' must appear in the GROUP BY clause or be used in an aggregate function", cn.Name.Name.O)
			}
		}
		return nil, false, nil
	}
	cur := aggRel
	if sel.Having != nil {
		if err := havingAlias(sel, in, ctx); err != nil {
			return nil, err
		}
		hb := &exprBuilder{p: p, ctx: ctx, in: aggRel, hook: hook, clause: "HAVING"}
		cond, err := hb.build(sel.Having.Expr)
		if err != nil {
			return nil, err
		}
		if cond.Type().Kind != catalog.KindBoolean {
			return nil, exprErr(ctx, sel.Having.Expr, "HAVING", "HAVING condition must be BOOLEAN, got %s", cond.Type())
		}
		cur = &rel{kind: relCalc, input: aggRel, schema: aggRel.schema, quals: aggRel.quals, mode: Retract, filter: cond}
	}
	out, err := p.buildProjection(sel.Fields.Fields, cur, ctx, hook)
	if err != nil {
		return nil, err
	}
	if sel.Distinct {
		return p.distinct(out), nil
	}
	return out, nil
}

// aggArg builds the argument of aggregate call a over in. With FILTER
// (WHERE cond) the argument becomes CASE WHEN cond THEN arg END (COUNT(*):
// THEN 1): every aggregate ignores NULLs, so this is FILTER's semantics,
// for DISTINCT aggregates too, and retractions stay exact.
func (p *Planner) aggArg(ctx *parser.QueryContext, in *rel, a *ast.AggregateFuncExpr, fn string) (Expr, error) {
	ab := &exprBuilder{p: p, ctx: ctx, in: in, clause: strings.ToUpper(fn)}
	var arg Expr
	if fn == "count" && len(a.Args) == 1 && isStarArg(a.Args[0]) {
		arg = &Literal{Value: int32(1), T: catalog.Int.WithNotNull(true)}
	} else {
		var err error
		if arg, err = ab.build(a.Args[0]); err != nil {
			return nil, err
		}
	}
	if arg.Type().Kind == catalog.KindNull {
		arg = &Literal{T: catalog.Int}
	}
	if fn == "sum" || fn == "avg" {
		// SUM and AVG of TINYINT and SMALLINT accumulate in INT, of FLOAT
		// in DOUBLE (Flink keeps the input type; see docs/sql.md)
		switch arg.Type().Kind {
		case catalog.KindTinyInt, catalog.KindSmallInt:
			arg = coerce(arg, catalog.Int)
		case catalog.KindFloat:
			arg = coerce(arg, catalog.Double)
		}
	}
	cn, at, ok := ctx.AggFilter(a)
	if !ok {
		return arg, nil
	}
	fb := &exprBuilder{p: p, ctx: ctx, in: in, clause: "FILTER"}
	cond, err := fb.build(cn)
	if err != nil {
		return nil, err
	}
	if cond.Type().Kind != catalog.KindBoolean && cond.Type().Kind != catalog.KindNull {
		return nil, &parser.Error{Pos: at, Msg: fmt.Sprintf("FILTER (WHERE ...) condition must be BOOLEAN, got %s", cond.Type().Nullable())}
	}
	if _, bad := containsAggNode(cn); bad {
		return nil, &parser.Error{Pos: at, Msg: "FILTER (WHERE ...) cannot contain an aggregate function"}
	}
	t := arg.Type()
	if t.Kind == catalog.KindNull {
		t = catalog.Int
	}
	return &Call{Fn: "case", Args: []Expr{coerce(cond, catalog.Boolean), coerce(arg, t), &Literal{T: t.Nullable()}}, T: t.Nullable()}, nil
}

// narrowAggType is the input type of SUM or AVG over TINYINT, SMALLINT
// or FLOAT (accumulated as INT or DOUBLE, then cast back), else NULL.
func narrowAggType(ctx *parser.QueryContext, in *rel, a *ast.AggregateFuncExpr, fn string, p *Planner) catalog.Type {
	if (fn != "sum" && fn != "avg") || len(a.Args) != 1 {
		return catalog.Null
	}
	ab := &exprBuilder{p: p, ctx: ctx, in: in}
	arg, err := ab.build(a.Args[0])
	if err != nil {
		return catalog.Null
	}
	switch k := arg.Type().Kind; k {
	case catalog.KindTinyInt, catalog.KindSmallInt, catalog.KindFloat:
		return catalog.Type{Kind: k}
	}
	return catalog.Null
}

func containsAggNode(n ast.ExprNode) (ast.ExprNode, bool) {
	found := false
	n.Accept(&aggFinder{found: &found})
	return nil, found
}

// havingAlias reports a HAVING that names a select-list alias that is not
// a column of the input: Flink (Calcite's default conformance) does not
// resolve aliases in HAVING, so the error says so, at the use.
func havingAlias(sel *ast.SelectStmt, in *rel, ctx *parser.QueryContext) error {
	aliases := map[string]bool{}
	for _, f := range sel.Fields.Fields {
		if f.AsName.L != "" {
			aliases[f.AsName.L] = true
		}
	}
	var bad *ast.ColumnNameExpr
	sel.Having.Expr.Accept(&columnVisitor{fn: func(c *ast.ColumnNameExpr) {
		if bad == nil && c.Name.Table.L == "" && aliases[c.Name.Name.L] && in.schema.Index(c.Name.Name.O) < 0 {
			bad = c
		}
	}})
	if bad == nil {
		return nil
	}
	return aggErr(ctx, bad, "column '%s' not found: HAVING cannot refer to the select-list alias '%s' (as in Flink); repeat its expression", bad.Name.Name.O, bad.Name.Name.O)
}

type columnVisitor struct{ fn func(*ast.ColumnNameExpr) }

func (v *columnVisitor) Enter(n ast.Node) (ast.Node, bool) {
	if c, ok := n.(*ast.ColumnNameExpr); ok {
		v.fn(c)
	}
	return n, false
}
func (v *columnVisitor) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// aggErr builds an error at n (an aggregate call or a column).
func aggErr(ctx *parser.QueryContext, n ast.ExprNode, format string, args ...any) error {
	word := ""
	switch x := n.(type) {
	case *ast.AggregateFuncExpr:
		word = x.F
	case *ast.ColumnNameExpr:
		word = x.Name.Name.O
	}
	return exprErr(ctx, n, word, format, args...)
}

// exprErr builds an error at expression n, or at the first occurrence of
// word when n has no position.
func exprErr(ctx *parser.QueryContext, n ast.Node, word, format string, args ...any) error {
	if ctx.HasPos(n) || word == "" {
		return ctx.ErrorAt(n, format, args...)
	}
	return ctx.Errorf(word, format, args...)
}

func isStarArg(n ast.ExprNode) bool {
	// TiDB parses COUNT(*) as COUNT(1) with a ValueExpr.
	if v, ok := n.(ast.ValueExpr); ok {
		return v.GetValue() != nil && fmt.Sprint(v.GetValue()) == "1"
	}
	return false
}

type aggVisitor struct{ fn func(*ast.AggregateFuncExpr) }

func (v *aggVisitor) Enter(n ast.Node) (ast.Node, bool) {
	if a, ok := n.(*ast.AggregateFuncExpr); ok {
		v.fn(a)
		return n, true
	}
	return n, false
}
func (v *aggVisitor) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// aggResultType follows Flink: COUNT is BIGINT NOT NULL; SUM and AVG keep the
// input type (SUM of DECIMAL(p,s) is DECIMAL(38,s); AVG of DECIMAL(p,s) is
// DECIMAL(38, max(6,s))); MIN and MAX keep the input type.
func aggResultType(fn string, t catalog.Type) (catalog.Type, error) {
	t = t.Nullable()
	switch fn {
	case "count":
		return catalog.BigInt.WithNotNull(true), nil
	case "sum", "avg":
		switch t.Kind {
		case catalog.KindInt, catalog.KindBigInt, catalog.KindDouble:
			return t, nil
		case catalog.KindDecimal:
			if fn == "sum" {
				return catalog.Decimal(38, t.Scale), nil
			}
			return catalog.Decimal(38, max(6, t.Scale)), nil
		}
		return catalog.Type{}, fmt.Errorf("%s does not accept an argument of type %s", strings.ToUpper(fn), t)
	case "min", "max":
		if t.Kind == catalog.KindString {
			return catalog.String, nil
		}
		return t, nil
	}
	return catalog.Type{}, fmt.Errorf("unknown aggregate %s", fn)
}
