package checkpoint

import (
	"math/rand"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

// TestPersistTakesDeltaSums: Persist records the deltas Commit wrote with
// the CRC-32C summed as they were written (not read back), and a restore,
// which reads every file and checks its sum, accepts them; a table file
// that is not a delta (a compaction's output) is read.
func TestPersistTakesDeltaSums(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	fs := vfs.NewMem()
	s, err := Open(Options{Dir: "/ck", JobID: jobA, NumRetained: 10, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := model{}
	states := map[int64]model{}
	for id := int64(1); id <= 4; id++ {
		if err := s.Commit(id, deltaOf(m, rng, id, 3000, 150, id%2 == 0)); err != nil {
			t.Fatal(err)
		}
		before := s.summed.Load()
		info := mustPersist(t, s, id)
		if got := s.summed.Load() - before; got != int64(s.lastFiles) {
			t.Fatalf("checkpoint %d: %d of its %d delta files summed as written", id, got, s.lastFiles)
		}
		if info.Written == 0 {
			t.Fatalf("checkpoint %d wrote nothing", id)
		}
		states[id] = m.clone()
	}
	// a compaction's output is no delta: read back
	if err := s.db.Compact([]byte{0}, []byte{0xff}, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(5, deltaOf(m, rng, 5, 10, 10, false)); err != nil {
		t.Fatal(err)
	}
	before := s.summed.Load()
	info := mustPersist(t, s, 5)
	states[5] = m.clone()
	if got := s.summed.Load() - before; got != int64(s.lastFiles) || info.Files <= s.lastFiles {
		t.Fatalf("after a compaction: %d summed, %d delta files, %d files", got, s.lastFiles, info.Files)
	}
	for id := int64(1); id <= 5; id++ {
		r, _, err := Restore(Options{Dir: "/ck", JobID: jobB, NumRetained: 1, FS: fs}, fs.PathJoin(s.JobDir(), chkName(id)))
		if err != nil {
			t.Fatalf("restore of checkpoint %d (every file's sum checked): %v", id, err)
		}
		assertState(t, chkName(id), r.Reader(), states[id])
		if err := r.Discard(); err != nil {
			t.Fatal(err)
		}
	}
}
