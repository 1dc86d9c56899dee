package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble"

	"github.com/streamsql/streamsql/checkpoint"
)

// A tiered Table keeps its hot slots in memory (the operator's typed
// columns) within a budget and its cold keys in a per-instance Pebble DB,
// as KV does (tier.go). It is on only when Options.Backend is rocksdb or
// pebble and the operator calls EnableTier: operators that iterate every
// slot or hold slot ids across batches (windows, interval joins, sorts)
// keep the in-memory Table.
//
// Pebble holds, per cold key:
//
//	key:   bytes-keyed table: the encoded key (what Key returns);
//	       int-keyed table: 0 (NULL) or 1 and the int big-endian
//	value: key group (2 bytes), last update (8 bytes), [int-keyed: the
//	       codec's key, uvarint length-prefixed], the codec's value
//
// so a lookup by int needs no slot, and a snapshot can write the state
// key (prefix of the key group + codec key) and value of a cold key
// without decoding it.
//
// A hot slot is authoritative; a key absent from memory is read from
// Pebble on a lookup (a point Get: the bloom filters make misses cheap)
// and decoded into a fresh slot, clean. Lookups never evict: the operator
// calls MaybeEvict at the end of a batch, when it holds no slot ids; CLOCK
// (second chance: lookups and Touch set the reference bit) picks slots to
// evict, those changed since loaded are written back in one batch, the
// operator's Clear releases their memory and the slot id is reused.
//
// Change tracking survives eviction: the state key of a slot evicted while
// in the current (or pending) change set goes to a key list of that set,
// and Snapshot reads those keys' values from Pebble (or from memory when
// the key was loaded again). Snapshots are thus byte-identical to the
// in-memory Table's and incremental: cold keys that did not change are
// never read or written.

// TierHooks are the operator's part of a tiered Table.
type TierHooks struct {
	// Decode fills slot g from a cold key's encoded key and value, as
	// Restore's decoder does (it is the same function for most operators).
	Decode Decoder
	// Clear releases the operator's memory of slot g when it is evicted
	// (the slot id is then reused for another key).
	Clear func(g int32)
	// Bytes estimates the operator's memory of slot g (its columns, rows,
	// multisets); the table adds its own per-slot overhead and the key.
	Bytes func(g int32) int
	// IntKey appends the codec's key of an int key (null: the NULL key),
	// what AppendKey appends for a slot holding it. An int-keyed table
	// reads cold keys from the committed state only with it (optional).
	IntKey func(dst []byte, v int64, null bool) []byte
	// Committed, when set, is told that slot g was just read from the
	// committed state (optional): what it holds is what the committed
	// state holds (a DeltaCodec may append to it).
	Committed func(g int32)
}

// slotOverhead is the table's own accounted memory per slot beyond the
// key bytes: its slices, the key map's entry, the tier's flags.
const slotOverhead = 96

// tableTier is the Pebble half of a tiered Table.
type tableTier struct {
	cold   *coldTier
	hooks  TierHooks
	intKey bool
	ttl    int64 // ms, 0: no TTL
	plen   int   // length of the key-group prefix of a state key

	hotBytes int64 // accounted size of the hot slots

	// per slot
	sz     []int32 // accounted bytes (as of the last MaybeEvict)
	ref    []bool  // CLOCK reference bit
	stale  []bool  // changed since loaded or written back
	inCold []bool  // Pebble may hold a copy (Remove deletes it)
	// comHeld: the slot was read from the committed state, so comF holds
	// its key (comF only grows): evicting it clean adds nothing
	comHeld []bool
	pflag   []bool // the slot's key is in the pending change set
	inBatch []bool

	batch []int32 // slots looked up or changed since the last MaybeEvict
	hand  int
	used  bool // anything was written to Pebble

	// state keys of slots evicted while in the current (cur) or pending
	// (pend) change set
	cur, pend keyList

	wb         *pebble.Batch // write-backs and sweep deletions, reused
	kbuf, vbuf []byte
	sweepAt    []byte     // the cold sweep's cursor (nil: from the start)
	filter     coldFilter // the keys written to Pebble (coldfilter.go)
	err        error      // sticky: a failed cold read or decode
	closed     bool
	st         TierStats

	// com: the committed state, a second cold source (nil: the spill DB
	// is the only one; see "One LSM" below). comF holds the codec keys
	// that may be in it (dropped clean or restored); comGen counts the
	// commits seen (comSeen: the last checkpoint id whose commit counted;
	// a stuck eviction waits for the next), comPt reads it. ckbuf: an int
	// key's codec key.
	com     Committed
	comF    growFilter
	comGen  uint64
	comSeen int64
	comPt   comPoint
	ckbuf   []byte
	// stuck: the last eviction pass found nothing it may evict (at comGen
	// stuckGen, hotBytes stuckBytes): eviction waits until either changes
	stuck      bool
	stuckGen   uint64
	stuckBytes int64
}

// One LSM: a tiered Table given a committed state (Options.Committed,
// checkpointing on, no TTL; an int-keyed one also needs TierHooks.IntKey)
// reads its cold keys from the checkpoint store's working DB too, as a
// Committed KV does (committed.go):
//   - a slot is clean when neither the current change set nor a pending
//     one the store has not committed holds it: the committed state has
//     its value. A clean slot leaves memory without a write unless the
//     spill DB may hold an older copy or a tombstone of its key (its
//     filter says so), which would shadow the committed value;
//   - dirty slots stay in memory until committed (the change set holds
//     them until then anyway) unless the hot slots take three times their
//     share; then they are written back to the spill DB as before;
//   - a lookup reads memory, then the spill DB (an empty value is a
//     tombstone: the key is absent), then the committed state (key
//     group prefix + codec key: the caller passes the key group);
//   - a removed key that a read could find cold (a filter holds it)
//     leaves a tombstone in the spill DB;
//   - a snapshot reads a changed key that has no live slot from the spill
//     DB, then from the committed state (a key merged back by an abort may
//     have been dropped clean);
//   - committed reads are point reads (Committed.CommittedGet: they see
//     the last commit, and the working DB's whole-key Bloom filters keep
//     them off the tables without the key);
//   - a restore writes nothing: its keys are in the committed state.

// keyList is a list of state keys (full key, then for an int-keyed table
// the Pebble key) in one arena; duplicates are removed at Snapshot.
type keyList struct {
	buf  []byte
	ents []keyRef
	// deduped: the length after the last dedupe (a key evicted changed
	// again and again in one interval is compacted when the list doubled)
	deduped int
	prev    int // len(buf) at the last reset
}

type keyRef struct{ off, fl, pl int32 }

func (l *keyList) add(full, pk []byte) {
	r := keyRef{off: int32(len(l.buf)), fl: int32(len(full)), pl: int32(len(pk))}
	l.buf = append(append(l.buf, full...), pk...)
	l.ents = append(l.ents, r)
}

// addJoined adds the full key a+b (no Pebble key).
func (l *keyList) addJoined(a, b []byte) {
	r := keyRef{off: int32(len(l.buf)), fl: int32(len(a) + len(b))}
	l.buf = append(append(l.buf, a...), b...)
	l.ents = append(l.ents, r)
}

func (l *keyList) full(r keyRef) []byte { return l.buf[r.off : r.off+r.fl] }

// appendList adds every key of o.
func (l *keyList) appendList(o *keyList) {
	for _, r := range o.ents {
		l.add(o.full(r), o.buf[r.off+r.fl:r.off+r.fl+r.pl])
	}
}

func (l *keyList) reset() {
	l.ents, l.deduped = l.ents[:0], 0
	// a large arena goes when it held under a quarter of its size at this
	// reset and the one before (a list is reset when it goes pending and
	// again when that completes); one in use stays (grown again every
	// interval, it was copied about twice over: q17's evictions)
	if small := cap(l.buf) / 4; cap(l.buf) > 4<<20 && len(l.buf) < small && l.prev < small {
		l.buf = nil
	}
	l.prev = len(l.buf)
	l.buf = l.buf[:0]
}

func (l *keyList) bytes() int64 { return int64(len(l.buf)) + 32*int64(len(l.ents)) }

// dedupe sorts the list by full key and drops repeated keys.
func (l *keyList) dedupe() {
	sort.Slice(l.ents, func(i, j int) bool { return bytes.Compare(l.full(l.ents[i]), l.full(l.ents[j])) < 0 })
	w := 0
	for i, r := range l.ents {
		if i > 0 && bytes.Equal(l.full(r), l.full(l.ents[w-1])) {
			continue
		}
		l.ents[w] = r
		w++
	}
	l.ents = l.ents[:w]
	l.deduped = w
}

// compact dedupes the list when it doubled since the last dedupe.
func (l *keyList) compact() {
	if len(l.ents) < 1024 || len(l.ents) <= 2*l.deduped {
		return
	}
	l.dedupe()
	buf := make([]byte, 0, len(l.buf)/2)
	for i, r := range l.ents {
		n := r.fl + r.pl
		l.ents[i].off = int32(len(buf))
		buf = append(buf, l.buf[r.off:r.off+n]...)
	}
	l.buf = buf
}

// tableTestHotBytes, when > 0, is the hot budget of every tiered Table
// whose options set none (SetTableTierHotBytes).
var tableTestHotBytes atomic.Int64

// SetTableTierHotBytes makes every tiered Table opened from now on keep
// at most n bytes of hot slots (unless its Options.TierHotBytes is set),
// and returns a function restoring the previous value. For tests that run
// SQL jobs with a tiny budget so that eviction happens all the time.
func SetTableTierHotBytes(n int64) (restore func()) {
	old := tableTestHotBytes.Swap(n)
	return func() { tableTestHotBytes.Store(old) }
}

var tableTotals tierTotals

// TableTierTotals are the counters of every tiered Table closed so far in
// the process (Evictions, WriteBacks, ColdReads, CleanDrops, ComReads):
// tests of SQL jobs read them to assert that the tier paged.
func TableTierTotals() TierStats { return tableTotals.stats() }

// EnableTier makes t tiered when Options.Backend is rocksdb or pebble (a
// no-op with the in-memory backend): it opens the spill DB (the budget
// split and spill directory of a Pebble-backed KV). Call it right after
// NewTable, before any slot is allocated; then Close the table. The
// operator must call MaybeEvict at the end of each batch, and insert only
// keys a Lookup did not find.
func (t *Table) EnableTier(h TierHooks) error {
	b, err := ParseBackend(t.o.Backend)
	if err != nil || b != BackendPebble {
		return err
	}
	if t.tier != nil {
		return errors.New("state: tier enabled twice")
	}
	if len(t.alive) > 0 {
		return errors.New("state: EnableTier on a table with slots")
	}
	if h.Decode == nil || h.Clear == nil || h.Bytes == nil {
		return errors.New("state: EnableTier needs Decode, Clear and Bytes")
	}
	o := t.o
	if o.TierHotBytes <= 0 {
		o.TierHotBytes = tableTestHotBytes.Load()
	}
	var com Committed
	if o.Committed != nil && o.Checkpointing && o.TTL == 0 && (!o.IntKeys || h.IntKey != nil) {
		com = o.Committed
	}
	c, err := openCold(o, false, com != nil)
	if err != nil {
		return err
	}
	tt := &tableTier{cold: c, hooks: h, intKey: t.o.IntKeys, ttl: t.o.TTL.Milliseconds(),
		plen: len(checkpoint.KeyedPrefix(t.o.OpID, 0)), com: com}
	if t.o.TTL > 0 && tt.ttl == 0 {
		tt.ttl = 1
	}
	t.tier = tt
	if tt.intKey {
		t.ikey = []int64{}
	}
	return nil
}

// Tiered reports whether t keeps cold keys in Pebble.
func (t *Table) Tiered() bool { return t.tier != nil }

// Close releases the cold tier (its spill directory is deleted). An
// in-memory table needs no Close; Close is idempotent.
func (t *Table) Close() error {
	tt := t.tier
	if tt == nil || tt.closed {
		return nil
	}
	tt.closed = true
	tableTotals.add(tt.st)
	if tt.wb != nil {
		tt.wb.Close()
		tt.wb = nil
	}
	return tt.cold.close()
}

// TierStats returns the cold tier's counters (Hot is the live slots).
func (t *Table) TierStats() TierStats {
	tt := t.tier
	if tt == nil {
		return TierStats{Hot: t.live}
	}
	st := tt.st
	st.Hot, st.HotBytes, st.Budget = t.live, tt.hotBytes, tt.cold.budget
	if !tt.closed {
		m := tt.cold.db.Metrics()
		st.PebbleMem = m.BlockCache.Size + int64(m.MemTable.Size)
	}
	return st
}

func (tt *tableTier) grow(t *Table, n int) {
	tt.sz = Grow(tt.sz, n, 0)
	tt.ref = Grow(tt.ref, n, false)
	tt.stale = Grow(tt.stale, n, false)
	tt.inCold = Grow(tt.inCold, n, false)
	tt.comHeld = Grow(tt.comHeld, n, false)
	tt.pflag = Grow(tt.pflag, n, false)
	tt.inBatch = Grow(tt.inBatch, n, false)
	if tt.intKey {
		t.ikey = Grow(t.ikey, n, 0)
	}
}

// hit records a use of slot g in the current batch.
func (tt *tableTier) hit(g int32) {
	tt.ref[g] = true
	if !tt.inBatch[g] {
		tt.inBatch[g] = true
		tt.batch = append(tt.batch, g)
	}
}

func (tt *tableTier) touch(g int32) {
	tt.stale[g] = true
	tt.hit(g)
}

// intPK is the Pebble key of an int key (null: the NULL key).
func intPK(dst []byte, v int64, null bool) []byte {
	if null {
		return append(dst[:0], 0)
	}
	return binary.BigEndian.AppendUint64(append(dst[:0], 1), uint64(v))
}

// pk is the Pebble key of live slot g.
func (tt *tableTier) pk(t *Table, g int32) []byte {
	if !tt.intKey {
		return append(tt.kbuf[:0], t.keyOf[g]...)
	}
	return intPK(tt.kbuf, t.ikey[g], g == t.nullSlot)
}

// hotOf finds the live slot of Pebble key pk.
func (tt *tableTier) hotOf(t *Table, pk []byte) (int32, bool) {
	if !tt.intKey {
		return t.idx.find(KeyHash(pk), pk, t.keyOf)
	}
	if len(pk) == 1 {
		return t.nullSlot, t.nullSlot >= 0
	}
	return t.ints.find(int64(binary.BigEndian.Uint64(pk[1:])))
}

var errTableCold = errors.New("state: corrupt value in the table's spill DB")

// parseCold splits a cold value into key group, last update, codec key
// (int-keyed; for a bytes-keyed table the Pebble key is the codec key)
// and codec value.
func (tt *tableTier) parseCold(v []byte) (kg int, last int64, ck, val []byte, err error) {
	if len(v) < 10 {
		return 0, 0, nil, nil, errTableCold
	}
	kg, last, v = int(binary.BigEndian.Uint16(v)), int64(binary.BigEndian.Uint64(v[2:10])), v[10:]
	if tt.intKey {
		n, w := binary.Uvarint(v)
		if w <= 0 || n > uint64(len(v)-w) {
			return 0, 0, nil, nil, errTableCold
		}
		ck, v = v[w:w+int(n)], v[w+int(n):]
	}
	return kg, last, ck, v, nil
}

func (tt *tableTier) expired(t *Table, last int64) bool { return tt.ttl > 0 && t.now-last > tt.ttl }

func (tt *tableTier) lookupBytes(t *Table, kg int, h uint64, k []byte) (int32, bool) {
	g, ok := t.idx.find(h, k, t.keyOf)
	if ok {
		tt.hit(g)
		return g, true
	}
	return tt.load(t, kg, k, h, 0, false)
}

func (tt *tableTier) lookupInt(t *Table, kg int, v int64) (int32, bool) {
	g, ok := t.ints.find(v)
	if ok {
		tt.hit(g)
		return g, true
	}
	tt.kbuf = intPK(tt.kbuf, v, false)
	return tt.load(t, kg, tt.kbuf, 0, v, false)
}

func (tt *tableTier) lookupNull(t *Table, kg int) (int32, bool) {
	if g := t.nullSlot; g >= 0 {
		tt.hit(g)
		return g, true
	}
	tt.kbuf = intPK(tt.kbuf, 0, true)
	return tt.load(t, kg, tt.kbuf, 0, 0, true)
}

// ck is the codec key of Pebble key pk (an int table's key iv, or NULL).
func (tt *tableTier) ck(pk []byte, iv int64, null bool) []byte {
	if !tt.intKey {
		return pk
	}
	tt.ckbuf = tt.hooks.IntKey(tt.ckbuf[:0], iv, null)
	return tt.ckbuf
}

// slotCK is the codec key of live slot g.
func (tt *tableTier) slotCK(t *Table, g int32) []byte {
	if !tt.intKey {
		tt.ckbuf = append(tt.ckbuf[:0], t.keyOf[g]...)
		return tt.ckbuf
	}
	return tt.ck(nil, t.ikey[g], g == t.nullSlot)
}

// slotCKHash is the hash of live slot g's codec key (the committed
// state's filter's): a bytes table's KeyHash, kept per slot.
func (tt *tableTier) slotCKHash(t *Table, g int32) uint64 {
	if !tt.intKey {
		return t.keyHash[g]
	}
	return xxhash.Sum64(tt.slotCK(t, g))
}

// noteCommitted counts a commit of the pending change set by the store
// (or its Complete): its slots are clean from now on.
func (tt *tableTier) noteCommitted(t *Table, completed bool) {
	if tt.com == nil || t.pendingID == 0 || tt.comSeen >= t.pendingID {
		return
	}
	if completed || tt.com.CommittedID() >= t.pendingID {
		tt.comSeen = t.pendingID
		tt.comGen++
	}
}

// clean reports whether the committed state holds live slot g's value
// (noteCommitted ran).
func (tt *tableTier) clean(t *Table, g int32) bool {
	return !t.dirty[g] && (!tt.pflag[g] || tt.comSeen >= t.pendingID)
}

// load reads Pebble key pk (an int table's key iv, or NULL; a bytes
// table's key of KeyHash h) from the cold tier into a fresh clean slot.
// An expired key is removed instead (tombstoned) and reported absent. A
// failure is kept (MaybeEvict returns it) and the key reported absent.
func (tt *tableTier) load(t *Table, kg int, pk []byte, h uint64, iv int64, null bool) (int32, bool) {
	if tt.err != nil {
		return -1, false
	}
	if !tt.used {
		return tt.loadCommitted(t, kg, pk, h, iv, null)
	}
	if tt.filter.full() && (tt.wb == nil || tt.wb.Empty()) {
		if err := tt.rebuildFilter(); err != nil {
			tt.err = fmt.Errorf("state spill DB: %w", err)
			return -1, false
		}
	}
	if !tt.filter.mayHold(pk) {
		// never written to the spill DB (coldfilter.go)
		return tt.loadCommitted(t, kg, pk, h, iv, null)
	}
	v, closer, err := tt.cold.db.Get(pk)
	if errors.Is(err, pebble.ErrNotFound) {
		return tt.loadCommitted(t, kg, pk, h, iv, null)
	}
	if err != nil {
		tt.err = fmt.Errorf("state spill DB: %w", err)
		return -1, false
	}
	defer closer.Close()
	if len(v) == 0 {
		return -1, false // a tombstone: removed (One LSM)
	}
	kg, last, ck, val, err := tt.parseCold(v)
	if err != nil {
		tt.err = err
		return -1, false
	}
	if !tt.intKey {
		ck = pk
	}
	if tt.expired(t, last) {
		if err := tt.cold.db.Delete(pk, pebble.NoSync); err != nil {
			tt.err = fmt.Errorf("state spill DB: %w", err)
		}
		if t.o.Checkpointing {
			t.tombs.addJoined(t.keyPrefix(kg), ck)
		}
		return -1, false
	}
	g := t.newSlot(kg)
	if t.last != nil {
		t.last[g] = last
	}
	t.bind(g, pk, iv, null)
	tt.inCold[g] = true
	tt.hit(g)
	tt.st.ColdReads++
	if _, _, err := tt.hooks.Decode(g, ck, val); err != nil {
		tt.err = fmt.Errorf("state: decoding a cold key: %w", err)
	}
	return g, true
}

// loadCommitted reads Pebble key pk (an int table's key iv, or NULL; a
// bytes table's key of KeyHash h) of key group kg from the committed state
// into a fresh clean slot.
func (tt *tableTier) loadCommitted(t *Table, kg int, pk []byte, h uint64, iv int64, null bool) (int32, bool) {
	if tt.com == nil {
		return -1, false
	}
	ck := tt.ck(pk, iv, null)
	if tt.intKey {
		h = xxhash.Sum64(ck)
	}
	if !tt.comF.mayHoldHash(h) { // a bytes table's codec key is pk: h is its hash
		return -1, false
	}
	if kg < 0 || kg >= t.o.MaxParallelism {
		tt.err = fmt.Errorf("state: a lookup of a tiered table without its key group (%d)", kg)
		return -1, false
	}
	val, ok, err := tt.comPt.get(tt.com, t.keyPrefix(kg), ck)
	if err != nil {
		tt.err = fmt.Errorf("state: reading the committed state: %w", err)
		return -1, false
	}
	if !ok {
		return -1, false
	}
	g := t.newSlot(kg)
	t.bind(g, pk, iv, null)
	tt.comHeld[g] = true
	tt.hit(g)
	tt.st.ColdReads++
	tt.st.ComReads++
	if _, _, err := tt.hooks.Decode(g, ck, val); err != nil {
		tt.err = fmt.Errorf("state: decoding a committed key: %w", err)
	} else if tt.hooks.Committed != nil {
		tt.hooks.Committed(g)
	}
	return g, true
}

// remove forgets slot g (Remove): its Pebble copy is deleted, its change
// flags cleared (the tombstone covers it).
func (tt *tableTier) remove(t *Table, g int32) {
	switch {
	case tt.com != nil:
		// a read reaches a cold copy of the key only if a filter holds
		// it (a lookup; a snapshot reads keys evicted while changed, which
		// the filters hold too): then a tombstone masks the copy
		pk := tt.pk(t, g)
		tt.kbuf = pk
		if tt.inCold[g] || tt.comHeld[g] || tt.filter.mayHold(pk) || tt.comF.mayHoldHash(tt.slotCKHash(t, g)) {
			tt.filter.add(pk)
			tt.used = true
			if err := tt.cold.db.Set(pk, nil, pebble.NoSync); err != nil && tt.err == nil {
				tt.err = fmt.Errorf("state spill DB: %w", err)
			}
		}
	case tt.inCold[g]:
		if err := tt.cold.db.Delete(tt.pk(t, g), pebble.NoSync); err != nil && tt.err == nil {
			tt.err = fmt.Errorf("state spill DB: %w", err)
		}
	}
	tt.forget(t, g)
}

func (tt *tableTier) forget(t *Table, g int32) {
	tt.hotBytes -= int64(tt.sz[g])
	tt.sz[g] = 0
	tt.inCold[g], tt.stale[g], tt.ref[g], tt.pflag[g], tt.comHeld[g] = false, false, false, false, false
	t.dirty[g] = false
}

// MaybeEvict evicts slots while the hot slots (and the key lists of
// evicted changes) take more than the budget, down to 7/8 of it. The
// operator calls it at the end of each batch, holding no slot ids: any
// slot may be freed and reused. It returns a failure of the cold tier
// since the last call (a read, a decode or a write), after which the
// table's content is undefined (the job must fail and restore). A no-op
// in memory.
func (t *Table) MaybeEvict() error {
	if t.tier == nil {
		return nil
	}
	return t.tier.maybeEvict(t)
}

func (tt *tableTier) maybeEvict(t *Table) error {
	if tt.err != nil {
		return tt.err
	}
	// inBatch stays set until the end: a slot of the batch just processed
	// that takes more than a quarter of the budget (and giantSlot) stays
	// in memory (evicting it would only read it back in the next batch:
	// q15's one group a day, its multisets larger than the budget, was
	// written and read whole every batch without checkpoints, 100 times
	// slower).
	defer func() {
		for _, g := range tt.batch {
			tt.inBatch[g] = false
		}
		tt.batch = tt.batch[:0]
	}()
	for _, g := range tt.batch {
		if !t.alive[g] {
			continue
		}
		n := int32(slotOverhead + tt.hooks.Bytes(g))
		if !tt.intKey {
			n += int32(len(t.keyOf[g]))
		}
		tt.hotBytes += int64(n - tt.sz[g])
		tt.sz[g] = n
	}
	tt.cur.compact()
	chg := tt.cur.bytes() + tt.pend.bytes()
	budget := tt.cold.budget
	if tt.hotBytes+chg <= budget || t.live == 0 {
		return nil
	}
	target := budget*7/8 - chg
	tt.noteCommitted(t, false)
	// with a committed state dirty slots stay (One LSM) unless the hot
	// slots take three times their share: about the whole budget
	keepDirty := tt.com != nil && tt.hotBytes <= 3*budget
	if keepDirty && tt.stuck && tt.stuckGen == tt.comGen && tt.hotBytes < tt.stuckBytes+budget/8 {
		return nil // a pass found nothing clean: wait for a commit (or growth)
	}
	tt.stuck = false
	if tt.wb == nil {
		tt.wb = tt.cold.db.NewBatch()
	}
	visited := 0
	for tt.hotBytes > target && t.live > 0 {
		if tt.hand >= len(t.alive) {
			tt.hand = 0
		}
		if visited++; visited > 2*len(t.alive)+1 {
			// every slot seen twice, none clean: the rest is changes not
			// yet committed
			tt.stuck, tt.stuckGen, tt.stuckBytes = true, tt.comGen, tt.hotBytes
			break
		}
		g := int32(tt.hand)
		tt.hand++
		if a := tt.hand + evictAhead; !tt.intKey && a < len(t.alive) {
			// the hand's next slots are mostly evicted too: their index
			// entries load while this one goes
			t.idx.prefetch(t.keyHash[a])
		}
		if !t.alive[g] || (tt.inBatch[g] && int64(tt.sz[g]) > max(budget/4, giantSlot)) {
			continue
		}
		if tt.ref[g] {
			tt.ref[g] = false
			continue
		}
		clean := tt.com != nil && tt.clean(t, g)
		if keepDirty && !clean {
			continue
		}
		if err := tt.evict(t, g, clean); err != nil {
			tt.err = err
			return err
		}
		if tt.wb.Len() >= evictBatch {
			if err := tt.commit(); err != nil {
				return err
			}
		}
	}
	return tt.commit()
}

// evictAhead: eviction prefetches the key index entry of the slot this
// many slots past the clock hand.
const evictAhead = 8

// giantSlot is the least size of a slot that eviction spares while
// batches use it (with a quarter of the budget): below it, writing a slot
// back and reading it again costs little (and tests with budgets of a few
// KiB page ordinary slots).
const giantSlot = 1 << 20

func (tt *tableTier) commit() error {
	if tt.wb == nil || tt.wb.Empty() {
		return nil
	}
	if err := tt.wb.Commit(pebble.NoSync); err != nil {
		tt.err = fmt.Errorf("state spill DB: %w", err)
		return tt.err
	}
	tt.wb.Reset()
	return nil
}

// coldValue encodes slot g's cold value into tt.vbuf.
func (tt *tableTier) coldValue(t *Table, g int32) []byte {
	var last int64
	if t.last != nil {
		last = t.last[g]
	}
	v := binary.BigEndian.AppendUint16(tt.vbuf[:0], t.kg[g])
	v = binary.BigEndian.AppendUint64(v, uint64(last))
	if tt.intKey {
		// the codec key, length-prefixed: reserve the longest prefix, then
		// move the key back if its length took fewer bytes
		at := len(v)
		v = append(v, make([]byte, binary.MaxVarintLen64)...)
		start := len(v)
		v = t.codec.AppendKey(v, g)
		n := len(v) - start
		w := binary.PutUvarint(v[at:], uint64(n))
		copy(v[at+w:], v[start:])
		v = v[:at+w+n]
	}
	v = t.codec.AppendValue(v, g)
	tt.vbuf = v
	return v
}

// evict writes slot g back (if changed, unless clean: then the
// committed state holds it), moves its change flags to the key lists and
// frees it.
func (tt *tableTier) evict(t *Table, g int32, clean bool) error {
	pk := tt.pk(t, g)
	tt.kbuf = pk
	switch {
	case tt.stale[g] && (!clean || tt.filter.mayHold(pk)):
		// changed, and no committed copy, or the spill DB may hold an
		// older one (or a tombstone) that would shadow it
		if err := tt.wb.Set(pk, tt.coldValue(t, g), nil); err != nil {
			return fmt.Errorf("state spill DB: %w", err)
		}
		tt.used = true
		tt.filter.add(pk)
		tt.st.WriteBacks++
	case clean && !tt.inCold[g]:
		// read back from the committed state: the filter learns the key
		// unless it was read from there (a key added twice only takes
		// the filter's room twice; probing the chain to avoid that cost
		// a cache miss a filter)
		if !tt.comHeld[g] {
			tt.comF.addHash(tt.slotCKHash(t, g))
		}
		tt.st.CleanDrops++
	}
	if t.o.Checkpointing && (t.dirty[g] || tt.pflag[g]) {
		t.scratch = t.fullKey(t.scratch[:0], g)
		var ipk []byte
		if tt.intKey {
			ipk = pk
		}
		if t.dirty[g] {
			tt.cur.add(t.scratch, ipk)
		}
		if tt.pflag[g] {
			tt.pend.add(t.scratch, ipk)
		}
	}
	tt.hooks.Clear(g)
	switch {
	case !tt.intKey:
		t.idx.remove(uint32(t.keyHash[g]), g)
		t.keyOf[g] = ""
	case g == t.nullSlot:
		t.nullSlot = -1
	default:
		t.ints.remove(t.ikey[g])
	}
	tt.forget(t, g)
	t.alive[g] = false
	t.live--
	t.free = append(t.free, g)
	tt.st.Evictions++
	return nil
}

// snapshotCold adds to the snapshot's entries the keys evicted while
// changed: the value of the hot slot when the key was loaded again, else
// the cold copy, else (the key was removed) a Delete.
func (tt *tableTier) snapshotCold(t *Table) error {
	if tt.err != nil {
		return tt.err
	}
	l := &tt.cur
	if len(l.ents) == 0 {
		return nil
	}
	l.dedupe()
	for _, r := range l.ents {
		full := l.full(r)
		pk := full[tt.plen:]
		if tt.intKey {
			pk = l.buf[r.off+r.fl : r.off+r.fl+r.pl]
		}
		bk := &t.buckets[t.bucketOfKey(full)]
		e := entry{slot: -1, kOff: uint32(len(bk.arena)), kLen: uint32(len(full))}
		bk.arena = append(bk.arena, full...)
		e.vOff = uint32(len(bk.arena))
		if g, hot := tt.hotOf(t, pk); hot {
			if t.dirty[g] {
				continue // written from the dirty list (its key bytes stay unused)
			}
			e.slot = g // (encoded as it is written)
		} else {
			v, closer, err := tt.cold.db.Get(pk)
			switch {
			case errors.Is(err, pebble.ErrNotFound) && tt.com != nil:
				// dropped clean (One LSM): the committed state has it
				cv, ok, cerr := tt.comPt.get(tt.com, nil, full)
				if cerr != nil {
					return fmt.Errorf("state: reading the committed state: %w", cerr)
				}
				if ok {
					bk.arena = append(bk.arena, cv...)
				} else {
					e.del = true
				}
			case errors.Is(err, pebble.ErrNotFound):
				e.del = true
			case err != nil:
				return fmt.Errorf("state spill DB: %w", err)
			case len(v) == 0:
				e.del = true // a tombstone
				closer.Close()
			default:
				_, last, _, val, perr := tt.parseCold(v)
				if perr == nil {
					if t.last != nil {
						bk.arena = binary.BigEndian.AppendUint64(append(bk.arena, ttlHeader), uint64(last))
					}
					bk.arena = append(bk.arena, val...)
				}
				closer.Close()
				if perr != nil {
					return perr
				}
			}
		}
		e.vLen = uint32(len(bk.arena)) - e.vOff
		bk.ents = append(bk.ents, e)
	}
	return nil
}

// toPending: the current change set becomes pending (Snapshot succeeded).
func (tt *tableTier) toPending(t *Table) {
	for _, g := range t.dirtyList {
		if t.alive[g] && t.dirty[g] {
			tt.pflag[g] = true
		}
	}
	tt.cur, tt.pend = tt.pend, tt.cur
	tt.cur.reset()
}

// mergePending moves the pending change set (slots and evicted keys) back
// into the current one.
func (tt *tableTier) mergePending(t *Table) {
	for _, g := range t.pDirty {
		if !tt.pflag[g] {
			continue
		}
		tt.pflag[g] = false
		if !t.dirty[g] {
			t.dirty[g] = true
			t.dirtyList = append(t.dirtyList, g)
		}
	}
	tt.cur.appendList(&tt.pend)
	tt.pend.reset()
}

// dropPending forgets the pending change set (Complete).
func (tt *tableTier) dropPending(t *Table) {
	tt.noteCommitted(t, true)
	for _, g := range t.pDirty {
		tt.pflag[g] = false
	}
	tt.pend.reset()
}

// restore writes key groups [start, end) of r straight into Pebble. An
// int-keyed table decodes each key into a scratch slot (then cleared) to
// learn its int; a bytes-keyed table only copies.
func (tt *tableTier) restore(t *Table, r checkpoint.StateReader, start, end int, decode Decoder) error {
	if tt.com != nil {
		// the keys are in the committed state: only the filter learns them
		for kg := start; kg < end; kg++ {
			prefix := t.keyPrefix(kg)
			err := r.Scan(prefix, func(key, _ []byte) error {
				tt.comF.add(key[len(prefix):])
				return nil
			})
			if err != nil {
				return fmt.Errorf("restoring key group %d: %w", kg, err)
			}
		}
		return nil
	}
	if tt.wb == nil {
		tt.wb = tt.cold.db.NewBatch()
	}
	scratch := int32(-1)
	defer func() {
		if scratch >= 0 {
			t.alive[scratch] = false
			t.live--
			t.free = append(t.free, scratch)
		}
	}()
	for kg := start; kg < end; kg++ {
		prefix := t.keyPrefix(kg)
		err := r.Scan(prefix, func(key, val []byte) error {
			enc := key[len(prefix):]
			last := t.now
			if t.o.TTL > 0 && len(val) > 0 && val[0] == ttlHeader {
				if len(val) < 9 {
					return fmt.Errorf("state: truncated TTL header")
				}
				if l := int64(binary.BigEndian.Uint64(val[1:9])); l != 0 {
					last = l
				}
				val = val[9:]
			}
			v := binary.BigEndian.AppendUint16(tt.vbuf[:0], uint16(kg))
			v = binary.BigEndian.AppendUint64(v, uint64(last))
			pk := enc
			if tt.intKey {
				if scratch < 0 {
					scratch = t.newSlot(kg)
				}
				ik, null, err := decode(scratch, enc, val)
				tt.hooks.Clear(scratch)
				if err != nil {
					return err
				}
				tt.kbuf = intPK(tt.kbuf, ik, null)
				pk = tt.kbuf
				v = binary.AppendUvarint(v, uint64(len(enc)))
				v = append(v, enc...)
			}
			v = append(v, val...)
			tt.vbuf = v
			if err := tt.wb.Set(pk, v, nil); err != nil {
				return err
			}
			tt.used = true
			tt.filter.add(pk)
			if tt.wb.Len() >= evictBatch {
				return tt.commit()
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("restoring key group %d: %w", kg, err)
		}
	}
	return tt.commit()
}

// sweepCold looks at up to n cold keys from the sweep's cursor (wrapping
// around at most once) and removes the expired ones that are not in
// memory (a hot slot is authoritative; Sweep's walk over the slots covers
// it): Pebble delete, tombstone.
func (tt *tableTier) sweepCold(t *Table, n int) {
	if !tt.used || tt.ttl == 0 || n <= 0 || tt.err != nil {
		return
	}
	it, err := tt.cold.db.NewIter(nil)
	if err != nil {
		tt.err = err
		return
	}
	if tt.wb == nil {
		tt.wb = tt.cold.db.NewBatch()
	}
	start := tt.sweepAt
	var ok bool
	if start == nil {
		ok = it.First()
	} else {
		ok = it.SeekGE(start)
	}
	wrapped := start == nil
	var next []byte
	for n > 0 {
		if !ok {
			if wrapped {
				break
			}
			wrapped = true
			ok = it.First()
			continue
		}
		k := it.Key()
		if wrapped && start != nil && bytes.Compare(k, start) >= 0 {
			next = append([]byte(nil), k...)
			break
		}
		n--
		if _, hot := tt.hotOf(t, k); !hot {
			kg, last, ck, _, perr := tt.parseCold(it.Value())
			if perr != nil {
				tt.err = perr
				break
			}
			if tt.expired(t, last) {
				if !tt.intKey {
					ck = k
				}
				if t.o.Checkpointing {
					t.tombs.addJoined(t.keyPrefix(kg), ck)
				}
				if err := tt.wb.Delete(k, nil); err != nil {
					tt.err = err
					break
				}
			}
		}
		ok = it.Next()
	}
	if next == nil && ok && n == 0 {
		next = append([]byte(nil), it.Key()...)
	}
	tt.sweepAt = next
	if err := it.Close(); err != nil && tt.err == nil {
		tt.err = err
	}
	tt.commit()
}
