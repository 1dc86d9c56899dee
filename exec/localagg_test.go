package exec

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/internal/memtest"
	"github.com/streamsql/streamsql/planner"
)

// TestLocalAggMatchesOnePhase: batches of few keys (folded into partial
// groups) and of many keys (passed on unfolded by the adaptive local
// phase) give a global phase the changelog of the one-phase aggregation,
// row for row, with NULL keys and values, every mergeable call, and both
// kinds of batch seen by the global phase.
func TestLocalAggMatchesOnePhase(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	in := catalog.Schema{{Name: "k", Type: catalog.BigInt}, {Name: "s", Type: catalog.String}, {Name: "v", Type: catalog.BigInt}, {Name: "w", Type: catalog.Int}}
	calls := []planner.AggCall{
		{Fn: "count_star", Arg: -1, T: catalog.BigInt, Name: "c"},
		{Fn: "count", Arg: 2, ArgType: catalog.BigInt, T: catalog.BigInt, Name: "cv"},
		{Fn: "sum", Arg: 2, ArgType: catalog.BigInt, T: catalog.BigInt, Name: "sv"},
		{Fn: "avg", Arg: 3, ArgType: catalog.Int, T: catalog.Int, Name: "aw"},
		{Fn: "min", Arg: 1, ArgType: catalog.String, T: catalog.String, Name: "mins"},
		{Fn: "max", Arg: 2, ArgType: catalog.BigInt, T: catalog.BigInt, Name: "maxv"},
	}
	out := catalog.Schema{in[0]}
	for _, c := range calls {
		if !planner.TwoPhaseCall(c) {
			t.Fatalf("%s is not mergeable", c)
		}
		out = append(out, catalog.Column{Name: c.Name, Type: c.T})
	}
	spec := func() *planner.AggOp {
		return &planner.AggOp{ID: "agg", Keys: []int{0}, KeyNames: []string{"k"}, Aggs: calls, Out: out}
	}
	ctx := func() *OpContext {
		return &OpContext{OpID: "agg", Parallelism: 1, KeyGroups: KeyGroups{Start: 0, End: 8, MaxParallelism: 8}, Mem: mem, BatchSize: 256}
	}
	one, err := newAgg(spec(), ctx())
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	global, err := newAgg(spec(), ctx())
	if err != nil {
		t.Fatal(err)
	}
	defer global.Close()
	ls := &planner.LocalAggOp{ID: "local", Keys: []int{0}, Aggs: calls, KeyNames: []string{"k"}}
	src := &planner.Task{OutSchema: in}
	planner.SplitAggregation(spec(), src)
	ls.Out = src.OutSchema
	local, err := newLocalAgg(ls, ctx())
	if err != nil {
		t.Fatal(err)
	}

	r := rand.New(rand.NewPCG(3, 4))
	var wantRows, gotRows []string
	partials, raw := 0, 0
	for b := 0; b < 60; b++ {
		keys := 5 // folds
		if b/10%2 == 1 {
			keys = 100000 // passes on
		}
		rec := randAggBatch(r, mem, in, 200, keys)
		rec.Retain()
		var o1 batchesOut
		if err := one.ProcessBatch(0, Batch{Rec: rec}, &o1); err != nil {
			t.Fatal(err)
		}
		wantRows = append(wantRows, o1.text()...)
		var lo recsOut
		if err := local.ProcessBatch(0, Batch{Rec: rec}, &lo); err != nil {
			t.Fatal(err)
		}
		var o2 batchesOut
		for _, p := range lo.recs {
			if partialInput(p, 1) {
				partials++
			} else {
				raw++
			}
			if err := global.ProcessBatch(0, Batch{Rec: p}, &o2); err != nil {
				t.Fatal(err)
			}
		}
		gotRows = append(gotRows, o2.text()...)
	}
	if partials == 0 || raw == 0 {
		t.Fatalf("the global phase saw %d partial and %d plain batches: want both", partials, raw)
	}
	if fmt.Sprint(gotRows) != fmt.Sprint(wantRows) {
		t.Fatalf("two phases differ from one (%d vs %d rows)", len(gotRows), len(wantRows))
	}
	if len(wantRows) < 1000 {
		t.Fatalf("only %d changelog rows", len(wantRows))
	}
}

// randAggBatch is n rows of schema in (k BIGINT, s STRING, v BIGINT, w
// INT) over keys keys, with NULLs.
func randAggBatch(r *rand.Rand, mem memory.Allocator, in catalog.Schema, n, keys int) arrow.Record {
	b := array.NewRecordBuilder(mem, in.Arrow())
	defer b.Release()
	for i := 0; i < n; i++ {
		if r.IntN(20) == 0 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(int64(r.IntN(keys)))
		}
		if r.IntN(7) == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("s%03d", r.IntN(500)))
		}
		if r.IntN(9) == 0 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Int64Builder).Append(r.Int64N(1<<40) - 1<<39)
		}
		b.Field(3).(*array.Int32Builder).Append(int32(r.IntN(1000)))
	}
	return b.NewRecord()
}

// batchesOut turns the emitted batches into rows of text with their
// kinds, releasing them.
type batchesOut struct{ rows []string }

func (c *batchesOut) Collect(b Batch) error {
	for i := 0; i < b.Rows(); i++ {
		row := b.Op(i).String() + "["
		for col := 0; col < int(b.Rec.NumCols()); col++ {
			row += b.Rec.Column(col).ValueStr(i) + "|"
		}
		c.rows = append(c.rows, row+"]")
	}
	b.Rec.Release()
	return nil
}
func (c *batchesOut) EmitWatermark(int64) error { return nil }
func (c *batchesOut) text() []string            { return c.rows }
