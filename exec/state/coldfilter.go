package state

import (
	"github.com/cespare/xxhash/v2"
)

// coldFilter is a Bloom filter over every Pebble key a tiered Table has
// written to its cold tier (write-backs and restored keys). A lookup that
// misses in memory asks Pebble only when the filter may hold the key: a
// new key (a new group) is then found absent without a Pebble Get, whose
// memtable seek has no Bloom filter of its own and dominated the lookups
// of jobs that keep creating keys (Nexmark q17: 18% of the CPU).
//
// A key removed from Pebble stays in the filter (a false positive costs
// one Get); when more keys were added than the filter is sized for, it is
// rebuilt from the keys Pebble holds, at twice the size if need be.
// Every write to the cold DB must call add before it is committed: a key
// in Pebble the filter does not hold would be taken as absent.
type coldFilter struct {
	bits []uint64
	mask uint64 // number of bits - 1 (a power of two)
	n    int    // keys added since the last (re)build
}

const (
	coldFilterBitsPerKey = 10
	coldFilterProbes     = 5
	coldFilterMinBits    = 1 << 16
)

func (f *coldFilter) size(bits uint64) {
	if bits < coldFilterMinBits {
		bits = coldFilterMinBits
	}
	p := uint64(coldFilterMinBits)
	for p < bits {
		p <<= 1
	}
	f.bits, f.mask, f.n = make([]uint64, p/64), p-1, 0
}

func (f *coldFilter) add(pk []byte) { f.addHash(xxhash.Sum64(pk)) }

// addHash adds a key by its hash (xxhash.Sum64).
func (f *coldFilter) addHash(h uint64) {
	if f.bits == nil {
		f.size(coldFilterMinBits)
	}
	d := h>>33 | h<<31 | 1
	for i := 0; i < coldFilterProbes; i++ {
		b := h & f.mask
		f.bits[b>>6] |= 1 << (b & 63)
		h += d
	}
	f.n++
}

// mayHold reports whether pk may have been added (false: certainly not).
func (f *coldFilter) mayHold(pk []byte) bool {
	if f.bits == nil {
		return false
	}
	return f.mayHoldHash(xxhash.Sum64(pk))
}

// mayHoldHash is mayHold of a key by its hash.
func (f *coldFilter) mayHoldHash(h uint64) bool {
	d := h>>33 | h<<31 | 1
	for i := 0; i < coldFilterProbes; i++ {
		b := h & f.mask
		if f.bits[b>>6]&(1<<(b&63)) == 0 {
			return false
		}
		h += d
	}
	return true
}

// full reports whether more keys were added than the filter is sized for.
func (f *coldFilter) full() bool {
	return f.bits != nil && uint64(f.n)*coldFilterBitsPerKey > f.mask+1
}

// rebuild sizes the filter for the keys of Pebble (twice their number, so
// that it is not rebuilt again soon) and adds them. Call it only with
// every write committed.
func (tt *tableTier) rebuildFilter() error {
	it, err := tt.cold.db.NewIter(nil)
	if err != nil {
		return err
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	var f coldFilter
	f.size(uint64(2*n+1024) * coldFilterBitsPerKey)
	for ok := it.First(); ok; ok = it.Next() {
		f.add(it.Key())
	}
	if err := it.Close(); err != nil {
		return err
	}
	tt.filter = f
	return nil
}
