package exec

import (
	"testing"

	"github.com/streamsql/streamsql/planner"
)

// TestWatermarkAssignerRestore: at the same parallelism a subtask continues
// from its own largest timestamp; after a rescale (sources hand their
// splits over by split) every subtask starts from the lowest of all old
// subtasks, so no row becomes late because another split was ahead.
func TestWatermarkAssignerRestore(t *testing.T) {
	spec := &planner.WatermarkAssignerOp{ID: "wm", Delay: 10}
	st := memState{}
	for i, ts := range []int64{500, 100, 300} { // three old subtasks
		a := &watermarkAssigner{spec: spec, ctx: &OpContext{Subtask: i, Parallelism: 3}, maxTs: ts}
		if err := a.Snapshot(1, st); err != nil {
			t.Fatal(err)
		}
	}
	restore := func(sub, p int) *watermarkAssigner {
		a := &watermarkAssigner{spec: spec, ctx: &OpContext{Subtask: sub, Parallelism: p}, maxTs: NoWatermark, wm: NoWatermark}
		if err := a.Restore(st); err != nil {
			t.Fatal(err)
		}
		return a
	}
	if a := restore(2, 3); a.maxTs != 300 || a.wm != 289 {
		t.Errorf("same parallelism: maxTs %d wm %d, want its own 300 / 289", a.maxTs, a.wm)
	}
	for sub := 0; sub < 2; sub++ {
		if a := restore(sub, 2); a.maxTs != 100 {
			t.Errorf("subtask %d of 2: maxTs %d, want the lowest 100", sub, a.maxTs)
		}
	}
	if a := restore(0, 2); len(a.takenOver) != 1 || a.takenOver[0] != 2 {
		t.Errorf("subtask 0 of 2 takes over %v, want old subtask 2", a.takenOver)
	}
}
