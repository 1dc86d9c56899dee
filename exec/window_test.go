package exec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/planner"
)

// memState is a checkpoint.StateWriter and StateReader over a map.
type memState map[string][]byte

func (m memState) Put(k, v []byte) error { m[string(k)] = append([]byte(nil), v...); return nil }
func (m memState) Delete(k []byte) error { delete(m, string(k)); return nil }

// DeleteRange removes the keys in [lo, hi) at once (the operators never
// write a key of a range in the snapshot that deletes it).
func (m memState) DeleteRange(lo, hi []byte) error {
	for k := range m {
		if k >= string(lo) && k < string(hi) {
			delete(m, k)
		}
	}
	return nil
}
func (m memState) Scan(prefix []byte, fn func(k, v []byte) error) error {
	var ks []string
	for k := range m {
		if bytes.HasPrefix([]byte(k), prefix) {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	for _, k := range ks {
		if err := fn([]byte(k), m[k]); err != nil {
			return err
		}
	}
	return nil
}

// rowsOut collects emitted rows as text and the watermarks.
type rowsOut struct {
	rows []string
	wms  []int64
}

func (c *rowsOut) Collect(b Batch) error {
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
func (c *rowsOut) EmitWatermark(wm int64) error { c.wms = append(c.wms, wm); return nil }

var winTestSchema = catalog.Schema{{Name: "k", Type: catalog.BigInt}, {Name: "ts", Type: catalog.Timestamp}, {Name: "v", Type: catalog.BigInt}}

func winTestBatch(mem memory.Allocator, rows ...[3]int64) Batch {
	b := array.NewRecordBuilder(mem, winTestSchema.Arrow())
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r[0])
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(r[1]))
		b.Field(2).(*array.Int64Builder).Append(r[2])
	}
	return Batch{Rec: b.NewRecord()}
}

func winTestOp(t *testing.T, mem memory.Allocator, m *Metrics, spec planner.WindowSpec, sub, par int) *windowAgg {
	big, ts := catalog.BigInt, catalog.Timestamp.WithNotNull(true)
	s := &planner.WindowAggOp{ID: "w", Keys: []int{0}, KeyNames: []string{"k"}, TimeCol: 1, TimeName: "ts", Window: spec,
		Aggs: []planner.AggCall{{Fn: "count_star", Arg: -1, T: big}, {Fn: "sum", Arg: 2, ArgType: big, T: big}},
		Out: catalog.Schema{{Name: "k", Type: big}, {Name: "window_start", Type: ts}, {Name: "window_end", Type: ts}, {Name: "window_time", Type: ts},
			{Name: "n", Type: big}, {Name: "s", Type: big}}}
	const maxP = 8
	kg := KeyGroups{Start: (sub*maxP + par - 1) / par, End: ((sub+1)*maxP + par - 1) / par, MaxParallelism: maxP}
	op, err := newWindowAgg(s, &OpContext{OpID: "w", Subtask: sub, Parallelism: par, KeyGroups: kg, Checkpointing: true, Mem: mem, BatchSize: 16, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// TestWindowRestoreFiresOnce: a checkpoint taken after a window fired and
// while another is open; the restored operator (at the same parallelism
// and at two subtasks) drops a row for the fired window as late (its
// restored watermark), keeps the open window's contents and fires it
// exactly once.
func TestWindowRestoreFiresOnce(t *testing.T) {
	for _, par := range []int{1, 2} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		m := &Metrics{}
		tumble := planner.WindowSpec{Kind: planner.Tumble, Size: 10_000}
		op := winTestOp(t, mem, m, tumble, 0, 1)
		out := &rowsOut{}
		if err := op.ProcessBatch(0, winTestBatch(mem, [3]int64{1, 1000, 1}, [3]int64{2, 15000, 5}, [3]int64{3, 19000, 2}), out); err != nil {
			t.Fatal(err)
		}
		if err := op.ProcessWatermark(12000, out); err != nil {
			t.Fatal(err)
		}
		if len(out.rows) != 1 || out.rows[0] != "1|0|10000|9999|1|1|" {
			t.Fatalf("before the checkpoint: %v", out.rows)
		}
		st := memState{}
		if err := op.Snapshot(1, st); err != nil {
			t.Fatal(err)
		}
		op.Close()
		// A timer entry as versions that checkpointed timers wrote them
		// (key group 5): the restore ignores it, the next checkpoint
		// deletes it.
		stale := binary.BigEndian.AppendUint64(checkpoint.KeyedPrefix("w/timers/event", 5), 9999^(1<<63))
		stale = append(stale, 1, 1, 0, 0, 0, 0, 0, 0, 0)
		st[string(stale)] = nil
		// Restore ("after a crash") into par subtasks.
		var got []string
		var restored []*windowAgg
		for sub := 0; sub < par; sub++ {
			r := winTestOp(t, mem, m, tumble, sub, par)
			if err := r.Restore(st); err != nil {
				t.Fatal(err)
			}
			restored = append(restored, r)
			o := &rowsOut{}
			// Every row goes to every subtask here; only rows of its key groups
			// would reach it through the exchange, so feed those.
			var rows [][3]int64
			for _, row := range [][3]int64{{1, 2000, 7}, {2, 16000, 1}, {3, 30000, 4}} {
				kgb := winTestBatch(mem, row)
				h := HashKeys(kgb.Rec, []int{0}, nil)[0] % 8
				kgb.Rec.Release()
				if int(h) >= r.ctx.KeyGroups.Start && int(h) < r.ctx.KeyGroups.End {
					rows = append(rows, row)
				}
			}
			if len(rows) > 0 {
				if err := r.ProcessBatch(0, winTestBatch(mem, rows...), o); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.ProcessWatermark(MaxWatermark, o); err != nil {
				t.Fatal(err)
			}
			got = append(got, o.rows...)
		}
		for _, r := range restored {
			if err := r.Snapshot(2, st); err != nil {
				t.Fatal(err)
			}
			r.Close()
		}
		if _, ok := st[string(stale)]; ok {
			t.Errorf("p%d: a stored timer entry survived the checkpoint after the restore", par)
		}
		sort.Strings(got)
		want := []string{"2|10000|20000|19999|2|6|", "3|10000|20000|19999|1|2|", "3|30000|40000|39999|1|4|"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("p%d after the restore: %v, want %v", par, got, want)
		}
		if n := m.LateRecords.Load(); n != 1 {
			t.Errorf("p%d: %d late records, want 1", par, n)
		}
		mem.AssertSize(t, 0)
	}
}

// sizesOut is rowsOut that also records each batch's size.
type sizesOut struct {
	rowsOut
	sizes []int
}

func (c *sizesOut) Collect(b Batch) error {
	c.sizes = append(c.sizes, b.Rows())
	return c.rowsOut.Collect(b)
}

// firedInBatches runs a fire-batch test's job at batch size 16 and with
// an unbounded batch size: it checks that the first emits batches of at
// most 16 rows and the same rows as the second, and returns those rows and
// the number of batches.
func firedInBatches(t *testing.T, run func(batchSize int) (*sizesOut, []string)) ([]string, int) {
	t.Helper()
	small, got := run(16)
	_, whole := run(1 << 20)
	for _, n := range small.sizes {
		if n > 16 {
			t.Fatalf("a batch of %d rows (batch size 16): %v", n, small.sizes)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(whole) {
		t.Fatalf("batched fires differ from one batch:\n%v\n%v", got, whole)
	}
	return got, len(small.sizes)
}

// fireAll gives op the batches, then a watermark that fires every window,
// and returns what it emitted (the rows sorted).
func fireAll(t *testing.T, op Operator, in []Batch) (*sizesOut, []string) {
	t.Helper()
	out := &sizesOut{}
	for _, b := range in {
		if err := op.ProcessBatch(0, b, out); err != nil {
			t.Fatal(err)
		}
	}
	if err := op.ProcessWatermark(1<<62, out); err != nil {
		t.Fatal(err)
	}
	got := append([]string(nil), out.rows...)
	sort.Strings(got)
	return out, got
}

// TestWindowFireBatches: a watermark that fires many windows at once (the
// end of the input) emits them a batch (16 rows, the operator's batch size)
// at a time, HOP slices freed between batches, and the rows are those one
// unbounded batch gives (the operator with a huge batch size) and the
// oracle: every row counted in each of its three windows.
func TestWindowFireBatches(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	spec := planner.WindowSpec{Kind: planner.Hop, Slide: 1000, Size: 3000}
	want := map[string]int{}
	var rows [][3]int64
	for i := int64(0); i < 600; i++ {
		k, ts := i%37, i*13
		rows = append(rows, [3]int64{k, ts, i})
		for ws := ts / 1000 * 1000; ws > ts-3000; ws -= 1000 {
			want[fmt.Sprintf("%d|%d", k, ws)]++
		}
	}
	run := func(batchSize int) (*sizesOut, []string) {
		op := winTestOp(t, mem, nil, spec, 0, 1)
		op.ctx.BatchSize = batchSize
		defer op.Close()
		var in []Batch
		for a := 0; a < len(rows); a += 100 {
			in = append(in, winTestBatch(mem, rows[a:a+100]...))
		}
		return fireAll(t, op, in)
	}
	got, batches := firedInBatches(t, run)
	if batches < len(want)/16 {
		t.Fatalf("%d batches for %d windows", batches, len(want))
	}
	if len(got) != len(want) {
		t.Fatalf("%d windows, want %d", len(got), len(want))
	}
	for _, r := range got {
		var k, ws, we, wt, n, s int64
		if _, err := fmt.Sscanf(r, "%d|%d|%d|%d|%d|%d|", &k, &ws, &we, &wt, &n, &s); err != nil {
			t.Fatal(r, err)
		}
		if w := want[fmt.Sprintf("%d|%d", k, ws)]; int64(w) != n || we != ws+3000 {
			t.Fatalf("window %s: want count %d", r, w)
		}
	}
}
