package exec

import (
	"context"
	"slices"
	"testing"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/internal/memtest"
	"github.com/streamsql/streamsql/planner"
)

// twoKeyAggPlan is aggPlan grouping by (k, k): a key of two columns (its
// encoding, not an int key), the exchange hashing the same two columns.
func twoKeyAggPlan(par int) *planner.Physical {
	p := aggPlan(par)
	agg := p.Tasks[1].Ops[0].(*planner.AggOp)
	agg.Keys, agg.KeyNames = []int{0, 0}, []string{"k", "k2"}
	agg.Out = append(catalog.Schema{{Name: "k", Type: catalog.BigInt}, {Name: "k2", Type: catalog.BigInt}}, agg.Out[1:]...)
	p.Tasks[1].OutSchema = agg.Out
	p.Tasks[2].Sink.Schema = agg.Out
	p.Edges[0].Keys = []int{0, 0}
	return p
}

// TestExchangeHashesReachOperators: a hash exchange hands each part the
// hashes it routed by (Batch.Hashes), and the aggregation behind it takes
// them instead of hashing its keys again; the tests' TestMain checks every
// batch's hashes against HashKeys (verifyBatchHashes). The result is the
// same at every parallelism and batch size.
func TestExchangeHashesReachOperators(t *testing.T) {
	if !verifyBatchHashes {
		t.Fatal("TestMain did not turn on verifyBatchHashes")
	}
	const total, keys = 5000, 37
	var want []string
	for _, par := range []int{1, 3} {
		for _, bs := range []int{7, 1024} {
			mem := memtest.NewChecked()
			got := folded{}
			cfg := JobConfig{Mem: mem, BatchSize: bs, Collect: func(b Batch) error { got.apply(b); return nil },
				NewSource: func(tb *catalog.Table, sc *SourceContext) (Source, error) {
					return &genSource{sc: sc, total: total, keys: keys}, nil
				}}
			used, bad := batchHashesUsed.Load(), batchHashMismatches.Load()
			if err := RunJob(context.Background(), twoKeyAggPlan(par), cfg); err != nil {
				t.Fatal(err)
			}
			mem.AssertSize(t, 0)
			if n := batchHashMismatches.Load() - bad; n != 0 {
				t.Fatalf("p%d b%d: %d batches came with hashes other than their keys'", par, bs, n)
			}
			n := batchHashesUsed.Load() - used
			if par > 1 && n == 0 {
				t.Fatalf("p%d b%d: no batch's hashes were used", par, bs)
			}
			if par == 1 && n != 0 {
				t.Fatalf("p1 b%d: %d batches came with hashes (a single target is not hashed)", bs, n)
			}
			if want == nil {
				want = got.sorted()
				if len(want) != keys {
					t.Fatalf("%d groups, want %d", len(want), keys)
				}
				continue
			}
			if g := got.sorted(); !slices.Equal(g, want) {
				t.Fatalf("p%d b%d: %v, want %v", par, bs, g, want)
			}
		}
	}
}
