package connectors

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/internal/memtest"
)

// syncGate replaces syncFile for a test: every fsync reports its file on
// entered and waits for release; a file whose name contains fail fails.
type syncGate struct {
	entered chan string
	release chan struct{}
	synced  atomic.Int32
	fail    string
}

func gateSyncs(t *testing.T, fail string) *syncGate {
	g := &syncGate{entered: make(chan string, 64), release: make(chan struct{}), fail: fail}
	old := syncFile
	syncFile = func(f *os.File) error {
		name := filepath.Base(f.Name())
		g.entered <- name
		<-g.release
		if g.fail != "" && strings.Contains(name, g.fail) {
			return errors.New("injected EIO")
		}
		g.synced.Add(1)
		return f.Sync()
	}
	t.Cleanup(func() { syncFile = old })
	return g
}

// TestFileSinkPreCommitAsync: the sink's pre-commit renames its rolled
// files to pending and returns while their fsyncs run; done returns only
// after every one of them (and waits for an earlier pre-commit's that no
// checkpoint waited for); Close waits for the fsyncs too.
func TestFileSinkPreCommitAsync(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	g := gateSyncs(t, "")
	d := newSinkDir(t, "sink.rolling-policy.file-size", "1") // every write rolls
	s := d.sink(mem, 0)
	var _ exec.AsyncPreCommitSink = s
	d.write(s, mem, "a")
	d.write(s, mem, "b")
	// Checkpoint 1: its pre-commit returns with both fsyncs blocked.
	_, done1, err := s.PreCommitAsync(1)
	if err != nil || done1 == nil {
		t.Fatalf("pre-commit 1: %v, done %v", err, done1 != nil)
	}
	for i := 0; i < 2; i++ {
		<-g.entered // both fsyncs run in the background, unwaited
	}
	if got := d.files(); got != ".part-ID-0-0000000000.pending .part-ID-0-0000000001.pending" {
		t.Fatalf("after pre-commit 1: %s", got)
	}
	// Checkpoint 1 aborted (nobody waits for done1); checkpoint 2 names
	// epoch 1's files as pending too, so its done must cover them.
	d.write(s, mem, "c")
	state2, done2, err := s.PreCommitAsync(2)
	if err != nil || done2 == nil {
		t.Fatal(err)
	}
	<-g.entered
	if !strings.Contains(string(state2), "part-"+d.id+"-0-0000000000") {
		t.Fatalf("state of checkpoint 2 does not name epoch 1's file: %q", state2)
	}
	res := make(chan int32, 1)
	go func() {
		if err := done2(); err != nil {
			t.Error(err)
		}
		res <- g.synced.Load()
	}()
	close(g.release)
	if n := <-res; n != 3 {
		t.Fatalf("done of checkpoint 2 returned after %d of 3 fsyncs", n)
	}
	if err := s.Commit(2); err != nil {
		t.Fatal(err)
	}
	if got := d.files(); got != "part-ID-0-0000000000=a,1; part-ID-0-0000000001=b,1; part-ID-0-0000000002=c,1;" {
		t.Fatalf("after commit 2: %s", got)
	}
	// Nothing new: done is the last one's (already done).
	_, done3, err := s.PreCommitAsync(3)
	if err != nil || done3 == nil || done3() != nil {
		t.Fatalf("empty pre-commit: %v", err)
	}
	d.write(s, mem, "d")
	if _, _, err := s.PreCommitAsync(4); err != nil {
		t.Fatal(err)
	}
	<-g.entered
	s.Close() // waits for the fsync of epoch 4's file
	if n := g.synced.Load(); n != 4 {
		t.Fatalf("Close returned with %d of 4 fsyncs done", n)
	}
}

// TestFileSinkPreCommitAsyncFailure: a failed fsync fails done, and every
// later done (a checkpoint naming the file must not complete).
func TestFileSinkPreCommitAsyncFailure(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	g := gateSyncs(t, "-0000000001")
	close(g.release)
	d := newSinkDir(t, "sink.rolling-policy.file-size", "1")
	s := d.sink(mem, 0)
	defer s.Close()
	d.write(s, mem, "a")
	d.write(s, mem, "b")
	_, done1, err := s.PreCommitAsync(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := done1(); err == nil || !strings.Contains(err.Error(), "injected EIO") || !strings.Contains(err.Error(), "0000000001") {
		t.Fatalf("done of a failed fsync: %v", err)
	}
	d.write(s, mem, "c")
	_, done2, err := s.PreCommitAsync(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := done2(); err == nil || !strings.Contains(err.Error(), "injected EIO") {
		t.Fatalf("done after a failed fsync: %v", err)
	}
}

// TestPartitionedSinkPreCommitAsync: the partitioned sink's one job covers
// every partition's files, also of partitions it no longer tracks.
func TestPartitionedSinkPreCommitAsync(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	g := gateSyncs(t, "")
	dir := filepath.Join(t.TempDir(), "out")
	tb := table("sink", kv, "connector", "filesystem", "path", dir, "format", "csv")
	tb.PartitionKeys = []string{"s"}
	sk, err := NewSink(tb, &exec.SinkContext{Subtask: 0, Parallelism: 1, Mem: mem, Checkpointing: true, Schema: kv})
	if err != nil {
		t.Fatal(err)
	}
	s := sk.(*PartitionedSink)
	rec := kvRecord(mem, []string{"x", "y", "z"}, []int64{1, 2, 3}, nil)
	err = s.Write(exec.Batch{Rec: rec})
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	_, done, err := s.PreCommitAsync(1)
	if err != nil || done == nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		<-g.entered
	}
	var wg sync.WaitGroup
	var at int32
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := done(); err != nil {
			t.Error(err)
		}
		at = g.synced.Load()
	}()
	close(g.release)
	wg.Wait()
	if at != 3 {
		t.Fatalf("done returned after %d of 3 partitions' fsyncs", at)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
