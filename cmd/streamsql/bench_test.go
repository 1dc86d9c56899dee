package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchNexmark runs `streamsql bench nexmark` on one small query: each
// run in a child process, the table on stdout, the measures in --json.
func TestBenchNexmark(t *testing.T) {
	dir := t.TempDir()
	r := run(t, dir, "", "bench", "nexmark", "--queries", "q2", "-p", "1", "--events", "200000",
		"--checkpoint-interval", "20ms", "--json", "out.json", "--cpuprofile-dir", "prof")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "| q2 ") || !strings.Contains(r.stdout, "| events/cpu-s ") {
		t.Fatalf("no table row for q2:\n%s", r.stdout)
	}
	var res []struct {
		Spec struct {
			Query     string `json:"query"`
			Interval  int64  `json:"interval"`
			Reference bool   `json:"reference"`
		} `json:"spec"`
		Wall        int64  `json:"wall_ns"`
		Checkpoints int    `json:"checkpoints"`
		Err         string `json:"error"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "out.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0].Spec.Interval == 0 || res[1].Spec.Interval != 0 || !res[2].Spec.Reference {
		t.Fatalf("want a checkpointed run, a baseline and q2's reference kernel, got %s", b)
	}
	for _, x := range res {
		if x.Err != "" || x.Wall <= 0 {
			t.Fatalf("run failed or unmeasured: %s", b)
		}
	}
	if !strings.Contains(r.stdout, "| q2 ") || !strings.Contains(r.stdout, " (") {
		t.Fatalf("no reference ratio in the table:\n%s", r.stdout)
	}
	if res[0].Checkpoints < 1 || res[1].Checkpoints != 0 {
		t.Fatalf("checkpoints: %s", b)
	}
	profs, _ := filepath.Glob(filepath.Join(dir, "prof", "*.prof"))
	if len(profs) != 3 {
		t.Fatalf("want 3 CPU profiles, got %v", profs)
	}

	r = run(t, dir, "", "bench", "nexmark", "--queries", "q2,q99")
	if r.code != 2 || !strings.Contains(r.stderr, `no query "q99"`) {
		t.Fatalf("exit %d, stderr %q; want a usage error naming q99", r.code, r.stderr)
	}
}
