package exec

import (
	"fmt"
	"sort"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

// attRow is a row of an attached window aggregation's input: key, window
// start, window end, value.
type attRow [4]int64

var attSchema = catalog.Schema{{Name: "k", Type: catalog.BigInt}, {Name: "ws", Type: catalog.Timestamp.WithNotNull(true)},
	{Name: "we", Type: catalog.Timestamp.WithNotNull(true)}, {Name: "v", Type: catalog.BigInt}}

func attBatch(mem memory.Allocator, rows ...attRow) Batch {
	b := array.NewRecordBuilder(mem, attSchema.Arrow())
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r[0])
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(r[1]))
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(r[2]))
		b.Field(3).(*array.Int64Builder).Append(r[3])
	}
	return Batch{Rec: b.NewRecord()}
}

// attOp is an attached HOP(5 s, 10 s) aggregation COUNT(*), SUM(v) by k,
// subtask sub of par (8 key groups).
func attOp(t *testing.T, mem memory.Allocator, m *Metrics, sub, par int) *windowAgg {
	big, ts := catalog.BigInt, catalog.Timestamp.WithNotNull(true)
	s := &planner.WindowAggOp{ID: "wa", Keys: []int{0}, KeyNames: []string{"k"}, TimeCol: 2, TimeName: "we",
		Window:   planner.WindowSpec{Kind: planner.Hop, Size: 10_000, Slide: 5_000},
		Attached: true, WinStart: 1, WinEnd: 2, AttachedNames: []string{"ws", "we"},
		Aggs: []planner.AggCall{{Fn: "count_star", Arg: -1, T: big}, {Fn: "sum", Arg: 3, ArgType: big, T: big}},
		Out: catalog.Schema{{Name: "k", Type: big}, {Name: "window_start", Type: ts}, {Name: "window_end", Type: ts}, {Name: "window_time", Type: ts},
			{Name: "n", Type: big}, {Name: "s", Type: big}}}
	const maxP = 8
	kg := KeyGroups{Start: (sub*maxP + par - 1) / par, End: ((sub+1)*maxP + par - 1) / par, MaxParallelism: maxP}
	op, err := newWindowAgg(s, &OpContext{OpID: "wa", Subtask: sub, Parallelism: par, KeyGroups: kg, Checkpointing: true, Mem: mem, BatchSize: 16, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// TestWindowAttachedRestoreRescale: an attached window aggregation groups
// rows by key and the window their columns name (overlapping HOP windows
// stay apart), fires a window when the watermark reaches its end - 1, drops
// rows of fired windows as late, and after a checkpoint restored at 1, 2
// or 3 subtasks (rows routed by key and window bounds, as the exchange
// does) gives what the uninterrupted operator gives, each window once.
func TestWindowAttachedRestoreRescale(t *testing.T) {
	before := []attRow{{1, 0, 10_000, 1}, {1, 5_000, 15_000, 2}, {2, 0, 10_000, 3}, {1, 5_000, 15_000, 4}, {2, 10_000, 20_000, 5}}
	// after the checkpoint: {1, [0, 10 s)} is late (fired at watermark 9999)
	after := []attRow{{1, 0, 10_000, 7}, {1, 5_000, 15_000, 8}, {3, 10_000, 20_000, 9}, {2, 10_000, 20_000, 6}}
	wantFirst := []string{"1|0|10000|9999|1|1|", "2|0|10000|9999|1|3|"}
	wantLast := []string{"1|5000|15000|14999|3|14|", "2|10000|20000|19999|2|11|", "3|10000|20000|19999|1|9|"}

	// uninterrupted
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	m := &Metrics{}
	op := attOp(t, mem, m, 0, 1)
	out := &rowsOut{}
	if err := op.ProcessBatch(0, attBatch(mem, before...), out); err != nil {
		t.Fatal(err)
	}
	if err := op.ProcessWatermark(9_999, out); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out.rows)
	if fmt.Sprint(out.rows) != fmt.Sprint(wantFirst) {
		t.Fatalf("at watermark 9999: %v, want %v", out.rows, wantFirst)
	}
	st := memState{}
	if err := op.Snapshot(1, st); err != nil {
		t.Fatal(err)
	}
	out.rows = nil
	if err := op.ProcessBatch(0, attBatch(mem, after...), out); err != nil {
		t.Fatal(err)
	}
	if err := op.ProcessWatermark(MaxWatermark, out); err != nil {
		t.Fatal(err)
	}
	op.Close()
	sort.Strings(out.rows)
	if fmt.Sprint(out.rows) != fmt.Sprint(wantLast) {
		t.Fatalf("uninterrupted: %v, want %v", out.rows, wantLast)
	}
	if n := m.LateRecords.Load(); n != 1 {
		t.Errorf("uninterrupted: %d late records, want 1", n)
	}
	mem.AssertSize(t, 0)

	for _, par := range []int{1, 2, 3} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		m := &Metrics{}
		var got []string
		for sub := 0; sub < par; sub++ {
			r := attOp(t, mem, m, sub, par)
			if err := r.Restore(st); err != nil {
				t.Fatal(err)
			}
			var rows []attRow
			for _, row := range after {
				b := attBatch(mem, row)
				h := HashKeys(b.Rec, r.spec.HashCols(), nil)[0] % 8
				b.Rec.Release()
				if int(h) >= r.ctx.KeyGroups.Start && int(h) < r.ctx.KeyGroups.End {
					rows = append(rows, row)
				}
			}
			o := &rowsOut{}
			if len(rows) > 0 {
				if err := r.ProcessBatch(0, attBatch(mem, rows...), o); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.ProcessWatermark(MaxWatermark, o); err != nil {
				t.Fatal(err)
			}
			got = append(got, o.rows...)
			r.Close()
		}
		sort.Strings(got)
		if fmt.Sprint(got) != fmt.Sprint(wantLast) {
			t.Errorf("p%d after the restore: %v, want %v", par, got, wantLast)
		}
		if n := m.LateRecords.Load(); n != 1 {
			t.Errorf("p%d: %d late records, want 1", par, n)
		}
		mem.AssertSize(t, 0)
	}
}
