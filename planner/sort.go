package planner

// ORDER BY and LIMIT of a query.
//
// LIMIT n [OFFSET m] without ORDER BY keeps rows m+1 .. m+n of an
// append-only input, in arrival order (Flink's StreamExecLimit): one task
// at parallelism 1, append-only output, the count of rows seen in state.
// ORDER BY <event-time attribute> ASC [, other columns] is Flink's temporal
// sort (exec/sort.go): rows are buffered until the watermark passes them,
// then emitted in order; append-only, at parallelism 1; with LIMIT, the
// Limit runs after it. ORDER BY other columns would be a TopN (with
// LIMIT; not supported yet) or is not supported on a stream, as in Flink.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

const (
	relLimit relKind = 140
	relSort  relKind = 141
)

// sortRel is what relSort and relLimit add to rel.
type sortRel struct {
	limit *LimitOp
	sort  *SortOp
}

// orderLimit plans ORDER BY and LIMIT over r.
func (p *Planner) orderLimit(r *rel, ob *ast.OrderByClause, lim *ast.Limit, ctx *parser.QueryContext) (*rel, error) {
	if ob != nil && lim != nil && !p.sortsByTime(r, ob, ctx) {
		return p.sortLimit(r, ob, lim, ctx)
	}
	if ob != nil {
		var err error
		if r, err = p.temporalSort(r, ob, ctx); err != nil {
			return nil, err
		}
	}
	if lim == nil {
		return r, nil
	}
	count, err := limitValue(lim.Count, "LIMIT", ctx)
	if err != nil {
		return nil, err
	}
	var offset int64
	if lim.Offset != nil {
		if offset, err = limitValue(lim.Offset, "OFFSET", ctx); err != nil {
			return nil, err
		}
	}
	if r.mode != InsertOnly {
		return nil, ctx.Errorf("LIMIT", "LIMIT over an updating input (produced by %s) is not supported yet", r.updatingNode())
	}
	if r.hidden > 0 {
		r = dropHidden(r)
	}
	op := &LimitOp{Offset: offset, Count: count, Out: r.schema, Mode: r.mode}
	return &rel{kind: relLimit, input: r, schema: r.schema, quals: r.quals, mode: r.mode, srt: &sortRel{limit: op}, describ: op.Describe()}, nil
}

// sortsByTime reports whether ORDER BY ob starts with an ascending
// time attribute of r (a temporal sort; else, with a LIMIT, a TopN).
func (p *Planner) sortsByTime(r *rel, ob *ast.OrderByClause, ctx *parser.QueryContext) bool {
	if len(ob.Items) == 0 || ob.Items[0].Desc {
		return false
	}
	b := &exprBuilder{p: p, ctx: ctx, in: r, clause: "ORDER BY"}
	e, err := b.build(ob.Items[0].Expr)
	if err != nil {
		return true // temporalSort reports it
	}
	c, isCol := e.(*ColRef)
	return isCol && timeAttrs(r)[c.Index]
}

// sortLimit plans ORDER BY k [DESC], ... LIMIT n [OFFSET m] (not by a time
// attribute) as Flink does: a global TopN of the rows ranked m+1..m+n
// without the rank column (an updating result, at parallelism 1).
func (p *Planner) sortLimit(r *rel, ob *ast.OrderByClause, lim *ast.Limit, ctx *parser.QueryContext) (*rel, error) {
	count, err := limitValue(lim.Count, "LIMIT", ctx)
	if err != nil {
		return nil, err
	}
	var offset int64
	if lim.Offset != nil {
		if offset, err = limitValue(lim.Offset, "OFFSET", ctx); err != nil {
			return nil, err
		}
	}
	if count == 0 {
		return nil, ctx.Errorf("LIMIT", "ORDER BY ... LIMIT 0 returns no rows; use a LIMIT of at least 1")
	}
	if r.hidden > 0 {
		r = dropHidden(r)
	}
	op := &WindowRankOp{RankType: RowNumber, MaxParallel: p.MaxParallelism, WinStart: -1, WinEnd: -1,
		RankStart: offset + 1, RankEnd: offset + count}
	b := &exprBuilder{p: p, ctx: ctx, in: r, clause: "ORDER BY"}
	for _, it := range ob.Items {
		e, err := b.build(it.Expr)
		if err != nil {
			return nil, err
		}
		c, ok := e.(*ColRef)
		if !ok {
			return nil, exprErr(ctx, it.Expr, "ORDER", "ORDER BY takes columns of the select list; compute the expression in the SELECT and order by its name")
		}
		if k := c.T.Kind; k == catalog.KindRow || k == catalog.KindNull {
			return nil, exprErr(ctx, it.Expr, "ORDER", "cannot order by %s column '%s'", c.T, c.Name)
		}
		op.Order = append(op.Order, SortKey{Col: c.Index, Name: r.schema[c.Index].Name, Desc: it.Desc})
	}
	for _, c := range r.schema {
		if c.Type.Kind == catalog.KindRow {
			return nil, ctx.Errorf("ORDER", "ORDER BY ... LIMIT cannot keep the ROW column '%s' yet: select its fields", c.Name)
		}
	}
	op.Out = append(append(catalog.Schema{}, r.schema...), catalog.Column{Name: "$rownum", Type: catalog.BigInt.WithNotNull(true)})
	rr := &rankRel{op: op, pos: ctx.Locate("ORDER"), fn: "ROW_NUMBER", bounded: true, regular: &regularRank{inMode: r.mode}}
	rk := &rel{kind: relWindowRank, input: r, schema: op.Out, quals: append(append([]string{}, r.quals...), ""), mode: Retract, rank: rr, hidden: 1, describ: "Rank"}
	return dropHidden(settleRegular(rk, false)), nil
}

// limitValue reads the non-negative integer literal of LIMIT or OFFSET.
func limitValue(n ast.ExprNode, word string, ctx *parser.QueryContext) (int64, error) {
	b := &exprBuilder{ctx: ctx, in: &rel{kind: relScan, values: true}, clause: word}
	e, err := b.build(n)
	if err == nil {
		if l, ok := e.(*Literal); ok {
			switch v := l.Value.(type) {
			case int32:
				if v >= 0 {
					return int64(v), nil
				}
			case int64:
				if v >= 0 {
					return v, nil
				}
			}
		}
	}
	return 0, ctx.Errorf(word, "%s takes a non-negative integer literal", word)
}

// temporalSort plans ORDER BY over r.
func (p *Planner) temporalSort(r *rel, ob *ast.OrderByClause, ctx *parser.QueryContext) (*rel, error) {
	if len(ob.Items) == 0 {
		return r, nil
	}
	first := ob.Items[0]
	attrs := timeAttrs(r)
	b := &exprBuilder{p: p, ctx: ctx, in: r, clause: "ORDER BY"}
	e, err := b.build(first.Expr)
	if err != nil {
		return nil, err
	}
	c, isCol := e.(*ColRef)
	if !isCol || !attrs[c.Index] {
		return nil, exprErr(ctx, first.Expr, "ORDER", "Sort on a non-time-attribute field is not supported: a streaming ORDER BY must start with a time attribute in ascending order, or have a LIMIT (ORDER BY <column> LIMIT n is a TopN)")
	}
	if first.Desc {
		return nil, exprErr(ctx, first.Expr, "ORDER", "a streaming ORDER BY sorts by a time attribute in ascending order only: %s DESC is not supported", c.Name)
	}
	if procTimeAttr(r, c.Index) {
		return nil, exprErr(ctx, first.Expr, "ORDER", "ORDER BY a processing-time attribute is not supported yet; sort by an event-time attribute (a column with a WATERMARK)")
	}
	if r.mode != InsertOnly {
		return nil, exprErr(ctx, first.Expr, "ORDER", "ORDER BY a time attribute needs an append-only input, but this one is updating (produced by %s)", r.updatingNode())
	}
	if r.hidden > 0 {
		r = dropHidden(r)
	}
	op := &SortOp{Time: c.Index, Out: r.schema}
	for _, it := range ob.Items[1:] {
		e, err := b.build(it.Expr)
		if err != nil {
			return nil, err
		}
		k, ok := e.(*ColRef)
		if !ok {
			return nil, exprErr(ctx, it.Expr, "ORDER", "ORDER BY takes columns of the select list; compute the expression in the SELECT and order by its name")
		}
		op.Keys = append(op.Keys, SortKey{Col: k.Index, Name: r.schema[k.Index].Name, Desc: it.Desc})
	}
	return &rel{kind: relSort, input: r, schema: r.schema, quals: r.quals, mode: InsertOnly, srt: &sortRel{sort: op}, describ: op.Describe()}, nil
}

// buildSortTask builds the task of a relLimit or relSort: at parallelism
// 1, chained to an input at parallelism 1, else behind a GLOBAL edge.
func (b *physBuilder) buildSortTask(r *rel) *Task {
	in := b.build(r.input)
	t := in
	if in.Parallelism != 1 {
		t = b.newTask(1)
		b.connect(b.skipReader(in), t, Global, nil)
	}
	ord := b.ids.ordinal
	b.ids.ordinal++
	cols := make([]string, len(r.schema))
	for i := range cols {
		cols[i] = lineage(r.input, i)
	}
	var op Op
	switch {
	case r.srt.limit != nil:
		l := r.srt.limit
		l.ID = b.unique(hashID("Limit", "sources="+strings.Join(sourceTables(r.input), ","),
			"cols="+strings.Join(cols, ","), "ordinal="+strconv.Itoa(ord)))
		op = l
	default:
		s := r.srt.sort
		s.ID = b.unique(hashID("TemporalSort", "sources="+strings.Join(sourceTables(r.input), ","),
			"cols="+strings.Join(cols, ","), "ordinal="+strconv.Itoa(ord)))
		op = s
	}
	t.Ops = append(t.Ops, op)
	t.OutSchema, t.OutMode = r.schema, r.mode
	return t
}

// LimitOp keeps rows Offset+1 .. Offset+Count of its append-only input
// (parallelism 1).
type LimitOp struct {
	ID     string
	Offset int64
	Count  int64
	Out    catalog.Schema
	Mode   ChangelogMode
}

func (o *LimitOp) OpID() string { return o.ID }
func (o *LimitOp) Describe() string {
	return fmt.Sprintf("Limit(offset=[%d], fetch=[%d])", o.Offset, o.Count)
}

// SortOp is the temporal sort: rows are buffered until the watermark
// passes their time (column Time), then emitted ordered by Time and the
// further Keys.
type SortOp struct {
	ID   string
	Time int
	Keys []SortKey
	Out  catalog.Schema
}

func (o *SortOp) OpID() string { return o.ID }
func (o *SortOp) Describe() string {
	parts := []string{o.Out[o.Time].Name + " ASC"}
	for _, k := range o.Keys {
		parts = append(parts, k.String())
	}
	return "TemporalSort(orderBy=[" + strings.Join(parts, ", ") + "])"
}
