package planner

// Planning of interval joins (Flink's IntervalJoin).
//
// A join of two insert-only inputs whose condition bounds the time
// attribute of one side by the other's on both sides,
//
//	b.ts BETWEEN a.ts - INTERVAL '1' MINUTE AND a.ts + INTERVAL '2' MINUTE
//	b.ts >= a.ts AND b.ts < a.ts + INTERVAL '1' HOUR
//
// (either side written first, >=, >, <=, < in any mix, the interval added
// or subtracted on either side) is an interval join: each row waits for
// partners only as long as the bound allows, so its state is dropped when
// the watermark passes the bound, and its output is append-only (outer
// rows are padded once, when their bound passed). The bound is kept as
// Flink keeps it: leftLowerBound <= left.ts - right.ts <= leftUpperBound,
// in milliseconds, strict comparisons tightened by 1 ms.
//
// Equalities stay the join key (hash-partitioned as a regular join); the
// remaining conjuncts (including extra time bounds looser than the chosen
// ones) stay the residual, evaluated on each pair within the bound.

import (
	"fmt"
	"strings"

	"github.com/streamsql/streamsql/catalog"
)

// IntervalJoinOp is an event-time interval join (exec/intervaljoin.go).
// Input 0 is the left side, input 1 the right side, hash-partitioned by
// their Keys (global without keys). A pair (l, r) joins when the keys are
// equal, LowerBound <= l[LeftTime] - r[RightTime] <= UpperBound, and the
// Residual is TRUE. Output: left columns then right columns (the padded
// side nullable); append-only; both time attributes stay time attributes,
// and the watermark is held back by Delay() so no output row is late.
type IntervalJoinOp struct {
	ID          string
	Type        JoinType // Inner, Left, Right or Full
	Left, Right JoinSide
	NullSafe    []bool
	// LeftTime and RightTime are the time attribute columns of the sides.
	LeftTime, RightTime int
	// LowerBound, UpperBound bound left.ts - right.ts (ms, inclusive).
	LowerBound, UpperBound int64
	Residual               Expr // over left ++ right; nil: none
	Out                    catalog.Schema
	MaxParallel            int
}

func (o *IntervalJoinOp) OpID() string { return o.ID }

// Delay is how far the output watermark is held back behind the input's:
// a padded row is emitted when the watermark passed its bound, so its
// time is at most this far behind (Flink's max output delay).
func (o *IntervalJoinOp) Delay() int64 { return max(0, -o.LowerBound, o.UpperBound) }

func (o *IntervalJoinOp) Describe() string {
	var conds []string
	for i := range o.Left.Keys {
		eq := "="
		if i < len(o.NullSafe) && o.NullSafe[i] {
			eq = "IS NOT DISTINCT FROM"
		}
		conds = append(conds, fmt.Sprintf("%s %s %s", o.Left.Schema[o.Left.Keys[i]].Name, eq, o.Right.Schema[o.Right.Keys[i]].Name))
	}
	if o.Residual != nil {
		conds = append(conds, o.Residual.String())
	}
	where := "true"
	if len(conds) > 0 {
		where = strings.Join(conds, " AND ")
	}
	return fmt.Sprintf("IntervalJoin(joinType=[%s], windowBounds=[isRowTime=true, leftLowerBound=%d, leftUpperBound=%d, leftTimeIndex=%d, rightTimeIndex=%d], where=[%s], select=[%s])",
		o.Type, o.LowerBound, o.UpperBound, o.LeftTime, o.RightTime, where, strings.Join(o.Out.Names(), ", "))
}

// timeBoundTerm is one side of a time comparison: column col (of left ++
// right) plus off milliseconds.
type timeBoundTerm struct {
	col int
	off int64
}

// timeTerm matches e as col, col + INTERVAL, col - INTERVAL (a day-time
// interval literal), through the implicit cast of a comparison.
func timeTerm(e Expr) (timeBoundTerm, bool) {
	e = uncast(e)
	switch x := e.(type) {
	case *ColRef:
		return timeBoundTerm{col: x.Index}, true
	case *Call:
		if x.Fn != "dt_add_ms" || len(x.Args) < 3 {
			return timeBoundTerm{}, false
		}
		c, ok := uncast(x.Args[0]).(*ColRef)
		if !ok {
			return timeBoundTerm{}, false
		}
		amt, ok1 := x.Args[1].(*Literal)
		sign, ok2 := x.Args[2].(*Literal)
		if !ok1 || !ok2 {
			return timeBoundTerm{}, false
		}
		ms, ok1 := amt.Value.(int64)
		sg, ok2 := sign.Value.(int32)
		if !ok1 || !ok2 {
			return timeBoundTerm{}, false
		}
		return timeBoundTerm{col: c.Index, off: ms * int64(sg)}, true
	}
	return timeBoundTerm{}, false
}

// timeBound matches c as a comparison of left time column lt and right
// time column rt (indexes into left ++ right, nl left columns), returning
// the bound it puts on left.ts - right.ts: lower (isLower) or upper.
func timeBound(c Expr, nl int) (lcol, rcol int, bound int64, isLower, ok bool) {
	call, isCall := c.(*Call)
	if !isCall || len(call.Args) != 2 {
		return
	}
	fn := call.Fn
	switch fn {
	case ">=", ">", "<=", "<":
	default:
		return
	}
	a, aok := timeTerm(call.Args[0])
	b, bok := timeTerm(call.Args[1])
	if !aok || !bok {
		return
	}
	// Normalize to  left + x  fn  right + y.
	if a.col >= nl && b.col < nl {
		a, b = b, a
		fn = map[string]string{">=": "<=", ">": "<", "<=": ">=", "<": ">"}[fn]
	}
	if !(a.col < nl && b.col >= nl) {
		return
	}
	// left - right  fn  y - x
	d := b.off - a.off
	switch fn {
	case ">=":
		return a.col, b.col - nl, d, true, true
	case ">":
		return a.col, b.col - nl, d + 1, true, true
	case "<=":
		return a.col, b.col - nl, d, false, true
	default:
		return a.col, b.col - nl, d - 1, false, true
	}
}

// rowtimeAttrs reports the event-time attributes of r (time attributes
// that are not processing time).
func rowtimeAttrs(r *rel) []bool {
	out := timeAttrs(r)
	for i := range out {
		if out[i] && isProctimeCol(r, i) {
			out[i] = false
		}
	}
	return out
}

func isProctimeCol(r *rel, i int) bool {
	for r != nil {
		switch r.kind {
		case relCalc:
			if r.projs == nil {
				r = r.input
				continue
			}
			if i >= len(r.projs) {
				return false
			}
			if IsProctimeCall(r.projs[i]) {
				return true
			}
			c, ok := r.projs[i].(*ColRef)
			if !ok {
				return false
			}
			r, i = r.input, c.Index
		case relTableFunc, relWindowRank:
			r = r.input
		default:
			return false
		}
	}
	return false
}

// timeJoin plans a finalized regular join (out, with its JoinOp) as an
// interval join or a window join when its condition makes it one: it sets
// out.join.timed and makes the join append-only. r is the join as built.
func (p *Planner) timeJoin(out, r *rel) error {
	op := out.join.op
	if ok, err := p.windowJoin(out, r); ok || err != nil {
		return err
	}
	if op.Residual == nil || op.Type == SemiJoin || op.Type == AntiJoin {
		return nil
	}
	left, right := out.input, out.right
	if left.mode != InsertOnly || right.mode != InsertOnly {
		return nil
	}
	nl := len(left.schema)
	lta, rta := rowtimeAttrs(left), rowtimeAttrs(right)
	type found struct {
		idx    int
		bound  int64
		lc, rc int
	}
	var lower, upper *found
	conj := conjunctsOf(op.Residual)
	for i, c := range conj {
		lc, rc, b, isLower, ok := timeBound(c, nl)
		if !ok || lc >= len(lta) || rc >= len(rta) || !lta[lc] || !rta[rc] {
			continue
		}
		f := &found{idx: i, bound: b, lc: lc, rc: rc}
		if isLower {
			if lower == nil || (lower.lc == lc && lower.rc == rc && b > lower.bound) {
				lower = f
			}
		} else if upper == nil || (upper.lc == lc && upper.rc == rc && b < upper.bound) {
			upper = f
		}
	}
	if lower == nil || upper == nil || lower.lc != upper.lc || lower.rc != upper.rc {
		return nil
	}
	lt, rt := left.schema[lower.lc].Type, right.schema[lower.rc].Type
	if lt.Kind != rt.Kind {
		return fmt.Errorf("interval join: the time attributes %s (%s) and %s (%s) must be of the same type",
			left.schema[lower.lc].Name, lt, right.schema[lower.rc].Name, rt)
	}
	var rest []Expr
	for i, c := range conj {
		if i != lower.idx && i != upper.idx {
			rest = append(rest, c)
		}
	}
	iv := &IntervalJoinOp{Type: op.Type, Left: op.Left, Right: op.Right, NullSafe: op.NullSafe,
		LeftTime: lower.lc, RightTime: lower.rc, LowerBound: lower.bound, UpperBound: upper.bound,
		Residual: andOf(rest), Out: op.Out, MaxParallel: op.MaxParallel}
	iv.Left.Mode, iv.Right.Mode = InsertOnly, InsertOnly
	out.join.timed = iv
	out.mode, r.mode = InsertOnly, InsertOnly
	op.OutMode = InsertOnly
	return nil
}

// buildTimedJoinTask builds the task of an interval or window join: both
// inputs hash-partitioned by their keys (global at parallelism 1 without).
func (b *physBuilder) buildTimedJoinTask(r *rel) *Task {
	op := r.join.op
	lt := b.build(r.input)
	rt := b.build(r.right)
	par, kind := b.p.Parallelism, Hash
	if len(op.Left.Keys) == 0 {
		par, kind = 1, Global
	}
	t := b.newTask(par)
	b.connect(b.skipReader(lt), t, kind, op.Left.Keys)
	b.connect(b.skipReader(rt), t, kind, op.Right.Keys)
	id := b.joinID(r)
	op.ID = id
	switch x := r.join.timed.(type) {
	case *IntervalJoinOp:
		x.ID = hashID("IntervalJoin", id)
	case *WindowJoinOp:
		x.ID = hashID("WindowJoin", id)
	}
	t.Ops = append(t.Ops, r.join.timed)
	t.OutSchema, t.OutMode = r.schema, r.mode
	return t
}

// intervalJoinMeta describes the interval join's state for upgrades: a
// join's keys and rows, its type and bounds.
func intervalJoinMeta(t *Task, a *IntervalJoinOp) OperatorMeta {
	m := joinMeta(t, &JoinOp{ID: a.ID, Type: a.Type, Left: a.Left, Right: a.Right, NullSafe: a.NullSafe, Residual: a.Residual, Out: a.Out})
	m.Kind, m.Description = KindIntervalJoin, a.Describe()
	m.State.Rank = fmt.Sprintf("%s leftLowerBound=%d leftUpperBound=%d", a.Type, a.LowerBound, a.UpperBound)
	return m
}
