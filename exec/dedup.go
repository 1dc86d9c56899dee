package exec

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/planner"
)

// dedup is the regular deduplication (planner.DeduplicateOp, Flink's
// Deduplicate): per key one row, kept or replaced as each row arrives,
// with Flink's rules and changelog:
//
//   - processing time, first row: the first row of a key is emitted (+I),
//     later ones are dropped; append-only (only the key is kept);
//   - processing time, last row: every row replaces the kept one (-U of
//     the old, +U of the new; +I for a key's first row);
//   - event time: a row replaces the kept one if its rowtime is >= (last
//     row) or < (first row) the kept one's, as Flink's
//     RowTimeDeduplicateFunction, which does not wait for the watermark:
//     -U/+U when it replaces. A NULL rowtime counts as the smallest.
//
// # State
//
// A slot per key; its value: format, then (unless processing-time first
// row) the rowtime and the columns of the kept row. TTL as the TopN.
type dedup struct {
	spec     *planner.DeduplicateOp
	ctx      *OpContext
	maxP     int
	keepRows bool // not processing-time first row
	tbl      *state.Table
	kept     []int32 // by slot: row id
	times    []int64 // by slot: its rowtime
	rows     *rowStore
	out      changes

	keyBuf  []byte
	keyOffs []int
	hashes  []uint64
	hashBuf []uint64 // keyHashes computes into it (hashes may be the batch's own)
}

func init() {
	RegisterOperator(func(s *planner.DeduplicateOp, ctx *OpContext) (Operator, error) { return newDedup(s, ctx) })
}

func newDedup(s *planner.DeduplicateOp, ctx *OpContext) (*dedup, error) {
	rs, err := newRowStore(s.Out[:len(s.Out)-1], "Deduplicate")
	if err != nil {
		return nil, err
	}
	d := &dedup{spec: s, ctx: ctx, maxP: max(ctx.KeyGroups.MaxParallelism, 1), rows: rs, keepRows: s.RowTime || s.KeepLast}
	d.out.init(ctx.Mem, s.Out.Arrow(), false)
	o := ctx.KVOptions(d.maxP) // checkpointing, TTL and the state backend
	o.OpID = s.ID
	tbl, err := state.NewTable(o, dedupCodec{d})
	if err != nil {
		return nil, err
	}
	tbl.OnGrow = func(n int) {
		d.kept = state.Grow(d.kept, n, -1)
		d.times = state.Grow(d.times, n, 0)
	}
	d.tbl = tbl
	// With the rocksdb backend cold keys live in Pebble.
	if err := tbl.EnableTier(state.TierHooks{Decode: d.decodeSlot, Clear: d.clearSlot, Bytes: d.slotBytes}); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *dedup) Open(*OpContext) error                          { return nil }
func (d *dedup) ProcessWatermark(wm int64, out Collector) error { return out.EmitWatermark(wm) }
func (d *dedup) Finish(Collector) error                         { return nil }
func (d *dedup) Close() error {
	var err error
	if d.tbl != nil {
		err = d.tbl.Close()
	}
	d.tbl, d.kept, d.times = nil, nil, nil
	return err
}
func (d *dedup) Snapshot(id int64, w checkpoint.StateWriter) error { return d.tbl.Snapshot(id, w) }
func (d *dedup) NotifyComplete(id int64) error                     { d.tbl.Complete(id); return nil }
func (d *dedup) NotifyAborted(id int64) error                      { d.tbl.Abort(id); return nil }

func (d *dedup) ProcessBatch(_ int, b Batch, out Collector) error {
	defer b.Rec.Release()
	rec := b.Rec
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	if b.Ops != nil {
		return fmt.Errorf("Deduplicate needs an insert-only input")
	}
	ttl := d.ctx.StateTTL > 0
	if ttl {
		d.tbl.SetNow(d.ctx.Clock.Now().UnixMilli())
	}
	d.keyBuf, d.keyOffs = encodeKeyColumns(rec, d.spec.Keys, d.keyBuf, d.keyOffs)
	d.hashes = keyHashes(b, d.spec.Keys, &d.hashBuf)
	var ts *array.Timestamp
	if d.spec.RowTime {
		var ok bool
		if ts, ok = rec.Column(d.spec.TimeCol).(*array.Timestamp); !ok {
			return fmt.Errorf("Deduplicate: the rowtime column is not a TIMESTAMP")
		}
	}
	for i := 0; i < n; i++ {
		key := d.keyBuf[d.keyOffs[i]:d.keyOffs[i+1]]
		g, ok := d.tbl.LookupBytesIn(keyGroup(d.hashes[i], d.maxP), key)
		if ok && d.tbl.Expired(g) {
			d.dropSlot(g)
			ok = false
		}
		var t int64
		if ts != nil {
			if ts.IsValid(i) {
				t = int64(ts.Value(i))
			} else {
				t = math.MinInt64
			}
		}
		if !ok {
			g = d.tbl.InsertBytes(key, keyGroup(d.hashes[i], d.maxP))
			id := d.rows.take(i, true)
			d.out.add(Insert, id, 1)
			if d.keepRows {
				d.kept[g], d.times[g] = id, t
			} else {
				d.rows.release(id)
			}
			d.tbl.Touch(g)
			continue
		}
		var replace bool
		switch {
		case !d.spec.RowTime:
			replace = d.spec.KeepLast
		case d.spec.KeepLast:
			replace = d.times[g] <= t
		default:
			replace = t < d.times[g]
		}
		if !replace {
			continue
		}
		old := d.kept[g]
		id := d.rows.take(i, true)
		d.out.add(UpdateBefore, old, 1)
		d.out.add(UpdateAfter, id, 1)
		d.rows.release(old)
		d.kept[g], d.times[g] = id, t
		d.tbl.Touch(g)
	}
	d.rows.flush(rec)
	err := d.out.emit(d.rows, out)
	d.rows.endBatch()
	if ttl {
		d.tbl.Sweep(2*n+8, d.dropSlot)
	}
	if err != nil {
		return err
	}
	return d.tbl.MaybeEvict() // a tiered table evicts between batches
}

func (d *dedup) dropSlot(g int32) {
	if d.kept[g] >= 0 {
		d.rows.release(d.kept[g])
	}
	d.kept[g] = -1
	d.tbl.Remove(g, 0, false)
}

const dedupStateV1 = 1

type dedupCodec struct{ d *dedup }

func (c dedupCodec) AppendKey(dst []byte, g int32) []byte { return append(dst, c.d.tbl.Key(g)...) }
func (c dedupCodec) AppendValue(dst []byte, g int32) []byte {
	d := c.d
	dst = append(dst, dedupStateV1)
	if d.keepRows {
		dst = binary.AppendVarint(dst, d.times[g])
		dst = d.rows.appendRow(dst, d.kept[g])
	}
	return dst
}

func (d *dedup) Restore(r checkpoint.StateReader) error {
	kgs := d.ctx.KeyGroups
	if err := d.tbl.Restore(r, kgs.Start, kgs.End, d.decodeSlot); err != nil {
		return err
	}
	return d.tbl.MaybeEvict()
}

// decodeSlot fills slot g from a key's encoded value (restore, and a
// tiered table's cold reads).
func (d *dedup) decodeSlot(g int32, key, val []byte) (int64, bool, error) {
	if len(val) == 0 || val[0] != dedupStateV1 {
		return 0, false, fmt.Errorf("%w: Deduplicate state", errCorrupt)
	}
	v := val[1:]
	if !d.keepRows {
		if len(v) != 0 {
			return 0, false, fmt.Errorf("%w: Deduplicate state", errCorrupt)
		}
		return 0, false, nil
	}
	t, n, err := readVarint(v)
	if err != nil {
		return 0, false, err
	}
	v = v[n:]
	id := d.rows.take(0, false)
	m, err := d.rows.decodeRow(v, id)
	if err != nil {
		return 0, false, err
	}
	if m != len(v) {
		return 0, false, fmt.Errorf("%w: Deduplicate state", errCorrupt)
	}
	d.kept[g], d.times[g] = id, t
	return 0, false, nil
}

// clearSlot releases an evicted key's row (between batches).
func (d *dedup) clearSlot(g int32) {
	if d.kept[g] >= 0 {
		d.rows.freeNow(d.kept[g])
	}
	d.kept[g], d.times[g] = -1, 0
}

// slotBytes estimates a key's memory: its row id, time and row.
func (d *dedup) slotBytes(g int32) int {
	n := 12
	if d.kept[g] >= 0 {
		n += d.rows.rowBytes(d.kept[g])
	}
	return n
}
