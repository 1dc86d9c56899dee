package exec

import (
	"fmt"
	"math"
	"sort"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/planner"
)

// temporalJoin is the event-time temporal join (planner.TemporalJoinOp,
// Flink's TemporalRowTimeJoinOperator): each left row joins the version of
// its key in the versioned (right) table that is valid at the left row's
// time: the right row with that key and the largest time <= the left
// row's time (INNER: no row without one; LEFT: padded with NULLs). A
// version whose residual is FALSE counts as no version.
//
// # Rows and their lifetime
//
// Left rows wait in state until the combined watermark reaches their time
// (an event-time timer per slot at its earliest pending row); then every
// right version up to their time has arrived, and they are joined and
// dropped. Right rows are the versions of their key, kept sorted by time;
// when the watermark passes a version's successor, the version can no
// longer be the valid one for any pending or future left row and is
// dropped (a timer per slot at its second version). The latest version at
// or below the watermark is always kept.
//
// # Late rows
//
// As in the interval join, a row whose time is not above the watermark of
// its own input (ProcessInputWatermark) is late: dropped and counted.
// This makes the result independent of how the inputs interleave: a right
// row that is not late is above the combined watermark, so it arrives
// before every left row it may be valid for is joined. Two versions of a
// key at the same time: the later-arriving one replaces the earlier.
//
// # Output
//
// Append-only, left columns then right columns; rows are emitted when the
// watermark passes them and before it is forwarded, so the watermark needs
// no hold-back. Left rows with a NULL key match nothing (LEFT: padded at
// once).
//
// # State TTL
//
// With table.exec.state.ttl, a slot (a key's pending left rows, or its
// versions) not written or used for longer than the TTL (processing time)
// is dropped silently, as Flink's state retention clears a key's state: its
// pending rows are never emitted, and later left rows find no version
// until a new one arrives. Joining with a key's versions counts as using
// them.
type temporalJoin struct {
	spec   *planner.TemporalJoinOp
	ctx    *OpContext
	mem    memory.Allocator
	schema *arrow.Schema
	maxP   int

	sides   [2]ijSide // row stores: left pending rows, right versions
	tbl     *state.Table
	rows    [][]int32 // by slot: row ids (right: sorted by time)
	side    []uint8   // by slot
	pending []int64   // earliest timer set for the slot (MaxInt64: none)
	timer   *state.Timers

	wm        int64
	forwarded int64
	staleWM   []int
	residual  expr.Evaluator
	nullSafe  []bool

	// scratch
	keyBuf   []byte
	keyOffs  []int
	hashes   []uint64
	hashBuf  []uint64 // keyHashes computes into it (hashes may be the batch's own)
	slotKey  []byte
	times    []int64
	nulls    []bool
	store    []int32
	storeIDs []int32
	padRows  []int32
	pairL    []int32
	pairR    []int32
	padL     []int32
	freeL    []int32
	clean    []int32
}

func init() {
	RegisterOperator(func(s *planner.TemporalJoinOp, ctx *OpContext) (Operator, error) { return newTemporalJoin(s, ctx) })
}

func newTemporalJoin(s *planner.TemporalJoinOp, ctx *OpContext) (*temporalJoin, error) {
	j := &temporalJoin{spec: s, ctx: ctx, mem: ctx.Mem, schema: s.Out.Arrow(), maxP: max(ctx.KeyGroups.MaxParallelism, 1),
		wm: NoWatermark, forwarded: NoWatermark, nullSafe: make([]bool, len(s.Left.Keys))}
	if j.mem == nil {
		j.mem = memory.DefaultAllocator
	}
	for i, js := range []planner.JoinSide{s.Left, s.Right} {
		sd := &j.sides[i]
		sd.keys, sd.wm, sd.schema, sd.timeCol = js.Keys, NoWatermark, js.Schema.Arrow(), s.LeftTime
		if i == 1 {
			sd.timeCol = s.RightTime
		}
		for _, c := range js.Schema {
			ks, err := newKeyStore(c.Type)
			if err != nil {
				return nil, fmt.Errorf("temporal join cannot keep column %s: %w", c.Name, err)
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
	tbl, err := state.NewTable(state.Options{OpID: s.ID, MaxParallelism: j.maxP, Checkpointing: ctx.Checkpointing, TTL: ctx.StateTTL}, tjCodec{j})
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

func (j *temporalJoin) Open(*OpContext) error  { return nil }
func (j *temporalJoin) Finish(Collector) error { return nil }
func (j *temporalJoin) Close() error {
	j.tbl, j.rows = nil, nil
	for i := range j.sides {
		j.sides[i].cols = nil
	}
	return nil
}

func (j *temporalJoin) ProcessInputWatermark(input int, wm int64) error {
	if input >= 0 && input < 2 && wm > j.sides[input].wm {
		j.sides[input].wm = wm
	}
	return nil
}

// setNow gives the state table the processing time of what follows and
// drops some expired slots (only with a TTL).
func (j *temporalJoin) setNow(n int) {
	if j.ctx.StateTTL <= 0 {
		return
	}
	var clock Clock = wallClock{}
	if j.ctx.Clock != nil {
		clock = j.ctx.Clock
	}
	j.tbl.SetNow(clock.Now().UnixMilli())
	j.tbl.Sweep(2*n+8, j.dropSlot)
}

// lookup finds the live slot of key; an expired one is dropped first.
func (j *temporalJoin) lookup(key []byte) (int32, bool) {
	g, ok := j.tbl.LookupBytes(key)
	if ok && j.tbl.Expired(g) {
		j.dropSlot(g)
		return 0, false
	}
	return g, ok
}

// dropSlot removes expired slot g and frees its rows.
func (j *temporalJoin) dropSlot(g int32) {
	sd := &j.sides[j.side[g]]
	sd.free = append(sd.free, j.rows[g]...)
	j.rows[g] = j.rows[g][:0]
	j.pending[g] = math.MaxInt64
	j.tbl.Remove(g, 0, false)
}

func (j *temporalJoin) makeSlotKey(side int, key []byte) []byte {
	j.slotKey = append(append(j.slotKey[:0], byte(side)), key...)
	return j.slotKey
}

// nextTimer is when slot g (of side s) has something to do: its earliest
// pending left row, or its second version (MaxInt64: nothing).
func (j *temporalJoin) nextTimer(g int32, s int) int64 {
	ids := j.rows[g]
	sd := &j.sides[s]
	if s == 1 {
		if len(ids) < 2 {
			return math.MaxInt64
		}
		return sd.times[ids[1]]
	}
	next := int64(math.MaxInt64)
	for _, id := range ids {
		next = min(next, sd.times[id])
	}
	return next
}

func (j *temporalJoin) schedule(g int32, s int, kg int, key []byte) {
	if next := j.nextTimer(g, s); next < j.pending[g] {
		j.timer.Register(kg, next, key)
		j.pending[g] = next
	}
}

func (j *temporalJoin) ProcessBatch(input int, b Batch, out Collector) error {
	defer b.Rec.Release()
	rec := b.Rec
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	if input < 0 || input > 1 {
		return fmt.Errorf("temporal join: input %d", input)
	}
	me := &j.sides[input]
	j.setNow(n)
	var err error
	tcol := rec.Column(me.timeCol)
	if j.times, err = timesOf(tcol, j.times); err != nil {
		return err
	}
	j.keyBuf, j.keyOffs = encodeKeyColumns(rec, me.keys, j.keyBuf, j.keyOffs)
	j.hashes = keyHashes(b, me.keys, &j.hashBuf)
	var keyNulls bool
	j.nulls, keyNulls = nullKeyRows(rec, me.keys, j.nullSafe, j.nulls)
	j.store, j.padRows = j.store[:0], j.padRows[:0]
	late := 0
	tnulls := tcol.NullN() > 0
	pads := input == 0 && j.spec.Type == planner.LeftJoin
	for i := 0; i < n; i++ {
		if (tnulls && tcol.IsNull(i)) || j.times[i] <= me.wm {
			late++
			continue
		}
		if keyNulls && j.nulls[i] {
			if pads {
				j.padRows = append(j.padRows, int32(i))
			}
			continue
		}
		j.store = append(j.store, int32(i))
	}
	if late > 0 && j.ctx.Metrics != nil {
		j.ctx.Metrics.LateRecords.Add(int64(late))
	}
	if len(j.store) > 0 {
		j.storeIDs = j.storeIDs[:0]
		for _, r := range j.store {
			i := int(r)
			id := me.alloc()
			t := j.times[i]
			me.times[id] = t
			j.storeIDs = append(j.storeIDs, id)
			key := j.makeSlotKey(input, j.keyBuf[j.keyOffs[i]:j.keyOffs[i+1]])
			kg := keyGroup(j.hashes[i], j.maxP)
			g, ok := j.lookup(key)
			if !ok {
				g = j.tbl.InsertBytes(key, kg)
				j.side[g], j.pending[g], j.rows[g] = uint8(input), math.MaxInt64, j.rows[g][:0]
			}
			if input == 0 {
				j.rows[g] = append(j.rows[g], id)
			} else {
				j.rows[g] = j.insertVersion(j.rows[g], id, t)
			}
			j.tbl.Touch(g)
			j.schedule(g, input, kg, key)
		}
		for c, ks := range me.cols {
			putRows(ks, j.storeIDs, j.store, rec.Column(c))
		}
	}
	if len(j.padRows) > 0 {
		tk := expr.TakeRecord(rec, j.padRows, j.mem)
		cols := make([]arrow.Array, tk.NumCols())
		for c := range cols {
			cols[c] = tk.Column(c)
		}
		err := j.emitPadded(cols, len(j.padRows), out)
		tk.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// insertVersion puts right row id at time t into the sorted versions vs; a
// version at the same time is replaced (and its row freed).
func (j *temporalJoin) insertVersion(vs []int32, id int32, t int64) []int32 {
	sd := &j.sides[1]
	k := sort.Search(len(vs), func(i int) bool { return sd.times[vs[i]] >= t })
	if k < len(vs) && sd.times[vs[k]] == t {
		sd.free = append(sd.free, vs[k])
		vs[k] = id
		return vs
	}
	vs = append(vs, 0)
	copy(vs[k+1:], vs[k:])
	vs[k] = id
	return vs
}

// emitPadded emits n left rows with columns cols (borrowed), the right
// side's columns NULL.
func (j *temporalJoin) emitPadded(cols []arrow.Array, n int, out Collector) error {
	right := &j.sides[1]
	all := append(make([]arrow.Array, 0, len(cols)+len(right.types)), cols...)
	for _, dt := range right.types {
		all = append(all, array.MakeArrayOfNull(j.mem, dt, n))
	}
	rec := expr.NewRecord(j.schema, all, int64(n))
	for _, c := range all[len(cols):] {
		c.Release()
	}
	return out.Collect(Batch{Rec: rec})
}

func (j *temporalJoin) ProcessWatermark(wm int64, out Collector) error {
	if wm > j.wm {
		j.wm = wm
	}
	W := j.wm
	left, right := &j.sides[0], &j.sides[1]
	j.setNow(0)
	j.pairL, j.pairR, j.padL, j.freeL, j.clean = j.pairL[:0], j.pairR[:0], j.padL[:0], j.freeL[:0], j.clean[:0]
	err := j.timer.Advance(W, func(kg int, ts int64, key []byte) error {
		g, ok := j.lookup(key)
		if !ok {
			return nil
		}
		if j.side[g] == 1 {
			j.clean = append(j.clean, g) // after the left rows are joined
			return nil
		}
		var vs []int32
		if rg, ok := j.lookup(append(append(j.slotKey[:0], 1), key[1:]...)); ok {
			vs = j.rows[rg]
			if j.ctx.StateTTL > 0 {
				j.tbl.Touch(rg) // used
			}
		}
		keep := j.rows[g][:0]
		for _, id := range j.rows[g] {
			t := left.times[id]
			if t > W {
				keep = append(keep, id)
				continue
			}
			// The version valid at t: the last one at or before it.
			k := sort.Search(len(vs), func(i int) bool { return right.times[vs[i]] > t })
			if k > 0 {
				j.pairL, j.pairR = append(j.pairL, id), append(j.pairR, vs[k-1])
			} else if j.spec.Type == planner.LeftJoin {
				j.padL = append(j.padL, id)
			}
			j.freeL = append(j.freeL, id)
		}
		j.rows[g] = keep
		j.pending[g] = math.MaxInt64
		if len(keep) == 0 {
			j.tbl.Remove(g, 0, false)
		} else {
			j.tbl.Touch(g)
			j.schedule(g, 0, kg, key)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(j.pairL) > 0 {
		if err := j.emitPairs(out); err != nil {
			return err
		}
	}
	if len(j.padL) > 0 {
		cols := make([]arrow.Array, len(left.cols))
		for c, ks := range left.cols {
			cols[c] = ks.gather(j.padL, j.mem)
		}
		err := j.emitPadded(cols, len(j.padL), out)
		for _, c := range cols {
			c.Release()
		}
		if err != nil {
			return err
		}
	}
	left.free = append(left.free, j.freeL...)
	// Versions superseded by one at or below the watermark.
	for _, g := range j.clean {
		if !j.tbl.Alive(g) || j.side[g] != 1 {
			continue
		}
		if j.tbl.Expired(g) {
			j.dropSlot(g)
			continue
		}
		vs := j.rows[g]
		k := sort.Search(len(vs), func(i int) bool { return right.times[vs[i]] > W })
		if k > 1 {
			right.free = append(right.free, vs[:k-1]...)
			vs = append(vs[:0], vs[k-1:]...)
			j.rows[g] = vs
			j.tbl.Touch(g)
		}
		j.pending[g] = math.MaxInt64
		j.schedule(g, 1, j.tbl.KeyGroup(g), []byte(j.tbl.Key(g)))
	}
	if W > j.forwarded {
		j.forwarded = W
		return out.EmitWatermark(W)
	}
	return nil
}

// emitPairs emits the left rows pairL joined with their versions pairR
// that the residual accepts; a LEFT join pads the ones it rejects.
func (j *temporalJoin) emitPairs(out Collector) error {
	np := len(j.pairL)
	left, right := &j.sides[0], &j.sides[1]
	cols := make([]arrow.Array, 0, len(left.cols)+len(right.cols))
	for _, ks := range left.cols {
		cols = append(cols, ks.gather(j.pairL, j.mem))
	}
	for _, ks := range right.cols {
		cols = append(cols, ks.gather(j.pairR, j.mem))
	}
	pairs := expr.NewRecord(j.schema, cols, int64(np))
	for _, c := range cols {
		c.Release()
	}
	if j.residual == nil {
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
		return fmt.Errorf("temporal join: the residual condition is %s, not BOOLEAN", m.DataType())
	}
	if j.spec.Type == planner.LeftJoin {
		for k := 0; k < np; k++ {
			if !mask.IsValid(k) || !mask.Value(k) {
				j.padL = append(j.padL, j.pairL[k])
			}
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

// Checkpointed state: a slot's key is (side, join key), its value the
// side's rows under it (time and columns; right: in time order).

const temporalJoinStateV1 = 1

type tjCodec struct{ j *temporalJoin }

func (c tjCodec) AppendKey(dst []byte, g int32) []byte { return append(dst, c.j.tbl.Key(g)...) }
func (c tjCodec) AppendValue(dst []byte, g int32) []byte {
	j := c.j
	return j.sides[j.side[g]].appendRows(append(dst, temporalJoinStateV1), j.rows[g], false)
}

func (j *temporalJoin) Snapshot(id int64, w checkpoint.StateWriter) error {
	if err := j.tbl.Snapshot(id, w); err != nil {
		return err
	}
	if err := j.timer.Snapshot(id, w); err != nil {
		return err
	}
	return snapshotInputWM(j.spec.ID, j.ctx.Subtask, &j.sides, j.staleWM, w)
}

func (j *temporalJoin) NotifyComplete(id int64) error {
	j.tbl.Complete(id)
	j.timer.Complete(id)
	return nil
}

func (j *temporalJoin) NotifyAborted(id int64) error {
	j.tbl.Abort(id)
	j.timer.Abort(id)
	return nil
}

func (j *temporalJoin) Restore(r checkpoint.StateReader) error {
	kgs := j.ctx.KeyGroups
	err := j.tbl.Restore(r, kgs.Start, kgs.End, func(g int32, key, val []byte) (int64, bool, error) {
		if len(key) == 0 || key[0] > 1 || len(val) == 0 || val[0] != temporalJoinStateV1 {
			return 0, false, fmt.Errorf("%w: temporal join state", errCorrupt)
		}
		s := int(key[0])
		sd := &j.sides[s]
		j.side[g] = uint8(s)
		ids, err := sd.decodeRows(val[1:], j.rows[g][:0], false)
		if err != nil {
			return 0, false, fmt.Errorf("temporal join state: %w", err)
		}
		j.rows[g] = ids
		j.pending[g] = math.MaxInt64
		return 0, false, nil
	})
	if err != nil {
		return err
	}
	err = j.timer.RestoreFrom(r, kgs.Start, kgs.End, j.tbl, func(g int32, kg int) error {
		if len(j.rows[g]) > 0 {
			j.schedule(g, int(j.side[g]), kg, []byte(j.tbl.Key(g)))
		}
		return nil
	})
	if err != nil {
		return err
	}
	stale, err := restoreInputWM(j.spec.ID, j.ctx.Parallelism, &j.sides, r)
	j.staleWM = stale
	return err
}
