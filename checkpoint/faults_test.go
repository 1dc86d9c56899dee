package checkpoint

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

// (b) incremental checkpoints: 1% changed keys cost a small fraction.
func TestIncremental(t *testing.T) {
	s, fs := openMemStore(t, 2)
	const n = 100_000
	key := func(i int) []byte {
		return append(KeyedPrefix("agg", i%128), fmt.Sprintf("key-%07d", i)...)
	}
	m := model{}
	b := NewBuffer()
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("value-%07d-first", i)
		_ = b.Put(key(i), []byte(v))
		m[string(key(i))] = v
	}
	if err := s.Commit(1, []*Buffer{b}); err != nil {
		t.Fatal(err)
	}
	first := mustPersist(t, s, 1)
	rng := rand.New(rand.NewSource(4))
	for i := 0; i < n/100; i++ {
		k := rng.Intn(n)
		v := fmt.Sprintf("value-%07d-second", k)
		_ = b.Put(key(k), []byte(v))
		m[string(key(k))] = v
	}
	if err := s.Commit(2, []*Buffer{b}); err != nil {
		t.Fatal(err)
	}
	second := mustPersist(t, s, 2)
	ratio := float64(second.Written) / float64(first.Written)
	t.Logf("full checkpoint wrote %d bytes, after 1%% changes %d bytes (%.2f%%); sizes %d / %d",
		first.Written, second.Written, 100*ratio, first.Size, second.Size)
	if ratio >= 0.10 {
		t.Fatalf("incremental checkpoint wrote %.1f%% of a full one", 100*ratio)
	}
	b1, err := readMetadata(fs, first.Path)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := readMetadata(fs, second.Path)
	if err != nil {
		t.Fatal(err)
	}
	refs2 := map[string]fileRef{}
	for _, r := range b2.Files {
		refs2[r.Path] = r
	}
	sharedSST := 0
	for _, r := range b1.Files {
		if strings.HasPrefix(r.Path, "shared/") {
			if r2, ok := refs2[r.Path]; !ok || r2 != r {
				t.Fatalf("unchanged sstable %s not shared by chk-2", r.Path)
			}
			sharedSST++
		}
	}
	if sharedSST == 0 {
		t.Fatal("chk-1 has no shared sstable")
	}
	r, _, err := Restore(Options{Dir: "/ck", JobID: jobB, NumRetained: 1, FS: fs}, "/ck/"+jobA)
	if err != nil {
		t.Fatal(err)
	}
	assertState(t, "incremental", r.Reader(), m)
	r.Close()
}

// (c) retention: exactly the retained chk dirs, exactly their shared files.
func TestRetentionNoOrphans(t *testing.T) {
	for _, keep := range []int{1, 3} {
		t.Run(fmt.Sprintf("retain=%d", keep), func(t *testing.T) {
			fs := vfs.NewMem()
			s, err := Open(Options{Dir: "/ck", JobID: jobA, NumRetained: keep, FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			rng := rand.New(rand.NewSource(5))
			m := model{}
			for id := int64(1); id <= 12; id++ {
				if err := s.Commit(id, []*Buffer{change(m, rng, id, 300, 3000)}); err != nil {
					t.Fatal(err)
				}
				mustPersist(t, s, id)
				var want []int64
				for i := max(1, id-int64(keep)+1); i <= id; i++ {
					want = append(want, i)
				}
				assertNoOrphans(t, fs, s.JobDir(), want)
			}
			// A crashed attempt's leftovers are garbage for the next Persist.
			_ = fs.MkdirAll(s.JobDir()+"/chk-13", 0o755)
			f, _ := fs.Create(s.JobDir() + "/shared/deadbeef-000999.sst")
			f.Close()
			if err := s.Commit(14, []*Buffer{change(m, rng, 14, 10, 3000)}); err != nil {
				t.Fatal(err)
			}
			mustPersist(t, s, 14)
			var want []int64
			for i := int64(12 - keep + 2); i <= 12; i++ {
				want = append(want, i)
			}
			assertNoOrphans(t, fs, s.JobDir(), append(want, 14))
		})
	}
}

// injector fails the k-th eligible file operation while armed. Writes into
// the live working DB are not eligible: Pebble treats a failed MANIFEST or
// WAL write of its own DB as fatal (it is a task failure, handled by
// RestoreLatest), and background work there would make counts racy.
type injector struct {
	dbDir string
	k     int64
	armed atomic.Bool
	n     atomic.Int64
	hits  atomic.Int64
}

func (in *injector) MaybeError(op errorfs.Op, path string) error {
	if !in.armed.Load() {
		return nil
	}
	inDB := strings.HasPrefix(path, in.dbDir)
	if inDB && op != errorfs.OpLink && (op.OpKind() == errorfs.OpKindWrite || strings.HasSuffix(path, ".sst")) {
		return nil
	}
	if in.n.Add(1) == in.k {
		in.hits.Add(1)
		return fmt.Errorf("op %d on %s: %w", op, path, errorfs.ErrInjected)
	}
	return nil
}

// (d) an error at every file operation of a Persist.
func TestPersistWriteFailures(t *testing.T) {
	jobDir := "/ck/" + jobA
	failures, hitButOK := 0, 0
	for k := int64(1); ; k++ {
		mem := vfs.NewMem()
		inj := &injector{dbDir: jobDir + "/taskowned/db", k: k}
		o := Options{Dir: "/ck", JobID: jobA, NumRetained: 2, FS: errorfs.Wrap(mem, inj), disableCompactions: true}
		s, err := Open(o)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewSource(6))
		m := model{}
		states := map[int64]model{}
		for id := int64(1); id <= 3; id++ {
			if err := s.Commit(id, []*Buffer{change(m, rng, id, 200, 1000)}); err != nil {
				t.Fatal(err)
			}
			states[id] = m.clone()
			if id < 3 {
				mustPersist(t, s, id)
			}
		}
		inj.armed.Store(true)
		_, perr := s.Persist(3, KindCheckpoint, nil)
		inj.armed.Store(false)
		hit := inj.hits.Load() > 0
		restoreFrom := func(from string, wantID int64) {
			t.Helper()
			r, info, err := Restore(Options{Dir: "/ck", JobID: jobB, NumRetained: 1, FS: mem}, from)
			if err != nil || info.ID != wantID {
				t.Fatalf("k=%d: restore %s: id %d err %v (persist error: %v)", k, from, info.ID, err, perr)
			}
			assertState(t, fmt.Sprintf("k=%d %s", k, from), r.Reader(), states[wantID])
			if err := r.Discard(); err != nil {
				t.Fatal(err)
			}
		}
		if perr == nil {
			restoreFrom(jobDir+"/chk-3", 3)
			restoreFrom(jobDir, 3)
			if err := s.Commit(4, []*Buffer{change(m, rng, 4, 10, 1000)}); err != nil {
				t.Fatal(err)
			}
			states[4] = m.clone()
			mustPersist(t, s, 4)
			restoreFrom(jobDir, 4)
			assertNoOrphans(t, mem, jobDir, []int64{3, 4})
			s.Close()
			if !hit {
				t.Logf("Persist has %d eligible file operations: %d injected failures, %d injections absorbed (cleanup/prune)", k-1, failures, hitButOK)
				if failures < 20 {
					t.Fatalf("only %d injected failures", failures)
				}
				return
			}
			hitButOK++
			continue
		}
		if !hit {
			t.Fatalf("k=%d: Persist failed without an injected error: %v", k, perr)
		}
		if !errors.Is(perr, errorfs.ErrInjected) {
			t.Fatalf("k=%d: error does not carry the cause: %v", k, perr)
		}
		failures++
		if _, err := mem.Stat(jobDir + "/chk-3/_metadata"); !isNotExist(err) {
			t.Fatalf("k=%d: failed checkpoint left a _metadata (%v)", k, perr)
		}
		restoreFrom(jobDir+"/chk-1", 1)
		restoreFrom(jobDir+"/chk-2", 2)
		restoreFrom(jobDir, 2)
		if err := s.Abort(3); err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(4, []*Buffer{change(m, rng, 4, 10, 1000)}); err != nil {
			t.Fatal(err)
		}
		states[4] = m.clone()
		mustPersist(t, s, 4)
		restoreFrom(jobDir, 4)
		assertNoOrphans(t, mem, jobDir, []int64{2, 4})
		s.Close()
	}
}

// crasher freezes the durable state at the k-th file operation: from then
// on syncs are ignored, so a later ResetToSyncedState is the image a crash
// at that point leaves.
type crasher struct {
	mem     *vfs.MemFS
	k       int64
	n       atomic.Int64
	crashed atomic.Bool
}

func (c *crasher) MaybeError(errorfs.Op, string) error {
	if c.n.Add(1) == c.k {
		c.mem.SetIgnoreSyncs(true)
		c.crashed.Store(true)
	}
	return nil
}

// (e) crash images: a checkpoint reported complete always restores; a
// directory whose _metadata was not durable is never used.
func TestCrashImages(t *testing.T) {
	jobDir := "/ck/" + jobA
	images, restoredChk := 0, 0
	step := int64(2)
	if testing.Short() {
		step = 7
	}
	for k := int64(1); ; k += step {
		mem := vfs.NewStrictMem()
		c := &crasher{mem: mem, k: k}
		o := Options{Dir: "/ck", JobID: jobA, NumRetained: 2, FS: errorfs.Wrap(mem, c), disableCompactions: true}
		s, err := Open(o)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewSource(7))
		m := model{}
		states := map[int64]model{}
		var reported int64
		for id := int64(1); id <= 4; id++ {
			if err := s.Commit(id, []*Buffer{change(m, rng, id, 100, 400)}); err != nil {
				t.Fatal(err)
			}
			states[id] = m.clone()
			if _, err := s.Persist(id, KindCheckpoint, nil); err == nil && !c.crashed.Load() {
				reported = id
			}
		}
		s.Close()
		if !c.crashed.Load() {
			t.Logf("%d crash images (every %d of %d file operations), %d chk dirs restored from images", images, step, k-1, restoredChk)
			if images < 40 {
				t.Fatalf("only %d crash images", images)
			}
			return
		}
		images++
		mem.ResetToSyncedState()
		mem.SetIgnoreSyncs(false)
		ro := Options{Dir: "/ck", JobID: jobB, NumRetained: 1, FS: mem}
		// Every chk dir with a _metadata restores to exactly its state.
		names, _ := mem.List(jobDir)
		for _, n := range names {
			id, ok := chkID(n)
			if !ok {
				continue
			}
			if _, err := mem.Stat(jobDir + "/" + n + "/" + metadataName); err != nil {
				continue
			}
			r, info, err := Restore(ro, jobDir+"/"+n)
			if err != nil || info.ID != id {
				t.Fatalf("k=%d: durable %s does not restore: %v", k, n, err)
			}
			assertState(t, fmt.Sprintf("k=%d %s", k, n), r.Reader(), states[id])
			r.Discard()
			restoredChk++
		}
		r, info, err := Restore(ro, jobDir)
		switch {
		case err == nil:
			if info.ID < reported {
				t.Fatalf("k=%d: restored %d, but %d was reported complete", k, info.ID, reported)
			}
			assertState(t, fmt.Sprintf("k=%d job", k), r.Reader(), states[info.ID])
			r.Discard()
		case reported > 0:
			t.Fatalf("k=%d: checkpoint %d was reported complete, restore fails: %v", k, reported, err)
		case !strings.Contains(err.Error(), "no complete checkpoint") && !strings.Contains(err.Error(), "no such directory"):
			t.Fatalf("k=%d: unexpected restore error: %v", k, err)
		}
	}
}

type corruption struct {
	name   string
	target func(t *testing.T, jobDir string) string // file to damage
	damage func(t *testing.T, p string)
}

func sstOnlyIn3(t *testing.T, jobDir string) string {
	b2, err := readMetadata(vfs.Default, filepath.Join(jobDir, "chk-2"))
	if err != nil {
		t.Fatal(err)
	}
	b3, err := readMetadata(vfs.Default, filepath.Join(jobDir, "chk-3"))
	if err != nil {
		t.Fatal(err)
	}
	in2 := map[string]bool{}
	for _, r := range b2.Files {
		in2[r.Path] = true
	}
	for _, r := range b3.Files {
		if strings.HasPrefix(r.Path, "shared/") && !in2[r.Path] {
			return filepath.Join(jobDir, r.Path)
		}
	}
	t.Fatal("chk-3 has no sstable of its own")
	return ""
}

func manifestOf3(t *testing.T, jobDir string) string {
	m, _ := filepath.Glob(filepath.Join(jobDir, "chk-3", "MANIFEST-*"))
	if len(m) != 1 {
		t.Fatalf("MANIFEST of chk-3: %v", m)
	}
	return m[0]
}

func metadataOf3(_ *testing.T, jobDir string) string {
	return filepath.Join(jobDir, "chk-3", metadataName)
}

func truncate(t *testing.T, p string) {
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, st.Size()/2); err != nil {
		t.Fatal(err)
	}
}

func flipBit(t *testing.T, p string) {
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Replace the file (it may be hard-linked into the working DB).
	data[len(data)/2] ^= 0x10
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, p string) {
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
}

// (f) damaged files are detected and named. A job directory whose newest
// complete checkpoint is damaged is not restored: its sinks may have
// committed it, so falling back to chk-2 could duplicate output. It falls
// back only with AllowFallback, and reports what it skipped. A chk-3 whose
// _metadata is gone never completed: chk-2 is simply the latest.
func TestCorruption(t *testing.T) {
	var cases []corruption
	for _, tg := range []struct {
		name string
		fn   func(*testing.T, string) string
	}{{"shared-sst", sstOnlyIn3}, {"manifest", manifestOf3}, {"metadata", metadataOf3}} {
		for _, d := range []struct {
			name string
			fn   func(*testing.T, string)
		}{{"truncate", truncate}, {"flip", flipBit}, {"delete", remove}} {
			cases = append(cases, corruption{tg.name + "/" + d.name, tg.fn, d.fn})
		}
	}
	detected := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			var logged []string
			logf := func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }
			o := Options{Dir: root, JobID: jobA, NumRetained: 3, Logf: logf}
			s, err := Open(o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			rng := rand.New(rand.NewSource(8))
			m := model{}
			states := map[int64]model{}
			for id := int64(1); id <= 3; id++ {
				if err := s.Commit(id, []*Buffer{change(m, rng, id, 300, 1000)}); err != nil {
					t.Fatal(err)
				}
				states[id] = m.clone()
				mustPersist(t, s, id)
			}
			jobDir := s.JobDir()
			p := tc.target(t, jobDir)
			tc.damage(t, p)
			name := p
			incomplete := strings.HasSuffix(tc.name, "metadata/delete")
			if incomplete {
				name = filepath.Join(jobDir, "chk-3") // the dir is named: it has no _metadata
			}
			ro := Options{Dir: root, JobID: jobB, NumRetained: 1}
			if _, _, err := Restore(ro, filepath.Join(jobDir, "chk-3")); err == nil || !strings.Contains(err.Error(), name) {
				t.Fatalf("restore of damaged chk-3: error %v does not name %s", err, name)
			}
			detected++
			if incomplete {
				r, info, err := Restore(ro, jobDir)
				if err != nil || info.ID != 2 || len(info.Skipped) != 0 {
					t.Fatalf("job dir without a complete chk-3: %v %+v", err, info)
				}
				assertState(t, "latest", r.Reader(), states[2])
				r.Discard()
				info, ok, err := s.RestoreLatest()
				if err != nil || !ok || info.ID != 2 {
					t.Fatalf("RestoreLatest: %v %v %+v", err, ok, info)
				}
				return
			}

			// Without AllowFallback: refused, naming the checkpoint, the
			// damaged file and the option.
			assertRefused := func(what string, err error) {
				t.Helper()
				var ue *UnverifiedError
				if !errors.As(err, &ue) || ue.Checkpoint != filepath.Join(jobDir, "chk-3") || ue.Older != filepath.Join(jobDir, "chk-2") {
					t.Fatalf("%s: want an UnverifiedError for chk-3, got %v", what, err)
				}
				for _, want := range []string{filepath.Join(jobDir, "chk-3"), name, FallbackOption, "committed"} {
					if !strings.Contains(err.Error(), want) {
						t.Fatalf("%s: error does not name %q: %v", what, want, err)
					}
				}
			}
			r, _, err := Restore(ro, jobDir)
			if r != nil {
				r.Discard()
			}
			assertRefused("Restore", err)
			if _, err := os.Stat(filepath.Join(root, jobB)); !os.IsNotExist(err) {
				t.Fatalf("a refused restore created the new job's directory (stat: %v)", err)
			}
			_, ok, err := s.RestoreLatest()
			if ok {
				t.Fatal("RestoreLatest restored something")
			}
			assertRefused("RestoreLatest", err)
			// The working DB may share the damaged file (a hard link), so
			// only its checkpoint id is compared.
			if s.LastCommitted() != 3 {
				t.Fatalf("a refused RestoreLatest changed the working state: it holds %d", s.LastCommitted())
			}

			// With AllowFallback: chk-2, and the skipped chk-3 is reported.
			ro.AllowFallback = true
			r, info, err := Restore(ro, jobDir)
			if err != nil || info.ID != 2 {
				t.Fatalf("job dir did not fall back to chk-2: %v %+v", err, info)
			}
			if len(info.Skipped) != 1 || !strings.Contains(info.Skipped[0], name) {
				t.Fatalf("fallback not reported: %q", info.Skipped)
			}
			assertState(t, "fallback", r.Reader(), states[2])
			r.Discard()
			s.Close()
			o.AllowFallback = true
			s2, err := Open(o) // the same job directory, now allowed to fall back
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			info, ok, err = s2.RestoreLatest()
			if err != nil || !ok || info.ID != 2 || len(info.Skipped) != 1 {
				t.Fatalf("RestoreLatest with fallback: %v %v %+v", err, ok, info)
			}
			assertState(t, "RestoreLatest", s2.Reader(), states[2])
			if len(logged) == 0 {
				t.Fatal("fallback not logged")
			}
		})
	}
	if detected != len(cases) {
		t.Fatalf("detected %d of %d corruptions", detected, len(cases))
	}
}

// fullFS returns ENOSPC for every write outside the working DB while full.
type fullFS struct {
	vfs.FS
	dbDir string
	full  atomic.Bool
	hits  atomic.Int64
}

func (f *fullFS) check(op, name string) error {
	if f.full.Load() && !strings.HasPrefix(name, f.dbDir) {
		f.hits.Add(1)
		return &os.PathError{Op: op, Path: name, Err: syscall.ENOSPC}
	}
	return nil
}

func (f *fullFS) Create(name string) (vfs.File, error) {
	if err := f.check("create", name); err != nil {
		return nil, err
	}
	file, err := f.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &fullFile{File: file, fs: f, name: name}, nil
}

func (f *fullFS) Link(oldname, newname string) error {
	if err := f.check("link", newname); err != nil {
		return err
	}
	return f.FS.Link(oldname, newname)
}

type fullFile struct {
	vfs.File
	fs   *fullFS
	name string
}

func (f *fullFile) Write(p []byte) (int, error) {
	if err := f.fs.check("write", f.name); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

// (g) disk full during a checkpoint.
func TestDiskFull(t *testing.T) {
	mem := vfs.NewMem()
	jobDir := "/ck/" + jobA
	fs := &fullFS{FS: mem, dbDir: jobDir + "/taskowned/db"}
	s, err := Open(Options{Dir: "/ck", JobID: jobA, NumRetained: 2, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewSource(9))
	m := model{}
	states := map[int64]model{}
	for id := int64(1); id <= 3; id++ {
		if err := s.Commit(id, []*Buffer{change(m, rng, id, 300, 1000)}); err != nil {
			t.Fatal(err)
		}
		states[id] = m.clone()
		if id < 3 {
			mustPersist(t, s, id)
		}
	}
	fs.full.Store(true)
	_, err = s.Persist(3, KindCheckpoint, nil)
	fs.full.Store(false)
	if err == nil || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("persist on a full disk: %v", err)
	}
	if fs.hits.Load() == 0 {
		t.Fatal("ENOSPC never injected")
	}
	t.Logf("disk full: %d ENOSPC injected; error: %v", fs.hits.Load(), err)
	if _, err := mem.Stat(jobDir + "/chk-3"); !isNotExist(err) {
		t.Fatalf("failed checkpoint left chk-3 (%v)", err)
	}
	assertNoOrphans(t, mem, jobDir, []int64{1, 2})
	r, info, err := Restore(Options{Dir: "/ck", JobID: jobB, NumRetained: 1, FS: mem}, jobDir)
	if err != nil || info.ID != 2 {
		t.Fatalf("older checkpoint unusable: %v", err)
	}
	assertState(t, "after ENOSPC", r.Reader(), states[2])
	r.Discard()
	// Space is back: the same checkpoint persists.
	mustPersist(t, s, 3)
	assertNoOrphans(t, mem, jobDir, []int64{2, 3})
}

// (h) List reports complete and incomplete checkpoints.
func TestList(t *testing.T) {
	mem := vfs.NewMem()
	rng := rand.New(rand.NewSource(10))
	for _, job := range []string{jobA, jobB} {
		s, err := Open(Options{Dir: "file:///ck", JobID: job, NumRetained: 2, FS: mem})
		if err != nil {
			t.Fatal(err)
		}
		m := model{}
		for id := int64(1); id <= 3; id++ {
			if err := s.Commit(id, []*Buffer{change(m, rng, id, 50, 100)}); err != nil {
				t.Fatal(err)
			}
			mustPersist(t, s, id)
		}
		s.Close()
	}
	_ = mem.MkdirAll("/ck/"+jobA+"/chk-10", 0o755) // no _metadata
	_ = mem.MkdirAll("/ck/"+jobA+"/chk-4", 0o755)
	f, _ := mem.Create("/ck/" + jobA + "/chk-4/_metadata")
	_, _ = f.Write([]byte("{not json"))
	f.Close()
	_ = mem.MkdirAll("/ck/not-a-job", 0o755)
	jobs, err := ListFS(mem, "file:///ck")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Job        string
		IDs        []int64
		Incomplete []string
	}
	var got []row
	for _, j := range jobs {
		r := row{Job: j.JobID, Incomplete: j.Incomplete}
		for _, c := range j.Checkpoints {
			r.IDs = append(r.IDs, c.ID)
			if c.Size <= 0 || c.Written <= 0 || c.TimeMS <= 0 || c.Files == 0 || c.Kind != KindCheckpoint || c.JobID != j.JobID || c.Meta["job"] != "test" {
				t.Fatalf("incomplete info: %+v", c)
			}
		}
		got = append(got, r)
	}
	want := []row{
		{jobA, []int64{2, 3}, []string{"chk-4", "chk-10"}},
		{jobB, []int64{2, 3}, nil},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("List:\n got %+v\nwant %+v", got, want)
	}
	if _, err := List(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("List of a missing dir succeeded")
	}
}
