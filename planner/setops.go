package planner

// Set operations: UNION [ALL], INTERSECT, EXCEPT (MINUS).
//
// UNION ALL is a relUnion of any number of inputs: the physical plan gives
// it one task reading an edge per input (a pass-through UnionOp at its
// head). Column names come from the first input; each column has the
// common type of the inputs' columns (CommonType, as Flink's least
// restrictive type), and an input whose types differ gets a casting Calc.
// The union is updating when any input is.
//
// UNION (DISTINCT) is UNION ALL followed by a keyed aggregation on every
// column (as SELECT DISTINCT): updating, as in Flink.
//
// INTERSECT and EXCEPT are planned the way Calcite's union-based rewrite
// does (Flink's IntersectToDistinct / MinusToDistinct): the inputs are
// unioned with a marker column per side, a keyed aggregation on the data
// columns counts the rows of each side, and a filter keeps the rows present
// on both sides (INTERSECT) or on the left only (EXCEPT). NULLs compare
// equal, as in Flink. The result holds each row once and is updating (a
// row appears, or disappears when its input rows are retracted); the
// final table is Flink's, but the changelog may contain -U/+U pairs of an
// unchanged row where Flink's semi/anti join emits nothing.
// INTERSECT ALL and EXCEPT ALL are not supported yet.
//
// A set operation binds as in the SQL standard: INTERSECT before UNION and
// EXCEPT, which are left-associative.

import (
	"fmt"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// relUnion is UNION ALL of rel.inputs.
const relUnion relKind = 150

// setOperand is one input of a set operation with the operator before it.
type setOperand struct {
	op   ast.SetOprType // of the operator before it (unused for the first)
	node ast.Node
}

// buildSetOpr plans a UNION / INTERSECT / EXCEPT statement.
func (p *Planner) buildSetOpr(so *ast.SetOprStmt, ctx *parser.QueryContext) (*rel, error) {
	pop, err := p.pushWith(so.With, ctx)
	if err != nil {
		return nil, err
	}
	defer pop()
	r, err := p.buildSetOprList(so.SelectList, ctx)
	if err != nil {
		return nil, err
	}
	return p.orderLimit(r, so.OrderBy, so.Limit, ctx)
}

func (p *Planner) buildSetOprList(l *ast.SetOprSelectList, ctx *parser.QueryContext) (*rel, error) {
	pop, err := p.pushWith(l.With, ctx)
	if err != nil {
		return nil, err
	}
	defer pop()
	var ops []setOperand
	for i, s := range l.Selects {
		var op *ast.SetOprType
		switch x := s.(type) {
		case *ast.SelectStmt:
			op = x.AfterSetOperator
		case *ast.SetOprSelectList:
			op = x.AfterSetOperator
		}
		o := setOperand{node: s}
		if i > 0 {
			if op == nil {
				return nil, ctx.Errorf("UNION", "unsupported set operation")
			}
			o.op = *op
		}
		ops = append(ops, o)
	}
	if len(ops) == 0 {
		return nil, ctx.Errorf("UNION", "empty set operation")
	}
	// INTERSECT binds tighter: fold runs of INTERSECT first.
	type group struct {
		op   ast.SetOprType
		rels *rel
	}
	var groups []group
	// occurrence counters locate the n-th operator keyword for errors
	seen := map[string]int{}
	for i, o := range ops {
		r, err := p.buildSetOperand(o.node, ctx)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			groups = append(groups, group{rels: r})
			continue
		}
		word := setOpWord(o.op)
		seen[word]++
		at := ctx.LocateNth(word, seen[word])
		if o.op == ast.Intersect || o.op == ast.IntersectAll {
			g := &groups[len(groups)-1]
			if g.rels, err = p.setOp(g.rels, r, o.op, at); err != nil {
				return nil, err
			}
			continue
		}
		groups = append(groups, group{op: o.op, rels: r})
	}
	acc := groups[0].rels
	seen = map[string]int{}
	for _, g := range groups[1:] {
		word := setOpWord(g.op)
		seen[word]++
		at := ctx.LocateNth(word, seen[word])
		var err error
		if acc, err = p.setOp(acc, g.rels, g.op, at); err != nil {
			return nil, err
		}
	}
	if l.OrderBy != nil || l.Limit != nil {
		return p.orderLimit(acc, l.OrderBy, l.Limit, ctx)
	}
	return acc, nil
}

func setOpWord(op ast.SetOprType) string {
	switch op {
	case ast.Intersect, ast.IntersectAll:
		return "INTERSECT"
	case ast.Except, ast.ExceptAll:
		return "EXCEPT"
	}
	return "UNION"
}

// buildSetOperand plans one input of a set operation.
func (p *Planner) buildSetOperand(n ast.Node, ctx *parser.QueryContext) (*rel, error) {
	switch x := n.(type) {
	case *ast.SelectStmt:
		return p.buildSelect(x, ctx)
	case *ast.SetOprSelectList:
		return p.buildSetOprList(x, ctx)
	case *ast.SetOprStmt:
		return p.buildSetOpr(x, ctx)
	}
	return nil, ctx.Errorf("UNION", "unsupported input of a set operation")
}

// setOp combines left and right with op (written at at).
func (p *Planner) setOp(left, right *rel, op ast.SetOprType, at parser.Pos) (*rel, error) {
	word := setOpWord(op)
	if op == ast.IntersectAll || op == ast.ExceptAll {
		return nil, &parser.Error{Pos: at, Msg: fmt.Sprintf("%s ALL is not supported yet; use %s (DISTINCT)", word, word)}
	}
	ln, rn := len(left.schema)-left.hidden, len(right.schema)-right.hidden
	if ln != rn {
		return nil, &parser.Error{Pos: at, Msg: fmt.Sprintf("the inputs of %s have different numbers of columns: %d [%s] and %d [%s]",
			word, ln, strings.Join(left.schema[:ln].Names(), ", "), rn, strings.Join(right.schema[:rn].Names(), ", "))}
	}
	if left.hidden > 0 {
		left = dropHidden(left)
	}
	if right.hidden > 0 {
		right = dropHidden(right)
	}
	schema := make(catalog.Schema, ln)
	for i := range schema {
		t, err := CommonType(left.schema[i].Type, right.schema[i].Type)
		if err != nil {
			return nil, &parser.Error{Pos: at, Msg: fmt.Sprintf("column %d of %s ('%s'): %s and %s have no common type",
				i+1, word, left.schema[i].Name, left.schema[i].Type, right.schema[i].Type)}
		}
		if t.Kind == catalog.KindNull {
			t = catalog.String
		}
		schema[i] = catalog.Column{Name: left.schema[i].Name, Type: t}
	}
	switch op {
	case ast.Intersect, ast.Except:
		return p.intersectExcept(left, right, schema, op == ast.Intersect), nil
	}
	var inputs []*rel
	if left.kind == relUnion {
		inputs = append(inputs, left.inputs...)
	} else {
		inputs = append(inputs, left)
	}
	inputs = append(inputs, right)
	u := unionOf(inputs, schema)
	if op == ast.Union {
		d := p.distinct(u)
		return d, nil
	}
	return u, nil
}

// unionOf returns UNION ALL of inputs with the given schema (every input's
// columns coerced to it).
func unionOf(inputs []*rel, schema catalog.Schema) *rel {
	mode := InsertOnly
	cast := make([]*rel, len(inputs))
	for i, in := range inputs {
		cast[i] = coerceTo(in, schema)
		if in.mode == Retract {
			mode = Retract
		}
	}
	// nullability: a column is NOT NULL only when it is in every input
	// (CommonType gives that for two inputs; more are merged pairwise).
	return &rel{kind: relUnion, inputs: cast, schema: schema, quals: make([]string, len(schema)), mode: mode, describ: "Union"}
}

// coerceTo casts the columns of in to schema where their types differ.
func coerceTo(in *rel, schema catalog.Schema) *rel {
	projs := make([]Expr, len(schema))
	same := true
	for i, c := range schema {
		var e Expr = &ColRef{Index: i, Name: in.schema[i].Name, T: in.schema[i].Type}
		t := in.schema[i].Type
		if !t.Equal(c.Type) || t.NotNull != c.Type.NotNull || t.Length != c.Type.Length {
			same = false
			if t.Kind == catalog.KindNull {
				e = &Literal{T: c.Type.Nullable()}
			} else if ce, err := ResolveCast(e, c.Type); err == nil {
				e = ce
			} else {
				e = &Call{Fn: "cast", Args: []Expr{e}, T: c.Type}
			}
		}
		projs[i] = e
	}
	if same {
		return in
	}
	return &rel{kind: relCalc, input: in, schema: schema, quals: in.quals, mode: in.mode, projs: projs}
}

// intersectExcept plans INTERSECT (both) or EXCEPT over left and right,
// which have schema's columns (before coercion).
func (p *Planner) intersectExcept(left, right *rel, schema catalog.Schema, intersect bool) *rel {
	n := len(schema)
	one := &Literal{Value: int32(1), T: catalog.Int.WithNotNull(true)}
	null := &Literal{T: catalog.Int}
	marked := func(in *rel, isLeft bool) *rel {
		in = coerceTo(in, schema)
		projs := make([]Expr, 0, n+2)
		s := append(catalog.Schema{}, schema...)
		for i, c := range schema {
			projs = append(projs, &ColRef{Index: i, Name: c.Name, T: c.Type})
		}
		l, r := Expr(one), Expr(null)
		if !isLeft {
			l, r = null, one
		}
		projs = append(projs, l, r)
		s = append(s, catalog.Column{Name: "$left", Type: catalog.Int}, catalog.Column{Name: "$right", Type: catalog.Int})
		return &rel{kind: relCalc, input: in, schema: s, quals: make([]string, len(s)), mode: in.mode, projs: projs}
	}
	ul, ur := marked(left, true), marked(right, false)
	mode := InsertOnly
	if ul.mode == Retract || ur.mode == Retract {
		mode = Retract
	}
	u := &rel{kind: relUnion, inputs: []*rel{ul, ur}, schema: ul.schema, quals: ul.quals, mode: mode, describ: "Union"}
	keys := make([]int, n)
	names := make([]string, n)
	for i, c := range schema {
		keys[i], names[i] = i, c.Name
	}
	cnt := catalog.BigInt.WithNotNull(true)
	aggSchema := append(append(catalog.Schema{}, schema...),
		catalog.Column{Name: "$left_count", Type: cnt}, catalog.Column{Name: "$right_count", Type: cnt})
	op := &AggOp{Keys: keys, InputMode: mode, Out: aggSchema, MaxParallel: p.MaxParallelism, KeyNames: names,
		Aggs: []AggCall{
			{Fn: "count", Arg: n, ArgType: catalog.Int, T: cnt, Name: "$left_count"},
			{Fn: "count", Arg: n + 1, ArgType: catalog.Int, T: cnt, Name: "$right_count"},
		}}
	word := "Intersect"
	if !intersect {
		word = "Minus"
	}
	agg := &rel{kind: relAgg, input: u, schema: aggSchema, quals: make([]string, len(aggSchema)), mode: Retract, agg: op, describ: word}
	zero := &Literal{Value: int64(0), T: cnt}
	lc := &ColRef{Index: n, Name: "$left_count", T: cnt}
	rc := &ColRef{Index: n + 1, Name: "$right_count", T: cnt}
	cmp := func(fn string, a, b Expr) Expr {
		e, err := ResolveCall(fn, []Expr{a, b})
		if err != nil {
			panic(err) // BIGINT comparisons always resolve
		}
		return e
	}
	cond := cmp("and", cmp(">", lc, zero), cmp(">", rc, zero))
	if !intersect {
		cond = cmp("and", cmp(">", lc, zero), cmp("=", rc, zero))
	}
	projs := make([]Expr, n)
	for i, c := range schema {
		projs[i] = &ColRef{Index: i, Name: c.Name, T: c.Type}
	}
	return &rel{kind: relCalc, input: agg, schema: schema, quals: make([]string, n), mode: Retract, filter: cond, projs: projs}
}

// buildUnionTask builds the task of a relUnion: its inputs' tasks feed
// one task whose head is a pass-through UnionOp. An input at the union's
// parallelism is forwarded; otherwise an append-only input is rebalanced,
// and when an updating input has another parallelism the union runs at
// parallelism 1 (a GLOBAL edge keeps each key's changes in order).
func (b *physBuilder) buildUnionTask(r *rel) *Task {
	ins := make([]*Task, len(r.inputs))
	for i, in := range r.inputs {
		ins[i] = b.build(in)
	}
	par := ins[0].Parallelism
	same := true
	for _, t := range ins {
		same = same && t.Parallelism == par
	}
	if !same {
		par = b.p.Parallelism
		for i, t := range ins {
			if t.Parallelism != par && r.inputs[i].mode == Retract {
				par = 1
			}
		}
	}
	t := b.newTask(par)
	for _, in := range ins {
		in = b.skipReader(in)
		kind := Forward
		switch {
		case in.Parallelism == par:
		case par == 1:
			kind = Global
		default:
			kind = Rebalance
		}
		b.connect(in, t, kind, nil)
	}
	op := &UnionOp{Inputs: len(ins), Out: r.schema, Mode: r.mode}
	t.Ops = append(t.Ops, op)
	op.ID = b.id(t, op.Describe())
	t.OutSchema, t.OutMode = r.schema, r.mode
	return t
}

// UnionOp is the head of a task reading several input edges (UNION ALL):
// it passes every batch and watermark through unchanged.
type UnionOp struct {
	ID     string
	Inputs int
	Out    catalog.Schema
	Mode   ChangelogMode
}

func (o *UnionOp) OpID() string { return o.ID }
func (o *UnionOp) Describe() string {
	return fmt.Sprintf("Union(all=[true], inputs=[%d], union=[%s])", o.Inputs, strings.Join(o.Out.Names(), ", "))
}
