package state

import (
	"encoding/binary"
	"errors"
	"sort"
	"strings"

	"github.com/streamsql/streamsql/checkpoint"
)

// KV is keyed state with byte values: value, map and list state in
// namespaces, on a Table (so it shares its key groups, epoch-aware change
// tracking, TTL and checkpoint layout). Its keys are framed
// (namespace, key[, map key]) so namespaces never collide: a window's end,
// a join side. Values are the operator's bytes; List state appends framed
// elements to one value.
//
// Hot columnar operators (the group aggregation) use Table directly with
// typed columns; KV is for the state whose shape is rows (join sides,
// window contents, TopN buffers).
type KV struct {
	t    *Table
	vals [][]byte
	scr  []byte
}

// NewKV returns empty KV state (Options.IntKeys is ignored: keys are bytes).
func NewKV(o Options) (*KV, error) {
	o.IntKeys = false
	kv := &KV{}
	t, err := NewTable(o, kvCodec{kv})
	if err != nil {
		return nil, err
	}
	t.OnGrow = func(int) { kv.vals = append(kv.vals, nil) }
	kv.t = t
	return kv, nil
}

type kvCodec struct{ kv *KV }

func (c kvCodec) AppendKey(dst []byte, g int32) []byte   { return append(dst, c.kv.t.keyOf[g]...) }
func (c kvCodec) AppendValue(dst []byte, g int32) []byte { return append(dst, c.kv.vals[g]...) }

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

func (s *KV) live(k []byte) (int32, bool) {
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
func (s *KV) Get(k []byte) ([]byte, bool) {
	g, ok := s.live(k)
	if !ok {
		return nil, false
	}
	return s.vals[g], true
}

// Put sets the value of a framed key in key group kg (copied).
func (s *KV) Put(kg int, k, v []byte) {
	g, ok := s.live(k)
	if !ok {
		g = s.t.InsertBytes(k, kg)
	}
	s.vals[g] = append(s.vals[g][:0], v...)
	s.t.Touch(g)
}

// Delete removes a framed key.
func (s *KV) Delete(k []byte) {
	if g, ok := s.t.LookupBytes(k); ok {
		s.t.Remove(g, 0, false)
		s.vals[g] = nil
	}
}

// Append adds an element to the list state of a framed key.
func (s *KV) Append(kg int, k, elem []byte) {
	g, ok := s.live(k)
	if !ok {
		g = s.t.InsertBytes(k, kg)
		s.vals[g] = s.vals[g][:0]
	}
	v := binary.AppendUvarint(s.vals[g], uint64(len(elem)))
	s.vals[g] = append(v, elem...)
	s.t.Touch(g)
}

var errBadList = errors.New("state: corrupt list value")

// List calls fn for every element of the list state of a framed key, in
// the order appended.
func (s *KV) List(k []byte, fn func(elem []byte) error) error {
	v, ok := s.Get(k)
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
func (s *KV) Scan(prefix []byte, fn func(k, v []byte) error) error {
	var ks []string
	for k, g := range s.t.strMap {
		if strings.HasPrefix(k, string(prefix)) && !s.t.Expired(g) {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	for _, k := range ks {
		if err := fn([]byte(k), s.vals[s.t.strMap[k]]); err != nil {
			return err
		}
	}
	return nil
}

// Len is the number of live keys.
func (s *KV) Len() int { return s.t.Len() }

// SetNow sets processing time for TTL (unix ms).
func (s *KV) SetNow(ms int64) { s.t.SetNow(ms) }

// Snapshot, Complete, Abort and Restore are Table's.
func (s *KV) Snapshot(id int64, w checkpoint.StateWriter) error { return s.t.Snapshot(id, w) }
func (s *KV) Complete(id int64)                                 { s.t.Complete(id) }
func (s *KV) Abort(id int64)                                    { s.t.Abort(id) }
func (s *KV) Restore(r checkpoint.StateReader, start, end int) error {
	return s.t.Restore(r, start, end, func(g int32, _, v []byte) (int64, bool, error) {
		s.vals[g] = append(s.vals[g][:0], v...)
		return 0, false, nil
	})
}
