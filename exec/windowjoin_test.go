package exec

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

var wjSideSchema = catalog.Schema{{Name: "k", Type: catalog.BigInt}, {Name: "window_start", Type: catalog.Timestamp}, {Name: "window_end", Type: catalog.Timestamp}, {Name: "v", Type: catalog.BigInt}}

// wjEvent is a row (k, window of 1 s starting at ws, v) of side 0 or 1.
type wjEvent struct {
	side      int
	k, ws, v  int64
	kNull     bool
	windowEnd int64
}

func wjBatch(mem memory.Allocator, evs ...wjEvent) Batch {
	b := array.NewRecordBuilder(mem, wjSideSchema.Arrow())
	defer b.Release()
	for _, e := range evs {
		if e.kNull {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(e.k)
		}
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(e.ws))
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(e.ws + 1000))
		b.Field(3).(*array.Int64Builder).Append(e.v)
	}
	return Batch{Rec: b.NewRecord()}
}

func wjOp(t *testing.T, typ planner.JoinType, mem memory.Allocator, m *Metrics, sub, par int) *windowJoin {
	var out catalog.Schema
	cols := append(catalog.Schema{}, wjSideSchema...)
	if typ != planner.SemiJoin && typ != planner.AntiJoin {
		cols = append(cols, wjSideSchema...)
	}
	for _, c := range cols {
		c.Type = c.Type.Nullable()
		out = append(out, c)
	}
	side := planner.JoinSide{Keys: []int{0, 1, 2}, Schema: wjSideSchema, Mode: planner.InsertOnly}
	res := &planner.Call{Fn: "<>", Args: []planner.Expr{&planner.ColRef{Index: 3, Name: "v", T: catalog.BigInt}, &planner.ColRef{Index: 7, Name: "v", T: catalog.BigInt}}, T: catalog.Boolean}
	s := &planner.WindowJoinOp{ID: "wj", Type: typ, Left: side, Right: side, NullSafe: []bool{false, false, false},
		LeftEnd: 2, RightEnd: 2, Window: "TUMBLE(size=[1 s])", Residual: res, Out: out}
	const maxP = 8
	kg := KeyGroups{Start: (sub*maxP + par - 1) / par, End: ((sub+1)*maxP + par - 1) / par, MaxParallelism: maxP}
	op, err := newWindowJoin(s, &OpContext{OpID: "wj", Subtask: sub, Parallelism: par, KeyGroups: kg, Checkpointing: true, Mem: mem, BatchSize: 16, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// TestWindowJoinRescaleOracle: seeded random rows of 1 s tumbling windows
// on both sides (keys with NULLs, rows late for their own side's
// watermark), through FULL, SEMI and ANTI window joins with the residual
// left.v <> right.v, at parallelism 2 snapshotted halfway and restored at
// 3 and 1. The output must be the oracle's: per window and key, the
// pairs and padded rows (FULL), the left rows with a partner (SEMI) or
// without (ANTI), once each; late rows counted; no leaks. Checkpoints
// every 50 rows delete fired windows' slots by range, never one by one
// (the checkpointed slots are the live ones after each); the restore at
// parallelism 1 reads the state in format 1.
func TestWindowJoinRescaleOracle(t *testing.T) {
	for _, typ := range []planner.JoinType{planner.FullJoin, planner.SemiJoin, planner.AntiJoin} {
		for _, newPar := range []int{3, 1} {
			st := &countState{memState: memState{}}
			ckID := int64(0)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			m := &Metrics{}
			rng := rand.New(rand.NewSource(int64(newPar) + 31*int64(typ)))
			var evs []wjEvent
			clock := [2]int64{}
			for i := 0; i < 500; i++ {
				s := rng.Intn(2)
				clock[s] += int64(rng.Intn(40))
				ts := max(clock[s]-int64(rng.Intn(1500)), 0)
				evs = append(evs, wjEvent{side: s, k: int64(rng.Intn(3)), kNull: rng.Intn(20) == 0, ws: ts / 1000 * 1000, v: int64(rng.Intn(3)), windowEnd: ts})
			}
			// Oracle. The side's watermark: max ts - 300 of its rows so far.
			maxTs := [2]int64{-1 << 40, -1 << 40}
			var live [2][]wjEvent
			late := 0
			for _, e := range evs {
				if e.ws+1000-1 <= maxTs[e.side]-300 {
					late++
				} else {
					live[e.side] = append(live[e.side], e)
				}
				maxTs[e.side] = max(maxTs[e.side], e.windowEnd)
			}
			row := func(e wjEvent) string {
				k := "N"
				if !e.kNull {
					k = fmt.Sprint(e.k)
				}
				return fmt.Sprintf("%s|%d|%d|%d", k, e.ws, e.ws+1000, e.v)
			}
			var want []string
			matched := [2]map[int]bool{{}, {}}
			for i, l := range live[0] {
				for j, r := range live[1] {
					if !l.kNull && !r.kNull && l.k == r.k && l.ws == r.ws && l.v != r.v {
						matched[0][i], matched[1][j] = true, true
						if typ == planner.FullJoin {
							want = append(want, row(l)+"|"+row(r))
						}
					}
				}
			}
			for i, l := range live[0] {
				switch {
				case typ == planner.FullJoin && !matched[0][i]:
					want = append(want, row(l)+"|N|N|N|N")
				case typ == planner.SemiJoin && matched[0][i], typ == planner.AntiJoin && !matched[0][i]:
					want = append(want, row(l))
				}
			}
			if typ == planner.FullJoin {
				for j, r := range live[1] {
					if !matched[1][j] {
						want = append(want, "N|N|N|N|"+row(r))
					}
				}
			}
			sort.Strings(want)

			var got []string
			wm := [2]int64{-1 << 40, -1 << 40}
			run := func(ops []*windowJoin, evs []wjEvent, end bool) {
				outs := make([]*textOut, len(ops))
				for i := range outs {
					outs[i] = &textOut{}
				}
				for n, e := range evs {
					if n%50 == 49 {
						ckID++
						live := 0
						for _, op := range ops {
							if err := op.Snapshot(ckID, st); err != nil {
								t.Fatal(err)
							}
							if err := op.NotifyComplete(ckID); err != nil {
								t.Fatal(err)
							}
							live += op.tbl.Len()
						}
						if got := len(st.slotKeys("wj")); got != live {
							t.Fatalf("checkpoint %d: %d slots in the state, %d live", ckID, got, live)
						}
					}
					b := wjBatch(mem, e)
					kg := int(HashKeys(b.Rec, []int{0, 1, 2}, nil)[0] % 8)
					for i, op := range ops {
						if kg >= op.ctx.KeyGroups.Start && kg < op.ctx.KeyGroups.End {
							if err := op.ProcessBatch(e.side, b, outs[i]); err != nil {
								t.Fatal(err)
							}
							break
						}
					}
					wm[e.side] = max(wm[e.side], e.windowEnd)
					for i, op := range ops {
						for s := 0; s < 2; s++ {
							if err := op.ProcessInputWatermark(s, wm[s]-300); err != nil {
								t.Fatal(err)
							}
						}
						if err := op.ProcessWatermark(min(wm[0], wm[1])-300, outs[i]); err != nil {
							t.Fatal(err)
						}
					}
				}
				for i, op := range ops {
					if end {
						if err := op.ProcessWatermark(MaxWatermark, outs[i]); err != nil {
							t.Fatal(err)
						}
					}
					got = append(got, outs[i].rows...)
				}
			}
			ops := []*windowJoin{wjOp(t, typ, mem, m, 0, 2), wjOp(t, typ, mem, m, 1, 2)}
			half := len(evs) / 2
			run(ops, evs[:half], false)
			ckID++
			for _, op := range ops {
				if err := op.Snapshot(ckID, st); err != nil {
					t.Fatal(err)
				}
				op.Close()
			}
			if st.dels != 0 || st.ranges == 0 {
				t.Fatalf("%d point and %d range deletions of fired windows' slots", st.dels, st.ranges)
			}
			if newPar == 1 && st.toFormat1("wj", windowJoinStateV1, windowJoinStateV2, false) == 0 {
				t.Fatal("no slot to convert to format 1")
			}
			var restored []*windowJoin
			for sub := 0; sub < newPar; sub++ {
				op := wjOp(t, typ, mem, m, sub, newPar)
				if err := op.Restore(st.memState); err != nil {
					t.Fatal(err)
				}
				restored = append(restored, op)
			}
			run(restored, evs[half:], true)
			for _, op := range restored {
				op.Close()
			}
			sort.Strings(got)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s p2 -> p%d: %d rows, want %d\n%s", typ, newPar, len(got), len(want), firstDiff(got, want))
			}
			if n := m.LateRecords.Load(); n != int64(late) || n == 0 {
				t.Errorf("%s: %d late records, want %d (> 0)", typ, n, late)
			}
			mem.AssertSize(t, 0)
		}
	}
}
