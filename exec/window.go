package exec

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/planner"
)

// windowAgg is the window aggregation (planner.WindowAggOp): append-only
// results, one +I row per group and window, emitted when the watermark
// passes the window's end (window end - 1 <= watermark, as Flink).
//
// # Aligned windows (TUMBLE, HOP, CUMULATE): slices
//
// Rows are accumulated per group key in slices of planner.WindowSpec.Slice
// milliseconds (the window for TUMBLE, gcd(size, slide) for HOP, the step
// for CUMULATE); a window is the union of its slices, merged when it fires
// (accummerge.go), so a row updates one slice, never every window it
// belongs to. A slot of the state table is (group key, slice end). One
// event-time timer per group key and window end fires the window; firing
// window e frees the slices no later window needs and registers the next
// window of the key if it still has data.
//
// # Session windows
//
// A slot is one session of a group key: (group key, the first timestamp of
// the session) with the session's start and end in its value. A row opens
// the window [ts, ts+gap); every session of its key that intersects it
// (Flink's TimeWindow.intersects, ends inclusive) merges into the one with
// the smallest start, and the merged session's timer replaces theirs.
//
// # Attached windows
//
// Over an input that already names each row's window (planner.WindowAggOp
// Attached: GROUP BY window_start, window_end of a window aggregation's
// output) a slot is one window of a group key: (group key, window end),
// the window's start in its value, as a session's. Its timer is the
// window end - 1; rows are partitioned and assigned to key groups by the
// group key and the window bounds, so one window's rows of every key meet
// in one subtask.
//
// # Late rows
//
// A row is late, dropped and counted (Metrics.LateRecords), when the last
// window it belongs to has fired: its slice's last window end - 1 <= the
// watermark (aligned), or its own session [ts, ts+gap) intersects no live
// session and ts+gap-1 <= the watermark, or (attached) its window's end
// - 1 <= the watermark. A HOP or CUMULATE row whose first
// windows fired but not its last one goes into the windows still open, as
// in Flink. Rows with a NULL time are dropped.
//
// # State
//
// Slots (state.Table), timers (state.Timers) and, per subtask, the
// watermark each of its key groups had reached: after a restore (also at
// another parallelism) a key group judges lateness by the watermark its
// windows fired at, never by a lower one, so a restored job fires every
// window exactly once and drops the same rows.
//
// A slot's key is, for aligned and attached windows, the slice (window)
// end in 8 order-preserving bytes then the encoded group key (value
// format 2), so the state keys of a key group's fired slices form one key
// range: a fire frees its slots without a tombstone each and the next
// snapshot deletes the range of every slice end up to the last one freed
// in each key group that freed one (endRanges, state.Table.DeleteRange). A session's
// key is the encoded group key then the session's first time in 8
// big-endian bytes (format 1, with a tombstone per freed session); format
// 1 aligned and attached slots of older checkpoints are moved to the new
// key at restore.
type windowAgg struct {
	spec    *planner.WindowAggOp
	ctx     *OpContext
	mem     memory.Allocator
	schema  *arrow.Schema
	win     planner.WindowSpec
	slice   int64
	maxP    int
	session bool
	// attached: the rows' windows are their WinStart, WinEnd columns.
	attached bool
	hashCols []int

	keys     []keyStore
	rowCount []int64
	aux      []int64 // slice end (aligned) or session end, by slot
	sstart   []int64 // session start, by slot
	accs     []accumulator
	fire     []accumulator      // merged windows being emitted, by output row
	sessions map[string][]int32 // session: live slots per group key
	// sessCache holds, for the batch being processed (sessGen), the
	// sessions lists of the group keys its rows looked up, direct-mapped
	// by key hash: a key's rows find its list without hashing the key
	// into the map again (a batch repeats its hot keys)
	sessCache []sessCacheEnt
	sessGen   uint32

	windowState
	// off is the window offset: the operator works in window time, the
	// event (or processing) time minus off, where windows start at
	// multiples of the slide; rows, watermarks and timers are in window
	// time, emitted bounds are shifted back (shift).
	off int64
	// proc: a processing-time window (windowproc.go): every row of a batch
	// has the time procNow, whatever its time column holds.
	proc    bool
	procNow int64

	// scratch
	keyBuf  []byte
	keyOffs []int
	full    []byte
	hashes  []uint64 // the batch's key hashes (read-only: keyHashes)
	hashBuf []uint64
	// slotCache remembers the slots of recent (group key, slice end)
	// pairs whose group key packs into an integer (packKey), in sets of
	// two entries chosen by their hash. An entry is valid while no slot is
	// freed: freeSlot and Restore empty the cache, so a hit needs no look
	// at the table. Keys that do not pack, and misses, go to the table.
	slotCache []slotEntry
	cacheFull bool // the cache has entries to clear
	gids      []int32
	take      []int32
	remap     map[int32]int32
	dead      []int32
	reprs     []int32
	starts    []arrow.Timestamp
	ends      []arrow.Timestamp
	times     []arrow.Timestamp
	toFree    []int32
	outIdx    []int32
}

func init() {
	RegisterOperator(func(s *planner.WindowAggOp, ctx *OpContext) (Operator, error) {
		if s.Proctime {
			return newProcWindowAgg(s, ctx)
		}
		return newWindowAgg(s, ctx)
	})
}

func newWindowAgg(s *planner.WindowAggOp, ctx *OpContext) (*windowAgg, error) {
	w := &windowAgg{spec: s, ctx: ctx, mem: ctx.Mem, schema: s.Out.Arrow(), win: s.Window, slice: s.Window.Slice(), off: s.Window.Offset,
		maxP: max(ctx.KeyGroups.MaxParallelism, 1), session: s.Window.Kind == planner.Session && !s.Attached,
		attached: s.Attached, hashCols: s.HashCols(),
		windowState: windowState{kgWatermark: newKGWatermark(), opID: s.ID, opCtx: ctx}}
	for i := range s.Keys {
		ks, err := newKeyStore(s.Out[i].Type)
		if err != nil {
			return nil, fmt.Errorf("GROUP BY column %s: %w", s.Out[i].Name, err)
		}
		w.keys = append(w.keys, ks)
	}
	for _, c := range s.Aggs {
		acc, err := newAccumulator(c, false)
		if err != nil {
			return nil, err
		}
		f, _ := newAccumulator(c, false)
		w.accs, w.fire = append(w.accs, acc), append(w.fire, f)
	}
	tbl, err := state.NewTable(state.Options{OpID: s.ID, MaxParallelism: w.maxP, Checkpointing: ctx.Checkpointing, ElideTransient: true}, windowCodec{w})
	if err != nil {
		return nil, err
	}
	tbl.OnGrow = func(n int) {
		w.rowCount = state.Grow(w.rowCount, n, 0)
		w.aux = state.Grow(w.aux, n, 0)
		w.sstart = state.Grow(w.sstart, n, 0)
		for _, acc := range w.accs {
			acc.grow(n)
		}
	}
	w.tbl = tbl
	// The timers are not checkpointed: a restore derives them from the
	// slots (restoreTimers).
	if w.timers, err = state.NewTimers(s.ID, "event", w.maxP, false); err != nil {
		return nil, err
	}
	if w.session {
		w.sessions = map[string][]int32{}
	}
	return w, nil
}

func (w *windowAgg) Open(*OpContext) error  { return nil }
func (w *windowAgg) Finish(Collector) error { return nil }
func (w *windowAgg) Close() error {
	w.tbl, w.accs, w.fire, w.sessions = nil, nil, nil, nil
	return nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }

// step is the distance between consecutive window ends of a key.
func (w *windowAgg) step() int64 {
	if w.win.Kind == planner.Tumble {
		return w.win.Size
	}
	return w.win.Slide
}

// firstEnd and lastEnd are the ends of the first and last window that
// contain the slice ending at se.
func (w *windowAgg) firstEnd(se int64) int64 {
	if w.win.Kind == planner.Hop {
		return ceilDiv(se, w.win.Slide) * w.win.Slide
	}
	return se
}

func (w *windowAgg) lastEnd(se int64) int64 {
	switch w.win.Kind {
	case planner.Hop:
		return floorDiv(se-w.slice+w.win.Size, w.win.Slide) * w.win.Slide
	case planner.Cumulate:
		return floorDiv(se-1, w.win.Size)*w.win.Size + w.win.Size
	}
	return se
}

// shift turns an event-time (or processing-time) watermark into window
// time (the bounds NoWatermark and MaxWatermark stay).
func (w *windowAgg) shift(wm int64) int64 {
	if wm == NoWatermark || wm == MaxWatermark {
		return wm
	}
	return wm - w.off
}

// wmFor is the watermark that judges rows of key group kg.
func (w *windowAgg) wmFor(kg int) int64 { return w.kgWatermark.wmFor(kg, w.ctx.KeyGroups.Start) }

func (w *windowAgg) putKeys(g int32, rec arrow.Record, row int) {
	for i, k := range w.spec.Keys {
		w.keys[i].put(g, rec.Column(k), row)
	}
}

// slotKey is the key of the slot of group key gk and slice (window) end
// or session start v (see State in the type's comment).
func (w *windowAgg) slotKey(gk []byte, v int64) []byte {
	if w.session {
		w.full = binary.BigEndian.AppendUint64(append(w.full[:0], gk...), uint64(v))
		return w.full
	}
	w.full = append(appendEndKey(w.full[:0], v), gk...)
	return w.full
}

// packKey packs a group key of at most 8 bytes after a leading non-null
// flag into an integer (ok false: longer, or null first).
func packKey(gk []byte) (uint64, bool) {
	if len(gk) < 2 || len(gk) > 9 || gk[0] != 1 {
		return 0, false
	}
	b := gk[1:]
	switch len(b) {
	case 8:
		return binary.LittleEndian.Uint64(b), true
	case 4:
		return uint64(binary.LittleEndian.Uint32(b)), true
	}
	var v uint64
	for i, x := range b {
		v |= uint64(x) << (8 * i)
	}
	return v, true
}

// slotCacheBits: the window slot cache has 2^slotCacheBits sets of two
// entries (768 KiB).
const slotCacheBits = 14

// slotEntry is an entry of the window slot cache: the slot of (packed
// group key of len bytes, slice end se); len 0: empty.
type slotEntry struct {
	key  uint64
	se   int64
	slot int32
	len  uint8
}

// clearSlotCache empties the window slot cache (a slot was freed).
func (w *windowAgg) clearSlotCache() {
	if w.cacheFull {
		clear(w.slotCache)
		w.cacheFull = false
	}
}

func (w *windowAgg) ProcessBatch(_ int, b Batch, out Collector) error {
	defer b.Rec.Release()
	rec := b.Rec
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	tcol, ok := rec.Column(w.spec.TimeCol).(*array.Timestamp)
	if !ok {
		return fmt.Errorf("window time column %s is not a TIMESTAMP", w.spec.TimeName)
	}
	ts := tcol.TimestampValues()
	nulls := tcol.NullN() > 0
	var starts []arrow.Timestamp
	if w.attached {
		scol, ok := rec.Column(w.spec.WinStart).(*array.Timestamp)
		if !ok {
			return fmt.Errorf("window start column %s is not a TIMESTAMP", w.spec.AttachedNames[0])
		}
		starts = scol.TimestampValues()
		nulls = nulls || scol.NullN() > 0
	}
	w.keyBuf, w.keyOffs = encodeKeyColumns(rec, w.spec.Keys, w.keyBuf, w.keyOffs)
	w.hashes = keyHashes(b, w.hashCols, &w.hashBuf)
	w.nextSessGen() // the cache holds views of the last batch's keys
	w.gids, w.take = w.gids[:0], w.take[:0]
	if w.slotCache == nil && !w.session {
		w.slotCache = make([]slotEntry, 2<<slotCacheBits)
	}
	late := 0
	for i := 0; i < n; i++ {
		if nulls && (tcol.IsNull(i) || starts != nil && rec.Column(w.spec.WinStart).IsNull(i)) {
			continue
		}
		t := int64(ts[i]) - w.off
		if w.proc {
			t = w.procNow - w.off
		}
		kg := keyGroup(w.hashes[i], w.maxP)
		wm := w.wmFor(kg)
		gk := w.keyBuf[w.keyOffs[i]:w.keyOffs[i+1]]
		var g int32
		if w.session {
			var ok bool
			if g, ok = w.assignSession(rec, i, gk, kg, t, wm); !ok {
				late++
				continue
			}
		} else {
			// se: the slice's end, or (attached) the row's window end t
			se, last := t, t
			if !w.attached {
				se = floorDiv(t, w.slice)*w.slice + w.slice
				last = w.lastEnd(se)
			}
			if last-1 <= wm {
				late++
				continue
			}
			pk, packed := packKey(gk)
			var e *[2]slotEntry
			if packed {
				set := ((w.hashes[i] ^ uint64(se)*0x9E3779B97F4A7C15) * 0xBF58476D1CE4E5B9) >> (64 - slotCacheBits)
				e = (*[2]slotEntry)(w.slotCache[2*set : 2*set+2])
				l := uint8(len(gk))
				if x := &e[0]; x.len == l && x.key == pk && x.se == se {
					g = x.slot
				} else if x := &e[1]; x.len == l && x.key == pk && x.se == se {
					g = x.slot
				} else {
					g = -1
				}
				if g >= 0 {
					w.tbl.Touch(g) // cached
					w.rowCount[g]++
					w.gids = append(w.gids, g)
					w.take = append(w.take, int32(i))
					continue
				}
			}
			full := w.slotKey(gk, se)
			var ok bool
			if g, ok = w.tbl.LookupBytes(full); !ok {
				g = w.tbl.InsertBytes(full, kg)
				w.putKeys(g, rec, i)
				w.aux[g] = se
				w.byEnd.add(se)
				if w.attached {
					w.sstart[g] = int64(starts[i]) - w.off
					w.timers.Register(kg, se-1, full)
				} else {
					fe := w.firstEnd(se)
					for fe-1 <= wm {
						fe += w.step()
					}
					w.timers.Register(kg, fe-1, gk)
				}
			}
			if packed { // the older entry makes room
				e[1], e[0] = e[0], slotEntry{key: pk, se: se, slot: g, len: uint8(len(gk))}
				w.cacheFull = true
			}
			w.tbl.Touch(g)
		}
		w.rowCount[g]++
		w.gids = append(w.gids, g)
		w.take = append(w.take, int32(i))
	}
	if late > 0 && w.ctx.Metrics != nil {
		w.ctx.Metrics.LateRecords.Add(int64(late))
	}
	if w.remap != nil {
		for i, g := range w.gids {
			for {
				to, ok := w.remap[g]
				if !ok {
					break
				}
				g = to
			}
			w.gids[i] = g
		}
	}
	if len(w.gids) > 0 {
		src := rec
		if len(w.take) < n {
			src = expr.TakeRecord(rec, w.take, w.mem)
			defer src.Release()
		}
		for i, acc := range w.accs {
			var col arrow.Array
			if arg := w.spec.Aggs[i].Arg; arg >= 0 {
				col = src.Column(arg)
			}
			acc.update(w.gids, col, nil)
		}
	}
	// Sessions merged into others leave the state now (their keys could
	// not be reused within the batch: see assignSession).
	for _, g := range w.dead {
		w.freeSlot(g)
	}
	w.dead, w.remap = w.dead[:0], nil
	return nil
}

// sessCacheEnt is a group key's sessions list in windowAgg.sessCache.
type sessCacheEnt struct {
	gen  uint32
	h    uint64
	key  []byte // a view of the batch's key bytes
	list []int32
}

const sessCacheBits = 10

// sessionList returns group key gk's live sessions (hash h), through the
// batch's cache.
func (w *windowAgg) sessionList(gk []byte, h uint64) ([]int32, *sessCacheEnt) {
	if w.sessCache == nil {
		w.sessCache = make([]sessCacheEnt, 1<<sessCacheBits)
	}
	e := &w.sessCache[h>>(64-sessCacheBits)]
	if e.gen == w.sessGen && e.h == h && bytes.Equal(e.key, gk) {
		return e.list, e
	}
	list := w.sessions[string(gk)]
	*e = sessCacheEnt{gen: w.sessGen, h: h, key: gk, list: list}
	return list, e
}

// nextSessGen invalidates the sessions cache.
func (w *windowAgg) nextSessGen() {
	if w.sessGen++; w.sessGen == 0 { // wrapped: entries of old generations could match
		clear(w.sessCache)
		w.sessGen = 1
	}
}

// setSessions stores gk's list in the map and in its cache entry e.
func (w *windowAgg) setSessions(gk []byte, e *sessCacheEnt, list []int32) {
	w.sessions[string(gk)] = list
	e.list = list
}

// assignSession finds or makes the session of row i (group key gk, time
// t) and merges the sessions it joins; ok false: the row is late.
func (w *windowAgg) assignSession(rec arrow.Record, i int, gk []byte, kg int, t, wm int64) (int32, bool) {
	lo, hi := t, t+w.win.Gap
	list, ce := w.sessionList(gk, w.hashes[i])
	surv := int32(-1)
	hits := 0
	for _, g := range list {
		if w.sstart[g] <= hi && w.aux[g] >= lo {
			hits++
			if surv < 0 || w.sstart[g] < w.sstart[surv] {
				surv = g
			}
		}
	}
	if surv < 0 {
		if hi-1 <= wm {
			return 0, false
		}
		// A new session's key is its first row's time. No merged-away
		// session of the batch can have that key: its first time lies
		// inside a live session, which this row would have joined.
		g := w.tbl.InsertBytes(w.slotKey(gk, t), kg)
		w.putKeys(g, rec, i)
		w.sstart[g], w.aux[g] = lo, hi
		w.timers.Register(kg, hi-1, w.full)
		w.tbl.Touch(g)
		w.setSessions(gk, ce, append(list, g))
		return g, true
	}
	newStart, newEnd := min(w.sstart[surv], lo), max(w.aux[surv], hi)
	if hits > 1 {
		kept := list[:0]
		for _, g := range list {
			if g == surv || !(w.sstart[g] <= hi && w.aux[g] >= lo) {
				kept = append(kept, g)
				continue
			}
			newEnd = max(newEnd, w.aux[g])
			for ai, acc := range w.accs {
				acc.mergeFrom(surv, w.accs[ai], g)
			}
			w.rowCount[surv] += w.rowCount[g]
			w.rowCount[g] = 0
			// (its timer stays: it finds no session when it fires)
			if w.remap == nil {
				w.remap = map[int32]int32{}
			}
			w.remap[g] = surv
			w.dead = append(w.dead, g)
		}
		w.setSessions(gk, ce, kept)
	}
	// A session's timer is not moved when the session grows: the timer
	// at its old end finds it longer when it fires and re-registers at
	// its end then (fireSession), one timer operation per fire instead of
	// two per row that extends a session.
	w.sstart[surv], w.aux[surv] = newStart, newEnd
	w.tbl.Touch(surv)
	return surv, true
}

// aligned reports whether slots are slices of aligned windows (TUMBLE, HOP,
// CUMULATE assigned from a time column), keyed by their slice end.
func (w *windowAgg) aligned() bool { return !w.session && !w.attached }

func (w *windowAgg) freeSlot(g int32) {
	if w.session {
		w.tbl.Remove(g, 0, false)
	} else {
		w.byEnd.free(w.tbl, g, w.aux[g]) // Snapshot deletes its key with the range
	}
	w.rowCount[g], w.aux[g], w.sstart[g] = 0, 0, 0
	w.clearSlotCache()
	for _, acc := range w.accs {
		acc.reset(g)
	}
}

func (w *windowAgg) ProcessWatermark(wm int64, out Collector) error {
	if err := w.fireUpTo(wm, out); err != nil {
		return err
	}
	if wm > w.forwarded {
		w.forwarded = wm
		return out.EmitWatermark(wm)
	}
	return nil
}

// fireUpTo emits the windows whose timers are <= wm (the window time
// advanced to wm) without forwarding wm.
func (w *windowAgg) fireUpTo(wm int64, out Collector) error {
	w.advance(w.shift(wm))
	w.reprs, w.starts, w.ends, w.times, w.toFree = w.reprs[:0], w.starts[:0], w.ends[:0], w.times[:0], w.toFree[:0]
	flushAt := w.ctx.fireBatch()
	err := w.timers.Advance(w.wm, func(kg int, ts int64, key []byte) error {
		if w.session || w.attached {
			w.fireSession(kg, key, ts+1)
		} else {
			w.fireAligned(kg, key, ts+1)
		}
		if len(w.reprs) >= flushAt {
			// a batch of windows at a time: a watermark that fires
			// every window (the end of the input) builds no giant batch
			return w.flushFired(out)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return w.flushFired(out)
}

// defaultFireBatch is the most windows one output batch holds when the
// job sets no batch size.
const defaultFireBatch = 8192

// flushFired emits the windows fired so far as one batch and frees the
// slots no later window reads (a slot is freed by the fire of the last
// window that reads it, so later fires of the same watermark never look
// one up).
func (w *windowAgg) flushFired(out Collector) error {
	if len(w.reprs) == 0 {
		return nil
	}
	if err := out.Collect(Batch{Rec: w.results()}); err != nil {
		return err
	}
	for _, g := range w.toFree {
		if w.session {
			w.dropSession(g)
		}
		w.freeSlot(g)
	}
	w.reprs, w.starts, w.ends, w.times, w.toFree = w.reprs[:0], w.starts[:0], w.ends[:0], w.times[:0], w.toFree[:0]
	return nil
}

// addOutput starts output row j (the window [start, end) of slot repr's
// key) and returns j; its aggregates are merged into w.fire[..][j].
func (w *windowAgg) addOutput(repr int32, start, end int64) int32 {
	j := int32(len(w.reprs))
	w.reprs = append(w.reprs, repr)
	w.starts = append(w.starts, arrow.Timestamp(start+w.off))
	w.ends = append(w.ends, arrow.Timestamp(end+w.off))
	w.times = append(w.times, arrow.Timestamp(end+w.off-1))
	for _, f := range w.fire {
		f.grow(int(j) + 1)
		f.reset(j)
	}
	return j
}

func (w *windowAgg) mergeInto(j, g int32) {
	for ai, f := range w.fire {
		f.mergeFrom(j, w.accs[ai], g)
	}
}

// fireAligned emits window [.., end) of group key gk (timer ts end-1).
func (w *windowAgg) fireAligned(kg int, gk []byte, end int64) {
	start := end - w.win.Size
	if w.win.Kind == planner.Cumulate {
		start = floorDiv(end-1, w.win.Size) * w.win.Size
	}
	periodEnd := start + w.win.Size
	j := int32(-1)
	remaining := false
	for se := start + w.slice; se <= end; se += w.slice {
		if w.byEnd.live[se] == 0 {
			continue
		}
		g, ok := w.tbl.LookupBytes(w.slotKey(gk, se))
		if !ok {
			continue
		}
		if j < 0 {
			j = w.addOutput(g, start, end)
		}
		w.mergeInto(j, g)
		free := false
		switch w.win.Kind {
		case planner.Tumble:
			free = true
		case planner.Hop:
			free = se <= end+w.win.Slide-w.win.Size // no later window has it
		case planner.Cumulate:
			free = end == periodEnd
		}
		if free {
			w.toFree = append(w.toFree, g)
		} else {
			remaining = true
		}
	}
	if j < 0 {
		return
	}
	switch {
	case w.win.Kind == planner.Hop && remaining:
		w.timers.Register(kg, end+w.win.Slide-1, gk)
	case w.win.Kind == planner.Cumulate && end < periodEnd:
		w.timers.Register(kg, end+w.win.Slide-1, gk)
	}
}

// fireSession emits the session (or attached window) whose slot key is
// key.
func (w *windowAgg) fireSession(kg int, key []byte, end int64) {
	g, ok := w.tbl.LookupBytes(key)
	if !ok {
		return // merged into another session
	}
	if w.aux[g] > end {
		// extended since its timer was set: wake up at its end (a
		// timer due already fires in this Advance)
		w.timers.Register(kg, w.aux[g]-1, key)
		return
	}
	if w.aux[g] != end {
		return
	}
	j := w.addOutput(g, w.sstart[g], end)
	w.mergeInto(j, g)
	w.toFree = append(w.toFree, g)
}

// dropSession removes slot g from its key's session list.
func (w *windowAgg) dropSession(g int32) {
	w.nextSessGen() // the cached lists may hold g
	k := w.tbl.Key(g)
	gk := k[:len(k)-8]
	list := w.sessions[gk]
	for i, x := range list {
		if x == g {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(w.sessions, gk)
	} else {
		w.sessions[gk] = list
	}
}

// results builds the output rows of the windows fired.
func (w *windowAgg) results() arrow.Record {
	cols := make([]arrow.Array, 0, len(w.keys)+3+len(w.fire))
	for _, k := range w.keys {
		cols = append(cols, k.gather(w.reprs, w.mem))
	}
	tsType := catalog.Timestamp.ArrowType()
	cols = append(cols, buildArray(w.mem, tsType, w.starts, nil), buildArray(w.mem, tsType, w.ends, nil), buildArray(w.mem, tsType, w.times, nil))
	w.outIdx = w.outIdx[:0]
	for j := range w.reprs {
		w.outIdx = append(w.outIdx, int32(j))
	}
	for _, f := range w.fire {
		cols = append(cols, f.result(w.outIdx, w.mem))
	}
	rec := expr.NewRecord(w.schema, cols, int64(len(w.reprs)))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// Checkpointed state: slots as (key: encoded group key + 8 bytes; value:
// format, row count, slice end or session end, session start, then the
// accumulators), the timers, and the watermark per key group under
// SubtaskKey(op id + "/watermark", subtask): key-group range, then the
// watermark of each key group of it.

// windowStateV1: the key ends with the slice end or session start;
// windowStateV2 (aligned and attached windows): the key starts with the
// slice (window) end (appendEndKey).
const (
	windowStateV1 = 1
	windowStateV2 = 2
)

type windowCodec struct{ w *windowAgg }

func (c windowCodec) AppendKey(dst []byte, g int32) []byte { return append(dst, c.w.tbl.Key(g)...) }
func (c windowCodec) AppendValue(dst []byte, g int32) []byte {
	w := c.w
	if w.session {
		dst = append(dst, windowStateV1)
	} else {
		dst = append(dst, windowStateV2)
	}
	dst = binary.AppendVarint(dst, w.rowCount[g])
	dst = binary.AppendVarint(dst, w.aux[g])
	dst = binary.AppendVarint(dst, w.sstart[g])
	for _, acc := range w.accs {
		dst = acc.encode(dst, g)
	}
	return dst
}

func (w *windowAgg) Restore(r checkpoint.StateReader) error {
	kgs := w.ctx.KeyGroups
	var rekey []int32 // aligned or attached slots in the format 1 key layout
	err := w.tbl.Restore(r, kgs.Start, kgs.End, func(g int32, key, val []byte) (int64, bool, error) {
		if len(key) < 8 || len(val) == 0 {
			return 0, false, errCorrupt
		}
		var rest []byte
		switch {
		case val[0] == windowStateV1:
			rest = key[:len(key)-8]
			if !w.session {
				rekey = append(rekey, g)
			}
		case val[0] == windowStateV2 && !w.session:
			rest = key[8:]
		default:
			return 0, false, fmt.Errorf("%w: window state", errCorrupt)
		}
		for _, ks := range w.keys {
			n, err := ks.decode(rest, g)
			if err != nil {
				return 0, false, err
			}
			rest = rest[n:]
		}
		if len(rest) != 0 {
			return 0, false, fmt.Errorf("%w: window state", errCorrupt)
		}
		v := val[1:]
		var fields [3]int64
		for i := range fields {
			x, n, err := readVarint(v)
			if err != nil {
				return 0, false, err
			}
			fields[i], v = x, v[n:]
		}
		w.rowCount[g], w.aux[g], w.sstart[g] = fields[0], fields[1], fields[2]
		if !w.session {
			w.byEnd.add(fields[1])
		}
		w.clearSlotCache()
		for _, acc := range w.accs {
			m, err := acc.decode(v, g)
			if err != nil {
				return 0, false, err
			}
			v = v[m:]
		}
		if w.session {
			gk := string(key[:len(key)-8])
			w.sessions[gk] = append(w.sessions[gk], g)
		}
		return 0, false, nil
	})
	if err != nil {
		return err
	}
	for _, g := range rekey {
		k := w.tbl.Key(g)
		w.tbl.Rekey(g, w.slotKey([]byte(k[:len(k)-8]), w.aux[g]))
	}
	if err := w.kgWatermark.restore(w.spec.ID, w.ctx, r); err != nil {
		return err
	}
	return w.timers.RestoreFrom(r, kgs.Start, kgs.End, w.tbl, w.restoreTimer)
}

// restoreTimer sets the timer of restored slot g, as ProcessBatch set it
// for a new slot and the fires moved it since: an aligned slot's key fires
// at the end of the first window over its slice that its key group's
// watermark has not fired; a session or an attached window at its end. (A
// key's timers may differ from the ones it had, a session's old timers
// that would find it longer, say, but every window fires at the same
// watermark.)
func (w *windowAgg) restoreTimer(g int32, kg int) error {
	w.full = append(w.full[:0], w.tbl.Key(g)...)
	if !w.aligned() {
		w.timers.Register(kg, w.aux[g]-1, w.full)
		return nil
	}
	wm := w.wmFor(kg)
	fe := w.firstEnd(w.aux[g])
	for fe-1 <= wm {
		fe += w.step()
	}
	w.timers.Register(kg, fe-1, w.full[8:])
	return nil
}
