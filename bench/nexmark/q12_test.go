package nexmark

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/internal/memtest"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/session"
)

// steppingClock is a processing-time clock (exec.TimerClock) that moves by
// step at every reading, so that a job's time advances with its work (each
// batch reads the clock) and never with the wall clock: windows of q12
// open and fire while the stream runs, at no sleep. Its timers fire when a
// reading passes them.
type steppingClock struct {
	mu     sync.Mutex
	now    time.Time
	step   time.Duration
	timers []stepTimer
}

type stepTimer struct {
	at time.Time
	c  chan time.Time
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			t.c <- c.now
		} else {
			kept = append(kept, t)
		}
	}
	c.timers = kept
	return c.now
}

func (c *steppingClock) NewTimer(at time.Time) (<-chan time.Time, func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := stepTimer{at: at, c: make(chan time.Time, 1)}
	if !at.After(c.now) {
		t.c <- c.now
		return t.c, func() bool { return false }
	}
	c.timers = append(c.timers, t)
	return t.c, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.timers {
			if x.c == t.c {
				c.timers = append(c.timers[:i], c.timers[i+1:]...)
				return true
			}
		}
		return false
	}
}

var _ exec.TimerClock = (*steppingClock)(nil)

// runScriptClock is runScript with the session's jobs on clock (nil: the
// wall clock).
func runScriptClock(t *testing.T, script string, clock exec.Clock, crashAfter int64) {
	t.Helper()
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	s := session.New(session.Config{})
	s.Mem = mem
	defer s.Close()
	if clock != nil {
		s.Clock = clock
	}
	if crashAfter > 0 {
		script = fmt.Sprintf(`SET 'execution.checkpointing.interval' = '1 h';
SET 'state.checkpoints.dir' = '%s';
SET 'restart-strategy.type' = 'fixed-delay';
SET 'restart-strategy.fixed-delay.attempts' = '1';
SET 'restart-strategy.fixed-delay.delay' = '0 ms';
`, t.TempDir()) + script
		s.CheckpointTestHook = func(c *exec.CheckpointConfig) { c.TriggerEveryBatch, c.FailAfter = true, crashAfter }
		defer func() {
			for _, j := range s.Jobs() {
				if j.Attempts != 2 || len(j.Failures) != 1 || !strings.Contains(j.Failures[0], "injected crash") {
					t.Errorf("job %s: %d attempts, failures %q: the crash after checkpoint %d did not happen once", j.Name, j.Attempts, j.Failures, crashAfter)
				}
			}
		}()
	}
	stmts, err := parser.ParseScript(script)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, st := range stmts {
		if _, err := s.Execute(ctx, st); err != nil {
			t.Fatalf("%s: %v", st.SQL(), err)
		}
	}
	if err := s.WaitJobs(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestNexmarkQ12 runs q12 (bids per bidder per 10 s processing-time
// window) as the benchmark writes it, on a clock that advances with every
// reading. Which window a bid falls into depends on when it arrives, so
// the check is what holds at any timing: every window is 10 s and aligned
// to 10 s, a (bidder, window) is emitted once, the windows' counts of a
// bidder add up to its bids (SQLite over the same bids), and the stream
// spanned several windows.
func TestNexmarkQ12(t *testing.T) {
	vars := map[string]string{"EVENTS_NUM": goldenEvents, "TPS": "10000"}
	bids := exportBids(t, t.TempDir(), vars)
	want := map[string]int64{}
	for _, r := range sqliteAnswer(t, bids, `SELECT bidder, count(*) FROM bid GROUP BY bidder`) {
		f := strings.Split(r, "|")
		n, _ := strconv.ParseInt(f[1], 10, 64)
		want[f[0]] = n
	}
	if len(want) == 0 {
		t.Fatal("no bids")
	}
	script, err := Script("q12", vars)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, v := range []struct {
		name, settings string
		step           time.Duration
		crashAfter     int64
	}{
		{"p1", "SET 'parallelism.default' = '1';\n", time.Second, 0},
		{"p3-batch7", "SET 'parallelism.default' = '3';\nSET 'execution.batch-size' = '7';\n", 20 * time.Millisecond, 0},
		{"p2-crash", "SET 'parallelism.default' = '2';\nSET 'execution.batch-size' = '500';\n", 500 * time.Millisecond, 20},
	} {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			sc := blackhole.ReplaceAllString(script, fmt.Sprintf("'connector' = 'filesystem', 'path' = '%s', 'format' = 'json'", dir))
			runScriptClock(t, v.settings+sc, &steppingClock{now: start, step: v.step}, v.crashAfter)
			rows := foldJSON(t, dir)
			got := map[string]int64{}
			windows := map[int64]bool{}
			seen := map[string]bool{}
			for _, r := range rows {
				f := strings.Split(r, "|")
				if len(f) != 4 {
					t.Fatalf("row %q: want bidder|bid_count|starttime|endtime", r)
				}
				n, _ := strconv.ParseInt(f[1], 10, 64)
				s, e := parseTS(t, f[2]), parseTS(t, f[3])
				if e-s != 10_000 || s%10_000 != 0 || s < start.UnixMilli() {
					t.Fatalf("row %q: the window is not a 10 s window aligned to 10 s", r)
				}
				if k := f[0] + "|" + f[2]; seen[k] {
					t.Fatalf("bidder %s: window %s emitted twice", f[0], f[2])
				} else {
					seen[k] = true
				}
				if n <= 0 {
					t.Fatalf("row %q: an empty window", r)
				}
				got[f[0]] += n
				windows[s] = true
			}
			for b, n := range want {
				if got[b] != n {
					t.Errorf("bidder %s: %d bids over all windows, SQLite counts %d", b, got[b], n)
				}
			}
			for b := range got {
				if _, ok := want[b]; !ok {
					t.Errorf("bidder %s: not a bidder of the stream", b)
				}
			}
			t.Logf("%d rows, %d windows", len(rows), len(windows))
			if len(windows) < 2 {
				t.Errorf("the stream spanned %d windows, want several (the clock did not advance?)", len(windows))
			}
		})
	}
}

var tsText = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?$`)

func parseTS(t *testing.T, s string) int64 {
	t.Helper()
	if !tsText.MatchString(s) {
		t.Fatalf("%q is not a TIMESTAMP(3)", s)
	}
	ts, err := time.Parse("2006-01-02 15:04:05.999999999", s)
	if err != nil {
		t.Fatal(err)
	}
	return ts.UnixMilli()
}
