package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamsql/streamsql/bench/harness"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/session"
)

// BenchmarkJoinLargeState is a regular join whose state is larger than its
// memory budget: two streams of BENCH_JOIN_KEYS rows each (default 2 M;
// the figure is 20 M), every key once on each side, the right side
// probing the left in another order, with a 40-byte payload per row, so
// that the join keeps 2 x keys rows. State in the Pebble tier
// ('state.backend.type' = 'rocksdb') with BENCH_JOIN_BUDGET_MB per subtask
// (default 1024) and the Go memory limit at BENCH_JOIN_GOMEMLIMIT_MB
// (default twice the budget), as a deployment sets GOMEMLIMIT; checkpoints every BENCH_JOIN_INTERVAL (default
// 10 s). Reported: events/s, events per CPU-second, peak RSS (VmHWM) in MiB,
// the peak live Go heap (BENCH_JOIN_HEAPPROFILE=FILE: a heap profile near
// it), the number of checkpoints, the p50 and largest checkpoint duration (sync +
// async), and the largest and last checkpoint's written bytes.
func BenchmarkJoinLargeState(b *testing.B) {
	keys := envInt("BENCH_JOIN_KEYS", 2_000_000)
	budget := envInt("BENCH_JOIN_BUDGET_MB", 1024)
	interval := os.Getenv("BENCH_JOIN_INTERVAL")
	if interval == "" {
		interval = "10 s"
	}
	backend := os.Getenv("BENCH_JOIN_BACKEND")
	if backend == "" {
		backend = "rocksdb"
	}
	limit := envInt("BENCH_JOIN_GOMEMLIMIT_MB", 2*budget)
	old := debug.SetMemoryLimit(int64(limit) << 20)
	defer debug.SetMemoryLimit(old)
	dir := b.TempDir()
	script := fmt.Sprintf(`SET 'parallelism.default' = '1';
SET 'execution.checkpointing.interval' = '%s';
SET 'state.checkpoints.dir' = '%s';
SET 'state.backend.type' = '%s';
SET 'state.backend.rocksdb.memory.fixed-per-slot' = '%d mb';
SET 'state.backend.rocksdb.localdir' = '%s';
CREATE TABLE l (id BIGINT, p STRING) WITH ('connector' = 'datagen', 'rows-per-second' = '0',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '%d', 'fields.p.length' = '40');
CREATE TABLE r (id BIGINT, q STRING) WITH ('connector' = 'datagen', 'rows-per-second' = '0',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '%d', 'fields.q.length' = '40');
CREATE TABLE out (id BIGINT, p STRING, q STRING) WITH ('connector' = 'blackhole');
INSERT INTO out SELECT l.id, l.p, r.q FROM l JOIN (SELECT MOD(id * 7919, %d) + 1 AS id, q FROM r) AS r ON l.id = r.id;
`, interval, dir+"/ck", backend, budget, dir+"/spill", keys, keys, keys)
	for i := 0; i < b.N; i++ {
		log := &checkpointLog{}
		start, cpu0 := time.Now(), processCPU()
		stop := sampleHeap(os.Getenv("BENCH_JOIN_HEAPPROFILE"))
		runJobLog(b, script, log)
		wall, cpu := time.Since(start), processCPU()-cpu0
		live, timeline := stop()
		b.ReportMetric(float64(live)/(1<<20), "peak-heap-live-MiB")
		b.Logf("RSS MiB over time: %s", timeline)
		events := float64(2 * keys)
		b.ReportMetric(events/wall.Seconds(), "events/s")
		b.ReportMetric(events/cpu.Seconds(), "events/cpu-s")
		b.ReportMetric(float64(peakRSS())/(1<<20), "peak-RSS-MiB")
		cks := log.parse()
		b.ReportMetric(float64(len(cks)), "checkpoints")
		if len(cks) > 0 {
			durs := make([]float64, len(cks))
			var maxWritten float64
			for j, c := range cks {
				durs[j] = c.ms
				maxWritten = max(maxWritten, c.written)
			}
			sort.Float64s(durs)
			b.ReportMetric(durs[len(durs)/2], "ckpt-p50-ms")
			b.ReportMetric(durs[len(durs)-1], "ckpt-max-ms")
			b.ReportMetric(maxWritten/(1<<20), "ckpt-max-written-MiB")
			b.ReportMetric(cks[len(cks)-1].size/(1<<20), "ckpt-last-size-MiB")
		}
	}
}

// sampleHeap watches the Go heap's live bytes (after each GC) and the
// process's RSS every 250 ms until stopped; it returns the largest live
// heap seen and an RSS timeline (about ten points, MiB over seconds), the
// evidence that RSS stays flat while the state grows. With a file name it
// writes a heap profile whenever the live heap grew by a tenth over the
// last one written, so the file shows the heap at (about) its peak.
func sampleHeap(profile string) (stop func() (peakLive int64, timeline string)) {
	done := make(chan struct{})
	var peak int64
	type point struct {
		at  time.Duration
		rss int64
	}
	var points []point
	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		var written int64
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			metrics.Read(sample)
			v := int64(sample[0].Value.Uint64())
			peak = max(peak, v)
			points = append(points, point{time.Since(start), currentRSS()})
			if profile != "" && v > written+written/10 {
				if f, err := os.Create(profile); err == nil {
					pprof.WriteHeapProfile(f)
					f.Close()
					written = v
				}
			}
		}
	}()
	return func() (int64, string) {
		close(done)
		wg.Wait()
		var tl strings.Builder
		step := max(len(points)/10, 1)
		for i := step - 1; i < len(points); i += step {
			fmt.Fprintf(&tl, "%.0fs:%d ", points[i].at.Seconds(), points[i].rss>>20)
		}
		return peak, tl.String()
	}
}

// currentRSS is the process's resident set size (VmRSS) in bytes.
func currentRSS() int64 { return procStatus("VmRSS:") }

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// checkpointLog collects the session log's checkpoint lines.
type checkpointLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *checkpointLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

var reCheckpointLine = regexp.MustCompile(`checkpoint \d+ complete \((\d+) bytes, (\d+) written, sync (\d+) ms, async (\d+) ms\)`)

type checkpointFig struct{ size, written, ms float64 }

func (l *checkpointLog) parse() []checkpointFig {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []checkpointFig
	sc := bufio.NewScanner(bytes.NewReader(l.buf.Bytes()))
	for sc.Scan() {
		m := reCheckpointLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		f := func(i int) float64 { v, _ := strconv.ParseFloat(m[i], 64); return v }
		out = append(out, checkpointFig{size: f(1), written: f(2), ms: f(3) + f(4)})
	}
	return out
}

// runJobLog runs a script to its end with the session's log going to w.
func runJobLog(b *testing.B, script string, w *checkpointLog) {
	b.Helper()
	s := session.New(session.Config{Log: w})
	defer s.Close()
	stmts, err := parser.ParseScript(script)
	if err != nil {
		b.Fatal(err)
	}
	for _, st := range stmts {
		if _, err := s.Execute(context.Background(), st); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.WaitJobs(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// peakRSS is the process's peak resident set size (VmHWM) in bytes.
func peakRSS() int64 { return harness.PeakRSS() }

// procStatus reads a size field of /proc/self/status in bytes (0: unknown).
func procStatus(field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, field) {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
