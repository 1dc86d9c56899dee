package checkpoint

import (
	"bytes"
	"math/rand"
	"testing"
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
