package checkpoint

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

// changeMerges writes n random Puts, Merges and Deletes (seeded, one write
// a key) into a buffer and applies them to the model: a Merge appends to
// the key's value (Pebble's default merger; a key without a value gets
// the operand alone).
func changeMerges(m model, rng *rand.Rand, id int64, n, keySpace int) *Buffer {
	b := NewBuffer()
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		k := string(append(KeyedPrefix("agg", rng.Intn(4)), fmt.Sprintf("key-%04d", rng.Intn(keySpace))...))
		if seen[k] {
			continue // one write a key a checkpoint (errMergeTwice)
		}
		seen[k] = true
		v := fmt.Sprintf("[%d.%d]", id, i)
		switch r := rng.Intn(10); {
		case r == 0:
			_ = b.Delete([]byte(k))
			delete(m, k)
		case r < 3:
			_ = b.Put([]byte(k), []byte(v))
			m[k] = v
		default:
			_ = b.Merge([]byte(k), []byte(v))
			m[k] += v
		}
	}
	return b
}

// TestMergesRoundTrip: merge operands reach the working state, every
// checkpoint restored, a restored job's later checkpoints and a savepoint
// as the concatenation of the key's last Put and the Merges since, through
// compactions of the deltas (more deltas than the L0 threshold).
func TestMergesRoundTrip(t *testing.T) {
	root := t.TempDir()
	s, err := Open(Options{Dir: "file://" + root, JobID: jobA, NumRetained: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewSource(3))
	m := model{}
	states := map[int64]model{}
	const n = 30
	for id := int64(1); id <= n; id++ {
		if err := s.Commit(id, []*Buffer{changeMerges(m, rng, id, 300, 400)}); err != nil {
			t.Fatal(err)
		}
		assertState(t, fmt.Sprintf("working %d", id), s.Reader(), m)
		states[id] = m.clone()
		mustPersist(t, s, id)
	}
	merged := 0
	for _, v := range m {
		if strings.Count(v, "[") > 1 {
			merged++
		}
	}
	if merged < 100 {
		t.Fatalf("only %d keys hold merged values", merged)
	}
	for _, id := range []int64{1, 7, n} {
		r, _, err := Restore(Options{Dir: root, JobID: jobB, NumRetained: 1}, filepath.Join(s.JobDir(), fmt.Sprintf("chk-%d", id)))
		if err != nil {
			t.Fatal(err)
		}
		assertState(t, fmt.Sprintf("restored chk-%d", id), r.Reader(), states[id])
		if id == n { // merges on top of restored values
			mr := states[id].clone()
			if err := r.Commit(n+1, []*Buffer{changeMerges(mr, rng, n+1, 300, 400)}); err != nil {
				t.Fatal(err)
			}
			assertState(t, "restored job's checkpoint", r.Reader(), mr)
			v, closer, err := r.CommittedGet([]byte(firstKey(mr)))
			if err != nil || string(v) != mr[firstKey(mr)] {
				t.Fatalf("CommittedGet: %q %v, want %q", v, err, mr[firstKey(mr)])
			}
			closer.Close()
		}
		if err := r.Discard(); err != nil {
			t.Fatal(err)
		}
	}
	assertSavepoint(t, s, root, n, states[n])
}

func firstKey(m model) string {
	best := ""
	for k := range m {
		if best == "" || k < best {
			best = k
		}
	}
	return best
}

// TestMergeWrittenTwice: a key merged and also written otherwise in one
// checkpoint fails the commit (a delta keeps one write a key: the merge
// would lose the other).
func TestMergeWrittenTwice(t *testing.T) {
	s, err := Open(Options{Dir: "file://" + t.TempDir(), JobID: jobA, NumRetained: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := KeyedPrefix("agg", 0)
	a, b := NewBuffer(), NewBuffer()
	_ = a.Put(k, []byte("x"))
	_ = b.Merge(k, []byte("y"))
	if err := s.Commit(1, []*Buffer{a, b}); err == nil || !strings.Contains(err.Error(), "merged and also written") {
		t.Fatalf("commit: %v", err)
	}
	// a writer scoped over the buffer keeps merges; one over a plain
	// writer has none
	if _, ok := Scoped(NewBuffer(), k).(MergeWriter); !ok {
		t.Fatal("Scoped(Buffer) takes no merges")
	}
	if _, ok := Scoped(plainWriter{}, k).(MergeWriter); ok {
		t.Fatal("Scoped(a writer without merges) claims merges")
	}
}

type plainWriter struct{}

func (plainWriter) Put(k, v []byte) error { return nil }
func (plainWriter) Delete(k []byte) error { return nil }

// syncToFS counts the SyncTo (and, as MemFS files get instead, SyncData)
// calls on the files it creates.
type syncToFS struct {
	vfs.FS
	n *atomic.Int64
}

func (fs syncToFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return syncToFile{f, fs.n}, nil
}

type syncToFile struct {
	vfs.File
	n *atomic.Int64
}

func (f syncToFile) SyncTo(length int64) (bool, error) {
	f.n.Add(1)
	return f.File.SyncTo(length)
}

// SyncData: a file without a descriptor (MemFS) is synced whole instead.
func (f syncToFile) SyncData() error {
	f.n.Add(1)
	return f.File.SyncData()
}

// TestDeltaStartsWriteback: a large delta's table file starts the
// writeback of what it wrote as it goes (SyncTo every deltaBytesPerSync),
// so that Persist's fsync finds little left to write.
func TestDeltaStartsWriteback(t *testing.T) {
	var n atomic.Int64
	s, err := Open(Options{Dir: "/ck", JobID: jobA, NumRetained: 1, FS: syncToFS{vfs.NewMem(), &n}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := NewBuffer()
	rng := rand.New(rand.NewSource(1))
	val := make([]byte, 1000) // random: Snappy keeps its size
	for i := range 4 * deltaBytesPerSync / len(val) {
		rng.Read(val)
		_ = b.Put(append(KeyedPrefix("agg", 0), fmt.Sprintf("k%08d", i)...), val)
	}
	if err := s.Commit(1, []*Buffer{b}); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got < 2 {
		t.Fatalf("%d SyncTo calls while writing a 4 MiB delta, want 2 or more", got)
	}
}
