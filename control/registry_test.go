package control

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// deadPID cannot be a process: pids never reach 2^22 on Linux.
const deadPID = 1<<22 + 12345

func privateDir(t *testing.T) *Registry {
	t.Helper()
	return &Registry{Dir: filepath.Join(t.TempDir(), "streamsql")}
}

func writeEntry(t *testing.T, r *Registry, name string, e any) string {
	t.Helper()
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(r.Dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRegistry(t *testing.T) {
	r := privateDir(t)
	if list, err := r.List(); err != nil || len(list) != 0 {
		t.Fatalf("missing directory: %v %v", list, err)
	}
	const token = "0123456789abcdef0123"
	reg, err := r.Register(Entry{URL: "http://127.0.0.1:1", TokenSHA256: HashToken(token), Command: "run x.sql"})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(r.Dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v %v", fi.Mode(), err)
	}
	own := filepath.Join(r.Dir, strconv.Itoa(os.Getpid())+".json")
	fi, err = os.Stat(own)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("entry mode %v %v", fi.Mode(), err)
	}
	data, _ := os.ReadFile(own)
	if strings.Contains(string(data), token) {
		t.Fatalf("the entry holds the token:\n%s", data)
	}

	// Stale entries: a dead pid, our pid with another start time (pid
	// reuse), a file that is not JSON, a mismatching pid.
	stale := []string{
		writeEntry(t, r, strconv.Itoa(deadPID)+".json", Entry{PID: deadPID, URL: "http://127.0.0.1:2"}),
		writeEntry(t, r, "1.json", Entry{PID: 2, URL: "http://127.0.0.1:3"}),
	}
	if start, ok := procStart(os.Getppid()); ok {
		stale = append(stale, writeEntry(t, r, strconv.Itoa(os.Getppid())+".json",
			Entry{PID: os.Getppid(), ProcStart: start + 1, URL: "http://127.0.0.1:4"}))
	}
	garbage := filepath.Join(r.Dir, "77.json")
	if err := os.WriteFile(garbage, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	stale = append(stale, garbage)
	other := writeEntry(t, r, "notes.txt", "kept")

	list, err := r.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].PID != os.Getpid() || list[0].URL != "http://127.0.0.1:1" || !list[0].NeedsToken() ||
		!list[0].TokenMatches(token) || list[0].TokenMatches("0123456789abcdef012") || list[0].Command != "run x.sql" {
		t.Fatalf("list: %+v", list)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("stale entry %s was not removed", filepath.Base(p))
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a file that is no entry was removed: %v", err)
	}
	if err := reg.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := reg.Remove(); err != nil {
		t.Fatalf("second Remove: %v", err)
	}
	if list, _ := r.List(); len(list) != 0 {
		t.Fatalf("after Remove: %+v", list)
	}
}

func TestRegistryMustBePrivate(t *testing.T) {
	r := privateDir(t)
	if err := os.Mkdir(r.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(r.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{"Register": func() error { _, err := r.Register(Entry{URL: "x"}); return err }(),
		"List": func() error { _, err := r.List(); return err }()} {
		if err == nil || !strings.Contains(err.Error(), "mode 0755: it must be private") {
			t.Errorf("%s: %v", name, err)
		}
	}
	link := &Registry{Dir: filepath.Join(t.TempDir(), "link")}
	if err := os.Symlink(r.Dir, link.Dir); err != nil {
		t.Fatal(err)
	}
	if _, err := link.List(); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("symlink: %v", err)
	}
}

func TestRuntimeDir(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	if got := RuntimeDir(); got != "/run/user/1000/streamsql" {
		t.Errorf("RuntimeDir = %s", got)
	}
	t.Setenv("XDG_RUNTIME_DIR", "relative")
	if got, want := RuntimeDir(), filepath.Join(os.TempDir(), "streamsql-"+strconv.Itoa(os.Getuid())); got != want {
		t.Errorf("RuntimeDir = %s, want %s", got, want)
	}
}

// TestDiscoverAndFindJob registers three "processes" (test servers under
// fake entries: this process, its parent, and one that needs a token).
func TestDiscoverAndFindJob(t *testing.T) {
	r := privateDir(t)
	const token = "discover-token-0123"
	a := newFake()
	b := newFake()
	b.jobs = []JobDetails{{ID: "cccc3333", Name: "four", State: StateRunning},
		{ID: "ffff0001", State: StateRunning}, {ID: "ffff0002", State: StateRunning}}
	c := newFake()
	c.jobs = []JobDetails{{ID: "dddd4444", Name: "five", State: StateRunning}}
	_, ha := startTest(t, a, "")
	_, hb := startTest(t, b, "")
	_, hc := startTest(t, c, token)
	if _, err := r.Register(Entry{URL: ha.URL}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register(Entry{PID: os.Getppid(), URL: hb.URL}); err != nil {
		t.Fatal(err)
	}
	gone := httptest.NewServer(nil)
	gone.Close()
	if _, err := r.Register(Entry{PID: 1, URL: gone.URL}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	procs, err := Discover(ctx, r, "")
	if err != nil || len(procs) != 3 {
		t.Fatalf("Discover: %+v %v", procs, err)
	}
	// Entry of pid 1 (init) answers nothing.
	if procs[0].Entry.PID != 1 || procs[0].Err == nil || !strings.Contains(procs[0].Err.Error(), "did not answer") {
		t.Fatalf("unreachable process: %+v", procs[0])
	}

	// The token-protected process: replace our own entry by it.
	if _, err := r.Register(Entry{URL: hc.URL, TokenSHA256: HashToken(token)}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id, token string
		want      string // job found, or an error substring
	}{
		{"cccc3333", "", "four"},
		{"cccc", "", "four"},
		{"dddd4444", "", "requires a REST token: set STREAMSQL_REST_TOKEN"},
		{"dddd4444", "wrong-token-0123456", "STREAMSQL_REST_TOKEN is not its rest.token"},
		{"dddd4444", token, "five"},
		{"eeee", token, "no local streamsql process runs job 'eeee'"},
		{"ffff", token, "job id 'ffff' is ambiguous: it matches ffff0001, ffff0002"},
	}
	for _, tc := range tests {
		cl, _, job, err := FindJob(ctx, r, tc.token, tc.id)
		if err != nil {
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("FindJob(%q): %v, want %q", tc.id, err, tc.want)
			}
			continue
		}
		if job.Name != tc.want {
			t.Errorf("FindJob(%q) = %+v, want %s", tc.id, job, tc.want)
			continue
		}
		if _, err := cl.Job(ctx, job.ID); err != nil {
			t.Errorf("client of FindJob(%q): %v", tc.id, err)
		}
	}
}
