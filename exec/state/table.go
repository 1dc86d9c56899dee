package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"
	"unsafe"

	"github.com/streamsql/streamsql/checkpoint"
)

// Codec encodes the state of one slot for a checkpoint. Both methods are
// called per changed slot at a barrier, never per row.
type Codec interface {
	// AppendKey appends slot g's encoded key: what follows the key-group
	// prefix in the state store, and the lookup key of a bytes-keyed table.
	AppendKey(dst []byte, g int32) []byte
	// AppendValue appends slot g's encoded value.
	AppendValue(dst []byte, g int32) []byte
}

// SizedCodec is a Codec that knows the size of its values before any is
// encoded: ValueSize is a bound of a value's bytes (0: none), so a
// table's first snapshot encodes small values before its sort, as later
// ones do once they measured them.
type SizedCodec interface {
	Codec
	ValueSize() int
}

// DeltaCodec is a Codec whose values may grow by appending (a
// COUNT(DISTINCT) set over an insert-only input): when the snapshot's
// writer takes merges (checkpoint.MergeWriter) and the table keeps no TTL,
// Snapshot calls AppendDelta once for each changed live slot instead of
// AppendValue. It appends what the snapshot writes and reports whether
// that is a merge operand (appended to the committed value) rather than
// the whole value; the codec tracks which of its appends the committed
// state holds (it is told of completed and aborted checkpoints by its
// operator).
type DeltaCodec interface {
	Codec
	AppendDelta(dst []byte, g int32) (out []byte, merge bool)
}

// Options configure a Table.
type Options struct {
	OpID           string // the operator's stable id
	MaxParallelism int    // number of key groups
	// Checkpointing turns change tracking on. Off, nothing is tracked.
	Checkpointing bool
	// IntKeys: keys are one int64 (plus NULL), looked up without encoding.
	// Otherwise keys are byte strings (the codec's encoded key).
	IntKeys bool
	// TTL is table.exec.state.ttl with Flink's semantics: a key not
	// updated for longer (processing time) is expired: never returned
	// again, and removed from the state by an incremental cleanup. 0: keep
	// forever. With a TTL each value is stored with its last update time
	// (prefixed by ttlHeader; codecs must not start a value with it). A
	// restore reads the header only when the TTL is on: state taken with a
	// TTL restores into a job with one (turning the TTL on for restored
	// state without times starts their TTL at the restore).
	TTL time.Duration
	// ElideTransient: the removal of a slot allocated since the last
	// snapshot writes no tombstone (no snapshot wrote its key, so the
	// state cannot hold it). In memory only (a tiered table writes them).
	// Window operators set it: their slots come and go within a
	// checkpoint interval. Off, every removal is written (the KVs'
	// byte-for-byte metamorphic comparisons rely on it).
	ElideTransient bool

	// Backend is state.backend.type: "" or "hashmap" (in memory),
	// "rocksdb" or "pebble" (a KV keeps cold keys in a local Pebble DB; a
	// Table does when its operator calls EnableTier, tabletier.go).
	Backend string
	// MemoryBudget is state.backend.rocksdb.memory.fixed-per-slot: the
	// bytes a Pebble-backed KV or tiered Table may use (hot cache, Pebble's block cache and
	// memtables). 0: DefaultMemoryBudget.
	MemoryBudget int64
	// SpillDir is the parent of the Pebble-backed KV's spill directory
	// (created, and deleted at Close). "": os.TempDir().
	SpillDir string
	// TierHotBytes, when > 0, overrides the share of MemoryBudget that hot
	// entries may take (tests use a tiny one so eviction happens all the
	// time).
	TierHotBytes int64
	// Committed, when set, is the checkpoint store's committed state: a
	// tiered KV with checkpointing and no TTL reads its cold keys from it
	// and drops clean entries without writing them (committed.go).
	Committed Committed
	// KeyGroupStart and KeyGroupEnd are the instance's key groups (End 0:
	// all of them); a KV that reads the committed state counts and scans
	// across key groups only its own.
	KeyGroupStart, KeyGroupEnd int
}

// ttlHeader starts a stored value that carries its last update time.
const ttlHeader = 0xfe

// MaxKeyGroups is the largest number of key groups a table can address
// (Flink's upper bound of pipeline.max-parallelism).
const MaxKeyGroups = 1 << 15

// Table is the keyed state of one operator subtask: keys to dense slots,
// the key group and liveness of each slot, and the epoch-aware change set.
// Not safe for concurrent use: it lives on its subtask's goroutine.
type Table struct {
	o     Options
	codec Codec
	// OnGrow is called with the new number of slots n whenever the table
	// adds slots (several at a time), so the operator can grow its
	// per-slot columns to length n (Grow).
	OnGrow func(n int)

	ints     intIndex // int keys: each live slot's key
	nullSlot int32
	idx      keyIndex // bytes keys: each live slot's key (keyOf) by hash
	keyOf    []string // bytes keys: the key of each live slot
	keyHash  []uint64 // bytes keys: each live slot's KeyHash: removing or evicting a slot reads no key bytes

	kg    []uint16
	alive []bool
	free  []int32
	live  int

	// current change set
	dirty     []bool
	dirtyList []int32
	tombs     keyList // full state keys removed (one arena: no allocation per key)
	// ranges: range deletions (DeleteRange), each a start and an end
	// (the list's full key and its second key)
	ranges keyList
	// born: the epoch (snapshots taken + 1) each slot was allocated in,
	// 0 for restored slots (in memory, checkpointing only). A slot
	// allocated and removed between two snapshots was written by none,
	// so its removal needs no tombstone.
	born  []uint32
	epoch uint32
	// pending: the change set written by the checkpoint pendingID whose
	// outcome is not known yet (0: none)
	pendingID int64
	pDirty    []int32
	pTombs    keyList
	pRanges   keyList

	// TTL: last update (unix ms) per slot, the time of the current batch,
	// and the incremental cleanup's cursor
	last   []int64
	now    int64
	cursor int

	// Snapshot's change set by bucket, and the changes per bucket
	buckets     []snapBucket
	bucketCnt   []int
	slotOrder   []int32 // the changed slots in slot order (a few of many)
	bucketBytes int     // snapBucketBytes (tests: less)
	snapBuckets int     // the most buckets a snapshot used (tests)
	snapPaths   [3]int  // snapshots that encoded values before the sort by a scan of the slots, of a few sorted ones, and as written (tests)
	// valBytes, valN: the values the last snapshot wrote (bytes, count);
	// values that small are encoded before the sort (Snapshot)
	valBytes, valN int64
	smallMax       int64          // smallValue (tests: 0 turns pre-encoding off)
	radix          [2][]radixItem // Snapshot's sort buffers
	vbuf           []byte         // a value being written
	prefix         [][]byte       // KeyedPrefix per key group, built lazily
	scratch        []byte

	// tier: cold slots in Pebble (nil: in memory; see EnableTier); ikey:
	// the key of each slot of a tiered int-keyed table
	tier *tableTier
	ikey []int64
}

type entry struct {
	del   bool
	merge bool // the value is a merge operand (DeltaCodec)
	// slot >= 0: the value is that live slot's, encoded as it is written
	// (only keys go into the arena: a snapshot of large values, a TopN's
	// rows, does not copy them twice nor grow an arena as large);
	// otherwise arena[vOff:vOff+vLen]
	slot       int32
	kOff, kLen uint32 // (40 bytes an entry: the sort moves less)
	vOff, vLen uint32
	// p0, p1: 16 bytes of the key from its key group on (the operator
	// prefix before it is every key's), so most comparisons of a sort
	// touch no key bytes
	p0, p1 uint64
}

// NewTable returns an empty table.
func NewTable(o Options, codec Codec) (*Table, error) {
	if o.MaxParallelism <= 0 || o.MaxParallelism > MaxKeyGroups {
		return nil, fmt.Errorf("state: max parallelism %d out of range 1..%d", o.MaxParallelism, MaxKeyGroups)
	}
	t := &Table{o: o, codec: codec, nullSlot: -1, prefix: make([][]byte, o.MaxParallelism), epoch: 1, smallMax: smallValue, bucketBytes: snapBucketBytes}
	return t, nil
}

// Tracking reports whether changes are tracked (checkpointing is on).
func (t *Table) Tracking() bool { return t.o.Checkpointing }

// Len is the number of live slots.
func (t *Table) Len() int { return t.live }

// Slots is the number of slots allocated (live or free).
func (t *Table) Slots() int { return len(t.alive) }

// Alive reports whether slot g holds a key.
func (t *Table) Alive(g int32) bool { return t.alive[g] }

// KeyGroup is slot g's key group.
func (t *Table) KeyGroup(g int32) int { return int(t.kg[g]) }

// Key is the encoded key of live slot g of a bytes-keyed table.
func (t *Table) Key(g int32) string { return t.keyOf[g] }

func (t *Table) alloc(kg int) int32 {
	g := t.newSlot(kg)
	t.Touch(g)
	return g
}

// newSlot allocates a live slot in key group kg, not marked changed.
func (t *Table) newSlot(kg int) int32 {
	var g int32
	if n := len(t.free); n > 0 {
		g = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		g = t.addSlots()
	}
	t.alive[g] = true
	t.kg[g] = uint16(kg)
	t.born[g] = t.epoch
	t.live++
	return g
}

// addSlots grows the table by slotStep slots and returns the first of
// them; the others go to the free list, to be taken in ascending order
// (the slots a table hands out do not depend on the step).
func (t *Table) addSlots() int32 {
	g := len(t.alive)
	n := g + slotStep(g)
	t.alive = Grow(t.alive, n, false)
	t.kg = Grow(t.kg, n, 0)
	t.dirty = Grow(t.dirty, n, false)
	t.born = Grow(t.born, n, 0)
	if !t.o.IntKeys {
		t.keyOf = Grow(t.keyOf, n, "")
		t.keyHash = Grow(t.keyHash, n, 0)
	}
	if t.o.TTL > 0 {
		t.last = Grow(t.last, n, 0)
	}
	if t.tier != nil {
		t.tier.grow(t, n)
	}
	if t.OnGrow != nil {
		t.OnGrow(n)
	}
	for s := n - 1; s > g; s-- {
		t.free = append(t.free, int32(s))
	}
	return int32(g)
}

// LookupInt finds the slot of an int key (tiered: loading it from the
// cold tier on a miss). A tiered table may need the key's key group for
// that: use LookupIntIn.
func (t *Table) LookupInt(v int64) (int32, bool) { return t.LookupIntIn(-1, v) }

// LookupIntIn is LookupInt of a key in key group kg (-1: unknown; a
// tiered table that reads the committed state needs it on a miss, and
// fails the table without it: MaybeEvict returns the error).
func (t *Table) LookupIntIn(kg int, v int64) (int32, bool) {
	if t.tier != nil {
		return t.tier.lookupInt(t, kg, v)
	}
	return t.ints.find(v)
}

// InsertInt allocates a slot for a new int key in key group kg (one a
// Lookup did not find). The operator fills the slot's key and values
// before the next Snapshot.
func (t *Table) InsertInt(v int64, kg int) int32 {
	g := t.alloc(kg)
	t.ints.insert(v, g)
	if t.ikey != nil {
		t.ikey[g] = v
	}
	return g
}

// LookupNull finds the slot of the NULL key of an int-keyed table (see
// LookupNullIn).
func (t *Table) LookupNull() (int32, bool) { return t.LookupNullIn(-1) }

// LookupNullIn is LookupNull of the NULL key in key group kg (as
// LookupIntIn).
func (t *Table) LookupNullIn(kg int) (int32, bool) {
	if t.tier != nil {
		return t.tier.lookupNull(t, kg)
	}
	return t.nullSlot, t.nullSlot >= 0
}

// NullSlot is the live slot of the NULL key in memory (-1: none; a
// tiered table does not look in its cold tier).
func (t *Table) NullSlot() int32 { return t.nullSlot }

// InsertNull allocates the slot of the NULL key.
func (t *Table) InsertNull(kg int) int32 {
	t.nullSlot = t.alloc(kg)
	return t.nullSlot
}

// LookupBytes finds the slot of an encoded key (no allocation; tiered:
// loading it from the cold tier on a miss; see LookupBytesIn).
func (t *Table) LookupBytes(k []byte) (int32, bool) { return t.LookupBytesIn(-1, k) }

// LookupBytesIn is LookupBytes of a key in key group kg (as LookupIntIn).
func (t *Table) LookupBytesIn(kg int, k []byte) (int32, bool) {
	return t.LookupBytesHashed(kg, KeyHash(k), k)
}

// LookupBytesHashed is LookupBytesIn of key k whose KeyHash is h.
func (t *Table) LookupBytesHashed(kg int, h uint64, k []byte) (int32, bool) {
	if t.tier != nil {
		return t.tier.lookupBytes(t, kg, h, k)
	}
	return t.idx.find(h, k, t.keyOf)
}

// LookupBytesHot is LookupBytesHashed without the cold tier: a key in
// memory is found (and counted as used), an absent or cold one is not.
// A tiered table's caller needs a key's key group only when this misses.
func (t *Table) LookupBytesHot(h uint64, k []byte) (int32, bool) {
	g, ok := t.idx.find(h, k, t.keyOf)
	if ok && t.tier != nil {
		t.tier.hit(g)
	}
	return g, ok
}

// LookupIntHot is LookupBytesHot of an int key.
func (t *Table) LookupIntHot(v int64) (int32, bool) {
	g, ok := t.ints.find(v)
	if ok && t.tier != nil {
		t.tier.hit(g)
	}
	return g, ok
}

// PrefetchInt is PrefetchKey for int key v of an int-keyed table.
func (t *Table) PrefetchInt(v int64) { t.ints.prefetch(v) }

// PrefetchKey starts loading what looking up a key of KeyHash h reads
// first, without waiting: a caller that knows the keys it looks up next
// prefetches a few keys ahead.
func (t *Table) PrefetchKey(h uint64) {
	t.idx.prefetch(h)
	if t.tier != nil && t.tier.com != nil {
		t.tier.comF.prefetch(h) // a key not in memory is looked up there next
	}
}

// InsertBytes allocates a slot for a new encoded key (copied), one a
// Lookup did not find.
func (t *Table) InsertBytes(k []byte, kg int) int32 {
	return t.InsertBytesHashed(KeyHash(k), k, kg)
}

// InsertBytesHashed is InsertBytes of key k whose KeyHash is h.
func (t *Table) InsertBytesHashed(h uint64, k []byte, kg int) int32 {
	g := t.alloc(kg)
	t.keyOf[g] = string(k)
	t.keyHash[g] = h
	t.idx.insert(h, g)
	return g
}

// Touch marks slot g changed in the current epoch (and, with a TTL,
// updated now). O(1); without checkpointing and TTL a no-op.
func (t *Table) Touch(g int32) {
	if t.last != nil {
		t.last[g] = t.now
	}
	if t.tier != nil {
		t.tier.touch(g)
	}
	if t.o.Checkpointing && !t.dirty[g] {
		t.dirty[g] = true
		t.dirtyList = append(t.dirtyList, g)
	}
}

// SetNow sets the processing time (unix ms) of the changes that follow:
// the operator calls it once per batch. Only used with a TTL.
func (t *Table) SetNow(ms int64) { t.now = ms }

// Expired reports whether live slot g was last updated more than the TTL
// ago: the operator must then treat its key as absent (Remove it and start
// afresh).
func (t *Table) Expired(g int32) bool {
	return t.last != nil && t.now-t.last[g] > t.o.TTL.Milliseconds()
}

// Sweep looks at up to n slots from where the last sweep stopped and calls
// expire for every live expired one (which must Remove it): the
// incremental cleanup of expired state. Tiered, it also looks at up to n
// cold keys (a cursor over Pebble) and removes the expired ones itself
// (they hold no operator memory).
func (t *Table) Sweep(n int, expire func(g int32)) {
	if t.o.TTL <= 0 {
		return
	}
	if t.tier != nil {
		t.tier.sweepCold(t, n)
	}
	if len(t.alive) == 0 {
		return
	}
	for ; n > 0; n-- {
		if t.cursor >= len(t.alive) {
			t.cursor = 0
		}
		g := int32(t.cursor)
		t.cursor++
		if t.alive[g] && t.Expired(g) {
			expire(g)
		}
	}
}

// Remove frees slot g: its key leaves the state at the next checkpoint.
// intKey is the slot's key for an int-keyed table (ignored otherwise);
// null says it is the NULL key. Call it before clearing the slot's key in
// the operator (the codec encodes the tombstone).
func (t *Table) Remove(g int32, intKey int64, null bool) {
	if t.o.Checkpointing && (!t.o.ElideTransient || t.tier != nil || t.born[g] != t.epoch) {
		t.scratch = t.fullKey(t.scratch[:0], g)
		t.tombs.add(t.scratch, nil)
	}
	t.remove(g, intKey, null)
}

// RemoveCovered frees slot g of a bytes-keyed table in memory without a
// tombstone: the caller has a DeleteRange of this snapshot or the next
// cover its key (a window aggregation frees a fired slice's slots one by
// one and deletes their keys as one range per key group).
func (t *Table) RemoveCovered(g int32) { t.remove(g, 0, false) }

func (t *Table) remove(g int32, intKey int64, null bool) {
	if t.tier != nil {
		t.tier.remove(t, g)
	}
	switch {
	case !t.o.IntKeys:
		t.idx.remove(uint32(t.keyHash[g]), g)
		t.keyOf[g] = ""
	case null:
		t.nullSlot = -1
	default:
		t.ints.remove(intKey)
	}
	t.alive[g] = false
	t.live--
	t.free = append(t.free, g)
	// g stays in the dirty list if it is there: Snapshot skips dead slots.
}

// DeleteRange has the next snapshot delete the state keys of key group kg
// from lo up to hi (exclusive; both after the key group's prefix) that
// earlier checkpoints wrote (checkpoint.RangeDeleter): what the snapshot
// writes itself stays. An aborted snapshot's ranges are written again.
func (t *Table) DeleteRange(kg int, lo, hi []byte) {
	if !t.o.Checkpointing {
		return
	}
	p := t.keyPrefix(kg)
	t.scratch = append(append(append(append(t.scratch[:0], p...), lo...), p...), hi...)
	n := len(p) + len(lo)
	t.ranges.add(t.scratch[:n], t.scratch[n:])
}

// Rekey gives live slot g of a bytes-keyed table in memory the new key k
// (same key group): the old key leaves the state and the slot is written
// under k at the next checkpoint (a restore moving state written in an
// older key layout to the current one).
func (t *Table) Rekey(g int32, k []byte) {
	if t.o.Checkpointing {
		t.scratch = t.fullKey(t.scratch[:0], g)
		t.tombs.add(t.scratch, nil)
	}
	t.idx.remove(uint32(t.keyHash[g]), g)
	t.bind(g, k, 0, false)
	t.Touch(g)
}

func (t *Table) keyPrefix(kg int) []byte {
	if t.prefix[kg] == nil {
		t.prefix[kg] = checkpoint.KeyedPrefix(t.o.OpID, kg)
	}
	return t.prefix[kg]
}

// fullKey appends slot g's state key: prefix of its key group + encoded key.
func (t *Table) fullKey(dst []byte, g int32) []byte {
	dst = append(dst, t.keyPrefix(int(t.kg[g]))...)
	if !t.o.IntKeys {
		return append(dst, t.keyOf[g]...)
	}
	return t.codec.AppendKey(dst, g)
}

// mergePending moves the pending change set back into the current one.
func (t *Table) mergePending() {
	if t.tier != nil {
		t.tier.mergePending(t)
		t.tombs.appendList(&t.pTombs)
		t.pTombs.reset()
		t.ranges.appendList(&t.pRanges)
		t.pRanges.reset()
		t.pDirty, t.pendingID = t.pDirty[:0], 0
		return
	}
	for _, g := range t.pDirty {
		if !t.dirty[g] {
			t.dirty[g] = true
			t.dirtyList = append(t.dirtyList, g)
		}
	}
	t.tombs.appendList(&t.pTombs)
	t.pTombs.reset()
	t.ranges.appendList(&t.pRanges)
	t.pRanges.reset()
	t.pDirty, t.pendingID = t.pDirty[:0], 0
}

// Snapshot writes the changes of checkpoint id to w, sorted by key: a Put
// of every changed live slot and a Delete of every removed key that is not
// live again. The change set then becomes pending until Complete or Abort.
// On error the change set is left as it was (with any pending set merged
// in), so a later checkpoint writes it.
func (t *Table) Snapshot(id int64, w checkpoint.StateWriter) error {
	if !t.o.Checkpointing {
		return nil
	}
	if t.pendingID != 0 {
		t.mergePending()
	}
	mw, _ := w.(checkpoint.MergeWriter)
	dc, _ := t.codec.(DeltaCodec)
	if mw == nil || t.last != nil {
		dc = nil
	}
	avg := int64(0) // the values' bytes: as the last snapshot measured them, or as the codec bounds them
	if t.valN > 0 {
		avg = t.valBytes / t.valN
	} else if sc, ok := t.codec.(SizedCodec); ok && sc.ValueSize() > 0 {
		avg = int64(sc.ValueSize())
	}
	pre := avg > 0 && avg <= t.smallMax
	// sized once (a first or growing change set is not copied as it
	// grows): an entry per change, the key's bytes (the prefix and ~16)
	// and, encoded now, the value's
	per := len(t.keyPrefix(0)) + 16
	if pre {
		per += int(avg)
	}
	t.startBuckets(len(t.dirtyList)+len(t.tombs.ents), per)
	slots := t.dirtyList
	scan := pre && len(t.dirtyList) >= len(t.dirty)/64
	if pre && !scan {
		// few changed slots of many: sorted, to be read in slot order
		// all the same (below) without a scan of every slot
		t.slotOrder = append(t.slotOrder[:0], t.dirtyList...)
		slices.Sort(t.slotOrder)
		slots = t.slotOrder
	}
	for _, g := range slots {
		t.bucketCnt[t.bucketOf(int(t.kg[g]))]++
	}
	for _, r := range t.tombs.ents {
		t.bucketCnt[t.bucketOfKey(t.tombs.full(r))]++
	}
	for b, c := range t.bucketCnt {
		if c > 0 {
			bk := &t.buckets[b]
			bk.ents = slices.Grow(bk.ents, c)
			bk.arena = slices.Grow(bk.arena, c*per)
		}
	}
	switch {
	case scan:
		// Small values, many changed slots: encoded now, in slot order
		// (the accumulators' columns are read in address order instead of
		// the keys' order: a cache miss per column per slot on an
		// aggregation of many groups), each into its bucket.
		t.snapPaths[0]++
		for g, d := range t.dirty {
			if d && t.alive[g] {
				t.preEncode(int32(g), dc)
			}
		}
	case pre:
		t.snapPaths[1]++
		for _, g := range slots {
			if t.alive[g] && t.dirty[g] {
				t.preEncode(g, dc)
			}
		}
	default:
		// values encoded as they are written (only keys in the arenas: a
		// snapshot of large values, a TopN's rows, copies them once)
		t.snapPaths[2]++
		for _, g := range t.dirtyList {
			if !t.alive[g] || !t.dirty[g] { // (tiered: a slot evicted or removed is no longer dirty)
				continue
			}
			bk := &t.buckets[t.bucketOf(int(t.kg[g]))]
			e := entry{slot: g, kOff: uint32(len(bk.arena))}
			bk.arena = t.fullKey(bk.arena, g)
			e.kLen = uint32(len(bk.arena)) - e.kOff
			bk.ents = append(bk.ents, e)
		}
	}
	for _, r := range t.tombs.ents {
		k := t.tombs.full(r)
		bk := &t.buckets[t.bucketOfKey(k)]
		e := entry{del: true, slot: -1, kOff: uint32(len(bk.arena)), kLen: uint32(len(k))}
		bk.arena = append(bk.arena, k...)
		bk.ents = append(bk.ents, e)
	}
	if t.tier != nil {
		if err := t.tier.snapshotCold(t); err != nil {
			return err
		}
	}
	for b := range t.buckets {
		if len(t.buckets[b].arena) > math.MaxUint32 {
			t.buckets = nil
			return fmt.Errorf("state: the changes of checkpoint %d take more than 4 GiB in one subtask", id)
		}
	}
	t.valBytes, t.valN = 0, 0
	for b := range t.buckets {
		if err := t.writeBucket(&t.buckets[b], w, mw, dc); err != nil {
			return err
		}
	}
	if len(t.ranges.ents) > 0 {
		rd, ok := w.(checkpoint.RangeDeleter)
		if !ok {
			return fmt.Errorf("state: checkpoint %d: the state writer takes no range deletions", id)
		}
		for _, r := range t.ranges.ents {
			if err := rd.DeleteRange(t.ranges.full(r), t.ranges.buf[r.off+r.fl:r.off+r.fl+r.pl]); err != nil {
				return err
			}
		}
	}
	// The current set becomes pending; keep the memory of both.
	if t.tier != nil {
		t.tier.toPending(t)
	}
	for _, g := range t.dirtyList {
		t.dirty[g] = false
	}
	t.pDirty, t.dirtyList = t.dirtyList, t.pDirty[:0]
	t.pTombs, t.tombs = t.tombs, t.pTombs
	t.tombs.reset()
	t.pRanges, t.ranges = t.ranges, t.pRanges
	t.ranges.reset()
	t.pendingID = id
	t.epoch++
	return nil
}

// snapBuckets is the most buckets a snapshot sorts its changes in.
const snapBuckets = 256

// snapBucket holds the changes of a snapshot whose key groups map to one
// bucket (bucketOf: ranges of key groups, in key order): their entries
// and an arena of their keys (and values encoded before the sort). Each
// bucket is sorted and written on its own, so its sort and the reads of
// its keys and values stay within memory the size of a bucket's changes
// (a cache's, at a few hundred thousand changes) instead of reading one
// arena of all of them in key order, a cache miss per entry.
type snapBucket struct {
	ents  []entry
	arena []byte
}

// startBuckets empties the snapshot's buckets (keeping their memory) and
// sets how many it uses for n changes of about per bytes each: enough for
// a bucket's changes to take about snapBucketBytes, at most snapBuckets
// and one per key group (fewer buckets, fewer places the changes are
// scattered to as they are encoded).
func (t *Table) startBuckets(n, per int) {
	if t.buckets == nil {
		t.buckets = make([]snapBucket, min(snapBuckets, t.o.MaxParallelism))
		t.bucketCnt = make([]int, len(t.buckets))
	}
	t.buckets = t.buckets[:cap(t.buckets)]
	for b := range t.buckets {
		t.buckets[b].ents, t.buckets[b].arena = t.buckets[b].ents[:0], t.buckets[b].arena[:0]
		t.bucketCnt[b] = 0
	}
	nb := 1
	for nb < len(t.buckets) && nb*t.bucketBytes < n*(per+int(unsafe.Sizeof(entry{}))) {
		nb *= 2
	}
	nb = min(nb, len(t.buckets))
	clear(t.buckets[nb:]) // buckets this snapshot does not use keep no memory
	t.buckets = t.buckets[:nb]
	t.snapBuckets = max(t.snapBuckets, len(t.buckets))
}

// snapBucketBytes is about the memory of a snapshot bucket's changes: a
// fraction of a core's cache.
const snapBucketBytes = 256 << 10

// bucketOf is the snapshot bucket of key group kg: buckets hold ranges of
// key groups in order, and a state key starts with the operator's prefix
// and its key group (big-endian), so bucket order is key order.
func (t *Table) bucketOf(kg int) int { return kg * len(t.buckets) / t.o.MaxParallelism }

// bucketOfKey is the snapshot bucket of full state key k.
func (t *Table) bucketOfKey(k []byte) int {
	off := len(t.keyPrefix(0)) - 4
	return t.bucketOf(int(binary.BigEndian.Uint32(k[off:])))
}

// preEncode puts live slot g's key and value into its bucket.
func (t *Table) preEncode(g int32, dc DeltaCodec) {
	bk := &t.buckets[t.bucketOf(int(t.kg[g]))]
	e := entry{slot: -1, kOff: uint32(len(bk.arena))}
	bk.arena = t.fullKey(bk.arena, g)
	e.kLen = uint32(len(bk.arena)) - e.kOff
	e.vOff = uint32(len(bk.arena))
	if dc != nil {
		bk.arena, e.merge = dc.AppendDelta(bk.arena, g)
	} else {
		bk.arena = t.appendValue(bk.arena, g)
	}
	e.vLen = uint32(len(bk.arena)) - e.vOff
	bk.ents = append(bk.ents, e)
}

// writeBucket sorts bucket bk and writes its changes to w (mw: w's merges,
// dc: the codec's deltas, nil when not used).
func (t *Table) writeBucket(bk *snapBucket, w checkpoint.StateWriter, mw checkpoint.MergeWriter, dc DeltaCodec) error {
	if len(bk.ents) == 0 {
		return nil
	}
	key := func(e entry) []byte { return bk.arena[e.kOff : e.kOff+e.kLen] }
	off := len(t.keyPrefix(0)) - 4 // the key group's 4 bytes
	for i := range bk.ents {
		bk.ents[i].p0, bk.ents[i].p1 = ordWords(key(bk.ents[i]), off)
	}
	order := t.sortEntries(bk.ents, key)
	var last []byte
	for i, it := range order {
		e := bk.ents[it.i]
		k := key(e)
		if i > 0 && it.p0 == order[i-1].p0 && it.p1 == order[i-1].p1 && bytes.Equal(k, last) {
			continue // the Put of a key removed and added again wins
		}
		last = k
		var err error
		switch {
		case e.del:
			err = w.Delete(k)
		case e.slot >= 0:
			merge := false
			if dc != nil {
				t.vbuf, merge = dc.AppendDelta(t.vbuf[:0], e.slot)
			} else {
				t.vbuf = t.appendValue(t.vbuf[:0], e.slot)
			}
			t.valBytes += int64(len(t.vbuf))
			t.valN++
			if merge {
				err = mw.Merge(k, t.vbuf)
			} else {
				err = w.Put(k, t.vbuf)
			}
		case e.merge:
			t.valBytes += int64(e.vLen)
			t.valN++
			err = mw.Merge(k, bk.arena[e.vOff:e.vOff+e.vLen])
		default:
			t.valBytes += int64(e.vLen)
			t.valN++
			err = w.Put(k, bk.arena[e.vOff:e.vOff+e.vLen])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// smallValue is the largest average value (bytes) Snapshot encodes before
// its sort; larger ones (a TopN's rows) are encoded once, as written.
const smallValue = 256

// appendValue appends live slot g's stored value: the TTL header if
// any, then the codec's value.
func (t *Table) appendValue(dst []byte, g int32) []byte {
	if t.last != nil {
		dst = binary.BigEndian.AppendUint64(append(dst, ttlHeader), uint64(t.last[g]))
	}
	return t.codec.AppendValue(dst, g)
}

// Complete is called when checkpoint id is committed: the pending change
// set is dropped if id covers it.
func (t *Table) Complete(id int64) {
	if t.pendingID != 0 && id >= t.pendingID {
		if t.tier != nil {
			t.tier.dropPending(t)
		}
		t.pTombs.reset()
		t.pRanges.reset()
		t.pDirty, t.pendingID = t.pDirty[:0], 0
	}
}

// Abort is called when checkpoint id failed: its pending change set goes
// back into the current one. An older id is covered by the pending set
// already; a newer one was never snapshotted here.
func (t *Table) Abort(id int64) {
	if t.pendingID != 0 && id == t.pendingID {
		t.mergePending()
	}
}

// Changed is the number of slots and tombstones the next Snapshot would
// consider (current and pending).
func (t *Table) Changed() int {
	n := len(t.dirtyList) + len(t.tombs.ents) + len(t.pDirty) + len(t.pTombs.ents) + len(t.ranges.ents) + len(t.pRanges.ents)
	if t.tier != nil {
		n += len(t.tier.cur.ents) + len(t.tier.pend.ents)
	}
	return n
}

// bind makes slot g the slot of its key: enc for a bytes-keyed table,
// intKey (or the NULL key) for an int-keyed one.
func (t *Table) bind(g int32, enc []byte, intKey int64, null bool) {
	switch {
	case !t.o.IntKeys:
		h := KeyHash(enc)
		t.keyOf[g] = string(enc)
		t.keyHash[g] = h
		t.idx.insert(h, g)
	case null:
		t.nullSlot = g
	default:
		t.ints.insert(intKey, g)
		if t.ikey != nil {
			t.ikey[g] = intKey
		}
	}
}

// Decoder fills slot g from its encoded key and value while restoring.
// For an int-keyed table it returns the slot's key (null: the NULL key).
type Decoder func(g int32, key, value []byte) (intKey int64, null bool, err error)

// Restore loads every key of key groups [start, end) from r. Restored
// slots are clean: they are in the committed state already. Tiered, the
// keys are written straight into the cold tier (no slot is kept: a state
// larger than memory restores without being read into it); the first
// lookups load them.
func (t *Table) Restore(r checkpoint.StateReader, start, end int, decode Decoder) error {
	if t.tier != nil {
		return t.tier.restore(t, r, start, end, decode)
	}
	for k := start; k < end; k++ {
		prefix := t.keyPrefix(k)
		err := r.Scan(prefix, func(key, val []byte) error {
			enc := key[len(prefix):]
			var last int64
			if t.o.TTL > 0 && len(val) > 0 && val[0] == ttlHeader {
				if len(val) < 9 {
					return fmt.Errorf("state: truncated TTL header")
				}
				last, val = int64(binary.BigEndian.Uint64(val[1:9])), val[9:]
			}
			g := t.alloc(k)
			if t.last != nil {
				if last == 0 {
					last = t.now // restored without a time: its TTL starts now
				}
				t.last[g] = last
			}
			ik, null, err := decode(g, enc, val)
			if err != nil {
				return err
			}
			t.bind(g, enc, ik, null)
			return nil
		})
		if err != nil {
			return fmt.Errorf("restoring key group %d: %w", k, err)
		}
	}
	// Nothing restored is a change, and all of it is in the state.
	for _, g := range t.dirtyList {
		t.dirty[g] = false
		t.born[g] = 0
	}
	t.dirtyList = t.dirtyList[:0]
	return nil
}

// radixItem is an entry's sort key and index (sortEntries). p2, where a
// caller sets it, holds the key's next four bytes after those of (p0, p1)
// (zero-padded, as they are): a tie-break that compares it first reads
// the keys only where it ties too (it fits in the struct's padding).
type radixItem struct {
	p0, p1 uint64
	i      int32
	p2     uint32
}

// sortEntries returns the order of ents by key (a Put before a Delete of
// the same key), as their radix items (t.radix[0], reused): sortRadix on
// their first 16 bytes from the key group on (p0, p1; bytes every entry
// shares cost no pass), the whole entries compared where those tie. A
// comparison sort of hundreds of thousands of 40-byte entries took 20 ns
// a comparison.
func (t *Table) sortEntries(ents []entry, key func(entry) []byte) []radixItem {
	n := len(ents)
	cmpEntries := func(x, y entry) int {
		switch {
		case x.p0 != y.p0:
			return cmpU64(x.p0, y.p0)
		case x.p1 != y.p1:
			return cmpU64(x.p1, y.p1)
		}
		if c := bytes.Compare(key(x), key(y)); c != 0 {
			return c
		}
		switch {
		case x.del == y.del:
			return 0
		case !x.del:
			return -1 // a Put before a Delete of the same key
		}
		return 1
	}
	a := slices.Grow(t.radix[0][:0], n)[:n]
	for i, e := range ents {
		a[i] = radixItem{p0: e.p0, p1: e.p1, i: int32(i)}
	}
	a, t.radix[1] = sortRadix(a, t.radix[1], func(x, y radixItem) int { return cmpEntries(ents[x.i], ents[y.i]) })
	t.radix[0] = a
	return a
}

// sortRadix sorts items by (p0, p1), then by tie where those are equal,
// with spare as scratch: an LSD radix sort (radixSort) and a comparison
// sort of each run that ties on (p0, p1), or for a short list one
// comparison sort. It returns the sorted slice and the other buffer.
func sortRadix(items, spare []radixItem, tie func(a, b radixItem) int) (sorted, rest []radixItem) {
	n := len(items)
	if n < 256 {
		slices.SortFunc(items, func(a, b radixItem) int {
			switch {
			case a.p0 != b.p0:
				return cmpU64(a.p0, b.p0)
			case a.p1 != b.p1:
				return cmpU64(a.p1, b.p1)
			}
			return tie(a, b)
		})
		return items, spare
	}
	spare = slices.Grow(spare[:0], n)[:n]
	items, spare = radixSort(items, spare)
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && items[hi].p0 == items[lo].p0 && items[hi].p1 == items[lo].p1 {
			hi++
		}
		if hi-lo > 1 {
			slices.SortFunc(items[lo:hi], tie)
		}
		lo = hi
	}
	return items, spare
}

// radixSort sorts a by (p0, p1), stable, with b (as long) as scratch: an
// LSD radix sort of 16 byte passes, the counts of every pass taken in one
// read of a, and a pass skipped where every item has the same byte. It
// returns the sorted slice and the other.
func radixSort(a, b []radixItem) (sorted, spare []radixItem) {
	// passes 0-7: p1's bytes from the least significant; 8-15: p0's
	var cnt [16][256]uint32
	for i := range a {
		p0, p1 := a[i].p0, a[i].p1
		for d := 0; d < 8; d++ {
			cnt[d][byte(p1>>(8*d))]++
			cnt[8+d][byte(p0>>(8*d))]++
		}
	}
	n := uint32(len(a))
	for pass := 0; pass < 16; pass++ {
		c := &cnt[pass]
		shift := uint(8 * (pass % 8))
		first := a[0].p1
		if pass >= 8 {
			first = a[0].p0
		}
		if c[byte(first>>shift)] == n {
			continue // every item has this byte
		}
		sum := uint32(0)
		for d := range c {
			c[d], sum = sum, sum+c[d]
		}
		if pass < 8 {
			for i := range a {
				d := byte(a[i].p1 >> shift)
				b[c[d]] = a[i]
				c[d]++
			}
		} else {
			for i := range a {
				d := byte(a[i].p0 >> shift)
				b[c[d]] = a[i]
				c[d]++
			}
		}
		a, b = b, a
	}
	return a, b
}

func cmpU32(a, b uint32) int {
	if a < b {
		return -1
	}
	return 1
}

func cmpU64(a, b uint64) int {
	if a < b {
		return -1
	}
	return 1
}
