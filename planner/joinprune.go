package planner

import (
	"fmt"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// Column pruning below joins. A join keeps every column of both inputs in
// its state and sends them through its exchanges; the query above it
// often reads a few (Nexmark's views pass every field of an event). After
// the physical plan is built, each join followed by a Calc is given only
// the columns that Calc, the join's keys, unique keys and residual read:
// a projection is appended to the task feeding each side (merged into its
// last Calc), the join's sides and the Calc are rewritten over the kept
// columns. Projection push-down into the sources (exec.SourceColumnUse)
// then sees the pruned chains.

// pruneJoinInputs prunes the inputs of every join of the plan, then
// refuses a join that still keeps a ROW column (its state encodes scalar
// columns only).
func (b *physBuilder) pruneJoinInputs() {
	defer b.checkJoinColumns()
	for _, t := range b.plan.Tasks {
		if len(t.Ops) < 2 || len(t.Inputs) != 2 {
			continue
		}
		j, ok := joinShapeOf(t.Ops[0])
		if !ok {
			continue
		}
		calc, ok := t.Ops[1].(*CalcOp)
		if !ok || calc.Projs == nil {
			continue
		}
		left, right := j.left, j.right
		nl := len(left.Schema)
		used := make([]bool, len(*j.out))
		markCols(calc.Filter, used)
		for _, p := range calc.Projs {
			markCols(p, used)
		}
		lneed := make([]bool, nl)
		rneed := make([]bool, len(right.Schema))
		copy(lneed, used)
		if !j.leftOnly {
			copy(rneed, used[nl:])
		}
		for _, k := range append(append([]int{}, left.Keys...), left.UniqueKey...) {
			lneed[k] = true
		}
		for _, k := range append(append([]int{}, right.Keys...), right.UniqueKey...) {
			rneed[k] = true
		}
		for _, c := range j.leftCols {
			lneed[*c] = true
		}
		for _, c := range j.rightCols {
			rneed[*c] = true
		}
		if *j.residual != nil {
			both := make([]bool, nl+len(rneed))
			markCols(*j.residual, both)
			for i, u := range both {
				if !u {
					continue
				}
				if i < nl {
					lneed[i] = true
				} else {
					rneed[i-nl] = true
				}
			}
		}
		lmap := b.pruneSide(t.Inputs[0], left, lneed)
		rmap := b.pruneSide(t.Inputs[1], right, rneed)
		if lmap == nil && rmap == nil {
			continue
		}
		lmap, rmap = identityIfNil(lmap, nl), identityIfNil(rmap, len(rneed))
		for _, c := range j.leftCols {
			*c = lmap[*c]
		}
		for _, c := range j.rightCols {
			*c = rmap[*c]
		}
		newNl := len(left.Schema)
		// join output column -> its new index
		outMap := make([]int, 0, len(*j.out))
		outMap = append(outMap, lmap...)
		if !j.leftOnly {
			for _, m := range rmap {
				if m >= 0 {
					m += newNl
				}
				outMap = append(outMap, m)
			}
		}
		resMap := append(append([]int{}, lmap...), make([]int, len(rmap))...)
		for i, m := range rmap {
			if m >= 0 {
				m += newNl
			}
			resMap[nl+i] = m
		}
		*j.residual = remapCols(*j.residual, resMap)
		var out catalog.Schema
		for i, m := range outMap {
			if m >= 0 {
				out = append(out, (*j.out)[i])
			}
		}
		*j.out = out
		calc.Filter = remapCols(calc.Filter, outMap)
		for i, p := range calc.Projs {
			calc.Projs[i] = remapCols(p, outMap)
		}
	}
}

// joinShape is what pruning rewrites of a two-input join node: its sides,
// residual and output, the other columns of each side it reads (time
// attributes, window bounds) and whether it outputs the left side only.
type joinShape struct {
	left, right         *JoinSide
	residual            *Expr
	out                 *catalog.Schema
	leftCols, rightCols []*int
	leftOnly            bool
}

func joinShapeOf(op Op) (joinShape, bool) {
	switch j := op.(type) {
	case *JoinOp:
		return joinShape{left: &j.Left, right: &j.Right, residual: &j.Residual, out: &j.Out,
			leftOnly: j.Type == SemiJoin || j.Type == AntiJoin}, true
	case *IntervalJoinOp:
		return joinShape{left: &j.Left, right: &j.Right, residual: &j.Residual, out: &j.Out,
			leftCols: []*int{&j.LeftTime}, rightCols: []*int{&j.RightTime}}, true
	case *WindowJoinOp:
		return joinShape{left: &j.Left, right: &j.Right, residual: &j.Residual, out: &j.Out,
			leftCols: []*int{&j.LeftEnd}, rightCols: []*int{&j.RightEnd},
			leftOnly: j.Type == SemiJoin || j.Type == AntiJoin}, true
	}
	return joinShape{}, false
}

func (b *physBuilder) checkJoinColumns() {
	for _, t := range b.plan.Tasks {
		for _, op := range t.Ops {
			j, ok := op.(*JoinOp)
			if !ok || b.err != nil {
				continue
			}
			for _, side := range []JoinSide{j.Left, j.Right} {
				for _, c := range side.Schema {
					if c.Type.Kind == catalog.KindRow {
						b.err = &parser.Error{Pos: j.pos, Msg: fmt.Sprintf("a join cannot keep the ROW column '%s' in its state yet: select the fields it needs (%s.field)", c.Name, c.Name)}
						return
					}
				}
			}
		}
	}
}

func identityIfNil(m []int, n int) []int {
	if m != nil {
		return m
	}
	m = make([]int, n)
	for i := range m {
		m[i] = i
	}
	return m
}

// pruneSide keeps the needed columns of a join side: a projection at the
// end of the task feeding edge e (when e is that task's only output), with
// the edge's keys and the side rewritten. It returns the new index of
// every old column (-1: dropped), or nil when nothing was pruned.
func (b *physBuilder) pruneSide(e *Edge, side *JoinSide, need []bool) []int {
	from := e.From
	if len(from.Outputs) != 1 || from.Sink != nil {
		return nil
	}
	m := make([]int, len(need))
	n := 0
	for i, u := range need {
		if u {
			m[i] = n
			n++
		} else {
			m[i] = -1
		}
	}
	if n == len(need) {
		return nil
	}
	projs := make([]Expr, 0, n)
	out := make(catalog.Schema, 0, n)
	for i, u := range need {
		if u {
			c := side.Schema[i]
			projs = append(projs, &ColRef{Index: i, Name: c.Name, T: c.Type})
			out = append(out, c)
		}
	}
	calc := &CalcOp{Projs: projs, Out: out, Mode: from.OutMode}
	if k := len(from.Ops); k > 0 {
		if inner, ok := from.Ops[k-1].(*CalcOp); ok {
			if merged, ok := mergeCalc(inner, calc); ok {
				from.Ops, calc = from.Ops[:k-1], merged
			}
		}
	}
	from.Ops = append(from.Ops, calc)
	calc.ID = b.id(from, calc.Describe())
	from.OutSchema = out
	remap := func(ks []int) []int {
		if ks == nil {
			return nil
		}
		r := make([]int, len(ks))
		for i, k := range ks {
			r[i] = m[k]
		}
		return r
	}
	e.Keys = remap(e.Keys)
	side.Keys, side.UniqueKey, side.Schema = remap(side.Keys), remap(side.UniqueKey), out
	return m
}

// markCols marks the columns e reads.
func markCols(e Expr, used []bool) {
	switch x := e.(type) {
	case *ColRef:
		if x.Index < len(used) {
			used[x.Index] = true
		}
	case *Call:
		for _, a := range x.Args {
			markCols(a, used)
		}
	}
}

// remapCols rewrites the column references of e by m (old -> new index).
func remapCols(e Expr, m []int) Expr {
	switch x := e.(type) {
	case *ColRef:
		c := *x
		c.Index = m[x.Index]
		return &c
	case *Call:
		c := *x
		c.Args = make([]Expr, len(x.Args))
		for i, a := range x.Args {
			c.Args[i] = remapCols(a, m)
		}
		return &c
	}
	return e
}
