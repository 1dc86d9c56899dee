package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Helpers of the job-control tests (savepoints, stop, cancel, upgrades):
// a `streamsql run` process whose stderr is collected in the background
// (so the job never blocks on a full pipe) and waited on line by line, the
// CLI verbs run to completion, and a TCP server that feeds socket sources.

// ctlTimeout bounds every wait of these tests; it is a safety net, never
// reached when all is well.
const ctlTimeout = 90 * time.Second // generous: CI machines run other test packages meanwhile

// isolateRegistry points the job registry of every process the test starts
// at a private directory, so that `streamsql list` sees only this test's
// processes.
func isolateRegistry(t *testing.T) {
	t.Helper()
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
}

// runProc is a running `streamsql run` process.
type runProc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	stdout bytes.Buffer

	mu     sync.Mutex
	lines  []string
	notify chan struct{} // closed (and replaced) at every new line
	jobID  string

	exited chan struct{} // closed once Wait returned
	err    error
}

var reSubmittedAny = regexp.MustCompile(`^job ([0-9a-f]{32}) \([^)]*\) submitted$`)

// startRun starts `streamsql <args...>` in dir. The process is killed at
// the end of the test if it is still running.
func startRun(t *testing.T, name, dir string, args ...string) *runProc {
	t.Helper()
	bin := streamsqlBin(t)
	p := &runProc{t: t, name: name, notify: make(chan struct{}), exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout = &p.stdout
	pipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			l := sc.Text()
			p.lines = append(p.lines, l)
			if m := reSubmittedAny.FindStringSubmatch(l); m != nil && p.jobID == "" {
				p.jobID = m[1]
			}
			close(p.notify)
			p.notify = make(chan struct{})
			p.mu.Unlock()
		}
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// snapshot returns the lines so far and the channel closed at the next one.
func (p *runProc) snapshot() ([]string, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lines, p.notify
}

func (p *runProc) tail() string {
	lines, _ := p.snapshot()
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// waitFor waits until cond holds. cond is checked at start and after every
// line the process prints (a checkpoint completes every 100 ms, so
// conditions about the sink's committed files are checked that often). It
// fails the test if the process exits or ctlTimeout passes first.
func (p *runProc) waitFor(desc string, cond func(lines []string) bool) {
	p.t.Helper()
	p.waitForWhy(func() string { return desc }, cond)
}

// waitForWhy is waitFor with a description computed when it fails (it may
// tell what cond saw last).
func (p *runProc) waitForWhy(desc func() string, cond func(lines []string) bool) {
	p.t.Helper()
	timer := time.NewTimer(ctlTimeout)
	defer timer.Stop()
	for {
		lines, next := p.snapshot()
		if cond(lines) {
			return
		}
		select {
		case <-next:
		case <-p.exited:
			lines, _ := p.snapshot()
			if cond(lines) {
				return
			}
			p.t.Fatalf("%s: exited (%v) before %s\n%s", p.name, p.err, desc(), p.tail())
		case <-timer.C:
			p.t.Fatalf("%s: not %s within %v\n%s", p.name, desc(), ctlTimeout, p.tail())
		}
	}
}

// waitLine waits for a line matching re and returns its submatches.
func (p *runProc) waitLine(re *regexp.Regexp) []string {
	p.t.Helper()
	var m []string
	p.waitFor("printing a line matching "+re.String(), func(lines []string) bool {
		for _, l := range lines {
			if m = re.FindStringSubmatch(l); m != nil {
				return true
			}
		}
		return false
	})
	return m
}

// job returns the id of the job the process submitted (waiting for it).
func (p *runProc) job() string {
	p.t.Helper()
	return p.waitLine(reSubmittedAny)[1]
}

// wait waits for the process to exit and returns its exit code.
func (p *runProc) wait() int {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(ctlTimeout):
		p.t.Fatalf("%s: did not exit within %v\n%s", p.name, ctlTimeout, p.tail())
	}
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &ee):
		return ee.ExitCode()
	}
	p.t.Fatalf("%s: %v", p.name, p.err)
	return -1
}

// summaryLine returns the final summary line of the job (FINISHED,
// CANCELED or FAILED), or "" when there is none.
func (p *runProc) summaryLine() string {
	lines, _ := p.snapshot()
	re := regexp.MustCompile(`^job [0-9a-f]{32} \([^)]*\) (FINISHED|CANCELED|FAILED)`)
	for _, l := range lines {
		if re.MatchString(l) {
			return l
		}
	}
	return ""
}

// cliResult is what a CLI verb printed and its exit code.
type cliResult struct {
	stdout, stderr string
	code           int
}

// cli runs `streamsql <args...>` in dir to completion.
func cli(t *testing.T, dir string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ctlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, streamsqlBin(t), args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := cliResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("streamsql %s did not end within %v:\n%s%s", strings.Join(args, " "), ctlTimeout, r.stdout, r.stderr)
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("streamsql %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// mustCLI runs a verb that must succeed.
func mustCLI(t *testing.T, dir string, args ...string) cliResult {
	t.Helper()
	r := cli(t, dir, args...)
	if r.code != 0 {
		t.Fatalf("streamsql %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

var reSavepointPath = regexp.MustCompile(`(?m)^Savepoint completed\. Path: (\S+)$`)

// savepointPath returns the path a `savepoint` or `stop` verb printed and
// checks that its _metadata is there.
func savepointPath(t *testing.T, r cliResult) string {
	t.Helper()
	m := reSavepointPath.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no 'Savepoint completed. Path: ...' line:\n%s%s", r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(m[1], "_metadata")); err != nil {
		t.Fatalf("the savepoint %s was reported complete, but: %v", m[1], err)
	}
	return m[1]
}

// listJobs runs `streamsql list` and returns the job ids of RUNNING jobs.
func listJobs(t *testing.T, dir string) []string {
	t.Helper()
	r := mustCLI(t, dir, "list")
	re := regexp.MustCompile(`\|\s*\d+\s*\|\s*([0-9a-f]{32})\s*\|[^|]*\|\s*RUNNING\s*\|`)
	var ids []string
	for _, m := range re.FindAllStringSubmatch(r.stdout, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// sqlQuote quotes s for a SQL string literal.
func sqlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// writeFile writes a file of the test and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// committed folds the sink's committed files into one row per key: every
// +I/+U adds a row, every -U/-D removes an equal one (in any file order).
// It reports false when a key has more than one row left or a retraction
// removed a row that was never committed.
func committed(t *testing.T, dir string) (map[string]agg, bool) {
	t.Helper()
	rows, retracted := foldSigned(t, dir)
	return rows, len(retracted) == 0 && !hasDuplicates(t, dir)
}

// foldSigned folds the sink's committed files like committed, returning
// the single row left per key and, separately, the retractions of rows
// the directory never held (a restored job retracting the value it had in
// its savepoint, when its output goes to a new directory). A key with more
// than one row left or more than one unmatched retraction fails the test.
func foldSigned(t *testing.T, dir string) (rows, retracted map[string]agg) {
	t.Helper()
	rows, retracted = map[string]agg{}, map[string]agg{}
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return rows, retracted
	}
	for k, net := range netRows(t, dir) {
		for a, n := range net {
			switch {
			case n == 1:
				if _, dup := rows[k]; dup {
					rows[k] = agg{-1, -1}
				} else {
					rows[k] = a
				}
			case n == -1:
				if _, dup := retracted[k]; dup {
					retracted[k] = agg{-1, -1}
				} else {
					retracted[k] = a
				}
			case n != 0:
				rows[k] = agg{-1, -1} // duplicates: never equal to a wanted row
			}
		}
	}
	return rows, retracted
}

// hasDuplicates reports whether a key has more than one row left.
func hasDuplicates(t *testing.T, dir string) bool {
	t.Helper()
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return false
	}
	for _, net := range netRows(t, dir) {
		left := 0
		for _, n := range net {
			if n > 0 {
				left += n
			}
		}
		if left > 1 {
			return true
		}
	}
	return false
}

// netRows reads the committed (visible) json files of a sink with columns
// k, n[, s] and returns, per key, the net count of each row value.
func netRows(t *testing.T, dir string) map[string]map[agg]int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[agg]int{}
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "_") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range bytes.Split(data, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			var rec struct {
				Op string `json:"op"`
				K  string `json:"k"`
				N  int64  `json:"n"`
				S  int64  `json:"s"`
			}
			if err := json.Unmarshal(line, &rec); err != nil {
				t.Fatalf("%s:%d: %v: %q", e.Name(), i+1, err, line)
			}
			m := out[rec.K]
			if m == nil {
				m = map[agg]int{}
				out[rec.K] = m
			}
			switch rec.Op {
			case "+I", "+U":
				m[agg{rec.N, rec.S}]++
			case "-U", "-D":
				m[agg{rec.N, rec.S}]--
			default:
				t.Fatalf("%s:%d: unknown op %q", e.Name(), i+1, rec.Op)
			}
		}
	}
	return out
}

// diffAggs describes the differences between two results ("" if equal).
func diffAggs(got, want map[string]agg) string {
	var d []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			d = append(d, fmt.Sprintf("%s: missing, want %+v", k, w))
		} else if g != w {
			d = append(d, fmt.Sprintf("%s: got %+v, want %+v", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			d = append(d, fmt.Sprintf("%s: got %+v, not expected", k, g))
		}
	}
	sort.Strings(d)
	if len(d) > 20 {
		d = append(d[:20], fmt.Sprintf("... and %d more", len(d)-20))
	}
	return strings.Join(d, "\n")
}

// lineServer accepts TCP connections on a loopback port for socket
// sources; each accepted connection is handed to the test in order.
type lineServer struct {
	ln    net.Listener
	conns chan net.Conn
}

func newLineServer(t *testing.T) *lineServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &lineServer{ln: ln, conns: make(chan net.Conn, 8)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(s.conns)
				return
			}
			s.conns <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for c := range s.conns {
			c.Close()
		}
	})
	return s
}

func (s *lineServer) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// accept returns the next connection of a socket source.
func (s *lineServer) accept(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c, ok := <-s.conns:
		if !ok {
			t.Fatal("the line server was closed")
		}
		t.Cleanup(func() { c.Close() })
		return c
	case <-time.After(ctlTimeout):
		t.Fatalf("no socket source connected within %v", ctlTimeout)
	}
	return nil
}

// typeWords writes one word per line to c.
func typeWords(t *testing.T, c net.Conn, words []string) {
	t.Helper()
	if _, err := c.Write([]byte(strings.Join(words, "\n") + "\n")); err != nil {
		t.Fatalf("typing words: %v", err)
	}
}

// wordCounts counts words, adding to base (copied).
func wordCounts(base map[string]agg, words ...[]string) map[string]agg {
	out := make(map[string]agg, len(base))
	for k, v := range base {
		out[k] = v
	}
	for _, ws := range words {
		for _, w := range ws {
			a := out[w]
			a.N++
			out[w] = a
		}
	}
	return out
}

// pollFor polls a condition of the file system, which sends no event to
// wait on, every millisecond until it holds; it fails after ctlTimeout.
func pollFor(t *testing.T, desc string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(ctlTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s within %v", desc, ctlTimeout)
		}
		time.Sleep(time.Millisecond) // a polling period, not a wait for an event
	}
}

// copyDir copies the regular files and directories under src to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatalf("copying %s to %s: %v", src, dst, err)
	}
}
