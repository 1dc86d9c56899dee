package state

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestKeyIndexAgainstMap inserts, removes and finds keys in a keyIndex and
// a Go map side by side. The hashes are drawn from a few values (and some
// near the top of the range) so that probe runs are long, collide in their
// tags, wrap around the end of the entries and are closed up by removals
// from their middle.
func TestKeyIndexAgainstMap(t *testing.T) {
	for _, spread := range []int{1, 3, 17, 1 << 20} {
		t.Run(fmt.Sprintf("spread=%d", spread), func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(spread)))
			var x keyIndex
			var keyOf []string
			var hashes []uint64
			var free []int32
			model := map[string]int32{}
			hashOf := map[string]uint64{}
			for step := 0; step < 20000; step++ {
				k := fmt.Sprintf("k%d", rng.Intn(400))
				h, seen := hashOf[k]
				if !seen {
					h = uint64(rng.Intn(spread))
					if rng.Intn(4) == 0 {
						h = uint64(^uint32(0)) - uint64(rng.Intn(spread)) // the end of a table
					}
					hashOf[k] = h
				}
				g, ok := x.find(h, []byte(k), keyOf)
				mg, mok := model[k]
				if ok != mok || ok && g != mg {
					t.Fatalf("step %d: find %q = %d, %v; want %d, %v", step, k, g, ok, mg, mok)
				}
				switch {
				case !ok:
					if n := len(free); n > 0 {
						g = free[n-1]
						free = free[:n-1]
					} else {
						g = int32(len(keyOf))
						keyOf, hashes = append(keyOf, ""), append(hashes, 0)
					}
					keyOf[g], hashes[g] = k, h
					x.insert(h, g)
					model[k] = g
				case rng.Intn(2) == 0:
					x.remove(uint32(hashes[g]), g)
					keyOf[g] = ""
					free = append(free, g)
					delete(model, k)
				}
				if x.n != len(model) {
					t.Fatalf("step %d: %d entries, want %d", step, x.n, len(model))
				}
			}
			for k, g := range model {
				if got, ok := x.find(hashOf[k], []byte(k), keyOf); !ok || got != g {
					t.Fatalf("find %q at the end = %d, %v; want %d", k, got, ok, g)
				}
			}
		})
	}
}

// TestIntIndexAgainstMap is TestKeyIndexAgainstMap for int keys: keys from
// a few hundred values (negative ones among them) inserted, removed and
// found in an intIndex and a Go map side by side.
func TestIntIndexAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	var x intIndex
	model := map[int64]int32{}
	next := int32(0)
	for step := 0; step < 50000; step++ {
		k := int64(rng.Intn(600)) - 300
		if rng.Intn(8) == 0 {
			k = int64(rng.Uint64()) // anywhere
		}
		g, ok := x.find(k)
		mg, mok := model[k]
		if ok != mok || ok && g != mg {
			t.Fatalf("step %d: find %d = %d, %v; want %d, %v", step, k, g, ok, mg, mok)
		}
		switch {
		case !ok:
			x.insert(k, next)
			model[k] = next
			next++
		case rng.Intn(2) == 0:
			x.remove(k)
			delete(model, k)
		}
		if x.n != len(model) {
			t.Fatalf("step %d: %d entries, want %d", step, x.n, len(model))
		}
	}
	for k, g := range model {
		if got, ok := x.find(k); !ok || got != g {
			t.Fatalf("find %d at the end = %d, %v; want %d", k, got, ok, g)
		}
	}
}
