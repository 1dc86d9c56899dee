package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/tidwall/btree"
)

// KV is keyed state with byte values: value, map and list state in
// namespaces. Its keys are framed (namespace, key[, map key]) so
// namespaces never collide: a window's end, a join side. Values are the
// operator's bytes; List state appends framed elements to one value.
//
// Keys are kept in an ordered index (a B-tree), so Scan of a prefix is
// O(log n + k). With Options.Backend = BackendPebble the KV is tiered:
// at most Options.MemoryBudget bytes of entries stay in memory (the hot
// cache), cold entries live in a per-instance Pebble DB under
// Options.SpillDir; every call sees one consistent view of both.
//
// Checkpoints are incremental in both modes: the change set is the
// ordered set of state keys changed since the last snapshot (it survives
// eviction), and Snapshot writes exactly those keys (a Put of the current
// value, or a Delete), sorted, with the same bytes as the in-memory KV,
// never a rewrite of cold state. Complete, Abort and the pending-set rules
// are Table's (see the package doc).
//
// Hot columnar operators (the group aggregation) use Table directly with
// typed columns; KV is for the state whose shape is rows (join sides,
// window contents, TopN buffers). Not safe for concurrent use.
type KV struct {
	o    Options
	ttl  int64 // ms; 0: no TTL
	now  int64
	plen int // length of checkpoint.KeyedPrefix(o.OpID, kg)

	hot *btree.BTreeG[ord] // hot entries by framed key
	n   int                // live keys (hot and cold)

	// change tracking: full state keys (prefix + framed key) changed since
	// the last snapshot, and the set of checkpoint pendingID
	chg, pend chgSet
	epoch     uint64 // an entry with mark == epoch is in chg
	pendingID int64
	// merged: chg holds a pending set merged back (its entries' marks are
	// of an older epoch), so the live entries of chg are not exactly the
	// hot entries marked with epoch (see sortChanges)
	merged bool
	// kgCount: sortChanges's counts per key group, reused; scanSorts counts
	// the snapshots that took the scan (tests)
	kgCount   []int
	scanSorts int

	prefix  [][]byte // KeyedPrefix per key group, built lazily
	scratch []byte
	vbuf    []byte
	it      Iter // Scan's iterator, reused

	// TTL cleanup (Sweep): the key to resume from (nil: the start) and the
	// expired keys found, reused
	sweepFrom []byte
	sweepDel  keyArena
	sweepKeys [][]byte

	// a snapshot's reads of cold changed keys (see fetchCold), reused
	fetched    []fetched
	coldPos    []coldRef
	fetchArena []byte

	cold *coldTier // nil: in memory only

	probe kvEnt // hotGet's lookup item (probeOrd)

	// filter holds the framed prefixes of every key that may be cold
	// (committed.go); without a cold tier it is empty and unused
	filter prefixFilter

	// com: the committed state, a second cold source (committed.go; nil:
	// the spill DB is the only one). cleanBelow: entries with a mark below
	// it have their current value in the committed state; pendEpoch: the
	// epoch of the pending snapshot's changes. comGen counts the rises of
	// cleanBelow (a kept committed iterator older than it is replaced);
	// comPt is comGet's kept iterator.
	com        Committed
	cleanBelow uint64
	pendEpoch  uint64
	comGen     uint64
	comPt      comPoint
}

// kvEnt is one hot entry.
type kvEnt struct {
	key  []byte // framed key (owned)
	val  []byte
	last int64 // last update (unix ms), with a TTL
	mark uint64
	kg   uint16
	// stale: the cold copy is absent or older (written back on eviction);
	// inCold: the cold tier may hold a copy (a Delete must remove it).
	stale, inCold, ref bool
	// dead: no longer in the hot index (deleted or evicted); a change set
	// may still hold it
	dead bool
	// fresh: created by PutNew and not yet in a snapshot, so the committed
	// state cannot hold its key (its removal needs no tombstone)
	fresh bool
	// evicted: dead by eviction (not deletion), its value still the key's
	// as it left memory; multi: a change set held another entry of its key
	// too (then the cold tier, not this entry, has the key's last value)
	evicted, multi bool
	pos            int32 // index in the cold tier's clock
}

// ord is an item of the ordered indexes: the first 16 bytes of its key
// (from an offset) as two big-endian words, so that most comparisons touch
// no pointer, and the entry, whose key is the item's (24 bytes: a B-tree
// insert shifts half of what a copy of the key's slice header would). A
// lookup's item points to a probe entry that only has a key.
type ord struct {
	p0, p1 uint64
	e      *kvEnt
}

// ordWords are the first 16 bytes of k from off, zero-padded.
func ordWords(k []byte, off int) (p0, p1 uint64) {
	var w [16]byte
	copy(w[:], k[min(off, len(k)):])
	return binary.BigEndian.Uint64(w[:8]), binary.BigEndian.Uint64(w[8:])
}

// hotOrd is entry e's item of the hot index.
func hotOrd(e *kvEnt) ord {
	p0, p1 := ordWords(e.key, 0)
	return ord{p0: p0, p1: p1, e: e}
}

// probeOrd is the hot-index item that finds key k: probe (the caller's,
// reused) gets k as its key.
func probeOrd(probe *kvEnt, k []byte) ord {
	probe.key = k
	return hotOrd(probe)
}

// lessOrd orders by key: zero padding of short keys never reverses the
// order of bytes.Compare, it only ties (then the keys decide).
func lessOrd(a, b ord) bool {
	if a.p0 != b.p0 {
		return a.p0 < b.p0
	}
	if a.p1 != b.p1 {
		return a.p1 < b.p1
	}
	return bytes.Compare(a.e.key, b.e.key) < 0
}

// hotGet finds the hot entry of framed key k.
func (s *KV) hotGet(k []byte) (*kvEnt, bool) {
	it, ok := s.hot.Get(probeOrd(&s.probe, k))
	s.probe.key = nil
	if !ok {
		return nil, false
	}
	return it.e, true
}

// keyArena hands out copies of keys from large chunks, so recording a
// change does not allocate per key.
type keyArena struct{ cur []byte }

const arenaChunk = 64 << 10

func (a *keyArena) copy(k []byte) []byte {
	if cap(a.cur)-len(a.cur) < len(k) {
		n := arenaChunk
		if len(k) > n {
			n = len(k)
		}
		a.cur = make([]byte, 0, n)
	}
	off := len(a.cur)
	a.cur = append(a.cur, k...)
	return a.cur[off:len(a.cur):len(a.cur)]
}

// NewKV returns empty KV state (Options.IntKeys is ignored: keys are
// bytes). With a Pebble backend the caller must Close it.
func NewKV(o Options) (*KV, error) {
	if o.MaxParallelism <= 0 || o.MaxParallelism > MaxKeyGroups {
		return nil, fmt.Errorf("state: max parallelism %d out of range 1..%d", o.MaxParallelism, MaxKeyGroups)
	}
	backend, err := ParseBackend(o.Backend)
	if err != nil {
		return nil, err
	}
	o.IntKeys = false
	bt := btree.Options{NoLocks: true, Degree: 64}
	kv := &KV{
		o:      o,
		ttl:    o.TTL.Milliseconds(),
		plen:   len(checkpoint.KeyedPrefix(o.OpID, 0)),
		hot:    btree.NewBTreeGOptions(lessOrd, bt),
		prefix: make([][]byte, o.MaxParallelism),
		epoch:  1,
	}
	kv.it.keep = true
	if o.TTL > 0 && kv.ttl == 0 {
		kv.ttl = 1
	}
	if backend == BackendPebble {
		// (with a TTL, Sweep must see every key: committed keys are read
		// by key group, so a TTL keeps the spill DB as the only cold source)
		com := o.Committed != nil && o.Checkpointing && kv.ttl == 0
		c, err := openCold(o, true, com)
		if err != nil {
			return nil, err
		}
		kv.cold = c
		if com {
			kv.com = o.Committed
			kv.cleanBelow = 1 // mark 0: never changed here (loaded or restored)
		}
	}
	return kv, nil
}

// Close releases the cold tier (its spill directory is deleted). A KV in
// memory needs no Close; Close is idempotent.
func (s *KV) Close() error {
	if s.cold == nil {
		return nil
	}
	err := s.it.release()
	kvTotals.add(s.Stats())
	if cerr := s.cold.close(); err == nil {
		err = cerr
	}
	s.cold = nil
	return err
}

// kvTotals: the join state's tier (KVs and Rows).
var kvTotals tierTotals

// KVTierTotals are the counters of every tiered KV (and Rows) closed so
// far in the process: tests of jobs read them to assert that the tier
// paged.
func KVTierTotals() TierStats { return kvTotals.stats() }

// tierTotals sums the counters of the tiers closed so far in the process.
type tierTotals struct{ evictions, writeBacks, coldReads, cleanDrops, comReads, mapped atomic.Int64 }

func (t *tierTotals) add(st TierStats) {
	t.evictions.Add(st.Evictions)
	t.writeBacks.Add(st.WriteBacks)
	t.coldReads.Add(st.ColdReads)
	t.cleanDrops.Add(st.CleanDrops)
	t.comReads.Add(st.ComReads)
	t.mapped.Add(st.Mapped)
}

func (t *tierTotals) stats() TierStats {
	return TierStats{Evictions: t.evictions.Load(), WriteBacks: t.writeBacks.Load(),
		ColdReads: t.coldReads.Load(), CleanDrops: t.cleanDrops.Load(), ComReads: t.comReads.Load(), Mapped: t.mapped.Load()}
}

// Key frames a state key: namespace, key and optional map key, each
// length-prefixed. dst is reused.
func Key(dst, namespace, key []byte, mapKey ...[]byte) []byte {
	dst = binary.AppendUvarint(dst[:0], uint64(len(namespace)))
	dst = append(dst, namespace...)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	for _, m := range mapKey {
		dst = binary.AppendUvarint(dst, uint64(len(m)))
		dst = append(dst, m...)
	}
	return dst
}

func (s *KV) keyPrefix(kg int) []byte {
	if s.prefix[kg] == nil {
		s.prefix[kg] = checkpoint.KeyedPrefix(s.o.OpID, kg)
	}
	return s.prefix[kg]
}

func (s *KV) expired(last int64) bool { return s.ttl > 0 && s.now-last > s.ttl }

// find returns the entry of framed key k in key group kg, loading it from
// the cold tier (nil: absent). An expired key is removed (Flink's TTL:
// never returned).
func (s *KV) find(kg int, k []byte) *kvEnt {
	e, ok := s.hotGet(k)
	if !ok {
		e = s.loadCold(kg, k)
		if e == nil {
			return nil
		}
	}
	if s.expired(e.last) {
		s.remove(e)
		return nil
	}
	e.ref = true
	return e
}

// track records that key group kg's framed key k changed.
func (s *KV) track(e *kvEnt) {
	if !s.o.Checkpointing || e.mark == s.epoch {
		return
	}
	e.mark = s.epoch
	s.trackKey(int(e.kg), e)
}

func (s *KV) trackKey(kg int, e *kvEnt) {
	s.chg.add(chgOrd(kg, e))
}

// chgSet is a change set: the entries whose keys changed in a checkpoint
// interval, appended as they change, and sorted by state key (key group,
// framed key) and deduplicated when read (Snapshot) or when duplicates
// could dominate. A key may appear more than once (a deleted or evicted
// entry's key tracked again through a new entry); at most one of its
// entries is live (in the hot index), and that one holds the current
// value. Without a live entry the key's value is the cold tier's, or the
// key is gone. Appending is a slice append: no key copy, no ordered-index
// work per change, no lookup at the barrier.
type chgSet struct {
	keys []ord // p0: key group and 4 key bytes, p1: 8 more
	// sorted: keys[:sorted] is sorted and free of duplicates
	sorted int
	// next: the length at which add compacts (0: chgCompactMin)
	next int
}

// chgOrd is the change-set item of entry e in key group kg.
func chgOrd(kg int, e *kvEnt) ord {
	var w [12]byte
	copy(w[:], e.key)
	return ord{p0: uint64(kg)<<32 | uint64(binary.BigEndian.Uint32(w[:4])), p1: binary.BigEndian.Uint64(w[4:]), e: e}
}

func (o ord) kg() int { return int(o.p0 >> 32) }

// chgCompactMin is the length from which a change set with many
// duplicates is compacted as it grows (a variable for tests).
var chgCompactMin = 1 << 14

func (c *chgSet) len() int { return len(c.keys) }

func (c *chgSet) add(o ord) {
	c.keys = append(c.keys, o)
	if len(c.keys) >= max(c.next, chgCompactMin) {
		// bound the duplicates: memory stays within a few times the
		// distinct keys of the interval
		before := len(c.keys)
		c.compact()
		// the next compaction when the set is 8 times larger; 64 times
		// when this one found few duplicates (blind inserts of fresh keys,
		// a join side's rows, have none: sorting them early is wasted)
		grow := 8
		if (before-len(c.keys))*8 < before {
			grow = 64
		}
		c.next = grow * len(c.keys)
	}
}

func cmpOrd(a, b ord) int {
	switch {
	case a.p0 != b.p0:
		if a.p0 < b.p0 {
			return -1
		}
		return 1
	case a.p1 != b.p1:
		if a.p1 < b.p1 {
			return -1
		}
		return 1
	}
	return bytes.Compare(a.e.key, b.e.key)
}

// compact sorts the keys and keeps one item per key: its live entry if it
// has one. Only the keys added since the last compaction are sorted; they
// are then merged with the sorted rest.
func (c *chgSet) compact() {
	if c.sorted == len(c.keys) {
		return
	}
	tail := c.keys[c.sorted:]
	slices.SortFunc(tail, cmpOrd)
	if c.sorted > 0 {
		head := c.keys[:c.sorted]
		merged := make([]ord, 0, len(c.keys))
		i, j := 0, 0
		for i < len(head) && j < len(tail) {
			if cmpOrd(tail[j], head[i]) < 0 {
				merged = append(merged, tail[j])
				j++
			} else {
				merged = append(merged, head[i])
				i++
			}
		}
		merged = append(merged, head[i:]...)
		merged = append(merged, tail[j:]...)
		clear(c.keys)
		c.keys = merged
	}
	out := 0
	for i := 0; i < len(c.keys); {
		j := i + 1
		keep := c.keys[i]
		for j < len(c.keys) && cmpOrd(c.keys[j], keep) == 0 {
			if !c.keys[j].e.dead {
				keep = c.keys[j]
			}
			j++
		}
		if j-i > 1 {
			keep.e.multi = true
		}
		c.keys[out] = keep
		out++
		i = j
	}
	clear(c.keys[out:])
	c.keys = c.keys[:out]
	c.sorted = out
}

// absorb moves o's keys into c (o is left empty).
func (c *chgSet) absorb(o *chgSet) {
	if len(c.keys) == 0 {
		*c, *o = *o, chgSet{keys: c.keys[:0]}
		return
	}
	c.keys = append(c.keys, o.keys...)
	o.reset()
}

// reset empties c, keeping its slice when small.
func (c *chgSet) reset() {
	clear(c.keys)
	if cap(c.keys) > 1<<16 {
		c.keys = nil
	}
	c.keys, c.sorted, c.next = c.keys[:0], 0, 0
}

// remove deletes entry e (hot, or just loaded) and tracks the deletion.
func (s *KV) remove(e *kvEnt) {
	if s.o.Checkpointing && e.mark != s.epoch { // (mark == epoch: in chg)
		s.trackKey(int(e.kg), e)
	}
	s.hot.Delete(hotOrd(e))
	e.dead = true
	if s.cold != nil {
		s.cold.drop(s, e)
	}
}

// newEnt returns a new entry for framed key k with value v (the key and
// the value share one allocation).
func newEnt(kg int, k, v []byte) *kvEnt {
	buf := make([]byte, len(k)+len(v))
	copy(buf, k)
	copy(buf[len(k):], v)
	return &kvEnt{key: buf[:len(k):len(k)], val: buf[len(k):], kg: uint16(kg), ref: true}
}

// insert adds a new hot entry for framed key k with value v.
func (s *KV) insert(kg int, k, v []byte) *kvEnt {
	e := newEnt(kg, k, v)
	s.hot.Set(hotOrd(e))
	if s.cold != nil {
		e.inCold = s.cold.used // a blind Put: the cold tier may hold the key
		s.cold.add(e)
	}
	return e
}

// changed finishes an update of e: TTL time, change tracking, eviction.
func (s *KV) changed(e *kvEnt, oldCap int) {
	e.last = s.now
	e.stale = true
	s.track(e)
	if s.cold != nil {
		s.cold.resized(s, e, oldCap)
	}
}

// Get returns the value of a framed key of key group kg (nil, false:
// absent). The value is valid until the key changes.
func (s *KV) Get(kg int, k []byte) ([]byte, bool) {
	e := s.find(kg, k)
	if e == nil {
		return nil, false
	}
	if s.cold != nil {
		s.cold.maybeEvict(s)
	}
	return e.val, true
}

// Put sets the value of a framed key in key group kg (copied). kg must be
// the key's group (the same for every call with the key). A key that is
// not in memory is not read from the cold tier: the Put shadows it.
func (s *KV) Put(kg int, k, v []byte) {
	e, ok := s.hotGet(k)
	if !ok {
		e = s.insert(kg, k, v)
		s.changed(e, cap(e.val)) // (insert accounted the value)
		return
	}
	e.ref = true
	e.kg = uint16(kg)
	oldCap := cap(e.val)
	e.val = append(e.val[:0], v...)
	s.changed(e, oldCap)
}

// PutNew sets the value of a framed key that the caller knows has never
// been in the KV (a key with a fresh sequence number): a blind insert, one
// ordered-index update and no read. If the key is in memory after all,
// it is an ordinary Put.
func (s *KV) PutNew(kg int, k, v []byte) {
	e := newEnt(kg, k, v)
	if prev, replaced := s.hot.Set(hotOrd(e)); replaced {
		s.hot.Set(prev)
		s.Put(kg, k, v)
		return
	}
	e.fresh = true
	if s.cold != nil {
		// a Delete removes a cold copy (there is none unless the caller
		// was wrong about the key). With a committed state the caller is
		// taken at its word: an entry with a spill copy cannot leave
		// memory without a write
		e.inCold = s.cold.used && s.com == nil
		s.cold.add(e)
	}
	s.changed(e, cap(e.val))
}

// Delete removes a framed key of key group kg.
func (s *KV) Delete(kg int, k []byte) {
	e, ok := s.hotGet(k)
	if !ok {
		e = s.loadCold(kg, k)
		ok = e != nil
	}
	if ok {
		s.remove(e)
	}
}

// Append adds an element to the list state of a framed key.
func (s *KV) Append(kg int, k, elem []byte) {
	e := s.find(kg, k)
	oldCap := 0
	if e == nil {
		e = s.insert(kg, k, nil)
	} else {
		e.kg = uint16(kg)
		oldCap = cap(e.val)
	}
	e.val = binary.AppendUvarint(e.val, uint64(len(elem)))
	e.val = append(e.val, elem...)
	s.changed(e, oldCap)
}

var errBadList = errors.New("state: corrupt list value")

// List calls fn for every element of the list state of a framed key of
// key group kg, in the order appended.
func (s *KV) List(kg int, k []byte, fn func(elem []byte) error) error {
	v, ok := s.Get(kg, k)
	if !ok {
		return nil
	}
	for len(v) > 0 {
		n, w := binary.Uvarint(v)
		if w <= 0 || n > uint64(len(v)-w) {
			return errBadList
		}
		if err := fn(v[w : w+int(n)]); err != nil {
			return err
		}
		v = v[w+int(n):]
	}
	return nil
}

// Scan calls fn for every live key starting with prefix (a framed
// namespace and key: map state iteration), in key order. kg is the key
// group of every such key, or -1 when the prefix spans key groups (then a
// KV reading the committed state collects and sorts its keys: for tests
// and metrics, not per row). k and v are only valid during the call, and
// fn must not modify the KV. Scan does not allocate (it reuses one
// iterator); see also NewIter.
func (s *KV) Scan(kg int, prefix []byte, fn func(k, v []byte) error) error {
	it := &s.it
	it.kv = s
	it.Seek(kg, prefix)
	for it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}

// spillUsed reports whether keys may be in the spill DB.
func (s *KV) spillUsed() bool { return s.cold != nil && s.cold.used }

// coldUsed reports whether keys may be in the cold tier (the spill DB or
// the committed state).
func (s *KV) coldUsed() bool { return s.spillUsed() || s.com != nil }

// Len is the number of live keys (expired ones not yet removed included).
// In memory it is O(1); with keys in the cold tier it counts them (a scan:
// for tests and metrics, not per row).
func (s *KV) Len() int {
	if !s.coldUsed() {
		return s.hot.Len()
	}
	n, err := s.cold.count(s)
	if err != nil {
		panic(err)
	}
	return n
}

// Sweep looks at up to n keys, hot or cold, after the ones the last Sweep
// looked at (wrapping around at the end) and removes the expired ones:
// Flink's incremental cleanup, so that expired state whose key is never
// read again still leaves the state (and the next checkpoint). Without a
// TTL it does nothing. Call it between batches, with no value of the KV
// held.
func (s *KV) Sweep(n int) error {
	if s.ttl <= 0 || n <= 0 {
		return nil
	}
	it := &s.it
	it.kv = s
	it.noTTL = true
	it.seekFrom(s.sweepFrom)
	s.sweepKeys = s.sweepKeys[:0]
	s.sweepDel.cur = s.sweepDel.cur[:0]
	seen := 0
	for seen < n && it.Next() {
		seen++
		if s.expired(it.last) {
			s.sweepKeys = append(s.sweepKeys, s.sweepDel.copy(it.Key()))
		}
		s.sweepFrom = append(s.sweepFrom[:0], it.Key()...)
	}
	if seen < n {
		s.sweepFrom = s.sweepFrom[:0] // at the end: start over next time
	} else {
		s.sweepFrom = append(s.sweepFrom, 0) // the next key after it
	}
	err := it.Close()
	it.noTTL = false
	if err != nil {
		return err
	}
	for _, k := range s.sweepKeys {
		s.Delete(-1, k) // (with a TTL the committed state is not read: no key group needed)
	}
	return nil
}

// SetNow sets processing time for TTL (unix ms).
func (s *KV) SetNow(ms int64) { s.now = ms }

// Changed is the number of keys the next Snapshot would consider (current
// and pending change sets).
func (s *KV) Changed() int {
	s.chg.compact()
	s.pend.compact()
	return s.chg.len() + s.pend.len()
}

// Tracking reports whether changes are tracked (checkpointing is on).
func (s *KV) Tracking() bool { return s.o.Checkpointing }

// mergePending moves the pending change set back into the current one.
func (s *KV) mergePending() {
	s.chg.absorb(&s.pend)
	s.merged = true
	s.pendingID = 0
	s.epoch++ // marks of the current epoch are a subset: recheck by lookup
}

// appendStored appends a value as a checkpoint stores it: TTL header (with
// a TTL), value.
func (s *KV) appendStored(dst []byte, last int64, val []byte) []byte {
	if s.ttl > 0 {
		dst = binary.BigEndian.AppendUint64(append(dst, ttlHeader), uint64(last))
	}
	return append(dst, val...)
}

// fetched is the stored value of the change set's i-th key, read from the
// cold tier by fetchCold (only for keys without a live entry).
type fetched struct {
	off, n int
	live   bool
}

// fetchCold reads the current values of the changed keys that have no
// live entry, in framed-key order (the cold tier's order: one forward
// pass of seeks, neighbouring keys sharing blocks), into s.fetched by
// change-set position.
func (s *KV) fetchCold() error {
	n := s.chg.len()
	if cap(s.fetched) < n {
		s.fetched = make([]fetched, n)
	}
	s.fetched = s.fetched[:n]
	s.coldPos = s.coldPos[:0]
	for pos, o := range s.chg.keys {
		if o.e.dead && o.e.multi { // (see Snapshot)
			s.coldPos = append(s.coldPos, coldRef{pos: pos, kg: o.kg(), key: o.e.key})
		}
	}
	sort.Slice(s.coldPos, func(i, j int) bool {
		return bytes.Compare(s.coldPos[i].key, s.coldPos[j].key) < 0
	})
	defer s.cold.endSeeks()
	s.fetchArena = s.fetchArena[:0]
	for _, c := range s.coldPos {
		ckg, last, val, found, tomb, err := s.cold.seek(c.key)
		if err != nil {
			return err
		}
		f := fetched{off: len(s.fetchArena), live: found && ckg == c.kg}
		if f.live {
			s.fetchArena = s.appendStored(s.fetchArena, last, val)
		} else if !found && !tomb && s.com != nil {
			// dropped clean (then merged back by an abort): the
			// committed state has it (no TTL here: stored as is)
			cv, ok, err := s.comGet(c.kg, c.key)
			if err != nil {
				return err
			}
			if ok {
				f.live = true
				s.fetchArena = append(s.fetchArena, cv...)
			}
		}
		f.n = len(s.fetchArena) - f.off
		s.fetched[c.pos] = f
	}
	return nil
}

// releaseFetch drops the snapshot's cold reads (kept for reuse when small).
func (s *KV) releaseFetch() {
	clear(s.coldPos)
	s.coldPos = s.coldPos[:0]
	if cap(s.fetchArena) > 4<<20 {
		s.fetchArena, s.fetched, s.coldPos = nil, nil, nil
	}
}

type coldRef struct {
	pos, kg int
	key     []byte // framed
}

// Snapshot writes the changes of checkpoint id to w, sorted by key: a Put
// of every changed live key and a Delete of every changed key that is
// gone. The change set then becomes pending until Complete or Abort. On
// error the change set is left as it was (with any pending set merged in).
func (s *KV) Snapshot(id int64, w checkpoint.StateWriter) error {
	if !s.o.Checkpointing {
		return nil
	}
	if s.pendingID != 0 {
		s.mergePending()
	}
	s.sortChanges()
	cold := s.coldUsed()
	if cold {
		if err := s.fetchCold(); err != nil {
			return err
		}
	}
	for pos, o := range s.chg.keys {
		kg := o.kg()
		o.e.fresh = false // the committed state may hold it from now on
		s.scratch = append(append(s.scratch[:0], s.keyPrefix(kg)...), o.e.key...)
		full := s.scratch
		var v []byte
		var live bool
		if e := o.e; !e.dead || !cold || !e.multi {
			// a live entry; or the key's only entry of the interval, dead:
			// deleted, or evicted with the key's value
			v, live = s.vbuf[:0], (!e.dead || e.evicted) && int(e.kg) == kg
			if live {
				v = s.appendStored(v, e.last, e.val)
			}
			s.vbuf = v
		} else {
			r := s.fetched[pos]
			v, live = s.fetchArena[r.off:r.off+r.n], r.live
		}
		var err error
		if live {
			err = w.Put(full, v)
		} else {
			err = w.Delete(full)
		}
		if err != nil {
			return err
		}
	}
	s.releaseFetch()
	s.chg, s.pend = s.pend, s.chg
	s.chg.reset()
	s.merged = false
	s.pendingID = id
	s.pendEpoch = s.epoch
	s.epoch++
	return nil
}

// chgScanMin is the change set size from which sortChanges may scan the
// hot index instead of sorting (a variable for tests).
var chgScanMin = 4096

// sortChanges puts the change set in snapshot order (key group, framed
// key), one item per key, a live entry preferred. When the set is a large
// share of the hot entries (a join side's new rows: thousands of fresh
// keys per interval, whose framed keys share long prefixes and make
// comparisons expensive) it scans the hot index, already in framed-key
// order, for the entries marked in this epoch (exactly the live entries of
// the set, unless a pending set was merged back) and buckets them by key
// group; only the set's dead entries (deleted or evicted) are sorted and
// merged in (chgSet.compact). Otherwise it sorts the whole set.
func (s *KV) sortChanges() {
	c := &s.chg
	n := c.len()
	if s.merged || n == c.sorted || n < chgScanMin || n*32 < s.hot.Len() {
		c.compact()
		return
	}
	s.scanSorts++
	if len(s.kgCount) != len(s.prefix)+1 {
		s.kgCount = make([]int, len(s.prefix)+1)
	}
	counts := s.kgCount
	clear(counts)
	live := 0
	s.hot.Scan(func(it ord) bool {
		if it.e.mark == s.epoch {
			counts[int(it.e.kg)+1]++
			live++
		}
		return true
	})
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	// the live entries, in order and unique, are the sorted head of the
	// new set; the dead ones its tail, which compact sorts and merges in
	// (a key's live entry preferred)
	keys := make([]ord, live, n)
	s.hot.Scan(func(it ord) bool {
		if e := it.e; e.mark == s.epoch {
			keys[counts[e.kg]] = chgOrd(int(e.kg), e)
			counts[e.kg]++
		}
		return true
	})
	for _, o := range c.keys {
		if o.e.dead {
			keys = append(keys, o)
		}
	}
	clear(c.keys)
	c.keys, c.sorted = keys, live
	c.compact()
}

// Complete is called when checkpoint id is committed: the pending change
// set is dropped if id covers it.
func (s *KV) Complete(id int64) {
	if s.pendingID != 0 && id >= s.pendingID {
		s.pendingCommitted() // (if noteCommitted has not seen it)
		s.pend.reset()
		s.pendingID = 0
	}
}

// Abort is called when checkpoint id failed: its pending change set goes
// back into the current one.
func (s *KV) Abort(id int64) {
	if s.pendingID != 0 && id == s.pendingID {
		s.mergePending()
	}
}

// Restore loads every key of key groups [start, end) from r. Restored keys
// are clean (in the committed state already). With a Pebble backend they
// are written straight into the cold tier, never all held in memory; a KV
// that reads the committed state (r's state) writes nothing: it only
// notes that the keys are cold.
func (s *KV) Restore(r checkpoint.StateReader, start, end int) error {
	for kg := start; kg < end; kg++ {
		prefix := s.keyPrefix(kg)
		err := r.Scan(prefix, func(key, val []byte) error {
			k := key[len(prefix):]
			if s.com != nil {
				s.filter.add(k)
				return nil
			}
			last := s.now
			if s.ttl > 0 && len(val) > 0 && val[0] == ttlHeader {
				if len(val) < 9 {
					return fmt.Errorf("state: truncated TTL header")
				}
				last, val = int64(binary.BigEndian.Uint64(val[1:9])), val[9:]
				if last == 0 {
					last = s.now
				}
			}
			if s.cold != nil {
				return s.cold.restore(s, kg, k, last, val)
			}
			e, ok := s.hotGet(k)
			if !ok {
				e = s.insert(kg, k, val)
			} else {
				e.val = append(e.val[:0], val...)
			}
			e.kg, e.last = uint16(kg), last
			return nil
		})
		if err != nil {
			return fmt.Errorf("restoring key group %d: %w", kg, err)
		}
	}
	if s.cold != nil {
		return s.cold.flush()
	}
	return nil
}
