package exec

import "math/bits"

// intIndex maps 64-bit keys to int32 values (a multiset's 8-byte integer
// values to their indexes): open addressing with linear probing, at most
// 3/4 full, deletion by backward shift (no tombstones). A slot holds its
// key and value + 1 (0: empty), so a new table needs no filling, and one
// cache line answers most lookups (a Go map of a COUNT(DISTINCT) set of a
// day's bidders spent ~20% of Nexmark q15 and q16 probing).
type intIndex struct {
	slots []intSlot
	n     int
	shift uint8 // 64 - log2(len(slots))
}

type intSlot struct {
	k uint64
	v int32 // value + 1; 0: empty
}

// home is the first slot k may be in (Fibonacci hashing: the high bits of
// k times 2^64/phi, so keys that differ in any bits spread).
func (x *intIndex) home(k uint64) int { return int((k * 0x9E3779B97F4A7C15) >> x.shift) }

func (x *intIndex) get(k uint64) (int32, bool) {
	if x.n == 0 {
		return 0, false
	}
	mask := len(x.slots) - 1
	for p := x.home(k); ; p = (p + 1) & mask {
		s := &x.slots[p]
		if s.v == 0 {
			return 0, false
		}
		if s.k == k {
			return s.v - 1, true
		}
	}
}

// put adds k (absent) with value v.
func (x *intIndex) put(k uint64, v int32) {
	if (x.n+1)*4 > len(x.slots)*3 {
		x.grow(x.n + 1)
	}
	x.place(k, v)
	x.n++
}

func (x *intIndex) place(k uint64, v int32) {
	mask := len(x.slots) - 1
	p := x.home(k)
	for x.slots[p].v != 0 {
		p = (p + 1) & mask
	}
	x.slots[p] = intSlot{k, v + 1}
}

// reserve sizes the table for n keys.
func (x *intIndex) reserve(n int) {
	if n*4 > len(x.slots)*3 {
		x.grow(n)
	}
}

// grow rehashes into a table for at least n keys at most 3/4 full.
func (x *intIndex) grow(n int) {
	size := max(8, 1<<bits.Len(uint(n*4/3)))
	old := x.slots
	x.slots = make([]intSlot, size)
	x.shift = uint8(64 - bits.TrailingZeros(uint(size)))
	for _, s := range old {
		if s.v != 0 {
			x.place(s.k, s.v-1)
		}
	}
}

// del removes k if present: the entries after it in its run move back
// into the hole when their home is not between the hole and them.
func (x *intIndex) del(k uint64) {
	if x.n == 0 {
		return
	}
	mask := len(x.slots) - 1
	p := x.home(k)
	for {
		if x.slots[p].v == 0 {
			return
		}
		if x.slots[p].k == k {
			break
		}
		p = (p + 1) & mask
	}
	for q := (p + 1) & mask; x.slots[q].v != 0; q = (q + 1) & mask {
		// the entry at q may fill the hole at p when p lies on its probe
		// path from its home h to q: q-h (cyclic) >= q-p
		if h := x.home(x.slots[q].k); (q-h)&mask >= (q-p)&mask {
			x.slots[p] = x.slots[q]
			p = q
		}
	}
	x.slots[p] = intSlot{}
	x.n--
}
