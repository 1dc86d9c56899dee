package state

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"fmt"
	"sort"

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
type Timers struct {
	opID  string // the scope: opID + "/timers/" + name
	maxP  int
	track bool

	live map[string]struct{} // full state keys of registered timers
	h    timerHeap

	changed   map[string]struct{}
	pendingID int64
	pending   map[string]struct{}

	prefix [][]byte
}

// NewTimers returns an empty timer service for operator opID; name tells
// timer services of one operator apart ("event", "processing").
func NewTimers(opID, name string, maxParallelism int, checkpointing bool) (*Timers, error) {
	if maxParallelism <= 0 || maxParallelism > MaxKeyGroups {
		return nil, fmt.Errorf("state: max parallelism %d out of range 1..%d", maxParallelism, MaxKeyGroups)
	}
	return &Timers{opID: opID + "/timers/" + name, maxP: maxParallelism, track: checkpointing,
		live: map[string]struct{}{}, changed: map[string]struct{}{}, prefix: make([][]byte, maxParallelism)}, nil
}

type timerEntry struct {
	ts  int64
	key string // full state key
}

type timerHeap []timerEntry

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].ts != h[j].ts {
		return h[i].ts < h[j].ts
	}
	return h[i].key < h[j].key
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(timerEntry)) }
func (h *timerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func (t *Timers) keyPrefix(kg int) []byte {
	if t.prefix[kg] == nil {
		t.prefix[kg] = checkpoint.KeyedPrefix(t.opID, kg)
	}
	return t.prefix[kg]
}

func (t *Timers) fullKey(kg int, ts int64, key []byte) string {
	b := append([]byte(nil), t.keyPrefix(kg)...)
	b = binary.BigEndian.AppendUint64(b, uint64(ts)^(1<<63))
	return string(append(b, key...))
}

func (t *Timers) note(k string) {
	if t.track {
		t.changed[k] = struct{}{}
	}
}

// Register sets a timer; a no-op if it is set already.
func (t *Timers) Register(kg int, ts int64, key []byte) {
	k := t.fullKey(kg, ts, key)
	if _, ok := t.live[k]; ok {
		return
	}
	t.live[k] = struct{}{}
	heap.Push(&t.h, timerEntry{ts: ts, key: k})
	t.note(k)
}

// Delete removes a timer if it is set.
func (t *Timers) Delete(kg int, ts int64, key []byte) {
	k := t.fullKey(kg, ts, key)
	if _, ok := t.live[k]; !ok {
		return
	}
	delete(t.live, k) // the heap entry is dropped lazily
	t.note(k)
}

// Len is the number of timers set.
func (t *Timers) Len() int { return len(t.live) }

// Next is the timestamp of the earliest timer (ok false: none).
func (t *Timers) Next() (int64, bool) {
	for t.h.Len() > 0 {
		e := t.h[0]
		if _, ok := t.live[e.key]; ok {
			return e.ts, true
		}
		heap.Pop(&t.h)
	}
	return 0, false
}

// Advance fires, in (timestamp, key group, key) order, every timer with a
// timestamp <= upTo: each is removed, then fire is called with its key
// group, timestamp and key (valid during the call only). fire may register
// new timers; those due are fired too.
func (t *Timers) Advance(upTo int64, fire func(kg int, ts int64, key []byte) error) error {
	pl := len(t.keyPrefix(0))
	for t.h.Len() > 0 && t.h[0].ts <= upTo {
		e := heap.Pop(&t.h).(timerEntry)
		if _, ok := t.live[e.key]; !ok {
			continue
		}
		delete(t.live, e.key)
		t.note(e.key)
		kgb := e.key[pl-4 : pl]
		kg := int(binary.BigEndian.Uint32([]byte(kgb)))
		if err := fire(kg, e.ts, []byte(e.key[pl+8:])); err != nil {
			return err
		}
	}
	return nil
}

// Snapshot writes the timer changes of checkpoint id (see Table.Snapshot).
func (t *Timers) Snapshot(id int64, w checkpoint.StateWriter) error {
	if !t.track {
		return nil
	}
	if t.pendingID != 0 {
		for k := range t.pending {
			t.changed[k] = struct{}{}
		}
		t.pending, t.pendingID = nil, 0
	}
	keys := make([]string, 0, len(t.changed))
	for k := range t.changed {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var err error
		if _, ok := t.live[k]; ok {
			err = w.Put([]byte(k), nil)
		} else {
			err = w.Delete([]byte(k))
		}
		if err != nil {
			return err
		}
	}
	t.pending, t.pendingID = t.changed, id
	t.changed = map[string]struct{}{}
	return nil
}

// Complete drops the pending changes if checkpoint id covers them.
func (t *Timers) Complete(id int64) {
	if t.pendingID != 0 && id >= t.pendingID {
		t.pending, t.pendingID = nil, 0
	}
}

// Abort merges the pending changes of checkpoint id back.
func (t *Timers) Abort(id int64) {
	if t.pendingID != 0 && id == t.pendingID {
		for k := range t.pending {
			t.changed[k] = struct{}{}
		}
		t.pending, t.pendingID = nil, 0
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
			ts := int64(binary.BigEndian.Uint64(k[len(p):]) ^ (1 << 63))
			ks := string(k)
			t.live[ks] = struct{}{}
			heap.Push(&t.h, timerEntry{ts: ts, key: ks})
			return nil
		})
		if err != nil {
			return fmt.Errorf("restoring timers of key group %d: %w", kg, err)
		}
	}
	return nil
}
