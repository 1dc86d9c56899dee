package planner

import (
	"fmt"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// Planner turns queries into physical DAGs. It is pure: the same catalog,
// options and SQL always give the same plan (and the same operator ids).
type Planner struct {
	Catalog        *catalog.Catalog
	Parallelism    int
	MaxParallelism int
	// SourceParallelism returns the parallelism of a source table's scan
	// (e.g. 1 for a socket); nil means Parallelism.
	SourceParallelism func(t *catalog.Table, def int) int
	// SinkParallelism returns the parallelism a sink table asks for
	// ('sink.parallelism'), or def; nil means def.
	SinkParallelism func(t *catalog.Table, def int) int
	// CanRead reports whether a table's connector can be a source; nil means yes.
	CanRead func(t *catalog.Table) bool
	// SinkCaps reports whether a table can be a sink and accepts updating
	// input (which may depend on its format).
	SinkCaps func(t *catalog.Table) (sink, updates bool)
	// NoSourceReuse turns off sharing one source task between the
	// statements of a statement set that read the same table with the same
	// options (table.optimizer.reuse-source-enabled = false).
	NoSourceReuse bool
	// AggPhase is table.optimizer.agg-phase-strategy: AUTO (or ""),
	// ONE_PHASE or TWO_PHASE (LocalAggOp).
	AggPhase string
	// NoSubPlanReuse turns off planning an aggregation computed more than
	// once over the same input only once (reuse.go;
	// table.optimizer.reuse-sub-plan-enabled = false).
	NoSubPlanReuse bool
	// TimeZone is table.local-time-zone: the zone TIMESTAMP_LTZ values are
	// shown and converted in ("" means UTC).
	TimeZone string
	// WatermarkInterval is pipeline.auto-watermark-interval and
	// IdleTimeout table.exec.source.idle-timeout (window.go).
	WatermarkInterval time.Duration
	IdleTimeout       time.Duration

	ctes []cte // WITH queries in scope while planning (subquery.go)
}

// rel is a node of the logical plan: a tree from the sources (a join has
// two inputs: input and right).
type rel struct {
	kind   relKind
	input  *rel
	schema catalog.Schema
	quals  []string // qualifier (table alias) of each column, lower-case
	mode   ChangelogMode
	// by kind
	table  *catalog.Table // relScan
	values bool           // relScan of the single-row VALUES source
	filter Expr           // relCalc
	projs  []Expr         // relCalc (nil: keep columns)
	tfunc  *TableFuncOp   // relTableFunc
	agg    *AggOp         // relAgg
	win    *windowRel     // relWindowTVF, relWindowAgg (window.go)
	rank   *rankRel       // relWindowRank (windowrank.go)
	over   *OverAggOp     // relOver (over.go)
	right  *rel           // relJoin: the right input (input is the left one)
	join   *joinRel       // relJoin (joinplan.go)
	inputs []*rel         // relUnion (setops.go)
	rows   [][]Expr       // relScan of a VALUES list (values.go)
	srt    *sortRel       // relSort, relLimit (sort.go)
	// scalarSubs: the hidden columns are the select list's scalar
	// subqueries (subquery.go); SELECT * is fine.
	scalarSubs bool
	// hidden trailing columns that SELECT * does not expand (the rank of
	// a window rank).
	hidden int
	// computedOf is the table whose computed columns this relCalc
	// evaluates right after its scan (a watermark on a computed column is
	// assigned after it).
	computedOf *catalog.Table
	describ    string // for error messages (which node makes a stream updating)
	// relAgg: the operator id pinned by a /*+ UID('name') */ hint ("" = derived).
	uid    string
	uidPos parser.Pos
}

type relKind uint8

const (
	relScan relKind = iota
	relCalc
	relTableFunc
	relAgg
)

func (r *rel) qualify(q string) *rel {
	out := *r
	out.quals = make([]string, len(r.schema))
	for i := range out.quals {
		out.quals[i] = strings.ToLower(q)
	}
	return &out
}

// updatingNode returns the description of the node that makes r updating.
func (r *rel) updatingNode() string {
	// the node that turns insert-only input into updating output, else any
	// updating node
	var first, any string
	var walk func(n *rel)
	walk = func(n *rel) {
		if n == nil || first != "" {
			return
		}
		if n.kind == relAgg || (n.kind != relCalc && n.mode == Retract) {
			ins := true
			for _, c := range n.children() {
				ins = ins && c.mode == InsertOnly
			}
			if ins {
				first = n.describ
				return
			}
			if any == "" {
				any = n.describ
			}
		}
		for _, c := range n.children() {
			walk(c)
		}
	}
	walk(r)
	switch {
	case first != "":
		return first
	case any != "":
		return any
	}
	return "?"
}

// buildQuery plans a SELECT (or a view's query) into a rel.
func (p *Planner) buildQuery(q *parser.Query) (*rel, error) {
	sel, ok := q.Node.(*ast.SelectStmt)
	if !ok {
		if so, ok := q.Node.(*ast.SetOprStmt); ok {
			return p.buildSetOpr(so, q.Ctx)
		}
		return nil, q.Ctx.Errorf("", "unsupported query")
	}
	return p.buildSelect(sel, q.Ctx)
}

// joinPos returns where join j is written: the ',' or JOIN keyword before
// its right side when that is a table name, else the first JOIN.
func joinPos(j *ast.Join, ctx *parser.QueryContext) parser.Pos {
	if ts, ok := j.Right.(*ast.TableSource); ok {
		if tn, ok := ts.Source.(*ast.TableName); ok {
			if ref, ok := ctx.TableRef(tn); ok && ref.JoinPos.Line > 0 {
				return ref.JoinPos
			}
		}
	}
	if j.On != nil && ctx.HasPos(j.On.Expr) {
		if _, p, ok := ctx.TokenBefore(j.On.Expr); ok {
			return p
		}
	}
	return ctx.Locate("JOIN")
}

// buildSelect plans one SELECT and applies its UID hint, if any, to the
// aggregation the SELECT itself introduces (GROUP BY / aggregates; with
// DISTINCT on top of them as well, the DISTINCT gets name + "/distinct").
func (p *Planner) buildSelect(sel *ast.SelectStmt, ctx *parser.QueryContext) (*rel, error) {
	uid, uidPos, hinted := ctx.UIDHint(sel)
	r, err := p.buildSelectBody(sel, ctx)
	if err != nil || !hinted {
		return r, err
	}
	var grouped *rel // the GROUP BY aggregation of this SELECT
	if sel.GroupBy != nil || sel.Having != nil || containsAgg(sel.Fields.Fields) {
		for n := r; n != nil; n = n.input {
			if (n.kind == relAgg || n.kind == relWindowAgg) && (!sel.Distinct || n != r) {
				grouped = n
				break
			}
		}
	}
	switch {
	case grouped != nil && sel.Distinct:
		grouped.uid, grouped.uidPos = uid, uidPos
		r.uid, r.uidPos = uid+"/distinct", uidPos
	case grouped != nil:
		grouped.uid, grouped.uidPos = uid, uidPos
	case sel.Distinct:
		r.uid, r.uidPos = uid, uidPos
	default:
		return nil, &parser.Error{Pos: uidPos, Msg: fmt.Sprintf("UID('%s') pins the id of a stateful operator, but this SELECT has none: the hint applies to the aggregation (GROUP BY, aggregate functions, DISTINCT) of the SELECT it follows", uid)}
	}
	return r, nil
}

func (p *Planner) buildSelectBody(sel *ast.SelectStmt, ctx *parser.QueryContext) (*rel, error) {
	// Subquery predicates among WHERE's conjuncts become joins (subquery.go).
	where, subs := splitWhere(sel.Where)
	selSubs := selectSubqueries(sel)
	if subs != nil || selSubs != nil {
		chk := *sel
		chk.Where = where
		if selSubs != nil {
			chk.Fields = &ast.FieldList{}
		}
		if err := noSubqueries(&chk, ctx); err != nil {
			return nil, err
		}
	} else if err := noSubqueries(sel, ctx); err != nil {
		return nil, err
	}
	pop, err := p.pushWith(sel.With, ctx)
	if err != nil {
		return nil, err
	}
	defer pop()
	if sel.OrderBy != nil || sel.Limit != nil {
		// ORDER BY / LIMIT apply to the result of the rest (sort.go)
		inner := *sel
		inner.OrderBy, inner.Limit, inner.With = nil, nil, nil
		r, err := p.buildSelectBody(&inner, ctx)
		if err != nil {
			return nil, err
		}
		return p.orderLimit(r, sel.OrderBy, sel.Limit, ctx)
	}
	if sel.WindowSpecs != nil {
		return nil, ctx.Errorf("WINDOW", "named windows (WINDOW w AS (...)) are not supported; write the window in the OVER clause")
	}
	var in *rel
	if sel.From == nil {
		in = &rel{kind: relScan, values: true, describ: "Values"}
	} else {
		in, err = p.buildFrom(sel.From.TableRefs, ctx)
		if err != nil {
			return nil, err
		}
	}
	if in.kind == relJoin && in.join.typ == InnerJoin && where != nil {
		// An inner join takes the WHERE as part of its condition (its
		// equalities become keys, its one-sided conjuncts filters).
		b := &exprBuilder{p: p, ctx: ctx, in: in, clause: "WHERE"}
		cond, err := b.build(where)
		if err != nil {
			return nil, err
		}
		if cond.Type().Kind != catalog.KindBoolean && cond.Type().Kind != catalog.KindNull {
			return nil, exprErr(ctx, where, "WHERE", "WHERE condition must be BOOLEAN, got %s", cond.Type())
		}
		in.join.cond = andOf([]Expr{in.join.cond, cond})
		if in, err = p.finalizeJoins(in, ctx); err != nil {
			return nil, err
		}
	} else if in, err = p.finalizeJoins(in, ctx); err != nil {
		return nil, err
	} else if where != nil {
		b := &exprBuilder{p: p, ctx: ctx, in: in, clause: "WHERE"}
		cond, err := b.build(where)
		if err != nil {
			return nil, err
		}
		if cond.Type().Kind != catalog.KindBoolean && cond.Type().Kind != catalog.KindNull {
			return nil, exprErr(ctx, where, "WHERE", "WHERE condition must be BOOLEAN, got %s", cond.Type())
		}
		if rin, rest, ok := applyRankFilter(in, cond); ok {
			in = rin // a Window TopN's rank range (windowrank.go)
			if rest != nil {
				in = &rel{kind: relCalc, input: in, schema: in.schema, quals: in.quals, mode: in.mode, filter: rest}
			}
		} else {
			in = &rel{kind: relCalc, input: in, schema: in.schema, quals: in.quals, mode: in.mode, filter: cond}
		}
	}
	for _, sq := range subs {
		if in, err = p.applySubquery(in, sq, ctx); err != nil {
			return nil, err
		}
	}
	if wfs := overAggFields(sel); len(wfs) > 0 { // OVER aggregations (over.go)
		ov, err := p.buildOver(sel, wfs, in, ctx)
		if err != nil {
			return nil, err
		}
		return p.buildProjection(sel.Fields.Fields, ov, ctx, func(n ast.ExprNode) (Expr, bool, error) {
			for i, wf := range wfs {
				if unparen(n) == wf {
					c := len(in.schema) + i
					return &ColRef{Index: c, Name: ov.schema[c].Name, T: ov.schema[c].Type}, true, nil
				}
			}
			return nil, false, nil
		})
	}
	wf, err := windowFuncField(sel, ctx)
	if err != nil {
		return nil, err
	}
	if wf != nil {
		rk, err := p.buildWindowRank(sel, wf, in, ctx)
		if err != nil {
			return nil, err
		}
		rankCol := &ColRef{Index: len(rk.schema) - 1, Name: rk.schema[len(rk.schema)-1].Name, T: rk.schema[len(rk.schema)-1].Type}
		return p.buildProjection(sel.Fields.Fields, rk, ctx, func(n ast.ExprNode) (Expr, bool, error) {
			if unparen(n) == wf {
				return rankCol, true, nil
			}
			return nil, false, nil
		})
	}
	hasAgg := sel.GroupBy != nil || sel.Having != nil || containsAgg(sel.Fields.Fields)
	if hasAgg {
		return p.buildAggregate(sel, in, ctx)
	}
	var hook func(ast.ExprNode) (Expr, bool, error)
	if selSubs != nil {
		if in, hook, err = p.joinSelectSubqueries(in, selSubs, ctx); err != nil {
			return nil, err
		}
	}
	out, err := p.buildProjection(sel.Fields.Fields, in, ctx, hook)
	if err != nil {
		return nil, err
	}
	out = settleRank(out) // a regular TopN below: is its rank read? (rank.go)
	if sel.Distinct {
		return p.distinct(out), nil
	}
	return out, nil
}

func containsAgg(fields []*ast.SelectField) bool {
	found := false
	for _, f := range fields {
		if f.Expr != nil {
			f.Expr.Accept(&aggFinder{found: &found})
		}
	}
	return found
}

// aggFinder finds aggregate calls of one SELECT: it does not descend into
// subqueries, whose aggregates are their own.
type aggFinder struct{ found *bool }

func (v *aggFinder) Enter(n ast.Node) (ast.Node, bool) {
	switch n.(type) {
	case *ast.AggregateFuncExpr:
		*v.found = true
		return n, true
	case *ast.SubqueryExpr:
		return n, true
	}
	return n, false
}
func (v *aggFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// noSubqueries rejects a subquery inside an expression of sel (select list,
// WHERE, GROUP BY, HAVING) before anything else is planned: otherwise its
// columns and aggregates would be taken for the outer query's and give a
// misleading error. Subqueries in FROM are not expressions and are fine.
func noSubqueries(sel *ast.SelectStmt, ctx *parser.QueryContext) error {
	var exprs []ast.ExprNode
	if sel.Fields != nil {
		for _, f := range sel.Fields.Fields {
			if f.Expr != nil {
				exprs = append(exprs, f.Expr)
			}
		}
	}
	if sel.Where != nil {
		exprs = append(exprs, sel.Where)
	}
	if sel.GroupBy != nil {
		for _, it := range sel.GroupBy.Items {
			exprs = append(exprs, it.Expr)
		}
	}
	if sel.Having != nil {
		exprs = append(exprs, sel.Having.Expr)
	}
	for _, e := range exprs {
		f := &subqueryFinder{}
		e.Accept(f)
		if f.found == nil {
			continue
		}
		if in, ok := f.found.(*ast.PatternInExpr); ok {
			at := ctx.PosOf(in)
			if _, p, ok := ctx.TokenBefore(in.Sel); ok {
				at = p
			}
			return &parser.Error{Pos: at, Msg: "IN (subquery) is supported only as a conjunct at the top level of WHERE (WHERE ... AND x IN (SELECT ...)), not under OR or NOT or elsewhere yet"}
		}
		return exprErr(ctx, f.found, "SELECT", "subqueries are supported only as conjuncts at the top level of WHERE ([NOT] EXISTS, [NOT] IN, a comparison with a scalar subquery) and as scalar subqueries in the select list of a SELECT without aggregation, not elsewhere yet")
	}
	return nil
}

// subqueryFinder finds the first subquery of an expression.
type subqueryFinder struct{ found ast.ExprNode }

func (v *subqueryFinder) Enter(n ast.Node) (ast.Node, bool) {
	if v.found != nil {
		return n, true
	}
	switch x := n.(type) {
	case *ast.PatternInExpr:
		if x.Sel != nil {
			v.found = x
			return n, true
		}
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.CompareSubqueryExpr:
		v.found = x.(ast.ExprNode)
		return n, true
	}
	return n, false
}
func (v *subqueryFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// buildProjection evaluates the select list over in. hook, when set,
// resolves aggregate calls and grouping keys (after an aggregation).
func (p *Planner) buildProjection(fields []*ast.SelectField, in *rel, ctx *parser.QueryContext, hook func(ast.ExprNode) (Expr, bool, error)) (*rel, error) {
	var projs []Expr
	var schema catalog.Schema
	var quals []string
	var nodes []ast.ExprNode // by column: the select-list expression (nil for *)
	exprN := 0
	for _, f := range fields {
		if f.WildCard != nil {
			if hook != nil && in.kind != relWindowRank && in.kind != relOver && !in.scalarSubs {
				return nil, ctx.Errorf("*", "SELECT * cannot be used with GROUP BY or aggregates")
			}
			q := strings.ToLower(f.WildCard.Table.O)
			matched := false
			for i, c := range in.schema[:len(in.schema)-in.hidden] {
				if q == "" || in.quals[i] == q {
					projs = append(projs, &ColRef{Index: i, Name: c.Name, T: c.Type})
					schema = append(schema, c)
					quals = append(quals, in.quals[i])
					nodes = append(nodes, nil)
					matched = true
				}
			}
			if !matched {
				return nil, ctx.Errorf(f.WildCard.Table.O, "unknown table '%s' in %s.*", f.WildCard.Table.O, f.WildCard.Table.O)
			}
			continue
		}
		b := &exprBuilder{p: p, ctx: ctx, in: in, hook: hook, clause: "SELECT"}
		e, err := b.build(f.Expr)
		if err != nil {
			return nil, err
		}
		if e.Type().Kind == catalog.KindNull {
			e = &Literal{T: catalog.String} // an untyped NULL column is a NULL STRING
		}
		name := f.AsName.O
		if name == "" {
			if cn, ok := unparen(f.Expr).(*ast.ColumnNameExpr); ok {
				name = cn.Name.Name.O
			} else {
				name = fmt.Sprintf("EXPR$%d", exprN)
			}
		}
		exprN++
		if f.AsName.O == "" {
			name = uniqueName(name, schema)
		}
		projs = append(projs, e)
		schema = append(schema, catalog.Column{Name: name, Type: e.Type()})
		quals = append(quals, "")
		nodes = append(nodes, f.Expr)
	}
	if err := checkDuplicateNames(schema, nodes, ctx); err != nil {
		return nil, err
	}
	if isIdentity(projs, in.schema) {
		out := *in
		out.schema, out.quals = schema, quals // only names may differ (aliases)
		out.hidden = 0
		return &out, nil
	}
	return &rel{kind: relCalc, input: in, schema: schema, quals: quals, mode: in.mode, projs: projs}, nil
}

// uniqueName returns name, or, when a column of s already has it, name
// followed by the first number that makes it unique: as Calcite names the
// derived columns of a select list (SELECT a.id, b.id gives id, id0), so
// that a join's columns of the same name can be selected without AS.
// Aliases written with AS are not renamed (checkDuplicateNames reports
// their duplicates).
func uniqueName(name string, s catalog.Schema) string {
	taken := func(n string) bool {
		for _, c := range s {
			if strings.EqualFold(c.Name, n) {
				return true
			}
		}
		return false
	}
	if !taken(name) {
		return name
	}
	for i := 0; ; i++ {
		if n := fmt.Sprintf("%s%d", name, i); !taken(n) {
			return n
		}
	}
}

// checkDuplicateNames reports the second of two select-list columns with
// the same name, at its expression (nodes[i], nil for a column of *).
func checkDuplicateNames(s catalog.Schema, nodes []ast.ExprNode, ctx *parser.QueryContext) error {
	seen := map[string]bool{}
	for i, c := range s {
		k := strings.ToLower(c.Name)
		if seen[k] {
			msg := fmt.Sprintf("duplicate column name '%s' in the select list; use AS to rename", c.Name)
			if i < len(nodes) && nodes[i] != nil && ctx.HasPos(nodes[i]) {
				return ctx.ErrorAt(nodes[i], "%s", msg)
			}
			return ctx.Errorf(c.Name, "%s", msg)
		}
		seen[k] = true
	}
	return nil
}

func isIdentity(projs []Expr, in catalog.Schema) bool {
	if len(projs) != len(in) {
		return false
	}
	for i, e := range projs {
		c, ok := e.(*ColRef)
		if !ok || c.Index != i {
			return false
		}
	}
	return true
}

func unparen(n ast.ExprNode) ast.ExprNode {
	for {
		p, ok := n.(*ast.ParenthesesExpr)
		if !ok {
			return n
		}
		n = p.Expr
	}
}

// distinct turns r into SELECT DISTINCT r: a keyed aggregation with no aggregates.
func (p *Planner) distinct(r *rel) *rel {
	keys := make([]int, len(r.schema))
	names := make([]string, len(r.schema))
	for i, c := range r.schema {
		keys[i] = i
		names[i] = c.Name
	}
	op := &AggOp{Keys: keys, InputMode: r.mode, Out: r.schema, MaxParallel: p.MaxParallelism, KeyNames: names, DistinctOnly: true}
	return &rel{kind: relAgg, input: r, schema: r.schema, quals: r.quals, mode: Retract, agg: op, describ: op.Describe()}
}

// buildFrom plans the FROM clause.
func (p *Planner) buildFrom(n ast.ResultSetNode, ctx *parser.QueryContext) (*rel, error) {
	switch x := n.(type) {
	case *ast.Join:
		if x.Right == nil {
			return p.buildFrom(x.Left, ctx)
		}
		if ts, ok := x.Right.(*ast.TableSource); ok {
			if tn, ok := ts.Source.(*ast.TableName); ok {
				if tf, ok := ctx.TableFunc(tn); ok {
					left, err := p.buildFrom(x.Left, ctx)
					if err != nil {
						return nil, err
					}
					return p.buildTableFunc(left, tf, ctx)
				}
			}
		}
		return p.buildJoin(x, ctx)
	case *ast.TableSource:
		var r *rel
		var err error
		switch src := x.Source.(type) {
		case *ast.TableName:
			if tf, ok := ctx.TableFunc(src); ok {
				if tf.Kind == "VALUES" {
					return p.buildValues(tf, ctx)
				}
				switch strings.ToUpper(tf.Name) {
				case "TUMBLE", "HOP", "CUMULATE", "SESSION":
					r, err := p.buildWindowTVF(tf, ctx)
					if err == nil && tf.Alias != "" {
						r = r.qualify(tf.Alias)
					}
					return r, err
				}
				return nil, ctx.Errorf("TABLE", "a table function needs a table on its left: FROM t, LATERAL TABLE(...)")
			}
			r, err = p.buildTableName(src, ctx)
		case *ast.SelectStmt:
			r, err = p.buildSelect(src, ctx)
			if err == nil {
				r = r.qualify("")
			}
		case *ast.SetOprStmt:
			r, err = p.buildSetOpr(src, ctx)
			if err == nil {
				r = r.qualify("")
			}
		default:
			return nil, ctx.Errorf("FROM", "unsupported FROM item")
		}
		if err != nil {
			return nil, err
		}
		if x.AsName.O != "" {
			r = r.qualify(x.AsName.O)
		}
		return r, nil
	}
	return nil, ctx.Errorf("FROM", "unsupported FROM clause")
}

func (p *Planner) buildTableName(tn *ast.TableName, ctx *parser.QueryContext) (*rel, error) {
	name := tn.Name.O
	ref, hasRef := ctx.TableRef(tn)
	at := func(format string, args ...any) error {
		if hasRef {
			return &parser.Error{Pos: ref.Pos, Msg: fmt.Sprintf(format, args...)}
		}
		return ctx.Errorf(name, format, args...)
	}
	switch {
	case hasRef && len(ref.Qualifiers) > 0:
		return nil, &parser.Error{Pos: ref.QualifierPos, Msg: fmt.Sprintf("catalogs and databases are not supported: write %s, not %s.%s", name, strings.Join(ref.Qualifiers, "."), name)}
	case !hasRef && tn.Schema.O != "":
		return nil, ctx.Errorf(tn.Schema.O, "catalogs and databases are not supported: use '%s'", name)
	}
	if i := p.lookupCTE(name); i >= 0 {
		return p.cteRef(i, tn, ctx)
	}
	if t, ok := p.Catalog.Table(name); ok {
		if p.CanRead != nil && !p.CanRead(t) {
			return nil, at("connector '%s' of table '%s' cannot be used as a source", t.Connector(), t.Name)
		}
		if hasRef && ref.Options != nil {
			var err error
			if t, err = withDynamicOptions(t, ref.Options, ref.HintPos); err != nil {
				return nil, err
			}
		}
		r, err := p.scanWithComputed(t)
		if err != nil {
			return nil, at("%v", err)
		}
		return r.qualify(name), nil
	}
	if v, ok := p.Catalog.View(name); ok {
		if hasRef && ref.Options != nil {
			return nil, &parser.Error{Pos: ref.HintPos, Msg: fmt.Sprintf("'%s' is a view: an OPTIONS hint applies to tables only", name)}
		}
		q, ok := v.Query.(*parser.Query)
		if !ok {
			return nil, at("view '%s' has no query", name)
		}
		r, err := p.buildQuery(q)
		if err != nil {
			return nil, fmt.Errorf("in view '%s': %w", name, err)
		}
		markView(r, name)
		if len(v.Columns) > 0 {
			out := *r
			out.schema = append(catalog.Schema(nil), r.schema...)
			for i := range out.schema {
				out.schema[i].Name = v.Columns[i]
			}
			r = &out
		}
		return r.qualify(name), nil
	}
	msg := fmt.Sprintf("table or view '%s' not found", name)
	if s := catalog.Suggest(name, p.Catalog.TableNames()); s != "" {
		msg += fmt.Sprintf("; did you mean '%s'?", s)
	}
	return nil, at("%s", msg)
}

func (p *Planner) buildTableFunc(left *rel, tf *parser.TableFunc, ctx *parser.QueryContext) (*rel, error) {
	name := strings.ToLower(tf.Name)
	args := tf.Args
	// UNNEST(SPLIT(s, d)) and UNNEST(STRING_TO_ARRAY(s, d)) mean SPLIT(s, d).
	if name == "unnest" && len(args) == 1 {
		if fc, ok := unparen(args[0]).(*ast.FuncCallExpr); ok {
			name, args = fc.FnName.L, fc.Args
		}
	}
	if name == "string_to_array" || name == "split_to_table" || name == "regexp_split_to_table" {
		name = "split"
	}
	if name == "unnest" {
		return nil, &parser.Error{Pos: tf.Pos, Msg: "UNNEST is supported only over SPLIT, e.g. CROSS JOIN UNNEST(SPLIT(s, ',')) AS T(word) (there are no ARRAY or MAP types yet)"}
	}
	if name != "split" {
		return nil, &parser.Error{Pos: tf.Pos, Msg: fmt.Sprintf("unknown table function %s (built-in: SPLIT(string[, delimiter]))", tf.Name)}
	}
	if len(args) < 1 || len(args) > 2 {
		return nil, &parser.Error{Pos: tf.Pos, Msg: "SPLIT takes (string[, delimiter])"}
	}
	b := &exprBuilder{p: p, ctx: ctx, in: left, clause: "LATERAL TABLE"}
	var eargs []Expr
	for i, a := range args {
		e, err := b.build(a)
		if err != nil {
			return nil, err
		}
		if e.Type().Kind != catalog.KindString {
			if e.Type().Kind == catalog.KindNull {
				e = &Literal{T: catalog.String}
			} else {
				return nil, &parser.Error{Pos: tf.Pos, Msg: fmt.Sprintf("SPLIT argument %d must be STRING, got %s", i+1, e.Type())}
			}
		}
		eargs = append(eargs, e)
	}
	col := "f0"
	if len(tf.Columns) > 0 {
		col = tf.Columns[0]
	}
	if len(tf.Columns) > 1 {
		return nil, &parser.Error{Pos: tf.Pos, Msg: "SPLIT returns one column"}
	}
	schema := append(append(catalog.Schema{}, left.schema...), catalog.Column{Name: col, Type: catalog.String.WithNotNull(true)})
	quals := append(append([]string{}, left.quals...), strings.ToLower(tf.Alias))
	op := &TableFuncOp{Fn: "split", Args: eargs, Out: schema}
	return &rel{kind: relTableFunc, input: left, schema: schema, quals: quals, mode: left.mode, tfunc: op, describ: op.Describe()}, nil
}
