package exec

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/planner"
)

// InputWatermarkOperator is a head operator of a task that also wants the
// watermark of each input edge (the minimum over that edge's channels),
// before ProcessWatermark sees the combined one. It must not emit.
type InputWatermarkOperator interface {
	ProcessInputWatermark(input int, wm int64) error
}

// channelWatermarkHandler is a gate handler told of each channel's
// watermark (the subtask: it hands the input's to an
// InputWatermarkOperator).
type channelWatermarkHandler interface {
	onChannelWatermark(ch int) error
}

// intervalJoin is the event-time interval join (planner.IntervalJoinOp,
// Flink's RowTimeIntervalJoin): a left row l and a right row r join when
// their keys are equal, LowerBound <= l.ts - r.ts <= UpperBound and the
// residual holds.
//
// # Rows and their lifetime
//
// Each side's rows wait in state for partners of the other side: a left
// row at time t can still be matched by right rows up to t - LowerBound, a
// right row at s by left rows up to s + UpperBound. A row is dropped (and,
// on the outer side of LEFT/RIGHT/FULL, emitted once padded with NULLs if
// it never matched) when the watermark reaches that time: an event-time
// timer per (slot, expiry).
//
// # Late rows
//
// A row whose time is not above the watermark of its own input (the input
// edge's, ProcessInputWatermark) is late: dropped and counted
// (Metrics.LateRecords). Judging a row by its own input's watermark rather
// than by the combined one (which depends on how the two inputs
// interleave) makes the result independent of timing: every pair of
// non-late rows within the bound joins, and a non-late outer row is padded
// iff no non-late row matches it. (A non-late row is above the combined
// watermark, so a partner it matches has not expired.) The inputs'
// watermarks are checkpointed, so a restored job judges rows as the
// uninterrupted one.
//
// # Output
//
// Append-only: pairs as they are found (the probing batch's rows with the
// stored partners), padded rows when they expire. The watermark is held
// back by max(-LowerBound, UpperBound, 0) (Flink's max output delay), so
// no padded row is behind the watermark downstream.
//
// # State
//
// A slot of the state table is (side, join key); its value is the side's
// rows under that key: per row its time, whether it matched, and its
// columns. Rows with a NULL key (that match nothing) are never stored: an
// outer one is padded at once.
type intervalJoin struct {
	spec   *planner.IntervalJoinOp
	ctx    *OpContext
	mem    memory.Allocator
	schema *arrow.Schema
	maxP   int
	delay  int64

	sides [2]ijSide
	tbl   *state.Table
	rows  [][]int32 // by slot: row ids of the slot's side
	side  []uint8   // by slot
	// pending is the earliest cleanup timer set for the slot (MaxInt64:
	// none): as Flink's, a slot has one timer at its earliest expiry, not
	// one per row, set again for the rows left when it fires.
	pending []int64
	timer   *state.Timers

	wm        int64 // combined watermark
	forwarded int64
	staleWM   []int

	residual expr.Evaluator

	// scratch
	keyBuf    []byte
	keyOffs   []int
	hashes    []uint64
	hashBuf   []uint64 // keyHashes computes into it (hashes may be the batch's own)
	slotKey   []byte
	times     []int64
	pairIn    []int32 // batch rows of pairs
	pairID    []int32 // stored partner ids
	storeRows []int32
	storeIDs  []int32
	matched   []bool
	nulls     []bool
	padRows   []int32
	padIDs    [2][]int32
	toFree    [2][]int32
}

type ijSide struct {
	cols    []keyStore
	types   []arrow.DataType
	keys    []int
	timeCol int
	pads    bool // an outer side: unmatched rows are emitted padded
	times   []int64
	matched []bool
	free    []int32
	n       int32
	wm      int64 // the input's watermark
	schema  *arrow.Schema
}

func init() {
	RegisterOperator(func(s *planner.IntervalJoinOp, ctx *OpContext) (Operator, error) { return newIntervalJoin(s, ctx) })
}

func newIntervalJoin(s *planner.IntervalJoinOp, ctx *OpContext) (*intervalJoin, error) {
	j := &intervalJoin{spec: s, ctx: ctx, mem: ctx.Mem, schema: s.Out.Arrow(), maxP: max(ctx.KeyGroups.MaxParallelism, 1),
		delay: s.Delay(), wm: NoWatermark, forwarded: NoWatermark}
	if j.mem == nil {
		j.mem = memory.DefaultAllocator
	}
	for i, js := range []planner.JoinSide{s.Left, s.Right} {
		sd := &j.sides[i]
		sd.keys, sd.wm, sd.schema = js.Keys, NoWatermark, js.Schema.Arrow()
		sd.timeCol = s.LeftTime
		sd.pads = s.Type.PadsRight()
		if i == 1 {
			sd.timeCol, sd.pads = s.RightTime, s.Type.PadsLeft()
		}
		for _, c := range js.Schema {
			ks, err := newKeyStore(c.Type)
			if err != nil {
				return nil, fmt.Errorf("interval join cannot keep column %s: %w", c.Name, err)
			}
			sd.cols = append(sd.cols, ks)
			sd.types = append(sd.types, c.Type.ArrowType())
		}
	}
	if s.Residual != nil {
		var opts expr.Options
		if ctx.Clock != nil {
			opts.Now = ctx.Clock.Now
		}
		ev, err := expr.CompileWith(s.Residual, opts)
		if err != nil {
			return nil, err
		}
		j.residual = ev
	}
	tbl, err := state.NewTable(state.Options{OpID: s.ID, MaxParallelism: j.maxP, Checkpointing: ctx.Checkpointing}, ijCodec{j})
	if err != nil {
		return nil, err
	}
	tbl.OnGrow = func(n int) {
		j.rows = state.Grow(j.rows, n, nil)
		j.side = state.Grow(j.side, n, 0)
		j.pending = state.Grow(j.pending, n, math.MaxInt64)
	}
	j.tbl = tbl
	// The timers are not checkpointed: a restore sets them from the slots.
	if j.timer, err = state.NewTimers(s.ID, "event", j.maxP, false); err != nil {
		return nil, err
	}
	return j, nil
}

func (j *intervalJoin) Open(*OpContext) error  { return nil }
func (j *intervalJoin) Finish(Collector) error { return nil }
func (j *intervalJoin) Close() error {
	j.tbl, j.rows = nil, nil
	for i := range j.sides {
		j.sides[i].cols = nil
	}
	return nil
}

func (j *intervalJoin) ProcessInputWatermark(input int, wm int64) error {
	if input >= 0 && input < 2 && wm > j.sides[input].wm {
		j.sides[input].wm = wm
	}
	return nil
}

// expiry is the watermark at which a row of side at time t can match no
// more rows.
func (j *intervalJoin) expiry(side int, t int64) int64 {
	if side == 0 {
		return t - j.spec.LowerBound
	}
	return t + j.spec.UpperBound
}

// timesOf returns the time attribute column in milliseconds and its
// validity (nil: no NULLs).
func timesOf(col arrow.Array, dst []int64) ([]int64, error) {
	c, ok := col.(*array.Timestamp)
	if !ok {
		return nil, fmt.Errorf("interval join: time attribute is %s, not a TIMESTAMP", col.DataType())
	}
	vs := c.TimestampValues()
	dst = dst[:0]
	div := int64(1)
	mul := int64(1)
	switch c.DataType().(*arrow.TimestampType).Unit {
	case arrow.Second:
		mul = 1000
	case arrow.Microsecond:
		div = 1000
	case arrow.Nanosecond:
		div = 1_000_000
	}
	for _, v := range vs {
		x := int64(v)
		if div > 1 {
			x = floorDiv(x, div)
		}
		dst = append(dst, x*mul)
	}
	return dst, nil
}

// appendRows encodes the rows ids of sd (the value of a time-bounded
// join's state slot after its format byte): their count, then per row its
// time, its match flag (withMatched: the interval join's outer rows) and
// its columns.
func (sd *ijSide) appendRows(dst []byte, ids []int32, withMatched bool) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(ids)))
	for _, id := range ids {
		dst = binary.AppendVarint(dst, sd.times[id])
		if withMatched {
			m := byte(0)
			if sd.matched[id] {
				m = 1
			}
			dst = append(dst, m)
		}
		for _, ks := range sd.cols {
			dst = ks.appendEncoded(dst, id)
		}
	}
	return dst
}

// decodeRows reads what appendRows wrote into new rows of sd, appending
// their ids to ids; v must hold exactly that.
func (sd *ijSide) decodeRows(v []byte, ids []int32, withMatched bool) ([]int32, error) {
	cnt, n := binary.Uvarint(v)
	if n <= 0 {
		return nil, errCorrupt
	}
	v = v[n:]
	for ; cnt > 0; cnt-- {
		t, n, err := readVarint(v)
		if err != nil {
			return nil, err
		}
		v = v[n:]
		id := sd.alloc()
		sd.times[id] = t
		if withMatched {
			if len(v) == 0 {
				return nil, errCorrupt
			}
			sd.matched[id] = v[0] == 1
			v = v[1:]
		}
		for _, ks := range sd.cols {
			m, err := ks.decode(v, id)
			if err != nil {
				return nil, err
			}
			v = v[m:]
		}
		ids = append(ids, id)
	}
	if len(v) != 0 {
		return nil, errCorrupt
	}
	return ids, nil
}

func (sd *ijSide) alloc() int32 {
	if n := len(sd.free); n > 0 {
		id := sd.free[n-1]
		sd.free = sd.free[:n-1]
		return id
	}
	id := sd.n
	sd.n++
	sd.times = append(sd.times, 0)
	sd.matched = append(sd.matched, false)
	return id
}

func (j *intervalJoin) makeSlotKey(side int, key []byte) []byte {
	j.slotKey = append(append(j.slotKey[:0], byte(side)), key...)
	return j.slotKey
}

func (j *intervalJoin) ProcessBatch(input int, b Batch, out Collector) error {
	defer b.Rec.Release()
	rec := b.Rec
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	if input < 0 || input > 1 {
		return fmt.Errorf("interval join: input %d", input)
	}
	me, other := &j.sides[input], &j.sides[1-input]
	var err error
	tcol := rec.Column(me.timeCol)
	if j.times, err = timesOf(tcol, j.times); err != nil {
		return err
	}
	j.keyBuf, j.keyOffs = encodeKeyColumns(rec, me.keys, j.keyBuf, j.keyOffs)
	j.hashes = keyHashes(b, me.keys, &j.hashBuf)
	var keyNulls bool
	j.nulls, keyNulls = nullKeyRows(rec, me.keys, j.spec.NullSafe, j.nulls)
	j.pairIn, j.pairID, j.storeRows, j.padRows = j.pairIn[:0], j.pairID[:0], j.storeRows[:0], j.padRows[:0]
	if cap(j.matched) < n {
		j.matched = make([]bool, n)
	}
	matched := j.matched[:n]
	for i := range matched {
		matched[i] = false
	}
	lo, hi := j.spec.LowerBound, j.spec.UpperBound
	late := 0
	tnulls := tcol.NullN() > 0
	for i := 0; i < n; i++ {
		t := j.times[i]
		if (tnulls && tcol.IsNull(i)) || t <= me.wm {
			late++
			continue
		}
		if keyNulls && j.nulls[i] {
			if me.pads {
				j.padRows = append(j.padRows, int32(i))
			}
			continue
		}
		key := j.keyBuf[j.keyOffs[i]:j.keyOffs[i+1]]
		if g, ok := j.tbl.LookupBytes(j.makeSlotKey(1-input, key)); ok {
			for _, id := range j.rows[g] {
				s := other.times[id]
				d := t - s // left - right
				if input == 1 {
					d = s - t
				}
				if d >= lo && d <= hi {
					j.pairIn = append(j.pairIn, int32(i))
					j.pairID = append(j.pairID, id)
				}
			}
		}
		if j.expiry(input, t) > j.wm {
			j.storeRows = append(j.storeRows, int32(i))
		} else if me.pads {
			j.padRows = append(j.padRows, -int32(i)-1) // padded unless it matches (below)
		}
	}
	if late > 0 && j.ctx.Metrics != nil {
		j.ctx.Metrics.LateRecords.Add(int64(late))
	}
	if len(j.pairIn) > 0 {
		if err := j.emitPairs(input, rec, matched, other, out); err != nil {
			return err
		}
	}
	// Store the rows that can still match.
	if len(j.storeRows) > 0 {
		j.storeIDs = j.storeIDs[:0]
		for _, r := range j.storeRows {
			i := int(r)
			id := me.alloc()
			t := j.times[i]
			me.times[id], me.matched[id] = t, matched[i]
			j.storeIDs = append(j.storeIDs, id)
			key := j.makeSlotKey(input, j.keyBuf[j.keyOffs[i]:j.keyOffs[i+1]])
			kg := keyGroup(j.hashes[i], j.maxP)
			g, ok := j.tbl.LookupBytes(key)
			if !ok {
				g = j.tbl.InsertBytes(key, kg)
				j.side[g], j.pending[g] = uint8(input), math.MaxInt64
			}
			j.rows[g] = append(j.rows[g], id)
			j.tbl.Touch(g)
			if exp := j.expiry(input, t); exp < j.pending[g] {
				j.timer.Register(kg, exp, key)
				j.pending[g] = exp
			}
		}
		for c, ks := range me.cols {
			putRows(ks, j.storeIDs, j.storeRows, rec.Column(c))
		}
	}
	// Outer rows that will never match: padded now.
	pads := j.padRows[:0]
	for _, r := range j.padRows {
		if r < 0 {
			r = -r - 1
			if matched[r] {
				continue
			}
		}
		pads = append(pads, r)
	}
	if len(pads) > 0 {
		tk := expr.TakeRecord(rec, pads, j.mem)
		cols := make([]arrow.Array, tk.NumCols())
		for c := range cols {
			cols[c] = tk.Column(c)
		}
		err := j.emitPadded(input, cols, len(pads), out)
		tk.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// emitPairs emits the candidate pairs (batch row pairIn[k] of side input
// with stored row pairID[k] of the other side) the residual accepts, and
// marks both rows matched.
func (j *intervalJoin) emitPairs(input int, rec arrow.Record, matched []bool, other *ijSide, out Collector) error {
	np := len(j.pairIn)
	tk := expr.TakeRecord(rec, j.pairIn, j.mem)
	mine := make([]arrow.Array, tk.NumCols())
	for c := range mine {
		mine[c] = tk.Column(c)
	}
	theirs := make([]arrow.Array, len(other.cols))
	for c, ks := range other.cols {
		theirs[c] = ks.gather(j.pairID, j.mem)
	}
	cols := append(append(make([]arrow.Array, 0, len(mine)+len(theirs)), mine...), theirs...)
	if input == 1 {
		cols = append(append(cols[:0], theirs...), mine...)
	}
	pairs := expr.NewRecord(j.schema, cols, int64(np))
	tk.Release()
	for _, c := range theirs {
		c.Release()
	}
	if j.residual == nil {
		for k := 0; k < np; k++ {
			matched[j.pairIn[k]] = true
			other.matched[j.pairID[k]] = true
		}
		return out.Collect(Batch{Rec: pairs})
	}
	m, err := j.residual.Eval(pairs, j.mem)
	if err != nil {
		pairs.Release()
		return err
	}
	defer m.Release()
	mask, ok := m.(*array.Boolean)
	if !ok {
		pairs.Release()
		return fmt.Errorf("interval join: the residual condition is %s, not BOOLEAN", m.DataType())
	}
	for k := 0; k < np; k++ {
		if mask.IsValid(k) && mask.Value(k) {
			matched[j.pairIn[k]] = true
			other.matched[j.pairID[k]] = true
		}
	}
	kept, err := expr.FilterRecord(pairs, mask, j.mem)
	pairs.Release()
	if err != nil {
		return err
	}
	if kept.NumRows() == 0 {
		kept.Release()
		return nil
	}
	return out.Collect(Batch{Rec: kept})
}

// emitPadded emits n rows of side with columns cols (borrowed), the other
// side's columns NULL.
func (j *intervalJoin) emitPadded(side int, cols []arrow.Array, n int, out Collector) error {
	other := &j.sides[1-side]
	nulls := make([]arrow.Array, len(other.types))
	for c, dt := range other.types {
		nulls[c] = array.MakeArrayOfNull(j.mem, dt, n)
	}
	var all []arrow.Array
	if side == 0 {
		all = append(append(all, cols...), nulls...)
	} else {
		all = append(append(all, nulls...), cols...)
	}
	rec := expr.NewRecord(j.schema, all, int64(n))
	for _, c := range nulls {
		c.Release()
	}
	return out.Collect(Batch{Rec: rec})
}

func (j *intervalJoin) ProcessWatermark(wm int64, out Collector) error {
	if wm > j.wm {
		j.wm = wm
	}
	for s := range j.padIDs {
		j.padIDs[s], j.toFree[s] = j.padIDs[s][:0], j.toFree[s][:0]
	}
	err := j.timer.Advance(j.wm, func(kg int, ts int64, key []byte) error {
		g, ok := j.tbl.LookupBytes(key)
		if !ok {
			return nil
		}
		s := int(j.side[g])
		sd := &j.sides[s]
		keep := j.rows[g][:0]
		next := int64(math.MaxInt64)
		for _, id := range j.rows[g] {
			exp := j.expiry(s, sd.times[id])
			if exp <= j.wm {
				if sd.pads && !sd.matched[id] {
					j.padIDs[s] = append(j.padIDs[s], id)
				}
				j.toFree[s] = append(j.toFree[s], id)
				continue
			}
			next = min(next, exp)
			keep = append(keep, id)
		}
		j.rows[g] = keep
		if len(keep) == 0 {
			j.tbl.Remove(g, 0, false)
			j.pending[g] = math.MaxInt64
		} else {
			j.tbl.Touch(g)
			j.pending[g] = next
			j.timer.Register(kg, next, key)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for s := range j.padIDs {
		sd := &j.sides[s]
		if n := len(j.padIDs[s]); n > 0 {
			cols := make([]arrow.Array, len(sd.cols))
			for c, ks := range sd.cols {
				cols[c] = ks.gather(j.padIDs[s], j.mem)
			}
			err := j.emitPadded(s, cols, n, out)
			for _, c := range cols {
				c.Release()
			}
			if err != nil {
				return err
			}
		}
		sd.free = append(sd.free, j.toFree[s]...)
	}
	fwd := wm
	if wm != MaxWatermark && wm != NoWatermark {
		fwd = wm - j.delay
	}
	if fwd > j.forwarded {
		j.forwarded = fwd
		return out.EmitWatermark(fwd)
	}
	return nil
}

// Checkpointed state.

const intervalJoinStateV1 = 1

type ijCodec struct{ j *intervalJoin }

func (c ijCodec) AppendKey(dst []byte, g int32) []byte { return append(dst, c.j.tbl.Key(g)...) }
func (c ijCodec) AppendValue(dst []byte, g int32) []byte {
	j := c.j
	return j.sides[j.side[g]].appendRows(append(dst, intervalJoinStateV1), j.rows[g], true)
}

func ijWMKey(opID string, subtask int) []byte {
	return checkpoint.SubtaskKey(opID+"/inputwm", subtask)
}

func (j *intervalJoin) Snapshot(id int64, w checkpoint.StateWriter) error {
	if err := j.tbl.Snapshot(id, w); err != nil {
		return err
	}
	if err := j.timer.Snapshot(id, w); err != nil {
		return err
	}
	return snapshotInputWM(j.spec.ID, j.ctx.Subtask, &j.sides, j.staleWM, w)
}

// snapshotInputWM writes the subtask's input watermarks (varint per input)
// and deletes the entries of old subtasks above the parallelism.
func snapshotInputWM(opID string, subtask int, sides *[2]ijSide, stale []int, w checkpoint.StateWriter) error {
	v := binary.AppendVarint(nil, sides[0].wm)
	v = binary.AppendVarint(v, sides[1].wm)
	if err := w.Put(ijWMKey(opID, subtask), v); err != nil {
		return err
	}
	for _, s := range stale {
		if err := w.Delete(ijWMKey(opID, s)); err != nil {
			return err
		}
	}
	return nil
}

func (j *intervalJoin) NotifyComplete(id int64) error {
	j.tbl.Complete(id)
	j.timer.Complete(id)
	return nil
}

func (j *intervalJoin) NotifyAborted(id int64) error {
	j.tbl.Abort(id)
	j.timer.Abort(id)
	return nil
}

func (j *intervalJoin) Restore(r checkpoint.StateReader) error {
	kgs := j.ctx.KeyGroups
	err := j.tbl.Restore(r, kgs.Start, kgs.End, func(g int32, key, val []byte) (int64, bool, error) {
		if len(key) == 0 || key[0] > 1 || len(val) == 0 || val[0] != intervalJoinStateV1 {
			return 0, false, fmt.Errorf("%w: interval join state", errCorrupt)
		}
		s := int(key[0])
		sd := &j.sides[s]
		j.side[g] = uint8(s)
		ids, err := sd.decodeRows(val[1:], j.rows[g][:0], true)
		if err != nil {
			return 0, false, fmt.Errorf("interval join state: %w", err)
		}
		j.rows[g] = ids
		j.pending[g] = math.MaxInt64
		return 0, false, nil
	})
	if err != nil {
		return err
	}
	// Each restored slot gets a timer at its earliest expiry.
	err = j.timer.RestoreFrom(r, kgs.Start, kgs.End, j.tbl, func(g int32, kg int) error {
		if len(j.rows[g]) == 0 {
			return nil
		}
		s := int(j.side[g])
		next := int64(math.MaxInt64)
		for _, id := range j.rows[g] {
			next = min(next, j.expiry(s, j.sides[s].times[id]))
		}
		j.pending[g] = next
		j.timer.Register(kg, next, []byte(j.tbl.Key(g)))
		return nil
	})
	if err != nil {
		return err
	}
	stale, err := restoreInputWM(j.spec.ID, j.ctx.Parallelism, &j.sides, r)
	j.staleWM = stale
	return err
}

// restoreInputWM restores the inputs' watermarks: the smallest any old
// subtask had reached (they all see the same watermarks of an input). It
// returns the old subtasks at or above parallelism (entries to delete).
func restoreInputWM(opID string, parallelism int, sides *[2]ijSide, r checkpoint.StateReader) ([]int, error) {
	k0 := ijWMKey(opID, 0)
	prefix := k0[:len(k0)-4]
	wms := [2]int64{MaxWatermark, MaxWatermark}
	found := false
	var stale []int
	err := r.Scan(prefix, func(key, v []byte) error {
		if len(key) != len(k0) {
			return nil
		}
		if i := int(binary.BigEndian.Uint32(key[len(prefix):])); i >= parallelism {
			stale = append(stale, i)
		}
		for s := 0; s < 2; s++ {
			x, n, err := readVarint(v)
			if err != nil {
				return err
			}
			v = v[n:]
			wms[s] = min(wms[s], x)
		}
		found = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	if found {
		for s := range sides {
			sides[s].wm = max(sides[s].wm, wms[s])
		}
	}
	return stale, nil
}
