package exec

import (
	"math/rand"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/internal/memtest"
)

// TestGatherStrings: gatherStrings builds the same array as the generic
// gather (values, NULLs, empty strings, repeated and empty id lists), on
// random stores; no leak.
func TestGatherStrings(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(1))
	for iter := 0; iter < 300; iter++ {
		k := &typedKeys[string]{dt: arrow.BinaryTypes.String}
		slots := 1 + rng.Intn(50)
		for g := 0; g < slots; g++ {
			v, ok := "", rng.Intn(4) > 0
			if ok {
				b := make([]byte, rng.Intn(40))
				for i := range b {
					b[i] = byte('a' + rng.Intn(26))
				}
				v = string(b)
			}
			k.vals = append(k.vals, v)
			k.valid = append(k.valid, ok)
		}
		if iter%5 == 0 { // no NULL: no validity bitmap
			for g := range k.valid {
				k.valid[g] = true
			}
		}
		ids := make([]int32, rng.Intn(80))
		for i := range ids {
			ids[i] = int32(rng.Intn(slots))
		}
		got := gatherStrings(mem, k, ids)
		want := k.gather(ids, mem)
		if !array.Equal(got, want) || got.NullN() != want.NullN() {
			t.Fatalf("iteration %d: gatherStrings %v, gather %v", iter, got, want)
		}
		s := got.(*array.String)
		for j, id := range ids {
			if s.IsValid(j) != k.valid[id] || (k.valid[id] && s.Value(j) != k.vals[id]) {
				t.Fatalf("iteration %d row %d: %q valid %v, want %q valid %v", iter, j, s.Value(j), s.IsValid(j), k.vals[id], k.valid[id])
			}
		}
		got.Release()
		want.Release()
	}
}
