package checkpoint

import (
	"bytes"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"testing"
)

// changeRanges writes into nb buffers n random Puts and Deletes and a few
// range deletions each (seeded), and applies them to the model as a
// checkpoint does: the ranges remove what earlier checkpoints wrote, then
// the checkpoint's own writes apply (a key written in a range stays).
func changeRanges(m model, rng *rand.Rand, id int64, nb, n, keySpace int) []*Buffer {
	key := func() []byte {
		return append(KeyedPrefix("win", rng.Intn(6)), fmt.Sprintf("%06d", rng.Intn(keySpace))...)
	}
	bufs := make([]*Buffer, nb)
	var ranges []keyRange
	writes := model{}
	deleted := map[string]bool{}
	for b := range bufs {
		bufs[b] = NewBuffer()
		for r := rng.Intn(4); r > 0; r-- {
			lo, hi := key(), key()
			if rng.Intn(4) == 0 { // a whole key group and what precedes it
				lo = KeyedPrefix("win", 0)
			}
			if bytes.Compare(lo, hi) > 0 {
				lo, hi = hi, lo
			}
			if err := bufs[b].DeleteRange(lo, hi); err != nil {
				panic(err)
			}
			ranges = append(ranges, keyRange{lo, hi})
		}
		// one write a key, in key order (an operator's run)
		ops := map[string]string{} // "" deletes
		for i := 0; i < n; i++ {
			k := string(key())
			if rng.Intn(5) == 0 {
				ops[k] = ""
				continue
			}
			ops[k] = fmt.Sprintf("v%d-%d-%d", id, b, i)
		}
		keys := make([]string, 0, len(ops))
		for k := range ops {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if v := ops[k]; v == "" {
				_ = bufs[b].Delete([]byte(k))
				deleted[k] = true
				delete(writes, k)
			} else {
				_ = bufs[b].Put([]byte(k), []byte(v))
				writes[k] = v
				delete(deleted, k)
			}
		}
	}
	for k := range m {
		for _, r := range ranges {
			if k >= string(r.start) && k < string(r.end) {
				delete(m, k)
			}
		}
	}
	for k := range deleted {
		delete(m, k)
	}
	for k, v := range writes {
		m[k] = v
	}
	return bufs
}

// TestRangeDeletionsRoundTrip: range deletions (overlapping, across
// buffers, across the key ranges of a delta written in parallel) remove
// the earlier checkpoints' keys and not the checkpoint's own, in the
// working state, CommittedGet, every checkpoint restored and a savepoint;
// Persist takes every delta file's sum as written.
func TestRangeDeletionsRoundTrip(t *testing.T) {
	restoreWays := commitWays
	commitWays = func() int { return 3 }
	defer func() { commitWays = restoreWays }()
	root := t.TempDir()
	s, err := Open(Options{Dir: "file://" + root, JobID: jobA, NumRetained: 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewSource(5))
	m := model{}
	states := map[int64]model{}
	const n = 8
	removed, split := 0, 0
	for id := int64(1); id <= n; id++ {
		before := len(m)
		writes, space := 400, 4000
		if id%3 == 0 { // two buffers past splitMin: parallel key ranges
			writes, space = splitMin, 1000000
		}
		if err := s.Commit(id, changeRanges(m, rng, id, 2, writes, space)); err != nil {
			t.Fatal(err)
		}
		if s.lastFiles > 1 {
			split++
		}
		removed += max(0, before-len(m))
		assertState(t, fmt.Sprintf("working %d", id), s.Reader(), m)
		states[id] = m.clone()
		sums0 := s.summed.Load()
		mustPersist(t, s, id)
		// with range deletions in them, the deltas' sums are still the
		// ones taken as they were written (deltasum.go). Not the first:
		// into an empty DB it is ingested into the bottom level, where
		// Pebble may rewrite it at once to drop its range deletions (an
		// elision-only compaction: a new file, read back to sum).
		if got := s.summed.Load() - sums0; id > 1 && got != int64(s.lastFiles) {
			t.Fatalf("checkpoint %d: %d of its %d delta files summed as written", id, got, s.lastFiles)
		}
	}
	if split == 0 || removed == 0 {
		t.Fatalf("%d commits in parallel ranges, %d keys removed: the test did not exercise them", split, removed)
	}
	for _, id := range []int64{3, n} {
		r, _, err := Restore(Options{Dir: root, JobID: jobB, NumRetained: 1}, filepath.Join(s.JobDir(), fmt.Sprintf("chk-%d", id)))
		if err != nil {
			t.Fatal(err)
		}
		assertState(t, fmt.Sprintf("restored chk-%d", id), r.Reader(), states[id])
		if err := r.Discard(); err != nil {
			t.Fatal(err)
		}
	}
	// a key a range removed is gone for CommittedGet too
	gone := 0
	for k := range states[n-1] {
		if _, ok := m[k]; ok {
			continue
		}
		if _, closer, err := s.CommittedGet([]byte(k)); err == nil {
			closer.Close()
			t.Fatalf("CommittedGet(%q) found a removed key", k)
		}
		if gone++; gone == 50 {
			break
		}
	}
	assertSavepoint(t, s, root, n, states[n])
}

// TestDeleteRangeRefusesReservedKeys: a range from the store's own
// subspace is an error; an empty range is nothing.
func TestDeleteRangeRefusesReservedKeys(t *testing.T) {
	b := NewBuffer()
	if err := b.DeleteRange([]byte{tagInternal}, []byte{1}); err == nil {
		t.Fatal("a range from 0x00 was taken")
	}
	if err := b.DeleteRange([]byte{2}, []byte{1}); err != nil || b.Len() != 0 {
		t.Fatalf("an empty range: %v, %d ops", err, b.Len())
	}
}
