package exec

import (
	"math"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/cespare/xxhash/v2"

	"github.com/streamsql/streamsql/exec/expr"
)

// HashKeys appends to out one 64-bit hash per row of rec over the key
// columns. The hash is stable across processes and versions (it decides key
// groups, which checkpoints persist): never change it without a format
// migration. NULL hashes as a fixed value.
func HashKeys(rec arrow.Record, keys []int, out []uint64) []uint64 {
	n := int(rec.NumRows())
	if cap(out) < n {
		out = make([]uint64, n)
	}
	out = out[:n]
	for i := range out {
		out[i] = 0x9e3779b97f4a7c15
	}
	for _, k := range keys {
		hashColumn(rec.Column(k), out)
	}
	for i := range out {
		out[i] = fmix64(out[i])
	}
	return out
}

// keyGroup is the key group of a row of HashKeys h among maxP: h mod maxP,
// by a mask when maxP is a power of two (the default, 128): a 64-bit
// division per row cost the window aggregation ~3 ns a row.
func keyGroup(h uint64, maxP int) int {
	if m := uint64(maxP); m&(m-1) == 0 {
		return int(h & (m - 1))
	}
	return int(h % uint64(maxP))
}

// keyHashes returns the HashKeys of b's rows over columns keys: the
// batch's own (batchHashes) or computed into *buf. The result is
// read-only.
func keyHashes(b Batch, keys []int, buf *[]uint64) []uint64 {
	if h := batchHashes(b, keys); h != nil {
		return h
	}
	*buf = HashKeys(b.Rec, keys, (*buf)[:0])
	return *buf
}

// batchHashes returns b's Hashes when they are the HashKeys of its rows
// over columns keys (the exchange that routed it hashed the same columns),
// else nil.
func batchHashes(b Batch, keys []int) []uint64 {
	if b.Hashes == nil || len(b.Hashes) != b.Rows() || !slices.Equal(b.HashedBy, keys) {
		return nil
	}
	if verifyBatchHashes { // tests only: no shared counter on the jobs' hot path
		if !slices.Equal(b.Hashes, HashKeys(b.Rec, keys, nil)) {
			batchHashMismatches.Add(1)
			return nil
		}
		batchHashesUsed.Add(1)
	}
	return b.Hashes
}

// Tests: verifyBatchHashes makes batchHashes compare a batch's hashes
// with HashKeys first, counting the differences in batchHashMismatches and
// the batches whose operator took them in batchHashesUsed.
var (
	batchHashesUsed     atomic.Int64
	batchHashMismatches atomic.Int64
	verifyBatchHashes   bool
)

func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

const nullHash = 0x2545f4914f6cdd1d

func combine(h, v uint64) uint64 { return combineMixed(h, fmix64(v)) }

// combineMixed is combine of a value whose fmix64 is m.
func combineMixed(h, m uint64) uint64 { return (h ^ m) * 0x100000001b3 }

func hashColumn(col arrow.Array, out []uint64) {
	nulls := col.NullN() > 0
	switch a := col.(type) {
	case *array.Int32:
		vs := a.Int32Values()
		for i := range out {
			if nulls && a.IsNull(i) {
				out[i] = combine(out[i], nullHash)
				continue
			}
			out[i] = combine(out[i], uint64(int64(vs[i])))
		}
	case *array.Int64:
		vs := a.Int64Values()
		for i := range out {
			if nulls && a.IsNull(i) {
				out[i] = combine(out[i], nullHash)
				continue
			}
			out[i] = combine(out[i], uint64(vs[i]))
		}
	case *array.Timestamp:
		vs := a.TimestampValues()
		for i := range out {
			if nulls && a.IsNull(i) {
				out[i] = combine(out[i], nullHash)
				continue
			}
			out[i] = combine(out[i], uint64(vs[i]))
		}
	case *array.Int8:
		hashInts(a, a.Int8Values(), out)
	case *array.Int16:
		hashInts(a, a.Int16Values(), out)
	case *array.Date32:
		hashInts(a, arrow.Int32Traits.CastFromBytes(arrow.Date32Traits.CastToBytes(a.Date32Values())), out)
	case *array.Time32:
		hashInts(a, arrow.Int32Traits.CastFromBytes(arrow.Time32Traits.CastToBytes(a.Time32Values())), out)
	case *array.MonthInterval:
		hashInts(a, arrow.Int32Traits.CastFromBytes(arrow.MonthIntervalTraits.CastToBytes(a.MonthIntervalValues())), out)
	case *array.Duration:
		vs := a.DurationValues()
		for i := range out {
			if nulls && a.IsNull(i) {
				out[i] = combine(out[i], nullHash)
				continue
			}
			out[i] = combine(out[i], uint64(vs[i]))
		}
	case *array.Float32:
		vs := a.Float32Values()
		for i := range out {
			if nulls && a.IsNull(i) {
				out[i] = combine(out[i], nullHash)
				continue
			}
			out[i] = combine(out[i], canonicalFloatBits(float64(vs[i])))
		}
	case *array.Float64:
		vs := a.Float64Values()
		for i := range out {
			if nulls && a.IsNull(i) {
				out[i] = combine(out[i], nullHash)
				continue
			}
			out[i] = combine(out[i], canonicalFloatBits(vs[i]))
		}
	case *array.Decimal128:
		for i := range out {
			if nulls && a.IsNull(i) {
				out[i] = combine(out[i], nullHash)
				continue
			}
			v := a.Value(i)
			out[i] = combine(combine(out[i], v.LowBits()), uint64(v.HighBits()))
		}
	case *array.Boolean:
		for i := range out {
			if nulls && a.IsNull(i) {
				out[i] = combine(out[i], nullHash)
				continue
			}
			v := uint64(1)
			if a.Value(i) {
				v = 2
			}
			out[i] = combine(out[i], v)
		}
	case *array.String:
		if !nulls && len(out) > 1 && expr.SameStrings(a) {
			// one value in every row (a batch of Nexmark q17 holds one
			// DATE_FORMAT day): one hash, no comparison per row
			c := fmix64(xxhash.Sum64String(a.Value(0)))
			for i := range out {
				out[i] = combineMixed(out[i], c)
			}
			return
		}
		// a value equal to the row before's reuses its hash (runs of
		// days): xxhash of short strings costs several times a comparison
		var prev string
		var ph uint64
		have := false
		for i := range out {
			if nulls && a.IsNull(i) {
				out[i] = combine(out[i], nullHash)
				continue
			}
			v := a.Value(i)
			if !have || v != prev {
				prev, ph, have = v, xxhash.Sum64String(v), true
			}
			out[i] = combine(out[i], ph)
		}
	default:
		for i := range out {
			out[i] = combine(out[i], nullHash)
		}
	}
}

// hashInts hashes small integers (TINYINT, SMALLINT, DATE, TIME, months)
// as INT does: the value widened to 64 bits.
func hashInts[T int8 | int16 | int32](col arrow.Array, vs []T, out []uint64) {
	nulls := col.NullN() > 0
	for i := range out {
		if nulls && col.IsNull(i) {
			out[i] = combine(out[i], nullHash)
			continue
		}
		out[i] = combine(out[i], uint64(int64(vs[i])))
	}
}

// canonicalFloatBits is the bit pattern of v as a key: -0.0 and 0.0 are
// one key, and so are all NaNs (as Flink's GROUP BY and DISTINCT treat them).
func canonicalFloatBits(v float64) uint64 {
	if v == 0 {
		return 0
	}
	if v != v {
		return 0x7ff8000000000001
	}
	return math.Float64bits(v)
}

// HashRow is HashKeys(rec, keys, nil)[i]: the hash of one row, for a
// caller that needs few rows' hashes of a batch (an aggregation's new
// keys).
func HashRow(rec arrow.Record, keys []int, i int) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, k := range keys {
		h = hashAt(rec.Column(k), i, h)
	}
	return fmix64(h)
}

// hashAt is hashColumn for row i alone: h combined with the row's value.
func hashAt(col arrow.Array, i int, h uint64) uint64 {
	if col.IsNull(i) {
		return combine(h, nullHash)
	}
	switch a := col.(type) {
	case *array.Int32:
		return combine(h, uint64(int64(a.Value(i))))
	case *array.Int64:
		return combine(h, uint64(a.Value(i)))
	case *array.Timestamp:
		return combine(h, uint64(a.Value(i)))
	case *array.Int8:
		return combine(h, uint64(int64(a.Value(i))))
	case *array.Int16:
		return combine(h, uint64(int64(a.Value(i))))
	case *array.Date32:
		return combine(h, uint64(int64(a.Value(i))))
	case *array.Time32:
		return combine(h, uint64(int64(a.Value(i))))
	case *array.MonthInterval:
		return combine(h, uint64(int64(a.Value(i))))
	case *array.Duration:
		return combine(h, uint64(a.Value(i)))
	case *array.Float32:
		return combine(h, canonicalFloatBits(float64(a.Value(i))))
	case *array.Float64:
		return combine(h, canonicalFloatBits(a.Value(i)))
	case *array.Decimal128:
		v := a.Value(i)
		return combine(combine(h, v.LowBits()), uint64(v.HighBits()))
	case *array.Boolean:
		v := uint64(1)
		if a.Value(i) {
			v = 2
		}
		return combine(h, v)
	case *array.String:
		return combine(h, xxhash.Sum64String(a.Value(i)))
	}
	return combine(h, nullHash)
}
