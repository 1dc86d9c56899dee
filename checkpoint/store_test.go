package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

func TestKeysArePrefixFree(t *testing.T) {
	a := KeyedPrefix("a", 1)
	ab := KeyedPrefix("ab", 1)
	if bytes.HasPrefix(ab, a) || bytes.HasPrefix(a, ab) {
		t.Fatalf("prefixes of different operators overlap: %x %x", a, ab)
	}
	if !bytes.HasPrefix(KeyedPrefix("op", 7), OperatorPrefix("op")) {
		t.Fatal("KeyedPrefix does not start with OperatorPrefix")
	}
	if bytes.HasPrefix(SubtaskKey("op", 1), OperatorPrefix("op")) {
		t.Fatal("subtask state lives in the keyed subspace")
	}
	if bytes.Compare(KeyedPrefix("op", 1), KeyedPrefix("op", 2)) >= 0 {
		t.Fatal("key groups not in order")
	}
	for _, tc := range []struct{ in, want []byte }{
		{[]byte{1, 2}, []byte{1, 3}},
		{[]byte{1, 0xff}, []byte{2}},
		{[]byte{0xff}, nil},
		{nil, nil},
	} {
		if got := prefixEnd(tc.in); !bytes.Equal(got, tc.want) {
			t.Errorf("prefixEnd(%x) = %x, want %x", tc.in, got, tc.want)
		}
	}
}

func TestOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Dir: "", JobID: jobA, NumRetained: 1}, "empty path"},
		{Options{Dir: "s3://bucket/x", JobID: jobA, NumRetained: 1}, "unsupported scheme"},
		{Options{Dir: "/x", JobID: "ABC", NumRetained: 1}, "32 lower-case hex"},
		{Options{Dir: "/x", JobID: strings.ToUpper(jobA), NumRetained: 1}, "32 lower-case hex"},
		{Options{Dir: "/x", JobID: jobA, NumRetained: 0}, "num-retained"},
	} {
		tc.o.FS = vfs.NewMem()
		if _, err := Open(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestCommitRules(t *testing.T) {
	s, err := Open(Options{Dir: "/ck", JobID: jobA, NumRetained: 1, FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := NewBuffer()
	_ = b.Put([]byte{0, 1}, []byte("x"))
	if err := s.Commit(1, []*Buffer{b}); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("reserved key accepted: %v", err)
	}
	b.Reset() // a failed Commit leaves its buffers untouched
	if err := s.Commit(2, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(2, nil); err == nil || !strings.Contains(err.Error(), "must grow") {
		t.Fatalf("repeated id accepted: %v", err)
	}
	if _, err := s.Persist(1, KindCheckpoint, nil); err == nil || !strings.Contains(err.Error(), "last committed checkpoint is 2") {
		t.Fatalf("persist of a superseded id: %v", err)
	}
	// Scoped writer and Buffer reuse after Commit.
	w := Scoped(b, KeyedPrefix("op", 3))
	_ = w.Put([]byte("k"), []byte("v"))
	if err := s.Commit(3, []*Buffer{b}); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 0 {
		t.Fatal("buffer not reset by Commit")
	}
	want := model{string(KeyedPrefix("op", 3)) + "k": "v"}
	assertState(t, "scoped", s.Reader(), want)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if err := s.Commit(4, nil); err != ErrClosed {
		t.Fatalf("commit after close: %v", err)
	}
}

// (a) round trip on the real file system, Dir given as a file:// URI.
func TestRoundTrip(t *testing.T) {
	root := t.TempDir()
	o := Options{Dir: "file://" + root, JobID: jobA, NumRetained: 5}
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	m := model{}
	states := map[int64]model{}
	for id := int64(1); id <= 5; id++ {
		b := change(m, rng, id, 500, 2000)
		if err := s.Commit(id, []*Buffer{b, NewBuffer()}); err != nil {
			t.Fatal(err)
		}
		assertState(t, "working", s.Reader(), m)
		states[id] = m.clone()
		info := mustPersist(t, s, id)
		if info.ID != id || info.Path != filepath.Join(root, jobA, fmt.Sprintf("chk-%d", id)) || info.Meta["job"] != "test" {
			t.Fatalf("info %+v", info)
		}
	}
	jobDir := s.JobDir()
	for id := int64(1); id <= 5; id++ {
		r, info, err := Restore(Options{Dir: root, JobID: jobB, NumRetained: 1}, filepath.Join(jobDir, fmt.Sprintf("chk-%d", id)))
		if err != nil {
			t.Fatalf("restore chk-%d: %v", id, err)
		}
		if info.ID != id || r.LastCommitted() != id {
			t.Fatalf("restored %d, want %d", info.ID, id)
		}
		assertState(t, fmt.Sprintf("chk-%d", id), r.Reader(), states[id])
		if err := r.Discard(); err != nil {
			t.Fatal(err)
		}
	}
	// The job directory means its latest complete checkpoint.
	r, info, err := Restore(Options{Dir: root, JobID: jobB, NumRetained: 1}, "file://"+jobDir)
	if err != nil || info.ID != 5 || len(info.Skipped) != 0 {
		t.Fatalf("restore job dir: %v %+v", err, info)
	}
	assertState(t, "job dir", r.Reader(), states[5])
	// A restored job checkpoints on and restores again.
	m5 := states[5].clone()
	if err := r.Commit(6, []*Buffer{change(m5, rng, 6, 100, 2000)}); err != nil {
		t.Fatal(err)
	}
	mustPersist(t, r, 6)
	r.Close()
	r2, info, err := Restore(Options{Dir: root, JobID: jobC, NumRetained: 1}, r.JobDir())
	if err != nil || info.ID != 6 {
		t.Fatalf("restore of restored job: %v %+v", err, info)
	}
	assertState(t, "restored job", r2.Reader(), m5)
	r2.Close()

	// RestoreLatest drops commits of checkpoints that never completed.
	b := change(m.clone(), rng, 6, 300, 2000)
	if err := s.Commit(6, []*Buffer{b}); err != nil {
		t.Fatal(err)
	}
	info, ok, err := s.RestoreLatest()
	if err != nil || !ok || info.ID != 5 {
		t.Fatalf("RestoreLatest: %v %v %+v", err, ok, info)
	}
	assertState(t, "RestoreLatest", s.Reader(), states[5])
	// It keeps checkpointing incrementally afterwards.
	if err := s.Commit(6, []*Buffer{change(m, rng, 6, 10, 2000)}); err != nil {
		t.Fatal(err)
	}
	info6 := mustPersist(t, s, 6)
	if info6.Written*2 > info6.Size {
		t.Errorf("checkpoint after RestoreLatest not incremental: wrote %d of %d", info6.Written, info6.Size)
	}
	assertNoOrphans(t, vfs.Default, jobDir, []int64{2, 3, 4, 5, 6})

	// Retain on cancellation keeps the checkpoints, not the working state;
	// the job dir keeps Flink's layout, with an empty taskowned/.
	if err := s.DiscardWorking(); err != nil {
		t.Fatal(err)
	}
	owned, err := vfs.Default.List(filepath.Join(jobDir, taskownedDirName))
	if err != nil || len(owned) != 0 || !isDir(vfs.Default, filepath.Join(jobDir, "chk-6")) || !isDir(vfs.Default, filepath.Join(jobDir, sharedDirName)) {
		t.Fatalf("DiscardWorking removed the wrong things: taskowned/ holds %q (%v)", owned, err)
	}
	if err := s.DiscardWorking(); err != nil { // idempotent
		t.Fatal(err)
	}
	r3, info, err := Restore(o, jobDir) // same job: restores in place
	if err != nil || info.ID != 6 {
		t.Fatalf("restore in place: %v", err)
	}
	assertState(t, "in place", r3.Reader(), m)
	if err := r3.Discard(); err != nil {
		t.Fatal(err)
	}
	if _, err := vfs.Default.Stat(jobDir); err == nil {
		t.Fatal("Discard left the job dir")
	}
}

func TestRestoreLatestWithoutCheckpoint(t *testing.T) {
	s, err := Open(Options{Dir: "/ck", JobID: jobA, NumRetained: 1, FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := model{}
	if err := s.Commit(1, []*Buffer{change(m, rand.New(rand.NewSource(2)), 1, 10, 100)}); err != nil {
		t.Fatal(err)
	}
	_, ok, err := s.RestoreLatest()
	if err != nil || ok {
		t.Fatalf("RestoreLatest: ok=%v err=%v", ok, err)
	}
	assertState(t, "empty", s.Reader(), model{})
	if s.LastCommitted() != 0 {
		t.Fatal("last id not reset")
	}
}

func TestRestoreRefusesIncomplete(t *testing.T) {
	fs := vfs.NewMem()
	_ = fs.MkdirAll("/ck/"+jobA+"/chk-3", 0o755)
	o := Options{Dir: "/ck", JobID: jobB, NumRetained: 1, FS: fs}
	for _, tc := range []struct{ from, want string }{
		{"/ck/" + jobA + "/chk-3", "no _metadata"},
		{"/ck/" + jobA, "no complete checkpoint"},
		{"/nowhere", "no such directory"},
	} {
		if _, _, err := Restore(o, tc.from); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Restore(%s): %v, want %q", tc.from, err, tc.want)
		}
	}
}

// A Persist concurrent with the next Commit either captures exactly its
// checkpoint or fails cleanly; never a mix.
func TestPersistConcurrentWithCommit(t *testing.T) {
	s, fs := openMemStore(t, 2)
	rng := rand.New(rand.NewSource(3))
	m := model{}
	if err := s.Commit(1, []*Buffer{change(m, rng, 1, 50, 500)}); err != nil {
		t.Fatal(err)
	}
	persisted, superseded := 0, 0
	for id := int64(1); id <= 20; id++ {
		want := m.clone()
		done := make(chan error, 1)
		go func() {
			_, err := s.Persist(id, KindCheckpoint, nil)
			done <- err
		}()
		if err := s.Commit(id+1, []*Buffer{change(m, rng, id+1, 50, 500)}); err != nil {
			t.Fatal(err)
		}
		_ = dump(t, s.Reader())
		if err := <-done; err != nil {
			if !strings.Contains(err.Error(), "last committed checkpoint is") {
				t.Fatalf("persist %d: %v", id, err)
			}
			superseded++
			continue
		}
		persisted++
		r, info, err := Restore(Options{Dir: "/ck", JobID: jobB, NumRetained: 1, FS: fs}, fmt.Sprintf("/ck/%s/chk-%d", jobA, id))
		if err != nil || info.ID != id {
			t.Fatalf("restore %d: %v", id, err)
		}
		assertState(t, "concurrent", r.Reader(), want)
		r.Discard()
	}
	t.Logf("persisted %d, superseded %d", persisted, superseded)
}

func TestAbort(t *testing.T) {
	s, fs := openMemStore(t, 3)
	rng := rand.New(rand.NewSource(11))
	m := model{}
	states := map[int64]model{}
	for id := int64(1); id <= 2; id++ {
		if err := s.Commit(id, []*Buffer{change(m, rng, id, 200, 1000)}); err != nil {
			t.Fatal(err)
		}
		states[id] = m.clone()
		mustPersist(t, s, id)
	}
	// The runtime declared checkpoint 2 failed after it completed on disk.
	if err := s.Abort(2); err != nil {
		t.Fatal(err)
	}
	assertNoOrphans(t, fs, s.JobDir(), []int64{1})
	if err := s.Abort(2); err != nil {
		t.Fatal("Abort is not idempotent:", err)
	}
	// Files chk-2 had put in shared/ come back with the next checkpoint.
	if err := s.Commit(3, []*Buffer{change(m, rng, 3, 10, 1000)}); err != nil {
		t.Fatal(err)
	}
	mustPersist(t, s, 3)
	assertNoOrphans(t, fs, s.JobDir(), []int64{1, 3})
	r, info, err := Restore(Options{Dir: "/ck", JobID: jobB, NumRetained: 1, FS: fs}, s.JobDir())
	if err != nil || info.ID != 3 {
		t.Fatalf("restore: %v", err)
	}
	assertState(t, "after abort", r.Reader(), m)
	r.Close()
}

// TestRestoreLatestOfRestoredJob: a job started from another job's
// checkpoint that fails before its first own checkpoint goes back to the
// checkpoint it started from, not to an empty state.
func TestRestoreLatestOfRestoredJob(t *testing.T) {
	root := t.TempDir()
	s, err := Open(Options{Dir: root, JobID: jobA, NumRetained: 1})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(7))
	m := model{}
	if err := s.Commit(1, []*Buffer{change(m, rng, 1, 300, 1000)}); err != nil {
		t.Fatal(err)
	}
	mustPersist(t, s, 1)
	s.Close()
	r, info, err := Restore(Options{Dir: root, JobID: jobB, NumRetained: 1}, s.JobDir())
	if err != nil || info.ID != 1 {
		t.Fatalf("restore: %v %+v", err, info)
	}
	defer r.Close()
	// Work of the restored job that never completed a checkpoint ...
	if err := r.Commit(2, []*Buffer{change(m.clone(), rng, 2, 300, 1000)}); err != nil {
		t.Fatal(err)
	}
	// ... is dropped by RestoreLatest, which returns to checkpoint 1.
	info, ok, err := r.RestoreLatest()
	if err != nil || !ok || info.ID != 1 {
		t.Fatalf("RestoreLatest: ok=%v %+v %v", ok, info, err)
	}
	assertState(t, "back to the base checkpoint", r.Reader(), m)
	// Once the job has its own checkpoint, that one wins.
	m2 := m.clone()
	if err := r.Commit(2, []*Buffer{change(m2, rng, 2, 100, 1000)}); err != nil {
		t.Fatal(err)
	}
	mustPersist(t, r, 2)
	if info, ok, err = r.RestoreLatest(); err != nil || !ok || info.ID != 2 {
		t.Fatalf("RestoreLatest after own checkpoint: ok=%v %+v %v", ok, info, err)
	}
	assertState(t, "own checkpoint", r.Reader(), m2)
}

// DiscardWorking on a job dir whose taskowned/ is gone (an older version
// removed it) recreates it empty.
func TestDiscardWorkingRecreatesTaskowned(t *testing.T) {
	fs := vfs.NewMem()
	s, err := Open(Options{Dir: "/ck", JobID: jobA, NumRetained: 1, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(1, []*Buffer{change(model{}, rand.New(rand.NewSource(3)), 1, 10, 10)}); err != nil {
		t.Fatal(err)
	}
	mustPersist(t, s, 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	owned := "/ck/" + jobA + "/" + taskownedDirName
	if err := fs.RemoveAll(owned); err != nil {
		t.Fatal(err)
	}
	if err := s.DiscardWorking(); err != nil {
		t.Fatal(err)
	}
	if names, err := fs.List(owned); err != nil || len(names) != 0 {
		t.Fatalf("taskowned/: %q %v", names, err)
	}
}

// MaxID covers every id the job directory has used: complete and
// incomplete chk dirs, leftover snapshots, ids handed to the store that
// never completed, and what a restore started from.
func TestMaxID(t *testing.T) {
	fs := vfs.NewMem()
	o := Options{Dir: "/ck", JobID: jobA, NumRetained: 2, FS: fs}
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.MaxID(); got != 0 {
		t.Fatalf("fresh store: MaxID %d", got)
	}
	rng := rand.New(rand.NewSource(5))
	m := model{}
	for id := int64(1); id <= 2; id++ {
		if err := s.Commit(id, []*Buffer{change(m, rng, id, 20, 50)}); err != nil {
			t.Fatal(err)
		}
		mustPersist(t, s, id)
	}
	if got := s.MaxID(); got != 2 {
		t.Fatalf("after chk-2: MaxID %d", got)
	}
	if err := s.Commit(3, []*Buffer{change(m.clone(), rng, 3, 20, 50)}); err != nil { // never persisted
		t.Fatal(err)
	}
	if got := s.MaxID(); got != 3 {
		t.Fatalf("after commit 3: MaxID %d", got)
	}
	if err := s.Abort(4); err != nil { // triggered, then aborted
		t.Fatal(err)
	}
	if got := s.MaxID(); got != 4 {
		t.Fatalf("after abort 4: MaxID %d", got)
	}
	if _, ok, err := s.RestoreLatest(); err != nil || !ok {
		t.Fatalf("RestoreLatest: %v %v", err, ok)
	}
	if got := s.MaxID(); got != 4 {
		t.Fatalf("RestoreLatest lowered MaxID to %d", got)
	}
	sp := mustSavepoint(t, s, 2, "/sp")
	s.Close()

	// A process killed in the middle of checkpoints 7 and 9: chk-7 without
	// _metadata, a temporary snapshot of 9.
	jobDir := "/ck/" + jobA
	for _, d := range []string{jobDir + "/chk-7", jobDir + "/" + taskownedDirName + "/" + snapPrefix + "9"} {
		if err := fs.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s, err = Open(o)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.MaxID(); got != 9 {
		t.Fatalf("reopened: MaxID %d, want 9", got)
	}
	s.Close()
	s, _, err = Restore(o, jobDir) // in place
	if err != nil {
		t.Fatal(err)
	}
	if got := s.MaxID(); got != 7 { // Open removed snap-9
		t.Fatalf("restored in place: MaxID %d, want 7", got)
	}
	s.Close()

	// A new job restored from chk-2 of that directory numbers above chk-7.
	r, info, err := Restore(Options{Dir: "/ck", JobID: jobB, NumRetained: 1, FS: fs}, jobDir+"/chk-2")
	if err != nil || info.ID != 2 {
		t.Fatalf("restore chk-2: %v %+v", err, info)
	}
	if got := r.MaxID(); got != 7 {
		t.Fatalf("restored from chk-2: MaxID %d, want 7", got)
	}
	r.Close()
	// A new job restored from a savepoint numbers above its checkpoint id.
	r, _, err = Restore(Options{Dir: "/ck", JobID: jobC, NumRetained: 1, FS: fs}, sp.Path)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.MaxID(); got != 2 {
		t.Fatalf("restored from a savepoint: MaxID %d, want 2", got)
	}
	if err := r.Commit(3, nil); err != nil {
		t.Fatal(err)
	}
	if got := r.MaxID(); got != 3 {
		t.Fatalf("after commit 3: MaxID %d", got)
	}
	r.Close()
}

// Only complete checkpoints newer than the one restored matter: a damaged
// older _metadata is not a fallback, and when several newer ones fail, the
// error names the newest and every reason.
func TestFallbackCandidates(t *testing.T) {
	fs := vfs.NewMem()
	o := Options{Dir: "/ck", JobID: jobA, NumRetained: 5, FS: fs}
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewSource(6))
	m := model{}
	states := map[int64]model{}
	for id := int64(1); id <= 4; id++ {
		if err := s.Commit(id, []*Buffer{change(m, rng, id, 20, 50)}); err != nil {
			t.Fatal(err)
		}
		states[id] = m.clone()
		mustPersist(t, s, id)
	}
	jobDir := s.JobDir()
	damage := func(id int64) {
		p := fs.PathJoin(fs.PathJoin(jobDir, chkName(id)), metadataName)
		f, err := fs.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("{not json"))
		f.Close()
	}
	damage(1)
	ro := Options{Dir: "/ck", JobID: jobB, NumRetained: 1, FS: fs}
	r, info, err := Restore(ro, jobDir)
	if err != nil || info.ID != 4 || len(info.Skipped) != 0 {
		t.Fatalf("damaged chk-1 affects the restore of chk-4: %v %+v", err, info)
	}
	assertState(t, "chk-4", r.Reader(), states[4])
	r.Discard()

	damage(4)
	damage(3)
	_, _, err = Restore(ro, jobDir)
	var ue *UnverifiedError
	if !errors.As(err, &ue) || ue.Checkpoint != jobDir+"/chk-4" || ue.Older != jobDir+"/chk-2" || len(ue.Reasons) != 2 ||
		!strings.Contains(ue.Reasons[0], "chk-4") || !strings.Contains(ue.Reasons[1], "chk-3") {
		t.Fatalf("want an UnverifiedError for chk-4 and chk-3, falling back to chk-2: %v %+v", err, ue)
	}
	ro.AllowFallback = true
	r, info, err = Restore(ro, jobDir)
	if err != nil || info.ID != 2 || len(info.Skipped) != 2 {
		t.Fatalf("fallback to chk-2: %v %+v", err, info)
	}
	assertState(t, "chk-2", r.Reader(), states[2])
	r.Discard()
}

// TestCommitMergesRuns: a checkpoint delta in several buffers, each of
// sorted runs and unsorted stretches, writing keys more than once (Puts,
// Deletes, Puts again, in one buffer and across buffers) commits with the
// last write of each key winning and restores equal; a Commit that fails
// (a reserved key at the end of its last buffer) applies nothing.
func TestCommitMergesRuns(t *testing.T) {
	s, fs := openMemStore(t, 2)
	m := model{}
	rng := rand.New(rand.NewSource(11))
	delta := func(id int64, bad bool) []*Buffer {
		next := model{}
		for k, v := range m {
			next[k] = v
		}
		var bufs []*Buffer
		for bi := 0; bi < 3; bi++ {
			b := NewBuffer()
			val := strings.Repeat("x", 300)
			for r := 0; r < 20; r++ {
				n := 1 + rng.Intn(400)
				kg := rng.Intn(8)
				sorted := rng.Intn(3) > 0
				base := rng.Intn(5000)
				for i := 0; i < n; i++ {
					x := base + i
					if !sorted {
						x = rng.Intn(5000)
					}
					k := string(append(KeyedPrefix("join", kg), fmt.Sprintf("k%07d", x)...))
					if rng.Intn(5) == 0 {
						b.Delete([]byte(k))
						delete(next, k)
						continue
					}
					v := fmt.Sprintf("%d-%d-%d-%s", id, bi, i, val)
					b.Put([]byte(k), []byte(v))
					next[k] = v
				}
			}
			bufs = append(bufs, b)
		}
		if bad {
			bufs[2].Put([]byte{tagInternal, 1}, []byte("reserved"))
		} else {
			m = next
		}
		return bufs
	}
	if err := s.Commit(1, delta(1, false)); err != nil {
		t.Fatal(err)
	}
	mustPersist(t, s, 1)
	assertState(t, "after commit 1", s.Reader(), m)
	if err := s.Commit(2, delta(2, true)); err == nil {
		t.Fatal("a reserved key was committed")
	}
	assertState(t, "after the failed commit", s.Reader(), m)
	if got := s.LastCommitted(); got != 1 {
		t.Fatalf("last committed after the failed commit: %d", got)
	}
	if err := s.Commit(3, delta(3, false)); err != nil {
		t.Fatal(err)
	}
	assertState(t, "after commit 3", s.Reader(), m)
	mustPersist(t, s, 3)
	r, info, err := Restore(Options{Dir: "/ck", JobID: jobB, NumRetained: 1, FS: fs}, s.JobDir())
	if err != nil || info.ID != 3 {
		t.Fatalf("restore: %v %v", info.ID, err)
	}
	defer r.Close()
	assertState(t, "restored checkpoint 3", r.Reader(), m)
}

// TestOpenRemovesLeftoverIngestFiles: a table file that Commit wrote but
// never ingested (the process died in between) is removed by the next
// Open, with the leftover snapshots; the checkpoints stay.
func TestOpenRemovesLeftoverIngestFiles(t *testing.T) {
	fs := vfs.NewMem()
	s, err := Open(Options{Dir: "/ck", JobID: jobA, NumRetained: 2, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	m := model{}
	if err := s.Commit(1, []*Buffer{change(m, rand.New(rand.NewSource(3)), 1, 50, 200)}); err != nil {
		t.Fatal(err)
	}
	mustPersist(t, s, 1)
	s.Close()
	left := fs.PathJoin("/ck", jobA, taskownedDirName, ingestPrefix+"2.sst")
	f, err := fs.Create(left)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("half a table"))
	f.Close()
	r, _, err := Restore(Options{Dir: "/ck", JobID: jobA, NumRetained: 2, FS: fs}, fs.PathJoin("/ck", jobA))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := fs.Stat(left); err == nil {
		t.Fatalf("%s survived a restore", left)
	}
	assertState(t, "restored", r.Reader(), m)
}

// TestDeltasOfLargeStateStayInL0: checkpoints' deltas that overlap a
// state larger than Pebble's default level base (64 MiB) are ingested
// into L0 and not compacted until L0CompactionThreshold of them pile up
// (with the default base every such delta landed in L5 and was compacted
// with the whole of L6 at once).
func TestDeltasOfLargeStateStayInL0(t *testing.T) {
	s, _ := openMemStore(t, 1)
	rng := rand.New(rand.NewSource(1))
	val := make([]byte, 16<<10)
	key := func(i int) []byte { return append(KeyedPrefix("rows", i%128), fmt.Sprintf("k%08d", i)...) }
	const base = 90 << 20 / (16 << 10) // keys of the first checkpoint: 90 MiB
	b := NewBuffer()
	for i := 0; i < base; i++ {
		rng.Read(val)
		_ = b.Put(key(2*i), val)
	}
	if err := s.Commit(1, []*Buffer{b}); err != nil {
		t.Fatal(err)
	}
	const deltas = 4
	for id := int64(2); id < 2+deltas; id++ {
		b := NewBuffer()
		for i := 0; i < 64; i++ { // new keys between the old ones, in every key group
			rng.Read(val[:256])
			_ = b.Put(key(2*rng.Intn(base)+1), val[:256])
		}
		if err := s.Commit(id, []*Buffer{b}); err != nil {
			t.Fatal(err)
		}
	}
	m := s.db.Metrics()
	if m.Compact.Count != 0 {
		t.Errorf("%d compactions after %d small deltas", m.Compact.Count, deltas)
	}
	if n := m.Levels[0].NumFiles; n != deltas {
		t.Errorf("L0 holds %d files, want the %d deltas", n, deltas)
	}
	for l := 1; l < 6; l++ {
		if n := m.Levels[l].NumFiles; n != 0 {
			t.Errorf("L%d holds %d files, want none (L0 plus L6 below the level base)", l, n)
		}
	}
	compression := func(want func(level int) string) {
		t.Helper()
		tables, err := s.db.SSTables(pebble.WithProperties())
		if err != nil {
			t.Fatal(err)
		}
		for l, ts := range tables {
			for _, ti := range ts {
				if got := ti.Properties.CompressionName; got != want(l) {
					t.Errorf("L%d table %s: compression %q, want %q", l, ti.FileNum, got, want(l))
				}
			}
		}
	}
	// the random values do not compress: every delta is written raw
	// (compress.go), and a compaction writes its level's Snappy
	compression(func(int) string { return "NoCompression" })
	assertKeys := func() {
		for _, i := range []int{0, 2, 2 * (base - 1)} {
			v, c, err := s.CommittedGet(key(i))
			if err != nil || len(v) != len(val) {
				t.Fatalf("CommittedGet(%d): %d bytes, %v", i, len(v), err)
			}
			c.Close()
		}
	}
	assertKeys()
	if err := s.db.Compact([]byte{1}, []byte{0xff}, true); err != nil {
		t.Fatal(err)
	}
	compression(func(l int) string {
		if l != 6 {
			t.Errorf("a table in L%d after a full compaction", l)
		}
		return "Snappy"
	})
	assertKeys()
}
