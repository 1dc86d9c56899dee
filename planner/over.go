package planner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// OVER aggregations (Flink's OverAggregate):
//
//	SELECT ..., SUM(x) OVER (PARTITION BY k ORDER BY ts
//	  ROWS BETWEEN n PRECEDING AND CURRENT ROW) AS s, ... FROM t
//
// Every aggregate of a SELECT must use the same window. On an event-time
// attribute, rows wait for the watermark and are processed in time order
// (rows of one time together for RANGE); on PROCTIME() each row at once.
// Append-only output: the input columns, then one column per aggregate.

// OverAgg is one aggregate of an OverAggOp: Fn is count, count_star, sum,
// avg, min or max; Arg the input column (-1 for count_star).
type OverAgg struct {
	Fn   string
	Arg  int
	Name string // as written, for EXPLAIN
	T    catalog.Type
}

// OverAggOp computes Aggs over a frame of the rows of each PartKeys before
// and including the current row, ordered by TimeCol.
type OverAggOp struct {
	ID        string
	PartKeys  []int
	PartNames []string
	TimeCol   int
	TimeName  string
	RowTime   bool
	// Rows: a ROWS frame (Preceding rows before the current one); else a
	// RANGE frame (Preceding milliseconds). Unbounded: UNBOUNDED PRECEDING.
	Rows        bool
	Unbounded   bool
	Preceding   int64
	Aggs        []OverAgg
	Out         catalog.Schema
	MaxParallel int
}

func (o *OverAggOp) OpID() string { return o.ID }

func (o *OverAggOp) frame() string {
	kind := "RANGE"
	if o.Rows {
		kind = "ROWS"
	}
	switch {
	case o.Unbounded:
		return kind + " BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
	case o.Rows:
		return fmt.Sprintf("ROWS BETWEEN %d PRECEDING AND CURRENT ROW", o.Preceding)
	}
	return fmt.Sprintf("RANGE BETWEEN %d ms PRECEDING AND CURRENT ROW", o.Preceding)
}

func (o *OverAggOp) Describe() string {
	aggs := make([]string, len(o.Aggs))
	for i, a := range o.Aggs {
		aggs[i] = a.Name
	}
	return fmt.Sprintf("OverAggregate(partitionBy=[%s], orderBy=[%s ASC], window=[%s], select=[%s])",
		strings.Join(o.PartNames, ", "), o.TimeName, o.frame(), strings.Join(aggs, ", "))
}

// relOver is an OVER aggregation (rel.over).
const relOver relKind = 160

var overAggFns = map[string]bool{"sum": true, "count": true, "avg": true, "min": true, "max": true}

// overAggFields returns the select-list aggregate window functions of sel
// (nil: none).
func overAggFields(sel *ast.SelectStmt) []*ast.WindowFuncExpr {
	var out []*ast.WindowFuncExpr
	for _, f := range sel.Fields.Fields {
		if f.Expr == nil {
			continue
		}
		v := &windowFinder{}
		f.Expr.Accept(v)
		for _, wf := range v.found {
			if overAggFns[strings.ToLower(wf.Name)] {
				out = append(out, wf)
			}
		}
	}
	return out
}

// buildOver plans the OVER aggregations wfs of sel over in.
func (p *Planner) buildOver(sel *ast.SelectStmt, wfs []*ast.WindowFuncExpr, in *rel, ctx *parser.QueryContext) (*rel, error) {
	first := wfs[0]
	errAt := func(n ast.Node, format string, args ...any) error {
		if n != nil && ctx.HasPos(n) {
			return ctx.ErrorAt(n, format, args...)
		}
		return ctx.ErrorAt(first, format, args...)
	}
	for _, f := range sel.Fields.Fields {
		if f.Expr == nil {
			continue
		}
		v := &windowFinder{}
		f.Expr.Accept(v)
		for _, wf := range v.found {
			if !overAggFns[strings.ToLower(wf.Name)] {
				return nil, errAt(wf, "%s() OVER (...) cannot be combined with OVER aggregations in one SELECT", strings.ToUpper(wf.Name))
			}
			if unparen(f.Expr) != wf {
				return nil, errAt(wf, "an OVER aggregation must be a select-list column of its own (compute with it in an enclosing query)")
			}
		}
	}
	if sel.Distinct || sel.GroupBy != nil || sel.Having != nil || containsAgg(sel.Fields.Fields) {
		return nil, errAt(first, "OVER aggregations cannot be combined with GROUP BY, aggregates or DISTINCT in the same SELECT")
	}
	if sel.WindowSpecs != nil {
		return nil, errAt(first, "named windows (OVER w, WINDOW w AS ...) are not supported; write the window in the OVER clause")
	}
	if in.mode != InsertOnly {
		return nil, errAt(first, "an OVER aggregation needs an append-only input, but its input is updating (because of %s)", in.updatingNode())
	}
	col := func(n ast.ExprNode, clause string) (*ColRef, error) {
		b := &exprBuilder{p: p, ctx: ctx, in: in, clause: clause}
		e, err := b.build(n)
		if err != nil {
			return nil, err
		}
		c, ok := e.(*ColRef)
		if !ok {
			return nil, errAt(n, "the %s of an OVER aggregation must name columns, not expressions (compute them in a subquery)", clause)
		}
		return c, nil
	}
	op := &OverAggOp{MaxParallel: p.MaxParallelism}
	spec := first.Spec
	if spec.Name.O != "" || spec.Ref.O != "" {
		return nil, errAt(first, "named windows (OVER w, WINDOW w AS ...) are not supported; write the window in the OVER clause")
	}
	if spec.PartitionBy != nil {
		for _, it := range spec.PartitionBy.Items {
			c, err := col(it.Expr, "PARTITION BY")
			if err != nil {
				return nil, err
			}
			op.PartKeys = append(op.PartKeys, c.Index)
			op.PartNames = append(op.PartNames, in.schema[c.Index].Name)
		}
	}
	if spec.OrderBy == nil || len(spec.OrderBy.Items) != 1 {
		return nil, errAt(first, "an OVER aggregation must be ordered by one time attribute (ORDER BY ts), as in Flink")
	}
	ob := spec.OrderBy.Items[0]
	tc, err := col(ob.Expr, "ORDER BY")
	if err != nil {
		return nil, err
	}
	if !timeAttrs(in)[tc.Index] {
		return nil, errAt(ob.Expr, "an OVER aggregation must be ordered by a time attribute (a rowtime column or PROCTIME()), not '%s'", tc.Name)
	}
	if ob.Desc {
		return nil, errAt(ob.Expr, "an OVER aggregation must be ordered ascending by its time attribute")
	}
	op.TimeCol, op.TimeName, op.RowTime = tc.Index, in.schema[tc.Index].Name, !procTimeAttr(in, tc.Index)
	if err := overFrame(op, spec.Frame, errAt); err != nil {
		return nil, err
	}
	if !op.RowTime && !op.Rows && !op.Unbounded {
		return nil, errAt(first, "RANGE BETWEEN INTERVAL ... PRECEDING over processing time is not supported yet; use ROWS or an event-time attribute")
	}
	frameText := func(wf *ast.WindowFuncExpr) string {
		var sb strings.Builder
		if wf.Spec.Frame != nil {
			st := wf.Spec.Frame.Extent.Start
			fmt.Fprintf(&sb, "%d|%v|%v|%v", wf.Spec.Frame.Type, st.Type, st.UnBounded, st.Unit)
			if v, ok := st.Expr.(ast.ValueExpr); ok {
				fmt.Fprintf(&sb, "|%v", v.GetValue())
			}
		}
		return sb.String()
	}
	for _, wf := range wfs[1:] {
		if !sameWindow(wf.Spec, first.Spec) || frameText(wf) != frameText(first) {
			return nil, errAt(wf, "all OVER aggregations of a SELECT must use the same window (PARTITION BY, ORDER BY and frame), as Flink requires")
		}
	}
	schema := append(catalog.Schema{}, in.schema...)
	quals := append([]string{}, in.quals...)
	for _, wf := range wfs {
		fn := strings.ToLower(wf.Name)
		a := OverAgg{Fn: fn, Arg: -1}
		if fn == "count" && (len(wf.Args) == 0 || isCountStar(wf.Args[0])) {
			a.Fn, a.Name = "count_star", "COUNT(*)"
		} else {
			if len(wf.Args) != 1 {
				return nil, errAt(wf, "%s takes one argument", strings.ToUpper(fn))
			}
			c, err := col(wf.Args[0], "argument")
			if err != nil {
				return nil, err
			}
			a.Arg, a.Name = c.Index, fmt.Sprintf("%s(%s)", strings.ToUpper(fn), c.Name)
		}
		if a.Arg >= 0 {
			t := in.schema[a.Arg].Type
			switch t.Kind {
			case catalog.KindInt, catalog.KindBigInt, catalog.KindDouble:
			default:
				if fn != "count" {
					return nil, errAt(wf, "%s OVER (...) of a %s column is not supported yet (INT, BIGINT and DOUBLE are)", strings.ToUpper(fn), t)
				}
			}
			rt, err := aggResultType(fn, t)
			if err != nil {
				return nil, errAt(wf, "%v", err)
			}
			a.T = rt
		} else {
			a.T = catalog.BigInt.WithNotNull(true)
		}
		op.Aggs = append(op.Aggs, a)
		name := fmt.Sprintf("w0$o%d", len(op.Aggs)-1)
		schema = append(schema, catalog.Column{Name: name, Type: a.T})
		quals = append(quals, "")
	}
	op.Out = schema
	return &rel{kind: relOver, input: in, schema: schema, quals: quals, mode: InsertOnly, over: op, hidden: len(wfs), describ: op.Describe()}, nil
}

func isCountStar(e ast.ExprNode) bool {
	if v, ok := e.(ast.ValueExpr); ok {
		return v.GetValue() != nil && fmt.Sprint(v.GetValue()) == "1"
	}
	return false
}

// sameWindow compares the PARTITION BY and ORDER BY of two window specs as
// written.
func sameWindow(a, b ast.WindowSpec) bool {
	text := func(s ast.WindowSpec) string {
		var parts []string
		if s.PartitionBy != nil {
			for _, it := range s.PartitionBy.Items {
				parts = append(parts, exprText(it.Expr))
			}
		}
		parts = append(parts, "|")
		if s.OrderBy != nil {
			for _, it := range s.OrderBy.Items {
				parts = append(parts, exprText(it.Expr), strconv.FormatBool(it.Desc))
			}
		}
		return strings.Join(parts, ",")
	}
	return text(a) == text(b)
}

func exprText(e ast.ExprNode) string {
	if c, ok := e.(*ast.ColumnNameExpr); ok {
		return strings.ToLower(c.Name.Table.O + "." + c.Name.Name.O)
	}
	return fmt.Sprintf("%T", e)
}

// overFrame reads the frame of an OVER aggregation: ROWS/RANGE BETWEEN
// UNBOUNDED or n / INTERVAL PRECEDING AND CURRENT ROW; no frame is RANGE
// UNBOUNDED PRECEDING (Flink's default with an ORDER BY).
func overFrame(op *OverAggOp, f *ast.FrameClause, errAt func(ast.Node, string, ...any) error) error {
	if f == nil {
		op.Unbounded = true
		return nil
	}
	switch f.Type {
	case ast.Rows:
		op.Rows = true
	case ast.Ranges:
	default:
		return errAt(nil, "only ROWS and RANGE frames are supported")
	}
	if f.Extent.End.Type != ast.CurrentRow {
		return errAt(nil, "an OVER aggregation's frame must end at CURRENT ROW (as Flink)")
	}
	st := f.Extent.Start
	if st.Type != ast.Preceding {
		if st.Type == ast.CurrentRow {
			op.Preceding = 0
			return nil
		}
		return errAt(nil, "an OVER aggregation's frame must start at UNBOUNDED PRECEDING, n PRECEDING or CURRENT ROW")
	}
	if st.UnBounded {
		op.Unbounded = true
		return nil
	}
	v, ok := st.Expr.(ast.ValueExpr)
	if !ok {
		return errAt(st.Expr, "the frame bound must be a literal")
	}
	n, err := strconv.ParseInt(fmt.Sprint(v.GetValue()), 10, 64)
	if err != nil || n < 0 {
		return errAt(st.Expr, "the frame bound must be a non-negative integer")
	}
	if op.Rows {
		if st.Unit != 0 {
			return errAt(st.Expr, "a ROWS frame counts rows: n PRECEDING, not an INTERVAL")
		}
		op.Preceding = n
		return nil
	}
	ms := map[string]int64{"MICROSECOND": 0, "SECOND": 1000, "MINUTE": 60_000, "HOUR": 3_600_000, "DAY": 86_400_000}
	m, ok := ms[strings.ToUpper(fmt.Sprint(st.Unit))]
	if !ok || m == 0 {
		return errAt(st.Expr, "a RANGE frame takes INTERVAL 'n' SECOND|MINUTE|HOUR|DAY PRECEDING")
	}
	op.Preceding = n * m
	return nil
}

// buildOverTask builds the task of an OVER aggregation: hash-partitioned
// by the PARTITION BY keys, or all into one subtask without them.
func (b *physBuilder) buildOverTask(r *rel) *Task {
	in := b.build(r.input)
	op := r.over
	par, kind := b.p.Parallelism, Hash
	if len(op.PartKeys) == 0 {
		par, kind = 1, Global
	}
	t := b.newTask(par)
	b.connect(b.skipReader(in), t, kind, op.PartKeys)
	t.Ops = append(t.Ops, op)
	b.ids.ordinal++
	keys := make([]string, len(op.PartKeys))
	for i, k := range op.PartKeys {
		keys[i] = lineage(r.input, k)
	}
	aggs := make([]string, len(op.Aggs))
	for i, a := range op.Aggs {
		aggs[i] = a.Fn
		if a.Arg >= 0 {
			aggs[i] += "(" + lineage(r.input, a.Arg) + ")"
		}
	}
	op.ID = b.unique(hashID("OverAggregate",
		"sources="+strings.Join(sourceTables(r.input), ","),
		"keys="+strings.Join(keys, ","),
		"order="+lineage(r.input, op.TimeCol),
		"frame="+op.frame(),
		"aggs="+strings.Join(aggs, ","),
		fmt.Sprintf("ordinal=%d", b.ids.ordinal-1)))
	t.OutSchema, t.OutMode = r.schema, InsertOnly
	return t
}

// overMeta is the upgrade check's description of an OVER aggregation's
// state (upgrade.go).
func overMeta(t *Task, o *OverAggOp) OperatorMeta {
	m := OperatorMeta{ID: o.ID, Kind: KindOverAggregate, Description: o.Describe(), UID: !isDerivedID(o.ID)}
	if srcs := taskSources(t); len(srcs) > 0 {
		m.Description += " on " + strings.Join(srcs, ", ")
	}
	for _, k := range o.PartKeys {
		m.State.Keys = append(m.State.Keys, StateColumn{Name: o.Out[k].Name, Type: typeName(o.Out[k].Type)})
	}
	nIn := len(o.Out) - len(o.Aggs)
	for _, c := range o.Out[:nIn] {
		m.State.Rows = append(m.State.Rows, StateColumn{Name: c.Name, Type: typeName(c.Type)})
	}
	for _, a := range o.Aggs {
		acc := AccumulatorState{Fn: a.Fn, Type: typeName(a.T)}
		if a.Arg >= 0 {
			acc.ArgType = typeName(o.Out[a.Arg].Type)
		}
		m.State.Accumulators = append(m.State.Accumulators, acc)
	}
	m.State.Window = o.frame()
	if !o.RowTime {
		m.State.Window += " over processing time"
	}
	return m
}
