package planner

import (
	"fmt"

	"github.com/streamsql/streamsql/catalog"
)

// WindowJoinOp is a window join (Flink's WindowJoin): both inputs carry the
// same window (window_start, window_end columns), joined on them and the
// keys; rows wait until the watermark passes the window's end, then each
// window is joined once. Not executed yet (see windowJoin).
type WindowJoinOp struct {
	ID          string
	Type        JoinType
	Left, Right JoinSide
	Out         catalog.Schema
	MaxParallel int
}

func (o *WindowJoinOp) OpID() string     { return o.ID }
func (o *WindowJoinOp) Describe() string { return fmt.Sprintf("WindowJoin(joinType=[%s])", o.Type) }

// windowJoin reports whether out is a window join (both sides windowed by
// the same window, joined on window_start and window_end).
func (p *Planner) windowJoin(out, r *rel) (bool, error) {
	return false, nil
}
