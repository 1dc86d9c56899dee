package state

import (
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// keyIndex maps the encoded keys of a bytes-keyed Table to their slots:
// open addressing with linear probing over 8-byte entries, at most half
// full. An entry holds the low 32 bits of its key's hash (where its probe
// starts, and a tag that spares most key comparisons) and its slot; the
// keys themselves are the Table's keyOf. Unlike Go's map, a caller that
// knows the keys it looks up next can prefetch their entries (prefetch),
// and growing rehashes no key.
type keyIndex struct {
	ents []keyEnt
	n    int
}

// keyEnt: g is the slot + 1 (0: empty).
type keyEnt struct {
	h uint32
	g int32
}

// KeyHash is the hash a bytes-keyed Table indexes encoded key k by (for
// the Hashed lookups and PrefetchKey).
func KeyHash(k []byte) uint64 { return xxhash.Sum64(k) }

// find returns the slot of key k (hash h) given the slots' keys.
func (x *keyIndex) find(h uint64, k []byte, keyOf []string) (int32, bool) {
	if x.n == 0 {
		return -1, false
	}
	mask := uint32(len(x.ents) - 1)
	tag := uint32(h)
	for p := tag & mask; ; p = (p + 1) & mask {
		e := x.ents[p]
		if e.g == 0 {
			return -1, false
		}
		if e.h == tag && keyOf[e.g-1] == string(k) {
			return e.g - 1, true
		}
	}
}

// insert adds slot g under hash h (its key must not be in the index).
func (x *keyIndex) insert(h uint64, g int32) {
	if 2*(x.n+1) > len(x.ents) {
		x.grow()
	}
	x.put(uint32(h), g+1)
	x.n++
}

func (x *keyIndex) put(tag uint32, g1 int32) {
	mask := uint32(len(x.ents) - 1)
	p := tag & mask
	for x.ents[p].g != 0 {
		p = (p + 1) & mask
	}
	x.ents[p] = keyEnt{h: tag, g: g1}
}

func (x *keyIndex) grow() {
	old := x.ents
	x.ents = writtenSlice[keyEnt](max(2*len(old), 64))
	for _, e := range old {
		if e.g != 0 {
			x.put(e.h, e.g)
		}
	}
}

// remove drops slot g, indexed under tag (its hash's low half): the
// entries after it in its probe run move back into the gap (no
// tombstones).
func (x *keyIndex) remove(tag uint32, g int32) {
	mask := uint32(len(x.ents) - 1)
	p := tag & mask
	for x.ents[p].g != g+1 {
		if x.ents[p].g == 0 {
			panic("state: key index lost a slot")
		}
		p = (p + 1) & mask
	}
	x.n--
	closeGap(x.ents, int(p), func(e keyEnt) int { return int(e.h) })
}

// closeGap empties entry p of a linear-probing table (a power of two
// long) and moves the entries after it in its probe run back, so that no
// probe stops early at the hole (no tombstones). hash gives an entry's
// probe start before masking; an entry's zero value is an empty one.
func closeGap[E comparable](ents []E, p int, hash func(E) int) {
	var empty E
	mask := len(ents) - 1
	for q := (p + 1) & mask; ; q = (q + 1) & mask {
		e := ents[q]
		if e == empty {
			break
		}
		// e may fill the gap at p unless its probe starts in (p, q]
		if (q-hash(e)&mask)&mask >= (q-p)&mask {
			ents[p] = e
			p = q
		}
	}
	ents[p] = empty
}

// prefetch starts loading the entry where the probe for hash h begins.
func (x *keyIndex) prefetch(h uint64) {
	if len(x.ents) > 0 {
		prefetch(uintptr(unsafe.Pointer(&x.ents[uint32(h)&uint32(len(x.ents)-1)])))
	}
}

// intIndex maps the int keys of an int-keyed Table to their slots, as
// keyIndex does encoded keys: open addressing with linear probing over
// 16-byte entries holding the key itself (no key comparison elsewhere),
// at most half full, removal by backward shift, and a prefetch for
// callers that know their next keys.
type intIndex struct {
	ents []intEnt
	n    int
}

// intEnt: g is the slot + 1 (0: empty).
type intEnt struct {
	k int64
	g int32
}

// home is where key k's probe starts.
func (x *intIndex) home(k int64) int {
	return int(mix(uint64(k)) & uint64(len(x.ents)-1))
}

func (x *intIndex) find(k int64) (int32, bool) {
	if x.n == 0 {
		return -1, false
	}
	mask := len(x.ents) - 1
	for p := x.home(k); ; p = (p + 1) & mask {
		e := &x.ents[p]
		if e.g == 0 {
			return -1, false
		}
		if e.k == k {
			return e.g - 1, true
		}
	}
}

// insert adds key k at slot g (k must not be in the index).
func (x *intIndex) insert(k int64, g int32) {
	if 2*(x.n+1) > len(x.ents) {
		old := x.ents
		x.ents = writtenSlice[intEnt](max(2*len(old), 64))
		for _, e := range old {
			if e.g != 0 {
				x.put(e)
			}
		}
	}
	x.put(intEnt{k: k, g: g + 1})
	x.n++
}

func (x *intIndex) put(e intEnt) {
	mask := len(x.ents) - 1
	p := x.home(e.k)
	for x.ents[p].g != 0 {
		p = (p + 1) & mask
	}
	x.ents[p] = e
}

// remove drops key k (it must be in the index).
func (x *intIndex) remove(k int64) {
	mask := len(x.ents) - 1
	p := x.home(k)
	for x.ents[p].k != k || x.ents[p].g == 0 {
		if x.ents[p].g == 0 {
			panic("state: int index lost a key")
		}
		p = (p + 1) & mask
	}
	x.n--
	closeGap(x.ents, p, func(e intEnt) int { return int(mix(uint64(e.k))) })
}

// prefetch starts loading the entry where key k's probe begins.
func (x *intIndex) prefetch(k int64) {
	if len(x.ents) > 0 {
		prefetch(uintptr(unsafe.Pointer(&x.ents[x.home(k)])))
	}
}

// writtenSlice returns a zeroed slice of n elements whose pages have each
// been written once. A large make takes fresh pages from the OS, and a
// hash table's inserts read a slot before writing it: the read maps the
// kernel's shared zero page and the write after it faults again to copy
// it (and flushes the other cores' TLBs: q7's row index spent 1% of the
// run's CPU in those shootdowns). A store a page first takes one fault.
func writtenSlice[T any](n int) []T {
	s := make([]T, n)
	var zero T
	step := max(1, 4096/int(unsafe.Sizeof(zero)))
	for i := 0; i < n; i += step {
		s[i] = zero
	}
	return s
}
