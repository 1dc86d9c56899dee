package planner

import (
	"fmt"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// Regular (non-window) TopN and deduplication, Flink's Rank and
// Deduplicate:
//
//	SELECT [cols] FROM (
//	  SELECT *, ROW_NUMBER() OVER ([PARTITION BY k...] ORDER BY x DESC [, ...]) AS rn
//	  FROM t)
//	WHERE rn <= N
//
// The ranking function is planned as a relWindowRank whose rankRel is
// regular (windowrank.go plans the rank range out of the outer WHERE the
// same way). The projection over the bounded rank then settles it
// (settleRank): whether the rank column is read above (Flink's
// outputRankNumber, which changes the changelog), and whether it is a
// deduplication (ROW_NUMBER, rank 1 only, ordered by one time attribute,
// rank not read, insert-only input).
//
// As in Flink only ROW_NUMBER is supported on a stream; RANK and
// DENSE_RANK are an error.

// RankOp is a regular TopN: per PartKeys, the rows whose ROW_NUMBER by
// Order lies in [RankStart, RankEnd], kept up to date as rows arrive
// (updating output). InputMode InsertOnly is Flink's AppendOnlyTopNFunction
// (only the top RankEnd rows are kept), Retract its RetractableTopNFunction
// (every row is kept). Output: the input columns, then the rank (BIGINT;
// 0 and never read when !OutputRank).
type RankOp struct {
	ID          string
	PartKeys    []int
	PartNames   []string
	Order       []SortKey
	RankStart   int64
	RankEnd     int64
	OutputRank  bool
	InputMode   ChangelogMode
	Out         catalog.Schema
	MaxParallel int
}

func (o *RankOp) OpID() string { return o.ID }

// Strategy is Flink's name of the TopN algorithm.
func (o *RankOp) Strategy() string {
	if o.InputMode == InsertOnly {
		return "AppendFastStrategy"
	}
	return "RetractStrategy"
}

func (o *RankOp) Describe() string {
	order := make([]string, len(o.Order))
	for i, k := range o.Order {
		order[i] = k.String()
	}
	sel := o.Out.Names()
	if !o.OutputRank {
		sel = sel[:len(sel)-1]
	}
	return fmt.Sprintf("Rank(strategy=[%s], rankType=[ROW_NUMBER], rankRange=[rankStart=%d, rankEnd=%d], partitionBy=[%s], orderBy=[%s], select=[%s])",
		o.Strategy(), o.RankStart, o.RankEnd, strings.Join(o.PartNames, ", "), strings.Join(order, ", "), strings.Join(sel, ", "))
}

// DeduplicateOp keeps one row per Keys: the first or the last by the time
// attribute TimeCol (event time when RowTime, else arrival order), as
// Flink's Deduplicate. Keeping the first row on processing time is
// append-only; the other three are updating (-U/+U when the kept row
// changes). Output: the input columns, then a rank column (0, never read:
// the planner keeps the rank column slot of the rank it replaces).
type DeduplicateOp struct {
	ID          string
	Keys        []int
	KeyNames    []string
	TimeCol     int
	RowTime     bool
	KeepLast    bool
	Out         catalog.Schema
	MaxParallel int
}

func (o *DeduplicateOp) OpID() string { return o.ID }

// Mode is the changelog the deduplication emits.
func (o *DeduplicateOp) Mode() ChangelogMode {
	if !o.RowTime && !o.KeepLast {
		return InsertOnly
	}
	return Retract
}

func (o *DeduplicateOp) Describe() string {
	keep, order := "FirstRow", "PROCTIME"
	if o.KeepLast {
		keep = "LastRow"
	}
	if o.RowTime {
		order = "ROWTIME"
	}
	return fmt.Sprintf("Deduplicate(keep=[%s], key=[%s], order=[%s])", keep, strings.Join(o.KeyNames, ", "), order)
}

// regularRank is what a regular rank adds to rankRel.
type regularRank struct {
	inMode   ChangelogMode
	timeAttr bool // ORDER BY is one time attribute column
	procTime bool // ... of processing time
	dedup    *DeduplicateOp
	topn     *RankOp
}

// buildRank plans a ranking function that is not over window_start and
// window_end: a regular TopN (or deduplication once the range is known).
func (p *Planner) buildRank(sel *ast.SelectStmt, wf *ast.WindowFuncExpr, rt RankType, in *rel, ctx *parser.QueryContext) (*rel, error) {
	name := rt.String()
	errAt := func(n ast.Node, format string, args ...any) error {
		if n != nil && ctx.HasPos(n) {
			return ctx.ErrorAt(n, format, args...)
		}
		return ctx.ErrorAt(wf, format, args...)
	}
	if rt != RowNumber {
		return nil, errAt(wf, "%s() OVER (...) without window_start and window_end in its PARTITION BY is a regular TopN, which a stream supports only with ROW_NUMBER() (as Flink); use ROW_NUMBER(), or a Window TopN", name)
	}
	spec := wf.Spec
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
	op := &WindowRankOp{RankType: rt, MaxParallel: p.MaxParallelism, WinStart: -1, WinEnd: -1}
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
	if spec.OrderBy == nil || len(spec.OrderBy.Items) == 0 {
		return nil, errAt(wf, "%s() OVER (...) of a TopN needs an ORDER BY", name)
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
			return nil, errAt(wf, "a TopN cannot keep the ROW column '%s' yet: select its fields in a subquery", c.Name)
		}
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
	rg := &regularRank{inMode: in.mode}
	if len(op.Order) == 1 && timeAttrs(in)[op.Order[0].Col] {
		rg.timeAttr = true
		rg.procTime = procTimeAttr(in, op.Order[0].Col)
	}
	rr := &rankRel{op: op, pos: ctx.PosOf(wf), fn: name, regular: rg}
	return &rel{kind: relWindowRank, input: in, schema: schema, quals: quals, mode: Retract, rank: rr, hidden: 1, describ: "Rank"}, nil
}

// settleRank decides, for the bounded regular rank below out (through
// projections and filters), whether its rank column is read and whether
// it is a deduplication, and returns out with the changelog modes of the
// chain redone. out is returned as is when there is no such rank.
func settleRank(out *rel) *rel {
	used := make([]bool, len(out.schema))
	for i := range used {
		used[i] = true
	}
	return settleBelow(out, used)
}

func settleBelow(r *rel, used []bool) *rel {
	switch r.kind {
	case relWindowRank:
		rr := r.rank
		if rr.regular == nil || !rr.bounded || rr.regular.topn != nil || rr.regular.dedup != nil {
			return r
		}
		return settleRegular(r, used[len(used)-1])
	case relCalc:
		in := make([]bool, len(r.input.schema))
		if r.projs == nil {
			copy(in, used)
		} else {
			for i, e := range r.projs {
				if used[i] {
					markCols(e, in)
				}
			}
		}
		if r.filter != nil {
			markCols(r.filter, in)
		}
		below := settleBelow(r.input, in)
		if below == r.input {
			return r
		}
		c := *r
		c.input, c.mode = below, below.mode
		return &c
	}
	return r
}

// settleRegular fixes the physical operator of the bounded regular rank r.
func settleRegular(r *rel, rankUsed bool) *rel {
	out := *r
	rr := *r.rank
	rg := *rr.regular
	op := rr.op
	in := r.input
	if !rankUsed && rg.timeAttr && rg.inMode == InsertOnly && op.RankStart == 1 && op.RankEnd == 1 {
		d := &DeduplicateOp{Keys: op.PartKeys, KeyNames: op.PartNames, TimeCol: op.Order[0].Col, RowTime: !rg.procTime,
			KeepLast: op.Order[0].Desc, Out: op.Out, MaxParallel: op.MaxParallel}
		rg.dedup = d
		out.mode = d.Mode()
		out.describ = d.Describe()
	} else {
		t := &RankOp{PartKeys: op.PartKeys, PartNames: op.PartNames, Order: op.Order, RankStart: op.RankStart, RankEnd: op.RankEnd,
			OutputRank: rankUsed, InputMode: in.mode, Out: op.Out, MaxParallel: op.MaxParallel}
		rg.topn = t
		out.mode = Retract
		out.describ = t.Describe()
	}
	rr.regular = &rg
	out.rank = &rr
	return &out
}

// buildRankTask builds the task of a regular rank: hash-partitioned by the
// PARTITION BY keys, or all into one subtask without them (as Flink).
func (b *physBuilder) buildRankTask(r *rel) *Task {
	in := b.build(r.input)
	rr := r.rank
	setErr := func(msg string) {
		if b.err != nil {
			return
		}
		if rr.view != "" {
			b.err = fmt.Errorf("in view '%s': %w", rr.view, &parser.Error{Pos: rr.pos, Msg: msg})
		} else {
			b.err = &parser.Error{Pos: rr.pos, Msg: msg}
		}
	}
	if !rr.bounded {
		setErr(fmt.Sprintf("%s() OVER (...) is a TopN only with a filter on its result in the enclosing query: SELECT * FROM (SELECT *, %s() OVER (...) AS rownum FROM ...) WHERE rownum <= N (Flink's unbounded OVER ranking is not supported)", rr.fn, rr.fn))
	} else if rr.op.RankEnd < rr.op.RankStart {
		setErr(fmt.Sprintf("the rank range of this TopN is empty (rank from %d to %d)", rr.op.RankStart, rr.op.RankEnd))
	}
	rg := rr.regular
	if rg.topn == nil && rg.dedup == nil {
		// Not settled by a projection (e.g. read by an aggregation):
		// the rank column counts as read.
		rg = settleRegular(r, true).rank.regular
	}
	keys := rr.op.PartKeys
	par, kind := b.p.Parallelism, Hash
	if len(keys) == 0 {
		par, kind = 1, Global
	}
	t := b.newTask(par)
	b.connect(b.skipReader(in), t, kind, keys)
	id := b.rankID(r, rg)
	rr.op.ID = id
	if rg.dedup != nil {
		rg.dedup.ID = id
		t.Ops = append(t.Ops, rg.dedup)
		t.OutMode = rg.dedup.Mode()
	} else {
		rg.topn.ID = id
		t.Ops = append(t.Ops, rg.topn)
		t.OutMode = Retract
	}
	t.OutSchema = r.schema
	return t
}

// rankID is the stable id of a regular rank (ids.go).
func (b *physBuilder) rankID(r *rel, rg *regularRank) string {
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
	kind := "Rank"
	if rg.dedup != nil {
		kind = "Deduplicate"
	}
	return b.unique(hashID(kind,
		"sources="+strings.Join(sourceTables(r.input), ","),
		"keys="+strings.Join(keys, ","),
		"order="+strings.Join(order, ","),
		fmt.Sprintf("rank=%d|%d|%v", op.RankStart, op.RankEnd, rg.topn != nil && rg.topn.OutputRank),
		fmt.Sprintf("ordinal=%d", b.ids.ordinal-1)))
}

// partitionsByWindow reports whether the PARTITION BY of a ranking
// function over a windowed input names both window_start and window_end
// (a Window TopN); otherwise it is a regular TopN.
func partitionsByWindow(pb *ast.PartitionByClause, wcols []int, in *rel, p *Planner, ctx *parser.QueryContext) bool {
	start, end := false, false
	for _, it := range pb.Items {
		b := &exprBuilder{p: p, ctx: ctx, in: in, clause: "PARTITION BY"}
		e, err := b.build(it.Expr)
		if err != nil {
			return true // the Window TopN planning reports it
		}
		if c, ok := e.(*ColRef); ok {
			switch wcols[c.Index] {
			case 0:
				start = true
			case 1:
				end = true
			}
		}
	}
	return start && end
}

// rankMeta is the upgrade check's description of a regular TopN or
// deduplication's state (upgrade.go): its keys, its rows' columns and the
// ranking (a change of any makes the state incompatible).
func rankMeta(t *Task, op Op) OperatorMeta {
	m := OperatorMeta{ID: op.OpID(), Description: op.Describe(), UID: !isDerivedID(op.OpID())}
	if srcs := taskSources(t); len(srcs) > 0 {
		m.Description += " on " + strings.Join(srcs, ", ")
	}
	var keys []int
	var out catalog.Schema
	switch o := op.(type) {
	case *RankOp:
		m.Kind, keys, out = KindRank, o.PartKeys, o.Out
		order := make([]string, len(o.Order))
		for i, k := range o.Order {
			order[i] = fmt.Sprintf("$%d", k.Col)
			if k.Desc {
				order[i] += " DESC"
			}
		}
		m.State.Rank = fmt.Sprintf("ROW_NUMBER %d..%d ORDER BY %s (%s)", o.RankStart, o.RankEnd, strings.Join(order, ", "), o.Strategy())
	case *DeduplicateOp:
		m.Kind, keys, out = KindDeduplicate, o.Keys, o.Out
		m.State.Rank = strings.TrimPrefix(o.Describe(), "Deduplicate")
	}
	for _, k := range keys {
		m.State.Keys = append(m.State.Keys, StateColumn{Name: out[k].Name, Type: typeName(out[k].Type)})
	}
	for _, c := range out[:len(out)-1] {
		m.State.Rows = append(m.State.Rows, StateColumn{Name: c.Name, Type: typeName(c.Type)})
	}
	return m
}
