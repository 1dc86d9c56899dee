package exec

import "math/bits"

// batchKeys finds the distinct keys of a batch before a keyed operator
// looks them up in its state: a batch of a skewed stream touches far
// fewer keys than it has rows (Nexmark q17: ~110 (auction, day) groups in
// ~950 bids; q15: one day), and a state lookup (a hash index much larger
// than the caches, the key's bytes compared, the tier's clock touched)
// costs several cache misses where a probe of this table, which fits in
// L1, costs none. The table is reused from batch to batch.
type batchKeys struct {
	slots []int32 // open addressing: 1 + index into first, 0 empty
	first []int32 // each distinct key's first row, in first-seen order
	of    []int32 // each row's distinct key (index into first)
}

// dedupe groups the rows of encoded keys buf[offs[i]:offs[i+1]] (as
// encodeKeyColumns writes them) whose KeyHashes are hashes: afterwards
// first holds the first row of each distinct key and of[i] row i's key.
func (b *batchKeys) dedupe(hashes []uint64, buf []byte, offs []int) {
	n := len(hashes)
	size := 1 << bits.Len(uint(2*n)) // at most half full
	if cap(b.slots) < size {
		b.slots = make([]int32, size)
	}
	slots := b.slots[:size]
	clear(slots)
	if cap(b.of) < n {
		b.of = make([]int32, n)
	}
	of := b.of[:n]
	first := b.first[:0]
	mask := uint64(size - 1)
	for i, h := range hashes {
		k := buf[offs[i]:offs[i+1]]
		// the high bits: state indexes use the low ones
		for p := (h >> 40) & mask; ; p = (p + 1) & mask {
			d := slots[p]
			if d == 0 {
				slots[p] = int32(len(first)) + 1
				of[i] = int32(len(first))
				first = append(first, int32(i))
				break
			}
			f := first[d-1]
			if hashes[f] == h && string(buf[offs[f]:offs[f+1]]) == string(k) {
				of[i] = d - 1
				break
			}
		}
	}
	b.first, b.of = first, of
}
