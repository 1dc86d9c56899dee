package exec

import "github.com/streamsql/streamsql/planner"

func init() {
	RegisterOperator(func(s *planner.UnionOp, ctx *OpContext) (Operator, error) { return unionOp{}, nil })
}

// unionOp is the head of a task reading the input edges of a UNION ALL:
// every batch of every input passes through unchanged (the planner casts
// the inputs to one schema); the gate combines the inputs' watermarks and
// aligns their barriers.
type unionOp struct{ Stateless }

func (unionOp) ProcessBatch(_ int, b Batch, out Collector) error { return out.Collect(b) }
