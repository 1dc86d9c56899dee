package exec

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/planner"
)

// TestBatchKeysGroupsEqualKeys: rows share a distinct key exactly when
// their encoded keys are equal, each distinct key's first row is its
// first occurrence, in order, with the keys' real hashes and with hashes
// that collide (all equal, or equal for keys of one length), across
// reuses of the table by batches of other sizes.
func TestBatchKeysGroupsEqualKeys(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	var b batchKeys
	hashers := map[string]func([]byte) uint64{
		"xxhash": state.KeyHash,
		"const":  func([]byte) uint64 { return 7 },
		"len":    func(k []byte) uint64 { return uint64(len(k)) << 40 },
	}
	for round := 0; round < 30; round++ {
		for name, hash := range hashers {
			n := rng.Intn(1500)
			distinct := 1 + rng.Intn(200)
			var buf []byte
			offs := []int{0}
			for i := 0; i < n; i++ {
				k := rng.Intn(distinct)
				buf = append(buf, make([]byte, k%5)...) // keys of several lengths
				buf = append(buf, byte(k), byte(k>>8))
				offs = append(offs, len(buf))
			}
			hashes := make([]uint64, n)
			for i := range hashes {
				hashes[i] = hash(buf[offs[i]:offs[i+1]])
			}
			b.dedupe(hashes, buf, offs)
			key := func(i int) string { return string(buf[offs[i]:offs[i+1]]) }
			seen := map[string]int{}
			var first []int32
			for i := 0; i < n; i++ {
				d, ok := seen[key(i)]
				if !ok {
					d = len(first)
					seen[key(i)] = d
					first = append(first, int32(i))
				}
				if int(b.of[i]) != d {
					t.Fatalf("%s, round %d: row %d in key %d, want %d", name, round, i, b.of[i], d)
				}
			}
			if len(b.of) != n || len(b.first) != len(first) {
				t.Fatalf("%s: %d rows, %d keys; want %d, %d", name, len(b.of), len(b.first), n, len(first))
			}
			for j := range first {
				if b.first[j] != first[j] {
					t.Fatalf("%s: key %d first at row %d, want %d", name, j, b.first[j], first[j])
				}
			}
		}
	}
}

// TestBatchKeysHashGroupsVerified: grouped by HashKeys alone, a batch's
// rows (every key type, NULLs, few distinct values, sliced records,
// several columns) fall into the groups their encoded keys make, and
// sameKeys accepts them; when hashes collide (all equal, or two keys'
// equal) sameKeys rejects the groups unless their keys are equal.
func TestBatchKeysHashGroupsVerified(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(12))
	var b batchKeys
	for _, span := range []int64{2, 3, 50} {
		rec := keyRecord(t, mem, rng, 500, span)
		for _, r := range []arrow.Record{rec, rec.NewSlice(5, 497)} {
			ncol := int(r.NumCols())
			var sets [][]int
			for c := 0; c < ncol; c++ {
				sets = append(sets, []int{c})
			}
			for k := 0; k < 20; k++ {
				sets = append(sets, rng.Perm(ncol)[:2+rng.Intn(3)])
			}
			for _, keys := range sets {
				kc := make([]arrow.Array, len(keys))
				for i, k := range keys {
					kc[i] = r.Column(k)
				}
				n := int(r.NumRows())
				enc := make([]string, n)
				group := map[string]int32{}
				for i := range enc {
					enc[i] = string(refKey(nil, kc, i))
					if _, ok := group[enc[i]]; !ok {
						group[enc[i]] = int32(len(group))
					}
				}
				hashes := HashKeys(r, keys, nil)
				b.dedupeHashes(hashes)
				if !b.sameKeys(r, keys) {
					t.Fatalf("keys %v: groups by hash rejected", keys)
				}
				if len(b.first) != len(group) {
					t.Fatalf("keys %v: %d groups by hash, %d keys", keys, len(b.first), len(group))
				}
				for i := range enc {
					if group[enc[i]] != b.of[i] {
						t.Fatalf("keys %v row %d: group %d, want %d", keys, i, b.of[i], group[enc[i]])
					}
				}
				// every hash equal: the groups hold equal keys only if
				// the batch has one key
				same := make([]uint64, n)
				b.dedupeHashes(same)
				if got := b.sameKeys(r, keys); got != (len(group) == 1) {
					t.Fatalf("keys %v, one hash, %d keys: sameKeys %v", keys, len(group), got)
				}
				// two keys' hashes equal
				if len(group) >= 2 {
					copy(same, hashes)
					x, y := enc[0], ""
					for _, e := range enc {
						if e != x {
							y = e
							break
						}
					}
					for i := range same {
						if enc[i] == y {
							same[i] = hashes[0]
						}
					}
					b.dedupeHashes(same)
					if b.sameKeys(r, keys) {
						t.Fatalf("keys %v: two keys of one hash accepted", keys)
					}
				}
			}
			if r != rec {
				r.Release()
			}
		}
		rec.Release()
	}
}

// TestGroupRowsRegroupSameGroups: an aggregation's grouping of a batch by
// encoded keys (its path after a hash collision) makes the groups its
// grouping by hash makes, over every key type and sliced batches.
func TestGroupRowsRegroupSameGroups(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(13))
	rec := keyRecord(t, mem, rng, 700, 4)
	defer rec.Release()
	multi := 0
	for k := 0; k < 40; k++ {
		keys := rng.Perm(int(rec.NumCols()))[:1+rng.Intn(3)]
		r := rec.NewSlice(int64(rng.Intn(20)), 700)
		var byHash, byBytes groupAgg
		byHash.spec, byBytes.spec = &planner.AggOp{Keys: keys}, &planner.AggOp{Keys: keys}
		byBytes.regroup = true
		byHash.groupRows(r)
		byBytes.groupRows(r)
		if len(byBytes.keyOffs) != int(r.NumRows())+1 || len(byHash.keyOffs) != 0 {
			t.Fatalf("keys %v: %d and %d keys encoded, want %d and none", keys, len(byBytes.keyOffs)-1, len(byHash.keyOffs)-1, r.NumRows())
		}
		if fmt.Sprint(byHash.dedupe.first, byHash.dedupe.of) != fmt.Sprint(byBytes.dedupe.first, byBytes.dedupe.of) {
			t.Fatalf("keys %v: by hash %v %v, by encoded key %v %v", keys,
				byHash.dedupe.first, byHash.dedupe.of, byBytes.dedupe.first, byBytes.dedupe.of)
		}
		if len(byHash.dedupe.first) > 1 {
			multi++
		}
		r.Release()
	}
	if multi < 20 {
		t.Fatalf("%d of 40 batches of more than one key", multi)
	}
}
