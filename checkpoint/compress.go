package checkpoint

import (
	"fmt"

	"github.com/cockroachdb/pebble"
	"github.com/golang/snappy"
	"github.com/streamsql/streamsql/catalog"
)

// Compression of the working DB's table files.
//
// With state.backend.rocksdb.compression.per.level unset (Options
// CompressionPerLevel nil), compactions write Snappy, as Flink's default,
// and each delta's table file is Snappy-compressed only where that pays:
// Commit compresses a sample of its blocks (deltaSample) and writes the
// file uncompressed when Snappy would not make it at least
// adaptiveMinRatio times smaller. Aggregation and window deltas (small
// keys and accumulators) sample at 1.7-4.7 and keep Snappy; Nexmark q7's
// appended bid rows sample at 1.18, where Snappy took ~17% of the job's
// CPU (docs/state.md, "Compression of checkpoints"). Compactions rewrite
// a delta's keys into the levels below in their level's compression (and
// read uncompressed inputs without decompressing). Set, the list applies
// per level as in RocksDB (level 0, where Commit ingests its deltas,
// takes the first; levels past the list the last) and every delta takes
// level 0's.

// adaptiveMinRatio is the smallest sampled raw / Snappy size for which a
// delta is written compressed.
const adaptiveMinRatio = 1.5

// Sampling: up to sampleProbes stretches of consecutive writes spread over
// a delta's runs, each of about sampleBlock bytes (Pebble's default data
// block size), compressed as blocks are.
const (
	sampleProbes = 16
	sampleBlock  = 4 << 10
)

// ParseCompressionPerLevel parses Flink's
// state.backend.rocksdb.compression.per.level (catalog.ParseCompressionList)
// into Pebble's compressions. An empty value returns nil (adaptive).
func ParseCompressionPerLevel(v string) ([]pebble.Compression, error) {
	names, err := catalog.ParseCompressionList(v)
	if err != nil {
		return nil, fmt.Errorf("state.backend.rocksdb.compression.per.level: %w", err)
	}
	var out []pebble.Compression
	for _, n := range names {
		out = append(out, compressionByName[n])
	}
	return out, nil
}

// compressionByName maps catalog.ParseCompressionList's names.
var compressionByName = map[string]pebble.Compression{
	"NO_COMPRESSION":     pebble.NoCompression,
	"SNAPPY_COMPRESSION": pebble.SnappyCompression,
	"ZSTD_COMPRESSION":   pebble.ZstdCompression,
}

// levelCompression is the compression of level l under list ls (nil:
// Snappy).
func levelCompression(ls []pebble.Compression, l int) pebble.Compression {
	if len(ls) == 0 {
		return pebble.SnappyCompression
	}
	return ls[min(l, len(ls)-1)]
}

// deltaSample estimates how much Snappy shrinks the table file of merge
// m: it compresses up to sampleProbes block-sized stretches of
// consecutive writes taken at evenly spaced points of m's runs (each
// key stored after the prefix it shares with the one before, as a
// block stores it) and returns their raw and compressed sizes. It reads
// the runs by index and does not move the merge.
type deltaSample struct {
	raw, enc []byte
	kscr     []byte
	prev     []byte
}

func (d *deltaSample) measure(m *deltaMerge) (raw, compressed int) {
	total := 0
	for i := range m.runs {
		total += m.runs[i].end - m.runs[i].i
	}
	if total == 0 {
		return 0, 0
	}
	for p := 0; p < sampleProbes; p++ {
		pos := (2*p + 1) * total / (2 * sampleProbes)
		ri := 0
		for pos >= m.runs[ri].end-m.runs[ri].i {
			pos -= m.runs[ri].end - m.runs[ri].i
			ri++
		}
		r := &m.runs[ri]
		d.raw, d.prev = d.raw[:0], d.prev[:0]
		for i := r.i + pos; i < r.end && len(d.raw) < sampleBlock; i++ {
			var k, v []byte
			if r.ext != nil {
				k, v = r.ext.At(i, d.kscr[:0])
				d.kscr = k
			} else {
				k, v, _ = r.b.at(i)
			}
			n := 0
			for n < len(k) && n < len(d.prev) && k[n] == d.prev[n] {
				n++
			}
			d.raw = append(append(d.raw, k[n:]...), v...)
			d.prev = append(d.prev[:0], k...)
		}
		d.enc = snappy.Encode(d.enc[:cap(d.enc)], d.raw)
		raw += len(d.raw)
		compressed += len(d.enc)
		if total < sampleProbes {
			break // one stretch covers a tiny delta
		}
	}
	return raw, compressed
}
