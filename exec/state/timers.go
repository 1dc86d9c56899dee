package state

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/streamsql/streamsql/checkpoint"
)

// Timers are the keyed timers of one operator subtask (event time or
// processing time: one Timers each), stored with the state by key group so
// that they are checkpointed, restored and rescaled with the keys they
// belong to. A timer is (key group, timestamp, key); the key is the
// operator's encoded key plus whatever namespace it needs (a window's end,
// a join side). Registering the same timer twice keeps one.
//
// State keys: KeyedPrefix(opID+"/timers/"+name, key group), then the
// timestamp as 8 bytes big endian with the sign bit flipped (so byte order
// is time order), then the key.
//
// In memory, timers of one timestamp share a bucket, and a min-heap holds
// the distinct timestamps (many timers share one: every key of a window
// fires at its end). A bucket key is the key group (4 bytes big endian)
// then the key, so byte order of bucket keys is (key group, key) order. A
// bucket holds a base, its sorted live keys as of the last snapshot, and a
// log of the registrations and deletes since, in arrival order: Register
// and Delete append to the log (no hashing, no allocation per timer), and
// the log is sorted and folded into the base when it is needed: when the
// bucket fires, when a snapshot writes its changes, when Next or Len asks
// (and when it has grown large). Folded, the log is exactly the bucket's
// change set since the last snapshot: one op per key whose liveness
// changed, so a timer registered and removed between two snapshots is
// written by none.
//
// The operators of this engine derive their timers from their other state
// when they restore (every timer is a function of a slot: a window's end,
// a row's expiry), so they make their Timers without checkpointing and
// call DropStored instead of Restore; the tracked mode below is kept for a
// timer that no state implies.
//
// Snapshot writes the change sets of the buckets touched since the last
// one, and a Delete or Put for each timer to recheck: the timers some
// snapshot wrote that have fired since (their bucket is gone) and the
// changes of an aborted snapshot, each decided by whether it is live now.
// Abort merges the pending snapshot's changes into that recheck list.
type Timers struct {
	opID  string // the scope: opID + "/timers/" + name
	track bool

	buckets map[int64]*timerBucket
	times   []int64 // min-heap of the buckets' timestamps
	spare   []*timerBucket
	last    *timerBucket // the bucket of the last Register or Delete

	// dirty lists the buckets whose log may be non-empty since the last
	// snapshot (a bucket with dirty set; others are stale entries).
	dirty []*timerBucket
	// recheck holds compact keys (key group, timestamp as in the state
	// key, key) whose state the next snapshot decides by liveness.
	recheck   timerKeys
	pendingID int64
	pending   timerKeys // compact keys the snapshot in flight wrote

	// the bucket being fired by Advance (detached from buckets): its
	// base, its keys before firing (killed by a Delete during the fire)
	firing *timerBucket
	fireAt int // base keys [fireAt, n) are not fired yet
	killed []bool

	chg     timerKeys // Snapshot's changes
	chgDel  []bool
	items   []radixItem // sort scratch
	radix   []radixItem
	tss     []int64
	fold    timerKeys // fold scratch
	foldDel []bool
	scratch []byte
	fireKey []byte
	prefix  [][]byte
}

// timerKeys is a list of byte strings in one buffer.
type timerKeys struct {
	buf  []byte
	ends []int // (not 32 bits: a window of a hundred million keys would wrap them)
}

func (l *timerKeys) n() int { return len(l.ends) }

func (l *timerKeys) key(i int) []byte {
	s := 0
	if i > 0 {
		s = l.ends[i-1]
	}
	return l.buf[s:l.ends[i]:l.ends[i]]
}

func (l *timerKeys) add(k []byte) {
	l.buf = append(l.buf, k...)
	l.ends = append(l.ends, len(l.buf))
}

// addKey adds the bucket key of (kg, key).
func (l *timerKeys) addKey(kg int, key []byte) {
	l.buf = binary.BigEndian.AppendUint32(l.buf, uint32(kg))
	l.add(key)
}

// addCompact adds the compact key of bucket key bk at timestamp ts.
func (l *timerKeys) addCompact(ts int64, bk []byte) {
	l.buf = append(l.buf, bk[:4]...)
	l.buf = binary.BigEndian.AppendUint64(l.buf, uint64(ts)^(1<<63))
	l.add(bk[4:])
}

func (l *timerKeys) reset() {
	l.buf, l.ends = l.buf[:0], l.ends[:0]
}

// search returns the index of k in sorted list l[lo:], or -1.
func (l *timerKeys) search(lo int, k []byte) int {
	hi := l.n()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(l.key(m), k) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < l.n() && bytes.Equal(l.key(lo), k) {
		return lo
	}
	return -1
}

type timerBucket struct {
	ts         int64
	base       timerKeys // live bucket keys as of the last snapshot
	baseSorted bool      // false after a restore added keys
	log        timerKeys // bucket keys registered or deleted since
	del        []bool    // per log entry: a Delete
	folded     bool      // log is sorted, one change a key
	dels       int       // Deletes in the log since it was folded
	live       int       // live timers; valid when folded
	foldAt     int       // log length that triggers a fold on append
	dirty      bool
}

// NewTimers returns an empty timer service for operator opID; name tells
// timer services of one operator apart ("event", "processing").
func NewTimers(opID, name string, maxParallelism int, checkpointing bool) (*Timers, error) {
	if maxParallelism <= 0 || maxParallelism > MaxKeyGroups {
		return nil, fmt.Errorf("state: max parallelism %d out of range 1..%d", maxParallelism, MaxKeyGroups)
	}
	return &Timers{opID: opID + "/timers/" + name, track: checkpointing,
		buckets: map[int64]*timerBucket{}, prefix: make([][]byte, maxParallelism)}, nil
}

const timerHdr = 12 // key group (4) + timestamp (8) before the key

// timerFoldAt is the log length of a bucket at which Register and Delete
// fold it (then at four times the folded length).
const timerFoldAt = 1 << 16

func (t *Timers) keyPrefix(kg int) []byte {
	if t.prefix[kg] == nil {
		t.prefix[kg] = checkpoint.KeyedPrefix(t.opID, kg)
	}
	return t.prefix[kg]
}

func compactTS(k []byte) int64 {
	return int64(binary.BigEndian.Uint64(k[4:timerHdr]) ^ (1 << 63))
}

// bucketKG is the key group of a bucket (or compact) key.
func bucketKG(k []byte) int { return int(binary.BigEndian.Uint32(k)) }

// bucket returns the bucket of ts, made (and its time pushed) if there is
// none.
func (t *Timers) bucket(ts int64) *timerBucket {
	if b := t.last; b != nil && b.ts == ts {
		return b
	}
	b := t.buckets[ts]
	if b == nil {
		if n := len(t.spare); n > 0 {
			b, t.spare = t.spare[n-1], t.spare[:n-1]
		} else {
			b = &timerBucket{}
		}
		b.ts, b.baseSorted, b.folded, b.live, b.foldAt = ts, true, true, 0, timerFoldAt
		t.buckets[ts] = b
		t.pushTime(ts)
	}
	t.last = b
	return b
}

// logOp appends a Register (del false) or Delete to bucket b's log.
func (t *Timers) logOp(b *timerBucket, kg int, key []byte, del bool) {
	b.log.addKey(kg, key)
	b.del = append(b.del, del)
	b.folded = false
	if del {
		b.dels++
	}
	if t.track && !b.dirty {
		b.dirty = true
		t.dirty = append(t.dirty, b)
	}
	if b.log.n() >= b.foldAt { // bounds the log of a timer set and deleted again and again
		t.foldLog(b)
		b.foldAt = max(timerFoldAt, 4*b.log.n())
	}
}

// firingIndex is the index of (kg, key) among the keys of the bucket
// being fired that have not fired yet (and were not deleted), or -1.
func (t *Timers) firingIndex(ts int64, kg int, key []byte) int {
	f := t.firing
	if f == nil || f.ts != ts {
		return -1
	}
	t.scratch = binary.BigEndian.AppendUint32(t.scratch[:0], uint32(kg))
	t.scratch = append(t.scratch, key...)
	i := f.base.search(t.fireAt, t.scratch)
	if i >= 0 && t.killed[i] {
		return -1
	}
	return i
}

// Register sets a timer; a no-op if it is set already.
func (t *Timers) Register(kg int, ts int64, key []byte) {
	if t.firing != nil && t.firingIndex(ts, kg, key) >= 0 {
		return // due in the fire under way
	}
	t.logOp(t.bucket(ts), kg, key, false)
}

// Delete removes a timer if it is set.
func (t *Timers) Delete(kg int, ts int64, key []byte) {
	if t.firing != nil {
		if i := t.firingIndex(ts, kg, key); i >= 0 {
			t.killed[i] = true
		}
	}
	b := t.last
	if b == nil || b.ts != ts {
		if b = t.buckets[ts]; b == nil {
			return
		}
	}
	t.logOp(b, kg, key, true)
}

// sortKeys sorts the keys of l by bytes, ties by index (so a stable sort),
// into t.items.
func (t *Timers) sortKeys(l *timerKeys) []radixItem {
	items := t.items[:0]
	for i := 0; i < l.n(); i++ {
		p0, p1 := prefix16(l.key(i))
		items = append(items, radixItem{p0: p0, p1: p1, i: int32(i)})
	}
	return t.sortItems(items, l)
}

// prefix16 is the first 16 bytes of k (zero padded) as two big-endian
// words: their order is the bytes' order.
func prefix16(k []byte) (uint64, uint64) {
	var p [16]byte
	copy(p[:], k)
	return binary.BigEndian.Uint64(p[:8]), binary.BigEndian.Uint64(p[8:])
}

// prefix20 is prefix16 and the key's next 4 bytes (radixItem.p2).
func prefix20(k []byte) (uint64, uint64, uint32) {
	var p [20]byte
	copy(p[:], k)
	return binary.BigEndian.Uint64(p[:8]), binary.BigEndian.Uint64(p[8:16]), binary.BigEndian.Uint32(p[16:])
}

// sortItems sorts items whose (p0, p1) order agrees with their keys' (in
// l) byte order: by (p0, p1), then key, then index (sortRadix).
func (t *Timers) sortItems(items []radixItem, l *timerKeys) []radixItem {
	items, t.radix = sortRadix(items, t.radix, func(a, b radixItem) int {
		if c := bytes.Compare(l.key(int(a.i)), l.key(int(b.i))); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	t.items = items
	return items
}

// sortChanges sorts Snapshot's changes (compact keys) into state key
// order: (key group, timestamp, key). The 16-byte radix prefix is the key
// group and the rank of the timestamp among the changes' (few distinct
// ones), then the key's first 8 bytes.
func (t *Timers) sortChanges() []radixItem {
	l := &t.chg
	tss := t.tss[:0]
	for i := 0; i < l.n(); i++ {
		if ts := compactTS(l.key(i)); len(tss) == 0 || tss[len(tss)-1] != ts {
			tss = append(tss, ts)
		}
	}
	slices.Sort(tss)
	tss = slices.Compact(tss)
	t.tss = tss
	items := t.items[:0]
	for i := 0; i < l.n(); i++ {
		c := l.key(i)
		rank, _ := slices.BinarySearch(tss, compactTS(c))
		var p [8]byte
		copy(p[:], c[timerHdr:])
		items = append(items, radixItem{
			p0: uint64(bucketKG(c))<<40 | uint64(rank),
			p1: binary.BigEndian.Uint64(p[:]),
			i:  int32(i),
		})
	}
	return t.sortItems(items, l)
}

// sortBase sorts a restored bucket's base and drops repeats.
func (t *Timers) sortBase(b *timerBucket) {
	items := t.sortKeys(&b.base)
	t.fold.reset()
	for j, it := range items {
		k := b.base.key(int(it.i))
		if j > 0 && bytes.Equal(k, b.base.key(int(items[j-1].i))) {
			continue
		}
		t.fold.add(k)
	}
	b.base, t.fold = t.fold, b.base
	b.baseSorted = true
}

// foldLog sorts bucket b's log and keeps, of each key, its last op if it
// changes the key's liveness against the base: the log becomes the
// bucket's change set since the last snapshot, in key order.
func (t *Timers) foldLog(b *timerBucket) {
	if !b.baseSorted {
		t.sortBase(b)
	}
	if b.folded {
		return
	}
	items := t.sortKeys(&b.log)
	t.fold.reset()
	t.foldDel = t.foldDel[:0]
	live := b.base.n()
	bi := 0 // base cursor
	for j := 0; j < len(items); j++ {
		k := b.log.key(int(items[j].i))
		if j+1 < len(items) && bytes.Equal(k, b.log.key(int(items[j+1].i))) {
			continue // a later op on the same key decides
		}
		for bi < b.base.n() && bytes.Compare(b.base.key(bi), k) < 0 {
			bi++
		}
		inBase := bi < b.base.n() && bytes.Equal(b.base.key(bi), k)
		del := b.del[items[j].i]
		if del == !inBase {
			continue // no change: a Delete of a key not in the base, or a Register of one in it
		}
		t.fold.add(k)
		t.foldDel = append(t.foldDel, del)
		if del {
			live--
		} else {
			live++
		}
	}
	b.log, t.fold = t.fold, b.log
	b.del, t.foldDel = t.foldDel, b.del
	b.folded, b.live, b.dels = true, live, 0
}

// applyLog folds bucket b's log into its base: the base becomes the live
// keys, the log empty.
func (t *Timers) applyLog(b *timerBucket) {
	t.foldLog(b)
	if b.log.n() == 0 {
		return
	}
	t.fold.reset()
	bi := 0
	for j := 0; j < b.log.n(); j++ {
		k := b.log.key(j)
		for bi < b.base.n() && bytes.Compare(b.base.key(bi), k) < 0 {
			t.fold.add(b.base.key(bi))
			bi++
		}
		if b.del[j] {
			bi++ // the deleted key (in the base: the log is folded)
		} else {
			t.fold.add(k)
		}
	}
	for ; bi < b.base.n(); bi++ {
		t.fold.add(b.base.key(bi))
	}
	b.base, t.fold = t.fold, b.base
	b.log.reset()
	b.del = b.del[:0]
}

// retire takes bucket b (detached, none of its timers live any more) out:
// the timers a snapshot may have written are rechecked by the next one.
func (t *Timers) retire(b *timerBucket, base *timerKeys) {
	if t.track {
		for i := 0; i < base.n(); i++ {
			t.recheck.addCompact(b.ts, base.key(i))
		}
	}
	b.dirty = false
	if t.last == b {
		t.last = nil
	}
}

func (t *Timers) recycle(b *timerBucket) {
	b.base.reset()
	b.log.reset()
	b.del = b.del[:0]
	b.dels = 0
	if cap(b.base.buf)+cap(b.log.buf) <= 1<<20 && len(t.spare) < 64 {
		t.spare = append(t.spare, b)
	}
}

// Len is the number of timers set.
func (t *Timers) Len() int {
	n := 0
	for _, b := range t.buckets {
		t.foldLog(b)
		n += b.live
	}
	return n
}

// Next is the timestamp of the earliest timer (ok false: none).
func (t *Timers) Next() (int64, bool) {
	for len(t.times) > 0 {
		ts := t.times[0]
		if b := t.buckets[ts]; b != nil {
			if !b.folded && b.dels == 0 && b.base.n()+b.log.n() > 0 {
				return ts, true // registered timers and no Delete since the fold: live ones (no sort)
			}
			t.foldLog(b)
			if b.live > 0 {
				return ts, true
			}
			delete(t.buckets, ts)
			t.retire(b, &b.base) // its base timers were all deleted
			t.recycle(b)
		}
		t.popTime()
	}
	return 0, false
}

// Advance fires, in (timestamp, key group, key) order, every timer with a
// timestamp <= upTo: each is removed, then fire is called with its key
// group, timestamp and key (valid during the call only). fire may register
// new timers; those due are fired too.
func (t *Timers) Advance(upTo int64, fire func(kg int, ts int64, key []byte) error) error {
	defer func() { t.firing = nil }()
	for len(t.times) > 0 && t.times[0] <= upTo {
		ts := t.popTime()
		b := t.buckets[ts]
		if b == nil {
			continue
		}
		// Detached first: a timer fire registers at ts goes into a new
		// bucket, fired next.
		delete(t.buckets, ts)
		t.foldLog(b)
		t.retire(b, &b.base)
		t.applyLog(b)
		n := b.base.n()
		t.killed = slices.Grow(t.killed[:0], n)[:n]
		clear(t.killed)
		t.firing = b
		for i := 0; i < n; i++ {
			t.fireAt = i + 1
			if t.killed[i] {
				continue
			}
			k := b.base.key(i)
			// the key, in a buffer reused across fires (valid during the
			// call only): no allocation per timer
			t.fireKey = append(t.fireKey[:0], k[4:]...)
			if err := fire(bucketKG(k), ts, t.fireKey); err != nil {
				return err
			}
		}
		t.firing = nil
		t.recycle(b)
	}
	return nil
}

// pushTime and popTime keep t.times a binary min-heap.
func (t *Timers) pushTime(ts int64) {
	h := append(t.times, ts)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p] <= ts {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = ts
	t.times = h
}

func (t *Timers) popTime() int64 {
	h := t.times
	top := h[0]
	n := len(h) - 1
	last := h[n]
	h = h[:n]
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h[c+1] < h[c] {
			c++
		}
		if last <= h[c] {
			break
		}
		h[i] = h[c]
		i = c
	}
	if n > 0 {
		h[i] = last
	}
	t.times = h
	return top
}

// Snapshot writes the timer changes of checkpoint id (see Table.Snapshot):
// the change sets of the buckets touched since the last snapshot and the
// rechecked timers, in state key order. Timers made without checkpointing
// write only the deletes DropStored asked for.
func (t *Timers) Snapshot(id int64, w checkpoint.StateWriter) error {
	if !t.track && t.recheck.n() == 0 && t.pendingID == 0 {
		return nil
	}
	if t.pendingID != 0 { // this snapshot supersedes the one in flight
		t.mergePending()
	}
	t.chg.reset()
	t.chgDel = t.chgDel[:0]
	for _, b := range t.dirty {
		if !b.dirty {
			continue
		}
		b.dirty = false
		t.foldLog(b)
		for j := 0; j < b.log.n(); j++ {
			t.chg.addCompact(b.ts, b.log.key(j))
			t.chgDel = append(t.chgDel, b.del[j])
		}
		t.applyLog(b)
	}
	clear(t.dirty)
	t.dirty = t.dirty[:0]
	for i := 0; i < t.recheck.n(); i++ {
		c := t.recheck.key(i)
		live := false // (untracked timers: the entries DropStored found go)
		if b := t.buckets[compactTS(c)]; b != nil && t.track {
			t.foldLog(b) // sorts a restored base; the log is empty
			t.scratch = append(append(t.scratch[:0], c[:4]...), c[timerHdr:]...)
			live = b.base.search(0, t.scratch) >= 0
		}
		t.chg.add(c)
		t.chgDel = append(t.chgDel, !live)
	}
	t.recheck.reset()
	items := t.sortChanges()
	t.pending.reset()
	for j, it := range items {
		c := t.chg.key(int(it.i))
		if j > 0 && bytes.Equal(c, t.chg.key(int(items[j-1].i))) {
			continue // decided alike (both by liveness now)
		}
		t.pending.add(c)
		t.scratch = append(append(t.scratch[:0], t.keyPrefix(bucketKG(c))...), c[4:]...)
		var err error
		if t.chgDel[it.i] {
			err = w.Delete(t.scratch)
		} else {
			err = w.Put(t.scratch, nil)
		}
		if err != nil {
			return err
		}
	}
	t.pendingID = id
	return nil
}

// mergePending moves the pending snapshot's changes to the recheck list.
func (t *Timers) mergePending() {
	for i := 0; i < t.pending.n(); i++ {
		t.recheck.add(t.pending.key(i))
	}
	t.pending.reset()
	t.pendingID = 0
}

// Complete drops the pending changes if checkpoint id covers them.
func (t *Timers) Complete(id int64) {
	if t.pendingID != 0 && id >= t.pendingID {
		t.pending.reset()
		t.pendingID = 0
	}
}

// Abort merges the pending changes of checkpoint id back.
func (t *Timers) Abort(id int64) {
	if t.pendingID != 0 && id == t.pendingID {
		t.mergePending()
	}
}

// DropStored is Restore for timers an operator does not checkpoint (made
// with checkpointing false) because it derives them from its other state
// when it restores: it loads nothing and has the next snapshot delete the
// timers of key groups [start, end) a checkpoint holds (written by a
// version that stored them), so that none lingers in the state.
func (t *Timers) DropStored(r checkpoint.StateReader, start, end int) error {
	return t.scanStored(r, start, end, func(c []byte) { t.recheck.add(c) })
}

// RestoreFrom is the restore of timers that follow from an operator's
// table (made without checkpointing): DropStored, then set(g, kg) for every
// live slot g of tbl (key group kg), which registers the slot's timers.
func (t *Timers) RestoreFrom(r checkpoint.StateReader, start, end int, tbl *Table, set func(g int32, kg int) error) error {
	if err := t.DropStored(r, start, end); err != nil {
		return err
	}
	for g := int32(0); int(g) < tbl.Slots(); g++ {
		if tbl.Alive(g) {
			if err := set(g, tbl.KeyGroup(g)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Restore loads the timers of key groups [start, end).
func (t *Timers) Restore(r checkpoint.StateReader, start, end int) error {
	return t.scanStored(r, start, end, func(c []byte) {
		b := t.bucket(compactTS(c))
		b.base.buf = append(b.base.buf, c[:4]...)
		b.base.add(c[timerHdr:])
		b.baseSorted, b.folded = false, false
	})
}

// scanStored calls fn with the compact key (the state key from its key
// group on) of every timer r holds in key groups [start, end).
func (t *Timers) scanStored(r checkpoint.StateReader, start, end int, fn func(c []byte)) error {
	for kg := start; kg < end; kg++ {
		p := t.keyPrefix(kg)
		err := r.Scan(p, func(k, _ []byte) error {
			if len(k) < len(p)+8 || !bytes.HasPrefix(k, p) {
				return fmt.Errorf("state: bad timer key %x", k)
			}
			fn(k[len(p)-4:])
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading the timers of key group %d: %w", kg, err)
		}
	}
	return nil
}
