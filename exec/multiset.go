package exec

import (
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
)

// multiset is a multiset of values with signed counts, the state of
// COUNT(DISTINCT x) and of MIN/MAX over a retracting input.
//
// A Go map assignment to a key already present replaces the stored key
// with the one assigned (for strings, among others). The values added come
// from batches that are released afterwards, so the map's keys are cloned
// once when inserted and never assigned again: counts live in cnt, indexed
// by the map, and are updated in place.
type multiset[T scalar] struct {
	// the index of each value: ints for 8-byte integers (BIGINT,
	// TIMESTAMP), idx for the others (nil until the first value)
	ints *intIndex
	idx  map[T]int32
	cnt  []int64 // by index; 0 at an index no value uses
	vals []T     // by index: the value (encodings walk these, not the map)
	free []int32 // indexes of cnt no value uses
	// The order of the last encoding of an integer multiset (aggstate.go,
	// sortedOrder): its values' sort keys and indexes, sorted; ordN is
	// len(cnt) then. While ordOK (no value removed since), the values
	// added since are the indexes from ordN on: the next encoding sorts
	// only those and merges them in.
	ord   []keyCount
	ordN  int
	ordOK bool
}

// add adds d to v's count and returns the count before and after; a value
// whose count becomes 0 is removed.
func (m *multiset[T]) add(v T, d int64) (before, after int64) {
	if i, ok := m.find(v); ok {
		c := m.cnt[i]
		if c+d == 0 {
			m.removeAt(i)
		} else {
			m.cnt[i] = c + d
		}
		return c, c + d
	}
	if d == 0 {
		return 0, 0
	}
	m.cnt[m.insert(v)] = d
	return 0, d
}

// slot returns v's index, inserting v with count 0 if it is absent (the
// caller sets a count that is not 0, or removes it again).
func (m *multiset[T]) slot(v T) int32 {
	if i, ok := m.find(v); ok {
		return i
	}
	return m.insert(v)
}

// insert adds v (absent) with count 0 and returns its index.
func (m *multiset[T]) insert(v T) int32 {
	if m.idx == nil && m.ints == nil {
		m.reserve(0)
	}
	var i int32
	if n := len(m.free); n > 0 {
		i = m.free[n-1]
		m.free = m.free[:n-1]
		m.ordOK = false // an index the last encoding's order may not hold
	} else {
		i = int32(len(m.cnt))
		m.cnt = append(m.cnt, 0)
		var zero T
		m.vals = append(m.vals, zero)
	}
	v = cloneScalar(v)
	m.vals[i] = v
	if m.ints != nil {
		m.ints.put(intKey(v), i)
	} else {
		m.idx[v] = i
	}
	return i
}

// find returns v's index.
func (m *multiset[T]) find(v T) (int32, bool) {
	if m.ints != nil {
		return m.ints.get(intKey(v))
	}
	i, ok := m.idx[v]
	return i, ok
}

// reserve makes the index (if there is none) and sizes it for n values.
func (m *multiset[T]) reserve(n int) {
	if m.ints == nil && m.idx == nil {
		var zero T
		switch any(zero).(type) {
		case int64, arrow.Timestamp:
			m.ints = &intIndex{}
		default:
			m.idx = make(map[T]int32, n)
			return
		}
	}
	if m.ints != nil {
		m.ints.reserve(n)
	}
}

// intKey is an 8-byte integer value's bits (T is int64 or
// arrow.Timestamp wherever m.ints is set).
func intKey[T scalar](v T) uint64 { return *(*uint64)(unsafe.Pointer(&v)) }

// eachIndex calls f for every value and its index, in the index's order.
func (m *multiset[T]) eachIndex(f func(v T, i int32)) {
	if m.ints != nil {
		for _, s := range m.ints.slots {
			if s.v != 0 {
				f(m.vals[s.v-1], s.v-1)
			}
		}
		return
	}
	for v, i := range m.idx {
		f(v, i)
	}
}

// removeAt removes the value at index i.
func (m *multiset[T]) removeAt(i int32) {
	if m.ints != nil {
		m.ints.del(intKey(m.vals[i]))
	} else {
		delete(m.idx, m.vals[i])
	}
	m.free = append(m.free, i)
	var zero T
	m.cnt[i], m.vals[i], m.ordOK = 0, zero, false
}

// len is the number of values with a non-zero count.
func (m *multiset[T]) len() int {
	if m.ints != nil {
		return m.ints.n
	}
	return len(m.idx)
}

// each calls f for every value with a non-zero count, in the index's order.
func (m *multiset[T]) each(f func(v T, c int64)) {
	m.eachIndex(func(v T, i int32) { f(v, m.cnt[i]) })
}

// mergeFrom adds src's counts to m.
func (m *multiset[T]) mergeFrom(src *multiset[T]) {
	src.eachIndex(func(v T, i int32) { m.add(v, src.cnt[i]) })
}
