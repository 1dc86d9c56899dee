package exec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/planner"
)

func init() {
	RegisterOperator(func(s *planner.SortOp, ctx *OpContext) (Operator, error) { return newTemporalSort(s, ctx) })
}

// temporalSort is ORDER BY <time attribute> ASC [, more keys] on a stream
// (Flink's temporal sort), at parallelism 1: rows are buffered until the
// watermark passes their time, then emitted ordered by time and the
// further keys (rows equal in all keys keep their arrival order);
// append-only output. A row whose time is at or below the watermark
// already (late), or NULL, is dropped and counted (Metrics.LateRecords),
// as by the window operators.
//
// # State
//
// One slot per buffered timestamp (key: the timestamp in 8 bytes that
// sort as it does, appendEndKey; value: format, then each row: its sort
// key and its columns; the emitted slots leave the state as one range
// deletion, endRanges),
// an event-time timer per slot at its timestamp, and the watermark
// (kgWatermark: a restored job judges late rows by the watermark it had
// reached, so it drops and emits exactly what the uninterrupted job does).
type temporalSort struct {
	spec   *planner.SortOp
	ctx    *OpContext
	mem    memory.Allocator
	schema *arrow.Schema
	upm    int64 // stored time units per millisecond

	bufs  [][]int32 // by slot: row ids in arrival order
	cols  []keyStore
	skeys [][]byte // by row id: the further sort keys
	free  []int32
	nRows int32

	windowState // (its byEnd: emitted times deleted by range)

	sorts    sortEncoder
	keyBuf   [8]byte
	pendIDs  []int32
	pendRows []int32
	outRows  []int32
	toFree   []int32
}

const temporalSortStateV1 = 1

func newTemporalSort(s *planner.SortOp, ctx *OpContext) (*temporalSort, error) {
	maxP := max(ctx.KeyGroups.MaxParallelism, 1)
	w := &temporalSort{spec: s, ctx: ctx, mem: ctx.Mem, schema: s.Out.Arrow(), upm: max(s.Out[s.Time].Type.UnitsPerMilli(), 1),
		windowState: windowState{kgWatermark: newKGWatermark(), opID: s.ID, opCtx: ctx}}
	for _, c := range s.Out {
		ks, err := newKeyStore(c.Type)
		if err != nil {
			return nil, fmt.Errorf("ORDER BY cannot keep column %s: %w", c.Name, err)
		}
		w.cols = append(w.cols, ks)
	}
	tbl, err := state.NewTable(state.Options{OpID: s.ID, MaxParallelism: maxP, Checkpointing: ctx.Checkpointing}, sortCodec{w})
	if err != nil {
		return nil, err
	}
	tbl.OnGrow = func(n int) { w.bufs = state.Grow(w.bufs, n, nil) }
	w.tbl = tbl
	// The timers are not checkpointed: a restore sets them from the slots.
	if w.timers, err = state.NewTimers(s.ID, "event", maxP, false); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *temporalSort) Open(*OpContext) error  { return nil }
func (w *temporalSort) Finish(Collector) error { return nil }
func (w *temporalSort) Close() error           { return nil }

// kg is the key group of every slot: the operator runs at parallelism 1.
func (w *temporalSort) kg() int { return w.ctx.KeyGroups.Start }

func (w *temporalSort) newRow(sk []byte) int32 {
	var id int32
	if n := len(w.free); n > 0 {
		id, w.free = w.free[n-1], w.free[:n-1]
	} else {
		id = w.nRows
		w.nRows++
		w.skeys = append(w.skeys, nil)
	}
	w.skeys[id] = append(w.skeys[id][:0], sk...)
	return id
}

func (w *temporalSort) ProcessBatch(_ int, b Batch, out Collector) error {
	defer b.Rec.Release()
	rec := b.Rec
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	tcol, ok := rec.Column(w.spec.Time).(*array.Timestamp)
	if !ok {
		return fmt.Errorf("ORDER BY: column %s is not a TIMESTAMP", w.spec.Out[w.spec.Time].Name)
	}
	ts := tcol.TimestampValues()
	if len(w.spec.Keys) > 0 {
		w.sorts.encode(rec, w.spec.Keys)
	}
	kg := w.kg()
	wm := w.wmFor(kg, w.ctx.KeyGroups.Start)
	late := 0
	for i := 0; i < n; i++ {
		if tcol.IsNull(i) {
			late++
			continue
		}
		v := int64(ts[i])
		ms := v / w.upm
		if v%w.upm < 0 {
			ms-- // floor
		}
		if ms <= wm {
			late++
			continue
		}
		binary.BigEndian.PutUint64(w.keyBuf[:], uint64(v)^(1<<63))
		g, ok := w.tbl.LookupBytes(w.keyBuf[:])
		if !ok {
			g = w.tbl.InsertBytes(w.keyBuf[:], kg)
			w.byEnd.add(v)
			w.timers.Register(kg, ms, w.keyBuf[:])
		}
		var sk []byte
		if len(w.spec.Keys) > 0 {
			sk = w.sorts.key(i)
		}
		id := w.newRow(sk)
		w.pendIDs = append(w.pendIDs, id)
		w.pendRows = append(w.pendRows, int32(i))
		w.bufs[g] = append(w.bufs[g], id)
		w.tbl.Touch(g)
	}
	if len(w.pendIDs) > 0 {
		for c, ks := range w.cols {
			putRows(ks, w.pendIDs, w.pendRows, rec.Column(c))
		}
		w.pendIDs, w.pendRows = w.pendIDs[:0], w.pendRows[:0]
	}
	if late > 0 && w.ctx.Metrics != nil {
		w.ctx.Metrics.LateRecords.Add(int64(late))
	}
	return nil
}

func (w *temporalSort) ProcessWatermark(wm int64, out Collector) error {
	w.advance(wm)
	w.outRows, w.toFree = w.outRows[:0], w.toFree[:0]
	err := w.timers.Advance(w.wm, func(_ int, _ int64, key []byte) error {
		g, ok := w.tbl.LookupBytes(key)
		if !ok {
			return nil
		}
		buf := w.bufs[g]
		if len(w.spec.Keys) > 0 {
			sort.SliceStable(buf, func(a, b int) bool { return bytes.Compare(w.skeys[buf[a]], w.skeys[buf[b]]) < 0 })
		}
		w.outRows = append(w.outRows, buf...)
		w.toFree = append(w.toFree, g)
		return nil
	})
	if err != nil {
		return err
	}
	var rec arrow.Record
	if len(w.outRows) > 0 {
		cols := make([]arrow.Array, len(w.cols))
		for c, ks := range w.cols {
			cols[c] = ks.gather(w.outRows, w.mem)
		}
		rec = expr.NewRecord(w.schema, cols, int64(len(w.outRows)))
		for _, c := range cols {
			c.Release()
		}
	}
	for _, g := range w.toFree {
		w.free = append(w.free, w.bufs[g]...)
		w.bufs[g] = w.bufs[g][:0]
		w.byEnd.free(w.tbl, g, w.slotTime(g)) // Snapshot deletes its key with the range
	}
	if rec != nil {
		if err := out.Collect(Batch{Rec: rec}); err != nil {
			return err
		}
	}
	if wm > w.forwarded {
		w.forwarded = wm
		return out.EmitWatermark(wm)
	}
	return nil
}

// slotTime is the time (stored units) live slot g buffers: its key.
func (w *temporalSort) slotTime(g int32) int64 {
	return int64(binary.BigEndian.Uint64([]byte(w.tbl.Key(g))) ^ (1 << 63))
}

type sortCodec struct{ w *temporalSort }

func (c sortCodec) AppendKey(dst []byte, g int32) []byte { return append(dst, c.w.tbl.Key(g)...) }
func (c sortCodec) AppendValue(dst []byte, g int32) []byte {
	w := c.w
	dst = append(dst, temporalSortStateV1)
	dst = binary.AppendUvarint(dst, uint64(len(w.bufs[g])))
	for _, id := range w.bufs[g] {
		dst = binary.AppendUvarint(dst, uint64(len(w.skeys[id])))
		dst = append(dst, w.skeys[id]...)
		for _, ks := range w.cols {
			dst = ks.appendEncoded(dst, id)
		}
	}
	return dst
}

func (w *temporalSort) Restore(r checkpoint.StateReader) error {
	kgs := w.ctx.KeyGroups
	err := w.tbl.Restore(r, kgs.Start, kgs.End, func(g int32, key, val []byte) (int64, bool, error) {
		if len(val) == 0 || val[0] != temporalSortStateV1 {
			return 0, false, fmt.Errorf("%w: temporal sort state", errCorrupt)
		}
		v := val[1:]
		cnt, n := binary.Uvarint(v)
		if n <= 0 {
			return 0, false, errCorrupt
		}
		v = v[n:]
		buf := w.bufs[g][:0]
		for ; cnt > 0; cnt-- {
			l, n := binary.Uvarint(v)
			if n <= 0 || uint64(len(v)-n) < l {
				return 0, false, errCorrupt
			}
			id := w.newRow(v[n : n+int(l)])
			v = v[n+int(l):]
			for _, ks := range w.cols {
				m, err := ks.decode(v, id)
				if err != nil {
					return 0, false, err
				}
				v = v[m:]
			}
			buf = append(buf, id)
		}
		if len(v) != 0 {
			return 0, false, fmt.Errorf("%w: temporal sort state", errCorrupt)
		}
		w.bufs[g] = buf
		return 0, false, nil
	})
	if err != nil {
		return err
	}
	// a slot's timer: its time (the key) in ms, as ProcessBatch set it
	err = w.timers.RestoreFrom(r, kgs.Start, kgs.End, w.tbl, func(g int32, kg int) error {
		k := w.tbl.Key(g)
		if len(k) != len(w.keyBuf) {
			return fmt.Errorf("%w: temporal sort key", errCorrupt)
		}
		copy(w.keyBuf[:], k)
		v := int64(binary.BigEndian.Uint64(w.keyBuf[:]) ^ (1 << 63))
		w.byEnd.add(v)
		w.timers.Register(kg, floorDiv(v, w.upm), w.keyBuf[:])
		return nil
	})
	if err != nil {
		return err
	}
	return w.kgWatermark.restore(w.spec.ID, w.ctx, r)
}
