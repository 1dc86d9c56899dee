package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// controlJob is an unbounded, checkpointed job writing JSON files.
const controlJob = `SET 'execution.checkpointing.interval' = '100 ms';
SET 'state.checkpoints.dir' = 'ck';
CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '20',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '1000000000');
CREATE TABLE out (id BIGINT) WITH ('connector' = 'filesystem', 'path' = 'out', 'format' = 'json');
INSERT INTO out SELECT id FROM src;
`

// stalePID cannot be a live process: pids never reach 2^22 on Linux.
const stalePID = 1<<22 + 12345

// privateRuntime points the job registry of this test and of the processes
// it starts at a fresh directory, and returns the registry's path.
func privateRuntime(t *testing.T) string {
	t.Helper()
	rt := filepath.Join(t.TempDir(), "rt")
	if err := os.Mkdir(rt, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", rt)
	t.Setenv("STREAMSQL_REST_TOKEN", "")
	return filepath.Join(rt, "streamsql")
}

var savepointPathRe = regexp.MustCompile(`(?m)^Savepoint completed\. Path: (\S+)$`)

// TestJobControlVerbs: `streamsql run` of an unbounded job registers
// itself; `list` shows the job and removes a stale entry; `savepoint`
// takes a savepoint; `stop --savepoint` ends the job FINISHED and the run
// process exits 0 and unregisters.
func TestJobControlVerbs(t *testing.T) {
	reg := privateRuntime(t)
	dir := writeFiles(t, map[string]string{"job.sql": controlJob})
	p := startRun(t, dir, "run", "-p", "1", "job.sql")
	own := filepath.Join(reg, strconv.Itoa(p.cmd.Process.Pid)+".json")
	if _, err := os.Stat(own); err != nil {
		t.Fatalf("the run process did not register before submitting: %v", err)
	}
	stale := filepath.Join(reg, strconv.Itoa(stalePID)+".json")
	data, _ := json.Marshal(map[string]any{"pid": stalePID, "url": "http://127.0.0.1:9"})
	if err := os.WriteFile(stale, data, 0o600); err != nil {
		t.Fatal(err)
	}

	r := run(t, dir, "", "list")
	if r.code != 0 || !regexp.MustCompile(`\|\s+`+strconv.Itoa(p.cmd.Process.Pid)+` \| `+p.jobID+` \|\s+insert-into_out \| RUNNING \| 20`).MatchString(r.stdout) {
		t.Fatalf("list: status %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("list kept the stale entry of pid %d: %v", stalePID, err)
	}

	// Savepoints of a job without default directory need one.
	r = run(t, dir, "", "stop", p.jobID)
	if r.code != 1 || !strings.Contains(r.stderr, "no savepoint directory: give --savepoint DIR") {
		t.Fatalf("stop without a directory: status %d\n%s", r.code, r.stderr)
	}

	r = run(t, dir, "", "savepoint", p.jobID[:8], "sp")
	m := savepointPathRe.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil || !strings.HasPrefix(m[1], filepath.Join(dir, "sp", "savepoint-"+p.jobID[:6]+"-")) {
		t.Fatalf("savepoint: status %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(m[1], "_metadata")); err != nil {
		t.Fatalf("savepoint %s: %v", m[1], err)
	}

	r = run(t, dir, "", "stop", "--savepoint", "sp2", p.jobID)
	m = savepointPathRe.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil || filepath.Dir(m[1]) != filepath.Join(dir, "sp2") {
		t.Fatalf("stop: status %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(m[1], "_metadata")); err != nil {
		t.Fatalf("stop savepoint %s: %v", m[1], err)
	}
	code, _, stderr := p.end(t)
	if code != 0 || !strings.Contains(stderr, "job "+p.jobID+" (insert-into_out) FINISHED") {
		t.Fatalf("run after stop: status %d\n%s", code, stderr)
	}
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Fatalf("the registry entry outlived the process: %v", err)
	}
	if r := run(t, dir, "", "list"); r.code != 0 || r.stdout != "No running jobs.\n" {
		t.Fatalf("list after exit: %q %q", r.stdout, r.stderr)
	}
}

// TestJobControlToken: a run bound to every interface refuses to start
// without a token; with one, the verbs need it too.
func TestJobControlToken(t *testing.T) {
	privateRuntime(t)
	dir := writeFiles(t, map[string]string{"job.sql": controlJob})
	r := run(t, dir, "", "run", "--set", "rest.address=0.0.0.0", "job.sql")
	if r.code != 1 || !strings.Contains(r.stderr, "rest.address '0.0.0.0' is not a loopback address: set 'rest.token'") {
		t.Fatalf("non-loopback without token: status %d\n%s", r.code, r.stderr)
	}

	const token = "job-control-test-token-42"
	p := startRun(t, dir, "run", "-p", "1", "--set", "rest.address=0.0.0.0", "--set", "rest.token="+token, "job.sql")
	r = run(t, dir, "", "list")
	if r.code != 0 || r.stdout != "No running jobs.\n" || !strings.Contains(r.stderr, "requires a REST token: set STREAMSQL_REST_TOKEN") {
		t.Fatalf("list without the token: status %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Setenv("STREAMSQL_REST_TOKEN", token)
	if r = run(t, dir, "", "list"); r.code != 0 || !strings.Contains(r.stdout, p.jobID) {
		t.Fatalf("list with the token: status %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = run(t, dir, "", "cancel", p.jobID); r.code != 0 || r.stdout != "Cancelled job "+p.jobID+".\n" {
		t.Fatalf("cancel: status %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	code, _, stderr := p.end(t)
	if !strings.Contains(stderr, "CANCELED") || strings.Contains(stderr, token) || !strings.Contains(stderr, "token job-…") {
		t.Fatalf("run after cancel: status %d\n%s", code, stderr)
	}
	if r = run(t, dir, "", "cancel", p.jobID); r.code != 1 || !strings.Contains(r.stderr, "no job '"+p.jobID+"': no streamsql process is running") {
		t.Fatalf("cancel of a gone job: status %d\n%s", r.code, r.stderr)
	}
}

func TestVerbUsage(t *testing.T) {
	privateRuntime(t)
	dir := t.TempDir()
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"savepoint"}, 2, "accepts between 1 and 2 arg(s)"},
		{[]string{"stop"}, 2, "accepts 1 arg(s)"},
		{[]string{"cancel", "a", "b"}, 2, "accepts 1 arg(s)"},
		{[]string{"list", "x"}, 2, "unknown command"},
		{[]string{"cancel", "abc"}, 1, "no job 'abc': no streamsql process is running on this machine"},
		{[]string{"savepoint", "abc", "d"}, 1, "no job 'abc'"},
	}
	for _, tc := range tests {
		r := run(t, dir, "", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: status %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
}
