package planner

// Planning of event-time temporal joins (Flink's TemporalJoin on a
// versioned table).
//
//	FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.order_time AS r
//	  ON o.currency = r.currency
//
// with o.order_time an event-time attribute of the left side and rates a
// versioned table: one with a PRIMARY KEY and a WATERMARK, read as a
// stream in which each row is a new version of its key (valid from its
// event time on). Each left row joins the version of its key valid at its
// time: the row with the largest time <= the left row's. INNER and LEFT;
// both inputs insert-only; append-only output in which the left side's
// time attribute stays one (the right side's becomes a plain TIMESTAMP).
// The equalities of ON must cover the table's primary key; they become
// the join key (both inputs hash-partitioned by it); every other conjunct
// (also one over the right side alone) is evaluated on the chosen version:
// a version it rejects is no version (LEFT pads).

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// relTemporalJoin is an event-time temporal join of rel.input (left) with
// the versioned table rel.right (rel.join.timed is its *TemporalJoinOp).
const relTemporalJoin relKind = 170

// TemporalJoinOp is an event-time temporal join (exec/temporaljoin.go).
// Input 0 is the left side, input 1 the versioned table, hash-partitioned
// by their Keys. A left row l joins the right row r with equal keys and
// the largest r[RightTime] <= l[LeftTime] when Residual (over left ++
// right) is TRUE for the pair; a LEFT join pads l otherwise. Output: left
// columns then right columns; append-only.
type TemporalJoinOp struct {
	ID          string
	Type        JoinType // InnerJoin or LeftJoin
	Table       string
	Left, Right JoinSide
	// LeftTime and RightTime are the time attribute columns of the sides.
	LeftTime, RightTime int
	PrimaryKey          []int // of the right side
	Residual            Expr
	Out                 catalog.Schema
	MaxParallel         int
}

func (o *TemporalJoinOp) OpID() string { return o.ID }

func (o *TemporalJoinOp) Describe() string {
	var conds []string
	for i := range o.Left.Keys {
		conds = append(conds, fmt.Sprintf("%s = %s", o.Left.Schema[o.Left.Keys[i]].Name, o.Right.Schema[o.Right.Keys[i]].Name))
	}
	pk := make([]string, len(o.PrimaryKey))
	for i, k := range o.PrimaryKey {
		pk[i] = o.Right.Schema[k].Name
	}
	conds = append(conds, fmt.Sprintf("__TEMPORAL_JOIN_CONDITION(%s, %s, __TEMPORAL_JOIN_CONDITION_PRIMARY_KEY(%s))",
		o.Left.Schema[o.LeftTime].Name, o.Right.Schema[o.RightTime].Name, strings.Join(pk, ", ")))
	if o.Residual != nil {
		conds = append(conds, o.Residual.String())
	}
	return fmt.Sprintf("TemporalJoin(table=[%s], joinType=[%s], where=[%s], select=[%s])",
		o.Table, o.Type, strings.Join(conds, " AND "), strings.Join(o.Out.Names(), ", "))
}

// temporalJoin plans x as an event-time temporal join of left with the
// versioned table t (right: its scan as a stream), FOR SYSTEM_TIME AS OF
// the left side's event-time attribute ltime.
func (p *Planner) temporalJoin(x *ast.Join, left, right *rel, t *catalog.Table, ltime int, typ JoinType, at parser.Pos, ctx *parser.QueryContext) (*rel, bool, error) {
	fail := func(format string, args ...any) (*rel, bool, error) {
		return nil, true, &parser.Error{Pos: at, Msg: fmt.Sprintf(format, args...)}
	}
	if typ != InnerJoin && typ != LeftJoin {
		return fail("an event-time temporal join is INNER or LEFT, not %s", typ)
	}
	var err error
	if left, err = p.finalizeJoins(left, ctx); err != nil {
		return nil, true, err
	}
	if left.mode != InsertOnly {
		return fail("an event-time temporal join needs an insert-only left input; it is updating because of %s", left.updatingNode())
	}
	if right.mode != InsertOnly {
		return fail("the versioned table '%s' must be read as an insert-only stream", t.Name)
	}
	if x.On == nil {
		return fail("an event-time temporal join needs an equality condition on the primary key of '%s': ON ... = %s.%s", t.Name, t.Name, t.PrimaryKey[0])
	}
	rtime := right.schema.Index(t.Watermark.Column)
	if rtime < 0 || !rowtimeAttrs(right)[rtime] {
		return fail("the versioned table '%s' has no event-time attribute '%s'", t.Name, t.Watermark.Column)
	}
	if lt, rt := left.schema[ltime].Type, right.schema[rtime].Type; lt.Kind != rt.Kind {
		return fail("event-time temporal join: the time attributes %s (%s) and %s (%s) must be of the same type",
			left.schema[ltime].Name, lt, right.schema[rtime].Name, rt)
	}
	j := joinOf(left, right, typ, at)
	left, right = j.input, j.right
	for _, c := range append(append(catalog.Schema{}, left.schema...), right.schema...) {
		if c.Type.Kind == catalog.KindRow {
			return fail("an event-time temporal join cannot keep the ROW column '%s' in its state yet: select the fields it needs (%s.field) in a subquery", c.Name, c.Name)
		}
	}
	nl := len(left.schema)
	cb := &exprBuilder{p: p, ctx: ctx, in: j, clause: "ON"}
	cond, err := cb.build(x.On.Expr)
	if err != nil {
		return nil, true, err
	}
	if k := cond.Type().Kind; k != catalog.KindBoolean && k != catalog.KindNull {
		return nil, true, exprErr(ctx, x.On.Expr, "ON", "the join condition must be BOOLEAN, got %s", cond.Type())
	}
	var lkeys []Expr
	var rkeys []int
	var rest []Expr
	for _, c := range conjunctsOf(cond) {
		if a, d, ns, ok := equiPair(c, nl); ok && !ns {
			if dc, isCol := d.(*ColRef); isCol {
				lkeys, rkeys = append(lkeys, a), append(rkeys, dc.Index-nl)
				continue
			}
		}
		rest = append(rest, c)
	}
	var pk []int
	for _, name := range t.PrimaryKey {
		k := right.schema.Index(name)
		if k < 0 || !slices.Contains(rkeys, k) {
			return fail("an event-time temporal join needs an equality on the primary key of the versioned table '%s' in ON (%s = ...)", t.Name, name)
		}
		pk = append(pk, k)
	}
	rtypes := make([]catalog.Type, len(rkeys))
	for i, k := range rkeys {
		rtypes[i] = right.schema[k].Type
	}
	kl, err := keyLeft(left, lkeys, rtypes, rest, right.schema, j.quals[nl:], typ)
	if err != nil {
		ke := err.(*keyTypeError)
		return fail("cannot join %s with %s: %v", ke.want, ke.got, ke.err)
	}
	ext2, lk, residual, out, quals := kl.left, kl.keys, kl.residual, kl.out, kl.quals
	op := &TemporalJoinOp{Type: typ, Table: t.Name, LeftTime: ltime, RightTime: rtime, PrimaryKey: pk, Residual: residual,
		Out: out, MaxParallel: p.MaxParallelism,
		Left:  JoinSide{Keys: lk, Mode: InsertOnly, Schema: ext2.schema},
		Right: JoinSide{Keys: rkeys, Mode: InsertOnly, Schema: right.schema}}
	r := &rel{kind: relTemporalJoin, input: ext2, right: right, schema: out, quals: quals, mode: InsertOnly,
		join: &joinRel{typ: typ, pos: at, timed: op,
			op: &JoinOp{Type: typ, Left: op.Left, Right: op.Right, Out: out, OutMode: InsertOnly, MaxParallel: p.MaxParallelism}},
		describ: op.Describe()}
	return kl.dropKeys(r, nl, j), true, nil
}

// temporalTimeAttrs: the left side's time attributes stay ones.
func temporalTimeAttrs(r *rel, out []bool) { copy(out, timeAttrs(r.input)) }

// buildTemporalJoin builds the task of a temporal join: both inputs
// hash-partitioned by their keys.
func (b *physBuilder) buildTemporalJoin(r *rel) *Task {
	op := r.join.timed.(*TemporalJoinOp)
	lt := b.build(r.input)
	rt := b.build(r.right)
	t := b.newTask(b.p.Parallelism)
	b.connect(b.skipReader(lt), t, Hash, op.Left.Keys)
	b.connect(b.skipReader(rt), t, Hash, op.Right.Keys)
	op.ID = hashID("TemporalJoin", b.joinID(r))
	r.join.op.ID = op.ID
	t.Ops = append(t.Ops, op)
	t.OutSchema, t.OutMode = r.schema, r.mode
	return t
}

// temporalJoinMeta describes the temporal join's state for upgrades.
func temporalJoinMeta(t *Task, a *TemporalJoinOp) OperatorMeta {
	m := joinMeta(t, &JoinOp{ID: a.ID, Type: a.Type, Left: a.Left, Right: a.Right, Residual: a.Residual, Out: a.Out})
	m.Kind, m.Description = KindTemporalJoin, a.Describe()
	m.State.Rank = fmt.Sprintf("%s leftTime=%d rightTime=%d", a.Type, a.LeftTime, a.RightTime)
	return m
}

// KindTemporalJoin is the event-time temporal join (temporaljoin.go).
const KindTemporalJoin = "temporal-join"
