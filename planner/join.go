package planner

import (
	"fmt"
	"strings"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// JoinType is the kind of a join.
type JoinType uint8

const (
	InnerJoin JoinType = iota
	LeftJoin
	RightJoin
	FullJoin
	// SemiJoin emits the left rows that have at least one match (IN,
	// EXISTS); AntiJoin those that have none (NOT IN, NOT EXISTS). Both
	// output the left columns only.
	SemiJoin
	AntiJoin
)

func (t JoinType) String() string {
	return [...]string{"InnerJoin", "LeftOuterJoin", "RightOuterJoin", "FullOuterJoin", "LeftSemiJoin", "LeftAntiJoin"}[t]
}

// PadsLeft reports whether rows of the right side without a match are
// emitted with NULLs for the left columns (RIGHT, FULL), PadsRight the
// converse (LEFT, FULL).
func (t JoinType) PadsLeft() bool  { return t == RightJoin || t == FullJoin }
func (t JoinType) PadsRight() bool { return t == LeftJoin || t == FullJoin }

// JoinSide describes one input of a join.
type JoinSide struct {
	// Keys are the equi-join key columns of this side, pairwise equal to
	// the other side's Keys (same count, same types up to nullability; the
	// planner casts where the written types differ, so both sides hash a
	// key to the same key group). Empty: no equi-condition (the join runs
	// at parallelism 1).
	Keys []int
	// UniqueKey is a set of columns unique among this side's live rows (a
	// PRIMARY KEY, or the grouping keys of an aggregation); nil: none, the
	// side's state is a multiset of rows.
	UniqueKey []int
	// Mode is the changelog the side receives.
	Mode   ChangelogMode
	Schema catalog.Schema
}

// KeyContainsUnique reports whether the join key includes a unique key,
// so each join key holds at most one row of this side.
func (s JoinSide) KeyContainsUnique() bool {
	if s.UniqueKey == nil {
		return false
	}
	for _, u := range s.UniqueKey {
		found := false
		for _, k := range s.Keys {
			if k == u {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// JoinOp is a regular (unbounded) streaming join of two inputs, Flink's
// StreamingJoinOperator / StreamingSemiAntiJoinOperator: input 0 is the
// left side, input 1 the right side, each hash-partitioned by its Keys
// (or both global when there are no keys). Every row of both sides stays
// in state (bounded only by table.exec.state.ttl). Output: the left
// columns then the right columns (the padded side's columns nullable);
// for SemiJoin and AntiJoin the left columns only.
type JoinOp struct {
	ID          string
	Type        JoinType
	Left, Right JoinSide
	// NullSafe[i]: key pair i matches NULL with NULL (IS NOT DISTINCT FROM);
	// otherwise a row with a NULL key matches nothing (but an outer side
	// still emits it padded).
	NullSafe []bool
	// Residual is the non-equi part of the condition, over the left
	// columns followed by the right columns (nil: none). A pair joins only
	// when it is TRUE.
	Residual Expr
	Out      catalog.Schema
	// OutMode is InsertOnly for an inner or semi join of two insert-only
	// inputs; Retract otherwise.
	OutMode     ChangelogMode
	MaxParallel int
	pos         parser.Pos // where the join is written
}

func (o *JoinOp) OpID() string { return o.ID }
func (o *JoinOp) Describe() string {
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
	return fmt.Sprintf("Join(joinType=[%s], where=[%s], select=[%s], leftInputSpec=[%s], rightInputSpec=[%s])",
		o.Type, where, strings.Join(o.Out.Names(), ", "), o.Left.inputSpec(), o.Right.inputSpec())
}

// inputSpec is Flink's name for how a side's state is kept.
func (s JoinSide) inputSpec() string {
	switch {
	case s.KeyContainsUnique():
		return "JoinKeyContainsUniqueKey"
	case s.UniqueKey != nil:
		return "HasUniqueKey"
	}
	return "NoUniqueKey"
}
