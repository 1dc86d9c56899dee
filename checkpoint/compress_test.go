package checkpoint

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

func TestParseCompressionPerLevel(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []pebble.Compression
		err  string
	}{
		{in: "", want: nil},
		{in: " SNAPPY_COMPRESSION ", want: []pebble.Compression{pebble.SnappyCompression}},
		{in: "no_compression;NO_COMPRESSION;ZSTD_COMPRESSION", want: []pebble.Compression{pebble.NoCompression, pebble.NoCompression, pebble.ZstdCompression}},
		{in: "SNAPPY_COMPRESSION;LZ4_COMPRESSION", err: "state.backend.rocksdb.compression.per.level: level 1: LZ4_COMPRESSION is not available in the Pebble state backend"},
		{in: "SNAPPY", err: `level 0: unknown compression "SNAPPY"`},
		{in: "SNAPPY_COMPRESSION;", err: `level 1: unknown compression ""`},
	} {
		got, err := ParseCompressionPerLevel(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%q: %v %v, want %v", c.in, got, err, c.want)
		}
	}
	if levelCompression(nil, 3) != pebble.SnappyCompression {
		t.Error("the default level compression is not Snappy")
	}
	ls := []pebble.Compression{pebble.NoCompression, pebble.ZstdCompression}
	if levelCompression(ls, 0) != pebble.NoCompression || levelCompression(ls, 6) != pebble.ZstdCompression {
		t.Error("levels past the list do not take its last entry")
	}
}

// deltaOf is a checkpoint delta of n keys in 8 key groups (some in a
// SortedRun, as a join side hands its rows over), values of size bytes:
// random letters (incompressible beyond a third) when random, else
// repeated text; recorded in m.
func deltaOf(m model, rng *rand.Rand, id int64, n, size int, random bool) []*Buffer {
	val := func() string {
		if !random {
			return fmt.Sprintf("%d:%s", id, strings.Repeat("the same words again ", size/21+1))[:size]
		}
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(rng.Intn(256))
		}
		return string(b)
	}
	b := NewBuffer()
	run := map[string]string{}
	for i := 0; i < n; i++ {
		k := string(append(KeyedPrefix("op", i%8), fmt.Sprintf("%d-%06d", id, i)...))
		v := val()
		if i%2 == 0 {
			run[k] = v
			continue
		}
		_ = b.Put([]byte(k), []byte(v))
		m[k] = v
	}
	var released int
	_ = b.PutRun(runOf(run, m, &released))
	return []*Buffer{b}
}

// compressions lists the compression of every table file of the working
// DB by level.
func compressions(t *testing.T, s *Store) map[int][]string {
	t.Helper()
	levels, err := s.db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	out := map[int][]string{}
	for l, files := range levels {
		for _, f := range files {
			out[l] = append(out[l], f.Properties.CompressionName)
		}
		sort.Strings(out[l])
	}
	return out
}

// allCompressions lists the compression of every table file, sorted.
func allCompressions(t *testing.T, s *Store) string {
	var all []string
	for _, names := range compressions(t, s) {
		all = append(all, names...)
	}
	sort.Strings(all)
	return fmt.Sprint(all)
}

// TestDeltaCompressionAdaptive: unset, a delta that Snappy would shrink
// by less than a third is ingested uncompressed, one that compresses well
// with Snappy; either restores to the same state. Set, every delta takes
// level 0's compression and compactions their level's.
func TestDeltaCompressionAdaptive(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	fs := vfs.NewMem()
	s, err := Open(Options{Dir: "/ck", JobID: jobA, NumRetained: 3, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := model{}
	if err := s.Commit(1, deltaOf(m, rng, 1, 4000, 200, false)); err != nil {
		t.Fatal(err)
	}
	if got := allCompressions(t, s); got != "[Snappy]" || s.rawDeltas.Load() != 0 {
		t.Fatalf("a compressible delta: files %v, %d raw", got, s.rawDeltas.Load())
	}
	if err := s.Commit(2, deltaOf(m, rng, 2, 4000, 200, true)); err != nil {
		t.Fatal(err)
	}
	if got := allCompressions(t, s); got != "[NoCompression Snappy]" || s.rawDeltas.Load() != 1 {
		t.Fatalf("an incompressible delta: files %v, %d raw", got, s.rawDeltas.Load())
	}
	mustPersist(t, s, 2)
	r, _, err := Restore(Options{Dir: "/ck", JobID: jobB, NumRetained: 1, FS: fs}, s.JobDir())
	if err != nil {
		t.Fatal(err)
	}
	assertState(t, "restored", r.Reader(), m)
	r.Close()

	// Set: NO_COMPRESSION for level 0 (every delta), Zstd below.
	z, err := Open(Options{Dir: "/ck2", JobID: jobA, NumRetained: 3, FS: fs,
		CompressionPerLevel: []pebble.Compression{pebble.NoCompression, pebble.ZstdCompression}})
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	zm := model{}
	for id := int64(1); id <= 2; id++ {
		if err := z.Commit(id, deltaOf(zm, rng, id, 3000, 100, false)); err != nil {
			t.Fatal(err)
		}
	}
	if got := allCompressions(t, z); got != "[NoCompression NoCompression]" || z.rawDeltas.Load() != 0 {
		t.Fatalf("deltas under NO_COMPRESSION: files %v, %d counted as adaptive", got, z.rawDeltas.Load())
	}
	if err := z.db.Compact([]byte{0}, []byte{0xff}, true); err != nil {
		t.Fatal(err)
	}
	got := compressions(t, z)
	if len(got[0]) != 0 || len(got[6]) == 0 || strings.Join(got[6], ",") != strings.TrimSuffix(strings.Repeat("ZSTD,", len(got[6])), ",") {
		t.Fatalf("compacted under ZSTD below level 0: files %v", got)
	}
	assertState(t, "compacted", z.Reader(), zm)
}

// TestDeltaSampleReadsRunsInPlace: measuring a merge's sample reads its
// runs by index and leaves the merge where it was.
func TestDeltaSampleReadsRunsInPlace(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	m := model{}
	var d deltaMerge
	d.init(deltaOf(m, rng, 1, 500, 64, true))
	k0, _, _, _, _, _ := d.next()
	first := string(k0)
	var smp deltaSample
	raw, c := smp.measure(&d)
	if raw == 0 || c == 0 || float64(raw) > 1.2*float64(c) {
		t.Fatalf("random values sampled as raw %d, compressed %d", raw, c)
	}
	n := 1
	for {
		k, _, _, _, ok, err := d.next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if string(k) <= first {
			t.Fatalf("merge out of order after sampling: %q after %q", k, first)
		}
		first = string(k)
		n++
	}
	if n != len(m) {
		t.Fatalf("merge yielded %d keys after sampling, want %d", n, len(m))
	}
}
