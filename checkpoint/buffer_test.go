package checkpoint

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

// TestBufferRoundTrip: random Puts and Deletes, some larger than a chunk,
// over several Resets, come back from each in order with their bytes; a
// reset buffer keeps (and reuses) the chunks the round used, at least
// bufKeep, and a smaller round gives the rest back.
func TestBufferRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	b := NewBuffer()
	type rec struct {
		del  bool
		k, v []byte
	}
	kept := 0 // chunks kept by the last Reset
	for round := 0; round < 6; round++ {
		var want []rec
		n := 0
		ops := 3000
		if round%3 == 2 {
			ops = 100 // a small checkpoint after large ones
		}
		for i := 0; i < ops; i++ {
			k := make([]byte, 1+rng.Intn(40))
			rng.Read(k)
			r := rec{k: k, del: rng.Intn(4) == 0}
			if !r.del {
				size := rng.Intn(2000)
				if rng.Intn(500) == 0 {
					size = bufChunk + rng.Intn(bufChunk) // a chunk of its own
				}
				r.v = make([]byte, size)
				rng.Read(r.v)
				b.Put(r.k, r.v)
			} else {
				b.Delete(r.k)
			}
			n += len(r.k) + len(r.v)
			want = append(want, r)
		}
		if b.Len() != len(want) || b.Bytes() != n {
			t.Fatalf("round %d: Len %d Bytes %d, want %d %d", round, b.Len(), b.Bytes(), len(want), n)
		}
		for i, w := range want {
			k, v, del := b.at(i)
			if del != w.del || !bytes.Equal(k, w.k) || !bytes.Equal(v, w.v) || (del && v != nil) {
				t.Fatalf("round %d: op %d differs", round, i)
			}
		}
		chunks := min(len(b.chunks), max(bufKeep, b.cur+1))
		b.Reset()
		if b.Len() != 0 || b.Bytes() != 0 || len(b.chunks) != chunks {
			t.Fatalf("Reset: Len %d Bytes %d chunks %d (had %d)", b.Len(), b.Bytes(), len(b.chunks), chunks)
		}
		switch {
		case round%3 != 2 && len(b.chunks) <= bufKeep:
			t.Fatalf("round %d: a large round kept %d chunks", round, len(b.chunks))
		case round%3 == 2 && len(b.chunks) >= kept:
			t.Fatalf("round %d: a small round after a large one kept %d chunks (had %d)", round, len(b.chunks), kept)
		}
		kept = len(b.chunks)
	}
}

// sliceRun is a SortedRun over sorted key/value pairs, counting Releases.
type sliceRun struct {
	keys, vals [][]byte
	released   *int
}

func (r sliceRun) Len() int { return len(r.keys) }
func (r sliceRun) At(i int, dst []byte) ([]byte, []byte) {
	return append(dst, r.keys[i]...), r.vals[i]
}
func (r sliceRun) Bytes() int {
	n := 0
	for i := range r.keys {
		n += len(r.keys[i]) + len(r.vals[i])
	}
	return n
}
func (r sliceRun) Release() { *r.released++ }

// runOf is the sorted run of set's keys and values (counting its Release
// in released); it records them in model m, as the commit will.
func runOf(set map[string]string, m model, released *int) sliceRun {
	r := sliceRun{released: released}
	for k := range set {
		r.keys = append(r.keys, []byte(k))
	}
	slices.SortFunc(r.keys, bytes.Compare)
	for _, k := range r.keys {
		r.vals = append(r.vals, []byte(set[string(k)]))
		m[string(k)] = set[string(k)]
	}
	return r
}

// TestCommitSortedRuns: buffers mixing Puts, Deletes and sorted runs
// (PutRun, keys overlapping the other writes and each other) commit to
// the state the writes give in order (buffer order, then write order; a
// run's Puts at its place), and each run is released once by the commit.
func TestCommitSortedRuns(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		s, err := Open(Options{Dir: "/ck", JobID: jobA, NumRetained: 1, FS: vfs.NewMem()})
		if err != nil {
			t.Fatal(err)
		}
		m := model{}
		released, runs := 0, 0
		key := func() []byte {
			return append(KeyedPrefix("rows", rng.Intn(4)), fmt.Sprintf("k%0*d", rng.Intn(6), rng.Intn(300))...)
		}
		for id := int64(1); id <= 3; id++ {
			var bufs []*Buffer
			for nb := 1 + rng.Intn(3); nb > 0; nb-- {
				b := NewBuffer()
				for w := rng.Intn(6); w >= 0; w-- {
					switch rng.Intn(3) {
					case 0:
						k := key()
						_ = b.Delete(k)
						delete(m, string(k))
					case 1:
						k, v := key(), fmt.Sprintf("put %d", rng.Int())
						_ = b.Put(k, []byte(v))
						m[string(k)] = v
					default:
						set := map[string]string{}
						for n := rng.Intn(200); n > 0; n-- {
							set[string(key())] = fmt.Sprintf("run %d", rng.Int())
						}
						_ = b.PutRun(runOf(set, m, &released))
						runs++
					}
				}
				bufs = append(bufs, b)
			}
			if err := s.Commit(id, bufs); err != nil {
				t.Fatal(err)
			}
			assertState(t, fmt.Sprintf("seed %d checkpoint %d", seed, id), s.Reader(), m)
		}
		if released != runs {
			t.Fatalf("seed %d: %d runs released, %d put", seed, released, runs)
		}
		s.Close()
	}
}

// TestCommitParallelRanges: a delta large enough to be written as several
// key ranges at once (splitDelta) commits to the state the writes give in
// order, with keys repeated across buffers and runs (the last write wins
// within the range that holds it), deletes, and sorted runs cut at the
// split keys; the ranges are ingested as several table files; and a
// commit that fails in one range leaves no file behind and the state as
// it was.
func TestCommitParallelRanges(t *testing.T) {
	for _, ways := range []int{2, 3, 4} {
		restore := commitWays
		commitWays = func() int { return ways }
		rng := rand.New(rand.NewSource(int64(ways)))
		fs := vfs.NewMem()
		s, err := Open(Options{Dir: "/ck", JobID: jobA, NumRetained: 1, FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		m := model{}
		released, runs := 0, 0
		key := func(op string, span int) []byte {
			return append(KeyedPrefix(op, rng.Intn(8)), fmt.Sprintf("k%06d", rng.Intn(span))...)
		}
		for id := int64(1); id <= 4; id++ {
			var bufs []*Buffer
			for nb := 0; nb < 3; nb++ {
				b := NewBuffer()
				op := []string{"agg", "join", "rows"}[nb]
				for w := 0; w < 30000; w++ {
					k := key(op, 20000)
					if rng.Intn(6) == 0 {
						_ = b.Delete(k)
						delete(m, string(k))
						continue
					}
					v := fmt.Sprintf("%d/%d/%d", id, nb, w)
					_ = b.Put(k, []byte(v))
					m[string(k)] = v
				}
				set := map[string]string{}
				for n := 5000 + rng.Intn(5000); n > 0; n-- {
					set[string(key(op, 20000))] = fmt.Sprintf("run %d", rng.Int())
				}
				_ = b.PutRun(runOf(set, m, &released))
				runs++
				bufs = append(bufs, b)
			}
			if err := s.Commit(id, bufs); err != nil {
				t.Fatal(err)
			}
			if got := s.lastFiles; got < 2 {
				t.Fatalf("ways %d checkpoint %d: %d table files ingested, want one per key range", ways, id, got)
			}
			assertState(t, fmt.Sprintf("ways %d checkpoint %d", ways, id), s.Reader(), m)
		}
		// a failing range: the reserved key fails the range that holds it
		bad := NewBuffer()
		for w := 0; w < splitMin; w++ {
			_ = bad.Put(key("agg", 1<<20), []byte("never"))
		}
		_ = bad.Put([]byte{tagInternal, 1}, []byte("reserved"))
		if err := s.Commit(5, []*Buffer{bad}); err == nil {
			t.Fatal("a reserved key was committed")
		}
		assertState(t, fmt.Sprintf("ways %d after the failed commit", ways), s.Reader(), m)
		names, err := fs.List(s.ownedDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if strings.HasPrefix(n, ingestPrefix) {
				t.Fatalf("ways %d: %s left after the failed commit", ways, n)
			}
		}
		if released != runs {
			t.Fatalf("ways %d: %d runs released, %d put", ways, released, runs)
		}
		s.Close()
		commitWays = restore
	}
}
