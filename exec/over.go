package exec

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/planner"
)

// overAgg is an OVER aggregation (planner.OverAggOp, Flink's
// OverAggregate), append-only: each input row is emitted once with the
// aggregates over its frame.
//
// On an event-time attribute a row waits (per key, under a timer at its
// rowtime) until the watermark passes it; rows are then processed in time
// order, those of one time in arrival order. A row not newer than the last
// time processed for its key is late: dropped and counted
// (Metrics.LateRecords), as Flink's RowTime*PrecedingFunction. On
// PROCTIME() a row is processed when it arrives.
//
// Frames: ROWS n PRECEDING keeps the last n+1 rows and aggregates each
// row's frame; RANGE INTERVAL p PRECEDING keeps the rows of the last p ms
// and gives the rows of one time the same values (they are peers);
// UNBOUNDED PRECEDING keeps running accumulators only (RANGE: peers share
// the values). Bounded frames are aggregated over the kept rows (their
// size bounds the work per row).
//
// # State
//
// A slot per key: the last processed time, the rows waiting, the rows of
// the frame (time, columns, argument values) and the running
// accumulators; the timers (event time).
type overAgg struct {
	spec   *planner.OverAggOp
	ctx    *OpContext
	maxP   int
	tbl    *state.Table
	timers *state.Timers
	rows   *rowStore
	nArg   int

	pend [][]overRow // by slot: rows waiting for the watermark
	hist [][]overRow // by slot: rows of the frame (bounded frames)
	acc  [][]runAcc  // by slot, by aggregate (unbounded)
	last []int64     // by slot: the last time processed (event time)

	// argument values by aggregate, by row id
	argI  [][]int64
	argF  [][]float64
	argOK [][]bool
	isF   []bool // by aggregate: a DOUBLE argument

	// per batch: argument values by aggregate, by batch row
	bI  [][]int64
	bF  [][]float64
	bOK [][]bool

	outIDs []int32
	outI   [][]int64
	outF   [][]float64
	outOK  [][]bool
	wm     int64
	fwd    int64

	keyBuf  []byte
	keyOffs []int
	hashes  []uint64
	hashBuf []uint64 // keyHashes computes into it (hashes may be the batch's own)
	scratch []overRow
}

type overRow struct {
	id int32
	ts int64
}

// runAcc is an aggregate's running accumulator.
type runAcc struct {
	rows, n    int64 // rows, non-NULL arguments
	isum       int64
	fsum       float64
	imin, imax int64
	fmin, fmax float64
}

func init() {
	RegisterOperator(func(s *planner.OverAggOp, ctx *OpContext) (Operator, error) { return newOverAgg(s, ctx) })
}

func newOverAgg(s *planner.OverAggOp, ctx *OpContext) (*overAgg, error) {
	nIn := len(s.Out) - len(s.Aggs)
	rs, err := newRowStore(s.Out[:nIn], "OverAggregate")
	if err != nil {
		return nil, err
	}
	o := &overAgg{spec: s, ctx: ctx, maxP: max(ctx.KeyGroups.MaxParallelism, 1), rows: rs, nArg: len(s.Aggs), wm: NoWatermark, fwd: NoWatermark}
	for _, a := range s.Aggs {
		f := a.Arg >= 0 && s.Out[a.Arg].Type.Kind == catalog.KindDouble
		o.isF = append(o.isF, f)
	}
	o.argI, o.argF, o.argOK = make([][]int64, o.nArg), make([][]float64, o.nArg), make([][]bool, o.nArg)
	o.bI, o.bF, o.bOK = make([][]int64, o.nArg), make([][]float64, o.nArg), make([][]bool, o.nArg)
	o.outI, o.outF, o.outOK = make([][]int64, o.nArg), make([][]float64, o.nArg), make([][]bool, o.nArg)
	tbl, err := state.NewTable(state.Options{OpID: s.ID, MaxParallelism: o.maxP, Checkpointing: ctx.Checkpointing}, overCodec{o})
	if err != nil {
		return nil, err
	}
	tbl.OnGrow = func(n int) {
		o.pend = state.Grow(o.pend, n, nil)
		o.hist = state.Grow(o.hist, n, nil)
		for len(o.acc) < n {
			o.acc = append(o.acc, make([]runAcc, o.nArg))
		}
		o.last = state.Grow(o.last, n, math.MinInt64)
	}
	o.tbl = tbl
	if s.RowTime {
		// The timers are not checkpointed: a restore sets them from the
		// pending rows.
		if o.timers, err = state.NewTimers(s.ID, "event", o.maxP, false); err != nil {
			return nil, err
		}
	}
	return o, nil
}

func (o *overAgg) Open(*OpContext) error  { return nil }
func (o *overAgg) Finish(Collector) error { return nil }
func (o *overAgg) Close() error {
	o.tbl, o.pend, o.hist, o.acc = nil, nil, nil, nil
	return nil
}

func (o *overAgg) Snapshot(id int64, w checkpoint.StateWriter) error {
	if err := o.tbl.Snapshot(id, w); err != nil {
		return err
	}
	if o.timers != nil {
		return o.timers.Snapshot(id, w)
	}
	return nil
}

func (o *overAgg) NotifyComplete(id int64) error {
	o.tbl.Complete(id)
	if o.timers != nil {
		o.timers.Complete(id)
	}
	return nil
}

func (o *overAgg) NotifyAborted(id int64) error {
	o.tbl.Abort(id)
	if o.timers != nil {
		o.timers.Abort(id)
	}
	return nil
}

// readArgs extracts the aggregates' argument columns of rec, one type
// switch per column.
func (o *overAgg) readArgs(rec arrow.Record) {
	n := int(rec.NumRows())
	for a, ag := range o.spec.Aggs {
		o.bOK[a] = o.bOK[a][:0]
		o.bI[a], o.bF[a] = o.bI[a][:0], o.bF[a][:0]
		if ag.Arg < 0 {
			continue
		}
		col := rec.Column(ag.Arg)
		for i := 0; i < n; i++ {
			o.bOK[a] = append(o.bOK[a], col.IsValid(i))
		}
		switch c := col.(type) {
		case *array.Int32:
			for _, v := range c.Int32Values() {
				o.bI[a] = append(o.bI[a], int64(v))
			}
		case *array.Int64:
			o.bI[a] = append(o.bI[a], c.Int64Values()...)
		case *array.Float64:
			o.bF[a] = append(o.bF[a], c.Float64Values()...)
		default: // COUNT of another type: only validity counts
			for i := 0; i < n; i++ {
				o.bI[a] = append(o.bI[a], 0)
			}
		}
	}
}

// takeRow stores row i of the batch under a new row id.
func (o *overAgg) takeRow(i int) int32 {
	id := o.rows.take(i, true)
	for a := range o.spec.Aggs {
		for int(id) >= len(o.argOK[a]) {
			o.argOK[a] = append(o.argOK[a], false)
			o.argI[a] = append(o.argI[a], 0)
			o.argF[a] = append(o.argF[a], 0)
		}
		if o.spec.Aggs[a].Arg < 0 {
			continue
		}
		o.argOK[a][id] = o.bOK[a][i]
		if o.isF[a] {
			o.argF[a][id] = o.bF[a][i]
		} else {
			o.argI[a][id] = o.bI[a][i]
		}
	}
	return id
}

func (o *overAgg) ProcessBatch(_ int, b Batch, out Collector) error {
	defer b.Rec.Release()
	rec := b.Rec
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	if b.Ops != nil {
		return fmt.Errorf("OverAggregate needs an insert-only input")
	}
	o.keyBuf, o.keyOffs = encodeKeyColumns(rec, o.spec.PartKeys, o.keyBuf, o.keyOffs)
	o.hashes = keyHashes(b, o.spec.PartKeys, &o.hashBuf)
	o.readArgs(rec)
	var ts *array.Timestamp
	if o.spec.RowTime {
		var ok bool
		if ts, ok = rec.Column(o.spec.TimeCol).(*array.Timestamp); !ok {
			return fmt.Errorf("OverAggregate: the rowtime column is not a TIMESTAMP")
		}
	}
	late := 0
	for i := 0; i < n; i++ {
		if ts != nil && ts.IsNull(i) {
			late++
			continue
		}
		key := o.keyBuf[o.keyOffs[i]:o.keyOffs[i+1]]
		kg := keyGroup(o.hashes[i], o.maxP)
		g, ok := o.tbl.LookupBytes(key)
		if !ok {
			g = o.tbl.InsertBytes(key, kg)
		}
		if ts == nil { // processing time: at once
			o.scratch = append(o.scratch[:0], overRow{id: o.takeRow(i)})
			o.process(g, o.scratch, false)
			o.tbl.Touch(g)
			continue
		}
		t := int64(ts.Value(i))
		if t <= o.last[g] {
			late++
			continue
		}
		o.pend[g] = append(o.pend[g], overRow{id: o.takeRow(i), ts: t})
		o.timers.Register(kg, t, key)
		o.tbl.Touch(g)
	}
	if late > 0 && o.ctx.Metrics != nil {
		o.ctx.Metrics.LateRecords.Add(int64(late))
	}
	o.rows.flush(rec)
	err := o.emit(out)
	o.rows.endBatch()
	return err
}

func (o *overAgg) ProcessWatermark(wm int64, out Collector) error {
	if o.timers != nil && wm > o.wm {
		o.wm = wm
		err := o.timers.Advance(wm, func(kg int, t int64, key []byte) error {
			g, ok := o.tbl.LookupBytes(key)
			if !ok {
				return nil
			}
			// the rows of time t, in arrival order; the others wait
			o.scratch = o.scratch[:0]
			rest := o.pend[g][:0]
			for _, r := range o.pend[g] {
				if r.ts == t {
					o.scratch = append(o.scratch, r)
				} else {
					rest = append(rest, r)
				}
			}
			o.pend[g] = rest
			o.process(g, o.scratch, true)
			o.last[g] = t
			o.tbl.Touch(g)
			return nil
		})
		if err != nil {
			return err
		}
		if err := o.emit(out); err != nil {
			return err
		}
		o.rows.endBatch()
	}
	if wm > o.fwd {
		o.fwd = wm
		return out.EmitWatermark(wm)
	}
	return nil
}

// process aggregates rows (of one time when peers) of slot g and adds
// them to the output.
func (o *overAgg) process(g int32, rows []overRow, peers bool) {
	s := o.spec
	peers = peers && !s.Rows
	if s.Unbounded {
		acc := o.acc[g]
		for j, r := range rows {
			for a := range s.Aggs {
				o.accumulate(&acc[a], a, r.id)
			}
			if !peers || j == len(rows)-1 {
				start := j
				if peers {
					start = 0
				}
				for _, e := range rows[start : j+1] {
					o.outIDs = append(o.outIDs, e.id)
					for a := range s.Aggs {
						o.result(a, &acc[a])
					}
					o.rows.release(e.id)
				}
			}
		}
		return
	}
	for j, r := range rows {
		h := append(o.hist[g], r)
		if s.Rows {
			if len(h) > int(s.Preceding)+1 {
				o.rows.release(h[0].id)
				h = h[1:]
			}
		} else {
			drop := 0
			for drop < len(h) && h[drop].ts < r.ts-s.Preceding {
				o.rows.release(h[drop].id)
				drop++
			}
			h = h[drop:]
		}
		o.hist[g] = h
		if peers && j < len(rows)-1 {
			continue
		}
		var acc runAcc
		start := j
		if peers {
			start = 0
		}
		for _, e := range rows[start : j+1] {
			o.outIDs = append(o.outIDs, e.id)
		}
		for a := range s.Aggs {
			acc = runAcc{}
			for _, x := range h {
				o.accumulate(&acc, a, x.id)
			}
			for range rows[start : j+1] {
				o.result(a, &acc)
			}
		}
	}
}

func (o *overAgg) accumulate(acc *runAcc, a int, id int32) {
	acc.rows++
	if o.spec.Aggs[a].Arg < 0 || !o.argOK[a][id] {
		return
	}
	if o.isF[a] {
		v := o.argF[a][id]
		if acc.n == 0 || v < acc.fmin {
			acc.fmin = v
		}
		if acc.n == 0 || v > acc.fmax {
			acc.fmax = v
		}
		acc.fsum += v
	} else {
		v := o.argI[a][id]
		if acc.n == 0 || v < acc.imin {
			acc.imin = v
		}
		if acc.n == 0 || v > acc.imax {
			acc.imax = v
		}
		acc.isum += v
	}
	acc.n++
}

// result appends aggregate a's value for acc to the output.
func (o *overAgg) result(a int, acc *runAcc) {
	ag := o.spec.Aggs[a]
	var iv int64
	var fv float64
	ok := acc.n > 0
	switch ag.Fn {
	case "count_star":
		iv, ok = acc.rows, true
	case "count":
		iv, ok = acc.n, true
	case "sum":
		iv, fv = acc.isum, acc.fsum
	case "min":
		iv, fv = acc.imin, acc.fmin
	case "max":
		iv, fv = acc.imax, acc.fmax
	case "avg":
		if ok {
			iv, fv = acc.isum/acc.n, acc.fsum/float64(acc.n)
		}
	}
	o.outI[a] = append(o.outI[a], iv)
	o.outF[a] = append(o.outF[a], fv)
	o.outOK[a] = append(o.outOK[a], ok)
}

func (o *overAgg) emit(out Collector) error {
	if len(o.outIDs) == 0 {
		return nil
	}
	mem := o.ctx.Mem
	cols := make([]arrow.Array, 0, len(o.spec.Out))
	for _, ks := range o.rows.cols {
		cols = append(cols, ks.gather(o.outIDs, mem))
	}
	for a, ag := range o.spec.Aggs {
		switch ag.T.Kind {
		case catalog.KindDouble:
			cols = append(cols, buildArray(mem, arrow.PrimitiveTypes.Float64, o.outF[a], o.outOK[a]))
		case catalog.KindInt:
			v := make([]int32, len(o.outI[a]))
			for i, x := range o.outI[a] {
				v[i] = int32(x)
			}
			cols = append(cols, buildArray(mem, arrow.PrimitiveTypes.Int32, v, o.outOK[a]))
		default:
			cols = append(cols, buildArray(mem, arrow.PrimitiveTypes.Int64, o.outI[a], o.outOK[a]))
		}
		o.outI[a], o.outF[a], o.outOK[a] = o.outI[a][:0], o.outF[a][:0], o.outOK[a][:0]
	}
	rec := expr.NewRecord(o.spec.Out.Arrow(), cols, int64(len(o.outIDs)))
	for _, c := range cols {
		c.Release()
	}
	o.outIDs = o.outIDs[:0]
	return out.Collect(Batch{Rec: rec})
}

// Checkpointed state (see the type's comment).

const overStateV1 = 1

type overCodec struct{ o *overAgg }

func (c overCodec) AppendKey(dst []byte, g int32) []byte { return append(dst, c.o.tbl.Key(g)...) }
func (c overCodec) AppendValue(dst []byte, g int32) []byte {
	o := c.o
	dst = append(dst, overStateV1)
	dst = binary.AppendVarint(dst, o.last[g])
	for _, rs := range [][]overRow{o.pend[g], o.hist[g]} {
		dst = binary.AppendUvarint(dst, uint64(len(rs)))
		for _, r := range rs {
			dst = binary.AppendVarint(dst, r.ts)
			dst = o.rows.appendRow(dst, r.id)
			for a := range o.spec.Aggs {
				if o.argOK[a][r.id] {
					dst = append(dst, 1)
				} else {
					dst = append(dst, 0)
				}
				if o.isF[a] {
					dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(o.argF[a][r.id]))
				} else {
					dst = binary.AppendVarint(dst, o.argI[a][r.id])
				}
			}
		}
	}
	for _, ac := range o.acc[g] {
		for _, v := range []int64{ac.rows, ac.n, ac.isum, ac.imin, ac.imax} {
			dst = binary.AppendVarint(dst, v)
		}
		for _, v := range []float64{ac.fsum, ac.fmin, ac.fmax} {
			dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(v))
		}
	}
	return dst
}

func (o *overAgg) Restore(r checkpoint.StateReader) error {
	kgs := o.ctx.KeyGroups
	err := o.tbl.Restore(r, kgs.Start, kgs.End, func(g int32, key, val []byte) (int64, bool, error) {
		if len(val) == 0 || val[0] != overStateV1 {
			return 0, false, fmt.Errorf("%w: OverAggregate state", errCorrupt)
		}
		v := val[1:]
		varint := func() (int64, error) {
			x, n, err := readVarint(v)
			if err == nil {
				v = v[n:]
			}
			return x, err
		}
		f64 := func() (float64, error) {
			if len(v) < 8 {
				return 0, errCorrupt
			}
			x := math.Float64frombits(binary.BigEndian.Uint64(v))
			v = v[8:]
			return x, nil
		}
		var err error
		if o.last[g], err = varint(); err != nil {
			return 0, false, err
		}
		for pass := 0; pass < 2; pass++ {
			cnt, n := binary.Uvarint(v)
			if n <= 0 {
				return 0, false, errCorrupt
			}
			v = v[n:]
			var rs []overRow
			for ; cnt > 0; cnt-- {
				t, err := varint()
				if err != nil {
					return 0, false, err
				}
				id := o.rows.take(0, false)
				m, err := o.rows.decodeRow(v, id)
				if err != nil {
					return 0, false, err
				}
				v = v[m:]
				for a := range o.spec.Aggs {
					for int(id) >= len(o.argOK[a]) {
						o.argOK[a] = append(o.argOK[a], false)
						o.argI[a] = append(o.argI[a], 0)
						o.argF[a] = append(o.argF[a], 0)
					}
					if len(v) == 0 {
						return 0, false, errCorrupt
					}
					o.argOK[a][id], v = v[0] == 1, v[1:]
					if o.isF[a] {
						if o.argF[a][id], err = f64(); err != nil {
							return 0, false, err
						}
					} else if o.argI[a][id], err = varint(); err != nil {
						return 0, false, err
					}
				}
				rs = append(rs, overRow{id: id, ts: t})
			}
			if pass == 0 {
				o.pend[g] = rs
			} else {
				o.hist[g] = rs
			}
		}
		for a := range o.acc[g] {
			ac := &o.acc[g][a]
			for _, p := range []*int64{&ac.rows, &ac.n, &ac.isum, &ac.imin, &ac.imax} {
				if *p, err = varint(); err != nil {
					return 0, false, err
				}
			}
			for _, p := range []*float64{&ac.fsum, &ac.fmin, &ac.fmax} {
				if *p, err = f64(); err != nil {
					return 0, false, err
				}
			}
		}
		if len(v) != 0 {
			return 0, false, fmt.Errorf("%w: OverAggregate state", errCorrupt)
		}
		return 0, false, nil
	})
	if err != nil {
		return err
	}
	if o.timers == nil {
		return nil
	}
	// a timer at every time a key has rows pending at (Register keeps one)
	return o.timers.RestoreFrom(r, kgs.Start, kgs.End, o.tbl, func(g int32, kg int) error {
		o.keyBuf = append(o.keyBuf[:0], o.tbl.Key(g)...)
		for _, row := range o.pend[g] {
			o.timers.Register(kg, row.ts, o.keyBuf)
		}
		return nil
	})
}
