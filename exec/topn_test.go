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

// (k, v, id, op) rows of the TopN tests: op 0 adds, 1 retracts.
type topnRow struct {
	k, v, id int64
	retract  bool
}

var topnSchema = catalog.Schema{{Name: "k", Type: catalog.BigInt}, {Name: "v", Type: catalog.BigInt}, {Name: "id", Type: catalog.BigInt}}

func topnBatch(mem memory.Allocator, rows []topnRow) Batch {
	b := array.NewRecordBuilder(mem, topnSchema.Arrow())
	defer b.Release()
	var ops []RowKind
	anyRetract := false
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.k)
		b.Field(1).(*array.Int64Builder).Append(r.v)
		b.Field(2).(*array.Int64Builder).Append(r.id)
		if r.retract {
			ops, anyRetract = append(ops, UpdateBefore), true
		} else {
			ops = append(ops, Insert)
		}
	}
	if !anyRetract {
		ops = nil
	}
	return Batch{Rec: b.NewRecord(), Ops: ops}
}

const topnMaxP = 8

// topnLo is the first rank of the tests' TopN: 2 with the rank column (a
// range with an offset), 1 without (Flink's without-rank algorithm).
func topnLo(withRank bool) int64 {
	if withRank {
		return 2
	}
	return 1
}

func topnOp(t *testing.T, mem memory.Allocator, mode planner.ChangelogMode, outputRank bool, sub, par int, clock Clock, ttl time.Duration) *topN {
	out := append(append(catalog.Schema{}, topnSchema...), catalog.Column{Name: "rn", Type: catalog.BigInt.WithNotNull(true)})
	s := &planner.RankOp{ID: "topn", PartKeys: []int{0}, PartNames: []string{"k"}, Order: []planner.SortKey{{Col: 1, Name: "v", Desc: true}},
		RankStart: topnLo(outputRank), RankEnd: topnLo(outputRank) + 2, OutputRank: outputRank, InputMode: mode, Out: out}
	kg := KeyGroups{Start: (sub*topnMaxP + par - 1) / par, End: ((sub+1)*topnMaxP + par - 1) / par, MaxParallelism: topnMaxP}
	op, err := newTopN(s, &OpContext{OpID: "topn", Subtask: sub, Parallelism: par, KeyGroups: kg, Checkpointing: true, Mem: mem, BatchSize: 16, Clock: clock, StateTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// changeTable folds a changelog: row text -> count; it fails on the
// retraction of a row not there.
type changeTable struct {
	t      *testing.T
	rows   map[string]int
	noRank bool
}

func (c *changeTable) Collect(b Batch) error {
	defer b.Rec.Release()
	for i := 0; i < b.Rows(); i++ {
		var parts []string
		n := int(b.Rec.NumCols())
		if c.noRank {
			n--
		}
		for j := 0; j < n; j++ {
			switch col := b.Rec.Column(j).(type) {
			case *array.Int64:
				parts = append(parts, fmt.Sprint(col.Value(i)))
			case *array.Timestamp:
				parts = append(parts, fmt.Sprint(int64(col.Value(i))))
			}
		}
		key := strings.Join(parts, "|")
		if b.Op(i).IsAdd() {
			c.rows[key]++
		} else if c.rows[key]--; c.rows[key] < 0 {
			c.t.Fatalf("%s of %s: not in the table", b.Op(i), key)
		}
	}
	return nil
}
func (c *changeTable) EmitWatermark(int64) error { return nil }

func (c *changeTable) sorted() []string {
	var out []string
	for k, n := range c.rows {
		for ; n > 0; n-- {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// topnOracle is ranks topnLo..topnLo+2 by v DESC (ties by arrival) per k
// of the live rows (a retraction removes the first equal live row).
func topnOracle(rows []topnRow, withRank bool) []string {
	live := map[int64][]topnRow{}
	for _, r := range rows {
		l := live[r.k]
		if !r.retract {
			live[r.k] = append(l, r)
			continue
		}
		for j, x := range l {
			if x.v == r.v && x.id == r.id {
				live[r.k] = append(l[:j:j], l[j+1:]...)
				break
			}
		}
	}
	var out []string
	for k, l := range live {
		sort.SliceStable(l, func(a, b int) bool { return l[a].v > l[b].v })
		for j, r := range l {
			if lo := topnLo(withRank); int64(j+1) >= lo && int64(j+1) <= lo+2 {
				s := fmt.Sprintf("%d|%d|%d", k, r.v, r.id)
				if withRank {
					s += fmt.Sprintf("|%d", j+1)
				}
				out = append(out, s)
			}
		}
	}
	sort.Strings(out)
	return out
}

// topnStream is a seeded random stream over 5 keys with many ties; with
// retractions, a retraction takes back a random live row.
func topnStream(rng *rand.Rand, n int, retractions bool) []topnRow {
	var rows, live []topnRow
	for id := int64(0); len(rows) < n; id++ {
		if retractions && len(live) > 0 && rng.Intn(3) == 0 {
			j := rng.Intn(len(live))
			r := live[j]
			live = append(live[:j], live[j+1:]...)
			r.retract = true
			rows = append(rows, r)
			continue
		}
		r := topnRow{k: int64(rng.Intn(5)), v: int64(rng.Intn(8)), id: id}
		rows = append(rows, r)
		live = append(live, r)
	}
	return rows
}

// route splits rows by the subtask (of par) that owns their key group.
func route(t *testing.T, mem memory.Allocator, rows []topnRow, par int) [][]topnRow {
	out := make([][]topnRow, par)
	for _, r := range rows {
		b := topnBatch(mem, []topnRow{r})
		h := int(HashKeys(b.Rec, []int{0}, nil)[0] % topnMaxP)
		b.Rec.Release()
		for sub := 0; sub < par; sub++ {
			if h >= (sub*topnMaxP+par-1)/par && h < ((sub+1)*topnMaxP+par-1)/par {
				out[sub] = append(out[sub], r)
			}
		}
	}
	return out
}

// feed processes rows in batches of bs.
func feed(t *testing.T, mem memory.Allocator, op Operator, rows []topnRow, bs int, out Collector) {
	for i := 0; i < len(rows); i += bs {
		if err := op.ProcessBatch(0, topnBatch(mem, rows[i:min(i+bs, len(rows))]), out); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTopNRestoreRescale: a TopN (ranks 2..4 per key with the rank column,
// 1..3 without; insert-only or updating input) runs half a seeded
// random stream at parallelism 2, checkpoints, and is restored at
// parallelism 3 (and 1) for the second half: the folded changelog of both
// halves equals the oracle's ranks over the whole stream (and that of an
// uninterrupted run). Zero leaks.
func TestTopNRestoreRescale(t *testing.T) {
	for _, mode := range []planner.ChangelogMode{planner.InsertOnly, planner.Retract} {
		for _, withRank := range []bool{true, false} {
			for _, after := range []int{3, 1} {
				name := fmt.Sprintf("mode=%s,rank=%v,p2->p%d", mode, withRank, after)
				t.Run(name, func(t *testing.T) {
					mem := memtest.NewChecked()
					defer mem.AssertSize(t, 0)
					rng := rand.New(rand.NewSource(int64(len(name))))
					rows := topnStream(rng, 600, mode == planner.Retract)
					want := topnOracle(rows, withRank)
					if len(want) < 5 {
						t.Fatalf("oracle has %d rows", len(want))
					}
					tbl := &changeTable{t: t, rows: map[string]int{}, noRank: !withRank}
					half := len(rows) / 2
					st := memState{}
					for sub, part := range route(t, mem, rows[:half], 2) {
						op := topnOp(t, mem, mode, withRank, sub, 2, nil, 0)
						feed(t, mem, op, part, 7, tbl)
						if err := op.Snapshot(1, st); err != nil {
							t.Fatal(err)
						}
						op.Close()
					}
					for sub, part := range route(t, mem, rows[half:], after) {
						op := topnOp(t, mem, mode, withRank, sub, after, nil, 0)
						if err := op.Restore(st); err != nil {
							t.Fatal(err)
						}
						feed(t, mem, op, part, 5, tbl)
						op.Close()
					}
					if got := tbl.sorted(); fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("after the restore:\n got %v\nwant %v", got, want)
					}
					// and uninterrupted, at parallelism 1, one row at a time
					whole := &changeTable{t: t, rows: map[string]int{}, noRank: !withRank}
					op := topnOp(t, mem, mode, withRank, 0, 1, nil, 0)
					feed(t, mem, op, rows, 1, whole)
					op.Close()
					if got := whole.sorted(); fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("uninterrupted:\n got %v\nwant %v", got, want)
					}
				})
			}
		}
	}
}

type ttlClock struct{ now time.Time }

func (c *ttlClock) Now() time.Time { return c.now }

// TestTopNStateTTL: with table.exec.state.ttl a key not updated for the
// TTL is forgotten (its rows are not retracted, as Flink): a later row of
// it ranks among new rows only.
func TestTopNStateTTL(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	clock := &ttlClock{now: time.UnixMilli(1_000_000)}
	op := topnOp(t, mem, planner.InsertOnly, true, 0, 1, clock, time.Minute) // ranks 2..4
	defer op.Close()
	tbl := &changeTable{t: t, rows: map[string]int{}}
	feed(t, mem, op, []topnRow{{k: 1, v: 9, id: 1}, {k: 1, v: 8, id: 2}, {k: 1, v: 7, id: 3}}, 3, tbl)
	if got := fmt.Sprint(tbl.sorted()); got != "[1|7|3|3 1|8|2|2]" {
		t.Fatalf("before expiry: %s", got)
	}
	clock.now = clock.now.Add(30 * time.Second)
	feed(t, mem, op, []topnRow{{k: 2, v: 1, id: 4}}, 1, tbl) // another key: k=1 not touched
	clock.now = clock.now.Add(45 * time.Second)              // k=1 last updated 75 s ago
	out := &changeTable{t: t, rows: map[string]int{}}
	feed(t, mem, op, []topnRow{{k: 1, v: 1, id: 5}, {k: 1, v: 0, id: 6}}, 2, out)
	// expired: the rows 9, 8, 7 are gone; 1 is rank 1 (not in 2..4), 0 rank 2
	if got := fmt.Sprint(out.sorted()); got != "[1|0|6|2]" {
		t.Errorf("after expiry: %s, want [1|0|6|2]", got)
	}
	if op.tbl.Len() != 2 {
		t.Errorf("%d live keys, want 2", op.tbl.Len())
	}
}

func dedupOp(t *testing.T, mem memory.Allocator, rowTime, keepLast bool, sub, par int) *dedup {
	out := append(append(catalog.Schema{}, topnSchema...), catalog.Column{Name: "rn", Type: catalog.BigInt.WithNotNull(true)})
	out[1].Type = catalog.Timestamp
	s := &planner.DeduplicateOp{ID: "d", Keys: []int{0}, KeyNames: []string{"k"}, TimeCol: 1, RowTime: rowTime, KeepLast: keepLast, Out: out}
	kg := KeyGroups{Start: (sub*topnMaxP + par - 1) / par, End: ((sub+1)*topnMaxP + par - 1) / par, MaxParallelism: topnMaxP}
	op, err := newDedup(s, &OpContext{OpID: "d", Subtask: sub, Parallelism: par, KeyGroups: kg, Checkpointing: true, Mem: mem, BatchSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// TestDedupRestoreRescale: the four deduplications over a seeded random
// stream (k, ts, id), restored from parallelism 2 at 3 halfway, fold to
// the oracle's kept row per key.
func TestDedupRestoreRescale(t *testing.T) {
	for _, c := range []struct{ rowTime, keepLast bool }{{true, true}, {true, false}, {false, true}, {false, false}} {
		t.Run(fmt.Sprintf("rowtime=%v,last=%v", c.rowTime, c.keepLast), func(t *testing.T) {
			mem := memtest.NewChecked()
			defer mem.AssertSize(t, 0)
			rng := rand.New(rand.NewSource(5))
			var rows []topnRow
			for id := int64(0); id < 400; id++ {
				rows = append(rows, topnRow{k: int64(rng.Intn(12)), v: int64(rng.Intn(50)), id: id}) // v: the rowtime
			}
			kept := map[int64]topnRow{}
			for _, r := range rows {
				old, ok := kept[r.k]
				switch {
				case !ok, !c.rowTime && c.keepLast, c.rowTime && c.keepLast && r.v >= old.v, c.rowTime && !c.keepLast && r.v < old.v:
					kept[r.k] = r
				}
			}
			var want []string
			for k, r := range kept {
				want = append(want, fmt.Sprintf("%d|%d|%d", k, r.v, r.id))
			}
			sort.Strings(want)
			tbl := &changeTable{t: t, rows: map[string]int{}, noRank: true}
			timeBatch := func(rs []topnRow) Batch {
				b := topnBatch(mem, rs)
				defer b.Rec.Release()
				ts := array.NewTimestampBuilder(mem, catalog.Timestamp.ArrowType().(*arrow.TimestampType))
				defer ts.Release()
				for _, r := range rs {
					ts.Append(arrow.Timestamp(r.v))
				}
				tcol := ts.NewArray()
				defer tcol.Release()
				out := catalog.Schema{topnSchema[0], {Name: "v", Type: catalog.Timestamp}, topnSchema[2]}.Arrow()
				return Batch{Rec: array.NewRecord(out, []arrow.Array{b.Rec.Column(0), tcol, b.Rec.Column(2)}, b.Rec.NumRows())}
			}
			st := memState{}
			half := len(rows) / 2
			for sub, part := range route(t, mem, rows[:half], 2) {
				op := dedupOp(t, mem, c.rowTime, c.keepLast, sub, 2)
				for i := 0; i < len(part); i += 9 {
					if err := op.ProcessBatch(0, timeBatch(part[i:min(i+9, len(part))]), tbl); err != nil {
						t.Fatal(err)
					}
				}
				if err := op.Snapshot(1, st); err != nil {
					t.Fatal(err)
				}
				op.Close()
			}
			for sub, part := range route(t, mem, rows[half:], 3) {
				op := dedupOp(t, mem, c.rowTime, c.keepLast, sub, 3)
				if err := op.Restore(st); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < len(part); i += 4 {
					if err := op.ProcessBatch(0, timeBatch(part[i:min(i+4, len(part))]), tbl); err != nil {
						t.Fatal(err)
					}
				}
				op.Close()
			}
			if got := tbl.sorted(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("got  %v\nwant %v", got, want)
			}
		})
	}
}

// BenchmarkTopN: the top 10 (with the rank) of 10,000 keys over random
// values, insert-only input (AppendFastStrategy) or, for retract, every
// third row a retraction of an earlier row (RetractStrategy), in batches
// of 1024 with a checkpoint every 64 batches; rows/s of input.
func BenchmarkTopN(b *testing.B) {
	for _, mode := range []planner.ChangelogMode{planner.InsertOnly, planner.Retract} {
		b.Run(mode.String(), func(b *testing.B) {
			mem := memory.NewGoAllocator()
			out := append(append(catalog.Schema{}, topnSchema...), catalog.Column{Name: "rn", Type: catalog.BigInt.WithNotNull(true)})
			s := &planner.RankOp{ID: "topn", PartKeys: []int{0}, PartNames: []string{"k"}, Order: []planner.SortKey{{Col: 1, Name: "v", Desc: true}},
				RankStart: 1, RankEnd: 10, OutputRank: true, InputMode: mode, Out: out}
			op, err := newTopN(s, &OpContext{OpID: "topn", Parallelism: 1, KeyGroups: KeyGroups{Start: 0, End: 128, MaxParallelism: 128},
				Checkpointing: true, Mem: mem, BatchSize: 1024})
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewSource(1))
			const batch = 1024
			var batches []Batch
			var live []topnRow
			for i := 0; i < 256; i++ {
				rows := make([]topnRow, batch)
				for j := range rows {
					if mode == planner.Retract && len(live) > 0 && j%3 == 2 {
						k := rng.Intn(len(live))
						rows[j] = live[k]
						rows[j].retract = true
						live[k] = live[len(live)-1]
						live = live[:len(live)-1]
						continue
					}
					rows[j] = topnRow{k: int64(rng.Intn(10_000)), v: int64(rng.Intn(1_000_000)), id: int64(i*batch + j)}
					live = append(live, rows[j])
				}
				batches = append(batches, topnBatch(mem, rows))
			}
			sink := &countOut{}
			b.ResetTimer()
			for n, i := 0, 0; n < b.N; n, i = n+batch, i+1 {
				if i == len(batches) {
					b.StopTimer() // a round over the data set: the TopN state is full by now
					i = 0
					b.StartTimer()
				}
				bt := batches[i]
				bt.Rec.Retain()
				if err := op.ProcessBatch(0, bt, sink); err != nil {
					b.Fatal(err)
				}
				if i%64 == 63 {
					if err := op.Snapshot(int64(n), discardState{}); err != nil {
						b.Fatal(err)
					}
					op.NotifyComplete(int64(n))
				}
			}
			b.StopTimer()
			if sink.rows == 0 {
				b.Fatal("no output")
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
