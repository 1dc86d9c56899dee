package exec

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/planner"
)

var ijSideSchema = catalog.Schema{{Name: "k", Type: catalog.BigInt}, {Name: "ts", Type: catalog.Timestamp}, {Name: "v", Type: catalog.BigInt}}

// ijEvent is a row (k, ts, v) of side 0 or 1.
type ijEvent struct {
	side     int
	k, ts, v int64
}

func ijBatch(mem memory.Allocator, evs ...ijEvent) Batch {
	b := array.NewRecordBuilder(mem, ijSideSchema.Arrow())
	defer b.Release()
	for _, e := range evs {
		b.Field(0).(*array.Int64Builder).Append(e.k)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(e.ts))
		b.Field(2).(*array.Int64Builder).Append(e.v)
	}
	return Batch{Rec: b.NewRecord()}
}

// ijOp is a FULL interval join on k with -500 <= left.ts - right.ts <=
// 1000 and the residual left.v <> right.v, subtask sub of par.
func ijOp(t *testing.T, mem memory.Allocator, m *Metrics, sub, par int) *intervalJoin {
	var out catalog.Schema
	for _, c := range append(append(catalog.Schema{}, ijSideSchema...), ijSideSchema...) {
		c.Type = c.Type.Nullable()
		out = append(out, c)
	}
	side := planner.JoinSide{Keys: []int{0}, Schema: ijSideSchema, Mode: planner.InsertOnly}
	res := &planner.Call{Fn: "<>", Args: []planner.Expr{&planner.ColRef{Index: 2, Name: "v", T: catalog.BigInt}, &planner.ColRef{Index: 5, Name: "v", T: catalog.BigInt}}, T: catalog.Boolean}
	s := &planner.IntervalJoinOp{ID: "ij", Type: planner.FullJoin, Left: side, Right: side, NullSafe: []bool{false},
		LeftTime: 1, RightTime: 1, LowerBound: -500, UpperBound: 1000, Residual: res, Out: out}
	const maxP = 8
	kg := KeyGroups{Start: (sub*maxP + par - 1) / par, End: ((sub+1)*maxP + par - 1) / par, MaxParallelism: maxP}
	op, err := newIntervalJoin(s, &OpContext{OpID: "ij", Subtask: sub, Parallelism: par, KeyGroups: kg, Checkpointing: true, Mem: mem, BatchSize: 16, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// textOut collects rows as text (NULL as N) and the watermarks.
type textOut struct {
	rows []string
	wms  []int64
}

func (c *textOut) Collect(b Batch) error {
	defer b.Rec.Release()
	if b.Ops != nil {
		return fmt.Errorf("not append-only")
	}
	for i := 0; i < b.Rows(); i++ {
		var parts []string
		for j := 0; j < int(b.Rec.NumCols()); j++ {
			col := b.Rec.Column(j)
			switch {
			case col.IsNull(i):
				parts = append(parts, "N")
			case col.DataType().ID() == arrow.INT64:
				parts = append(parts, fmt.Sprint(col.(*array.Int64).Value(i)))
			case col.DataType().ID() == arrow.TIMESTAMP:
				parts = append(parts, fmt.Sprint(int64(col.(*array.Timestamp).Value(i))))
			}
		}
		c.rows = append(c.rows, strings.Join(parts, "|"))
	}
	return nil
}
func (c *textOut) EmitWatermark(wm int64) error { c.wms = append(c.wms, wm); return nil }

// TestIntervalJoinRescaleOracle: seeded random rows of both sides, out of
// order within each side's watermark (max ts - 300) and some late, are fed
// to a FULL interval join at parallelism 2 (routed by key group), which is
// snapshotted halfway and restored at parallelism 3 and 1 for the rest.
// The output of both halves must be the oracle's: every pair of non-late
// rows (each judged by its own side's watermark) within the bound whose
// residual holds, and every non-late row without one padded, once; the
// output watermark is held back by the bound; late rows are counted; no
// memory leaks.
func TestIntervalJoinRescaleOracle(t *testing.T) {
	for _, newPar := range []int{3, 1} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		m := &Metrics{}
		rng := rand.New(rand.NewSource(int64(11 + newPar)))
		// Events: per side a clock; ts up to 400 ms behind it.
		var evs []ijEvent
		clock := [2]int64{}
		for i := 0; i < 600; i++ {
			s := rng.Intn(2)
			clock[s] += int64(rng.Intn(30))
			evs = append(evs, ijEvent{side: s, k: int64(rng.Intn(4)), ts: max(clock[s]-int64(rng.Intn(400)), 0), v: int64(rng.Intn(3))})
		}
		// The oracle: late rows by their side's watermark at arrival.
		maxTs := [2]int64{-1 << 40, -1 << 40}
		var live [2][]ijEvent
		lateN := 0
		for _, e := range evs {
			if e.ts <= maxTs[e.side]-300 {
				lateN++
			} else {
				live[e.side] = append(live[e.side], e)
			}
			maxTs[e.side] = max(maxTs[e.side], e.ts)
		}
		var want []string
		matched := [2]map[int]bool{{}, {}}
		for i, l := range live[0] {
			for j, r := range live[1] {
				if d := l.ts - r.ts; l.k == r.k && d >= -500 && d <= 1000 && l.v != r.v {
					want = append(want, fmt.Sprintf("%d|%d|%d|%d|%d|%d", l.k, l.ts, l.v, r.k, r.ts, r.v))
					matched[0][i], matched[1][j] = true, true
				}
			}
		}
		for i, l := range live[0] {
			if !matched[0][i] {
				want = append(want, fmt.Sprintf("%d|%d|%d|N|N|N", l.k, l.ts, l.v))
			}
		}
		for j, r := range live[1] {
			if !matched[1][j] {
				want = append(want, fmt.Sprintf("N|N|N|%d|%d|%d", r.k, r.ts, r.v))
			}
		}
		sort.Strings(want)

		// The run: p=2 for the first half, then restored at newPar.
		var got []string
		run := func(ops []*intervalJoin, evs []ijEvent, maxTs *[2]int64, end bool) {
			outs := make([]*textOut, len(ops))
			for i := range outs {
				outs[i] = &textOut{}
			}
			for _, e := range evs {
				b := ijBatch(mem, e)
				kg := int(HashKeys(b.Rec, []int{0}, nil)[0] % 8)
				for i, op := range ops {
					if kg >= op.ctx.KeyGroups.Start && kg < op.ctx.KeyGroups.End {
						if err := op.ProcessBatch(e.side, b, outs[i]); err != nil {
							t.Fatal(err)
						}
						break
					}
				}
				// Each side's watermark follows its rows; the operator gets
				// both sides' and the combined one.
				maxTs[e.side] = max(maxTs[e.side], e.ts)
				for i, op := range ops {
					for s := 0; s < 2; s++ {
						if err := op.ProcessInputWatermark(s, maxTs[s]-300); err != nil {
							t.Fatal(err)
						}
					}
					if err := op.ProcessWatermark(min(maxTs[0], maxTs[1])-300, outs[i]); err != nil {
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
				for _, wm := range outs[i].wms {
					if wm != MaxWatermark && wm > min(maxTs[0], maxTs[1])-300-1000 {
						t.Errorf("watermark %d not held back by 1000 ms", wm)
					}
				}
				got = append(got, outs[i].rows...)
			}
		}
		ops := []*intervalJoin{ijOp(t, mem, m, 0, 2), ijOp(t, mem, m, 1, 2)}
		wm := [2]int64{-1 << 40, -1 << 40}
		half := len(evs) / 2
		run(ops, evs[:half], &wm, false)
		st := memState{}
		for _, op := range ops {
			if err := op.Snapshot(1, st); err != nil {
				t.Fatal(err)
			}
			op.Close()
		}
		var restored []*intervalJoin
		for sub := 0; sub < newPar; sub++ {
			op := ijOp(t, mem, m, sub, newPar)
			if err := op.Restore(st); err != nil {
				t.Fatal(err)
			}
			// The restored operator judges lateness by the checkpointed
			// input watermarks before any new one arrives.
			for s := 0; s < 2; s++ {
				if op.sides[s].wm != wm[s]-300 {
					t.Fatalf("restored input %d watermark %d, want %d", s, op.sides[s].wm, wm[s]-300)
				}
			}
			restored = append(restored, op)
		}
		run(restored, evs[half:], &wm, true)
		for _, op := range restored {
			op.Close()
		}
		sort.Strings(got)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("p2 -> p%d: %d rows, want %d\n%s", newPar, len(got), len(want), firstDiff(got, want))
		}
		if n := m.LateRecords.Load(); n != int64(lateN) || n == 0 {
			t.Errorf("%d late records, want %d (> 0)", n, lateN)
		}
		mem.AssertSize(t, 0)
	}
}

func firstDiff(got, want []string) string {
	for i := 0; i < len(got) && i < len(want); i++ {
		if got[i] != want[i] {
			return fmt.Sprintf("row %d: got %s, want %s", i, got[i], want[i])
		}
	}
	return "one is a prefix of the other"
}

// BenchmarkIntervalJoin: batches of 1024 rows alternating between the
// sides, 1000 keys, ts advancing 1 ms a row per side, the FULL join of
// ijOp (bound -500..1000 ms, a residual), the watermark after every
// batch. Reports input rows per second.
func BenchmarkIntervalJoin(b *testing.B) {
	mem := memory.NewGoAllocator()
	t := &testing.T{}
	op := ijOp(t, mem, &Metrics{}, 0, 1)
	out := &countOut{}
	const n = 1024
	rng := rand.New(rand.NewSource(1))
	var ts [2]int64
	batches := make([][]ijEvent, 64)
	for i := range batches {
		s := i % 2
		for r := 0; r < n; r++ {
			ts[s]++
			batches[i] = append(batches[i], ijEvent{side: s, k: int64(rng.Intn(1000)), ts: ts[s], v: int64(rng.Intn(3))})
		}
	}
	b.ResetTimer()
	var shift int64
	for i := 0; i < b.N; i++ {
		evs := batches[i%len(batches)]
		if i%len(batches) == 0 && i > 0 {
			shift += ts[0]
		}
		b.StopTimer()
		sh := make([]ijEvent, len(evs))
		for r, e := range evs {
			e.ts += shift
			sh[r] = e
		}
		bt := ijBatch(mem, sh...)
		b.StartTimer()
		s := evs[0].side
		if err := op.ProcessBatch(s, bt, out); err != nil {
			b.Fatal(err)
		}
		wm := sh[len(sh)-1].ts - 2000
		_ = op.ProcessInputWatermark(s, wm)
		if err := op.ProcessWatermark(wm-n, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(out.rows)/float64(b.N*n), "out/row")
}

// TestIntervalJoinRestoredRowsExpire: rows restored from a checkpoint
// expire (a FULL join pads them) when the watermark passes their bound,
// though no row of their key comes after the restore: the restore sets
// every slot's timer (timers are not checkpointed), and the next snapshot
// deletes the timer entries an older version stored.
func TestIntervalJoinRestoredRowsExpire(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	op := ijOp(t, mem, &Metrics{}, 0, 1)
	var evs []ijEvent
	for k := int64(0); k < 6; k++ {
		evs = append(evs, ijEvent{side: int(k % 2), k: k, ts: 100 * k, v: k})
	}
	out := &textOut{}
	if err := op.ProcessBatch(0, ijBatch(mem, evs[0], evs[2], evs[4]), out); err != nil {
		t.Fatal(err)
	}
	if err := op.ProcessBatch(1, ijBatch(mem, evs[1], evs[3], evs[5]), out); err != nil {
		t.Fatal(err)
	}
	st := memState{}
	// a timer entry as a version that checkpointed timers wrote it
	stale := binary.BigEndian.AppendUint64(checkpoint.KeyedPrefix("ij/timers/event", 3), 1500^(1<<63))
	stale = append(stale, 'x')
	st[string(stale)] = nil
	if err := op.Snapshot(1, st); err != nil {
		t.Fatal(err)
	}
	op.Close()
	op = ijOp(t, mem, &Metrics{}, 0, 1)
	if err := op.Restore(st); err != nil {
		t.Fatal(err)
	}
	out = &textOut{}
	if err := op.ProcessWatermark(10_000, out); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out.rows)
	want := "0|0|0|N|N|N\n2|200|2|N|N|N\n4|400|4|N|N|N\nN|N|N|1|100|1\nN|N|N|3|300|3\nN|N|N|5|500|5"
	if got := strings.Join(out.rows, "\n"); got != want {
		t.Fatalf("after the restore, the watermark emitted\n%s\nwant\n%s", got, want)
	}
	if err := op.Snapshot(2, st); err != nil {
		t.Fatal(err)
	}
	if _, ok := st[string(stale)]; ok {
		t.Fatal("the stored timer entry survived the next checkpoint")
	}
	op.Close()
	mem.AssertSize(t, 0)
}
