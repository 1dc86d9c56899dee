package connectors

import (
	"context"
	"github.com/streamsql/streamsql/internal/memtest"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
)

// snapRun runs src to its end, taking a snapshot inside every emit (after
// the record was handed on, as the runtime does at a barrier) and one after
// Run returned. It returns the rows in order and, for each snapshot, the
// number of rows emitted when it was taken.
func snapRun(t *testing.T, src exec.CheckpointedSource) (rows []string, states [][]byte, at []int) {
	t.Helper()
	err := src.Run(context.Background(), func(r arrow.Record) error {
		if r != nil {
			rows = append(rows, recRows(r)...)
			r.Release()
		}
		st, err := src.SnapshotState()
		if err != nil {
			return err
		}
		states = append(states, st)
		at = append(at, len(rows))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := src.SnapshotState()
	if err != nil {
		t.Fatal(err)
	}
	return rows, append(states, st), append(at, len(rows))
}

func newCkSource(t *testing.T, tb *catalog.Table, sc *exec.SourceContext) exec.CheckpointedSource {
	t.Helper()
	src, err := NewSource(tb, sc)
	if err != nil {
		t.Fatal(err)
	}
	cs, ok := src.(exec.CheckpointedSource)
	if !ok {
		t.Fatalf("%T is not a CheckpointedSource", src)
	}
	return cs
}

func TestDatagenSnapshotRestore(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	tb := dgTable()
	sc := func(batch int) *exec.SourceContext {
		return &exec.SourceContext{Subtask: 1, Parallelism: 3, Mem: mem, BatchSize: batch}
	}
	src := newCkSource(t, tb, sc(7))
	ref, states, at := snapRun(t, src)
	src.Close()
	if len(ref) != 167 || len(states) < 20 {
		t.Fatalf("%d rows, %d snapshots", len(ref), len(states))
	}
	// restore at several points, at the same and at other batch sizes
	for _, i := range []int{0, 1, 5, len(states) / 2, len(states) - 2, len(states) - 1} {
		for _, batch := range []int{7, 13, 1000} {
			src := newCkSource(t, tb, sc(batch))
			if err := src.RestoreState(states[i]); err != nil {
				t.Fatal(err)
			}
			rows, _, _ := snapRun(t, src)
			src.Close()
			if strings.Join(rows, "\n") != strings.Join(ref[at[i]:], "\n") {
				t.Fatalf("snapshot %d (after %d rows), batch %d: restored rows differ", i, at[i], batch)
			}
		}
	}
	// a state restored and snapshotted again before Run is unchanged
	src = newCkSource(t, tb, sc(5))
	defer src.Close()
	if err := src.RestoreState(states[3]); err != nil {
		t.Fatal(err)
	}
	if st, _ := src.SnapshotState(); string(st) != string(states[3]) {
		t.Fatal("snapshot after restore differs")
	}
	if states[0][0] != 2 || states[0][1] != kindDatagen {
		t.Fatalf("header % x", states[0][:2])
	}
}

func TestStateErrors(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	tb := dgTable()
	g := newCkSource(t, tb, &exec.SourceContext{Subtask: 1, Parallelism: 3, Mem: mem, BatchSize: 7})
	defer g.Close()
	good, _ := g.SnapshotState()
	other := newCkSource(t, tb, &exec.SourceContext{Subtask: 0, Parallelism: 3, Mem: mem, BatchSize: 7})
	defer other.Close()
	otherState, _ := other.SnapshotState()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.csv"), "a,1\n")
	fs := newCkSource(t, table("f", kv, "connector", "filesystem", "path", dir, "format", "csv"), &exec.SourceContext{Subtask: 1, Parallelism: 3, Mem: mem})
	defer fs.Close()
	fsState, _ := fs.SnapshotState()
	cases := []struct {
		name  string
		state []byte
		want  string
	}{
		{"empty", nil, "datagen source: cannot restore: the checkpoint state is empty or truncated (0 bytes)"},
		{"version", append([]byte{9}, good[1:]...), "unsupported state format version 9"},
		{"kind", fsState, "datagen source: cannot restore the state of a filesystem source"},
		{"subtask", otherState, "cannot restore the state of subtask 0 of 3 into subtask 1 of 3"},
		{"truncated", good[:len(good)-1], "datagen source: cannot restore: the checkpoint state is corrupted"},
		{"trailing", append(append([]byte{}, good...), 0), "datagen source: cannot restore: the checkpoint state is corrupted"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := g.RestoreState(c.state)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
	// the socket source accepts an empty state (no position)
	if err := (&SocketSource{sc: &exec.SourceContext{Parallelism: 1}}).RestoreState(nil); err != nil {
		t.Fatal(err)
	}
}

func fileSourceTable(dir string, kv2 ...string) *catalog.Table {
	return table("f", kv, append([]string{"connector", "filesystem", "path", dir, "format", "csv"}, kv2...)...)
}

func TestFileSourceSnapshotRestore(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "1.csv"), "a,1\nb,x\n\"multi\nline\",2\nc,3\nd,y\ne,4\n")
	writeFile(t, filepath.Join(dir, "2.csv"), "")
	writeFile(t, filepath.Join(dir, "3.csv"), "f,5\ng,z\nh,6\ni,7")
	tb := fileSourceTable(dir, "csv.ignore-parse-errors", "true")
	sc := func() *exec.SourceContext {
		return &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: 2, SkippedRecords: new(atomic.Int64)}
	}
	first := sc()
	src := newCkSource(t, tb, first)
	ref, states, at := snapRun(t, src)
	src.Close()
	if got := strings.Join(ref, ","); got != "a|1,multi\nline|2,c|3,e|4,f|5,h|6,i|7" {
		t.Fatalf("%q", got)
	}
	if first.SkippedRecords.Load() != 3 {
		t.Fatalf("skipped %d", first.SkippedRecords.Load())
	}
	for i := range states {
		// each attempt starts with a zeroed counter; the restored state
		// brings the count of what was skipped before the checkpoint
		c := sc()
		src := newCkSource(t, tb, c)
		if err := src.RestoreState(states[i]); err != nil {
			t.Fatal(err)
		}
		rows, _, _ := snapRun(t, src)
		src.Close()
		if strings.Join(rows, ",") != strings.Join(ref[at[i]:], ",") {
			t.Fatalf("snapshot %d: rows %q, want %q", i, rows, ref[at[i]:])
		}
		if n := c.SkippedRecords.Load(); n != 3 {
			t.Fatalf("snapshot %d: skipped %d after restore, want 3", i, n)
		}
	}
	// a restore of a restore: snapshot in the middle of a restored run
	c := sc()
	src = newCkSource(t, tb, c)
	if err := src.RestoreState(states[1]); err != nil {
		t.Fatal(err)
	}
	rows, states2, at2 := snapRun(t, src)
	src.Close()
	c = sc()
	src = newCkSource(t, tb, c)
	if err := src.RestoreState(states2[1]); err != nil {
		t.Fatal(err)
	}
	rows2, _, _ := snapRun(t, src)
	src.Close()
	if strings.Join(rows2, ",") != strings.Join(rows[at2[1]:], ",") || c.SkippedRecords.Load() != 3 {
		t.Fatalf("second restore: %q, skipped %d", rows2, c.SkippedRecords.Load())
	}
}

// TestFileSourceRestoreLineNumbers: after a restore, errors report the same
// file, line and offset as an uninterrupted run.
func TestFileSourceRestoreLineNumbers(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	f := filepath.Join(dir, "1.csv")
	writeFile(t, f, "a,1\n\"q\nq\",2\nb,3\nc,4\nd,x\n")
	tb := fileSourceTable(dir)
	src := newCkSource(t, tb, &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: 2})
	var state []byte
	err := src.Run(context.Background(), func(r arrow.Record) error {
		r.Release()
		if state == nil {
			state, _ = src.SnapshotState()
		}
		return nil
	})
	src.Close()
	want := f + `:6: byte offset 20: invalid BIGINT in column "n" (value "x")`
	if err == nil || err.Error() != want {
		t.Fatalf("uninterrupted: %v", err)
	}
	src = newCkSource(t, tb, &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: 2})
	defer src.Close()
	if err := src.RestoreState(state); err != nil {
		t.Fatal(err)
	}
	err = src.Run(context.Background(), func(r arrow.Record) error { r.Release(); return nil })
	if err == nil || err.Error() != want {
		t.Fatalf("restored: %v\nwant %s", err, want)
	}
}

func TestFileSourceRestoreMissingInput(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	cases := []struct {
		name   string
		damage func(dir string) // applied after the snapshot
		want   string           // DIR stands for the directory
	}{
		{"current truncated", func(d string) { os.Truncate(filepath.Join(d, "1.csv"), 3) }, "cannot resume from 'DIR/1.csv' at byte offset 8: the file has only 3 bytes"},
		{"current missing", func(d string) { os.Remove(filepath.Join(d, "1.csv")) }, "DIR/1.csv: no such file"},
		{"later missing", func(d string) { os.Remove(filepath.Join(d, "2.csv")) }, "DIR/2.csv: no such file"},
		{"later is a directory", func(d string) { os.Remove(filepath.Join(d, "2.csv")); os.Mkdir(filepath.Join(d, "2.csv"), 0o755) }, "'DIR/2.csv' is now a directory"},
		{"new file listed earlier", func(d string) { writeFile(t, filepath.Join(d, "0.csv"), "z,0\n") }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "1.csv"), "a,1\nb,2\nc,3\n")
			writeFile(t, filepath.Join(dir, "2.csv"), "d,4\n")
			tb := fileSourceTable(dir)
			src := newCkSource(t, tb, &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: 2})
			var state []byte
			src.Run(context.Background(), func(r arrow.Record) error {
				r.Release()
				if state == nil {
					state, _ = src.SnapshotState()
				}
				return nil
			})
			src.Close()
			c.damage(dir)
			src = newCkSource(t, tb, &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: 2})
			defer src.Close()
			err := src.RestoreState(state)
			if c.want == "" {
				// files that appear later do not shift the restored reading
				if err != nil {
					t.Fatal(err)
				}
				var rows []string
				if err := src.Run(context.Background(), func(r arrow.Record) error { rows = append(rows, recRows(r)...); r.Release(); return nil }); err != nil {
					t.Fatal(err)
				}
				if strings.Join(rows, ",") != "c|3,d|4" {
					t.Fatal(rows)
				}
				return
			}
			want := strings.ReplaceAll(c.want, "DIR", dir)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v\nwant %s", err, want)
			}
		})
	}
}

// ---- file sink ----

type sinkDir struct {
	t   *testing.T
	dir string
	id  string
	tb  *catalog.Table
}

func newSinkDir(t *testing.T, kv2 ...string) *sinkDir {
	dir := filepath.Join(t.TempDir(), "out")
	tb := table("sink", kv, append([]string{"connector", "filesystem", "path", dir, "format", "csv"}, kv2...)...)
	return &sinkDir{t: t, dir: dir, id: PartID(tb), tb: tb}
}

func (d *sinkDir) sink(mem memory.Allocator, subtask int) *FileSink {
	d.t.Helper()
	s, err := NewSink(d.tb, &exec.SinkContext{Subtask: subtask, Parallelism: 2, Mem: mem, Checkpointing: true})
	if err != nil {
		d.t.Fatal(err)
	}
	return s.(*FileSink)
}

// files lists the directory as "name=content" (hidden files: name only).
func (d *sinkDir) files() string {
	ents, _ := os.ReadDir(d.dir)
	var out []string
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, ".") {
			out = append(out, strings.ReplaceAll(n, d.id, "ID"))
			continue
		}
		data, _ := os.ReadFile(filepath.Join(d.dir, n))
		out = append(out, strings.ReplaceAll(n, d.id, "ID")+"="+strings.ReplaceAll(string(data), "\n", ";"))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func (d *sinkDir) write(s *FileSink, mem memory.Allocator, v string) {
	d.t.Helper()
	rec := kvRecord(mem, []string{v}, []int64{1}, nil)
	defer rec.Release()
	if err := s.Write(exec.Batch{Rec: rec}); err != nil {
		d.t.Fatal(err)
	}
}

// crash drops a sink as a killed process would: its file is closed, nothing
// else happens.
func crash(s *FileSink) {
	if c := s.parts.cur; c != nil {
		c.f.Close()
	}
}

func TestFileSinkTwoPhase(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	cases := []struct {
		name          string
		commitBefore  bool // Commit(1) happened before the crash
		restoreFrom   int  // checkpoint restored
		afterRestore  string
		afterMore     string
		restoreAgain  bool
		precommitOnly bool
	}{
		{"commit1 then crash, restore 1", true, 1,
			"part-ID-1-0000000000=a,1;",
			"part-ID-1-0000000000=a,1; part-ID-1-0000000003=d,1;", true, false},
		{"crash before commit1, restore 1", false, 1,
			"part-ID-1-0000000000=a,1;",
			"part-ID-1-0000000000=a,1; part-ID-1-0000000003=d,1;", true, false},
		{"crash before commit, restore 2", false, 2,
			"part-ID-1-0000000000=a,1; part-ID-1-0000000001=b,1;",
			"part-ID-1-0000000000=a,1; part-ID-1-0000000001=b,1; part-ID-1-0000000003=d,1;", true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newSinkDir(t)
			s := d.sink(mem, 1)
			d.write(s, mem, "a")
			st1, err := s.PreCommit(1)
			if err != nil {
				t.Fatal(err)
			}
			d.write(s, mem, "b")
			st2, err := s.PreCommit(2)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.files(); got != ".part-ID-1-0000000000.pending .part-ID-1-0000000001.pending" {
				t.Fatalf("after pre-commits: %s", got)
			}
			if c.commitBefore {
				if err := s.Commit(1); err != nil {
					t.Fatal(err)
				}
				if got := d.files(); got != ".part-ID-1-0000000001.pending part-ID-1-0000000000=a,1;" {
					t.Fatalf("after commit 1: %s", got)
				}
			}
			d.write(s, mem, "c")
			crash(s)
			if got := d.files(); !strings.Contains(got, ".part-ID-1-0000000002.inprogress") {
				t.Fatalf("before restore: %s", got)
			}
			state := st1
			if c.restoreFrom == 2 {
				state = st2
			}
			// another subtask's hidden files are not touched
			writeFile(t, filepath.Join(d.dir, ".part-"+d.id+"-11-0000000000.inprogress"), "")
			s2 := d.sink(mem, 1)
			if err := s2.RestoreState(state); err != nil {
				t.Fatal(err)
			}
			if got := d.files(); got != ".part-ID-11-0000000000.inprogress "+c.afterRestore {
				t.Fatalf("after restore: %s\nwant %s", got, c.afterRestore)
			}
			os.Remove(filepath.Join(d.dir, ".part-"+d.id+"-11-0000000000.inprogress"))
			if c.restoreAgain {
				// the restored checkpoint's commit already happened: no-op
				s3 := d.sink(mem, 1)
				if err := s3.RestoreState(state); err != nil {
					t.Fatal(err)
				}
				s3.Close()
				if got := d.files(); got != c.afterRestore {
					t.Fatalf("after second restore: %s", got)
				}
			}
			// more output: names continue after every part seen
			d.write(s2, mem, "d")
			if _, err := s2.PreCommit(3); err != nil {
				t.Fatal(err)
			}
			if err := s2.Commit(3); err != nil {
				t.Fatal(err)
			}
			s2.Close()
			if got := d.files(); got != c.afterMore {
				t.Fatalf("after more output: %s\nwant %s", got, c.afterMore)
			}
		})
	}
}

func TestFileSinkCheckpointingLifecycle(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	d := newSinkDir(t, "sink.rolling-policy.file-size", "1")
	s := d.sink(mem, 0)
	// rolling by size does not commit, nor does Finish
	d.write(s, mem, "a")
	d.write(s, mem, "b")
	if err := s.Finish(); err != nil {
		t.Fatal(err)
	}
	if got := d.files(); got != ".part-ID-0-0000000000.inprogress .part-ID-0-0000000001.inprogress" {
		t.Fatalf("after rolls: %s", got)
	}
	if err := s.Tick(s.now().Add(s.rollover)); err != nil {
		t.Fatal(err)
	}
	st1, err := s.PreCommit(1)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.files(); got != ".part-ID-0-0000000000.pending .part-ID-0-0000000001.pending" {
		t.Fatalf("after pre-commit: %s", got)
	}
	// nothing new: the state still lists what is pending
	st2, err := s.PreCommit(2)
	if err != nil {
		t.Fatal(err)
	}
	if string(st2) != string(st1) {
		t.Fatal("second state lost the pending files")
	}
	// Close keeps the pending files (a completed checkpoint may own them)
	d.write(s, mem, "c")
	s.Close()
	s.Close()
	if got := d.files(); got != ".part-ID-0-0000000000.pending .part-ID-0-0000000001.pending" {
		t.Fatalf("after close: %s", got)
	}
	s2 := d.sink(mem, 0)
	defer s2.Close()
	if err := s2.RestoreState(st2); err != nil {
		t.Fatal(err)
	}
	if got := d.files(); got != "part-ID-0-0000000000=a,1; part-ID-0-0000000001=b,1;" {
		t.Fatalf("after restore: %s", got)
	}
	// Commit is idempotent
	if err := s2.Commit(2); err != nil {
		t.Fatal(err)
	}
	// a pending file that vanished without being committed is reported
	s3 := d.sink(mem, 1)
	d.write(s3, mem, "x")
	st, _ := s3.PreCommit(5)
	os.Remove(filepath.Join(d.dir, ".part-"+d.id+"-1-0000000000.pending"))
	s4 := d.sink(mem, 1)
	err = s4.RestoreState(st)
	want := "cannot commit the output of epoch 5: neither " + filepath.Join(d.dir, ".part-"+d.id+"-1-0000000000.pending")
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v\nwant %s", err, want)
	}
	// another subtask's state is refused
	if err := s4.RestoreState(st1); err == nil || !strings.Contains(err.Error(), "subtask 0 of 2 into subtask 1 of 2") {
		t.Fatal(err)
	}
	// an empty state discards this subtask's hidden files only
	d.write(s4, mem, "y")
	crash(s4)
	s5 := d.sink(mem, 1)
	if err := s5.RestoreState(nil); err != nil {
		t.Fatal(err)
	}
	if got := d.files(); got != "part-ID-0-0000000000=a,1; part-ID-0-0000000001=b,1;" {
		t.Fatalf("after empty restore: %s", got)
	}
	if s5.parts.next != 1 {
		t.Fatalf("next part %d", s5.parts.next)
	}
}

// TestSocketSourceState: the socket state has no position, only the count
// of skipped bad records, which a restore carries over.
func TestSocketSourceState(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	port, done, ln := serve(t, func(c net.Conn) {
		io.WriteString(c, "a,1\nb,x\nc,2\nd,y\n")
		c.Close()
	})
	defer ln.Close()
	tb := table("s", kv, "connector", "socket", "hostname", "127.0.0.1", "port", port, "format", "csv", "csv.ignore-parse-errors", "true")
	sc := &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: 1, Linger: time.Hour, SkippedRecords: new(atomic.Int64)}
	src := newCkSource(t, tb, sc)
	rows, states, _ := snapRun(t, src)
	src.Close()
	<-done
	if strings.Join(rows, ",") != "a|1,c|2" || sc.SkippedRecords.Load() != 2 {
		t.Fatalf("rows %v skipped %d", rows, sc.SkippedRecords.Load())
	}
	// first batch "a": nothing skipped yet; second "c": b was skipped; end: both
	for i, want := range []int64{0, 1, 2} {
		sc2 := &exec.SourceContext{Parallelism: 1, Mem: mem, SkippedRecords: new(atomic.Int64)}
		s2 := newCkSource(t, tb, sc2)
		if err := s2.RestoreState(states[i]); err != nil {
			t.Fatal(err)
		}
		s2.Close()
		if sc2.SkippedRecords.Load() != want {
			t.Fatalf("state %d: skipped %d, want %d", i, sc2.SkippedRecords.Load(), want)
		}
	}
}
