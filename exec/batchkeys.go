package exec

import (
	"math/bits"
	"slices"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/exec/state"
)

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

// dedupeHashes groups rows by their key's hash alone (HashKeys): a key
// need not be encoded to be grouped. sameKeys then checks that the rows
// of each group hold equal keys (two keys of one 64-bit hash are
// improbable, not impossible).
func (b *batchKeys) dedupeHashes(hashes []uint64) { b.group(hashes, nil) }

// groupRows groups rec's rows by the keys columns: by their HashKeys
// hashes, checked column by column; by encoded key (encodeKeyColumns into
// buf, offs, their KeyHashes into kh, returned for reuse) when two keys of
// the batch share a hash or byBytes is set.
func (b *batchKeys) groupRows(rec arrow.Record, keys []int, hashes []uint64, byBytes bool, buf []byte, offs []int, kh []uint64) ([]byte, []int, []uint64) {
	b.dedupeHashes(hashes)
	if !byBytes && b.sameKeys(rec, keys) {
		return buf, offs, kh
	}
	n := int(rec.NumRows())
	buf, offs = encodeKeyColumns(rec, keys, buf, offs)
	kh = slices.Grow(kh[:0], n)[:n]
	for i := range kh {
		kh[i] = state.KeyHash(buf[offs[i]:offs[i+1]])
	}
	b.dedupe(kh, buf, offs)
	return buf, offs, kh
}

// dedupe groups the rows of encoded keys buf[offs[i]:offs[i+1]] (as
// encodeKeyColumns writes them) whose KeyHashes are hashes, comparing the
// keys' bytes (after a collision of dedupeHashes: a rare path).
func (b *batchKeys) dedupe(hashes []uint64, buf []byte, offs []int) {
	b.group(hashes, func(f, i int32) bool {
		return string(buf[offs[f]:offs[f+1]]) == string(buf[offs[i]:offs[i+1]])
	})
}

// group puts rows of equal hashes (and, given same, equal keys) into one
// group: afterwards first holds each group's first row, in first-seen
// order, and of[i] row i's group.
func (b *batchKeys) group(hashes []uint64, same func(f, i int32) bool) {
	slots, of := b.reset(len(hashes))
	first := b.first[:0]
	mask := uint64(len(slots) - 1)
	for i, h := range hashes {
		// the high bits: state indexes use the low ones
		for p := (h >> 40) & mask; ; p = (p + 1) & mask {
			d := slots[p]
			if d == 0 {
				slots[p] = int32(len(first)) + 1
				of[i] = int32(len(first))
				first = append(first, int32(i))
				break
			}
			if f := first[d-1]; hashes[f] == h && (same == nil || same(f, int32(i))) {
				of[i] = d - 1
				break
			}
		}
	}
	b.first, b.of = first, of
}

// reset empties the table for a batch of n rows.
func (b *batchKeys) reset(n int) (slots, of []int32) {
	size := 1 << bits.Len(uint(2*n)) // at most half full
	if cap(b.slots) < size {
		b.slots = make([]int32, size)
	}
	slots = b.slots[:size]
	clear(slots)
	if cap(b.of) < n {
		b.of = make([]int32, n)
	}
	return slots, b.of[:n]
}

// sameKeys reports whether every row's key (columns keys of rec) equals
// the key of its group's first row, as their encodings (encodeKeyColumns)
// would compare: both NULL, or both valid with equal values (floats by
// canonicalFloatBits; a type encoded by its flag alone by that).
func (b *batchKeys) sameKeys(rec arrow.Record, keys []int) bool {
	for _, k := range keys {
		if !sameColumn(rec.Column(k), b.of, b.first) {
			return false
		}
	}
	return true
}

func sameColumn(col arrow.Array, of, first []int32) bool {
	nm, nulls := nullsOf(col)
	if nulls {
		for i, d := range of {
			if nm.null(i) != nm.null(int(first[d])) {
				return false
			}
		}
	}
	switch c := col.(type) {
	case *array.Int64:
		return sameValues(c.Int64Values(), of, first, nm, nulls)
	case *array.Timestamp:
		return sameValues(c.TimestampValues(), of, first, nm, nulls)
	case *array.Duration:
		return sameValues(c.DurationValues(), of, first, nm, nulls)
	case *array.Int32:
		return sameValues(c.Int32Values(), of, first, nm, nulls)
	case *array.Date32:
		return sameValues(c.Date32Values(), of, first, nm, nulls)
	case *array.Time32:
		return sameValues(c.Time32Values(), of, first, nm, nulls)
	case *array.MonthInterval:
		return sameValues(c.MonthIntervalValues(), of, first, nm, nulls)
	case *array.Int16:
		return sameValues(c.Int16Values(), of, first, nm, nulls)
	case *array.Int8:
		return sameValues(c.Int8Values(), of, first, nm, nulls)
	case *array.Decimal128:
		return sameValues(c.Values(), of, first, nm, nulls)
	case *array.Float64:
		vs := c.Float64Values()
		for i, d := range of {
			if f := first[d]; canonicalFloatBits(vs[i]) != canonicalFloatBits(vs[f]) && !(nulls && nm.null(i)) {
				return false
			}
		}
	case *array.Float32:
		vs := c.Float32Values()
		for i, d := range of {
			if f := first[d]; canonicalFloatBits(float64(vs[i])) != canonicalFloatBits(float64(vs[f])) && !(nulls && nm.null(i)) {
				return false
			}
		}
	case *array.Boolean:
		for i, d := range of {
			if c.Value(i) != c.Value(int(first[d])) && !(nulls && nm.null(i)) {
				return false
			}
		}
	case *array.String:
		if !nulls && expr.SameStrings(c) {
			return true // one value in every row (q17's day)
		}
		vo := c.ValueOffsets()
		data, base := c.ValueBytes(), vo[0]
		for i, d := range of {
			f := first[d]
			if string(data[vo[i]-base:vo[i+1]-base]) != string(data[vo[f]-base:vo[f+1]-base]) && !(nulls && nm.null(i)) {
				return false
			}
		}
	}
	return true
}

// sameValues: row i's value equals its group's first row's, or is NULL.
func sameValues[T comparable](vs []T, of, first []int32, nm nullMask, nulls bool) bool {
	vs = vs[:len(of)]
	for i, d := range of {
		if vs[i] != vs[first[d]] && !(nulls && nm.null(i)) {
			return false
		}
	}
	return true
}
