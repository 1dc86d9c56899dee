package harness

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRunOne runs q2 and q5 for real, checkpointed, and checks what the
// harness measured is there and consistent.
func TestRunOne(t *testing.T) {
	for _, q := range []string{"q2", "q5"} {
		t.Run(q, func(t *testing.T) {
			sp := Spec{Query: q, Parallelism: 2, Interval: 20 * time.Millisecond, Events: 300_000, Dir: t.TempDir()}
			r, err := RunOne(context.Background(), sp)
			if err != nil {
				t.Fatal(err)
			}
			if r.Wall <= 0 || r.CPU() <= 0 || r.EventsPerSec() <= 0 || r.EventsPerCPU() <= 0 {
				t.Fatalf("no time measured: %+v", r)
			}
			if r.GenCPU <= 0 || r.GenCPU >= r.CPU() {
				t.Fatalf("generator CPU %v outside (0, %v)", r.GenCPU, r.CPU())
			}
			if r.Checkpoints < 1 || r.LastSize <= 0 || r.P50MS > r.P99MS || r.P99MS > r.MaxMS {
				t.Fatalf("checkpoint figures: %+v", r)
			}
			if r.PeakRSS <= 0 {
				t.Fatalf("no peak RSS: %+v", r)
			}
		})
	}
}

func TestScriptErrors(t *testing.T) {
	for _, tc := range []struct {
		sp   Spec
		want string
	}{
		{Spec{Query: "q1", Parallelism: 0, Events: 1}, "parallelism must be at least 1"},
		{Spec{Query: "q1", Parallelism: 1, Events: 0}, "events must be at least 1"},
		{Spec{Query: "q1", Parallelism: 1, Events: 1, Backend: "leveldb"}, `state backend "leveldb"`},
		{Spec{Query: "q99", Parallelism: 1, Events: 1}, "no query file q99.sql"},
	} {
		if _, err := Script(tc.sp); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.sp, err, tc.want)
		}
	}
}

// TestReport checks the derived columns on made-up results.
func TestReport(t *testing.T) {
	sec := time.Second
	res := []Result{
		{Spec: Spec{Query: "q1", Parallelism: 1, Interval: sec, Events: 4_000_000}, Wall: 2 * sec, User: 1800 * time.Millisecond, Sys: 200 * time.Millisecond,
			GenCPU: sec, PeakRSS: 64 << 20, Checkpoints: 3, P50MS: 10, P99MS: 30, LastSize: 2048},
		{Spec: Spec{Query: "q1", Parallelism: 1, Events: 4_000_000}, Wall: 2 * sec, User: 1600 * time.Millisecond, GenCPU: sec},
		{Spec: Spec{Query: "q1", Parallelism: 2, Interval: sec, Events: 4_000_000}, Wall: sec, User: 2 * sec},
		{Spec: Spec{Query: "q1", Parallelism: 1, Events: 4_000_000, Reference: true}, Wall: sec, User: sec},
		{Spec: Spec{Query: "q5", Parallelism: 1, Interval: sec, Events: 1}, Err: "q5: boom\nmore"},
	}
	var sb strings.Builder
	Report(&sb, res)
	out := sb.String()
	for _, want := range []string{
		"| q1 ", "| 2.00 M ", // events/s and events/cpu-s of the checkpointed p1 run
		"| 4.00 M ",        // without the generator: 4 M events / 1 s
		"| 50% ",           // the generator's share
		"| 10% ",           // sys
		"| 64 MiB ",        // peak RSS
		"| 10 / 30 ",       // p50 / p99
		"| 2 KiB ",         // last size
		"| 2.50 M ",        // off: 4 M / 1.6 s
		"| +20% ",          // overhead: 1 - 2.0/2.5
		"| +25% ",          // per generator CPU: 2 s / 1 s on over 1.6 s / 1 s off
		"| 2.00x ",         // p2 over p1, wall
		"| 2.00 cores ",    // p2's 4 M events/s over p1's 2 M events per CPU-second
		"| 0.50 (4.00 M) ", // reference ratio: 2 M / 4 M
		"| 2.00 M met ",    // q1's floor is 2 M: 2.00 M meets it
		"| FAILED: q5: boom ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestSpecs(t *testing.T) {
	cfg := Config{Queries: []string{"q0", "q3"}, Parallelism: []int{1, 2}, Interval: time.Second, Baseline: true, Scale: 0.5, Dir: "/w"}
	specs := cfg.Specs()
	if len(specs) != 8 {
		t.Fatalf("got %d specs, want 8: %+v", len(specs), specs)
	}
	if specs[0].Events != DefaultEvents("q0")/2 || specs[4].Events != DefaultEvents("q3")/2 {
		t.Fatalf("scale not applied: %+v", specs)
	}
	seen := map[string]bool{}
	for _, s := range specs {
		if seen[s.Dir] {
			t.Fatalf("two runs share %s", s.Dir)
		}
		seen[s.Dir] = true
	}
	if specs[1].Interval != 0 || specs[0].Interval != time.Second {
		t.Fatalf("want a checkpointed run then its baseline: %+v", specs[:2])
	}
}

// TestTPS: --tps sets the source's events per second of event time in
// every run's script and leaves out the reference kernels (they run at the
// benchmark's rate).
func TestTPS(t *testing.T) {
	cfg := Config{Queries: []string{"q1"}, Parallelism: []int{1}, Interval: time.Second, Reference: true, TPS: 1000, Dir: "/w"}
	specs := cfg.Specs()
	if len(specs) != 1 || specs[0].TPS != 1000 {
		t.Fatalf("specs %+v", specs)
	}
	script, err := Script(specs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(script, "'first-event.rate' = '1000'") {
		t.Fatalf("script lacks the rate:\n%s", script)
	}
	cfg.TPS = 0
	if s, _ := Script(cfg.Specs()[0]); !strings.Contains(s, "'first-event.rate' = '10000000'") {
		t.Fatal("the default rate is not the benchmark's 10,000,000")
	}
}

// TestUnaligned: --unaligned sets unaligned checkpoints in the runs with
// checkpoints, not in their baselines.
func TestUnaligned(t *testing.T) {
	const key = "'execution.checkpointing.unaligned.enabled' = 'true'"
	cfg := Config{Queries: []string{"q20"}, Parallelism: []int{1}, Interval: time.Second, Baseline: true, Unaligned: true, Dir: "/w"}
	specs := cfg.Specs()
	if len(specs) != 2 {
		t.Fatalf("specs %+v", specs)
	}
	for i, want := range []bool{true, false} {
		s, err := Script(specs[i])
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(s, key) != want {
			t.Fatalf("run %d (interval %v): unaligned set %v, want %v:\n%s", i, specs[i].Interval, !want, want, s)
		}
	}
	cfg.Unaligned = false
	if s, _ := Script(cfg.Specs()[0]); strings.Contains(s, key) {
		t.Fatal("unaligned without --unaligned")
	}
}

// TestMedians: each cell is its median run by events per CPU-second (of
// an even count the faster middle one), a failed run wins, and a round
// cut short counts for the specs it ran.
func TestMedians(t *testing.T) {
	run := func(q string, cpuMS int, failed bool) Result {
		r := Result{Spec: Spec{Query: q, Events: 1000}, User: time.Duration(cpuMS) * time.Millisecond}
		if failed {
			r.Err = "boom"
		}
		return r
	}
	rounds := [][]Result{
		{run("q1", 30, false), run("q2", 10, false), run("q3", 5, false)},
		{run("q1", 10, false), run("q2", 20, true), run("q3", 7, false)},
		{run("q1", 20, false), run("q2", 30, false)},
	}
	got := Medians(rounds)
	if len(got) != 3 {
		t.Fatalf("%d cells, want 3", len(got))
	}
	if got[0].User != 20*time.Millisecond {
		t.Errorf("q1: the run of %v, want the median 20ms", got[0].User)
	}
	if got[1].Err == "" {
		t.Errorf("q2: the run of %v, want the failed one", got[1].User)
	}
	if got[2].User != 5*time.Millisecond {
		t.Errorf("q3 (two runs): the run of %v, want the faster, 5ms", got[2].User)
	}
	if Medians(nil) != nil {
		t.Error("no rounds: want no cells")
	}
}
