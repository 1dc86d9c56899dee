package checkpoint

import (
	"math/rand"
	"testing"
)

// TestManifestStaysSmall: many small checkpoints must not make each new one
// copy an ever-growing MANIFEST.
func TestManifestStaysSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("1000 checkpoints")
	}
	s, err := Open(Options{Dir: t.TempDir(), JobID: jobA, NumRetained: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewSource(3))
	m := model{}
	var last Info
	for id := int64(1); id <= 1000; id++ {
		if err := s.Commit(id, []*Buffer{change(m, rng, id, 5, 100)}); err != nil {
			t.Fatal(err)
		}
		last = mustPersist(t, s, id)
	}
	if last.Written > 100<<10 {
		t.Fatalf("checkpoint 1000 of a tiny state wrote %d bytes", last.Written)
	}
	t.Logf("checkpoint 1000 wrote %d bytes, size %d", last.Written, last.Size)
}
