package exec

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/planner"
)

// lookupJoin is the processing-time lookup join (planner.LookupJoinOp,
// Flink's LookupJoin against a filesystem table): the dimension table is
// read whole with its source connector (OpContext.NewSource) into one
// Arrow record and an index from the encoded join key to its rows, when
// the first batch arrives and again once 'lookup.join.cache.ttl' passed
// (processing time, the job's clock), as Flink's filesystem lookup cache.
// Each input batch is joined against the current cache: per row the
// rows of its key (a NULL key matches nothing) whose residual holds, or
// (LEFT) the row padded with NULLs. Stateless: nothing is checkpointed (a
// restored job reads the table again).
type lookupJoin struct {
	spec   *planner.LookupJoinOp
	ctx    *OpContext
	mem    memory.Allocator
	clock  Clock
	schema *arrow.Schema

	dim      arrow.Record
	index    map[string][]int32
	loadedAt time.Time
	loaded   bool

	residual expr.Evaluator

	keyBuf  []byte
	keyOffs []int
	li, di  []int32 // output rows: left row, dimension row (-1: padded)
	pl, pd  []int32 // candidate pairs
	matched []bool
	nulls   []bool
}

func init() {
	RegisterOperator(func(s *planner.LookupJoinOp, ctx *OpContext) (Operator, error) { return newLookupJoin(s, ctx) })
}

func newLookupJoin(s *planner.LookupJoinOp, ctx *OpContext) (*lookupJoin, error) {
	j := &lookupJoin{spec: s, ctx: ctx, mem: ctx.Mem, clock: ctx.Clock, schema: s.Out.Arrow()}
	if j.mem == nil {
		j.mem = memory.DefaultAllocator
	}
	if j.clock == nil {
		j.clock = wallClock{}
	}
	if s.Residual != nil {
		ev, err := expr.CompileWith(s.Residual, expr.Options{Now: j.clock.Now})
		if err != nil {
			return nil, err
		}
		j.residual = ev
	}
	return j, nil
}

func (j *lookupJoin) Open(*OpContext) error                          { return nil }
func (j *lookupJoin) ProcessWatermark(wm int64, out Collector) error { return out.EmitWatermark(wm) }
func (j *lookupJoin) Snapshot(int64, checkpoint.StateWriter) error   { return nil }
func (j *lookupJoin) Restore(checkpoint.StateReader) error           { return nil }
func (j *lookupJoin) NotifyComplete(int64) error                     { return nil }
func (j *lookupJoin) NotifyAborted(int64) error                      { return nil }
func (j *lookupJoin) Finish(Collector) error                         { return nil }
func (j *lookupJoin) Close() error {
	if j.dim != nil {
		j.dim.Release()
		j.dim = nil
	}
	return nil
}

// load reads the dimension table and indexes it by the join key.
func (j *lookupJoin) load() error {
	t := j.spec.Table
	if j.ctx.NewSource == nil {
		return fmt.Errorf("lookup join: no source connectors to read table '%s'", t.Name)
	}
	src, err := j.ctx.NewSource(t, &SourceContext{Subtask: 0, Parallelism: 1, Mem: j.mem, BatchSize: 4096,
		Linger: 100 * time.Millisecond, Table: t, Schema: t.Schema})
	if err != nil {
		return fmt.Errorf("lookup join: table '%s': %w", t.Name, err)
	}
	var recs []arrow.Record
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	err = src.Run(context.Background(), func(rec arrow.Record) error {
		if rec != nil {
			recs = append(recs, rec)
		}
		return nil
	})
	if cerr := src.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("lookup join: reading table '%s': %w", t.Name, err)
	}
	dimSchema := j.spec.DimSchema.Arrow()
	cols := make([]arrow.Array, len(j.spec.DimSchema))
	n := 0
	for _, r := range recs {
		n += int(r.NumRows())
	}
	for c := range cols {
		if len(recs) == 0 {
			cols[c] = array.MakeArrayOfNull(j.mem, dimSchema.Field(c).Type, 0)
			continue
		}
		parts := make([]arrow.Array, len(recs))
		for i, r := range recs {
			parts[i] = r.Column(c)
		}
		a, err := array.Concatenate(parts, j.mem)
		if err != nil {
			for _, x := range cols[:c] {
				x.Release()
			}
			return fmt.Errorf("lookup join: table '%s': %w", t.Name, err)
		}
		cols[c] = a
	}
	dim := expr.NewRecord(dimSchema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	if j.dim != nil {
		j.dim.Release()
	}
	j.dim = dim
	j.keyBuf, j.keyOffs = encodeKeyColumns(dim, j.spec.DimKeys, j.keyBuf, j.keyOffs)
	j.index = make(map[string][]int32, n)
	var nulls []bool
	nulls, _ = nullKeyRows(dim, j.spec.DimKeys, nil, nulls)
	for i := 0; i < n; i++ {
		if nulls[i] {
			continue
		}
		k := string(j.keyBuf[j.keyOffs[i]:j.keyOffs[i+1]])
		j.index[k] = append(j.index[k], int32(i))
	}
	j.loadedAt, j.loaded = j.clock.Now(), true
	return nil
}

// nullKeyRows sets dst[i] when row i of rec has a NULL in one of the key
// columns (null-safe ones, nullSafe[ki], excepted; nil: none), one pass
// per key column over its validity bitmap. It reports whether any is set.
func nullKeyRows(rec arrow.Record, keys []int, nullSafe []bool, dst []bool) ([]bool, bool) {
	n := int(rec.NumRows())
	if cap(dst) < n {
		dst = make([]bool, n)
	}
	dst = dst[:n]
	for i := range dst {
		dst[i] = false
	}
	any := false
	for ki, k := range keys {
		if ki < len(nullSafe) && nullSafe[ki] {
			continue
		}
		c := rec.Column(k)
		if c.NullN() == 0 {
			continue
		}
		any = true
		bm, off := c.NullBitmapBytes(), c.Data().Offset()
		for i := 0; i < n; i++ {
			if !bitutil.BitIsSet(bm, off+i) {
				dst[i] = true
			}
		}
	}
	return dst, any
}

func (j *lookupJoin) ProcessBatch(_ int, b Batch, out Collector) error {
	defer b.Rec.Release()
	if b.Ops != nil {
		return fmt.Errorf("lookup join: the input must be insert-only")
	}
	if !j.loaded || (j.spec.CacheTTL > 0 && j.clock.Now().Sub(j.loadedAt) >= j.spec.CacheTTL) {
		if err := j.load(); err != nil {
			return err
		}
	}
	rec := b.Rec
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	j.keyBuf, j.keyOffs = encodeKeyColumns(rec, j.spec.LeftKeys, j.keyBuf, j.keyOffs)
	pads := j.spec.Type == planner.LeftJoin
	j.pl, j.pd = j.pl[:0], j.pd[:0]
	var anyNull bool
	j.nulls, anyNull = nullKeyRows(rec, j.spec.LeftKeys, nil, j.nulls)
	for i := 0; i < n; i++ {
		if anyNull && j.nulls[i] {
			continue
		}
		for _, d := range j.index[string(j.keyBuf[j.keyOffs[i]:j.keyOffs[i+1]])] {
			j.pl = append(j.pl, int32(i))
			j.pd = append(j.pd, d)
		}
	}
	if cap(j.matched) < n {
		j.matched = make([]bool, n)
	}
	matched := j.matched[:n]
	for i := range matched {
		matched[i] = false
	}
	var mask *array.Boolean
	if j.residual != nil && len(j.pl) > 0 {
		pairs := j.take(rec, j.pl, j.pd)
		m, err := j.residual.Eval(pairs, j.mem)
		pairs.Release()
		if err != nil {
			return err
		}
		defer m.Release()
		var ok bool
		if mask, ok = m.(*array.Boolean); !ok {
			return fmt.Errorf("lookup join: the condition is %s, not BOOLEAN", m.DataType())
		}
	}
	// The output in input order: each row's passing pairs, or its padding.
	j.li, j.di = j.li[:0], j.di[:0]
	p := 0
	for i := 0; i < n; i++ {
		for ; p < len(j.pl) && int(j.pl[p]) == i; p++ {
			if mask == nil || (mask.IsValid(p) && mask.Value(p)) {
				j.li, j.di = append(j.li, int32(i)), append(j.di, j.pd[p])
				matched[i] = true
			}
		}
		if pads && !matched[i] {
			j.li, j.di = append(j.li, int32(i)), append(j.di, -1)
		}
	}
	if len(j.li) == 0 {
		return nil
	}
	return out.Collect(Batch{Rec: j.take(rec, j.li, j.di)})
}

// take builds the output rows (left row li[k], dimension row di[k]; -1:
// NULLs).
func (j *lookupJoin) take(rec arrow.Record, li, di []int32) arrow.Record {
	l := expr.TakeRecord(rec, li, j.mem)
	d := expr.TakeRecord(j.dim, di, j.mem)
	cols := make([]arrow.Array, 0, int(l.NumCols()+d.NumCols()))
	cols = append(cols, l.Columns()...)
	cols = append(cols, d.Columns()...)
	out := expr.NewRecord(j.schema, cols, int64(len(li)))
	l.Release()
	d.Release()
	return out
}
