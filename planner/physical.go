package planner

import (
	"fmt"
	"strings"

	"github.com/streamsql/streamsql/catalog"
)

// ExchangeKind says how records of an edge are routed from the subtasks of
// the producing task to those of the consuming task.
type ExchangeKind uint8

const (
	// Forward: subtask i sends to subtask i (same parallelism).
	Forward ExchangeKind = iota
	// Hash: each row goes to the subtask owning its key group.
	Hash
	// Broadcast: every batch goes to every subtask.
	Broadcast
	// Rebalance: whole batches round-robin over the subtasks.
	Rebalance
	// Global: everything goes to subtask 0 (the consumer has parallelism 1).
	Global
)

func (k ExchangeKind) String() string {
	switch k {
	case Forward:
		return "FORWARD"
	case Hash:
		return "HASH"
	case Broadcast:
		return "BROADCAST"
	case Rebalance:
		return "REBALANCE"
	case Global:
		return "GLOBAL"
	}
	return "?"
}

// ChangelogMode is what kinds of rows an edge may carry.
type ChangelogMode uint8

const (
	// InsertOnly: +I rows only (append-only stream).
	InsertOnly ChangelogMode = iota
	// Retract: +I, -U, +U, -D.
	Retract
)

func (m ChangelogMode) String() string {
	if m == Retract {
		return "[I,UB,UA,D]"
	}
	return "[I]"
}

// Physical is a job's DAG: tasks connected by edges. Tasks are in
// topological order (every edge goes from a lower to a higher index).
type Physical struct {
	Tasks []*Task
	Edges []*Edge
}

// Task is a chain of fused operators run as Parallelism subtasks. A task
// either reads a source (Source != nil) or reads its Inputs; it ends in a sink
// (Sink != nil) or writes to its single Output edge.
type Task struct {
	Index       int
	Name        string
	Parallelism int
	Source      *SourceSpec
	Ops         []Op
	Sink        *SinkSpec
	Inputs      []*Edge
	// Outputs are the edges to the tasks that consume this task's output
	// (several when a source is shared by the statements of a statement
	// set); a task has Outputs or a Sink.
	Outputs []*Edge
	// OutSchema and OutMode describe what the last operator emits.
	OutSchema catalog.Schema
	OutMode   ChangelogMode
}

// Edge connects two tasks.
type Edge struct {
	From, To *Task
	Kind     ExchangeKind
	Keys     []int // Hash: key column indices of From.OutSchema
	Mode     ChangelogMode
}

// SourceSpec is a source table scan.
type SourceSpec struct {
	// Values is the single-row, zero-column source of a SELECT without FROM,
	// or, with Rows, the rows of a VALUES list (constant expressions of
	// Schema's types).
	Values bool
	Rows   [][]Expr
	Table  *catalog.Table
	Schema catalog.Schema
	ID     string // stable operator id
	// PartitionFilter (over Schema, reading partition columns only) says
	// which partitions of a partitioned table to read (partprune.go).
	PartitionFilter Expr
}

// SinkSpec is the end of a pipeline: a table's connector or, when Table is
// nil, the client (a SELECT's results).
type SinkSpec struct {
	Table  *catalog.Table
	Schema catalog.Schema
	Mode   ChangelogMode
	ID     string
}

// Op is a fused, per-subtask operator of a task chain.
type Op interface {
	// OpID is the operator's stable id (derived from the plan's structure).
	OpID() string
	Describe() string
}

// CalcOp filters (Filter may be nil) then projects (Projs may be nil: keep
// all columns). On a retract stream the filter keeps the changelog
// consistent: of an adjacent -U/+U pair where only one side passes, the -U
// becomes -D or the +U becomes +I.
type CalcOp struct {
	ID     string
	Filter Expr
	Projs  []Expr
	Out    catalog.Schema
	Mode   ChangelogMode
}

func (o *CalcOp) OpID() string { return o.ID }
func (o *CalcOp) Describe() string {
	var parts []string
	if o.Filter != nil {
		parts = append(parts, "where="+o.Filter.String())
	}
	if o.Projs != nil {
		ps := make([]string, len(o.Projs))
		for i, p := range o.Projs {
			ps[i] = p.String() + " AS " + o.Out[i].Name
		}
		parts = append(parts, "select=["+strings.Join(ps, ", ")+"]")
	}
	return "Calc(" + strings.Join(parts, ", ") + ")"
}

// TableFuncOp joins each input row with the rows a table function returns
// for it (LATERAL TABLE / CROSS JOIN UNNEST). Output = input columns followed
// by the function's columns. Fn is "split": Args[0] is the string,
// Args[1] (optional) the delimiter (default " ").
type TableFuncOp struct {
	ID   string
	Fn   string
	Args []Expr
	Out  catalog.Schema
}

func (o *TableFuncOp) OpID() string { return o.ID }
func (o *TableFuncOp) Describe() string {
	as := make([]string, len(o.Args))
	for i, a := range o.Args {
		as[i] = a.String()
	}
	return fmt.Sprintf("Correlate(%s(%s))", strings.ToUpper(o.Fn), strings.Join(as, ", "))
}

// AggCall is one aggregate of an AggOp.
type AggCall struct {
	Fn       string // count_star, count, sum, min, max, avg
	Arg      int    // input column; -1 for count_star
	Distinct bool
	ArgType  catalog.Type
	T        catalog.Type
	Name     string
	// Share (group aggregations): COUNT(DISTINCT x) calls of one x, each
	// with or without its own FILTER, carry the same Share above 0 (the
	// FILTER's CASE WHEN c THEN x END columns are x where they are not
	// NULL): the executor keeps one set of x's values with a count per
	// call, as Flink's distinct aggregates share a MapView per argument
	// (q15, q16); a single call has a share of its own (over an
	// insert-only input the executor writes its set's additions at each
	// checkpoint). 0: not a COUNT(DISTINCT). Not part of the operator's
	// identity.
	Share int
	// narrow: SUM/AVG of TINYINT, SMALLINT or FLOAT (planning only)
	narrow catalog.Type
}

func (a AggCall) String() string {
	d := ""
	if a.Distinct {
		d = "DISTINCT "
	}
	if a.Fn == "count_star" {
		return "COUNT(*)"
	}
	return fmt.Sprintf("%s(%s$%d)", strings.ToUpper(a.Fn), d, a.Arg)
}

// AggOp is a keyed (hash-partitioned) non-windowed aggregation. Its input
// rows hold the grouping keys in Keys; output = keys then aggregates, as a
// retract stream.
type AggOp struct {
	ID           string
	Keys         []int
	Aggs         []AggCall
	InputMode    ChangelogMode
	Out          catalog.Schema
	MaxParallel  int
	KeyNames     []string
	DistinctOnly bool // SELECT DISTINCT
	// Global: the input is a LocalAggOp's partial groups (two-phase
	// aggregation). Only EXPLAIN tells it: the operator takes partial
	// groups and plain rows alike (its identity and state are the same in
	// both plans, so a job may switch between them across a restore).
	Global bool
}

func (o *AggOp) OpID() string { return o.ID }
func (o *AggOp) Describe() string {
	name := "GroupAggregate"
	if o.Global {
		name = "GlobalGroupAggregate"
	}
	return fmt.Sprintf("%s(groupBy=[%s], select=[%s])", name, strings.Join(o.KeyNames, ", "), describeCalls(o.Aggs))
}

func describeCalls(calls []AggCall) string {
	as := make([]string, len(calls))
	for i, a := range calls {
		as[i] = a.String() + " AS " + a.Name
	}
	return strings.Join(as, ", ")
}

// LocalAggOp is the first phase of a two-phase aggregation (Flink's
// LocalGroupAggregate, table.optimizer.agg-phase-strategy): chained before
// the hash exchange, it folds each input batch into one partial group per
// distinct key, so that the exchange and the keyed aggregation behind it
// (AggOp with Global set) see a row per key and batch instead of a row per
// input row. It keeps no state. Its output is the keys (Keys, in order),
// the number of rows each partial group folded (PartialRowsColumn), then
// each call's partial state as the columns PartialTypes gives.
type LocalAggOp struct {
	ID       string
	Keys     []int
	Aggs     []AggCall
	KeyNames []string
	Out      catalog.Schema
}

// PartialRowsColumn is the column a LocalAggOp adds after the keys.
const PartialRowsColumn = "$partial_rows"

// PartialTypes are the columns of call c's partial state in a LocalAggOp's
// output: a count; a sum and its count of values; the extreme (NULL when
// none).
func PartialTypes(c AggCall) []catalog.Type {
	count := catalog.BigInt.WithNotNull(true)
	switch c.Fn {
	case "count_star", "count":
		return []catalog.Type{count}
	case "sum", "avg":
		if c.ArgType.Kind == catalog.KindDecimal {
			return []catalog.Type{{Kind: catalog.KindDecimal, Precision: 38, Scale: c.ArgType.Scale, NotNull: true}, count}
		}
		return []catalog.Type{count, count}
	}
	return []catalog.Type{c.T.WithNotNull(false)}
}

func (o *LocalAggOp) OpID() string { return o.ID }
func (o *LocalAggOp) Describe() string {
	return fmt.Sprintf("LocalGroupAggregate(groupBy=[%s], select=[%s])", strings.Join(o.KeyNames, ", "), describeCalls(o.Aggs))
}

// TwoPhaseCall reports whether an aggregate call can be split into a local
// and a global phase over an insert-only input: its partial states merge
// exactly (COUNT, integer and DECIMAL SUM/AVG, MIN/MAX), whatever the
// batches. A floating-point SUM is not split (its rounding would depend on
// where batches break), nor a DISTINCT aggregate.
func TwoPhaseCall(c AggCall) bool {
	switch c.Fn {
	case "count_star":
		return true
	case "min", "max":
		return c.T.Kind == c.ArgType.Kind
	case "count":
		return !c.Distinct
	case "sum", "avg":
		switch c.ArgType.Kind {
		case catalog.KindInt, catalog.KindBigInt, catalog.KindDecimal:
			return !c.Distinct
		}
	}
	return false
}
