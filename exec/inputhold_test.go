package exec

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/internal/memtest"
)

// TestJoinHoldsInputWhileCommitsLag: an insert-only join side (state.Rows,
// tiered) may drop only rows a completed checkpoint holds. While a
// checkpoint's commit lags (here the coordinator is stopped after every
// acknowledgement of checkpoint 2) the join's task stops taking input
// once its side holds three times its budget, so that while it holds its
// memory stays within the budget's bound (between checkpoints rows
// arrive for an interval more), and goes on once the checkpoint
// completed; the output is exactly the uninterrupted result. The control
// run hides the join's HoldInput from the runtime: the same lag lets the
// side take in the whole input (past four budgets most of it leaves the
// heap for mapped files: TestJoinMapsRowsWhileCheckpointsFail), so the
// bound is not one the load never reaches. With unaligned checkpoints a
// hold counts only once every subtask acknowledged the checkpoint
// (before, an upstream subtask blocked sending to the holder would never
// acknowledge it): the side then takes no more than the message that
// crossed the line.
func TestJoinHoldsInputWhileCommitsLag(t *testing.T) {
	const budget = 16 << 10
	for _, unaligned := range []bool{false, true} {
		t.Run(fmt.Sprintf("unaligned=%v", unaligned), func(t *testing.T) {
			on := runJoinLag(t, budget, true, unaligned)
			if on.holds == 0 {
				t.Fatal("the join never held its input: the lag tested nothing")
			}
			if on.over > 0 {
				t.Fatalf("holding, a Rows side held %d bytes more than its bound (budget %d)", on.over, budget)
			}
			off := runJoinLag(t, budget, false, unaligned)
			if off.peak <= 4*max(off.atSnap2, 3*budget) {
				t.Fatalf("without holds the rows peaked at %d bytes (%d at checkpoint 2's snapshot): the lag does not test the bound", off.peak, off.atSnap2)
			}
			t.Logf("a Rows side held at most %d bytes while holding (%d holds; %d at checkpoint 2's snapshot, %d at any snapshot or hold); without holds %d at a snapshot (budget %d)",
				on.held, on.holds, on.atSnap2, on.peak, off.peak, budget)
		})
	}
}

// holdSlack: a message of 64 rows (~4.5 KiB) and its chunks' growth.
const holdSlack = 8 << 10

// lagRun is what runJoinLag measured: input holds, the most bytes a Rows
// side held while holding, the most it held beyond its bound then (see
// holdingJoin), and the most it held at checkpoint 2's snapshot and at
// any snapshot or hold.
type lagRun struct{ holds, held, over, atSnap2, peak int64 }

// runJoinLag runs joinSchedPlan at p1 over schedRows rows in the Pebble
// tier with a hot budget of budget bytes (the source reads lagGateRows
// rows until checkpoint 2's snapshot at the join), its coordinator stopped after
// checkpoint 2 was acknowledged until the join held its input (or, when
// holds are hidden, until the source read everything).
func runJoinLag(t *testing.T, budget int64, holds, unaligned bool) lagRun {
	t.Helper()
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	store := openTestStore(t, "d4", 2)
	sys := &txnSystem{pending: map[string][]string{}}
	metrics := &Metrics{}
	held, srcDone, snapped2 := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var heldOnce, doneOnce, snapOnce sync.Once
	var peak, heldPeak, over, snap2, acked atomic.Int64
	var lagged atomic.Bool
	ck := &CheckpointConfig{Backend: store, Interval: time.Millisecond, FirstID: 1, TolerableFailed: 1000, Unaligned: unaligned,
		Fault: func(step FaultStep, id int64) error {
			if step == StepAcked {
				acked.Store(max(acked.Load(), id)) // (the coordinator's acked is at least this)
			}
			if step != StepAcked || id != 2 {
				return nil
			}
			lagged.Store(true)
			select { // a commit that lags: not a wait for time to pass
			case <-held:
			case <-srcDone:
			case <-time.After(30 * time.Second):
				return fmt.Errorf("checkpoint 2: the join neither held its input nor read it all")
			}
			return nil
		}}
	src := func(sc *SourceContext) Source {
		return &doneSource{splitSource: &splitSource{sc: sc, total: schedRows, keys: schedKeys}, done: func() { doneOnce.Do(func() { close(srcDone) }) },
			gate: snapped2, gateRows: lagGateRows}
	}
	cfg := rowsJobConfig(t, mem, ck, metrics, sys, budget, src, func(j *streamJoin) Operator {
		w := &peakJoin{Operator: j, j: j, peak: &peak, snap2: &snap2, snapped2: func() { snapOnce.Do(func() { close(snapped2) }) }}
		if !holds {
			return w
		}
		return &holdingJoin{peakJoin: w, budget: budget, heldPeak: &heldPeak, over: &over, held: func() { heldOnce.Do(func() { close(held) }) },
			unaligned: unaligned, acked: &acked}
	})
	// a hold that waits for what needs this task's input (an unaligned
	// checkpoint not yet acknowledged) deadlocks the job: fail it then
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := RunJob(ctx, joinSchedPlan(1), cfg); err != nil {
		t.Fatalf("holds=%v unaligned=%v: %v", holds, unaligned, err)
	}
	if !lagged.Load() {
		t.Fatal("checkpoint 2 was never acknowledged: nothing lagged")
	}
	if d := diffSorted(foldChanges(sys.committed), joinSchedWant()); d != "" {
		t.Fatalf("holds=%v: committed output differs from the uninterrupted result: %s", holds, d)
	}
	return lagRun{holds: metrics.InputHolds.Load(), held: heldPeak.Load(), over: over.Load(), atSnap2: snap2.Load(), peak: peak.Load()}
}

// rowsJobConfig is the job of the tests of join sides in state.Rows:
// joinSchedPlan's rows from src in batches of 64 into a transactional
// sink, the join's state in the Pebble tier with a hot budget of budget
// bytes, the join wrapped by wrap.
func rowsJobConfig(t *testing.T, mem memory.Allocator, ck *CheckpointConfig, metrics *Metrics, sys *txnSystem, budget int64,
	src func(*SourceContext) Source, wrap func(*streamJoin) Operator) JobConfig {
	return JobConfig{Mem: mem, BatchSize: 64, ChannelCapacity: 4, Checkpoint: ck, Metrics: metrics,
		StateBackend: "pebble", StateDir: t.TempDir(), StateTierHotBytes: budget,
		NewSource: func(_ *catalog.Table, sc *SourceContext) (Source, error) { return src(sc), nil },
		NewSink: func(_ *catalog.Table, sc *SinkContext) (Sink, error) {
			return &rtxnSink{txnSink{sys: sys, subtask: sc.Subtask}}, nil
		},
		WrapOperator: func(_ string, _ int, op Operator) Operator {
			if j, ok := op.(*streamJoin); ok {
				return wrap(j)
			}
			return op
		}}
}

// lagGateRows: the rows the source reads before checkpoint 2's snapshot
// at the join, some 18 KiB of a side's rows: the snapshot holds less
// than three budgets however late the checkpoints run, so that the lag
// after it is what fills the side.
const lagGateRows = 256

// doneSource is a splitSource that calls done once it read everything.
// With a gate it emits no more than gateRows rows before the gate is
// closed, sending heartbeats meanwhile (they inject the barriers).
type doneSource struct {
	*splitSource
	done     func()
	gate     <-chan struct{}
	gateRows int64
}

func (s *doneSource) Run(ctx context.Context, emit func(arrow.Record) error) error {
	var emitted int64
	gate := s.gate
	gated := func(rec arrow.Record) error {
		if gate != nil && emitted+rec.NumRows() > s.gateRows {
			if err := s.waitGate(ctx, gate, emit); err != nil {
				rec.Release()
				return err
			}
			gate = nil
		}
		emitted += rec.NumRows()
		return emit(rec)
	}
	err := s.splitSource.Run(ctx, gated)
	if err == nil {
		s.done()
	}
	return err
}

// waitGate sends heartbeats every millisecond until the gate is closed.
func (s *doneSource) waitGate(ctx context.Context, gate <-chan struct{}, emit func(arrow.Record) error) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		if err := emit(nil); err != nil {
			return err
		}
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// peakJoin records the most bytes a Rows side of the join held at its
// snapshots (without holds the rows of the lag are all in memory at the
// snapshot after it) and at checkpoint 2's, after which it calls
// snapped2 (it hides HoldInput: the control run).
type peakJoin struct {
	Operator
	j           *streamJoin
	peak, snap2 *atomic.Int64
	snapped2    func()
	atSnap      int64 // rowsBytes at the last snapshot
}

// rowsBytes is the most bytes a Rows side holds now: in the heap and,
// past four budgets, mapped from files (state.Rows.mapOut).
func (p *peakJoin) rowsBytes() int64 {
	var most int64
	for _, s := range p.j.sides {
		if s.rows != nil {
			st := s.rows.Stats()
			most = max(most, st.HotBytes+st.MappedBytes)
		}
	}
	return most
}

func (p *peakJoin) Snapshot(id int64, w checkpoint.StateWriter) error {
	err := p.Operator.Snapshot(id, w)
	p.atSnap = p.rowsBytes()
	p.peak.Store(max(p.peak.Load(), p.atSnap))
	if id == 2 {
		p.snap2.Store(p.atSnap)
		p.snapped2()
	}
	return err
}

// holdingJoin is peakJoin with the join's HoldInput passed on; the first
// hold is signalled. A side takes no input while it holds: from the
// snapshot of the pending checkpoint on it grows past three budgets, or
// past what it held at the snapshot (the interval's rows), by at most the
// message that crossed the line (the gate's drain of what an aligned
// barrier queued asks too): a source batch of 64 rows of ~70 bytes plus
// its chunks' growth, holdSlack. With unaligned checkpoints the hold
// counts once the checkpoint is acked (what the coordinator acked is at
// least acked: a hold measured is one the gate honours), and the side
// grows past what it held at the first such hold by at most holdSlack.
// over keeps the most bytes held beyond that bound.
type holdingJoin struct {
	*peakJoin
	budget         int64
	heldPeak, over *atomic.Int64
	held           func()
	unaligned      bool
	acked          *atomic.Int64
	holdID, from   int64 // unaligned: the checkpoint of the hold and the bytes at its first honoured ask
}

func (h *holdingJoin) HoldInput() int64 {
	id := h.j.HoldInput()
	if id == 0 || h.unaligned && h.acked.Load() < id {
		return id // (unaligned and not acked: maybe not honoured yet)
	}
	b := h.rowsBytes()
	bound := max(h.atSnap, 3*h.budget)
	if h.unaligned {
		if h.holdID != id {
			h.holdID, h.from = id, b
		}
		bound = h.from
	}
	h.heldPeak.Store(max(h.heldPeak.Load(), b))
	h.peak.Store(max(h.peak.Load(), b))
	h.over.Store(max(h.over.Load(), b-(bound+holdSlack)))
	h.held()
	return id
}
