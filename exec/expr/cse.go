package expr

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/planner"
)

// Common sub-expressions, as Calcite's RexProgram shares them: a call that
// occurs more than once in an expression (q14's HOUR(dateTime) in four
// WHENs, q21's LOWER(channel) in four) compiles to one sharedNode, which
// evaluates once per record and hands every occurrence the same array. A
// value is computed only where an occurrence is evaluated and reused only
// for the same record (an occurrence evaluated on a subset of the rows, as
// a CASE branch that can fail is, gets its own), so what runs and what can
// fail is what runs without sharing; the root (cseRoot) drops the values
// after each batch.

// sharedCalls returns the digests of the calls that occur more than once in
// e and may be shared (shareable).
func sharedCalls(e planner.Expr) map[string]bool {
	count := map[string]int{}
	var walk func(e planner.Expr)
	walk = func(e planner.Expr) {
		if x, ok := e.(*planner.Call); ok {
			if shareable(x) {
				count[digest(x)]++
			}
			for _, a := range x.Args {
				walk(a)
			}
		}
	}
	walk(e)
	var out map[string]bool
	for d, n := range count {
		if n > 1 {
			if out == nil {
				out = map[string]bool{}
			}
			out[d] = true
		}
	}
	return out
}

// shareable reports whether one value of call c may serve all its
// occurrences: deterministic (no clock), reading a column (constant calls
// are folded anyway), and more than a field access (cheaper than sharing).
func shareable(c *planner.Call) bool {
	if c.Fn == "field" {
		return false
	}
	volatile, reads := false, false
	var walk func(e planner.Expr)
	walk = func(e planner.Expr) {
		switch x := e.(type) {
		case *planner.ColRef:
			reads = true
		case *planner.Call:
			volatile = volatile || volatileFns[x.Fn]
			for _, a := range x.Args {
				walk(a)
			}
		}
	}
	walk(c)
	return reads && !volatile
}

// digest identifies a call: its text (functions, columns by index,
// literals, casts with their types) and its result type.
func digest(c *planner.Call) string { return c.String() + "|" + c.T.String() }

// sharedNode is one common sub-expression: the value of the last record it
// was evaluated on, until the root's batch ends.
type sharedNode struct {
	inner Evaluator
	rec   arrow.Record
	val   arrow.Array
}

func (n *sharedNode) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	if n.val != nil && n.rec == rec {
		n.val.Retain()
		return n.val, nil
	}
	v, err := n.inner.Eval(rec, mem)
	if err != nil {
		return nil, err
	}
	n.reset()
	v.Retain() // one reference for the caller, one kept
	n.rec, n.val = rec, v
	return v, nil
}

func (n *sharedNode) reset() {
	if n.val != nil {
		n.val.Release()
		n.rec, n.val = nil, nil
	}
}

// cseRoot evaluates an expression with shared sub-expressions and drops
// their values after each batch.
type cseRoot struct {
	body  Evaluator
	nodes []*sharedNode
}

func (r *cseRoot) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	a, err := r.body.Eval(rec, mem)
	for _, n := range r.nodes {
		n.reset()
	}
	return a, err
}

// Hoistable reports whether call e may be evaluated on every row of a
// batch once and its value read wherever e occurs (a Calc's filter and its
// projections share it): shareable, and unable to fail at run time (a
// failing one is evaluated only on the rows that need it). Digest
// identifies it.
func Hoistable(e *planner.Call) bool { return shareable(e) && !canFail(e) }

// Digest identifies a call for sharing: equal digests, equal values.
func Digest(c *planner.Call) string { return digest(c) }
