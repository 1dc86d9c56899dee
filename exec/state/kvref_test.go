package state

// The map-based KV that preceded the ordered, tiered one, kept as the
// oracle of kv_meta_test.go: the metamorphic test replays one random
// sequence of operations against it and the new KV (in memory and tiered)
// and requires identical results and snapshot bytes.

import (
	"encoding/binary"
	"sort"
	"strings"

	"github.com/streamsql/streamsql/checkpoint"
)

type refKV struct {
	t    *Table
	vals [][]byte
	scr  []byte

	sweepFrom string // Sweep's cursor
}

func newRefKV(o Options) (*refKV, error) {
	o.IntKeys = false
	kv := &refKV{}
	t, err := NewTable(o, refCodec{kv})
	if err != nil {
		return nil, err
	}
	t.OnGrow = func(n int) { kv.vals = Grow(kv.vals, n, nil) }
	kv.t = t
	return kv, nil
}

type refCodec struct{ kv *refKV }

func (c refCodec) AppendKey(dst []byte, g int32) []byte   { return append(dst, c.kv.t.keyOf[g]...) }
func (c refCodec) AppendValue(dst []byte, g int32) []byte { return append(dst, c.kv.vals[g]...) }

func (s *refKV) live(k []byte) (int32, bool) {
	g, ok := s.t.LookupBytes(k)
	if ok && s.t.Expired(g) {
		s.t.Remove(g, 0, false)
		s.vals[g] = nil
		return 0, false
	}
	return g, ok
}

// Get returns the value of a framed key (nil, false: absent). The value is
// valid until the key changes.
func (s *refKV) Get(_ int, k []byte) ([]byte, bool) {
	g, ok := s.live(k)
	if !ok {
		return nil, false
	}
	return s.vals[g], true
}

// Put sets the value of a framed key in key group kg (copied).
func (s *refKV) Put(kg int, k, v []byte) {
	g, ok := s.live(k)
	if !ok {
		g = s.t.InsertBytes(k, kg)
	}
	s.vals[g] = append(s.vals[g][:0], v...)
	s.t.Touch(g)
}

// Delete removes a framed key.
func (s *refKV) Delete(_ int, k []byte) {
	if g, ok := s.t.LookupBytes(k); ok {
		s.t.Remove(g, 0, false)
		s.vals[g] = nil
	}
}

// PutNew is Put (the reference does not distinguish new keys).
func (s *refKV) PutNew(kg int, k, v []byte) { s.Put(kg, k, v) }

// Append adds an element to the list state of a framed key.
func (s *refKV) Append(kg int, k, elem []byte) {
	g, ok := s.live(k)
	if !ok {
		g = s.t.InsertBytes(k, kg)
		s.vals[g] = s.vals[g][:0]
	}
	v := binary.AppendUvarint(s.vals[g], uint64(len(elem)))
	s.vals[g] = append(v, elem...)
	s.t.Touch(g)
}

// List calls fn for every element of the list state of a framed key, in
// the order appended.
func (s *refKV) List(_ int, k []byte, fn func(elem []byte) error) error {
	v, ok := s.Get(-1, k)
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
// namespace and key: map state iteration), in key order.
func (s *refKV) Scan(_ int, prefix []byte, fn func(k, v []byte) error) error {
	var ks []string
	for k, g := range liveKeys(s.t) {
		if strings.HasPrefix(k, string(prefix)) && !s.t.Expired(g) {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	for _, k := range ks {
		if err := fn([]byte(k), s.vals[liveKeys(s.t)[k]]); err != nil {
			return err
		}
	}
	return nil
}

// Sweep is KV.Sweep's oracle: it sorts every key (expired ones too), looks
// at up to n of them from the cursor on (starting over after the end) and
// deletes the expired ones.
func (s *refKV) Sweep(n int) error {
	if s.t.o.TTL <= 0 || n <= 0 {
		return nil
	}
	ks := make([]string, 0, len(liveKeys(s.t)))
	for k := range liveKeys(s.t) {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	i := sort.SearchStrings(ks, s.sweepFrom)
	var del []string
	seen := 0
	for ; seen < n && i < len(ks); i++ {
		seen++
		if s.t.Expired(liveKeys(s.t)[ks[i]]) {
			del = append(del, ks[i])
		}
		s.sweepFrom = ks[i] + "\x00"
	}
	if seen < n {
		s.sweepFrom = ""
	}
	for _, k := range del {
		s.Delete(-1, []byte(k))
	}
	return nil
}

// Len is the number of live keys.
func (s *refKV) Len() int { return s.t.Len() }

// SetNow sets processing time for TTL (unix ms).
func (s *refKV) SetNow(ms int64) { s.t.SetNow(ms) }

// Snapshot, Complete, Abort and Restore are Table's.
func (s *refKV) Snapshot(id int64, w checkpoint.StateWriter) error { return s.t.Snapshot(id, w) }
func (s *refKV) Complete(id int64)                                 { s.t.Complete(id) }
func (s *refKV) Abort(id int64)                                    { s.t.Abort(id) }
func (s *refKV) Restore(r checkpoint.StateReader, start, end int) error {
	return s.t.Restore(r, start, end, func(g int32, _, v []byte) (int64, bool, error) {
		s.vals[g] = append(s.vals[g][:0], v...)
		return 0, false, nil
	})
}

// liveKeys maps the key of every live slot of a bytes-keyed table to it.
func liveKeys(t *Table) map[string]int32 {
	m := map[string]int32{}
	for g, k := range t.keyOf {
		if t.alive[g] {
			m[k] = int32(g)
		}
	}
	return m
}
