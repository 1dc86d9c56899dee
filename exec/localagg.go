package exec

import (
	"fmt"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/planner"
)

// Two-phase aggregation (planner.LocalAggOp, table.optimizer.
// agg-phase-strategy).
//
// The local phase folds each input batch (at most the job's batch size of
// rows, as the group aggregation consolidates) into one partial group per
// distinct key: the key, the number of rows, and each accumulator's state
// as typed columns (partialAcc, planner.PartialTypes). The global phase is
// the group aggregation itself: a batch whose column after the keys is
// planner.PartialRowsColumn is merged column by column (mergePartial)
// instead of applied row by row. Both phases give the changelog and the
// state of the one-phase aggregation over the same batches: a key's result
// changes once per batch either way, and every call is one whose states
// merge exactly (planner.TwoPhaseCall).

// partialAcc is an accumulator whose states can cross the exchange of a
// two-phase aggregation (of an insert-only input).
type partialAcc interface {
	// partial appends the columns of slots 0..d-1 (planner.PartialTypes).
	partial(cols []arrow.Array, d int, mem memory.Allocator) []arrow.Array
	// mergePartial adds row i of the partial columns to slot gids[i].
	mergePartial(gids []int32, cols []arrow.Array)
}

// localAgg is the local phase. It keeps no state across batches.
type localAgg struct {
	Stateless
	spec      *planner.LocalAggOp
	mem       memory.Allocator
	batchSize int
	out       *arrow.Schema
	keySchema *arrow.Schema
	accs      []accumulator

	// per-batch scratch
	hashes  []uint64
	keyBuf  []byte
	keyOffs []int
	keyHash []uint64
	dedupe  batchKeys
	rows    []int64
	pass    int // batches still to pass on unfolded
}

func newLocalAgg(s *planner.LocalAggOp, ctx *OpContext) (*localAgg, error) {
	a := &localAgg{spec: s, mem: ctx.Mem, batchSize: max(ctx.BatchSize, 1), out: s.Out.Arrow()}
	for _, c := range s.Aggs {
		acc, err := newAccumulator(c, false)
		if err != nil {
			return nil, err
		}
		if _, ok := acc.(partialAcc); !ok || !planner.TwoPhaseCall(c) {
			return nil, fmt.Errorf("%s: %s has no partial state", s.Describe(), c)
		}
		a.accs = append(a.accs, acc)
	}
	fields := make([]arrow.Field, len(s.Keys))
	copy(fields, a.out.Fields()[:len(s.Keys)])
	a.keySchema = arrow.NewSchema(fields, nil)
	return a, nil
}

// Adaptive local phase (as Flink's adaptive local hash aggregation): a
// batch whose rows fold into more than passRate of its row count partial
// groups gains little from the local phase, which then passes the next
// passBatches batches on as they are (the global phase applies rows and
// partial groups alike) before it tries folding again.
const (
	passRate    = 0.5
	passBatches = 15
	passMinRows = 64 // smaller batches always fold (they say little)
)

func (a *localAgg) ProcessBatch(_ int, b Batch, out Collector) error {
	if b.Ops != nil {
		b.Rec.Release()
		return fmt.Errorf("%s: the local phase of an aggregation takes inserts only", a.spec.Describe())
	}
	n := b.Rows()
	if n == 0 {
		b.Rec.Release()
		return nil
	}
	if a.pass > 0 {
		a.pass--
		return out.Collect(b)
	}
	defer b.Rec.Release()
	for lo := 0; lo < n; lo += a.batchSize {
		hi := min(lo+a.batchSize, n)
		rec := b.Rec
		if lo > 0 || hi < n {
			rec = b.Rec.NewSlice(int64(lo), int64(hi))
		}
		d, err := a.fold(rec, out)
		if rec != b.Rec {
			rec.Release()
		}
		if err != nil {
			return err
		}
		if hi-lo >= passMinRows && float64(d) > passRate*float64(hi-lo) {
			a.pass = passBatches
		}
	}
	return nil
}

// fold emits the partial groups of rec (not owned) and returns their
// number.
func (a *localAgg) fold(rec arrow.Record, out Collector) (int, error) {
	keys := a.spec.Keys
	a.hashes = HashKeys(rec, keys, a.hashes[:0])
	a.keyBuf, a.keyOffs, a.keyHash = a.dedupe.groupRows(rec, keys, a.hashes, false, a.keyBuf, a.keyOffs, a.keyHash)
	first, gids := a.dedupe.first, a.dedupe.of
	d := len(first)
	for _, acc := range a.accs {
		acc.grow(d)
	}
	a.rows = append(a.rows[:0], make([]int64, d)...)
	for _, g := range gids {
		a.rows[g]++
	}
	for i, acc := range a.accs {
		var col arrow.Array
		if arg := a.spec.Aggs[i].Arg; arg >= 0 {
			col = rec.Column(arg)
		}
		acc.update(gids, col, nil)
	}
	kcols := make([]arrow.Array, len(keys))
	for i, k := range keys {
		kcols[i] = rec.Column(k)
	}
	krec := expr.NewRecord(a.keySchema, kcols, rec.NumRows())
	taken := expr.TakeRecord(krec, first, a.mem)
	krec.Release()
	cols := make([]arrow.Array, 0, len(a.out.Fields()))
	cols = append(cols, taken.Columns()...)
	cols = append(cols, a.rowsArray(d))
	for _, acc := range a.accs {
		cols = acc.(partialAcc).partial(cols, d, a.mem)
	}
	outRec := expr.NewRecord(a.out, cols, int64(d))
	taken.Release()
	for _, c := range cols[len(keys):] {
		c.Release()
	}
	// the slots made empty for the next batch
	for _, acc := range a.accs {
		for g := int32(0); g < int32(d); g++ {
			acc.reset(g)
		}
	}
	return d, out.Collect(Batch{Rec: outRec})
}

// rowsArray makes the row-count column of d partial groups (a.rows).
func (a *localAgg) rowsArray(d int) arrow.Array { return int64Array(a.rows[:d], a.mem) }

// partialInput reports whether rec holds a local phase's partial groups
// (planner.LocalAggOp's output) for an aggregation of nKeys keys.
func partialInput(rec arrow.Record, nKeys int) bool {
	return int(rec.NumCols()) > nKeys && rec.Schema().Field(nKeys).Name == planner.PartialRowsColumn
}

// mergePartials applies the partial groups of rec (partialInput) to their
// slots a.gids: the row counts, then each accumulator's columns.
func (a *groupAgg) mergePartials(rec arrow.Record) error {
	nk := len(a.spec.Keys)
	if a.partialW == nil {
		for _, c := range a.spec.Aggs {
			a.partialW = append(a.partialW, len(planner.PartialTypes(c)))
		}
	}
	want := nk + 1
	for _, w := range a.partialW {
		want += w
	}
	rows, ok := rec.Column(nk).(*array.Int64)
	if !ok || int(rec.NumCols()) != want {
		return fmt.Errorf("%s: partial groups of an unexpected shape: %s", a.spec.Describe(), rec.Schema())
	}
	for i, g := range a.gids {
		a.rowCount[g] += rows.Value(i)
	}
	at := nk + 1
	for i, acc := range a.accs {
		pa, ok := acc.(partialAcc)
		if !ok {
			return fmt.Errorf("%s: %s cannot merge partial groups", a.spec.Describe(), a.spec.Aggs[i])
		}
		n := a.partialW[i]
		pa.mergePartial(a.gids, rec.Columns()[at:at+n])
		at += n
	}
	return nil
}

func (a *countAcc) partial(cols []arrow.Array, d int, mem memory.Allocator) []arrow.Array {
	return append(cols, int64Array(a.n[:d], mem))
}

func (a *countAcc) mergePartial(gids []int32, cols []arrow.Array) {
	vs := cols[0].(*array.Int64).Int64Values()
	for i, g := range gids {
		a.n[g] += vs[i]
	}
}

func (a *sumAcc[I, S]) partial(cols []arrow.Array, d int, mem memory.Allocator) []arrow.Array {
	var sum arrow.Array
	switch s := any(a.sum[:d]).(type) {
	case []int64:
		sum = int64Array(s, mem)
	case []float64:
		sum = buildArray(mem, arrow.PrimitiveTypes.Float64, s, nil)
	}
	return append(cols, sum, int64Array(a.nn[:d], mem))
}

func (a *sumAcc[I, S]) mergePartial(gids []int32, cols []arrow.Array) {
	sums := valuesOf[S](cols[0], nil)
	nn := cols[1].(*array.Int64).Int64Values()
	for i, g := range gids {
		a.sum[g] += sums[i]
		a.nn[g] += nn[i]
	}
}

func (a *decSumAcc) partial(cols []arrow.Array, d int, mem memory.Allocator) []arrow.Array {
	dt := &arrow.Decimal128Type{Precision: 38, Scale: int32(a.in.Scale)}
	return append(cols, buildArray(mem, dt, a.sum[:d], nil), int64Array(a.nn[:d], mem))
}

func (a *decSumAcc) mergePartial(gids []int32, cols []arrow.Array) {
	sums := cols[0].(*array.Decimal128)
	nn := cols[1].(*array.Int64).Int64Values()
	for i, g := range gids {
		a.sum[g] = a.sum[g].Add(sums.Value(i))
		a.nn[g] += nn[i]
	}
}

func (a *minMax[T]) partial(cols []arrow.Array, d int, mem memory.Allocator) []arrow.Array {
	return append(cols, buildArray(mem, a.dt, a.val[:d], a.has[:d]))
}

// mergePartial of an insert-only MIN/MAX: the partial extremes are rows.
func (a *minMax[T]) mergePartial(gids []int32, cols []arrow.Array) {
	a.update(gids, cols[0], nil)
}

// int64Array makes an array of vs (copied).
func int64Array(vs []int64, mem memory.Allocator) arrow.Array {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(len(vs) * 8)
	copy(unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(buf.Bytes()))), len(vs)), vs)
	return newArray(arrow.PrimitiveTypes.Int64, len(vs), 0, nil, buf, nil)
}
