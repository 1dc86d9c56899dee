package exec

import (
	"fmt"
	"github.com/streamsql/streamsql/internal/memtest"
	"math/rand"
	"sort"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

// overTestSchema: (k, ts, v) rows; the OVER aggregation appends SUM(v),
// COUNT(*) and MAX(v).
var overTestSchema = catalog.Schema{{Name: "k", Type: catalog.BigInt}, {Name: "ts", Type: catalog.Timestamp}, {Name: "v", Type: catalog.BigInt}}

func overTestOp(t *testing.T, mem memory.Allocator, rows bool, sub, par int, m *Metrics) *overAgg {
	out := append(append(catalog.Schema{}, overTestSchema...),
		catalog.Column{Name: "s", Type: catalog.BigInt}, catalog.Column{Name: "c", Type: catalog.BigInt.WithNotNull(true)}, catalog.Column{Name: "mx", Type: catalog.BigInt})
	s := &planner.OverAggOp{ID: "over", PartKeys: []int{0}, PartNames: []string{"k"}, TimeCol: 1, TimeName: "ts", RowTime: true,
		Rows: rows, Preceding: 2, Out: out,
		Aggs: []planner.OverAgg{{Fn: "sum", Arg: 2, T: catalog.BigInt}, {Fn: "count_star", Arg: -1, T: catalog.BigInt.WithNotNull(true)}, {Fn: "max", Arg: 2, T: catalog.BigInt}}}
	if !rows {
		s.Preceding = 20 // ms
	}
	kg := KeyGroups{Start: (sub*topnMaxP + par - 1) / par, End: ((sub+1)*topnMaxP + par - 1) / par, MaxParallelism: topnMaxP}
	op, err := newOverAgg(s, &OpContext{OpID: "over", Subtask: sub, Parallelism: par, KeyGroups: kg, Checkpointing: true, Mem: mem, BatchSize: 16, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

func overTestBatch(mem memory.Allocator, rows [][3]int64) Batch {
	b := array.NewRecordBuilder(mem, overTestSchema.Arrow())
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r[0])
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(r[1]))
		b.Field(2).(*array.Int64Builder).Append(r[2])
	}
	return Batch{Rec: b.NewRecord()}
}

type overOut struct{ rows []string }

func (c *overOut) Collect(b Batch) error {
	defer b.Rec.Release()
	for i := 0; i < b.Rows(); i++ {
		s := ""
		for j := 0; j < int(b.Rec.NumCols()); j++ {
			switch col := b.Rec.Column(j).(type) {
			case *array.Int64:
				s += fmt.Sprintf("%d|", col.Value(i))
			case *array.Timestamp:
				s += fmt.Sprintf("%d|", col.Value(i))
			}
		}
		c.rows = append(c.rows, s)
	}
	return nil
}
func (c *overOut) EmitWatermark(int64) error { return nil }

// overRun feeds rows (a watermark of max ts - 5 after every row, as a
// source's bounded out-of-orderness) to the subtasks of par that own them.
func overRun(t *testing.T, mem memory.Allocator, ops []*overAgg, rows [][3]int64, maxTs *int64, out Collector) {
	for _, r := range rows {
		b := overTestBatch(mem, [][3]int64{r})
		h := int(HashKeys(b.Rec, []int{0}, nil)[0] % topnMaxP)
		for _, op := range ops {
			if h >= op.ctx.KeyGroups.Start && h < op.ctx.KeyGroups.End {
				b.Rec.Retain()
				if err := op.ProcessBatch(0, b, out); err != nil {
					t.Fatal(err)
				}
			}
		}
		b.Rec.Release()
		*maxTs = max(*maxTs, r[1])
		for _, op := range ops {
			if err := op.ProcessWatermark(*maxTs-5, out); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestOverRestoreRescale: an event-time OVER aggregation (ROWS 2 PRECEDING
// and RANGE 20 ms PRECEDING) over a seeded random disordered stream, run
// halfway at parallelism 2, checkpointed and restored at 3 (waiting rows,
// the frames' rows and the last processed times move with their key
// groups), gives the rows and late count of an uninterrupted run. Zero
// leaks.
func TestOverRestoreRescale(t *testing.T) {
	for _, rows := range []bool{true, false} {
		t.Run(fmt.Sprintf("rows=%v", rows), func(t *testing.T) {
			mem := memtest.NewChecked()
			defer mem.AssertSize(t, 0)
			rng := rand.New(rand.NewSource(3))
			var stream [][3]int64
			clock := int64(0)
			for i := 0; i < 500; i++ {
				clock += int64(rng.Intn(4))
				stream = append(stream, [3]int64{int64(rng.Intn(6)), clock - int64(rng.Intn(12)), int64(rng.Intn(100))})
			}
			whole, wm0 := &overOut{}, int64(-1<<62)
			m0 := &Metrics{}
			ref := overTestOp(t, mem, rows, 0, 1, m0)
			overRun(t, mem, []*overAgg{ref}, stream, &wm0, whole)
			if err := ref.ProcessWatermark(MaxWatermark, whole); err != nil {
				t.Fatal(err)
			}
			ref.Close()
			if m0.LateRecords.Load() == 0 || len(whole.rows) < 300 {
				t.Fatalf("%d late rows, %d out: the stream must have both", m0.LateRecords.Load(), len(whole.rows))
			}
			got, wm := &overOut{}, int64(-1<<62)
			m := &Metrics{}
			first := []*overAgg{overTestOp(t, mem, rows, 0, 2, m), overTestOp(t, mem, rows, 1, 2, m)}
			overRun(t, mem, first, stream[:250], &wm, got)
			st := memState{}
			for _, op := range first {
				if err := op.Snapshot(1, st); err != nil {
					t.Fatal(err)
				}
				op.Close()
			}
			var second []*overAgg
			for sub := 0; sub < 3; sub++ {
				op := overTestOp(t, mem, rows, sub, 3, m)
				if err := op.Restore(st); err != nil {
					t.Fatal(err)
				}
				second = append(second, op)
			}
			overRun(t, mem, second, stream[250:], &wm, got)
			for _, op := range second {
				if err := op.ProcessWatermark(MaxWatermark, got); err != nil {
					t.Fatal(err)
				}
				op.Close()
			}
			sort.Strings(whole.rows)
			sort.Strings(got.rows)
			if fmt.Sprint(got.rows) != fmt.Sprint(whole.rows) {
				t.Errorf("restored at p3: %d rows, uninterrupted %d; first difference in %v", len(got.rows), len(whole.rows), overFirstDiff(got.rows, whole.rows))
			}
			if m.LateRecords.Load() != m0.LateRecords.Load() {
				t.Errorf("%d late rows, uninterrupted %d", m.LateRecords.Load(), m0.LateRecords.Load())
			}
		})
	}
}

func overFirstDiff(a, b []string) string {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] + " vs " + b[i]
		}
	}
	return "length"
}

// BenchmarkOverRows: SUM, COUNT(*) and MAX over ROWS 2 PRECEDING of 1,000
// keys on event time, batches of 1024 rows in time order, a watermark
// after each; rows/s of input.
func BenchmarkOverRows(b *testing.B) {
	mem := memory.NewGoAllocator()
	t := &testing.T{}
	op := overTestOp(t, mem, true, 0, 1, &Metrics{})
	op.ctx.KeyGroups = KeyGroups{Start: 0, End: topnMaxP, MaxParallelism: topnMaxP}
	rng := rand.New(rand.NewSource(1))
	const batch = 1024
	sink := &countOut{}
	ts := int64(0)
	b.ResetTimer()
	for n := 0; n < b.N; n += batch {
		b.StopTimer()
		rows := make([][3]int64, batch)
		for j := range rows {
			ts++
			rows[j] = [3]int64{int64(rng.Intn(1000)), ts, int64(rng.Intn(1000))}
		}
		bt := overTestBatch(mem, rows)
		b.StartTimer()
		if err := op.ProcessBatch(0, bt, sink); err != nil {
			b.Fatal(err)
		}
		if err := op.ProcessWatermark(ts, sink); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if sink.rows == 0 {
		b.Fatal("no output")
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
