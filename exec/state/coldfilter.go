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
//
// The filter is cache-blocked: a key's probes all fall in one 512-bit
// block (a cache line), so a lookup costs one cache miss, not one per
// probe. 20 bits a key and 7 probes: ~0.03% false positives in a full
// filter, ~0.15% through a chain of five (growFilter; 10 bits and 5
// scattered probes let ~2.4% of q17's new groups through the committed
// state's chain: a Pebble Get each, ~13 us). 2.5 bytes a key.
type coldFilter struct {
	bits []uint64
	mask uint64 // number of bits - 1 (a power of two, at least a block)
	n    int    // keys added since the last (re)build
}

const (
	coldFilterBitsPerKey = 20
	coldFilterProbes     = 7 // 9 bits each, from one 64-bit remix
	coldFilterMinBits    = 1 << 16
	coldFilterBlockBits  = 512 // a cache line
)

func (f *coldFilter) size(bits uint64) {
	if bits < coldFilterMinBits {
		bits = coldFilterMinBits
	}
	p := uint64(coldFilterMinBits)
	for p < bits {
		p <<= 1
	}
	f.bits, f.mask, f.n = writtenSlice[uint64](int(p/64)), p-1, 0
}

func (f *coldFilter) add(pk []byte) { f.addHash(xxhash.Sum64(pk)) }

// probes returns key hash h's block (the index of its first word), from
// h's low bits, and a remix of h whose 9-bit chunks are the probes' bits
// within the block.
func (f *coldFilter) probes(h uint64) (block int, m uint64) {
	block = int((h&f.mask)&^(coldFilterBlockBits-1)) >> 6
	m = (h ^ h>>29) * 0xbf58476d1ce4e5b9
	return block, m ^ m>>32
}

// addHash adds a key by its hash (xxhash.Sum64).
func (f *coldFilter) addHash(h uint64) {
	if f.bits == nil {
		f.size(coldFilterMinBits)
	}
	b, m := f.probes(h)
	blk := f.bits[b : b+coldFilterBlockBits/64 : b+coldFilterBlockBits/64]
	for i := 0; i < coldFilterProbes; i++ {
		bit := m & (coldFilterBlockBits - 1)
		blk[bit>>6] |= 1 << (bit & 63)
		m >>= 9
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
	b, m := f.probes(h)
	blk := f.bits[b : b+coldFilterBlockBits/64 : b+coldFilterBlockBits/64]
	for i := 0; i < coldFilterProbes; i++ {
		bit := m & (coldFilterBlockBits - 1)
		if blk[bit>>6]&(1<<(bit&63)) == 0 {
			return false
		}
		m >>= 9
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
