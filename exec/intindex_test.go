package exec

import (
	"math/rand"
	"testing"
)

// TestIntIndexMatchesMap: seeded random puts, gets and deletes (keys from
// small ranges, so runs collide and wrap around the table's end, and
// sequential and high-bit keys) agree with a Go map after every step,
// through growth and deletions by backward shift.
func TestIntIndexMatchesMap(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewSource(seed))
		var x intIndex
		ref := map[uint64]int32{}
		key := func() uint64 {
			switch rng.Intn(3) {
			case 0:
				return uint64(rng.Intn(64))
			case 1:
				return uint64(rng.Intn(64)) << 58 // differ in the high bits only
			}
			return rng.Uint64() % 5000
		}
		for step := 0; step < 20000; step++ {
			k := key()
			switch rng.Intn(5) {
			case 0, 1:
				if _, ok := ref[k]; !ok {
					v := int32(rng.Intn(1 << 20))
					x.put(k, v)
					ref[k] = v
				}
			case 2:
				x.del(k)
				delete(ref, k)
			default:
				got, ok := x.get(k)
				want, wok := ref[k]
				if ok != wok || got != want {
					t.Fatalf("seed %d step %d: get(%d) = %d %v, want %d %v", seed, step, k, got, ok, want, wok)
				}
			}
			if x.n != len(ref) {
				t.Fatalf("seed %d step %d: %d keys, want %d", seed, step, x.n, len(ref))
			}
		}
		for k, v := range ref {
			if got, ok := x.get(k); !ok || got != v {
				t.Fatalf("seed %d: get(%d) = %d %v at the end, want %d", seed, k, got, ok, v)
			}
		}
	}
}
