package exec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/planner"
)

// topN is the regular TopN (planner.RankOp, Flink's Rank with ROW_NUMBER):
// per partition key, the rows ranked RankStart..RankEnd by the ORDER BY
// (ties in arrival order), kept up to date with an updating changelog
// whose rows and kinds are those of Flink's functions:
//
//   - insert-only input (AppendOnlyTopNFunction): only the top RankEnd rows
//     are kept; a row that ranks past them is ignored;
//   - updating input (RetractableTopNFunction): every row is kept, a
//     retraction (-U/-D) removes the first equal row of its sort key.
//
// With the rank in the output (or a range not starting at 1), every rank
// whose row changes is updated: -U of the row that held it, +U of the row
// that holds it now, +I for a rank that did not exist, -D for one that
// no longer does. Without it only rows entering or leaving the range
// change: -D of the row pushed out, then +I of the new row (or -D of the
// retracted row, then +I of the row moving in).
//
// Rows are processed one by one in input order, so the changelog does not
// depend on the batch size. Rows live column by column in a rowStore under
// row ids; a slot of the state table (one per partition key) holds the
// ids in rank order and each row's order-preserving sort key (the
// sortEncoder of the Window TopN).
//
// # State
//
// A slot's value: format, the number of rows, then per row its sort key
// and its columns. With table.exec.state.ttl a partition not updated for
// the TTL is dropped (without retracting its rows, as Flink).
type topN struct {
	spec    *planner.RankOp
	ctx     *OpContext
	maxP    int
	retract bool // updating input: every row kept
	withNum bool // the rank-number algorithm: rank output or RankStart > 1
	tbl     *state.Table
	bufs    [][]int32 // by slot: row ids in rank order
	rows    *rowStore
	sortKey [][]byte // by row id
	rowEnc  [][]byte // by row id (retract): the row's encoding, for equality
	out     changes

	keyBuf  []byte
	keyOffs []int
	rowBuf  []byte
	rowOffs []int
	allCols []int
	sorts   sortEncoder
	hashes  []uint64
	hashBuf []uint64 // keyHashes computes into it (hashes may be the batch's own)
}

func init() {
	RegisterOperator(func(s *planner.RankOp, ctx *OpContext) (Operator, error) { return newTopN(s, ctx) })
}

func newTopN(s *planner.RankOp, ctx *OpContext) (*topN, error) {
	nIn := len(s.Out) - 1
	rs, err := newRowStore(s.Out[:nIn], "TopN")
	if err != nil {
		return nil, err
	}
	t := &topN{spec: s, ctx: ctx, maxP: max(ctx.KeyGroups.MaxParallelism, 1), rows: rs,
		retract: s.InputMode != planner.InsertOnly, withNum: s.OutputRank || s.RankStart > 1}
	t.out.init(ctx.Mem, s.Out.Arrow(), s.OutputRank)
	for i := 0; i < nIn; i++ {
		t.allCols = append(t.allCols, i)
	}
	o := ctx.KVOptions(t.maxP) // checkpointing, TTL and the state backend
	o.OpID = s.ID
	tbl, err := state.NewTable(o, topNCodec{t})
	if err != nil {
		return nil, err
	}
	tbl.OnGrow = func(n int) { t.bufs = state.Grow(t.bufs, n, nil) }
	t.tbl = tbl
	// With the rocksdb backend cold partitions live in Pebble.
	if err := tbl.EnableTier(state.TierHooks{Decode: t.decodeSlot, Clear: t.clearSlot, Bytes: t.slotBytes}); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *topN) Open(*OpContext) error                          { return nil }
func (t *topN) ProcessWatermark(wm int64, out Collector) error { return out.EmitWatermark(wm) }
func (t *topN) Finish(Collector) error                         { return nil }
func (t *topN) Close() error {
	var err error
	if t.tbl != nil {
		err = t.tbl.Close()
	}
	t.tbl, t.bufs, t.sortKey, t.rowEnc = nil, nil, nil, nil
	return err
}

func (t *topN) Snapshot(id int64, w checkpoint.StateWriter) error { return t.tbl.Snapshot(id, w) }
func (t *topN) NotifyComplete(id int64) error                     { t.tbl.Complete(id); return nil }
func (t *topN) NotifyAborted(id int64) error                      { t.tbl.Abort(id); return nil }

// newRow stores row i of the current batch (rec nil: restored; columns
// decoded by the caller) under a fresh row id with sort key sk and, when
// retracting, row encoding enc.
func (t *topN) newRow(i int, sk, enc []byte, fromBatch bool) int32 {
	id := t.rows.take(i, fromBatch)
	for int(id) >= len(t.sortKey) {
		t.sortKey = append(t.sortKey, nil)
		if t.retract {
			t.rowEnc = append(t.rowEnc, nil)
		}
	}
	t.sortKey[id] = append(t.sortKey[id][:0], sk...)
	if t.retract {
		t.rowEnc[id] = append(t.rowEnc[id][:0], enc...)
	}
	return id
}

func (t *topN) ProcessBatch(_ int, b Batch, out Collector) error {
	defer b.Rec.Release()
	rec := b.Rec
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	ttl := t.ctx.StateTTL > 0
	if ttl {
		t.tbl.SetNow(t.ctx.Clock.Now().UnixMilli())
	}
	t.keyBuf, t.keyOffs = encodeKeyColumns(rec, t.spec.PartKeys, t.keyBuf, t.keyOffs)
	t.sorts.encode(rec, t.spec.Order)
	t.hashes = keyHashes(b, t.spec.PartKeys, &t.hashBuf)
	if t.retract {
		t.rowBuf, t.rowOffs = encodeKeyColumns(rec, t.allCols, t.rowBuf, t.rowOffs)
	}
	for i := 0; i < n; i++ {
		key := t.keyBuf[t.keyOffs[i]:t.keyOffs[i+1]]
		g, ok := t.tbl.LookupBytesIn(keyGroup(t.hashes[i], t.maxP), key)
		if ok && t.tbl.Expired(g) {
			t.dropSlot(g)
			ok = false
		}
		add := b.Op(i).IsAdd()
		if !ok {
			if !add {
				continue // a retraction of a row never seen (or expired): ignored, as Flink
			}
			g = t.tbl.InsertBytes(key, keyGroup(t.hashes[i], t.maxP))
		}
		var changed bool
		if add {
			changed = t.accumulate(g, i)
		} else {
			changed = t.retractRow(g, i)
		}
		if changed {
			t.tbl.Touch(g)
		}
		if len(t.bufs[g]) == 0 {
			t.dropSlot(g)
		}
	}
	t.rows.flush(rec)
	err := t.out.emit(t.rows, out)
	t.rows.endBatch()
	if ttl {
		t.tbl.Sweep(2*n+8, t.dropSlot)
	}
	if err != nil {
		return err
	}
	return t.tbl.MaybeEvict() // a tiered table evicts between batches
}

func (t *topN) dropSlot(g int32) {
	for _, id := range t.bufs[g] {
		t.rows.release(id)
	}
	t.bufs[g] = t.bufs[g][:0]
	t.tbl.Remove(g, 0, false)
}

// upperBound is the position after the rows of buf whose sort key is <= sk.
func (t *topN) upperBound(buf []int32, sk []byte) int {
	lo, hi := 0, len(buf)
	for lo < hi {
		m := (lo + hi) / 2
		if bytes.Compare(t.sortKey[buf[m]], sk) <= 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (t *topN) lowerBound(buf []int32, sk []byte) int {
	lo, hi := 0, len(buf)
	for lo < hi {
		m := (lo + hi) / 2
		if bytes.Compare(t.sortKey[buf[m]], sk) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// emitRanked adds a change of row id at rank q when q is in the range.
func (t *topN) emitRanked(k RowKind, id int32, q int) {
	if int64(q) >= t.spec.RankStart && int64(q) <= t.spec.RankEnd {
		t.out.add(k, id, int64(q))
	}
}

// accumulate adds row i (+I or +U) to slot g and emits the changes; it
// reports whether the slot changed.
func (t *topN) accumulate(g int32, i int) bool {
	sk := t.sorts.key(i)
	buf := t.bufs[g]
	pos := t.upperBound(buf, sk)
	N := int(t.spec.RankEnd)
	if !t.retract && pos >= N {
		return false // outside the top N for good
	}
	var enc []byte
	if t.retract {
		enc = t.rowBuf[t.rowOffs[i]:t.rowOffs[i+1]]
	}
	id := t.newRow(i, sk, enc, true)
	buf = append(buf, 0)
	copy(buf[pos+1:], buf[pos:])
	buf[pos] = id
	if pos < N {
		if t.withNum {
			// Every rank from the new row's down moves: rank q was held by
			// buf[q] (old order) and is now held by buf[q-1].
			q := pos + 1
			for ; q <= N && q < len(buf); q++ {
				t.emitRanked(UpdateBefore, buf[q], q)
				t.emitRanked(UpdateAfter, buf[q-1], q)
			}
			if q <= N {
				t.emitRanked(Insert, buf[q-1], q)
			}
		} else {
			if len(buf) > N {
				t.out.add(Delete, buf[N], 0)
			}
			t.out.add(Insert, id, 0)
		}
	}
	if !t.retract && len(buf) > N {
		for _, old := range buf[N:] {
			t.rows.release(old)
		}
		buf = buf[:N]
	}
	t.bufs[g] = buf
	return true
}

// retractRow removes the first row of slot g equal to row i (-U or -D)
// and emits the changes; it reports whether the slot changed.
func (t *topN) retractRow(g int32, i int) bool {
	sk := t.sorts.key(i)
	buf := t.bufs[g]
	enc := t.rowBuf[t.rowOffs[i]:t.rowOffs[i+1]]
	p := -1
	for j := t.lowerBound(buf, sk); j < len(buf) && bytes.Equal(t.sortKey[buf[j]], sk); j++ {
		if bytes.Equal(t.rowEnc[buf[j]], enc) {
			p = j
			break
		}
	}
	if p < 0 {
		return false // not there: ignored, as Flink (lenient)
	}
	N := int(t.spec.RankEnd)
	if p+1 <= N {
		if t.withNum {
			// The rows after it move up one rank: rank q-1 was held by
			// buf[q-2] and is now held by buf[q-1].
			last := min(len(buf), N+1)
			for q := p + 2; q <= last; q++ {
				t.emitRanked(UpdateBefore, buf[q-2], q-1)
				t.emitRanked(UpdateAfter, buf[q-1], q-1)
			}
			if len(buf) <= N {
				t.emitRanked(Delete, buf[len(buf)-1], len(buf))
			}
		} else {
			t.out.add(Delete, buf[p], 0)
			if len(buf) > N {
				t.out.add(Insert, buf[N], 0)
			}
		}
	}
	t.rows.release(buf[p])
	t.bufs[g] = append(buf[:p], buf[p+1:]...)
	return true
}

// Checkpointed state (see the type's comment).

const topNStateV1 = 1

type topNCodec struct{ t *topN }

func (c topNCodec) AppendKey(dst []byte, g int32) []byte { return append(dst, c.t.tbl.Key(g)...) }
func (c topNCodec) AppendValue(dst []byte, g int32) []byte {
	t := c.t
	dst = append(dst, topNStateV1)
	dst = binary.AppendUvarint(dst, uint64(len(t.bufs[g])))
	for _, id := range t.bufs[g] {
		dst = binary.AppendUvarint(dst, uint64(len(t.sortKey[id])))
		dst = append(dst, t.sortKey[id]...)
		dst = t.rows.appendRow(dst, id)
	}
	return dst
}

func (t *topN) Restore(r checkpoint.StateReader) error {
	kgs := t.ctx.KeyGroups
	if err := t.tbl.Restore(r, kgs.Start, kgs.End, t.decodeSlot); err != nil {
		return err
	}
	return t.tbl.MaybeEvict()
}

// decodeSlot fills slot g from a partition's encoded value (restore, and a
// tiered table's cold reads).
func (t *topN) decodeSlot(g int32, key, val []byte) (int64, bool, error) {
	if len(val) == 0 || val[0] != topNStateV1 {
		return 0, false, fmt.Errorf("%w: TopN state", errCorrupt)
	}
	v := val[1:]
	cnt, n := binary.Uvarint(v)
	if n <= 0 {
		return 0, false, errCorrupt
	}
	v = v[n:]
	buf := t.bufs[g][:0]
	for ; cnt > 0; cnt-- {
		l, n := binary.Uvarint(v)
		if n <= 0 || uint64(len(v)-n) < l {
			return 0, false, errCorrupt
		}
		sk := v[n : n+int(l)]
		v = v[n+int(l):]
		id := t.newRow(0, sk, nil, false)
		m, err := t.rows.decodeRow(v, id)
		if err != nil {
			return 0, false, err
		}
		if t.retract {
			t.rowEnc[id] = append(t.rowEnc[id][:0], v[:m]...)
		}
		v = v[m:]
		buf = append(buf, id)
	}
	if len(v) != 0 {
		return 0, false, fmt.Errorf("%w: TopN state", errCorrupt)
	}
	t.bufs[g] = buf
	return 0, false, nil
}

// clearSlot releases the rows of an evicted partition (between batches).
func (t *topN) clearSlot(g int32) {
	for _, id := range t.bufs[g] {
		t.rows.freeNow(id)
		t.sortKey[id] = t.sortKey[id][:0]
		if t.retract {
			t.rowEnc[id] = t.rowEnc[id][:0]
		}
	}
	t.bufs[g] = nil
}

// slotBytes estimates a partition's memory: per row its id, sort key,
// columns and (updating input) encoding.
func (t *topN) slotBytes(g int32) int {
	n := 24
	for _, id := range t.bufs[g] {
		n += 4 + 24 + cap(t.sortKey[id]) + t.rows.rowBytes(id)
		if t.retract {
			n += 24 + cap(t.rowEnc[id])
		}
	}
	return n
}

// rowStore keeps rows column by column (a keyStore per column) under row
// ids. Rows taken from a batch are written at its end, column by column
// (flush); ids released during a batch are reused only after it
// (endBatch), so the changes of the batch can still read them.
type rowStore struct {
	cols     []keyStore
	free     []int32
	n        int32
	pendIDs  []int32
	pendRows []int32
	released []int32
}

func newRowStore(cols catalog.Schema, what string) (*rowStore, error) {
	s := &rowStore{}
	for _, c := range cols {
		ks, err := newKeyStore(c.Type)
		if err != nil {
			return nil, fmt.Errorf("%s cannot keep column %s: %w", what, c.Name, err)
		}
		s.cols = append(s.cols, ks)
	}
	return s, nil
}

// take returns a fresh row id; fromBatch: for row i of the current batch.
func (s *rowStore) take(i int, fromBatch bool) int32 {
	var id int32
	if k := len(s.free); k > 0 {
		id, s.free = s.free[k-1], s.free[:k-1]
	} else {
		id = s.n
		s.n++
	}
	if fromBatch {
		s.pendIDs = append(s.pendIDs, id)
		s.pendRows = append(s.pendRows, int32(i))
	}
	return id
}

func (s *rowStore) release(id int32) { s.released = append(s.released, id) }

// flush writes the columns of the rows taken from rec.
func (s *rowStore) flush(rec arrow.Record) {
	if len(s.pendIDs) == 0 {
		return
	}
	for c, ks := range s.cols {
		putRows(ks, s.pendIDs, s.pendRows, rec.Column(c))
	}
	s.pendIDs, s.pendRows = s.pendIDs[:0], s.pendRows[:0]
}

func (s *rowStore) endBatch() {
	s.free = append(s.free, s.released...)
	s.released = s.released[:0]
}

func (s *rowStore) appendRow(dst []byte, id int32) []byte {
	for _, ks := range s.cols {
		dst = ks.appendEncoded(dst, id)
	}
	return dst
}

// decodeRow reads a row appendRow wrote into id; it returns its length.
func (s *rowStore) decodeRow(src []byte, id int32) (int, error) {
	off := 0
	for _, ks := range s.cols {
		m, err := ks.decode(src[off:], id)
		if err != nil {
			return 0, err
		}
		off += m
	}
	return off, nil
}

// changes collects the changelog of a batch as row ids, kinds and ranks,
// and builds it into one output batch.
type changes struct {
	mem      memory.Allocator
	schema   *arrow.Schema
	withRank bool
	ids      []int32
	ops      []RowKind
	ranks    []int64
}

func (c *changes) init(mem memory.Allocator, schema *arrow.Schema, withRank bool) {
	c.mem, c.schema, c.withRank = mem, schema, withRank
}

func (c *changes) add(k RowKind, id int32, rank int64) {
	c.ids = append(c.ids, id)
	c.ops = append(c.ops, k)
	c.ranks = append(c.ranks, rank)
}

// emit builds the collected changes (the output's last column is the rank:
// the ranks when withRank, else zeros, never read) and hands them to out.
func (c *changes) emit(rows *rowStore, out Collector) error {
	if len(c.ids) == 0 {
		return nil
	}
	cols := make([]arrow.Array, 0, len(rows.cols)+1)
	for _, ks := range rows.cols {
		if sk, ok := ks.(*typedKeys[string]); ok {
			cols = append(cols, gatherStrings(c.mem, sk, c.ids))
			continue
		}
		cols = append(cols, ks.gather(c.ids, c.mem))
	}
	if !c.withRank {
		for i := range c.ranks {
			c.ranks[i] = 0
		}
	}
	cols = append(cols, buildArray(c.mem, arrow.PrimitiveTypes.Int64, c.ranks, nil))
	rec := expr.NewRecord(c.schema, cols, int64(len(c.ids)))
	for _, a := range cols {
		a.Release()
	}
	ops := append([]RowKind(nil), c.ops...)
	c.ids, c.ops, c.ranks = c.ids[:0], c.ops[:0], c.ranks[:0]
	return out.Collect(Batch{Rec: rec, Ops: ops})
}

// gatherStrings builds the string array of the values of k at ids (as
// k.gather) into buffers of their exact sizes: the bytes are counted
// first, so the data buffer is allocated once instead of growing by
// doubling (the emitted rows of the TopN and the deduplication carry the
// bids' strings).
func gatherStrings(mem memory.Allocator, k *typedKeys[string], ids []int32) arrow.Array {
	n, total, nulls := len(ids), 0, 0
	for _, id := range ids {
		if k.valid[id] {
			total += len(k.vals[id])
		} else {
			nulls++
		}
	}
	if total > math.MaxInt32 || k.dt.ID() != arrow.STRING {
		return k.gather(ids, mem) // the builder reports the overflow
	}
	offBuf := memory.NewResizableBuffer(mem)
	offBuf.Resize((n + 1) * 4)
	offs := arrow.Int32Traits.CastFromBytes(offBuf.Bytes())[:n+1]
	dataBuf := memory.NewResizableBuffer(mem)
	dataBuf.Resize(total)
	data := dataBuf.Bytes()
	var validBuf *memory.Buffer
	var bits []byte
	if nulls > 0 {
		validBuf = memory.NewResizableBuffer(mem)
		validBuf.Resize(int(bitutil.BytesForBits(int64(n))))
		bits = validBuf.Bytes()
		clear(bits)
	}
	w := 0
	offs[0] = 0
	for j, id := range ids {
		if k.valid[id] {
			w += copy(data[w:], k.vals[id])
			if bits != nil {
				bitutil.SetBit(bits, j)
			}
		}
		offs[j+1] = int32(w)
	}
	d := array.NewData(k.dt, n, []*memory.Buffer{validBuf, offBuf, dataBuf}, nil, nulls, 0)
	if validBuf != nil {
		validBuf.Release()
	}
	offBuf.Release()
	dataBuf.Release()
	a := array.MakeFromData(d)
	d.Release()
	return a
}
