package exec

import "unsafe"

// The operators' side of a tiered state.Table (state.backend.type
// 'rocksdb'): the group aggregation, the TopN and the deduplication give
// the table a Decode (their restore decoder), a Clear releasing an evicted
// slot's memory and a Bytes estimating a slot's memory. Estimates are
// computed once per touched slot per batch (at MaybeEvict), so they count
// multisets by their size rather than walking them.

// mapEntryBytes is the estimated memory of one entry of a multiset (a Go
// map of value -> count index, the count, hash bucket share).
const mapEntryBytes = 56

// accSlotBytes is the estimated memory of a fixed-size accumulator's slot.
const accSlotBytes = 24

// accSizer is implemented by the accumulators whose slots vary in size.
type accSizer interface{ slotBytes(g int32) int }

func (a *minMax[T]) slotBytes(g int32) int {
	n := accSlotBytes + scalarBytes(a.val[g])
	if a.retract {
		n += a.multi[g].bytes()
	}
	return n
}

func (a *distinctCount[T]) slotBytes(g int32) int { return a.sets[g].bytes() }

// bytes estimates a multiset's memory: a map entry, a count and a value
// per index, and the order its last encoding kept (16 bytes a value).
func (m *multiset[T]) bytes() int {
	var zero T
	return 8 + mapEntryBytes*m.len() + (8+fixedSize(zero))*len(m.cnt) + 16*cap(m.ord)
}

// scalarBytes is the bytes a string holds beyond its header (0 for the
// other scalars).
func scalarBytes[T scalar](v T) int {
	if s, ok := any(v).(string); ok {
		return len(s)
	}
	return 0
}

func (k *typedKeys[T]) slotBytes(g int32) int {
	var zero T
	return 1 + fixedSize(zero) + scalarBytes(k.vals[g])
}

// fixedSlotBytes: a key of a fixed-width type takes one size in every slot.
func (k *typedKeys[T]) fixedSlotBytes() (int, bool) {
	var zero T
	_, str := any(zero).(string)
	return 1 + fixedSize(zero), !str
}

func (k *typedKeys[T]) clear(g int32) {
	var zero T
	if int(g) < len(k.vals) {
		k.vals[g], k.valid[g] = zero, false
	}
}

// fixedSize is the in-memory size of a scalar (a string's header).
func fixedSize[T scalar](v T) int { return int(unsafe.Sizeof(v)) }

// clearSlot releases the memory of an evicted group.
func (a *groupAgg) clearSlot(g int32) {
	a.rowCount[g] = 0
	for _, acc := range a.accs {
		acc.reset(g)
	}
	for _, k := range a.keys {
		k.clear(g)
	}
}

// slotBytes estimates a group's memory: keys, row count, accumulators.
// The tier asks for every slot a batch touched: the fixed-size parts are
// summed once (sizeParts), the others asked per slot.
func (a *groupAgg) slotBytes(g int32) int {
	if a.sizeFixed < 0 {
		a.sizeParts()
	}
	n := a.sizeFixed
	for _, s := range a.sizeVar {
		n += s.slotBytes(g)
	}
	return n
}

// sizeParts splits slotBytes into its constant part (the row count, the
// mark, the parts whose slots all take one size: fixedSizer, or an
// accumulator without an accSizer) and the parts asked per slot.
func (a *groupAgg) sizeParts() {
	a.sizeFixed = 8 + 4 // row count, mark
	a.sizeVar = a.sizeVar[:0]
	add := func(part any) {
		if f, ok := part.(fixedSizer); ok {
			if n, fixed := f.fixedSlotBytes(); fixed {
				a.sizeFixed += n
				return
			}
		}
		if s, ok := part.(accSizer); ok {
			a.sizeVar = append(a.sizeVar, s)
		} else {
			a.sizeFixed += accSlotBytes
		}
	}
	for _, k := range a.keys {
		add(k)
	}
	for _, acc := range a.accs {
		add(acc)
	}
}

// fixedSizer is a part of a group (a key, an accumulator) whose slots may
// all take one size.
type fixedSizer interface{ fixedSlotBytes() (int, bool) }

// fixedSlotBytes: an insert-only MIN or MAX of a fixed-width type keeps
// one value a slot.
func (a *minMax[T]) fixedSlotBytes() (int, bool) {
	var zero T
	_, str := any(zero).(string)
	return accSlotBytes, !a.retract && !str
}

// rowBytes estimates the memory of stored row id.
func (s *rowStore) rowBytes(id int32) int {
	n := 0
	for _, ks := range s.cols {
		n += ks.slotBytes(id)
	}
	return n
}

// freeNow returns row id to the free list at once: only between batches
// (a tiered table's eviction), when no change of the batch refers to it.
func (s *rowStore) freeNow(id int32) {
	for _, ks := range s.cols {
		ks.clear(id)
	}
	s.free = append(s.free, id)
}
