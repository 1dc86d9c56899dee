package connectors

import (
	"encoding/binary"
	"fmt"
	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/internal/memtest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileSinkRestoreChangedPath: a job restored from a savepoint may write
// the same sink table to another path (a compatible upgrade). The state's
// pending files are committed where they were written, nothing else there
// is touched (the original job may still be running), and the restored
// sink writes into its new directory. Found by e2e TestUpgrade: the restore
// failed on every attempt, naming a part file "not a part of this sink
// subtask".
func TestFileSinkRestoreChangedPath(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	old, moved := newSinkDir(t), newSinkDir(t)
	if old.id == moved.id {
		t.Fatal("the part ids of two paths are equal")
	}
	s := old.sink(mem, 1)
	old.write(s, mem, "a")
	state, err := s.PreCommit(1)
	if err != nil {
		t.Fatal(err)
	}
	old.write(s, mem, "b") // the original job goes on writing
	crash(s)
	before := ".part-ID-1-0000000000.pending .part-ID-1-0000000001.inprogress"
	if got := old.files(); got != before {
		t.Fatalf("before the restore: %s", got)
	}

	s2 := moved.sink(mem, 1)
	if err := s2.RestoreState(state); err != nil {
		t.Fatal(err)
	}
	if got, want := old.files(), ".part-ID-1-0000000001.inprogress part-ID-1-0000000000=a,1;"; got != want {
		t.Errorf("old directory after the restore: %s, want %s", got, want)
	}
	moved.write(s2, mem, "c")
	if _, err := s2.PreCommit(2); err != nil {
		t.Fatal(err)
	}
	if err := s2.Commit(2); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	if got, want := moved.files(), "part-ID-1-0000000000=c,1;"; got != want {
		t.Errorf("new directory: %s, want %s", got, want)
	}
	// Restoring again (the commit happened already) changes nothing.
	s3 := moved.sink(mem, 1)
	if err := s3.RestoreState(state); err != nil {
		t.Fatal(err)
	}
	s3.Close()
	if got, want := old.files(), ".part-ID-1-0000000001.inprogress part-ID-1-0000000000=a,1;"; got != want {
		t.Errorf("old directory after a second restore: %s, want %s", got, want)
	}

	// A pending file that is gone from the old directory is an error
	// naming that directory.
	os.Remove(filepath.Join(old.dir, "part-"+old.id+"-1-0000000000"))
	s4 := moved.sink(mem, 1)
	defer s4.Close()
	if err := s4.RestoreState(state); err == nil || !strings.Contains(err.Error(), old.dir) {
		t.Errorf("restore with the old pending file gone: %v, want an error naming %s", err, old.dir)
	}
}

// TestFileSinkStateV1: a version 1 state (no directory) still restores.
func TestFileSinkStateV1(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	d := newSinkDir(t)
	s := d.sink(mem, 1)
	d.write(s, mem, "a")
	if _, err := s.PreCommit(1); err != nil {
		t.Fatal(err)
	}
	crash(s)
	// A version 1 state comes from a version that did not pad part numbers.
	if err := os.Rename(filepath.Join(d.dir, ".part-"+d.id+"-1-0000000000.pending"), filepath.Join(d.dir, ".part-"+d.id+"-1-0.pending")); err != nil {
		t.Fatal(err)
	}
	v1 := []byte{1, kindFileSink}
	v1 = binary.AppendUvarint(v1, 1) // subtask
	v1 = binary.AppendUvarint(v1, 2) // parallelism
	v1 = binary.AppendUvarint(v1, 1) // next
	v1 = binary.AppendUvarint(v1, 1) // pending files
	v1 = binary.AppendVarint(v1, 1)
	v1 = appendString(v1, "part-"+d.id+"-1-0")
	s2 := d.sink(mem, 1)
	if err := s2.RestoreState(v1); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	if got, want := d.files(), "part-ID-1-0=a,1;"; got != want {
		t.Errorf("after restoring a version 1 state: %s, want %s", got, want)
	}
}

// TestPartFileNamesSortInCommitOrder: part numbers are zero-padded, so the
// names' order is the order the parts were written ("-0-10" sorted before
// "-0-2"); numbering continues after unpadded names of an earlier version.
func TestPartFileNamesSortInCommitOrder(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "part-x-0-7"), "old\n") // an earlier version's name
	p, err := NewPartFiles(dir, "x", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 12; i++ {
		w, err := p.Writer()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(w, "%d\n", i)
		if err := p.PreCommit(int64(i)); err != nil {
			t.Fatal(err)
		}
		if err := p.Commit(int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	names, err := ListFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, n := range names {
		data, _ := os.ReadFile(n)
		order = append(order, strings.TrimSpace(string(data)))
	}
	if got, want := strings.Join(order, ","), "0,1,2,3,4,5,6,7,8,9,10,11,old"; got != want {
		t.Fatalf("contents in name order: %s, want %s", got, want)
	}
	if got, want := filepath.Base(names[0]), "part-x-0-0000000008"; got != want {
		t.Errorf("first new part: %s, want %s (after the old part 7)", got, want)
	}
}

// TestFileSinkPartIDPerJob: a job's part files carry an id of its own
// (two jobs on one path never share a name); a job restored from another
// job's checkpoint, or from a state of version 2 (no id: PartID), goes on
// with the id the state names: it commits the pending parts, removes the
// uncommitted ones of the crashed run, and numbers its parts after them.
func TestFileSinkPartIDPerJob(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	d := newSinkDir(t)
	jobSink := func(job string) *FileSink {
		s, err := NewSink(d.tb, &exec.SinkContext{JobID: job, Subtask: 0, Parallelism: 1, Mem: mem, Checkpointing: true})
		if err != nil {
			t.Fatal(err)
		}
		return s.(*FileSink)
	}
	a, b := jobSink("job-a"), jobSink("job-b")
	if a.parts.id == b.parts.id || a.parts.id == d.id {
		t.Fatalf("part ids: job a %s, job b %s, PartID %s", a.parts.id, b.parts.id, d.id)
	}
	d.write(a, mem, "a1")
	state, err := a.PreCommit(1)
	if err != nil {
		t.Fatal(err)
	}
	d.write(a, mem, "a2") // after the checkpoint: lost with the crash
	crash(a)
	b.Close()
	c := jobSink("job-c") // resumes job a's checkpoint (run --from)
	if err := c.RestoreState(state); err != nil {
		t.Fatal(err)
	}
	if c.parts.id != a.parts.id {
		t.Fatalf("the restored job names its parts %s, the checkpoint's job %s", c.parts.id, a.parts.id)
	}
	d.write(c, mem, "c1")
	if _, err := c.PreCommit(2); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(2); err != nil {
		t.Fatal(err)
	}
	c.Close()
	want := "part-" + a.parts.id + "-0-0000000000=a1,1; part-" + a.parts.id + "-0-0000000002=c1,1;"
	if got := strings.ReplaceAll(d.files(), "ID", d.id); got != want {
		t.Fatalf("files %s, want %s", got, want)
	}

	// A version 2 state names no id: its parts are PartID's.
	d2 := newSinkDir(t)
	old := d2.sink(mem, 1) // no job id: PartID, as before version 3
	d2.write(old, mem, "x")
	if _, err := old.PreCommit(1); err != nil {
		t.Fatal(err)
	}
	crash(old)
	v2 := []byte{2, kindFileSink}
	v2 = binary.AppendUvarint(v2, 1) // subtask
	v2 = binary.AppendUvarint(v2, 2) // parallelism
	v2 = appendString(v2, absDir(d2.dir))
	v2 = binary.AppendUvarint(v2, 1) // next
	v2 = binary.AppendUvarint(v2, 1) // pending files
	v2 = binary.AppendVarint(v2, 1)
	v2 = appendString(v2, "part-"+d2.id+"-1-0000000000")
	s, err := NewSink(d2.tb, &exec.SinkContext{JobID: "job-d", Subtask: 1, Parallelism: 2, Mem: mem, Checkpointing: true})
	if err != nil {
		t.Fatal(err)
	}
	fs := s.(*FileSink)
	if err := fs.RestoreState(v2); err != nil {
		t.Fatal(err)
	}
	fs.Close()
	if got, want := d2.files(), "part-ID-1-0000000000=x,1;"; got != want {
		t.Errorf("after restoring a version 2 state: %s, want %s", got, want)
	}
	if fs.parts.id != d2.id {
		t.Errorf("after a version 2 state the parts are named %s, want PartID %s", fs.parts.id, d2.id)
	}
}
