package exec

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/internal/memtest"
	"github.com/streamsql/streamsql/planner"
)

// mergeCounter is a checkpoint.MergeWriter over a Buffer that counts the
// bytes of whole values and of merge operands.
type mergeCounter struct {
	*checkpoint.Buffer
	puts, merges, putBytes, mergeBytes int
}

func (w *mergeCounter) Put(k, v []byte) error {
	w.puts++
	w.putBytes += len(v)
	return w.Buffer.Put(k, v)
}

func (w *mergeCounter) Merge(k, v []byte) error {
	w.merges++
	w.mergeBytes += len(v)
	return w.Buffer.Merge(k, v)
}

// TestSharedDistinctMergedCheckpoints: an aggregation of an insert-only
// input with COUNT(DISTINCT x) calls sharing a set (one unfiltered, two
// filtered) and one single COUNT(DISTINCT y) writes a changed group's
// additions as merge operands once a completed checkpoint holds the
// group, through random aborted checkpoints (before and after the store
// took their delta) and, tiered, groups dropped clean and read back from
// the committed state (merged values), which then write merge operands. A job restored from the last checkpoint then
// emits exactly what the uninterrupted operator emits for the same input,
// and the uninterrupted output matches an oracle.
func TestSharedDistinctMergedCheckpoints(t *testing.T) {
	for _, tiered := range []bool{false, true} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("tiered=%v/seed=%d", tiered, seed), func(t *testing.T) {
				checkMergedDistinct(t, tiered, seed)
			})
		}
	}
}

var mergeAggIn = catalog.Schema{{Name: "k", Type: catalog.BigInt}, {Name: "x", Type: catalog.BigInt},
	{Name: "x1", Type: catalog.BigInt}, {Name: "x2", Type: catalog.BigInt}, {Name: "y", Type: catalog.String}}

func mergeAggSpec() *planner.AggOp {
	big := catalog.BigInt
	out := catalog.Schema{{Name: "k", Type: big}, {Name: "n", Type: big}, {Name: "dx", Type: big}, {Name: "dx1", Type: big}, {Name: "dx2", Type: big}, {Name: "dy", Type: big}}
	return &planner.AggOp{ID: "agg", Keys: []int{0}, KeyNames: []string{"k"}, InputMode: planner.InsertOnly, Out: out, Aggs: []planner.AggCall{
		{Fn: "count_star", Arg: -1, T: big},
		{Fn: "count", Arg: 1, Distinct: true, ArgType: big, T: big, Share: 1},
		{Fn: "count", Arg: 2, Distinct: true, ArgType: big, T: big, Share: 1},
		{Fn: "count", Arg: 3, Distinct: true, ArgType: big, T: big, Share: 1},
		{Fn: "count", Arg: 4, Distinct: true, ArgType: catalog.String, T: big, Share: 2},
	}}
}

func checkMergedDistinct(t *testing.T, tiered bool, seed uint64) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(seed, 11))
	store := openTestStore(t, "5e", 2)
	const maxP = 8
	keys := 12
	phase := 0 // tiered: groups go idle, are dropped clean and come back from the committed state
	newOp := func() *groupAgg {
		ctx := &OpContext{OpID: "agg", Parallelism: 1, KeyGroups: KeyGroups{Start: 0, End: maxP, MaxParallelism: maxP},
			Checkpointing: true, Mem: mem, BatchSize: 64, Committed: store}
		if tiered {
			ctx.StateBackend, ctx.StateDir, ctx.StateTierHotBytes = "rocksdb", t.TempDir(), 64<<10
		}
		op, err := newAgg(mergeAggSpec(), ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !op.logged || len(op.shares) != 2 {
			t.Fatalf("logged %v, %d shares; want format 3 with 2 shares", op.logged, len(op.shares))
		}
		return op
	}
	before := state.TableTierTotals()
	a := newOp()
	defer a.Close()
	outA := &changeTable{t: t, rows: map[string]int{}}
	// the oracle: per key, the rows and the distinct values of each call
	type group struct {
		n  int64
		xs [3]map[int64]bool
		ys map[string]bool
	}
	oracle := map[int64]*group{}
	batch := func() arrow.Record {
		n := 1 + r.IntN(80)
		bs := make([]*array.Int64Builder, 4)
		for i := range bs {
			bs[i] = array.NewInt64Builder(mem)
			defer bs[i].Release()
		}
		sb := array.NewStringBuilder(mem)
		defer sb.Release()
		for range n {
			k := int64(r.IntN(keys))
			if tiered { // 30 keys at a time, back every 25 checkpoints
				k = int64(phase%5*30 + r.IntN(30))
			}
			x := int64(r.IntN(3000))
			y := fmt.Sprintf("y%d", r.IntN(500))
			g := oracle[k]
			if g == nil {
				g = &group{ys: map[string]bool{}}
				for i := range g.xs {
					g.xs[i] = map[int64]bool{}
				}
				oracle[k] = g
			}
			g.n++
			g.ys[y] = true
			bs[0].Append(k)
			bs[1].Append(x)
			g.xs[0][x] = true
			for i := 2; i < 4; i++ { // FILTERs: x or NULL
				if r.IntN(3) == 0 {
					bs[i].Append(x)
					g.xs[i-1][x] = true
				} else {
					bs[i].AppendNull()
				}
			}
			sb.Append(y)
		}
		cols := []arrow.Array{bs[0].NewArray(), bs[1].NewArray(), bs[2].NewArray(), bs[3].NewArray(), sb.NewArray()}
		rec := array.NewRecord(mergeAggIn.Arrow(), cols, int64(n))
		for _, c := range cols {
			c.Release()
		}
		return rec
	}
	process := func(op *groupAgg, rec arrow.Record, out Collector) {
		t.Helper()
		rec.Retain()
		if err := op.ProcessBatch(0, Batch{Rec: rec}, out); err != nil {
			t.Fatal(err)
		}
	}
	var w mergeCounter
	aborts, lateAborts, lastBytes := 0, 0, 0
	var last int64
	// Checkpoints are taken, and resolved later (batches in between, and
	// sometimes the next checkpoint's snapshot, as the coordinator's
	// notifications come after the barrier): completed, aborted before
	// the store took their delta, or aborted after.
	type pendingCk struct {
		id  int64
		buf *checkpoint.Buffer
	}
	var pend []pendingCk
	resolve := func(final bool) {
		t.Helper()
		p := pend[0]
		pend = pend[1:]
		switch k := r.IntN(6); {
		case k == 0 && !final:
			aborts++
			if err := a.NotifyAborted(p.id); err != nil {
				t.Fatal(err)
			}
		case k == 1 && !final:
			lateAborts++
			if err := store.Commit(p.id, []*checkpoint.Buffer{p.buf}); err != nil {
				t.Fatal(err)
			}
			if err := a.NotifyAborted(p.id); err != nil {
				t.Fatal(err)
			}
		default:
			if err := store.Commit(p.id, []*checkpoint.Buffer{p.buf}); err != nil {
				t.Fatal(err)
			}
			if _, err := store.Persist(p.id, checkpoint.KindCheckpoint, nil); err != nil {
				t.Fatal(err)
			}
			last = p.id
			if err := a.NotifyComplete(p.id); err != nil {
				t.Fatal(err)
			}
		}
	}
	const checkpoints = 60
	for id := int64(1); id <= checkpoints; id++ {
		phase = int(id / 5)
		for range 1 + r.IntN(4) {
			rec := batch()
			process(a, rec, outA)
			rec.Release()
			if len(pend) > 0 && r.IntN(3) == 0 {
				resolve(false)
			}
		}
		w.Buffer = checkpoint.NewBuffer()
		if err := a.Snapshot(id, &w); err != nil {
			t.Fatal(err)
		}
		lastBytes = w.Buffer.Bytes()
		pend = append(pend, pendingCk{id, w.Buffer})
		for len(pend) > 1 || len(pend) > 0 && (id == checkpoints || r.IntN(2) == 0) {
			resolve(id == checkpoints && len(pend) == 1)
		}
		if err := a.tbl.MaybeEvict(); err != nil {
			t.Fatal(err)
		}
	}
	if !tiered {
		// after the first checkpoints every changed group is a merge
		// operand, far smaller than the whole state
		var whole int
		if err := store.Reader().Scan(nil, func(k, v []byte) error { whole += len(v); return nil }); err != nil {
			t.Fatal(err)
		}
		if w.merges == 0 || lastBytes*5 > whole {
			t.Fatalf("%d merges; the last checkpoint wrote %d bytes of a state of %d", w.merges, lastBytes, whole)
		}
	}
	if aborts == 0 || lateAborts == 0 || last != checkpoints {
		t.Fatalf("%d aborts, %d after the commit, last completed %d", aborts, lateAborts, last)
	}
	// restore from checkpoint 40 and go on beside the uninterrupted one
	if _, ok, err := store.RestoreLatest(); err != nil || !ok {
		t.Fatal(ok, err)
	}
	b := newOp()
	defer b.Close()
	if err := b.Restore(store.Reader()); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		rec := batch()
		ca, cb := &textOut2{fold: outA}, &textOut2{}
		process(a, rec, ca)
		process(b, rec, cb)
		rec.Release()
		if ca.text.String() != cb.text.String() {
			t.Fatalf("restored operator emits\n%s\nuninterrupted\n%s", cb.text.String(), ca.text.String())
		}
	}
	var want []string
	for k, g := range oracle {
		want = append(want, fmt.Sprintf("%d|%d|%d|%d|%d|%d", k, g.n, len(g.xs[0]), len(g.xs[1]), len(g.xs[2]), len(g.ys)))
	}
	sort.Strings(want)
	if got := outA.sorted(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("output\n%v\nwant\n%v", got, want)
	}
	if tiered {
		a.Close() // adds its counters to the totals (closed again by the defer: idempotent)
		now := state.TableTierTotals()
		if now.Evictions == before.Evictions || now.ColdReads == before.ColdReads {
			t.Fatalf("the tier never paged: %+v, before %+v", now, before)
		}
		if now.CleanDrops == before.CleanDrops || now.ComReads == before.ComReads || w.merges == 0 {
			t.Fatalf("tiered: %d clean drops, %d committed reads, %d merges; want some of each", now.CleanDrops-before.CleanDrops, now.ComReads-before.ComReads, w.merges)
		}
	}
	t.Logf("%d merges (%d bytes), %d whole values (%d bytes); %d aborted, %d aborted after the commit", w.merges, w.mergeBytes, w.puts, w.putBytes, aborts, lateAborts)
}

// textOut2 writes a changelog of BIGINT columns as text lines (op and
// values) and passes it on to fold (when not nil).
type textOut2 struct {
	text strings.Builder
	fold Collector
}

func (c *textOut2) Collect(b Batch) error {
	for i := 0; i < b.Rows(); i++ {
		c.text.WriteString(b.Op(i).String())
		for j := 0; j < int(b.Rec.NumCols()); j++ {
			fmt.Fprintf(&c.text, "|%d", b.Rec.Column(j).(*array.Int64).Value(i))
		}
		c.text.WriteByte('\n')
	}
	if c.fold != nil {
		return c.fold.Collect(b)
	}
	b.Rec.Release()
	return nil
}
func (c *textOut2) EmitWatermark(int64) error { return nil }
