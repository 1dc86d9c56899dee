package planner

// Planning of regular joins.
//
// FROM a JOIN b ON c (and comma / CROSS joins) first builds a relJoin
// whose condition is c over the columns of a followed by those of b. An
// inner join takes the conjuncts of the WHERE of its SELECT as well (as
// Flink pushes filters into inner joins). finalizeJoins then decides, top
// down, what each conjunct is: a filter of one side (pushed into it when
// the join type allows), an equi-condition (the join key: both sides are
// hash-partitioned by it), or the residual condition evaluated on every
// candidate pair. Keys written as expressions, or of different types on
// the two sides, are computed (and cast to their common type) by a Calc
// appended to the side; the join's output drops those extra columns again.

import (
	"fmt"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// relJoin is a join of rel.input (left) and rel.right (rel.join).
const relJoin relKind = 120

// joinRel is what a relJoin adds to rel.
type joinRel struct {
	typ  JoinType
	cond Expr // over left ++ right columns; nil: TRUE
	pos  parser.Pos
	op   *JoinOp // set by finalizeJoins
	// timed is the interval or window join planned in place of op (set by
	// timeJoin, intervaljoin.go).
	timed Op
}

// children returns the inputs of r (none for a scan).
func (r *rel) children() []*rel {
	switch {
	case r.kind == relUnion:
		return r.inputs
	case r.input == nil:
		return nil
	case r.right != nil:
		return []*rel{r.input, r.right}
	}
	return []*rel{r.input}
}

// buildJoin plans FROM left <join> right [ON cond] (before finalizeJoins).
func (p *Planner) buildJoin(x *ast.Join, ctx *parser.QueryContext) (*rel, error) {
	at := joinPos(x, ctx)
	if x.NaturalJoin {
		return nil, &parser.Error{Pos: at, Msg: "NATURAL JOIN is not supported; write the join condition with ON"}
	}
	if len(x.Using) > 0 {
		return nil, &parser.Error{Pos: at, Msg: "JOIN ... USING (...) is not supported yet; write ON a.k = b.k"}
	}
	left, err := p.buildFrom(x.Left, ctx)
	if err != nil {
		return nil, err
	}
	right, err := p.buildFrom(x.Right, ctx)
	if err != nil {
		return nil, err
	}
	typ := InnerJoin
	switch {
	case parser.IsFullOuterJoin(x):
		typ = FullJoin
	case x.Tp == ast.LeftJoin:
		typ = LeftJoin
	case x.Tp == ast.RightJoin:
		typ = RightJoin
	}
	if lk, ok, err := p.lookupJoin(x, left, right, typ, at, ctx); ok || err != nil {
		return lk, err // FOR SYSTEM_TIME AS OF (lookupjoin.go)
	}
	r := joinOf(left, right, typ, at)
	if x.On != nil {
		b := &exprBuilder{p: p, ctx: ctx, in: r, clause: "ON"}
		cond, err := b.build(x.On.Expr)
		if err != nil {
			return nil, err
		}
		if k := cond.Type().Kind; k != catalog.KindBoolean && k != catalog.KindNull {
			return nil, exprErr(ctx, x.On.Expr, "ON", "the join condition must be BOOLEAN, got %s", cond.Type())
		}
		r.join.cond = cond
	} else if typ != InnerJoin {
		return nil, &parser.Error{Pos: at, Msg: fmt.Sprintf("%s needs a join condition: ON ...", typ)}
	}
	return r, nil
}

// joinOf returns the (not yet finalized) join of left and right.
func joinOf(left, right *rel, typ JoinType, at parser.Pos) *rel {
	var schema catalog.Schema
	for _, c := range left.schema[:len(left.schema)-left.hidden] {
		if typ.PadsLeft() {
			c.Type = c.Type.Nullable()
		}
		schema = append(schema, c)
	}
	quals := append([]string{}, left.quals[:len(left.schema)-left.hidden]...)
	if typ != SemiJoin && typ != AntiJoin {
		for _, c := range right.schema[:len(right.schema)-right.hidden] {
			if typ.PadsRight() {
				c.Type = c.Type.Nullable()
			}
			schema = append(schema, c)
		}
		quals = append(quals, right.quals[:len(right.schema)-right.hidden]...)
	}
	mode := Retract
	if (typ == InnerJoin || typ == SemiJoin) && left.mode == InsertOnly && right.mode == InsertOnly {
		mode = InsertOnly
	}
	if left.hidden > 0 {
		left = dropHidden(left)
	}
	if right.hidden > 0 {
		right = dropHidden(right)
	}
	return &rel{kind: relJoin, input: left, right: right, schema: schema, quals: quals, mode: mode,
		join: &joinRel{typ: typ, pos: at}, describ: typ.String()}
}

// dropHidden projects the hidden trailing columns of r away.
func dropHidden(r *rel) *rel {
	n := len(r.schema) - r.hidden
	projs := make([]Expr, n)
	for i := range projs {
		projs[i] = &ColRef{Index: i, Name: r.schema[i].Name, T: r.schema[i].Type}
	}
	return &rel{kind: relCalc, input: r, schema: r.schema[:n], quals: r.quals[:n], mode: r.mode, projs: projs}
}

// andOf is the conjunction of es (nil when empty).
func andOf(es []Expr) Expr {
	var out Expr
	for _, e := range es {
		if out == nil {
			out = e
			continue
		}
		out = &Call{Fn: "and", Args: []Expr{out, e}, T: catalog.Boolean.WithNotNull(out.Type().NotNull && e.Type().NotNull)}
	}
	return out
}

// colRange reports the smallest and largest column e reads (-1, -1: none)
// and whether it calls a clock function.
func colRange(e Expr) (lo, hi int, clock bool) {
	lo, hi = -1, -1
	var walk func(Expr)
	walk = func(e Expr) {
		switch x := e.(type) {
		case *ColRef:
			if lo < 0 || x.Index < lo {
				lo = x.Index
			}
			hi = max(hi, x.Index)
		case *Call:
			if clockFns[x.Fn] {
				clock = true
			}
			for _, a := range x.Args {
				walk(a)
			}
		}
	}
	walk(e)
	return lo, hi, clock
}

// shiftCols returns e with every column index i >= from moved by d.
func shiftCols(e Expr, from, d int) Expr {
	switch x := e.(type) {
	case *ColRef:
		if x.Index >= from {
			c := *x
			c.Index += d
			return &c
		}
	case *Call:
		c := *x
		c.Args = make([]Expr, len(x.Args))
		for i, a := range x.Args {
			c.Args[i] = shiftCols(a, from, d)
		}
		return &c
	}
	return e
}

// filterRel puts filter f over r: merged into r's condition when r is an
// inner join (so it can become a key), else a Calc.
func filterRel(r *rel, f Expr) *rel {
	if r.kind == relJoin && r.join.typ == InnerJoin && r.join.op == nil {
		r.join.cond = andOf([]Expr{r.join.cond, f})
		return r
	}
	return &rel{kind: relCalc, input: r, schema: r.schema, quals: r.quals, mode: r.mode, filter: f}
}

// finalizeJoins plans the relJoins at the top of r (r itself and the joins
// directly below it): conditions become pushed filters, keys and residuals.
// The result has r's schema.
func (p *Planner) finalizeJoins(r *rel, ctx *parser.QueryContext) (*rel, error) {
	if r.kind != relJoin || r.join.op != nil {
		return r, nil
	}
	j := r.join
	left, right := r.input, r.right
	nl := len(left.schema)
	var lkeys, rkeys []Expr
	var nullSafe []bool
	var rest []Expr
	if j.cond != nil {
		for _, c := range conjunctsOf(j.cond) {
			lo, hi, clock := colRange(c)
			switch {
			case lo < 0 || clock:
				rest = append(rest, c)
			case hi < nl && (j.typ == InnerJoin || j.typ == RightJoin || j.typ == SemiJoin):
				left = filterRel(left, c)
			case lo >= nl && (j.typ == InnerJoin || j.typ == LeftJoin || j.typ == SemiJoin || j.typ == AntiJoin):
				right = filterRel(right, shiftCols(c, nl, -nl))
			default:
				if a, b, ns, ok := equiPair(c, nl); ok {
					lkeys = append(lkeys, a)
					rkeys = append(rkeys, shiftCols(b, nl, -nl))
					nullSafe = append(nullSafe, ns)
				} else {
					rest = append(rest, c)
				}
			}
		}
	}
	var err error
	if left, err = p.finalizeJoins(left, ctx); err != nil {
		return nil, err
	}
	if right, err = p.finalizeJoins(right, ctx); err != nil {
		return nil, err
	}
	// Keys: columns of their common type, computed by a Calc on the side
	// when written as an expression or typed differently.
	var lext, rext []Expr
	var lk, rk []int
	for i := range lkeys {
		t, err := CommonType(lkeys[i].Type(), rkeys[i].Type())
		if err != nil {
			return nil, &parser.Error{Pos: j.pos, Msg: fmt.Sprintf("cannot join %s with %s: %v", lkeys[i].Type(), rkeys[i].Type(), err)}
		}
		li, err := keyColumn(lkeys[i], t, nl, &lext)
		if err != nil {
			return nil, &parser.Error{Pos: j.pos, Msg: err.Error()}
		}
		ri, err := keyColumn(rkeys[i], t, len(right.schema), &rext)
		if err != nil {
			return nil, &parser.Error{Pos: j.pos, Msg: err.Error()}
		}
		lk, rk = append(lk, li), append(rk, ri)
	}
	left = extendRel(left, lext)
	right = extendRel(right, rext)
	// The residual is over left ++ right as written; right columns move
	// behind the left side's extra key columns.
	residual := andOf(rest)
	if residual != nil && len(lext) > 0 {
		residual = shiftCols(residual, nl, len(lext))
	}
	op := &JoinOp{Type: j.typ, Residual: residual, OutMode: r.mode, MaxParallel: p.MaxParallelism, pos: j.pos,
		Left:  JoinSide{Keys: lk, UniqueKey: uniqueKey(left), Mode: left.mode, Schema: left.schema},
		Right: JoinSide{Keys: rk, UniqueKey: uniqueKey(right), Mode: right.mode, Schema: right.schema}}
	op.NullSafe = nullSafe
	out := &rel{kind: relJoin, input: left, right: right, mode: r.mode, join: &joinRel{typ: j.typ, cond: j.cond, pos: j.pos, op: op}, describ: r.describ}
	// The join's own output: left (extended) ++ right (extended), padded
	// sides nullable.
	var schema catalog.Schema
	var quals []string
	for i, c := range left.schema {
		if j.typ.PadsLeft() {
			c.Type = c.Type.Nullable()
		}
		schema = append(schema, c)
		q := ""
		if i < nl {
			q = r.quals[i]
		}
		quals = append(quals, q)
	}
	if j.typ != SemiJoin && j.typ != AntiJoin {
		for i, c := range right.schema {
			if j.typ.PadsRight() {
				c.Type = c.Type.Nullable()
			}
			schema = append(schema, c)
			q := ""
			if i < len(right.schema)-len(rext) {
				q = r.quals[nl+i]
			}
			quals = append(quals, q)
		}
	}
	out.schema, out.quals = schema, quals
	op.Out = schema
	if err := p.timeJoin(out, r); err != nil {
		return nil, &parser.Error{Pos: j.pos, Msg: err.Error()}
	}
	if len(lext) == 0 && len(rext) == 0 {
		return out, nil
	}
	// Drop the extra key columns again.
	projs := make([]Expr, 0, len(r.schema))
	for i := 0; i < nl; i++ {
		projs = append(projs, &ColRef{Index: i, Name: schema[i].Name, T: schema[i].Type})
	}
	if j.typ != SemiJoin && j.typ != AntiJoin {
		base := len(left.schema)
		for i := 0; i < len(r.schema)-nl; i++ {
			projs = append(projs, &ColRef{Index: base + i, Name: schema[base+i].Name, T: schema[base+i].Type})
		}
	}
	return &rel{kind: relCalc, input: out, schema: r.schema, quals: r.quals, mode: r.mode, projs: projs}, nil
}

// equiPair reports whether c is a = b, or a IS NOT DISTINCT FROM b
// (nullSafe), with a over the left side (columns below nl) and b over the
// right side, or the converse (returned swapped).
func equiPair(c Expr, nl int) (a, b Expr, nullSafe, ok bool) {
	call, isCall := c.(*Call)
	if !isCall {
		return nil, nil, false, false
	}
	if x, y, ok := notDistinctArgs(call); ok {
		call, nullSafe = &Call{Fn: "=", Args: []Expr{x, y}}, true
	}
	if call.Fn != "=" || len(call.Args) != 2 {
		return nil, nil, false, false
	}
	a, b = call.Args[0], call.Args[1]
	alo, ahi, aclock := colRange(a)
	blo, bhi, bclock := colRange(b)
	if alo < 0 || blo < 0 || aclock || bclock {
		return nil, nil, false, false
	}
	a, b = uncast(a), uncast(b)
	switch {
	case ahi < nl && blo >= nl:
		return a, b, nullSafe, true
	case bhi < nl && alo >= nl:
		return b, a, nullSafe, true
	}
	return nil, nil, false, false
}

// notDistinctArgs recognizes the expression IS NOT DISTINCT FROM is built
// as (exprBuilder.distinctFrom): CASE WHEN a IS NULL THEN b IS NULL WHEN
// b IS NULL THEN FALSE ELSE COALESCE(a = b, FALSE) END.
func notDistinctArgs(c *Call) (Expr, Expr, bool) {
	if c.Fn != "case" || len(c.Args) != 5 {
		return nil, nil, false
	}
	co, ok := c.Args[4].(*Call)
	if !ok || co.Fn != "coalesce" || len(co.Args) != 2 {
		return nil, nil, false
	}
	eq, ok := co.Args[0].(*Call)
	if !ok || eq.Fn != "=" || len(eq.Args) != 2 {
		return nil, nil, false
	}
	isNullOf := func(e Expr) (Expr, bool) {
		n, ok := e.(*Call)
		if !ok || n.Fn != "is_null" || len(n.Args) != 1 {
			return nil, false
		}
		return n.Args[0], true
	}
	an, ok1 := isNullOf(c.Args[0])
	bn, ok2 := isNullOf(c.Args[1])
	if !ok1 || !ok2 || an.String() != uncast(eq.Args[0]).String() && an.String() != eq.Args[0].String() {
		return nil, nil, false
	}
	if bn.String() != uncast(eq.Args[1]).String() && bn.String() != eq.Args[1].String() {
		return nil, nil, false
	}
	return eq.Args[0], eq.Args[1], true
}

// uncast strips the implicit cast the comparison added (the join casts
// both keys to their common type itself).
func uncast(e Expr) Expr {
	if c, ok := e.(*Call); ok && c.Fn == "cast" && len(c.Args) == 1 {
		if _, isCol := c.Args[0].(*ColRef); isCol {
			return c.Args[0]
		}
	}
	return e
}

// keyColumn returns the column of a side (width columns, plus the extra
// ones so far in *ext) holding key e as type t, adding it to *ext unless e
// is already such a column.
func keyColumn(e Expr, t catalog.Type, width int, ext *[]Expr) (int, error) {
	if c, ok := e.(*ColRef); ok && sameKeyType(c.T, t) {
		return c.Index, nil
	}
	if !sameKeyType(e.Type(), t) {
		ce, err := ResolveCast(e, t.WithNotNull(e.Type().NotNull))
		if err != nil {
			return 0, err
		}
		e = ce
	}
	for i, x := range *ext {
		if x.String() == e.String() {
			return width + i, nil
		}
	}
	*ext = append(*ext, e)
	return width + len(*ext) - 1, nil
}

func sameKeyType(a, b catalog.Type) bool { return a.Nullable().Equal(b.Nullable()) }

// extendRel appends computed columns to r (a Calc; r itself when none).
func extendRel(r *rel, ext []Expr) *rel {
	if len(ext) == 0 {
		return r
	}
	projs := make([]Expr, 0, len(r.schema)+len(ext))
	schema := append(catalog.Schema{}, r.schema...)
	quals := append([]string{}, r.quals...)
	for i, c := range r.schema {
		projs = append(projs, &ColRef{Index: i, Name: c.Name, T: c.Type})
	}
	for i, e := range ext {
		projs = append(projs, e)
		schema = append(schema, catalog.Column{Name: fmt.Sprintf("$key%d", i), Type: e.Type()})
		quals = append(quals, "")
	}
	return &rel{kind: relCalc, input: r, schema: schema, quals: quals, mode: r.mode, projs: projs}
}

// uniqueKey returns columns of r unique among its live rows (nil: none
// known): a table's PRIMARY KEY, an aggregation's grouping keys, carried
// through projections that keep them.
func uniqueKey(r *rel) []int {
	switch r.kind {
	case relScan:
		if r.table == nil || len(r.table.PrimaryKey) == 0 {
			return nil
		}
		var out []int
		for _, k := range r.table.PrimaryKey {
			i := r.table.Schema.Index(k)
			if i < 0 || i >= len(r.schema) {
				return nil
			}
			out = append(out, i)
		}
		return out
	case relCalc:
		in := uniqueKey(r.input)
		if in == nil {
			return nil
		}
		if r.projs == nil {
			return in
		}
		var out []int
		for _, k := range in {
			found := -1
			for i, e := range r.projs {
				if c, ok := e.(*ColRef); ok && c.Index == k {
					found = i
					break
				}
			}
			if found < 0 {
				return nil
			}
			out = append(out, found)
		}
		return out
	case relAgg:
		if len(r.agg.Keys) == 0 {
			return nil
		}
		out := make([]int, len(r.agg.Keys))
		for i := range out {
			out[i] = i
		}
		return out
	case relJoin:
		if r.join.op == nil {
			return nil
		}
		op := r.join.op
		l := op.Left.UniqueKey
		if op.Type == SemiJoin || op.Type == AntiJoin {
			return l
		}
		rk := op.Right.UniqueKey
		if l == nil || rk == nil || op.Type != InnerJoin {
			return nil
		}
		out := append([]int{}, l...)
		for _, k := range rk {
			out = append(out, len(op.Left.Schema)+k)
		}
		return out
	}
	return nil
}

// buildJoinTask builds the task of a finalized join: both inputs
// hash-partitioned by their keys (global at parallelism 1 without keys).
func (b *physBuilder) buildJoinTask(r *rel) *Task {
	op := r.join.op
	if op == nil {
		panic("planner: join not finalized")
	}
	lt := b.build(r.input)
	rt := b.build(r.right)
	par, kind := b.p.Parallelism, Hash
	if len(op.Left.Keys) == 0 {
		par, kind = 1, Global
	}
	t := b.newTask(par)
	b.connect(b.skipReader(lt), t, kind, op.Left.Keys)
	b.connect(b.skipReader(rt), t, kind, op.Right.Keys)
	t.Ops = append(t.Ops, op)
	op.ID = b.joinID(r)
	t.OutSchema, t.OutMode = r.schema, r.mode
	return t
}

// joinID is the stable id of a join: its type, the sources and keys of
// both sides.
func (b *physBuilder) joinID(r *rel) string {
	op := r.join.op
	ord := b.ids.ordinal
	b.ids.ordinal++
	side := func(in *rel, keys []int) string {
		ks := make([]string, len(keys))
		for i, k := range keys {
			ks[i] = lineage(in, k)
		}
		return strings.Join(sourceTables(in), ",") + "|" + strings.Join(ks, ",")
	}
	return b.unique(hashID("Join", op.Type.String(),
		"left="+side(r.input, op.Left.Keys), "right="+side(r.right, op.Right.Keys),
		fmt.Sprintf("ordinal=%d", ord)))
}
