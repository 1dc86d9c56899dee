package state

import (
	"fmt"
	"strings"
	"testing"
)

func TestTimersFireInOrderAndRoundTrip(t *testing.T) {
	tm, err := NewTimers("win", "event", 8, true)
	if err != nil {
		t.Fatal(err)
	}
	tm.Register(3, 200, []byte("b"))
	tm.Register(1, 100, []byte("a"))
	tm.Register(1, 100, []byte("a")) // twice: one timer
	tm.Register(5, -50, []byte("neg"))
	tm.Register(2, 300, []byte("c"))
	tm.Delete(2, 300, []byte("c"))
	tm.Register(7, 200, []byte("a"))
	if tm.Len() != 4 {
		t.Fatalf("%d timers, want 4", tm.Len())
	}
	rec := &recorder{s: store{}}
	if err := tm.Snapshot(1, rec); err != nil {
		t.Fatal(err)
	}
	tm.Complete(1)
	var fired []string
	err = tm.Advance(200, func(kg int, ts int64, key []byte) error {
		fired = append(fired, fmt.Sprintf("%d@%d/%s", ts, kg, key))
		if string(key) == "a" && ts == 100 {
			tm.Register(kg, 150, []byte("chained")) // due: fires in this call
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fired, " "); got != "-50@5/neg 100@1/a 150@1/chained 200@3/b 200@7/a" {
		t.Fatalf("fired %s", got)
	}
	if n, ok := tm.Next(); ok || tm.Len() != 0 {
		t.Fatalf("timers left: %d (next %d)", tm.Len(), n)
	}
	// The fired timers leave the state at the next checkpoint.
	rec2 := &recorder{s: store{}}
	if err := tm.Snapshot(2, rec2); err != nil {
		t.Fatal(err)
	}
	committed := store{}
	replay(committed, rec)
	if len(committed) != 4 {
		t.Fatalf("checkpoint 1 holds %d timers, want 4", len(committed))
	}
	// Restore checkpoint 1 into key groups 0..3 only (a rescale): the
	// timers of key groups 1 and 3.
	tm2, _ := NewTimers("win", "event", 8, true)
	if err := tm2.Restore(scanStore(committed), 0, 4); err != nil {
		t.Fatal(err)
	}
	fired = nil
	_ = tm2.Advance(1000, func(kg int, ts int64, key []byte) error {
		fired = append(fired, fmt.Sprintf("%d@%d/%s", ts, kg, key))
		return nil
	})
	if got := strings.Join(fired, " "); got != "100@1/a 200@3/b" {
		t.Fatalf("restored timers fired %s", got)
	}
	replay(committed, rec2)
	if len(committed) != 0 {
		t.Fatalf("fired timers still in the state: %d", len(committed))
	}
}

// An aborted checkpoint's timer changes are written again by the next one.
func TestTimersAbortMergesBack(t *testing.T) {
	tm, _ := NewTimers("w", "event", 4, true)
	tm.Register(1, 10, []byte("x"))
	if err := tm.Snapshot(1, &recorder{s: store{}}); err != nil {
		t.Fatal(err)
	}
	tm.Abort(1)
	rec := &recorder{s: store{}}
	if err := tm.Snapshot(2, rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.ops) != 1 || !strings.HasPrefix(rec.ops[0], "put ") {
		t.Fatalf("after the abort, checkpoint 2 wrote %v", rec.ops)
	}
	off, _ := NewTimers("w", "event", 4, false)
	off.Register(1, 10, []byte("x"))
	rec = &recorder{s: store{}}
	_ = off.Snapshot(1, rec)
	if off.recheck.n() != 0 || len(off.dirty) != 0 || len(rec.ops) != 0 {
		t.Fatal("timers tracked changes without checkpointing")
	}
}

// A timer registered and removed between two snapshots is in no snapshot,
// so the next one writes nothing for it; one that a snapshot saw is deleted.
func TestTimersBornAndGoneInOneEpochWriteNothing(t *testing.T) {
	tm, _ := NewTimers("w", "event", 4, true)
	tm.Register(1, 10, []byte("seen"))
	if err := tm.Snapshot(1, &recorder{s: store{}}); err != nil {
		t.Fatal(err)
	}
	tm.Register(2, 20, []byte("fired"))
	tm.Register(3, 30, []byte("moved"))
	tm.Delete(3, 30, []byte("moved"))
	tm.Register(3, 40, []byte("moved"))
	if err := tm.Advance(25, func(int, int64, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{s: store{}}
	if err := tm.Snapshot(2, rec); err != nil {
		t.Fatal(err)
	}
	// seen (from checkpoint 1) fired: deleted; fired and the first moved
	// were never written: nothing; the moved timer's new place: put.
	if len(rec.ops) != 2 || !strings.HasPrefix(rec.ops[0], "del ") || !strings.HasPrefix(rec.ops[1], "put ") {
		t.Fatalf("checkpoint 2 wrote %v", rec.ops)
	}
}

// Timers derived from other state (made without checkpointing) delete the
// entries a checkpoint of a version that stored them holds: the next
// snapshot deletes those of the restored key groups, an aborted one is
// written again, and the derived timers themselves are never written.
func TestTimersDropStored(t *testing.T) {
	old, _ := NewTimers("w", "event", 8, true)
	old.Register(1, 10, []byte("a"))
	old.Register(2, 20, []byte("b"))
	old.Register(6, 30, []byte("c"))
	rec := &recorder{s: store{}}
	if err := old.Snapshot(1, rec); err != nil {
		t.Fatal(err)
	}
	committed := store{}
	replay(committed, rec)
	if len(committed) != 3 {
		t.Fatalf("old checkpoint holds %d timers, want 3", len(committed))
	}
	tm, _ := NewTimers("w", "event", 8, false)
	if err := tm.DropStored(scanStore(committed), 0, 4); err != nil { // key groups 1, 2
		t.Fatal(err)
	}
	if tm.Len() != 0 {
		t.Fatalf("DropStored loaded %d timers", tm.Len())
	}
	tm.Register(1, 10, []byte("a")) // derived again by the operator
	if err := tm.Snapshot(2, &recorder{s: store{}}); err != nil {
		t.Fatal(err)
	}
	tm.Abort(2)
	rec = &recorder{s: store{}}
	if err := tm.Snapshot(3, rec); err != nil {
		t.Fatal(err)
	}
	tm.Complete(3)
	if len(rec.ops) != 2 || !strings.HasPrefix(rec.ops[0], "del ") || !strings.HasPrefix(rec.ops[1], "del ") {
		t.Fatalf("checkpoint 3 wrote %v, want two deletes", rec.ops)
	}
	replay(committed, rec)
	if len(committed) != 1 {
		t.Fatalf("%d timers left in the state, want 1 (key group 6's)", len(committed))
	}
	rec = &recorder{s: store{}}
	if err := tm.Snapshot(4, rec); err != nil || len(rec.ops) != 0 {
		t.Fatalf("checkpoint 4 wrote %v (%v)", rec.ops, err)
	}
}
