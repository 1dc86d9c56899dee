package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// wordCountJob writes a word count job over the socket source at port into
// the json sink at out (columns k, n: foldOutput reads them).
func wordCountJob(t *testing.T, dir, name string, port int, out string) string {
	t.Helper()
	return writeFile(t, dir, name, fmt.Sprintf(`SET 'execution.checkpointing.interval' = '100 ms';
SET 'state.checkpoints.dir' = %s;
SET 'state.savepoints.dir' = %s;
CREATE TABLE words (word STRING) WITH ('connector' = 'socket', 'hostname' = '127.0.0.1', 'port' = '%d');
CREATE TABLE out (k STRING, n BIGINT) WITH ('connector' = 'filesystem', 'path' = %s, 'format' = 'json');
INSERT INTO out SELECT word, COUNT(*) FROM words GROUP BY word;
`, sqlQuote(filepath.Join(dir, "checkpoints")), sqlQuote(filepath.Join(dir, "savepoints")), port, sqlQuote(out)))
}

// waitCommitted waits until the sink's committed output at out is exactly
// want (one row per key, no retraction of a row it never held).
func waitCommitted(p *runProc, out string, want map[string]agg) {
	p.t.Helper()
	waitRestored(p, out, want, map[string]agg{})
}

// waitRestored waits until the committed output at out (a new directory
// for a restored job) is exactly want, and its retractions of rows it never
// held are exactly wantRetracted: the values the restored state had.
func waitRestored(p *runProc, out string, want, wantRetracted map[string]agg) {
	p.t.Helper()
	why := ""
	p.waitForWhy(func() string { return fmt.Sprintf("committing the %d expected keys to %s:\n%s", len(want), out, why) }, func([]string) bool {
		got, retracted := foldSigned(p.t, out)
		why = diffAggs(got, want)
		if d := diffAggs(retracted, wantRetracted); d != "" {
			why += "\nretractions of rows the directory never held:\n" + d
		}
		return why == ""
	})
}

var reRestoring = regexp.MustCompile(`^job ([0-9a-f]{32}): restoring (\S+)$`)

// TestSocketSavepointDemo is Proof 1, the seed's demo scripted: word count
// over a socket; type words; savepoint; type more; cancel; start from the
// savepoint; type more; stop with a savepoint. The restored counts
// continue from the savepoint's values: the words typed after the
// savepoint and before the cancel are lost (a socket is not replayable)
// and nothing is counted twice.
func TestSocketSavepointDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	isolateRegistry(t)
	dir := t.TempDir()
	srv := newLineServer(t)
	out1, out2 := filepath.Join(dir, "out1"), filepath.Join(dir, "out2")
	spDir := filepath.Join(dir, "my-savepoints")

	before := strings.Fields("apple banana apple cherry banana apple date")
	lost := strings.Fields("apple banana zebra zebra cherry")             // after the savepoint, before cancel
	after := strings.Fields("apple banana cherry date zebra elder elder") // after the restore: every key again

	// Run 1: type, wait until committed, savepoint, type more, cancel.
	job1 := wordCountJob(t, dir, "wc1.sql", srv.port(), out1)
	p1 := startRun(t, "run 1", dir, "run", "-p", "2", job1)
	id1 := p1.job()
	c1 := srv.accept(t)
	typeWords(t, c1, before)
	waitCommitted(p1, out1, wordCounts(nil, before))
	if ids := listJobs(t, dir); len(ids) != 1 || ids[0] != id1 {
		t.Fatalf("streamsql list shows running jobs %v, want [%s]", ids, id1)
	}
	sp1 := savepointPath(t, mustCLI(t, dir, "savepoint", id1, spDir))
	if !strings.HasPrefix(sp1, filepath.Join(spDir, "savepoint-"+id1[:6]+"-")) {
		t.Errorf("savepoint path %s: want it under %s named savepoint-%s-<random>", sp1, spDir, id1[:6])
	}
	typeWords(t, c1, lost)
	// The lost words were really counted by run 1 before it was cancelled.
	waitCommitted(p1, out1, wordCounts(nil, before, lost))
	if r := mustCLI(t, dir, "cancel", id1); !strings.Contains(r.stdout, "Cancelled job "+id1) {
		t.Errorf("cancel printed %q", r.stdout)
	}
	p1.wait()
	if s := p1.summaryLine(); !strings.Contains(s, "CANCELED") {
		t.Fatalf("run 1 ended without a CANCELED summary: %q\n%s", s, p1.tail())
	}
	if _, err := os.Stat(filepath.Join(sp1, "_metadata")); err != nil {
		t.Fatalf("cancel must not touch the savepoint: %v", err)
	}

	// Run 2: restore from the savepoint (into a fresh sink directory, so
	// that its output shows exactly what the restored job counts).
	job2 := wordCountJob(t, dir, "wc2.sql", srv.port(), out2)
	p2 := startRun(t, "run 2", dir, "run", "-p", "2", "--from", sp1, job2)
	id2 := p2.job()
	if m := p2.waitLine(reRestoring); m[2] != sp1 {
		t.Errorf("run 2 restores %s, want %s", m[2], sp1)
	}
	c2 := srv.accept(t)
	typeWords(t, c2, after)
	// Every key typed after the restore continues from its savepoint
	// value: run 2 retracts exactly that value, and its new row counts the
	// savepoint's words plus the new ones, never the lost ones.
	atSavepoint := wordCounts(nil, before)
	want := wordCounts(atSavepoint, after)
	wantRetracted := map[string]agg{}
	for _, w := range after {
		if a, ok := atSavepoint[w]; ok {
			wantRetracted[w] = a
		}
	}
	waitRestored(p2, out2, want, wantRetracted)

	r := mustCLI(t, dir, "stop", "--savepoint", spDir, id2)
	sp2 := savepointPath(t, r)
	if code := p2.wait(); code != 0 {
		t.Fatalf("run 2 exited %d after stop with savepoint, want 0\n%s", code, p2.tail())
	}
	if s := p2.summaryLine(); !strings.Contains(s, "FINISHED") {
		t.Errorf("run 2: summary %q, want FINISHED", s)
	}
	got, retracted := foldSigned(t, out2)
	if d := diffAggs(got, want); d != "" {
		t.Errorf("counts after the restore differ (want the savepoint's words + the words typed after the restore):\n%s", d)
	}
	if d := diffAggs(retracted, wantRetracted); d != "" {
		t.Errorf("run 2 did not continue from the savepoint's values:\n%s", d)
	}
	// The savepoint of the stop restores too: its counts are the same.
	if sp2 == sp1 {
		t.Errorf("stop reused the first savepoint's path %s", sp1)
	}
	t.Logf("savepoints %s, %s; final counts %v", filepath.Base(sp1), filepath.Base(sp2), got)
}

// TestRelocation is Proof 3: a savepoint is self-contained. It is copied
// to another directory under another name, the original is deleted, and
// the job restores from the copy (at another parallelism) and ends with
// SQLite's answer.
func TestRelocation(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	isolateRegistry(t)
	dir := t.TempDir()
	spDir, out := filepath.Join(dir, "savepoints"), filepath.Join(dir, "out")
	job := rescaleJob(t, dir, "job.sql", filepath.Join(dir, "checkpoints"), out)
	p1 := startRun(t, "run 1", dir, "run", "-p", "2", job)
	id := p1.job()
	p1.waitFor("taking two checkpoints", func(lines []string) bool { return checkpointsSeen(lines) >= 2 })
	sp := savepointPath(t, mustCLI(t, dir, "stop", "--savepoint", spDir, id))
	if code := p1.wait(); code != 0 {
		t.Fatalf("run 1 exited %d after stop\n%s", code, p1.tail())
	}

	moved := filepath.Join(t.TempDir(), "elsewhere", "moved-savepoint")
	copyDir(t, sp, moved)
	if err := os.RemoveAll(spDir); err != nil {
		t.Fatal(err)
	}
	// The original is gone: restoring from it fails, naming it.
	if r := cli(t, dir, "run", "--from", sp, job); r.code != 1 || !strings.Contains(r.stderr, sp) {
		t.Errorf("restore from the deleted savepoint: exit %d, want 1 and its path named:\n%s", r.code, r.stderr)
	}
	p2 := startRun(t, "run 2 (from the copy)", dir, "run", "-p", "3", "--from", moved, job)
	if m := p2.waitLine(reRestoring); m[2] != moved {
		t.Errorf("run 2 restores %s, want the copy %s", m[2], moved)
	}
	if code := p2.wait(); code != 0 {
		t.Fatalf("run 2 exited %d\n%s", code, p2.tail())
	}
	if n := recordsIn(t, p2); n >= rescaleRows {
		t.Errorf("run 2 read %d records: a restored run reads fewer than all %d", n, rescaleRows)
	}
	got, clean := committed(t, out)
	if !clean {
		t.Errorf("the output is not exactly one row per key")
	}
	if d := diffAggs(got, rescaleOracle(t)); d != "" {
		t.Errorf("restored from the copy, the job differs from SQLite:\n%s", d)
	}
}

// bigStateJob writes an unbounded GROUP BY job over one key per row, so
// that its state grows by about ten megabytes a second and a savepoint
// takes a while to write.
func bigStateJob(t *testing.T, dir string) string {
	t.Helper()
	return writeFile(t, dir, "big.sql", fmt.Sprintf(`SET 'execution.checkpointing.interval' = '100 ms';
SET 'state.checkpoints.dir' = %s;
CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence',
  'fields.id.start' = '1', 'fields.id.end' = '1000000000000', 'rows-per-second' = '1000000');
CREATE TABLE out (k BIGINT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out SELECT id, COUNT(*) FROM src GROUP BY id;
`, sqlQuote(filepath.Join(dir, "checkpoints"))))
}

var reCheckpointBytes = regexp.MustCompile(`^job [0-9a-f]{32}: checkpoint \d+ complete \((\d+) bytes`)

// TestKillDuringSavepoint is Proof 6: the process is killed (SIGKILL) while
// a savepoint of a large state is being written. The partial savepoint is
// refused by --from, naming it, and SHOW SAVEPOINTS reports it INCOMPLETE;
// the earlier savepoint is unaffected and restores.
func TestKillDuringSavepoint(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	isolateRegistry(t)
	dir := t.TempDir()
	spDir := filepath.Join(dir, "savepoints")
	job := bigStateJob(t, dir)
	p := startRun(t, "run 1", dir, "run", "-p", "2", job)
	id := p.job()
	p.waitFor("taking a checkpoint", func(lines []string) bool { return checkpointsSeen(lines) >= 1 })
	good := savepointPath(t, mustCLI(t, dir, "savepoint", id, spDir))

	// Let the state grow, then ask for a savepoint and kill the process
	// as soon as its directory has state files but no _metadata.
	p.waitFor("holding 16 MB of state", func(lines []string) bool {
		for _, l := range lines {
			if m := reCheckpointBytes.FindStringSubmatch(l); m != nil {
				if n, _ := strconv.ParseInt(m[1], 10, 64); n >= 16<<20 {
					return true
				}
			}
		}
		return false
	})
	verb := make(chan error, 1)
	go func() { // not the test's goroutine: no t.Fatal here
		cmd := exec.Command(streamsqlBin(t), "savepoint", id, spDir)
		cmd.Dir = dir
		verb <- cmd.Run()
	}()
	partial := ""
	pollFor(t, "writing the second savepoint", func() bool {
		ents, _ := os.ReadDir(spDir)
		for _, e := range ents {
			d := filepath.Join(spDir, e.Name())
			if d == good || !strings.HasPrefix(e.Name(), "savepoint-"+id[:6]+"-") {
				continue
			}
			if _, err := os.Stat(filepath.Join(d, "_metadata")); err == nil {
				t.Fatalf("the savepoint %s completed before the kill: make the state larger", d)
			}
			files, _ := os.ReadDir(d)
			for _, f := range files {
				if strings.HasPrefix(f.Name(), "op-") {
					partial = d
					return true
				}
			}
		}
		return false
	})
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(); code != -1 {
		t.Fatalf("the process was not killed by the signal: exit %d", code)
	}
	if err := <-verb; err == nil {
		t.Errorf("streamsql savepoint succeeded although its process was killed")
	}
	if _, err := os.Stat(filepath.Join(partial, "_metadata")); err == nil {
		t.Fatalf("the savepoint %s has a _metadata: the kill came too late", partial)
	}

	// The partial savepoint is refused, naming it.
	r := cli(t, dir, "run", "--from", partial, job)
	if r.code != 1 || !strings.Contains(r.stderr, partial) || !strings.Contains(r.stderr, "incomplete savepoint") {
		t.Errorf("restore from the partial savepoint: exit %d, want 1 naming it as incomplete:\n%s", r.code, r.stderr)
	}
	if r := cli(t, dir, "run", "--check", "--from", partial, job); r.code != 1 || !strings.Contains(r.stderr, partial) {
		t.Errorf("run --check from the partial savepoint: exit %d, want 1 naming it:\n%s", r.code, r.stderr)
	}
	// SHOW SAVEPOINTS lists both, the partial one INCOMPLETE.
	show := writeFile(t, dir, "show.sql", "SET 'state.savepoints.dir' = "+sqlQuote(spDir)+";\nSHOW SAVEPOINTS;\n")
	r = mustCLI(t, dir, "run", show)
	status := map[string]string{}
	for _, l := range strings.Split(r.stdout, "\n") {
		cells := strings.Split(l, "|")
		if len(cells) >= 4 {
			status[strings.TrimSpace(cells[2])] = strings.TrimSpace(cells[3])
		}
	}
	if status[good] != "COMPLETED" || status[partial] != "INCOMPLETE" {
		t.Errorf("SHOW SAVEPOINTS: %s is %q (want COMPLETED), %s is %q (want INCOMPLETE):\n%s", good, status[good], partial, status[partial], r.stdout)
	}

	// The earlier savepoint restores.
	p2 := startRun(t, "run 2", dir, "run", "-p", "2", "--from", good, job)
	id2 := p2.job()
	if m := p2.waitLine(reRestoring); m[2] != good {
		t.Errorf("run 2 restores %s, want %s", m[2], good)
	}
	p2.waitFor("taking a checkpoint", func(lines []string) bool { return checkpointsSeen(lines) >= 1 })
	cks := completeOf(t, filepath.Join(dir, "checkpoints"), id2)
	if len(cks) == 0 || cks[len(cks)-1].Meta["restored_from"] != good {
		t.Errorf("run 2's checkpoints do not record restored_from = %s: %+v", good, cks)
	}
	mustCLI(t, dir, "cancel", id2)
	p2.wait()
}
