package planner

import (
	"fmt"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// Window TopN and window deduplication (Flink's WindowRank and
// WindowDeduplicate).
//
//	SELECT * FROM (
//	  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end [, k...]
//	                               ORDER BY x DESC [, ...]) AS rownum
//	  FROM <window TVF or window aggregation>)
//	WHERE rownum <= N
//
// The inner SELECT plans a relWindowRank without a rank range; the outer
// WHERE (rownum <= N, < N, = N, BETWEEN a AND b, >= a together with an
// upper bound) gives it one, and the rest of the WHERE stays a filter
// after it. A window rank that reaches the physical plan without a range is
// an error (Flink would plan a regular, updating OVER aggregation).
// ROW_NUMBER with rownum = 1 (or <= 1), ordered by the time attribute of
// the rows of a window TVF, is a window deduplication.

// RankType is the ranking function of a window TopN.
type RankType uint8

const (
	RowNumber RankType = iota
	Rank
	DenseRank
)

func (t RankType) String() string {
	return [...]string{"ROW_NUMBER", "RANK", "DENSE_RANK"}[t]
}

// WindowRankOp is a window TopN or a window deduplication: per window
// (WinStart, WinEnd columns of the input) and PartKeys, the rows whose rank
// by Order lies in [RankStart, RankEnd], emitted once, as +I, when the
// watermark passes the window's end. Output: the input columns, then the
// rank (BIGINT) when OutputRank.
type WindowRankOp struct {
	ID        string
	PartKeys  []int
	PartNames []string
	WinStart  int
	WinEnd    int
	Order     []SortKey
	RankType  RankType
	RankStart int64
	RankEnd   int64
	// Dedup: a window deduplication (ROW_NUMBER, rank 1, ordered by the
	// rowtime); KeepLast when ordered DESC (of equal times the last row).
	Dedup       bool
	KeepLast    bool
	OutputRank  bool
	Window      string // the window's description (EXPLAIN, upgrade check)
	Out         catalog.Schema
	MaxParallel int
}

// SortKey is one ORDER BY column; NULLs sort as the smallest values (first
// ascending, last descending), as in Flink.
type SortKey struct {
	Col  int
	Name string
	Desc bool
}

func (k SortKey) String() string {
	if k.Desc {
		return k.Name + " DESC"
	}
	return k.Name + " ASC"
}

func (o *WindowRankOp) OpID() string { return o.ID }
func (o *WindowRankOp) Describe() string {
	order := make([]string, len(o.Order))
	for i, k := range o.Order {
		order[i] = k.String()
	}
	if o.Dedup {
		keep := "FirstRow"
		if o.KeepLast {
			keep = "LastRow"
		}
		return fmt.Sprintf("WindowDeduplicate(window=[%s], keep=[%s], partitionKeys=[%s], orderKey=[%s])",
			o.Window, keep, strings.Join(o.PartNames, ", "), o.Order[0].Name)
	}
	return fmt.Sprintf("WindowRank(window=[%s], rankType=[%s], rankRange=[rankStart=%d, rankEnd=%d], partitionBy=[%s], orderBy=[%s], select=[%s])",
		o.Window, o.RankType, o.RankStart, o.RankEnd, strings.Join(o.PartNames, ", "), strings.Join(order, ", "), strings.Join(o.Out.Names(), ", "))
}

// relWindowRank is a window TopN (rel.rank).
const relWindowRank relKind = 110

// rankRel is what a relWindowRank adds to rel.
type rankRel struct {
	op      *WindowRankOp
	bounded bool       // the outer WHERE gave a rank range
	pos     parser.Pos // where the ranking function is written
	fn      string     // as written
	view    string     // the view it is written in ("": the query)
	// dedupCandidate: ROW_NUMBER over the rows of a window TVF ordered by
	// one time attribute column.
	dedupCandidate bool
	// regular: a regular (non-window) TopN or deduplication (rank.go).
	regular *regularRank
}

// windowFuncField returns the select-list window function of sel (nil:
// none) or an error for one the engine does not plan.
func windowFuncField(sel *ast.SelectStmt, ctx *parser.QueryContext) (*ast.WindowFuncExpr, error) {
	var found *ast.WindowFuncExpr
	for _, f := range sel.Fields.Fields {
		if f.Expr == nil {
			continue
		}
		v := &windowFinder{}
		f.Expr.Accept(v)
		if len(v.found) == 0 {
			continue
		}
		wf := v.found[0]
		if unparen(f.Expr) != wf {
			return nil, ctx.ErrorAt(wf, "%s() OVER (...) must be a select-list column of its own (Window TopN: SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY ...) AS rownum FROM ...)", strings.ToUpper(wf.Name))
		}
		if found != nil || len(v.found) > 1 {
			return nil, ctx.ErrorAt(wf, "only one ranking function OVER (...) per SELECT is supported")
		}
		found = wf
	}
	return found, nil
}

type windowFinder struct{ found []*ast.WindowFuncExpr }

func (v *windowFinder) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.WindowFuncExpr:
		v.found = append(v.found, x)
		return n, true
	case *ast.SubqueryExpr:
		return n, true
	}
	return n, false
}
func (v *windowFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// windowCols tells, per column of r, whether it is the window_start (0),
// window_end (1) or window_time (2) of a window TVF or window aggregation
// below it (-1: neither), and the window's description.
func windowCols(r *rel) ([]int, string, bool) {
	out := make([]int, len(r.schema))
	for i := range out {
		out[i] = -1
	}
	switch r.kind {
	case relWindowTVF:
		w := len(r.input.schema)
		for i := range windowColumns {
			out[w+i] = i
		}
		return out, r.win.spec.String(), true
	case relWindowAgg:
		k := len(r.win.agg.Keys)
		for i := range windowColumns {
			out[k+i] = i
		}
		return out, r.win.spec.String(), true
	case relCalc:
		in, desc, ok := windowCols(r.input)
		if !ok {
			return out, "", false
		}
		if r.projs == nil {
			copy(out, in)
			return out, desc, true
		}
		for i, e := range r.projs {
			if c, isCol := e.(*ColRef); isCol {
				out[i] = in[c.Index]
			}
		}
		return out, desc, true
	case relWindowRank:
		in, desc, ok := windowCols(r.input)
		copy(out, in)
		return out, desc, ok
	}
	return out, "", false
}

// overTVFRows reports whether r is a window TVF's rows, maybe filtered.
func overTVFRows(r *rel) bool {
	for r.kind == relCalc && r.projs == nil {
		r = r.input
	}
	return r.kind == relWindowTVF
}

// buildWindowRank plans the ranking function wf of a SELECT over in: the
// result has in's columns and the rank (hidden from SELECT *).
func (p *Planner) buildWindowRank(sel *ast.SelectStmt, wf *ast.WindowFuncExpr, in *rel, ctx *parser.QueryContext) (*rel, error) {
	name := strings.ToUpper(wf.Name)
	errAt := func(n ast.Node, format string, args ...any) error {
		if n != nil && ctx.HasPos(n) {
			return ctx.ErrorAt(n, format, args...)
		}
		return ctx.ErrorAt(wf, format, args...)
	}
	var rt RankType
	switch name {
	case "ROW_NUMBER":
		rt = RowNumber
	case "RANK":
		rt = Rank
	case "DENSE_RANK":
		rt = DenseRank
	default:
		return nil, errAt(wf, "%s OVER (...) is not supported yet: of the OVER functions only ROW_NUMBER, RANK and DENSE_RANK (TopN) and COUNT, SUM, AVG, MIN and MAX (OVER aggregations) are", name)
	}
	if sel.Distinct || sel.GroupBy != nil || sel.Having != nil || containsAgg(sel.Fields.Fields) {
		return nil, errAt(wf, "%s() OVER (...) cannot be combined with GROUP BY, aggregates or DISTINCT in the same SELECT; aggregate in a subquery and rank its result", name)
	}
	spec := wf.Spec
	if spec.Name.O != "" || spec.Ref.O != "" || sel.WindowSpecs != nil {
		return nil, errAt(wf, "named windows (OVER w, WINDOW w AS ...) are not supported; write the window in the OVER clause")
	}
	if spec.Frame != nil {
		return nil, errAt(wf, "%s() OVER (...) takes no window frame (ROWS/RANGE BETWEEN ...)", name)
	}
	if len(wf.Args) > 0 {
		return nil, errAt(wf, "%s() takes no arguments", name)
	}
	wcols, desc, windowed := windowCols(in)
	regular := func() error {
		return errAt(wf, "%s() OVER (PARTITION BY ...) without window_start and window_end of a window table function or window aggregation in its PARTITION BY is a regular TopN, which is not supported yet (it comes with the joins issue); a Window TopN partitions by window_start, window_end [, keys]", name)
	}
	if spec.PartitionBy == nil || !windowed || !partitionsByWindow(spec.PartitionBy, wcols, in, p, ctx) {
		return p.buildRank(sel, wf, rt, in, ctx) // rank.go
	}
	if procWindowBelow(in) {
		return nil, errAt(wf, "a Window TopN or deduplication over a processing-time window (PROCTIME()) is not supported yet; it needs an event-time window")
	}
	col := func(n ast.ExprNode, clause string) (*ColRef, error) {
		b := &exprBuilder{p: p, ctx: ctx, in: in, clause: clause}
		e, err := b.build(n)
		if err != nil {
			return nil, err
		}
		c, ok := e.(*ColRef)
		if !ok {
			return nil, errAt(n, "the %s of %s() OVER (...) must name columns, not expressions (compute them in a subquery)", clause, name)
		}
		return c, nil
	}
	op := &WindowRankOp{RankType: rt, Window: desc, MaxParallel: p.MaxParallelism, WinStart: -1, WinEnd: -1}
	for _, it := range spec.PartitionBy.Items {
		c, err := col(it.Expr, "PARTITION BY")
		if err != nil {
			return nil, err
		}
		switch wcols[c.Index] {
		case 0:
			op.WinStart = c.Index
		case 1:
			op.WinEnd = c.Index
		default:
			op.PartKeys = append(op.PartKeys, c.Index)
			op.PartNames = append(op.PartNames, in.schema[c.Index].Name)
		}
	}
	if op.WinStart < 0 || op.WinEnd < 0 {
		return nil, regular() // partitionsByWindow said otherwise
	}
	if spec.OrderBy == nil || len(spec.OrderBy.Items) == 0 {
		return nil, errAt(wf, "%s() OVER (...) of a Window TopN needs an ORDER BY", name)
	}
	for _, it := range spec.OrderBy.Items {
		c, err := col(it.Expr, "ORDER BY")
		if err != nil {
			return nil, err
		}
		if k := c.T.Kind; k == catalog.KindRow || k == catalog.KindNull {
			return nil, errAt(it.Expr, "cannot order by %s column '%s'", c.T, c.Name)
		}
		op.Order = append(op.Order, SortKey{Col: c.Index, Name: in.schema[c.Index].Name, Desc: it.Desc})
	}
	for _, c := range in.schema {
		if c.Type.Kind == catalog.KindRow {
			return nil, errAt(wf, "a Window TopN cannot keep the ROW column '%s' yet: select its fields in a subquery", c.Name)
		}
	}
	if in.mode != InsertOnly {
		return nil, errAt(wf, "a Window TopN needs an append-only input, but its input is updating (because of %s)", in.updatingNode())
	}
	rankName := "rownum"
	for _, f := range sel.Fields.Fields {
		if f.Expr != nil && unparen(f.Expr) == wf && f.AsName.O != "" {
			rankName = f.AsName.O
		}
	}
	schema := append(append(catalog.Schema{}, in.schema...), catalog.Column{Name: rankName, Type: catalog.BigInt.WithNotNull(true)})
	quals := append(append([]string{}, in.quals...), "")
	op.Out = schema
	op.OutputRank = true
	rr := &rankRel{op: op, pos: ctx.PosOf(wf), fn: name}
	if rt == RowNumber && len(op.Order) == 1 && overTVFRows(in) && timeAttrs(in)[op.Order[0].Col] && wcols[op.Order[0].Col] < 0 {
		rr.dedupCandidate = true
	}
	return &rel{kind: relWindowRank, input: in, schema: schema, quals: quals, mode: InsertOnly, rank: rr, hidden: 1, describ: op.Describe()}, nil
}

// rankColumnOf finds the unbounded window rank below r (through
// projections) and the column of r that is its rank (-1: not selected).
func rankColumnOf(r *rel) (*rel, int) {
	switch r.kind {
	case relWindowRank:
		if r.rank.bounded {
			return nil, -1
		}
		return r, len(r.schema) - 1
	case relCalc:
		if r.filter != nil {
			return nil, -1
		}
		rk, c := rankColumnOf(r.input)
		if rk == nil {
			return nil, -1
		}
		if r.projs == nil {
			return rk, c
		}
		for i, e := range r.projs {
			if cr, ok := e.(*ColRef); ok && c >= 0 && cr.Index == c {
				return rk, i
			}
		}
		return rk, -1
	}
	return nil, -1
}

// withRankRange returns r (a chain of projections over the window rank
// rk) with rk's range set; outputRank false drops the rank column (no
// projection above reads it).
func withRankRange(r, rk *rel, lo, hi int64) *rel {
	if r == rk {
		out := *r
		rr := *r.rank
		op := *rr.op
		op.RankStart, op.RankEnd = lo, hi
		rr.op, rr.bounded = &op, true
		if rr.dedupCandidate && lo == 1 && hi == 1 {
			op.Dedup, op.KeepLast = true, op.Order[0].Desc
		}
		out.rank = &rr
		out.describ = op.Describe()
		return &out
	}
	out := *r
	out.input = withRankRange(r.input, rk, lo, hi)
	return &out
}

// applyRankFilter takes the rank range out of a WHERE condition over in
// (a window rank, maybe under projections); it returns the new input and
// the rest of the condition (nil: none), or ok false when in is no
// unbounded window rank.
func applyRankFilter(in *rel, cond Expr) (*rel, Expr, bool) {
	rk, col := rankColumnOf(in)
	if rk == nil || col < 0 {
		return nil, nil, false
	}
	var rest []Expr
	lo, hi := int64(1), int64(-1)
	var walk func(e Expr)
	walk = func(e Expr) {
		c, ok := e.(*Call)
		if ok && c.Fn == "and" {
			for _, a := range c.Args {
				walk(a)
			}
			return
		}
		if ok && len(c.Args) == 2 {
			op := c.Fn
			l, r := c.Args[0], c.Args[1]
			if _, isCol := r.(*ColRef); isCol {
				l, r = r, l
				op = map[string]string{"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "="}[op]
			}
			lc, isCol := l.(*ColRef)
			v, isInt := intLiteral(r)
			if isCol && isInt && lc.Index == col {
				switch op {
				case "<=":
					hi = minBound(hi, v)
					return
				case "<":
					hi = minBound(hi, v-1)
					return
				case "=":
					hi, lo = minBound(hi, v), max(lo, v)
					return
				case ">=":
					lo = max(lo, v)
					return
				case ">":
					lo = max(lo, v+1)
					return
				}
			}
		}
		rest = append(rest, e)
	}
	walk(cond)
	if hi < 0 {
		return nil, nil, false
	}
	var remaining Expr
	for _, e := range rest {
		if remaining == nil {
			remaining = e
		} else {
			remaining = &Call{Fn: "and", Args: []Expr{remaining, e}, T: catalog.Boolean}
		}
	}
	return withRankRange(in, rk, lo, hi), remaining, true
}

func minBound(hi, v int64) int64 {
	if hi < 0 || v < hi {
		return max(v, 0)
	}
	return hi
}

func intLiteral(e Expr) (int64, bool) {
	if c, ok := e.(*Call); ok && c.Fn == "cast" && len(c.Args) == 1 && c.T.IsNumeric() {
		return intLiteral(c.Args[0])
	}
	l, ok := e.(*Literal)
	if !ok {
		return 0, false
	}
	switch v := l.Value.(type) {
	case int64:
		return v, true
	case int32:
		return int64(v), true
	case int:
		return int64(v), true
	}
	return 0, false
}

// buildWindowRankTask builds the task of a window rank: hash-partitioned
// by the PARTITION BY keys other than the window columns, or all into one
// subtask when there are none (as Flink).
func (b *physBuilder) buildWindowRankTask(r *rel) *Task {
	if r.rank.regular != nil {
		return b.buildRankTask(r) // rank.go
	}
	in := b.build(r.input)
	rr := r.rank
	if !rr.bounded && b.err == nil {
		msg := fmt.Sprintf("%s() OVER (PARTITION BY window_start, window_end ...) is a Window TopN only with a filter on its result in the enclosing query: SELECT * FROM (SELECT *, %s() OVER (...) AS rownum FROM ...) WHERE rownum <= N", rr.fn, rr.fn)
		if rr.view != "" {
			b.err = fmt.Errorf("in view '%s': %w", rr.view, &parser.Error{Pos: rr.pos, Msg: msg})
		} else {
			b.err = &parser.Error{Pos: rr.pos, Msg: msg}
		}
	}
	if rr.bounded && rr.op.RankEnd < rr.op.RankStart && b.err == nil {
		b.err = &parser.Error{Pos: rr.pos, Msg: fmt.Sprintf("the rank range of this Window TopN is empty (rank from %d to %d)", rr.op.RankStart, rr.op.RankEnd)}
	}
	op := rr.op
	par, kind := b.p.Parallelism, Hash
	if len(op.PartKeys) == 0 {
		par, kind = 1, Global
	}
	t := b.newTask(par)
	b.connect(b.skipReader(in), t, kind, op.PartKeys)
	t.Ops = append(t.Ops, op)
	op.ID = b.windowRankID(r)
	t.OutSchema, t.OutMode = r.schema, InsertOnly
	return t
}

// windowRankID is the stable id of a window rank (ids.go): the sources,
// the window, partition and order keys, the ranking and its range.
func (b *physBuilder) windowRankID(r *rel) string {
	op := r.rank.op
	b.ids.ordinal++
	keys := make([]string, len(op.PartKeys))
	for i, k := range op.PartKeys {
		keys[i] = lineage(r.input, k)
	}
	order := make([]string, len(op.Order))
	for i, k := range op.Order {
		order[i] = lineage(r.input, k.Col)
		if k.Desc {
			order[i] += " DESC"
		}
	}
	return b.unique(hashID("WindowRank",
		"sources="+strings.Join(sourceTables(r.input), ","),
		"window="+op.Window+"|"+lineage(r.input, op.WinEnd),
		"keys="+strings.Join(keys, ","),
		"order="+strings.Join(order, ","),
		fmt.Sprintf("rank=%s|%d|%d|%v", op.RankType, op.RankStart, op.RankEnd, op.Dedup),
		fmt.Sprintf("ordinal=%d", b.ids.ordinal-1)))
}

// markView notes that the unbounded window ranks of r (a view's query)
// are written in view name, for the error that they lack a rank range.
func markView(r *rel, name string) {
	for n := r; n != nil; n = n.input {
		if n.kind == relWindowRank && !n.rank.bounded && n.rank.view == "" {
			n.rank.view = name
		}
	}
}
