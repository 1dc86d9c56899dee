package exec

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamsql/streamsql/internal/memtest"
)

// TestJoinMapsRowsWhileCheckpointsFail: what TestJoinHoldsInputWhileCommitsLag
// cannot bound. A side's input holds wait for a pending checkpoint; here every
// checkpoint fails (at the coordinator after every acknowledgement, or at
// a subtask's snapshot) until the source has read everything, so nothing
// completes for the whole input and no hold lasts: the side's rows grow to
// many budgets. Past four budgets the oldest of them leave the Go heap
// for mapped files (state.Rows.mapOut), so after every batch the heap's
// rows take at most four budgets and a chunk; the job then completes its
// final checkpoint and the committed output is exactly the uninterrupted
// result (the join read the mapped rows back in its probes and the
// snapshots wrote them), and Metrics.RowsMapped (DESCRIBE JOB's "join
// rows mapped to files") counts the rows mapped.
func TestJoinMapsRowsWhileCheckpointsFail(t *testing.T) {
	const budget = 16 << 10
	for _, step := range []FaultStep{StepAcked, StepSnapshot} {
		t.Run(string(step), func(t *testing.T) {
			mem := memtest.NewChecked()
			defer mem.AssertSize(t, 0)
			store := openTestStore(t, "d4", 2)
			sys := &txnSystem{pending: map[string][]string{}}
			metrics := &Metrics{}
			srcDone := make(chan struct{})
			var doneOnce sync.Once
			var failed atomic.Int64
			var heap, mapped, rowsPeak atomic.Int64
			ck := &CheckpointConfig{Backend: store, Interval: time.Millisecond, FirstID: 1, TolerableFailed: 1 << 20,
				Fault: func(s FaultStep, id int64) error {
					if s != step {
						return nil
					}
					select {
					case <-srcDone:
						return nil
					default:
					}
					failed.Add(1)
					return fmt.Errorf("checkpoint %d: an injected failure at %s", id, s)
				}}
			src := func(sc *SourceContext) Source {
				return &doneSource{splitSource: &splitSource{sc: sc, total: schedRows, keys: schedKeys},
					done: func() { doneOnce.Do(func() { close(srcDone) }) }}
			}
			cfg := rowsJobConfig(t, mem, ck, metrics, sys, budget, src, func(j *streamJoin) Operator {
				return &mapWatchJoin{Operator: j, j: j, heap: &heap, mapped: &mapped, rows: &rowsPeak}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := RunJob(ctx, joinSchedPlan(1), cfg); err != nil {
				t.Fatal(err)
			}
			if failed.Load() == 0 {
				t.Fatal("no checkpoint failed: the schedule tested nothing")
			}
			if mapped.Load() == 0 || rowsPeak.Load() < 16*budget {
				t.Fatalf("a side held at most %d bytes of rows and mapped %d rows: the failures did not make the rows outgrow the heap's bound", rowsPeak.Load(), mapped.Load())
			}
			if over := heap.Load() - (4*budget + mapSlack); over > 0 {
				t.Fatalf("the heap's rows took %d bytes, %d more than four budgets and a chunk", heap.Load(), over)
			}
			if got := metrics.RowsMapped.Load(); got != mapped.Load() {
				t.Fatalf("Metrics.RowsMapped %d, the side mapped %d rows", got, mapped.Load())
			}
			if d := diffSorted(foldChanges(sys.committed), joinSchedWant()); d != "" {
				t.Fatalf("committed output differs from the uninterrupted result: %s", d)
			}
			t.Logf("%d checkpoints failed; a side held up to %d bytes of rows, at most %d of them in the heap (budget %d); %d rows mapped",
				failed.Load(), rowsPeak.Load(), heap.Load(), budget, mapped.Load())
		})
	}
}

// mapSlack: the chunk being filled, never mapped: a chunk's first
// capacity (64 KiB; the next ones take what their 16 rows took, ~1 KiB)
// and its offsets.
const mapSlack = 64<<10 + 16*12

// mapWatchJoin records, after every batch of a join, the most bytes a
// Rows side kept in the heap, the rows its sides mapped and the most
// bytes of rows a side held, heap and mapped. Its input holds are the join's.
type mapWatchJoin struct {
	Operator
	j                  *streamJoin
	heap, mapped, rows *atomic.Int64
}

func (w *mapWatchJoin) HoldInput() int64 { return w.j.HoldInput() }

func (w *mapWatchJoin) ProcessBatch(in int, b Batch, out Collector) error {
	err := w.Operator.ProcessBatch(in, b, out)
	var mapped int64
	for _, s := range w.j.sides {
		if s == nil || s.rows == nil {
			continue
		}
		st := s.rows.Stats()
		w.heap.Store(max(w.heap.Load(), st.HotBytes))
		w.rows.Store(max(w.rows.Load(), st.HotBytes+st.MappedBytes))
		mapped += st.Mapped
	}
	w.mapped.Store(max(w.mapped.Load(), mapped))
	return err
}
