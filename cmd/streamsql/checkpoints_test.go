package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// lineWatcher collects the lines a process writes to a pipe and lets a test
// wait for one of them (no sleeps: it waits on the pipe).
type lineWatcher struct {
	mu     sync.Mutex
	lines  []string
	notify chan struct{} // closed and replaced when a line arrives
	eof    bool
}

func watchLines(r io.Reader) *lineWatcher {
	w := &lineWatcher{notify: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, sc.Text())
			close(w.notify)
			w.notify = make(chan struct{})
			w.mu.Unlock()
		}
		w.mu.Lock()
		w.eof = true
		close(w.notify)
		w.mu.Unlock()
	}()
	return w
}

// waitFor returns the first line matching re, or fails the test when the
// pipe ends without one.
func (w *lineWatcher) waitFor(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	for i := 0; ; {
		w.mu.Lock()
		for ; i < len(w.lines); i++ {
			if m := re.FindStringSubmatch(w.lines[i]); m != nil {
				w.mu.Unlock()
				return m
			}
		}
		eof, ch := w.eof, w.notify
		w.mu.Unlock()
		if eof {
			t.Fatalf("no line matches %s; output:\n%s", re, w.text())
		}
		<-ch
	}
}

// wait waits for the end of the pipe and returns everything.
func (w *lineWatcher) wait() string {
	for {
		w.mu.Lock()
		eof, ch := w.eof, w.notify
		w.mu.Unlock()
		if eof {
			return w.text()
		}
		<-ch
	}
}

func (w *lineWatcher) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n")
}

// started is a `streamsql run` in the background.
type started struct {
	cmd    *exec.Cmd
	stderr *lineWatcher
	stdout *bytes.Buffer
	jobID  string
}

var (
	submittedRe  = regexp.MustCompile(`^job ([0-9a-f]{32}) \(.*\) submitted$`)
	checkpointRe = func(n int) *regexp.Regexp {
		return regexp.MustCompile(`^job [0-9a-f]{32}: checkpoint ` + strconv.Itoa(n) + ` complete \(\d+ bytes, \d+ written, sync \d+ ms, async \d+ ms\)$`)
	}
)

// startRun starts the binary with args in dir and waits until it submitted
// its job.
func startRun(t *testing.T, dir string, args ...string) *started {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	st := &started{cmd: cmd, stderr: watchLines(pipe), stdout: &out}
	st.jobID = st.stderr.waitFor(t, submittedRe)[1]
	return st
}

// end waits for the process and returns its exit status (-1 when killed by
// a signal) and the signal that killed it.
func (s *started) end(t *testing.T) (code int, sig syscall.Signal, stderr string) {
	t.Helper()
	stderr = s.stderr.wait() // read the pipe to its end before Wait closes it
	err := s.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	ws := s.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return -1, ws.Signal(), stderr
	}
	return ws.ExitStatus(), 0, stderr
}

// hasCheckpoint reports whether a chk-<n>/_metadata exists under jobDir.
func completeCheckpoints(t *testing.T, jobDir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(jobDir, "chk-*", "_metadata"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(m, func(i, j int) bool { return chkNum(m[i]) < chkNum(m[j]) })
	return m
}

func chkNum(metadata string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(filepath.Dir(metadata)), "chk-"))
	return n
}

const longJob = `SET 'execution.checkpointing.interval' = '100 ms';
SET 'state.checkpoints.dir' = 'ck';
CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '100');
CREATE TABLE out (id BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out SELECT id FROM src;
`

// TestCancelRemovesCheckpoints: SIGTERM / Ctrl-C cancel the job; its
// checkpoint directory goes away unless RETAIN_ON_CANCELLATION.
func TestCancelRemovesCheckpoints(t *testing.T) {
	tests := []struct {
		name   string
		sig    syscall.Signal
		args   []string
		code   int
		retain bool
	}{
		{"SIGTERM deletes", syscall.SIGTERM, nil, exitSIGTERM, false},
		{"SIGINT deletes", syscall.SIGINT, nil, exitSIGINT, false},
		{"SIGTERM with RETAIN_ON_CANCELLATION keeps", syscall.SIGTERM,
			[]string{"--set", "execution.checkpointing.externalized-checkpoint-retention=RETAIN_ON_CANCELLATION"}, exitSIGTERM, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"long.sql": longJob})
			p := startRun(t, dir, append(append([]string{"run", "-p", "1"}, tc.args...), "long.sql")...)
			p.stderr.waitFor(t, checkpointRe(1))
			jobDir := filepath.Join(dir, "ck", p.jobID)
			if len(completeCheckpoints(t, jobDir)) == 0 {
				t.Fatal("checkpoint 1 reported complete, but no chk-<n>/_metadata")
			}
			if err := p.cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := p.end(t)
			if code != tc.code || !strings.Contains(stderr, "CANCELED") {
				t.Fatalf("exit status %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			_, err := os.Stat(jobDir)
			if !tc.retain {
				if !os.IsNotExist(err) {
					t.Fatalf("job directory %s should be removed (stat: %v)", jobDir, err)
				}
				return
			}
			chks := completeCheckpoints(t, jobDir)
			if len(chks) == 0 {
				t.Fatalf("RETAIN_ON_CANCELLATION: no complete checkpoint left in %s", jobDir)
			}
			// Flink's layout stays: chk-<n>/, shared/ and an empty taskowned/.
			if owned, err := os.ReadDir(filepath.Join(jobDir, "taskowned")); err != nil || len(owned) != 0 {
				t.Errorf("taskowned/ should be kept, empty, after the cancel: %v %v", owned, err)
			}
			r := run(t, dir, "", "checkpoints", "ck")
			if r.code != 0 || !strings.Contains(r.stdout, p.jobID) || !strings.Contains(r.stdout, "COMPLETED") {
				t.Fatalf("checkpoints ck: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// countJob counts 600 sequence ids by id % 7 into a two-phase filesystem
// sink, slowly enough to be killed in the middle.
const countJob = `SET 'execution.checkpointing.interval' = '100 ms';
SET 'state.checkpoints.dir' = 'ck';
CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '300', 'number-of-rows' = '600',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '600');
CREATE TABLE out (k BIGINT, c BIGINT) WITH ('connector' = 'filesystem', 'path' = 'out', 'format' = 'json');
INSERT INTO out SELECT id % 7, COUNT(*) FROM src GROUP BY id % 7;
`

// foldChangelog reads the committed part files of a json filesystem sink in
// commit order (per subtask, by part number) and applies the changelog as a
// multiset: a retraction of a row that is not there (a duplicate) fails.
func foldChangelog(t *testing.T, dir string) map[int64]int64 {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "part-*"))
	if err != nil {
		t.Fatal(err)
	}
	partRe := regexp.MustCompile(`-(\d+)-(\d+)$`)
	key := func(n string) (int, int) {
		m := partRe.FindStringSubmatch(n)
		a, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[2])
		return a, b
	}
	sort.Slice(names, func(i, j int) bool {
		a1, b1 := key(names[i])
		a2, b2 := key(names[j])
		return a1 < a2 || a1 == a2 && b1 < b2
	})
	rows := map[[2]int64]int{}
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if line == "" {
				continue
			}
			var r struct {
				Op   string
				K, C int64
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("%s: %q: %v", n, line, err)
			}
			kc := [2]int64{r.K, r.C}
			switch r.Op {
			case "+I", "+U":
				rows[kc]++
			case "-U", "-D":
				if rows[kc] == 0 {
					t.Fatalf("%s: %s retracts a row that is not there (counted twice?)", n, line)
				}
				rows[kc]--
			default:
				t.Fatalf("%s: bad op in %q", n, line)
			}
		}
	}
	got := map[int64]int64{}
	for kc, n := range rows {
		for ; n > 0; n-- {
			if _, dup := got[kc[0]]; dup {
				t.Fatalf("key %d has more than one row", kc[0])
			}
			got[kc[0]] = kc[1]
		}
	}
	return got
}

// TestRunFromAfterKill: kill -9 after a checkpoint, resume with --from (the
// job directory or the chk-<n> directory): the committed output is exactly
// the uninterrupted result.
func TestRunFromAfterKill(t *testing.T) {
	want := map[int64]int64{}
	for id := int64(1); id <= 600; id++ {
		want[id%7]++
	}
	for _, from := range []string{"job directory", "chk directory"} {
		t.Run(from, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"job.sql": countJob})
			p := startRun(t, dir, "run", "-p", "2", "job.sql")
			p.stderr.waitFor(t, checkpointRe(2))
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if _, sig, stderr := p.end(t); sig != syscall.SIGKILL || strings.Contains(stderr, "FINISHED") {
				t.Fatalf("the job was not killed in the middle (signal %v):\n%s", sig, stderr)
			}
			jobDir := filepath.Join("ck", p.jobID)
			chks := completeCheckpoints(t, filepath.Join(dir, jobDir))
			if len(chks) == 0 {
				t.Fatal("no complete checkpoint after kill -9")
			}
			r := run(t, dir, "", "checkpoints", "ck")
			if r.code != 0 || !strings.Contains(r.stdout, p.jobID) || !strings.Contains(r.stdout, "COMPLETED") {
				t.Fatalf("checkpoints ck: %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			path := jobDir
			if from == "chk directory" {
				path = filepath.Join(jobDir, filepath.Base(filepath.Dir(chks[len(chks)-1])))
			}
			r = run(t, dir, "", "run", "-p", "2", "--from", path, "job.sql")
			if r.code != 0 || !strings.Contains(r.stderr, "FINISHED") {
				t.Fatalf("run --from %s: exit status %d\n%s", path, r.code, r.stderr)
			}
			got := foldChangelog(t, filepath.Join(dir, "out"))
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("committed counts %v, want %v", got, want)
			}
		})
	}
}

// retainJob finishes quickly and keeps its final checkpoint. Its INSERT is
// on line 7.
const retainJob = `SET 'execution.checkpointing.interval' = '50 ms';
SET 'state.checkpoints.dir' = 'ck';
SET 'execution.checkpointing.externalized-checkpoint-retention' = 'RETAIN_ON_CANCELLATION';
CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '50',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '50');
CREATE TABLE out (k BIGINT, c BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out SELECT id % 5, COUNT(*) FROM src GROUP BY id % 5;
`

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRunFromBrokenCheckpoint: a restore that fails names the INSERT's
// place in the file and the bad file, and exits 1.
func TestRunFromBrokenCheckpoint(t *testing.T) {
	base := writeFiles(t, map[string]string{"job.sql": retainJob})
	r := run(t, base, "", "run", "-p", "1", "job.sql")
	if r.code != 0 {
		t.Fatalf("exit status %d:\n%s", r.code, r.stderr)
	}
	jobs, _ := os.ReadDir(filepath.Join(base, "ck"))
	if len(jobs) != 1 {
		t.Fatalf("want one job directory, got %v", jobs)
	}
	jobDir := filepath.Join("ck", jobs[0].Name())
	chks := completeCheckpoints(t, filepath.Join(base, jobDir))
	if len(chks) != 1 {
		t.Fatalf("want one retained checkpoint, got %v", chks)
	}
	chkDir := filepath.Join(jobDir, filepath.Base(filepath.Dir(chks[0])))
	ssts, _ := filepath.Glob(filepath.Join(base, jobDir, "shared", "*.sst"))
	if len(ssts) == 0 {
		t.Fatal("the checkpoint references no shared sstable")
	}
	sst := filepath.Join(jobDir, "shared", filepath.Base(ssts[0]))

	tests := []struct {
		name   string
		from   string
		damage func(dir string) error
		want   string // in the message
	}{
		{"intact", chkDir, nil, ""},
		{"truncated sstable", chkDir, func(dir string) error {
			return os.Truncate(filepath.Join(dir, sst), 10)
		}, filepath.Base(sst)},
		{"bit flip in sstable", jobDir, func(dir string) error {
			p := filepath.Join(dir, sst)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 0x10
			return os.WriteFile(p, b, 0o644)
		}, filepath.Base(sst)},
		{"deleted sstable", chkDir, func(dir string) error {
			return os.Remove(filepath.Join(dir, sst))
		}, filepath.Base(sst)},
		{"corrupted _metadata", chkDir, func(dir string) error {
			p := filepath.Join(dir, chkDir, "_metadata")
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 0x01
			return os.WriteFile(p, b, 0o644)
		}, "_metadata"},
		{"no _metadata", chkDir, func(dir string) error {
			return os.Remove(filepath.Join(dir, chkDir, "_metadata"))
		}, "_metadata"},
		{"missing directory", "ck/nowhere", nil, "no such directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			copyTree(t, base, dir)
			if tc.damage != nil {
				if err := tc.damage(dir); err != nil {
					t.Fatal(err)
				}
			}
			r := run(t, dir, "", "run", "-p", "1", "--from", tc.from, "job.sql")
			if tc.want == "" {
				if r.code != 0 || !strings.Contains(r.stderr, "FINISHED") {
					t.Fatalf("restoring an intact checkpoint: %d\n%s", r.code, r.stderr)
				}
				return
			}
			if r.code != 1 {
				t.Fatalf("exit status %d, want 1; stderr:\n%s", r.code, r.stderr)
			}
			// Log lines (e.g. a skipped newer checkpoint) may come first; the
			// error line itself starts with the position.
			if !strings.Contains("\n"+r.stderr, "\njob.sql:7:1: cannot restore from '"+tc.from+"'") || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("stderr should have a line starting with job.sql:7:1: and name %q:\n%s", tc.want, r.stderr)
			}
		})
	}
}

func TestCheckpointsCmd(t *testing.T) {
	const job1, job2 = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
	dir := writeFiles(t, map[string]string{"file.txt": "x"})
	for _, d := range []string{"empty", "ck/" + job1 + "/chk-3", "ck/" + job2 + "/chk-7", "ck/not-a-job"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	abs, _ := filepath.Abs(filepath.Join(dir, "ck"))
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		lacks  string
		stderr string
	}{
		{"missing", []string{"nowhere"}, 1, nil, "", "streamsql checkpoints: nowhere: no such directory"},
		{"not a directory", []string{"file.txt"}, 1, nil, "", "not a directory"},
		{"empty", []string{"empty"}, 0, []string{"Empty set"}, "", ""},
		{"incomplete checkpoints", []string{"ck"}, 0, []string{
			"|                           job id | checkpoint id |     status | completed at | size | incremental | duration |",
			"| " + job1 + " |             3 | INCOMPLETE |              |      |             |          |",
			"| " + job2 + " |             7 | INCOMPLETE |              |      |             |          |",
			"2 rows in set"}, "not-a-job", ""},
		{"one job directory, file:// URI", []string{"file://" + abs + "/" + job2}, 0, []string{"1 row in set"}, job1, ""},
		{"no argument", nil, 2, nil, "", "accepts 1 arg"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, dir, "", append([]string{"checkpoints"}, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit status %d, want %d\n%s%s", r.code, tc.code, r.stdout, r.stderr)
			}
			assertLinesInOrder(t, r.stdout, tc.stdout)
			if tc.lacks != "" && strings.Contains(r.stdout, tc.lacks) {
				t.Errorf("stdout should not mention %s:\n%s", tc.lacks, r.stdout)
			}
			if !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, r.stderr)
			}
		})
	}
}

// TestRunLogsRestarts: failed attempts and checkpoints go to stderr, the
// session's own start/end lines do not (run prints its own).
func TestRunLogsRestarts(t *testing.T) {
	dir := writeFiles(t, map[string]string{"job.sql": `SET 'execution.checkpointing.interval' = '50 ms';
SET 'state.checkpoints.dir' = 'ck';
SET 'restart-strategy.type' = 'fixed-delay';
SET 'restart-strategy.fixed-delay.attempts' = '1';
SET 'restart-strategy.fixed-delay.delay' = '0 ms';
CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '30',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '30');
CREATE TABLE out (x BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out SELECT CAST(CASE WHEN id = 20 THEN 'x' ELSE '1' END AS BIGINT) FROM src;
`})
	r := run(t, dir, "", "run", "-p", "1", "job.sql")
	if r.code != 1 {
		t.Fatalf("exit status %d, want 1:\n%s", r.code, r.stderr)
	}
	restart := regexp.MustCompile(`(?m)^job [0-9a-f]{32}: attempt 1 failed: .*cannot cast 'x' to BIGINT.*; (restored checkpoint \d+|no checkpoint to restore: restarting from the beginning)$`)
	if !restart.MatchString(r.stderr) {
		t.Errorf("stderr lacks the restart line:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr, ") started") || regexp.MustCompile(`(?m)^job [0-9a-f]{32} FAILED$`).MatchString(r.stderr) {
		t.Errorf("stderr repeats the session's lifecycle lines:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "(insert-into_out) FAILED: ") || !strings.Contains(r.stderr, "job.sql: job ") {
		t.Errorf("stderr lacks the summary:\n%s", r.stderr)
	}
}

func TestJobLogFilter(t *testing.T) {
	id := "0123456789abcdef0123456789abcdef"
	var b bytes.Buffer
	l := newJobLog(&b)
	for _, s := range []string{
		"job " + id + " (insert-into_x) started\n",
		"job " + id + ": checkpoint 1 complete (1 bytes, 1 written, sync 0 ms, async 0 ms)\njob " + id + " FINI",
		"SHED\n",
		"job " + id + ": attempt 1 failed: boom; restored checkpoint 1\n",
		"job " + id + " CANCELED\n",
		"job " + id + " (a job named started) FAILED soon\n",
	} {
		if n, err := l.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	want := "job " + id + ": checkpoint 1 complete (1 bytes, 1 written, sync 0 ms, async 0 ms)\n" +
		"job " + id + ": attempt 1 failed: boom; restored checkpoint 1\n" +
		"job " + id + " (a job named started) FAILED soon\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
