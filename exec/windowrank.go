package exec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/planner"
)

// windowRank is the Window TopN and the window deduplication
// (planner.WindowRankOp, Flink's WindowRank and WindowDeduplicate):
// append-only, the rows of rank RankStart..RankEnd of each window and
// partition key, emitted once, in rank order, when the watermark passes
// the window's end (window_end - 1 <= watermark).
//
// # Buffers
//
// A slot of the state table is one (partition keys, window_start,
// window_end); it holds a bounded buffer of row ids sorted by the ORDER BY
// (an order-preserving byte encoding of the sort columns, so comparing is
// bytes.Compare) and, among equal sort keys, by arrival (a deduplication
// keeping the last row puts a new equal row first instead). The buffer
// never holds a row whose rank is past RankEnd: such a row can only fall
// further as rows arrive. Rows are stored column by column (keyStore per
// input column) under their row id; freed row ids are reused.
//
// # Late rows
//
// A row whose window has fired (window_end - 1 <= the watermark of its key
// group) is dropped and counted (Metrics.LateRecords), as by the window
// aggregation; so is a row with a NULL window_end.
//
// # State
//
// Slots (key: window_end in 8 order-preserving bytes (appendEndKey), then
// partition keys, window_start and window_end as encodeKeyColumns writes
// them; value: format, window end, then each buffered row: its sort key
// and its columns), one event-time timer per slot at window_end - 1, and,
// per subtask, the watermark of each of its key groups (as windowAgg: a
// restored key group never judges rows by a lower watermark than its
// windows fired at, so every window fires exactly once across restores
// and rescaling). As the window aggregation's, the slots of fired windows
// leave the state as one range deletion per key group (format 2; format
// 1 slots, without the leading end, are moved to the new key at restore).
type windowRank struct {
	spec   *planner.WindowRankOp
	ctx    *OpContext
	mem    memory.Allocator
	schema *arrow.Schema
	maxP   int
	nIn    int // input columns

	bufs   [][]int32 // by slot: row ids in rank order
	winEnd []int64   // by slot

	cols     []keyStore // by input column: values by row id
	sortKeys [][]byte   // by row id
	freeRows []int32
	nRows    int32

	windowState
	slotKey []byte

	// scratch
	slotCols []int
	keyBuf   []byte
	keyOffs  []int
	sorts    sortEncoder
	hashes   []uint64
	hashBuf  []uint64 // keyHashes computes into it (hashes may be the batch's own)
	outRows  []int32
	pendIDs  []int32 // rows taken by the batch: their ids and batch rows
	pendRows []int32
	outRanks []int64
	toFree   []int32
}

func init() {
	RegisterOperator(func(s *planner.WindowRankOp, ctx *OpContext) (Operator, error) { return newWindowRank(s, ctx) })
}

func newWindowRank(s *planner.WindowRankOp, ctx *OpContext) (*windowRank, error) {
	nIn := len(s.Out)
	if s.OutputRank {
		nIn--
	}
	w := &windowRank{spec: s, ctx: ctx, mem: ctx.Mem, schema: s.Out.Arrow(), maxP: max(ctx.KeyGroups.MaxParallelism, 1), nIn: nIn,
		windowState: windowState{kgWatermark: newKGWatermark(), opID: s.ID, opCtx: ctx}}
	for i := 0; i < nIn; i++ {
		ks, err := newKeyStore(s.Out[i].Type)
		if err != nil {
			return nil, fmt.Errorf("Window TopN cannot keep column %s: %w", s.Out[i].Name, err)
		}
		w.cols = append(w.cols, ks)
	}
	w.slotCols = append(append(append([]int{}, s.PartKeys...), s.WinStart), s.WinEnd)
	tbl, err := state.NewTable(state.Options{OpID: s.ID, MaxParallelism: w.maxP, Checkpointing: ctx.Checkpointing}, rankCodec{w})
	if err != nil {
		return nil, err
	}
	tbl.OnGrow = func(n int) {
		w.bufs = state.Grow(w.bufs, n, nil)
		w.winEnd = state.Grow(w.winEnd, n, 0)
	}
	w.tbl = tbl
	// The timers are not checkpointed: a restore derives them from the
	// slots (their window ends).
	if w.timers, err = state.NewTimers(s.ID, "event", w.maxP, false); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *windowRank) Open(*OpContext) error  { return nil }
func (w *windowRank) Finish(Collector) error { return nil }
func (w *windowRank) Close() error {
	w.tbl, w.bufs, w.cols, w.sortKeys = nil, nil, nil, nil
	return nil
}

func (w *windowRank) wmFor(kg int) int64 { return w.kgWatermark.wmFor(kg, w.ctx.KeyGroups.Start) }

// newRow stores row i of rec under a fresh row id with sort key sk.
func (w *windowRank) newRow(rec arrow.Record, i int, sk []byte) int32 {
	var id int32
	if n := len(w.freeRows); n > 0 {
		id, w.freeRows = w.freeRows[n-1], w.freeRows[:n-1]
	} else {
		id = w.nRows
		w.nRows++
		w.sortKeys = append(w.sortKeys, nil)
	}
	if rec != nil { // its columns are stored at the end of the batch
		w.pendIDs = append(w.pendIDs, id)
		w.pendRows = append(w.pendRows, int32(i))
	}
	w.sortKeys[id] = append(w.sortKeys[id][:0], sk...)
	return id
}

func (w *windowRank) ProcessBatch(_ int, b Batch, out Collector) error {
	defer b.Rec.Release()
	rec := b.Rec
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	ecol, ok := rec.Column(w.spec.WinEnd).(*array.Timestamp)
	if !ok {
		return fmt.Errorf("window_end is not a TIMESTAMP")
	}
	ends := ecol.TimestampValues()
	nulls := ecol.NullN() > 0 || rec.Column(w.spec.WinStart).NullN() > 0
	w.keyBuf, w.keyOffs = encodeKeyColumns(rec, w.slotCols, w.keyBuf, w.keyOffs)
	w.sorts.encode(rec, w.spec.Order)
	w.hashes = keyHashes(b, w.spec.PartKeys, &w.hashBuf)
	late := 0
	for i := 0; i < n; i++ {
		if nulls && (ecol.IsNull(i) || rec.Column(w.spec.WinStart).IsNull(i)) {
			late++
			continue
		}
		end := int64(ends[i])
		kg := keyGroup(w.hashes[i], w.maxP)
		if end-1 <= w.wmFor(kg) {
			late++
			continue
		}
		w.slotKey = append(appendEndKey(w.slotKey[:0], end), w.keyBuf[w.keyOffs[i]:w.keyOffs[i+1]]...)
		key := w.slotKey
		g, ok := w.tbl.LookupBytes(key)
		if !ok {
			g = w.tbl.InsertBytes(key, kg)
			w.winEnd[g] = end
			w.byEnd.add(end)
			w.timers.Register(kg, end-1, key)
		}
		if w.offer(g, rec, i, w.sorts.key(i)) {
			w.tbl.Touch(g)
		}
	}
	// Store the columns of the rows taken, column by column. A row id
	// freed and taken again within the batch is written twice, in order:
	// the later row wins.
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

// putRows stores rows[j] of col under row id ids[j], for every j, with one
// type switch per column.
func putRows(ks keyStore, ids, rows []int32, col arrow.Array) {
	switch k := ks.(type) {
	case *typedKeys[int32]:
		switch c := col.(type) {
		case *array.Int32:
			putNums(k, ids, rows, c.Int32Values(), col)
			return
		case *array.Int8:
			putNums(k, ids, rows, c.Int8Values(), col)
			return
		case *array.Int16:
			putNums(k, ids, rows, c.Int16Values(), col)
			return
		case *array.Date32:
			putNums(k, ids, rows, c.Date32Values(), col)
			return
		case *array.Time32:
			putNums(k, ids, rows, c.Time32Values(), col)
			return
		}
	case *typedKeys[int64]:
		switch c := col.(type) {
		case *array.Int64:
			putNums(k, ids, rows, c.Int64Values(), col)
			return
		case *array.Duration:
			putNums(k, ids, rows, c.DurationValues(), col)
			return
		}
	case *typedKeys[arrow.Timestamp]:
		if c, ok := col.(*array.Timestamp); ok {
			putNums(k, ids, rows, c.TimestampValues(), col)
			return
		}
	case *typedKeys[float64]:
		switch c := col.(type) {
		case *array.Float64:
			putNums(k, ids, rows, c.Float64Values(), col)
			return
		case *array.Float32:
			putNums(k, ids, rows, c.Float32Values(), col)
			return
		}
	case *typedKeys[string]:
		if c, ok := col.(*array.String); ok {
			growKeys(k, ids)
			for j, id := range ids {
				r := int(rows[j])
				if k.valid[id] = c.IsValid(r); k.valid[id] {
					k.vals[id] = strings.Clone(c.Value(r))
				} else {
					k.vals[id] = ""
				}
			}
			return
		}
	}
	for j, id := range ids { // other types (DECIMAL, BOOLEAN, ...)
		ks.put(id, col, int(rows[j]))
	}
}

func growKeys[T scalar](k *typedKeys[T], ids []int32) {
	top := int32(-1)
	for _, id := range ids {
		top = max(top, id)
	}
	for int(top) >= len(k.vals) {
		var zero T
		k.vals = append(k.vals, zero)
		k.valid = append(k.valid, false)
	}
}

func putNums[S ~int8 | ~int16 | ~int32 | ~int64 | ~float32 | ~float64, T int32 | int64 | float64 | arrow.Timestamp](k *typedKeys[T], ids, rows []int32, src []S, col arrow.Array) {
	growKeys(k, ids)
	if col.NullN() == 0 {
		for j, id := range ids {
			k.vals[id], k.valid[id] = T(src[rows[j]]), true
		}
		return
	}
	bm, off := col.NullBitmapBytes(), col.Data().Offset()
	for j, id := range ids {
		r := int(rows[j])
		k.valid[id] = bitutil.BitIsSet(bm, off+r)
		k.vals[id] = T(src[r])
	}
}

// offer puts row i (sort key sk) into slot g's buffer if it ranks within
// RankEnd; it reports whether the buffer changed.
func (w *windowRank) offer(g int32, rec arrow.Record, i int, sk []byte) bool {
	buf := w.bufs[g]
	keepLast := w.spec.Dedup && w.spec.KeepLast
	// lo: first row not less than sk; pos: where sk goes (after equal rows,
	// or before them when keeping the last row).
	lo, hi := 0, len(buf)
	for lo < hi {
		m := (lo + hi) / 2
		if bytes.Compare(w.sortKeys[buf[m]], sk) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	pos := lo
	if !keepLast {
		for pos < len(buf) && bytes.Equal(w.sortKeys[buf[pos]], sk) {
			pos++
		}
	}
	limit := w.spec.RankEnd
	switch w.spec.RankType {
	case planner.RowNumber:
		if int64(pos) >= limit {
			return false
		}
	case planner.Rank:
		if int64(lo)+1 > limit {
			return false
		}
	case planner.DenseRank:
		if w.denseRankAt(buf, lo) > limit {
			return false
		}
	}
	id := w.newRow(rec, i, sk)
	buf = append(buf, 0)
	copy(buf[pos+1:], buf[pos:])
	buf[pos] = id
	// Drop the rows pushed past RankEnd.
	keep := len(buf)
	switch w.spec.RankType {
	case planner.RowNumber:
		keep = min(keep, int(limit))
	case planner.Rank:
		for j := 1; j < len(buf); j++ {
			if !bytes.Equal(w.sortKeys[buf[j]], w.sortKeys[buf[j-1]]) && int64(j)+1 > limit {
				keep = j
				break
			}
		}
	case planner.DenseRank:
		r := int64(1)
		for j := 1; j < len(buf); j++ {
			if !bytes.Equal(w.sortKeys[buf[j]], w.sortKeys[buf[j-1]]) {
				if r++; r > limit {
					keep = j
					break
				}
			}
		}
	}
	for _, id := range buf[keep:] {
		w.freeRows = append(w.freeRows, id)
	}
	w.bufs[g] = buf[:keep]
	return true
}

// denseRankAt is the dense rank of a row placed before buf[p] (after
// every row less than it): one more than the distinct keys of buf[:p].
func (w *windowRank) denseRankAt(buf []int32, p int) int64 {
	r := int64(1)
	for j := 0; j < p; j++ {
		if j == 0 || !bytes.Equal(w.sortKeys[buf[j]], w.sortKeys[buf[j-1]]) {
			r++
		}
	}
	return r
}

func (w *windowRank) ProcessWatermark(wm int64, out Collector) error {
	w.advance(wm)
	w.outRows, w.outRanks, w.toFree = w.outRows[:0], w.outRanks[:0], w.toFree[:0]
	flushAt := w.ctx.fireBatch()
	err := w.timers.Advance(w.wm, func(kg int, ts int64, key []byte) error {
		g, ok := w.tbl.LookupBytes(key)
		if !ok {
			return nil
		}
		w.emitSlot(g)
		w.toFree = append(w.toFree, g)
		if len(w.outRows) >= flushAt {
			// a batch at a time (as the window aggregation)
			return w.flushFired(out)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := w.flushFired(out); err != nil {
		return err
	}
	if wm > w.forwarded {
		w.forwarded = wm
		return out.EmitWatermark(wm)
	}
	return nil
}

// flushFired emits the rows of the windows fired so far (if any) and
// frees their slots.
func (w *windowRank) flushFired(out Collector) error {
	var rec arrow.Record
	if len(w.outRows) > 0 {
		rec = w.results() // before the slots' rows are freed
	}
	for _, g := range w.toFree {
		w.freeSlot(g)
	}
	w.outRows, w.outRanks, w.toFree = w.outRows[:0], w.outRanks[:0], w.toFree[:0]
	if rec == nil {
		return nil
	}
	return out.Collect(Batch{Rec: rec})
}

// emitSlot adds the rows of slot g within the rank range to the output.
func (w *windowRank) emitSlot(g int32) {
	buf := w.bufs[g]
	rank := int64(0)
	for j, id := range buf {
		switch w.spec.RankType {
		case planner.RowNumber:
			rank = int64(j) + 1
		case planner.Rank:
			if j == 0 || !bytes.Equal(w.sortKeys[id], w.sortKeys[buf[j-1]]) {
				rank = int64(j) + 1
			}
		case planner.DenseRank:
			if j == 0 || !bytes.Equal(w.sortKeys[id], w.sortKeys[buf[j-1]]) {
				rank++
			}
		}
		if rank > w.spec.RankEnd {
			break
		}
		if rank >= w.spec.RankStart {
			w.outRows = append(w.outRows, id)
			w.outRanks = append(w.outRanks, rank)
		}
	}
}

func (w *windowRank) freeSlot(g int32) {
	w.freeRows = append(w.freeRows, w.bufs[g]...)
	w.bufs[g] = w.bufs[g][:0]
	w.byEnd.free(w.tbl, g, w.winEnd[g])
	w.winEnd[g] = 0
}

func (w *windowRank) results() arrow.Record {
	cols := make([]arrow.Array, 0, len(w.cols)+1)
	for _, ks := range w.cols {
		cols = append(cols, ks.gather(w.outRows, w.mem))
	}
	if w.spec.OutputRank {
		cols = append(cols, buildArray(w.mem, arrow.PrimitiveTypes.Int64, w.outRanks, nil))
	}
	rec := expr.NewRecord(w.schema, cols, int64(len(w.outRows)))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// sortEncoder writes each row's ORDER BY key so that bytes.Compare
// orders rows as the ORDER BY does: per column a null flag (0: NULL, the
// smallest value, as in Flink) and an order-preserving value (integers and
// times sign-flipped big-endian, floats by their flipped bits, strings
// with 0x00 escaped and a 0x00 0x00 terminator), all bytes inverted for
// DESC. Row i's key is key(i); the buffers are reused.
type sortEncoder struct {
	buf        []byte
	offs       []int
	cur, start []int
}

func (e *sortEncoder) key(i int) []byte { return e.buf[e.offs[i]:e.offs[i+1]] }

func (e *sortEncoder) encode(rec arrow.Record, order []planner.SortKey) {
	n := int(rec.NumRows())
	buf, offs := e.buf, e.offs
	if cap(offs) < n+1 {
		offs = make([]int, n+1)
	}
	offs = offs[:n+1]
	for i := range offs {
		offs[i] = 0
	}
	for _, k := range order {
		col := rec.Column(k.Col)
		if s, ok := col.(*array.String); ok {
			for i := 0; i < n; i++ {
				offs[i+1] += 3 + len(s.Value(i)) + strings.Count(s.Value(i), "\x00")
			}
			continue
		}
		wd := 1 + sortWidth(col.DataType())
		for i := 0; i < n; i++ {
			offs[i+1] += wd
		}
	}
	for i := 0; i < n; i++ {
		offs[i+1] += offs[i]
	}
	if cap(buf) < offs[n] {
		buf = make([]byte, offs[n])
	}
	buf = buf[:offs[n]]
	if cap(e.cur) < n {
		e.cur, e.start = make([]int, n), make([]int, n)
	}
	cur := e.cur[:n]
	e.start = e.start[:n]
	copy(cur, offs[:n])
	for _, k := range order {
		col := rec.Column(k.Col)
		nulls := col.NullN() > 0
		copy(e.start, cur)
		for i := 0; i < n; i++ {
			p := cur[i]
			if nulls && col.IsNull(i) {
				wd := 1 + sortWidth(col.DataType())
				if _, ok := col.(*array.String); ok {
					wd = 3
				}
				for j := p; j < p+wd; j++ {
					buf[j] = 0
				}
				cur[i] = p + wd
				continue
			}
			buf[p] = 1
			cur[i] = p + 1
		}
		putInt := func(i int, v int64) {
			binary.BigEndian.PutUint64(buf[cur[i]:], uint64(v)^(1<<63))
			cur[i] += 8
		}
		switch c := col.(type) {
		case *array.Int8:
			for i, v := range c.Int8Values() {
				if !nulls || c.IsValid(i) {
					putInt(i, int64(v))
				}
			}
		case *array.Int16:
			for i, v := range c.Int16Values() {
				if !nulls || c.IsValid(i) {
					putInt(i, int64(v))
				}
			}
		case *array.Int32:
			for i, v := range c.Int32Values() {
				if !nulls || c.IsValid(i) {
					putInt(i, int64(v))
				}
			}
		case *array.Int64:
			for i, v := range c.Int64Values() {
				if !nulls || c.IsValid(i) {
					putInt(i, v)
				}
			}
		case *array.Date32:
			for i, v := range c.Date32Values() {
				if !nulls || c.IsValid(i) {
					putInt(i, int64(v))
				}
			}
		case *array.Time32:
			for i, v := range c.Time32Values() {
				if !nulls || c.IsValid(i) {
					putInt(i, int64(v))
				}
			}
		case *array.Timestamp:
			for i, v := range c.TimestampValues() {
				if !nulls || c.IsValid(i) {
					putInt(i, int64(v))
				}
			}
		case *array.Duration:
			for i, v := range c.DurationValues() {
				if !nulls || c.IsValid(i) {
					putInt(i, int64(v))
				}
			}
		case *array.MonthInterval:
			for i, v := range c.MonthIntervalValues() {
				if !nulls || c.IsValid(i) {
					putInt(i, int64(v))
				}
			}
		case *array.Float32:
			for i, v := range c.Float32Values() {
				if !nulls || c.IsValid(i) {
					binary.BigEndian.PutUint64(buf[cur[i]:], sortableFloat(float64(v)))
					cur[i] += 8
				}
			}
		case *array.Float64:
			for i, v := range c.Float64Values() {
				if !nulls || c.IsValid(i) {
					binary.BigEndian.PutUint64(buf[cur[i]:], sortableFloat(v))
					cur[i] += 8
				}
			}
		case *array.Decimal128:
			for i, v := range c.Values() {
				if !nulls || c.IsValid(i) {
					binary.BigEndian.PutUint64(buf[cur[i]:], uint64(v.HighBits())^(1<<63))
					binary.BigEndian.PutUint64(buf[cur[i]+8:], v.LowBits())
					cur[i] += 16
				}
			}
		case *array.Boolean:
			for i := 0; i < n; i++ {
				if !nulls || c.IsValid(i) {
					if c.Value(i) {
						buf[cur[i]] = 1
					} else {
						buf[cur[i]] = 0
					}
					cur[i]++
				}
			}
		case *array.String:
			for i := 0; i < n; i++ {
				if nulls && c.IsNull(i) {
					continue
				}
				p := cur[i]
				s := c.Value(i)
				for j := 0; j < len(s); j++ {
					buf[p] = s[j]
					p++
					if s[j] == 0 {
						buf[p] = 0xff
						p++
					}
				}
				buf[p], buf[p+1] = 0, 0
				cur[i] = p + 2
			}
		}
		if k.Desc {
			for i := 0; i < n; i++ {
				for j := e.start[i]; j < cur[i]; j++ {
					buf[j] = ^buf[j]
				}
			}
		}
	}
	e.buf, e.offs = buf, offs
}

// sortWidth is the width of a fixed-width sort value.
func sortWidth(dt arrow.DataType) int {
	switch dt.ID() {
	case arrow.DECIMAL128:
		return 16
	case arrow.BOOL:
		return 1
	}
	return 8
}

// sortableFloat maps v to bits that order as the numbers do (-0 as 0, NaN
// above +Inf, as Flink orders doubles).
func sortableFloat(v float64) uint64 {
	if v == 0 {
		v = 0
	}
	if v != v {
		return math.MaxUint64
	}
	b := math.Float64bits(v)
	if b&(1<<63) != 0 {
		return ^b
	}
	return b | 1<<63
}

// Checkpointed state (see the type's comment).

// windowRankStateV1: the key is the encoded partition keys and window
// bounds; windowRankStateV2: the window end (appendEndKey) before them.
const (
	windowRankStateV1 = 1
	windowRankStateV2 = 2
)

type rankCodec struct{ w *windowRank }

func (c rankCodec) AppendKey(dst []byte, g int32) []byte { return append(dst, c.w.tbl.Key(g)...) }
func (c rankCodec) AppendValue(dst []byte, g int32) []byte {
	w := c.w
	dst = append(dst, windowRankStateV2)
	dst = binary.AppendVarint(dst, w.winEnd[g])
	dst = binary.AppendUvarint(dst, uint64(len(w.bufs[g])))
	for _, id := range w.bufs[g] {
		dst = binary.AppendUvarint(dst, uint64(len(w.sortKeys[id])))
		dst = append(dst, w.sortKeys[id]...)
		for _, ks := range w.cols {
			dst = ks.appendEncoded(dst, id)
		}
	}
	return dst
}

func (w *windowRank) Restore(r checkpoint.StateReader) error {
	kgs := w.ctx.KeyGroups
	var rekey []int32 // slots in the format 1 key layout
	err := w.tbl.Restore(r, kgs.Start, kgs.End, func(g int32, key, val []byte) (int64, bool, error) {
		if len(val) == 0 || (val[0] != windowRankStateV1 && val[0] != windowRankStateV2) {
			return 0, false, fmt.Errorf("%w: window rank state", errCorrupt)
		}
		if val[0] == windowRankStateV1 {
			rekey = append(rekey, g)
		}
		v := val[1:]
		end, n, err := readVarint(v)
		if err != nil {
			return 0, false, err
		}
		v = v[n:]
		cnt, n := binary.Uvarint(v)
		if n <= 0 {
			return 0, false, errCorrupt
		}
		v = v[n:]
		w.winEnd[g] = end
		buf := w.bufs[g][:0]
		for ; cnt > 0; cnt-- {
			l, n := binary.Uvarint(v)
			if n <= 0 || uint64(len(v)-n) < l {
				return 0, false, errCorrupt
			}
			id := w.newRow(nil, 0, v[n:n+int(l)])
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
			return 0, false, fmt.Errorf("%w: window rank state", errCorrupt)
		}
		w.bufs[g] = buf
		w.byEnd.add(end)
		return 0, false, nil
	})
	if err != nil {
		return err
	}
	for _, g := range rekey {
		w.slotKey = append(appendEndKey(w.slotKey[:0], w.winEnd[g]), w.tbl.Key(g)...)
		w.tbl.Rekey(g, w.slotKey)
	}
	err = w.timers.RestoreFrom(r, kgs.Start, kgs.End, w.tbl, func(g int32, kg int) error {
		w.keyBuf = append(w.keyBuf[:0], w.tbl.Key(g)...)
		w.timers.Register(kg, w.winEnd[g]-1, w.keyBuf)
		return nil
	})
	if err != nil {
		return err
	}
	return w.kgWatermark.restore(w.spec.ID, w.ctx, r)
}
