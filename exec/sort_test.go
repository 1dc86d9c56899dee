package exec

import (
	"fmt"
	"github.com/streamsql/streamsql/internal/memtest"
	"math/rand"
	"slices"
	"sort"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/planner"
)

func sortTestOp(t *testing.T, mem memory.Allocator, m *Metrics) *temporalSort {
	s := &planner.SortOp{ID: "sort", Time: 1, Out: winTestSchema,
		Keys: []planner.SortKey{{Col: 0, Name: "k", Desc: true}, {Col: 2, Name: "v"}}}
	op, err := newTemporalSort(s, &OpContext{OpID: "sort", Subtask: 0, Parallelism: 1,
		KeyGroups: KeyGroups{Start: 0, End: 8, MaxParallelism: 8}, Checkpointing: true, Mem: mem, BatchSize: 16, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// TestTemporalSortRandomized: seeded random rows (duplicates, ties on the
// time, late rows) and watermarks, with checkpoints and restores into a
// fresh operator at random points, against a model: a row whose time is
// above the watermark when it arrives is emitted once the watermark
// reaches it, ordered by (ts, k DESC, v); other rows are dropped and
// counted as late. Emitted times leave the checkpointed state by range
// deletions, never a delete per slot: after every checkpoint it holds the
// live slots only.
func TestTemporalSortRandomized(t *testing.T) {
	for seed := int64(1); seed <= 30; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			mem := memtest.NewChecked()
			defer mem.AssertSize(t, 0)
			m := &Metrics{}
			op := sortTestOp(t, mem, m)
			out := &rowsOut{}
			committed := &countState{memState: memState{}}
			ckpt := int64(0)
			wm := NoWatermark
			var buffered [][3]int64
			var want []string
			late, restores := 0, 0
			emitModel := func(upTo int64) {
				var due, keep [][3]int64
				for _, r := range buffered {
					if r[1] <= upTo {
						due = append(due, r)
					} else {
						keep = append(keep, r)
					}
				}
				sort.SliceStable(due, func(a, b int) bool {
					x, y := due[a], due[b]
					if x[1] != y[1] {
						return x[1] < y[1]
					}
					if x[0] != y[0] {
						return x[0] > y[0]
					}
					return x[2] < y[2]
				})
				for _, r := range due {
					want = append(want, fmt.Sprintf("%d|%d|%d|", r[0], r[1], r[2]))
				}
				buffered = keep
			}
			for step := 0; step < 60; step++ {
				switch x := rng.Intn(10); {
				case x < 6:
					n := 1 + rng.Intn(6)
					rows := make([][3]int64, n)
					for i := range rows {
						base := max(wm, 0)
						rows[i] = [3]int64{int64(rng.Intn(3)), base + int64(rng.Intn(40)-8), int64(rng.Intn(4))}
						if rows[i][1] <= wm {
							late++
						} else {
							buffered = append(buffered, rows[i])
						}
					}
					if err := op.ProcessBatch(0, winTestBatch(mem, rows...), out); err != nil {
						t.Fatal(err)
					}
				case x < 8:
					next := max(wm, 0) + int64(rng.Intn(15))
					if next > wm {
						wm = next
						emitModel(wm)
					}
					if err := op.ProcessWatermark(next, out); err != nil {
						t.Fatal(err)
					}
				default:
					// checkpoint; sometimes crash and restore from it
					ckpt++
					if err := op.Snapshot(ckpt, committed); err != nil {
						t.Fatal(err)
					}
					if err := op.NotifyComplete(ckpt); err != nil {
						t.Fatal(err)
					}
					if got := len(committed.slotKeys("sort")); got != op.tbl.Len() || committed.dels != 0 {
						t.Fatalf("checkpoint %d: %d slots in the state, %d live, %d point deletes", ckpt, got, op.tbl.Len(), committed.dels)
					}
					if rng.Intn(2) == 0 {
						restored := memState{}
						for k, v := range committed.memState {
							restored[k] = slices.Clone(v)
						}
						op.Close()
						op = sortTestOp(t, mem, m)
						if err := op.Restore(restored); err != nil {
							t.Fatal(err)
						}
						restores++
					}
				}
			}
			wm = MaxWatermark
			emitModel(wm)
			if err := op.ProcessWatermark(MaxWatermark, out); err != nil {
				t.Fatal(err)
			}
			op.Close()
			if !slices.Equal(out.rows, want) {
				t.Fatalf("got %d rows, want %d\ngot  %v\nwant %v", len(out.rows), len(want), out.rows, want)
			}
			if int(m.LateRecords.Load()) != late {
				t.Fatalf("late rows: counted %d, want %d", m.LateRecords.Load(), late)
			}
			if seed == 1 && (restores == 0 || late == 0 || len(want) == 0 || committed.ranges == 0) {
				t.Fatalf("seed 1 should restore (%d), drop late rows (%d), emit (%d) and delete by range (%d)", restores, late, len(want), committed.ranges)
			}
		})
	}
}
