package exec

import (
	"math/rand"
	"testing"

	"github.com/streamsql/streamsql/exec/state"
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
