package state

import (
	"bytes"
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
// Changes are tracked per epoch exactly as in Table: Snapshot writes every
// timer registered or removed since the last completed checkpoint (Put of
// an empty value, or Delete), sorted; Abort merges the pending set back.
//
// State keys: KeyedPrefix(opID+"/timers/"+name, key group), then the
// timestamp as 8 bytes big endian with the sign bit flipped (so byte order
// is time order), then the key.
//
// In memory a timer is its compact key: the key group (4 bytes big endian),
// the timestamp as in the state key, then the key, i.e. the state key
// without the operator's prefix; byte order of compact keys is the state
// keys' order. Timers of one timestamp share a bucket; a min-heap holds the
// distinct timestamps (many timers share one: every key of a window fires
// at its end), so registering and firing costs one map operation per timer
// and heap work per distinct timestamp, not per timer. A bucket is sorted
// once when it fires. Deletes are lazy: a bucket keeps a deleted timer's
// key until it fires, and the live set decides.
//
// A timer registered and removed between two snapshots was never written
// by any snapshot, so it is not in the state (whatever becomes of the
// checkpoints in flight): its change is taken back instead of turning into
// a Delete. The live set remembers, per timer, the epoch (snapshot count)
// it was registered in and where its change was listed. Session windows
// move their timer on every row that extends a session, and windows fire
// the timers they set since the last checkpoint.
type Timers struct {
	opID  string // the scope: opID + "/timers/" + name
	maxP  int
	track bool

	live    map[string]timerLife // compact keys of registered timers
	buckets map[int64]*timerBucket
	times   []int64 // min-heap of the buckets' timestamps
	spare   [][]string

	// changes lists the compact keys registered or removed since the
	// last snapshot (a key may repeat); pending those of the snapshot
	// in flight.
	changes   []string
	pendingID int64
	pending   []string

	scratch []byte
	fireKey []byte
	prefix  [][]byte
	epoch   uint32 // snapshots taken so far, + 1
}

// timerLife is what the live set keeps of a timer: the epoch it was
// registered in and the index of its change in Timers.changes then.
type timerLife struct {
	epoch uint32
	idx   uint32
}

type timerBucket struct {
	keys []string // compact keys; may hold deleted ones and repeats
	// live counts the live timers among keys; a hint only: a Delete of a
	// timer in a bucket detached by Advance (firing) may count against a
	// new bucket of the same timestamp.
	live int
}

// hasLive reports whether a live timer is in the bucket.
func (b *timerBucket) hasLive(live map[string]timerLife) bool {
	if b.live > 0 {
		return true
	}
	for _, k := range b.keys {
		if _, ok := live[k]; ok {
			b.live = 1
			return true
		}
	}
	return false
}

// NewTimers returns an empty timer service for operator opID; name tells
// timer services of one operator apart ("event", "processing").
func NewTimers(opID, name string, maxParallelism int, checkpointing bool) (*Timers, error) {
	if maxParallelism <= 0 || maxParallelism > MaxKeyGroups {
		return nil, fmt.Errorf("state: max parallelism %d out of range 1..%d", maxParallelism, MaxKeyGroups)
	}
	return &Timers{opID: opID + "/timers/" + name, maxP: maxParallelism, track: checkpointing,
		live: map[string]timerLife{}, buckets: map[int64]*timerBucket{}, prefix: make([][]byte, maxParallelism), epoch: 1}, nil
}

const timerHdr = 12 // key group (4) + timestamp (8) before the key

func (t *Timers) keyPrefix(kg int) []byte {
	if t.prefix[kg] == nil {
		t.prefix[kg] = checkpoint.KeyedPrefix(t.opID, kg)
	}
	return t.prefix[kg]
}

// compact writes the compact key of (kg, ts, key) into the scratch buffer.
func (t *Timers) compact(kg int, ts int64, key []byte) []byte {
	b := binary.BigEndian.AppendUint32(t.scratch[:0], uint32(kg))
	b = binary.BigEndian.AppendUint64(b, uint64(ts)^(1<<63))
	t.scratch = append(b, key...)
	return t.scratch
}

func compactTS(k string) int64 {
	var ts uint64
	for i := 4; i < timerHdr; i++ {
		ts = ts<<8 | uint64(k[i])
	}
	return int64(ts ^ (1 << 63))
}

// compactKG is the key group of compact key k.
func compactKG(k string) int {
	return int(uint32(k[0])<<24 | uint32(k[1])<<16 | uint32(k[2])<<8 | uint32(k[3]))
}

func (t *Timers) note(k string) {
	if t.track {
		t.changes = append(t.changes, k)
	}
}

// noteRemoved lists the removal of live timer k, or takes its
// registration back when no snapshot has seen it.
func (t *Timers) noteRemoved(k string, life timerLife) {
	if !t.track {
		return
	}
	if life.epoch == t.epoch && int(life.idx) < len(t.changes) && t.changes[life.idx] == k {
		t.changes[life.idx] = ""
		return
	}
	t.changes = append(t.changes, k)
}

// Register sets a timer; a no-op if it is set already.
func (t *Timers) Register(kg int, ts int64, key []byte) {
	c := t.compact(kg, ts, key)
	if _, ok := t.live[string(c)]; ok {
		return
	}
	k := string(c)
	t.live[k] = timerLife{epoch: t.epoch, idx: uint32(len(t.changes))}
	t.addToBucket(ts, k)
	t.note(k)
}

// addToBucket lists live timer k in the bucket of ts, made (and its time
// pushed) if there is none.
func (t *Timers) addToBucket(ts int64, k string) {
	b := t.buckets[ts]
	if b == nil {
		b = &timerBucket{}
		if n := len(t.spare); n > 0 {
			b.keys, t.spare = t.spare[n-1], t.spare[:n-1]
		}
		t.buckets[ts] = b
		t.pushTime(ts)
	}
	b.keys = append(b.keys, k)
	b.live++
}

// Delete removes a timer if it is set.
func (t *Timers) Delete(kg int, ts int64, key []byte) {
	c := t.compact(kg, ts, key)
	life, ok := t.live[string(c)]
	if !ok {
		return
	}
	k := string(c)
	delete(t.live, k) // the bucket's entry is dropped when it fires
	if b := t.buckets[ts]; b != nil {
		b.live--
	}
	t.noteRemoved(k, life)
}

// Len is the number of timers set.
func (t *Timers) Len() int { return len(t.live) }

// Next is the timestamp of the earliest timer (ok false: none).
func (t *Timers) Next() (int64, bool) {
	for len(t.times) > 0 {
		ts := t.times[0]
		if b := t.buckets[ts]; b != nil && b.hasLive(t.live) {
			return ts, true
		}
		t.popTime()
		t.dropBucket(ts)
	}
	return 0, false
}

func (t *Timers) dropBucket(ts int64) {
	if b := t.buckets[ts]; b != nil {
		delete(t.buckets, ts)
		t.recycle(b)
	}
}

func (t *Timers) recycle(b *timerBucket) {
	if cap(b.keys) <= 1<<16 && len(t.spare) < 64 {
		clear(b.keys)
		t.spare = append(t.spare, b.keys[:0])
	}
}

// Advance fires, in (timestamp, key group, key) order, every timer with a
// timestamp <= upTo: each is removed, then fire is called with its key
// group, timestamp and key (valid during the call only). fire may register
// new timers; those due are fired too.
func (t *Timers) Advance(upTo int64, fire func(kg int, ts int64, key []byte) error) error {
	for len(t.times) > 0 && t.times[0] <= upTo {
		ts := t.popTime()
		b := t.buckets[ts]
		if b == nil {
			continue
		}
		// Detached first: a timer fire registers at ts goes into a new
		// bucket, fired next.
		delete(t.buckets, ts)
		slices.Sort(b.keys)
		for _, k := range b.keys {
			life, ok := t.live[k]
			if !ok {
				continue
			}
			delete(t.live, k)
			t.noteRemoved(k, life)
			// the key, in a buffer reused across fires (valid during the
			// call only): no allocation per timer
			t.fireKey = append(t.fireKey[:0], k[timerHdr:]...)
			if err := fire(compactKG(k), ts, t.fireKey); err != nil {
				return err
			}
		}
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

// Snapshot writes the timer changes of checkpoint id (see Table.Snapshot).
func (t *Timers) Snapshot(id int64, w checkpoint.StateWriter) error {
	if !t.track {
		return nil
	}
	if t.pendingID != 0 {
		t.changes = append(t.changes, t.pending...)
		t.pending, t.pendingID = t.pending[:0], 0
	}
	slices.Sort(t.changes)
	t.changes = slices.Compact(t.changes)
	if len(t.changes) > 0 && t.changes[0] == "" { // changes taken back
		t.changes = t.changes[1:]
	}
	for _, k := range t.changes {
		kg := compactKG(k)
		t.scratch = append(append(t.scratch[:0], t.keyPrefix(kg)...), k[4:]...)
		var err error
		if _, ok := t.live[k]; ok {
			err = w.Put(t.scratch, nil)
		} else {
			err = w.Delete(t.scratch)
		}
		if err != nil {
			return err
		}
	}
	spare := t.pending[:0]
	t.pending, t.pendingID = t.changes, id
	t.changes = spare
	t.epoch++
	return nil
}

// Complete drops the pending changes if checkpoint id covers them.
func (t *Timers) Complete(id int64) {
	if t.pendingID != 0 && id >= t.pendingID {
		clear(t.pending)
		t.pending, t.pendingID = t.pending[:0], 0
	}
}

// Abort merges the pending changes of checkpoint id back.
func (t *Timers) Abort(id int64) {
	if t.pendingID != 0 && id == t.pendingID {
		t.changes = append(t.changes, t.pending...)
		clear(t.pending)
		t.pending, t.pendingID = t.pending[:0], 0
	}
}

// Restore loads the timers of key groups [start, end).
func (t *Timers) Restore(r checkpoint.StateReader, start, end int) error {
	for kg := start; kg < end; kg++ {
		p := t.keyPrefix(kg)
		err := r.Scan(p, func(k, _ []byte) error {
			if len(k) < len(p)+8 || !bytes.HasPrefix(k, p) {
				return fmt.Errorf("state: bad timer key %x", k)
			}
			// The compact key is the state key from its key group on.
			c := string(k[len(p)-4:])
			if _, ok := t.live[c]; ok {
				return nil
			}
			t.live[c] = timerLife{} // epoch 0: in the state
			t.addToBucket(compactTS(c), c)
			return nil
		})
		if err != nil {
			return fmt.Errorf("restoring timers of key group %d: %w", kg, err)
		}
	}
	return nil
}
