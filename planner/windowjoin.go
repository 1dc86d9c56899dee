package planner

// Planning of window joins (Flink's WindowJoin).
//
// A join whose two inputs carry the same window (each a window TVF or a
// window aggregation, through projections that keep the window columns)
// and whose equi-condition includes window_start = window_start and
// window_end = window_end is a window join: the rows of a window are
// joined once, when the watermark passes the window's end, and the output
// is append-only. The other equalities are the join key, the rest of the
// condition the residual (as for a regular join).

import (
	"fmt"
	"strings"

	"github.com/streamsql/streamsql/catalog"
)

// WindowJoinOp is a window join (exec/windowjoin.go). Input 0 is the left
// side, input 1 the right side, hash-partitioned by their Keys (which
// include window_start and window_end). Rows of a window wait until the
// watermark reaches window_end - 1; then each left row is joined with the
// right rows of its key and window (INNER/LEFT/RIGHT/FULL: pairs and
// padded rows; SEMI/ANTI: the left rows with / without a partner).
type WindowJoinOp struct {
	ID          string
	Type        JoinType
	Left, Right JoinSide
	NullSafe    []bool
	// LeftEnd and RightEnd are the window_end columns of the sides.
	LeftEnd, RightEnd int
	Window            string // the window, for EXPLAIN
	Residual          Expr   // over left ++ right; nil: none
	Out               catalog.Schema
	MaxParallel       int
}

func (o *WindowJoinOp) OpID() string { return o.ID }
func (o *WindowJoinOp) Describe() string {
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
	return fmt.Sprintf("WindowJoin(leftWindow=[%s], rightWindow=[%s], joinType=[%s], where=[%s], select=[%s])",
		o.Window, o.Window, o.Type, strings.Join(conds, " AND "), strings.Join(o.Out.Names(), ", "))
}

// windowJoin reports whether out (a finalized join) is a window join and
// if so plans it as one (out.join.timed).
func (p *Planner) windowJoin(out, r *rel) (bool, error) {
	op := out.join.op
	left, right := out.input, out.right
	lw, ldesc, lok := windowCols(left)
	rw, rdesc, rok := windowCols(right)
	if !lok || !rok {
		return false, nil
	}
	start, end := false, false
	lend, rend := -1, -1
	for i := range op.Left.Keys {
		a, b := lw[op.Left.Keys[i]], rw[op.Right.Keys[i]]
		if a < 0 || a != b {
			continue
		}
		switch a {
		case 0:
			start = true
		case 1:
			end = true
			lend, rend = op.Left.Keys[i], op.Right.Keys[i]
		}
	}
	if !start || !end {
		return false, nil
	}
	if ldesc != rdesc {
		return false, fmt.Errorf("a window join needs the same window on both sides, got %s and %s", ldesc, rdesc)
	}
	if left.mode != InsertOnly || right.mode != InsertOnly {
		return false, fmt.Errorf("a window join needs insert-only inputs")
	}
	wj := &WindowJoinOp{Type: op.Type, Left: op.Left, Right: op.Right, NullSafe: op.NullSafe,
		LeftEnd: lend, RightEnd: rend, Window: ldesc, Residual: op.Residual, Out: op.Out, MaxParallel: op.MaxParallel}
	out.join.timed = wj
	out.mode, r.mode = InsertOnly, InsertOnly
	op.OutMode = InsertOnly
	return true, nil
}

// windowJoinMeta describes the window join's state for upgrades: a join's
// keys and rows, its type and the window.
func windowJoinMeta(t *Task, a *WindowJoinOp) OperatorMeta {
	m := joinMeta(t, &JoinOp{ID: a.ID, Type: a.Type, Left: a.Left, Right: a.Right, NullSafe: a.NullSafe, Residual: a.Residual, Out: a.Out})
	m.Kind, m.Description = KindWindowJoin, a.Describe()
	m.State.Rank, m.State.Window = a.Type.String(), a.Window
	return m
}
