package exec

import (
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/planner"
)

// windowJoin is the window join (planner.WindowJoinOp, Flink's
// WindowJoinOperator): the rows of both sides are buffered per join key
// (which includes window_start and window_end) until the watermark
// reaches window_end - 1; then the window's left rows are joined with its
// right rows, once: pairs the residual accepts, then (outer joins) the
// rows without a partner padded with NULLs, or (semi / anti joins) the
// left rows with / without a partner. Append-only; the watermark is
// forwarded as is (every row emitted at a window's end has
// window_end - 1 <= it, as the window aggregation's).
//
// A row whose window_end - 1 is not above the watermark of its own input
// (ProcessInputWatermark) is late: dropped and counted. As for the
// interval join, judging by the row's own input makes the result
// independent of how the inputs interleave (a non-late row's window has
// not fired at the combined watermark, which is never above it). Rows
// with a NULL key (other than a null-safe one) match nothing: an outer or
// anti row of them is emitted at once.
//
// State: slots (window_end, side, join key) with the side's rows of that
// key and window (columns), one event-time timer per (join key) at
// window_end - 1 (not checkpointed: a restore sets them from the slots),
// and the inputs' watermarks per subtask (as the interval join's). A
// slot's key starts with its window end (appendEndKey; value format 2),
// so the slots of a key group's fired windows are one key range: a fire
// frees them without a tombstone each and the next snapshot deletes the
// range up to the last window end fired (as the window aggregation's).
// Format 1 slots (side, join key) of older checkpoints are moved to the
// new key at restore.
type windowJoin struct {
	// a watermark's fired rows per side and one window's rows (reused)
	fired        [2][]int32
	lrows, rrows []int32

	spec   *planner.WindowJoinOp
	ctx    *OpContext
	mem    memory.Allocator
	schema *arrow.Schema
	maxP   int

	sides [2]ijSide
	tbl   *state.Table
	rows  [][]int32
	side  []uint8
	timer *state.Timers
	wm    int64
	fwd   int64

	staleWM  []int
	residual expr.Evaluator
	byEnd    endRanges // fired windows' slots deleted by range

	keyBuf  []byte
	keyOffs []int
	hashes  []uint64
	hashBuf []uint64 // keyHashes computes into it (hashes may be the batch's own)
	slotKey []byte
	nulls   []bool
	ends    []int64
	ids     [2][]int32
	rowsIn  []int32
	pads    []int32
	pairL   []int32
	pairR   []int32
	outIDs  [2][]int32 // rows to emit padded (outer) or alone (semi/anti) at a fire
}

func init() {
	RegisterOperator(func(s *planner.WindowJoinOp, ctx *OpContext) (Operator, error) { return newWindowJoin(s, ctx) })
}

func newWindowJoin(s *planner.WindowJoinOp, ctx *OpContext) (*windowJoin, error) {
	j := &windowJoin{spec: s, ctx: ctx, mem: ctx.Mem, schema: s.Out.Arrow(), maxP: max(ctx.KeyGroups.MaxParallelism, 1), wm: NoWatermark, fwd: NoWatermark}
	if j.mem == nil {
		j.mem = memory.DefaultAllocator
	}
	for i, js := range []planner.JoinSide{s.Left, s.Right} {
		sd := &j.sides[i]
		sd.keys, sd.wm, sd.schema = js.Keys, NoWatermark, js.Schema.Arrow()
		sd.timeCol = s.LeftEnd
		sd.pads = s.Type.PadsRight()
		if i == 1 {
			sd.timeCol, sd.pads = s.RightEnd, s.Type.PadsLeft()
		}
		for _, c := range js.Schema {
			ks, err := newKeyStore(c.Type)
			if err != nil {
				return nil, fmt.Errorf("window join cannot keep column %s: %w", c.Name, err)
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
	tbl, err := state.NewTable(state.Options{OpID: s.ID, MaxParallelism: j.maxP, Checkpointing: ctx.Checkpointing}, wjCodec{j})
	if err != nil {
		return nil, err
	}
	tbl.OnGrow = func(n int) {
		j.rows = state.Grow(j.rows, n, nil)
		j.side = state.Grow(j.side, n, 0)
	}
	j.tbl = tbl
	// The timers are not checkpointed: a restore derives them from the
	// slots (a slot's rows share its window's end).
	if j.timer, err = state.NewTimers(s.ID, "event", j.maxP, false); err != nil {
		return nil, err
	}
	return j, nil
}

func (j *windowJoin) Open(*OpContext) error  { return nil }
func (j *windowJoin) Finish(Collector) error { return nil }
func (j *windowJoin) Close() error {
	j.tbl, j.rows = nil, nil
	for i := range j.sides {
		j.sides[i].cols = nil
	}
	return nil
}

func (j *windowJoin) ProcessInputWatermark(input int, wm int64) error {
	if input >= 0 && input < 2 && wm > j.sides[input].wm {
		j.sides[input].wm = wm
	}
	return nil
}

// semiAnti: the output is the left columns only.
func (j *windowJoin) semiAnti() bool {
	return j.spec.Type == planner.SemiJoin || j.spec.Type == planner.AntiJoin
}

// emitsAlone reports whether side's rows without a partner are emitted
// (padded, or as the anti join's result).
func (j *windowJoin) emitsAlone(side int) bool {
	if j.spec.Type == planner.AntiJoin {
		return side == 0
	}
	return j.sides[side].pads
}

func (j *windowJoin) ProcessBatch(input int, b Batch, out Collector) error {
	defer b.Rec.Release()
	rec := b.Rec
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	if input < 0 || input > 1 {
		return fmt.Errorf("window join: input %d", input)
	}
	me := &j.sides[input]
	ecol := rec.Column(me.timeCol)
	var err error
	if j.ends, err = timesOf(ecol, j.ends); err != nil {
		return err
	}
	j.keyBuf, j.keyOffs = encodeKeyColumns(rec, me.keys, j.keyBuf, j.keyOffs)
	j.hashes = keyHashes(b, me.keys, &j.hashBuf)
	var keyNulls bool
	j.nulls, keyNulls = nullKeyRows(rec, me.keys, j.spec.NullSafe, j.nulls)
	j.rowsIn, j.pads = j.rowsIn[:0], j.pads[:0]
	ids := j.ids[0][:0]
	late := 0
	enulls := ecol.NullN() > 0
	for i := 0; i < n; i++ {
		end := j.ends[i]
		if (enulls && ecol.IsNull(i)) || end-1 <= me.wm {
			late++
			continue
		}
		if keyNulls && j.nulls[i] {
			if j.emitsAlone(input) {
				j.pads = append(j.pads, int32(i))
			}
			continue
		}
		key := j.keyBuf[j.keyOffs[i]:j.keyOffs[i+1]]
		kg := keyGroup(j.hashes[i], j.maxP)
		sk := j.key(end, input, key)
		g, ok := j.tbl.LookupBytes(sk)
		if !ok {
			g = j.tbl.InsertBytes(sk, kg)
			j.side[g] = uint8(input)
			j.byEnd.add(end)
			j.timer.Register(kg, end-1, key)
		}
		id := me.alloc()
		me.times[id] = end
		j.rows[g] = append(j.rows[g], id)
		j.tbl.Touch(g)
		ids = append(ids, id)
		j.rowsIn = append(j.rowsIn, int32(i))
	}
	j.ids[0] = ids
	if late > 0 && j.ctx.Metrics != nil {
		j.ctx.Metrics.LateRecords.Add(int64(late))
	}
	if len(ids) > 0 {
		for c, ks := range me.cols {
			putRows(ks, ids, j.rowsIn, rec.Column(c))
		}
	}
	if len(j.pads) > 0 {
		tk := expr.TakeRecord(rec, j.pads, j.mem)
		cols := make([]arrow.Array, tk.NumCols())
		for c := range cols {
			cols[c] = tk.Column(c)
		}
		err := j.emitAlone(input, cols, len(j.pads), out)
		tk.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// emitAlone emits n rows of side (columns cols, borrowed) without a
// partner: the other side's columns NULL, or the left columns alone for
// an anti join.
func (j *windowJoin) emitAlone(side int, cols []arrow.Array, n int, out Collector) error {
	if j.semiAnti() {
		rec := expr.NewRecord(j.schema, cols, int64(n))
		return out.Collect(Batch{Rec: rec})
	}
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

func (j *windowJoin) ProcessWatermark(wm int64, out Collector) error {
	if wm > j.wm {
		j.wm = wm
	}
	j.pairL, j.pairR = j.pairL[:0], j.pairR[:0]
	j.outIDs[0], j.outIDs[1] = j.outIDs[0][:0], j.outIDs[1][:0]
	fired := &j.fired // rows of fired windows, freed after the output
	fired[0], fired[1] = fired[0][:0], fired[1][:0]
	lrows, rrows := j.lrows[:0], j.rrows[:0]
	defer func() { j.lrows, j.rrows = lrows, rrows }()
	err := j.timer.Advance(j.wm, func(kg int, ts int64, key []byte) error {
		lrows, rrows = lrows[:0], rrows[:0]
		for s := 0; s < 2; s++ {
			if g, ok := j.tbl.LookupBytes(j.key(ts+1, s, key)); ok {
				if s == 0 {
					lrows = append(lrows, j.rows[g]...)
				} else {
					rrows = append(rrows, j.rows[g]...)
				}
				j.rows[g] = j.rows[g][:0]
				j.byEnd.free(j.tbl, g, ts+1)
			}
		}
		fired[0] = append(fired[0], lrows...)
		fired[1] = append(fired[1], rrows...)
		for _, l := range lrows {
			for _, r := range rrows {
				j.pairL = append(j.pairL, l)
				j.pairR = append(j.pairR, r)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for s := 0; s < 2; s++ {
		for _, id := range fired[s] {
			j.sides[s].matched[id] = false
		}
	}
	if len(j.pairL) > 0 {
		if err := j.emitPairs(out); err != nil {
			return err
		}
	}
	for s := 0; s < 2; s++ {
		sd := &j.sides[s]
		emit := j.emitsAlone(s) || (s == 0 && j.spec.Type == planner.SemiJoin)
		if !emit {
			continue
		}
		for _, id := range fired[s] {
			if sd.matched[id] == (s == 0 && j.spec.Type == planner.SemiJoin) {
				j.outIDs[s] = append(j.outIDs[s], id)
			}
		}
		if n := len(j.outIDs[s]); n > 0 {
			cols := make([]arrow.Array, len(sd.cols))
			for c, ks := range sd.cols {
				cols[c] = ks.gather(j.outIDs[s], j.mem)
			}
			err := j.emitAlone(s, cols, n, out)
			for _, c := range cols {
				c.Release()
			}
			if err != nil {
				return err
			}
		}
	}
	for s := 0; s < 2; s++ {
		j.sides[s].free = append(j.sides[s].free, fired[s]...)
	}
	if wm > j.fwd {
		j.fwd = wm
		return out.EmitWatermark(wm)
	}
	return nil
}

// key is the slot key of side's rows of join key key in the window ending
// at end.
func (j *windowJoin) key(end int64, side int, key []byte) []byte {
	j.slotKey = append(append(appendEndKey(j.slotKey[:0], end), byte(side)), key...)
	return j.slotKey
}

// emitPairs evaluates the residual on the fired windows' pairs, marks the
// rows with a partner and emits the pairs (not for semi / anti joins).
// A batch of pairs at a time (the job's batch size): a watermark that
// fires every window builds no giant batch.
func (j *windowJoin) emitPairs(out Collector) error {
	chunk := j.ctx.fireBatch()
	for a := 0; a < len(j.pairL); a += chunk {
		b := min(a+chunk, len(j.pairL))
		if err := j.emitPairRange(out, j.pairL[a:b], j.pairR[a:b]); err != nil {
			return err
		}
	}
	return nil
}

func (j *windowJoin) emitPairRange(out Collector, pairL, pairR []int32) error {
	np := len(pairL)
	l, r := &j.sides[0], &j.sides[1]
	cols := make([]arrow.Array, 0, len(l.cols)+len(r.cols))
	for _, ks := range l.cols {
		cols = append(cols, ks.gather(pairL, j.mem))
	}
	for _, ks := range r.cols {
		cols = append(cols, ks.gather(pairR, j.mem))
	}
	fields := append(append([]arrow.Field{}, l.schema.Fields()...), r.schema.Fields()...)
	pairs := expr.NewRecord(arrow.NewSchema(fields, nil), cols, int64(np))
	for _, c := range cols {
		c.Release()
	}
	defer pairs.Release()
	var mask *array.Boolean
	if j.residual != nil {
		m, err := j.residual.Eval(pairs, j.mem)
		if err != nil {
			return err
		}
		defer m.Release()
		var ok bool
		if mask, ok = m.(*array.Boolean); !ok {
			return fmt.Errorf("window join: the residual condition is %s, not BOOLEAN", m.DataType())
		}
	}
	for k := 0; k < np; k++ {
		if mask == nil || (mask.IsValid(k) && mask.Value(k)) {
			l.matched[pairL[k]] = true
			r.matched[pairR[k]] = true
		}
	}
	if j.semiAnti() {
		return nil
	}
	outRec := expr.NewRecord(j.schema, pairs.Columns(), int64(np))
	if mask == nil {
		return out.Collect(Batch{Rec: outRec})
	}
	kept, err := expr.FilterRecord(outRec, mask, j.mem)
	outRec.Release()
	if err != nil {
		return err
	}
	if kept.NumRows() == 0 {
		kept.Release()
		return nil
	}
	return out.Collect(Batch{Rec: kept})
}

// Checkpointed state.

// windowJoinStateV1: the key is (side, join key); windowJoinStateV2:
// (window end, side, join key).
const (
	windowJoinStateV1 = 1
	windowJoinStateV2 = 2
)

type wjCodec struct{ j *windowJoin }

func (c wjCodec) AppendKey(dst []byte, g int32) []byte { return append(dst, c.j.tbl.Key(g)...) }
func (c wjCodec) AppendValue(dst []byte, g int32) []byte {
	j := c.j
	return j.sides[j.side[g]].appendRows(append(dst, windowJoinStateV2), j.rows[g], false)
}

// Snapshot first deletes the keys of the windows fired since the last
// snapshot, in every key group that fired one (endRanges).
func (j *windowJoin) Snapshot(id int64, w checkpoint.StateWriter) error {
	if err := j.byEnd.snapshot(j.tbl); err != nil {
		return err
	}
	if err := j.tbl.Snapshot(id, w); err != nil {
		return err
	}
	if err := j.timer.Snapshot(id, w); err != nil {
		return err
	}
	return snapshotInputWM(j.spec.ID, j.ctx.Subtask, &j.sides, j.staleWM, w)
}

func (j *windowJoin) NotifyComplete(id int64) error {
	j.tbl.Complete(id)
	j.timer.Complete(id)
	return nil
}

func (j *windowJoin) NotifyAborted(id int64) error {
	j.tbl.Abort(id)
	j.timer.Abort(id)
	return nil
}

func (j *windowJoin) Restore(r checkpoint.StateReader) error {
	kgs := j.ctx.KeyGroups
	var rekey []int32 // slots in the format 1 key layout
	err := j.tbl.Restore(r, kgs.Start, kgs.End, func(g int32, key, val []byte) (int64, bool, error) {
		if len(val) > 0 && val[0] == windowJoinStateV2 && len(key) > 8 {
			key = key[8:]
		} else if len(val) > 0 && val[0] == windowJoinStateV1 {
			rekey = append(rekey, g)
		} else {
			return 0, false, fmt.Errorf("%w: window join state", errCorrupt)
		}
		if len(key) == 0 || key[0] > 1 {
			return 0, false, fmt.Errorf("%w: window join state", errCorrupt)
		}
		s := int(key[0])
		sd := &j.sides[s]
		j.side[g] = uint8(s)
		ids, err := sd.decodeRows(val[1:], j.rows[g][:0], false)
		if err != nil {
			return 0, false, fmt.Errorf("window join state: %w", err)
		}
		if len(ids) == 0 {
			return 0, false, fmt.Errorf("%w: window join state without rows", errCorrupt)
		}
		j.rows[g] = ids
		j.byEnd.add(sd.times[ids[0]])
		return 0, false, nil
	})
	if err != nil {
		return err
	}
	for _, g := range rekey {
		k := j.tbl.Key(g)
		j.tbl.Rekey(g, j.key(j.endOf(g), int(k[0]), []byte(k[1:])))
	}
	err = j.timer.RestoreFrom(r, kgs.Start, kgs.End, j.tbl, func(g int32, kg int) error {
		j.slotKey = append(j.slotKey[:0], j.tbl.Key(g)[9:]...)
		j.timer.Register(kg, j.endOf(g)-1, j.slotKey)
		return nil
	})
	if err != nil {
		return err
	}
	stale, err := restoreInputWM(j.spec.ID, j.ctx.Parallelism, &j.sides, r)
	j.staleWM = stale
	return err
}

// endOf is the window end of slot g (its rows share it).
func (j *windowJoin) endOf(g int32) int64 { return j.sides[j.side[g]].times[j.rows[g][0]] }
