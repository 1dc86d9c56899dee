package checkpoint

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

const (
	jobA = "0123456789abcdef0123456789abcdef"
	jobB = "fedcba9876543210fedcba9876543210"
	jobC = "00000000000000000000000000000001"
)

// model is the expected committed state.
type model map[string]string

func (m model) clone() model {
	c := model{}
	for k, v := range m {
		c[k] = v
	}
	return c
}

// change writes n random puts/deletes (seeded) into a buffer and the model.
func change(m model, rng *rand.Rand, id int64, n, keySpace int) *Buffer {
	b := NewBuffer()
	for i := 0; i < n; i++ {
		kg := rng.Intn(4)
		k := string(append(KeyedPrefix("agg", kg), fmt.Sprintf("key-%06d", rng.Intn(keySpace))...))
		if rng.Intn(5) == 0 {
			_ = b.Delete([]byte(k))
			delete(m, k)
			continue
		}
		v := fmt.Sprintf("v%d-%d", id, i)
		_ = b.Put([]byte(k), []byte(v))
		m[k] = v
	}
	off := string(SubtaskKey("src", 0))
	v := fmt.Sprintf("offset-%d", id)
	_ = b.Put([]byte(off), []byte(v))
	m[off] = v
	return b
}

func dump(t testing.TB, r StateReader) model {
	t.Helper()
	m := model{}
	if err := r.Scan(nil, func(k, v []byte) error {
		m[string(k)] = string(v)
		return nil
	}); err != nil {
		t.Fatalf("scan: %v", err)
	}
	return m
}

func assertState(t testing.TB, what string, r StateReader, want model) {
	t.Helper()
	got := dump(t, r)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: state differs: got %d keys, want %d keys", what, len(got), len(want))
	}
}

// tree lists every file under dir except the working DB's (relative paths, sorted); directories end in "/".
func tree(t testing.TB, fs vfs.FS, dir string) []string {
	t.Helper()
	var out []string
	var walk func(rel string)
	walk = func(rel string) {
		names, err := fs.List(fs.PathJoin(dir, rel))
		if err != nil {
			t.Fatalf("list %s: %v", rel, err)
		}
		for _, n := range names {
			p := n
			if rel != "" {
				p = rel + "/" + n
			}
			if p == taskownedDirName+"/"+workingDBName {
				continue // the live Pebble DB changes underneath (compactions)
			}
			st, err := fs.Stat(fs.PathJoin(dir, p))
			if err != nil {
				t.Fatalf("stat %s: %v", p, err)
			}
			if st.IsDir() {
				out = append(out, p+"/")
				walk(p)
			} else {
				out = append(out, p)
			}
		}
	}
	walk("")
	sort.Strings(out)
	return out
}

// assertNoOrphans checks the job dir holds exactly the retained chk dirs,
// shared/ exactly the files they reference, and no temp files.
func assertNoOrphans(t testing.TB, fs vfs.FS, jobDir string, wantIDs []int64) {
	t.Helper()
	complete, broken, err := scanJob(fs, jobDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(broken) > 0 {
		t.Fatalf("incomplete chk dirs left: %v", broken)
	}
	var ids []int64
	refs := map[string]bool{}
	for _, c := range complete {
		ids = append(ids, c.id)
		for _, r := range c.body.Files {
			if strings.HasPrefix(r.Path, "shared/") {
				refs[r.Path] = true
			}
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if !reflect.DeepEqual(ids, wantIDs) {
		t.Fatalf("retained checkpoints %v, want %v", ids, wantIDs)
	}
	top, err := fs.List(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range top {
		if _, ok := chkID(n); !ok && n != sharedDirName && n != taskownedDirName {
			t.Fatalf("unexpected entry %s in job dir", n)
		}
	}
	shared, err := fs.List(fs.PathJoin(jobDir, sharedDirName))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, n := range shared {
		got["shared/"+n] = true
	}
	if !reflect.DeepEqual(got, refs) {
		t.Fatalf("shared/ holds %d files, retained checkpoints reference %d:\n%v\n%v", len(got), len(refs), got, refs)
	}
	for _, p := range tree(t, fs, jobDir) {
		if strings.HasSuffix(p, ".tmp") || strings.Contains(p, "/"+snapPrefix) {
			t.Fatalf("temporary file left: %s", p)
		}
	}
}

func mustPersist(t testing.TB, s *Store, id int64) Info {
	t.Helper()
	info, err := s.Persist(id, KindCheckpoint, map[string]string{"job": "test"})
	if err != nil {
		t.Fatalf("persist %d: %v", id, err)
	}
	return info
}

// openMemStore opens a store of job jobA under /ck on a fresh in-memory
// FS, closed when the test ends.
func openMemStore(t testing.TB, retained int) (*Store, vfs.FS) {
	t.Helper()
	fs := vfs.NewMem()
	s, err := Open(Options{Dir: "/ck", JobID: jobA, NumRetained: retained, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, fs
}

// assertSavepoint takes a savepoint of committed checkpoint id of s and
// checks that a store restored from it (under root) holds want.
func assertSavepoint(t testing.TB, s *Store, root string, id int64, want model) {
	t.Helper()
	sp, err := s.PersistSavepoint(id, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := Restore(Options{Dir: root, JobID: jobC, NumRetained: 1}, sp.Path)
	if err != nil {
		t.Fatal(err)
	}
	assertState(t, "savepoint", r.Reader(), want)
	r.Discard()
}
