package checkpoint

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
)

var update = flag.Bool("update", false, "rewrite checkpoint/testdata/savepoint-v1 (TestWriteGoldenSavepoint)")

var spNameRE = regexp.MustCompile(`^savepoint-012345-[0-9a-f]{12}$`)

var spMeta = map[string]string{
	"engine_version":  "streamsql-test",
	"job_name":        "wordcount",
	"sql":             "SELECT word, COUNT(*) FROM words GROUP BY word",
	"parallelism":     "2",
	"max_parallelism": "128",
	"operators":       `[{"id":"agg","kind":"GroupAggregate"}]`,
}

// edgeKeys adds state that stresses the format: an empty operator id, an
// empty suffix and value, a binary suffix, a subtask state with a suffix.
func edgeKeys(m model) *Buffer {
	b := NewBuffer()
	put := func(k []byte, v string) {
		_ = b.Put(k, []byte(v))
		m[string(k)] = v
	}
	put(KeyedPrefix("", 0), "")
	put(append(KeyedPrefix("", 127), 0x00, 0xff, 0x01), "binary")
	put(append(KeyedPrefix("sink\x00odd", 5), "k"...), strings.Repeat("x", 70000))
	put(SubtaskKey("src", 1), "offset-1")
	put(append(SubtaskKey("sink", 0), "txn-9"...), "pending")
	return b
}

func mustSavepoint(t testing.TB, s *Store, id int64, dir string) Info {
	t.Helper()
	info, err := s.PersistSavepoint(id, dir, spMeta)
	if err != nil {
		t.Fatalf("savepoint of %d: %v", id, err)
	}
	return info
}

// Round trip: commit state, savepoint, restore into a new job, state equal;
// the restored job checkpoints on and RestoreLatest goes back to the
// savepoint until it has a checkpoint of its own.
func TestSavepointRoundTrip(t *testing.T) {
	root := t.TempDir()
	ck, spRoot := filepath.Join(root, "ck"), filepath.Join(root, "savepoints", "nested")
	s, err := Open(Options{Dir: ck, JobID: jobA, NumRetained: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewSource(21))
	m := model{}
	if err := s.Commit(1, []*Buffer{change(m, rng, 1, 400, 1000), edgeKeys(m)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(2, []*Buffer{change(m, rng, 2, 400, 1000)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PersistSavepoint(1, spRoot, nil); err == nil || !strings.Contains(err.Error(), "last committed checkpoint is 2") {
		t.Fatalf("savepoint of a superseded id: %v", err)
	}
	if _, err := s.PersistSavepoint(2, filepath.Join(s.JobDir(), "sp"), nil); err == nil || !strings.Contains(err.Error(), "inside the job's checkpoint directory") {
		t.Fatalf("savepoint inside the job dir: %v", err)
	}
	info := mustSavepoint(t, s, 2, "file://"+spRoot)
	if info.ID != 2 || info.Kind != KindSavepoint || info.JobID != jobA || filepath.Dir(info.Path) != spRoot ||
		!spNameRE.MatchString(filepath.Base(info.Path)) || info.Size <= 0 || info.Files < 5 || !reflect.DeepEqual(info.Meta, spMeta) {
		t.Fatalf("info %+v", info)
	}
	info2 := mustSavepoint(t, s, 2, spRoot)
	if info2.Path == info.Path {
		t.Fatal("two savepoints share a directory")
	}

	r, rinfo, err := Restore(Options{Dir: ck, JobID: jobB, NumRetained: 1}, info.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if rinfo.Kind != KindSavepoint || rinfo.ID != 2 || rinfo.Path != info.Path || !reflect.DeepEqual(rinfo.Meta, spMeta) || r.LastCommitted() != 2 {
		t.Fatalf("restored info %+v, last %d", rinfo, r.LastCommitted())
	}
	assertState(t, "restored savepoint", r.Reader(), m)

	// Work never checkpointed is dropped: back to the savepoint.
	if err := r.Commit(3, []*Buffer{change(m.clone(), rng, 3, 300, 1000)}); err != nil {
		t.Fatal(err)
	}
	li, ok, err := r.RestoreLatest()
	if err != nil || !ok || li.Kind != KindSavepoint || li.ID != 2 || r.LastCommitted() != 2 {
		t.Fatalf("RestoreLatest: ok=%v %+v %v", ok, li, err)
	}
	assertState(t, "back to the savepoint", r.Reader(), m)
	// Its own checkpoint wins once it exists.
	m3 := m.clone()
	if err := r.Commit(3, []*Buffer{change(m3, rng, 3, 300, 1000)}); err != nil {
		t.Fatal(err)
	}
	mustPersist(t, r, 3)
	if li, ok, err = r.RestoreLatest(); err != nil || !ok || li.ID != 3 || li.Kind != KindCheckpoint {
		t.Fatalf("RestoreLatest after own checkpoint: ok=%v %+v %v", ok, li, err)
	}
	assertState(t, "own checkpoint", r.Reader(), m3)

	list, err := ListSavepoints("file://" + spRoot)
	if err != nil || len(list) != 2 || !list[0].Complete || !list[1].Complete || list[0].Info.TimeMS > list[1].Info.TimeMS {
		t.Fatalf("ListSavepoints: %v %+v", err, list)
	}
	mi, err := ReadSavepointMeta(info.Path)
	if err != nil || mi.ID != 2 || mi.Meta["operators"] != spMeta["operators"] {
		t.Fatalf("ReadSavepointMeta: %v %+v", err, mi)
	}
	if _, err := ReadSavepointMeta(filepath.Join(s.JobDir(), "chk-1")); err == nil {
		t.Fatal("ReadSavepointMeta accepted a directory without _metadata")
	}
}

func TestSavepointOfEmptyState(t *testing.T) {
	s, fs := openMemStore(t, 1)
	if err := s.Commit(4, nil); err != nil {
		t.Fatal(err)
	}
	info := mustSavepoint(t, s, 4, "/sp")
	if info.Files != 0 || info.Size != 0 {
		t.Fatalf("empty savepoint %+v", info)
	}
	r, ri, err := Restore(Options{Dir: "/ck", JobID: jobB, NumRetained: 1, FS: fs}, info.Path)
	if err != nil || ri.ID != 4 || r.LastCommitted() != 4 {
		t.Fatalf("restore: %v %+v", err, ri)
	}
	assertState(t, "empty", r.Reader(), model{})
	r.Close()
}

// Relocation: copy the savepoint elsewhere under another name, delete the
// original and the job directory, restore from the copy.
func TestSavepointRelocation(t *testing.T) {
	root := t.TempDir()
	s, err := Open(Options{Dir: filepath.Join(root, "ck"), JobID: jobA, NumRetained: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := model{}
	if err := s.Commit(1, []*Buffer{change(m, rand.New(rand.NewSource(5)), 1, 500, 2000), edgeKeys(m)}); err != nil {
		t.Fatal(err)
	}
	info := mustSavepoint(t, s, 1, filepath.Join(root, "sp"))
	moved := filepath.Join(root, "elsewhere", "my-upgrade-point")
	if err := os.CopyFS(moved, os.DirFS(info.Path)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(info.Path); err != nil {
		t.Fatal(err)
	}
	if err := s.Discard(); err != nil {
		t.Fatal(err)
	}
	r, ri, err := Restore(Options{Dir: filepath.Join(root, "ck2"), JobID: jobB, NumRetained: 1}, moved)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if ri.Kind != KindSavepoint || ri.Path != moved || ri.ID != 1 {
		t.Fatalf("info %+v", ri)
	}
	assertState(t, "relocated", r.Reader(), m)
	if l, err := ListSavepoints(filepath.Join(root, "sp")); err != nil || len(l) != 0 {
		t.Fatalf("deleted savepoint still listed: %v %+v", err, l)
	}
}

// tinyStateFile parses a state file independently of the package's reader.
func tinyStateFile(t *testing.T, data []byte) (scope byte, op string, index uint32, recs [][2]string) {
	t.Helper()
	if len(data) < 11 || string(data[:8]) != "SSQLSAVE" || binary.BigEndian.Uint16(data[8:10]) != 1 {
		t.Fatalf("bad header %q", data[:min(len(data), 11)])
	}
	scope, data = data[10], data[11:]
	uv := func() []byte {
		n, w := binary.Uvarint(data)
		if w <= 0 || uint64(len(data)-w) < n {
			t.Fatalf("bad length")
		}
		b := data[w : w+int(n)]
		data = data[w+int(n):]
		return b
	}
	op = string(uv())
	index, data = binary.BigEndian.Uint32(data[:4]), data[4:]
	for data[0] == 'R' {
		data = data[1:]
		k := string(uv())
		recs = append(recs, [2]string{k, string(uv())})
	}
	if data[0] != 'E' || len(data) != 9 || binary.BigEndian.Uint64(data[1:]) != uint64(len(recs)) {
		t.Fatalf("bad footer %x", data)
	}
	return scope, op, index, recs
}

// The savepoint holds no Pebble file: its state files parse with a tiny
// reader into exactly the committed state, and _metadata lists them all.
func TestSavepointIsCanonical(t *testing.T) {
	root := t.TempDir()
	s, err := Open(Options{Dir: filepath.Join(root, "ck"), JobID: jobA, NumRetained: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := model{}
	rng := rand.New(rand.NewSource(9))
	if err := s.Commit(1, []*Buffer{change(m, rng, 1, 800, 3000), edgeKeys(m)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(2, []*Buffer{change(m, rng, 2, 300, 3000)}); err != nil { // deletes too
		t.Fatal(err)
	}
	info := mustSavepoint(t, s, 2, filepath.Join(root, "sp"))

	raw, err := os.ReadFile(filepath.Join(info.Path, "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		FormatVersion int    `json:"format_version"`
		Type          string `json:"type"`
		Body          struct {
			Version int               `json:"savepoint_format_version"`
			Engine  string            `json:"engine_version"`
			Kind    string            `json:"kind"`
			JobID   string            `json:"job_id"`
			ID      int64             `json:"checkpoint_id"`
			Created string            `json:"created"`
			Meta    map[string]string `json:"meta"`
			State   []map[string]any  `json:"state"`
			Files   []savepointFile   `json:"files"`
		} `json:"body"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	b := env.Body
	if env.FormatVersion != 1 || env.Type != "savepoint" || b.Version != 1 || b.Engine != "streamsql-test" || b.Kind != "SAVEPOINT" ||
		b.JobID != jobA || b.ID != 2 || b.Created == "" || !reflect.DeepEqual(b.Meta, spMeta) || len(b.State) != 5 {
		t.Fatalf("_metadata: %s", raw)
	}
	listed := map[string]savepointFile{}
	for _, f := range b.Files {
		listed[f.Path] = f
	}
	got := model{}
	seen := 0
	err = filepath.WalkDir(info.Path, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(info.Path, p)
		rel = filepath.ToSlash(rel)
		if rel == "_metadata" {
			return nil
		}
		if strings.HasSuffix(rel, ".sst") || strings.Contains(rel, "MANIFEST") || strings.Contains(rel, "OPTIONS") {
			t.Fatalf("Pebble file in a savepoint: %s", rel)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, ok := listed[rel]
		if !ok || f.Size != int64(len(data)) || len(f.CRC32C) != 8 {
			t.Fatalf("%s not listed with its size in _metadata: %+v", rel, f)
		}
		seen++
		scope, op, idx, recs := tinyStateFile(t, data)
		if want := "op-" + hex.EncodeToString([]byte(op)) + "/"; !strings.HasPrefix(rel, want) {
			t.Fatalf("%s holds operator %q", rel, op)
		}
		var prefix []byte
		switch scope {
		case 'K':
			prefix = KeyedPrefix(op, int(idx))
			if !strings.HasSuffix(rel, fmt.Sprintf("/kg-%d.state", idx)) {
				t.Fatalf("%s holds key group %d", rel, idx)
			}
		case 'S':
			prefix = SubtaskKey(op, int(idx))
			if !strings.HasSuffix(rel, fmt.Sprintf("/subtask-%d.state", idx)) {
				t.Fatalf("%s holds subtask %d", rel, idx)
			}
		default:
			t.Fatalf("%s: scope %q", rel, scope)
		}
		for i, r := range recs {
			if i > 0 && recs[i-1][0] >= r[0] {
				t.Fatalf("%s: keys out of order", rel)
			}
			got[string(prefix)+r[0]] = r[1]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(b.Files) || seen != info.Files {
		t.Fatalf("%d state files on disk, %d listed", seen, len(b.Files))
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("state files hold %d keys, committed state %d", len(got), len(m))
	}
}

// armedCrasher freezes the durable state at the k-th file operation after
// it was armed (k > 0): later syncs are ignored, so ResetToSyncedState
// gives the image a crash at that point leaves.
type armedCrasher struct {
	mem     *vfs.MemFS
	k, n    atomic.Int64
	crashed atomic.Bool
}

func (c *armedCrasher) MaybeError(errorfs.Op, string) error {
	if k := c.k.Load(); k > 0 && c.n.Add(1) == k {
		c.mem.SetIgnoreSyncs(true)
		c.crashed.Store(true)
	}
	return nil
}

// Interrupted savepoint: at every file operation of a second savepoint, a
// crash image is taken. A savepoint with _metadata always restores exactly;
// one without is listed as incomplete and refused; the first one restores.
func TestSavepointCrashImages(t *testing.T) {
	images, incomplete := 0, 0
	for k := int64(1); ; k++ {
		mem := vfs.NewStrictMem()
		c := &armedCrasher{mem: mem}
		s, err := Open(Options{Dir: "/ck", JobID: jobA, NumRetained: 1, FS: errorfs.Wrap(mem, c), disableCompactions: true})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewSource(13))
		m := model{}
		states := map[int64]model{}
		if err := s.Commit(1, []*Buffer{change(m, rng, 1, 200, 500), edgeKeys(m)}); err != nil {
			t.Fatal(err)
		}
		states[1] = m.clone()
		first := mustSavepoint(t, s, 1, "/sp")
		if err := s.Commit(2, []*Buffer{change(m, rng, 2, 200, 500)}); err != nil {
			t.Fatal(err)
		}
		states[2] = m.clone()
		c.k.Store(k)
		_, perr := s.PersistSavepoint(2, "/sp", spMeta)
		c.k.Store(0)
		s.Close()
		if !c.crashed.Load() {
			if perr != nil {
				t.Fatal(perr)
			}
			t.Logf("%d crash images, %d with an incomplete savepoint", images, incomplete)
			if images < 10 || incomplete == 0 {
				t.Fatalf("only %d crash images, %d incomplete", images, incomplete)
			}
			return
		}
		images++
		mem.ResetToSyncedState()
		mem.SetIgnoreSyncs(false)
		list, err := ListSavepointsFS(mem, "/sp")
		if err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		foundFirst := false
		for _, sp := range list {
			ro := Options{Dir: "/ck2", JobID: jobB, NumRetained: 1, FS: mem}
			r, info, err := Restore(ro, sp.Path)
			if !sp.Complete {
				incomplete++
				if err == nil || !strings.Contains(err.Error(), "incomplete savepoint") || !strings.Contains(sp.Reason, "no _metadata") {
					t.Fatalf("k=%d: incomplete %s: restore error %v, reason %q", k, sp.Name, err, sp.Reason)
				}
				continue
			}
			if err != nil {
				t.Fatalf("k=%d: complete savepoint %s does not restore: %v", k, sp.Name, err)
			}
			assertState(t, fmt.Sprintf("k=%d %s", k, sp.Name), r.Reader(), states[info.ID])
			r.Discard()
			foundFirst = foundFirst || sp.Path == first.Path
		}
		if !foundFirst {
			t.Fatalf("k=%d: the earlier savepoint is gone: %+v", k, list)
		}
	}
}

// Corruption of a savepoint file is detected and named; the directory of a
// savepoint with a damaged _metadata is listed as incomplete; an earlier
// savepoint still restores.
func TestSavepointCorruption(t *testing.T) {
	kgFile := func(t *testing.T, sp string) string {
		m, _ := filepath.Glob(filepath.Join(sp, "op-"+hex.EncodeToString([]byte("agg")), "kg-*.state"))
		if len(m) == 0 {
			t.Fatal("no key group file")
		}
		return m[len(m)/2]
	}
	subtaskFile := func(t *testing.T, sp string) string {
		return filepath.Join(sp, "op-"+hex.EncodeToString([]byte("src")), "subtask-0.state")
	}
	metaFile := func(_ *testing.T, sp string) string { return filepath.Join(sp, "_metadata") }
	for _, tg := range []struct {
		name string
		fn   func(*testing.T, string) string
	}{{"kg", kgFile}, {"subtask", subtaskFile}, {"metadata", metaFile}} {
		for _, d := range []struct {
			name string
			fn   func(*testing.T, string)
		}{{"truncate", truncate}, {"flip", flipBit}, {"delete", remove}} {
			t.Run(tg.name+"/"+d.name, func(t *testing.T) {
				root := t.TempDir()
				spRoot := filepath.Join(root, "sp")
				s, err := Open(Options{Dir: filepath.Join(root, "ck"), JobID: jobA, NumRetained: 1})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				rng := rand.New(rand.NewSource(17))
				m := model{}
				if err := s.Commit(1, []*Buffer{change(m, rng, 1, 300, 1000)}); err != nil {
					t.Fatal(err)
				}
				m1 := m.clone()
				older := mustSavepoint(t, s, 1, spRoot)
				if err := s.Commit(2, []*Buffer{change(m, rng, 2, 300, 1000)}); err != nil {
					t.Fatal(err)
				}
				newer := mustSavepoint(t, s, 2, spRoot)
				p := tg.fn(t, newer.Path)
				d.fn(t, p)
				name := p
				if tg.name == "metadata" && d.name == "delete" {
					name = newer.Path
				}
				ro := Options{Dir: filepath.Join(root, "ck2"), JobID: jobB, NumRetained: 1}
				if _, _, err := Restore(ro, newer.Path); err == nil || !strings.Contains(err.Error(), name) {
					t.Fatalf("restore of a damaged savepoint: error %v does not name %s", err, name)
				}
				list, err := ListSavepoints(spRoot)
				if err != nil || len(list) != 2 {
					t.Fatalf("list: %v %+v", err, list)
				}
				for _, sp := range list {
					wantComplete := sp.Path == older.Path || tg.name != "metadata"
					if sp.Complete != wantComplete {
						t.Fatalf("%s listed complete=%v (%s)", sp.Name, sp.Complete, sp.Reason)
					}
				}
				r, info, err := Restore(ro, older.Path)
				if err != nil || info.ID != 1 {
					t.Fatalf("earlier savepoint: %v", err)
				}
				assertState(t, "earlier savepoint", r.Reader(), m1)
				r.Close()
			})
		}
	}
}

// Savepoints survive Discard, DiscardWorking and pruning of their job, also
// when they live next to job directories in the checkpoint root.
func TestSavepointSurvivesDiscard(t *testing.T) {
	fs := vfs.NewMem()
	s, err := Open(Options{Dir: "/ck", JobID: jobA, NumRetained: 1, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(19))
	m := model{}
	if err := s.Commit(1, []*Buffer{change(m, rng, 1, 200, 500)}); err != nil {
		t.Fatal(err)
	}
	mustPersist(t, s, 1)
	sp := mustSavepoint(t, s, 1, "/ck") // beside the job directory
	m1 := m.clone()
	for id := int64(2); id <= 4; id++ {
		if err := s.Commit(id, []*Buffer{change(m, rng, id, 200, 500)}); err != nil {
			t.Fatal(err)
		}
		mustPersist(t, s, id)
	}
	if err := s.Discard(); err != nil {
		t.Fatal(err)
	}
	r, info, err := Restore(Options{Dir: "/ck", JobID: jobB, NumRetained: 1, FS: fs}, sp.Path)
	if err != nil || info.ID != 1 {
		t.Fatalf("restore after Discard: %v", err)
	}
	assertState(t, "after discard", r.Reader(), m1)
	if err := r.Commit(2, nil); err != nil {
		t.Fatal(err)
	}
	mustPersist(t, r, 2)
	if err := r.DiscardWorking(); err != nil {
		t.Fatal(err)
	}
	if l, err := ListSavepointsFS(fs, "/ck"); err != nil || len(l) != 1 || !l[0].Complete {
		t.Fatalf("savepoint gone: %v %+v", err, l)
	}
	if jobs, err := ListFS(fs, "/ck"); err != nil || len(jobs) != 1 || jobs[0].JobID != jobB {
		t.Fatalf("checkpoint listing confused by a savepoint: %v %+v", err, jobs)
	}
}

// A savepoint concurrent with the next Commit captures exactly its
// checkpoint (it reads a snapshot).
func TestSavepointConcurrentWithCommit(t *testing.T) {
	s, fs := openMemStore(t, 1)
	rng := rand.New(rand.NewSource(23))
	m := model{}
	next := int64(1)
	persisted := 0
	for round := 0; round < 10; round++ {
		if err := s.Commit(next, []*Buffer{change(m, rng, next, 100, 500)}); err != nil {
			t.Fatal(err)
		}
		want, id := m.clone(), next
		type res struct {
			info Info
			err  error
		}
		done := make(chan res, 1)
		go func() {
			info, err := s.PersistSavepoint(id, "/sp", nil)
			done <- res{info, err}
		}()
		next++
		if err := s.Commit(next, []*Buffer{change(m, rng, next, 100, 500)}); err != nil {
			t.Fatal(err)
		}
		next++
		got := <-done
		if got.err != nil {
			if !strings.Contains(got.err.Error(), "last committed checkpoint is") {
				t.Fatal(got.err)
			}
			continue
		}
		persisted++
		r, info, err := Restore(Options{Dir: "/ck", JobID: jobB, NumRetained: 1, FS: fs}, got.info.Path)
		if err != nil || info.ID != id {
			t.Fatalf("restore %d: %v", id, err)
		}
		assertState(t, "concurrent savepoint", r.Reader(), want)
		r.Discard()
	}
	t.Logf("%d of 10 savepoints were taken before the next commit; the others were refused", persisted)
}

// goldenState is the state of the committed golden savepoint.
func goldenState() model {
	m := model{}
	for i := 0; i < 40; i++ {
		m[string(append(KeyedPrefix("count-words", i%7), fmt.Sprintf("word-%02d", i)...))] = fmt.Sprintf("%d", i*i)
	}
	m[string(append(KeyedPrefix("window-agg", 127), 0x00, 0xff))] = "binary\x00value"
	m[string(SubtaskKey("socket-source", 0))] = `{"offset":1234}`
	m[string(SubtaskKey("socket-source", 1))] = `{"offset":99}`
	m[string(SubtaskKey("fs-sink", 0))] = "txn-pending"
	return m
}

const goldenDir = "testdata/savepoint-v1"

// TestWriteGoldenSavepoint regenerates testdata/savepoint-v1 with -update.
// Run it only for a new format version (in a new directory): the committed
// savepoint must keep restoring.
func TestWriteGoldenSavepoint(t *testing.T) {
	if !*update {
		t.Skip("run with -update to rewrite " + goldenDir)
	}
	if err := os.RemoveAll(goldenDir); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Options{Dir: t.TempDir(), JobID: jobA, NumRetained: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := NewBuffer()
	for k, v := range goldenState() {
		_ = b.Put([]byte(k), []byte(v))
	}
	if err := s.Commit(7, []*Buffer{b}); err != nil {
		t.Fatal(err)
	}
	info, err := s.PersistSavepoint(7, goldenDir, map[string]string{
		"engine_version": "streamsql-dev", "job_name": "golden", "parallelism": "2", "max_parallelism": "128",
		"operators": `[{"id":"count-words","kind":"GroupAggregate"},{"id":"window-agg","kind":"WindowAggregate"}]`,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", info.Path)
}

// Format stability: the savepoint committed under testdata restores on every
// run, with its state and metadata.
func TestGoldenSavepoint(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(goldenDir, "savepoint-012345-*"))
	if len(dirs) != 1 {
		t.Fatalf("want one golden savepoint in %s, found %v", goldenDir, dirs)
	}
	mi, err := ReadSavepointMeta(dirs[0])
	if err != nil || mi.ID != 7 || mi.JobID != jobA || mi.Meta["job_name"] != "golden" || mi.Meta["max_parallelism"] != "128" {
		t.Fatalf("golden metadata: %v %+v", err, mi)
	}
	r, info, err := Restore(Options{Dir: t.TempDir(), JobID: jobB, NumRetained: 1}, dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if info.Kind != KindSavepoint || r.LastCommitted() != 7 {
		t.Fatalf("golden info %+v", info)
	}
	assertState(t, "golden savepoint", r.Reader(), goldenState())
	list, err := ListSavepoints(goldenDir)
	if err != nil || len(list) != 1 || !list[0].Complete {
		t.Fatalf("golden listing: %v %+v", err, list)
	}
}

// Restore names a savepoint directory that has no _metadata and tells a
// checkpoint's _metadata from a savepoint's.
func TestSavepointRefusals(t *testing.T) {
	fs := vfs.NewMem()
	_ = fs.MkdirAll("/sp/savepoint-012345-000000000000/op-616767", 0o755)
	o := Options{Dir: "/ck", JobID: jobB, NumRetained: 1, FS: fs}
	if _, _, err := Restore(o, "/sp/savepoint-012345-000000000000"); err == nil || !strings.Contains(err.Error(), "incomplete savepoint") {
		t.Fatalf("incomplete savepoint: %v", err)
	}
	l, err := ListSavepointsFS(fs, "/sp")
	if err != nil || len(l) != 1 || l[0].Complete {
		t.Fatalf("list: %v %+v", err, l)
	}
	if l, err := ListSavepointsFS(fs, "/nowhere"); err != nil || l != nil {
		t.Fatalf("missing dir: %v %+v", err, l)
	}
	// A checkpoint copied under a savepoint- name is not a savepoint.
	s, err := Open(Options{Dir: "/ck", JobID: jobA, NumRetained: 1, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Commit(1, nil); err != nil {
		t.Fatal(err)
	}
	chk := mustPersist(t, s, 1)
	data, _ := readAll(fs, chk.Path+"/_metadata")
	_ = fs.MkdirAll("/sp/savepoint-012345-111111111111", 0o755)
	f, _ := fs.Create("/sp/savepoint-012345-111111111111/_metadata")
	f.Write(data)
	f.Close()
	if _, err := ReadSavepointMetaFS(fs, "/sp/savepoint-012345-111111111111"); err == nil || !strings.Contains(err.Error(), "not a savepoint") {
		t.Fatalf("checkpoint metadata read as a savepoint: %v", err)
	}
	// Unknown state keys are refused by name, not silently dropped.
	b := NewBuffer()
	_ = b.Put([]byte{0x07, 'x'}, []byte("v"))
	if err := s.Commit(2, []*Buffer{b}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PersistSavepoint(2, "/sp", nil); err == nil || !strings.Contains(err.Error(), "0778") {
		t.Fatalf("unknown key: %v", err)
	}
	if l, _ := ListSavepointsFS(fs, "/sp"); len(l) != 2 {
		t.Fatalf("failed savepoint left a directory: %+v", l)
	}
}
