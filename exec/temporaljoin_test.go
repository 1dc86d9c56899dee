package exec

import (
	"fmt"
	"github.com/streamsql/streamsql/internal/memtest"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

var tjSchema = catalog.Schema{{Name: "k", Type: catalog.BigInt}, {Name: "ts", Type: catalog.Timestamp}, {Name: "v", Type: catalog.BigInt}}

// tjBatch builds a batch of rows (k, ts, v); k < 0 is NULL.
func tjBatch(mem memory.Allocator, evs []ijEvent) Batch {
	b := array.NewRecordBuilder(mem, tjSchema.Arrow())
	defer b.Release()
	for _, e := range evs {
		if e.k < 0 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(e.k)
		}
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(e.ts))
		b.Field(2).(*array.Int64Builder).Append(e.v)
	}
	return Batch{Rec: b.NewRecord()}
}

// tjOp is a temporal join on k (LEFT with the residual left.v <> right.v,
// or INNER without one), subtask sub of par, max parallelism 8.
func tjOp(t *testing.T, mem memory.Allocator, m *Metrics, typ planner.JoinType, sub, par int) *temporalJoin {
	out := append(catalog.Schema{}, tjSchema...)
	for _, c := range tjSchema {
		if typ == planner.LeftJoin {
			c.Type = c.Type.Nullable()
		}
		out = append(out, c)
	}
	side := planner.JoinSide{Keys: []int{0}, Schema: tjSchema, Mode: planner.InsertOnly}
	s := &planner.TemporalJoinOp{ID: "tj", Type: typ, Table: "versions", Left: side, Right: side, LeftTime: 1, RightTime: 1,
		PrimaryKey: []int{0}, Out: out}
	if typ == planner.LeftJoin {
		s.Residual = &planner.Call{Fn: "<>", Args: []planner.Expr{&planner.ColRef{Index: 2, Name: "v", T: catalog.BigInt}, &planner.ColRef{Index: 5, Name: "v", T: catalog.BigInt}}, T: catalog.Boolean}
	}
	const maxP = 8
	kg := KeyGroups{Start: (sub*maxP + par - 1) / par, End: ((sub+1)*maxP + par - 1) / par, MaxParallelism: maxP}
	op, err := newTemporalJoin(s, &OpContext{OpID: "tj", Subtask: sub, Parallelism: par, KeyGroups: kg, Checkpointing: true, Mem: mem, BatchSize: 16, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// tjOracle is the expected output: for each non-late left row, the
// non-late right row with its key and the largest time <= its time (of
// equal times, the later one), if the residual holds; LEFT pads the
// others. Lateness is judged per batch by the side's watermark before it.
func tjOracle(batches [][]ijEvent, typ planner.JoinType, delay int64) (want []string, lateN int, versions []ijEvent) {
	maxTs := [2]int64{-1 << 40, -1 << 40}
	var live [2][]ijEvent
	for _, b := range batches {
		s := b[0].side
		for _, e := range b {
			if e.ts <= maxTs[s]-delay {
				lateN++
			} else {
				live[s] = append(live[s], e)
			}
		}
		for _, e := range b {
			maxTs[s] = max(maxTs[s], e.ts)
		}
	}
	for _, l := range live[0] {
		best := -1
		for j, r := range live[1] {
			if l.k >= 0 && r.k == l.k && r.ts <= l.ts && (best < 0 || r.ts >= live[1][best].ts) {
				best = j
			}
		}
		if best >= 0 && (typ == planner.InnerJoin || live[1][best].v != l.v) {
			r := live[1][best]
			want = append(want, fmt.Sprintf("%s|%d|%d|%d|%d|%d", tjKey(l.k), l.ts, l.v, r.k, r.ts, r.v))
		} else if typ == planner.LeftJoin {
			want = append(want, fmt.Sprintf("%s|%d|%d|N|N|N", tjKey(l.k), l.ts, l.v))
		}
	}
	sort.Strings(want)
	return want, lateN, live[1]
}

func tjKey(k int64) string {
	if k < 0 {
		return "N"
	}
	return fmt.Sprint(k)
}

// TestTemporalJoinRescaleOracle: seeded random rows of both sides (the
// right one: versions of 5 keys; left rows with some NULL keys), out of
// order within each side's watermark (max ts - 300) and some late, in
// batches of 1, 7 or 100 rows of one side, are fed to a temporal join
// (INNER, and LEFT with a residual) at parallelism 1 or 3, routed by key
// group; it is snapshotted halfway and restored at the other parallelism
// for the rest. The output must be the oracle's; the restored operator
// judges lateness by the checkpointed input watermarks; superseded
// versions are cleaned (at most one version per key at or below the
// watermark, fewer kept than arrived); late rows are counted; the output
// watermark is the input's; no memory leaks.
func TestTemporalJoinRescaleOracle(t *testing.T) {
	const delay = 300
	for _, typ := range []planner.JoinType{planner.InnerJoin, planner.LeftJoin} {
		for _, pars := range [][2]int{{1, 3}, {3, 1}} {
			for _, bs := range []int{1, 7, 100} {
				name := fmt.Sprintf("%s/p%d->p%d/batch=%d", typ, pars[0], pars[1], bs)
				t.Run(name, func(t *testing.T) {
					mem := memtest.NewChecked()
					m := &Metrics{}
					rng := rand.New(rand.NewSource(int64(7*bs + pars[0] + 100*int(typ))))
					var batches [][]ijEvent
					clock := [2]int64{}
					for len(batches) < 1500/bs+20 {
						s := rng.Intn(2)
						n := 1 + rng.Intn(bs)
						var b []ijEvent
						for i := 0; i < n; i++ {
							clock[s] += int64(rng.Intn(25))
							k := int64(rng.Intn(5))
							if s == 0 && rng.Intn(15) == 0 {
								k = -1
							}
							b = append(b, ijEvent{side: s, k: k, ts: max(clock[s]-int64(rng.Intn(400)), 0), v: int64(rng.Intn(3))})
						}
						batches = append(batches, b)
					}
					want, lateN, versions := tjOracle(batches, typ, delay)

					var got []string
					maxTs := [2]int64{-1 << 40, -1 << 40}
					run := func(ops []*temporalJoin, batches [][]ijEvent, end bool) {
						outs := make([]*textOut, len(ops))
						for i := range outs {
							outs[i] = &textOut{}
						}
						for _, b := range batches {
							s := b[0].side
							// Route each row to the subtask owning its key group.
							parts := make([][]ijEvent, len(ops))
							for _, e := range b {
								one := tjBatch(mem, []ijEvent{e})
								kg := int(HashKeys(one.Rec, []int{0}, nil)[0] % 8)
								one.Rec.Release()
								for i, op := range ops {
									if kg >= op.ctx.KeyGroups.Start && kg < op.ctx.KeyGroups.End {
										parts[i] = append(parts[i], e)
									}
								}
							}
							for i, op := range ops {
								if len(parts[i]) > 0 {
									if err := op.ProcessBatch(s, tjBatch(mem, parts[i]), outs[i]); err != nil {
										t.Fatal(err)
									}
								}
							}
							for _, e := range b {
								maxTs[s] = max(maxTs[s], e.ts)
							}
							wm := min(maxTs[0], maxTs[1]) - delay
							for i, op := range ops {
								for s := 0; s < 2; s++ {
									if err := op.ProcessInputWatermark(s, maxTs[s]-delay); err != nil {
										t.Fatal(err)
									}
								}
								if err := op.ProcessWatermark(wm, outs[i]); err != nil {
									t.Fatal(err)
								}
								if n := len(outs[i].wms); n > 0 && outs[i].wms[n-1] != wm {
									t.Fatalf("output watermark %d, want %d", outs[i].wms[n-1], wm)
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
					ops := make([]*temporalJoin, pars[0])
					for i := range ops {
						ops[i] = tjOp(t, mem, m, typ, i, pars[0])
					}
					half := len(batches) / 2
					run(ops, batches[:half], false)
					st := memState{}
					for _, op := range ops {
						if err := op.Snapshot(1, st); err != nil {
							t.Fatal(err)
						}
						op.Close()
					}
					restored := make([]*temporalJoin, pars[1])
					for sub := range restored {
						op := tjOp(t, mem, m, typ, sub, pars[1])
						if err := op.Restore(st); err != nil {
							t.Fatal(err)
						}
						for s := 0; s < 2; s++ {
							if op.sides[s].wm != maxTs[s]-delay {
								t.Fatalf("restored input %d watermark %d, want %d", s, op.sides[s].wm, maxTs[s]-delay)
							}
						}
						restored[sub] = op
					}
					run(restored, batches[half:], false)
					// Versions behind the watermark are cleaned.
					wm := min(maxTs[0], maxTs[1]) - delay
					kept, arrived := 0, 0
					for _, op := range restored {
						for g := int32(0); int(g) < op.tbl.Slots(); g++ {
							if !op.tbl.Alive(g) || op.side[g] != 1 {
								continue
							}
							old := 0
							for _, id := range op.rows[g] {
								if op.sides[1].times[id] <= wm {
									old++
								}
							}
							if old > 1 {
								t.Errorf("slot %d keeps %d versions at or below the watermark %d", g, old, wm)
							}
							kept += len(op.rows[g])
						}
					}
					// Kept: per key the versions above the watermark (one per
					// time) and the latest one at or below it.
					type kt struct{ k, ts int64 }
					above, below := map[kt]bool{}, map[int64]bool{}
					for _, r := range versions {
						if r.ts > wm {
							above[kt{r.k, r.ts}] = true
						} else {
							below[r.k] = true
						}
					}
					arrived = len(versions)
					if kept != len(above)+len(below) || kept >= arrived {
						t.Errorf("%d versions kept of %d arrived, want %d", kept, arrived, len(above)+len(below))
					}
					run(restored, nil, true)
					for _, op := range restored {
						op.Close()
					}
					sort.Strings(got)
					if strings.Join(got, "\n") != strings.Join(want, "\n") {
						t.Errorf("%d rows, want %d\n%s", len(got), len(want), firstDiff(got, want))
					}
					if len(want) < 100 {
						t.Errorf("only %d expected rows", len(want))
					}
					if n := m.LateRecords.Load(); n != int64(lateN) || n == 0 {
						t.Errorf("%d late records, want %d (> 0)", n, lateN)
					}
					mem.AssertSize(t, 0)
				})
			}
		}
	}
}

// BenchmarkTemporalJoin: batches of 1024 rows alternating between the
// sides (left rows, and right versions), 1000 keys, ts advancing 1 ms a
// row per side, the LEFT join of tjOp (with a residual), both inputs'
// watermarks 2 s behind their rows, the combined one after every batch.
// Reports input rows per second.
func BenchmarkTemporalJoin(b *testing.B) {
	mem := memory.NewGoAllocator()
	op := tjOp(&testing.T{}, mem, &Metrics{}, planner.LeftJoin, 0, 1)
	out := &countOut{}
	const n = 1024
	rng := rand.New(rand.NewSource(1))
	var ts [2]int64
	evs := make([]ijEvent, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := i % 2
		for r := range evs {
			ts[s]++
			evs[r] = ijEvent{side: s, k: int64(rng.Intn(1000)), ts: ts[s], v: int64(rng.Intn(3))}
		}
		bt := tjBatch(mem, evs)
		b.StartTimer()
		if err := op.ProcessBatch(s, bt, out); err != nil {
			b.Fatal(err)
		}
		_ = op.ProcessInputWatermark(s, ts[s]-2000)
		if err := op.ProcessWatermark(min(ts[0], ts[1])-2000, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(out.rows)/float64(b.N*n), "out/row")
}

// TestTemporalJoinStateTTL: with table.exec.state.ttl (1 s, the injected
// clock) a key's versions stay while they are used within the TTL, and are
// dropped once unused for longer (INNER then drops the next row, LEFT pads
// it); pending left rows of a key idle for longer than the TTL are dropped
// without output. Without a TTL the same input joins every row.
func TestTemporalJoinStateTTL(t *testing.T) {
	for _, typ := range []planner.JoinType{planner.InnerJoin, planner.LeftJoin} {
		for _, ttl := range []time.Duration{0, time.Second} {
			mem := memtest.NewChecked()
			clock := &testMsClock{}
			op := tjOp(t, mem, &Metrics{}, typ, 0, 1)
			op.ctx.StateTTL, op.ctx.Clock = ttl, clock
			if ttl > 0 { // the table is built with the TTL
				var err error
				if op, err = newTemporalJoin(op.spec, op.ctx); err != nil {
					t.Fatal(err)
				}
			}
			out := &textOut{}
			step := func(ms int64, side int, e ijEvent, wm int64) {
				clock.ms = ms
				e.side = side
				if err := op.ProcessBatch(side, tjBatch(mem, []ijEvent{e}), out); err != nil {
					t.Fatal(err)
				}
				for s := 0; s < 2; s++ {
					if err := op.ProcessInputWatermark(s, wm); err != nil {
						t.Fatal(err)
					}
				}
				if err := op.ProcessWatermark(wm, out); err != nil {
					t.Fatal(err)
				}
			}
			step(0, 1, ijEvent{k: 1, ts: 10, v: 7}, 10)
			step(500, 0, ijEvent{k: 1, ts: 20, v: 1}, 20)  // joined (the version used at 500)
			step(1400, 0, ijEvent{k: 1, ts: 30, v: 2}, 30) // 900 ms later: joined
			step(2500, 0, ijEvent{k: 1, ts: 40, v: 0}, 40) // 1100 ms unused: expired
			step(2500, 0, ijEvent{k: 2, ts: 100, v: 0}, 40)
			clock.ms = 4000 // the pending row of key 2 is idle for 1500 ms
			if err := op.ProcessWatermark(100, out); err != nil {
				t.Fatal(err)
			}
			if err := op.ProcessWatermark(MaxWatermark, out); err != nil {
				t.Fatal(err)
			}
			sort.Strings(out.rows)
			want := []string{"1|20|1|1|10|7", "1|30|2|1|10|7", "1|40|0|1|10|7"}
			if typ == planner.LeftJoin {
				want = append(want, "2|100|0|N|N|N")
			}
			if ttl > 0 {
				want = want[:2]
				if typ == planner.LeftJoin {
					want = append(want, "1|40|0|N|N|N")
				}
			}
			if strings.Join(out.rows, " ") != strings.Join(want, " ") {
				t.Errorf("%s ttl=%v: got %v, want %v", typ, ttl, out.rows, want)
			}
			if ttl > 0 && op.tbl.Len() != 0 {
				t.Errorf("%s: %d slots left after the TTL", typ, op.tbl.Len())
			}
			op.Close()
			mem.AssertSize(t, 0)
		}
	}
}
