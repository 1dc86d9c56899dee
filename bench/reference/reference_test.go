package reference

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/streamsql/streamsql/internal/memtest"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/bench/nexmark"
	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/session"
)

// engineOutput runs query in the engine (parallelism 1, the default batch
// size 1024, as the kernels) with its blackhole sink written as JSON files
// and folds the changelog: the rows of the final result (canonical text,
// see canonJSON) with their multiplicity, and how many rows of each change
// kind it emitted.
func engineOutput(t *testing.T, query string, vars map[string]string, edit func(string) string) (map[string]int, map[string]int) {
	t.Helper()
	script, err := nexmark.Script(query, vars)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		script = edit(script)
	}
	dir := t.TempDir()
	bh := regexp.MustCompile(`'connector'\s*=\s*'blackhole'`)
	if !bh.MatchString(script) {
		t.Fatalf("%s has no blackhole sink", query)
	}
	script = bh.ReplaceAllString(script, fmt.Sprintf("'connector' = 'filesystem', 'path' = '%s', 'format' = 'json'", dir))
	stmts, err := parser.ParseScript("SET 'parallelism.default' = '1';\nSET 'execution.batch-size' = '1024';\n" + script)
	if err != nil {
		t.Fatal(err)
	}
	s := session.New(session.Config{})
	defer s.Close()
	ctx := context.Background()
	for _, st := range stmts {
		if _, err := s.Execute(ctx, st); err != nil {
			t.Fatalf("%s: %v", st.SQL(), err)
		}
	}
	if err := s.WaitJobs(ctx); err != nil {
		t.Fatal(err)
	}
	rows, ops := map[string]int{}, map[string]int{}
	files, _ := filepath.Glob(filepath.Join(dir, "part-*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if line == "" {
				continue
			}
			op, row := canonJSON(t, line)
			ops[op]++
			if op == "+I" || op == "+U" {
				rows[row]++
			} else {
				rows[row]--
			}
		}
	}
	for r, n := range rows {
		if n < 0 {
			t.Fatalf("engine: row retracted more often than added: %s", r)
		}
		if n == 0 {
			delete(rows, r)
		}
	}
	return rows, ops
}

// canonJSON renders a JSON line of the file sink: its fields in order,
// joined by |; numbers as exact rationals, dateTime as epoch milliseconds.
func canonJSON(t *testing.T, line string) (op, row string) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	op = "+I"
	var vals []string
	for dec.More() {
		k, _ := dec.Token()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		switch {
		case k == "op":
			op = v.(string)
			continue
		case k == "dateTime":
			ts, err := time.Parse("2006-01-02 15:04:05.999999999", v.(string))
			if err != nil {
				t.Fatal(err)
			}
			vals = append(vals, strconv.FormatInt(ts.UnixMilli(), 10))
		default:
			switch x := v.(type) {
			case json.Number:
				r, ok := new(big.Rat).SetString(x.String())
				if !ok {
					t.Fatalf("%s: bad number %s", line, x)
				}
				vals = append(vals, r.RatString())
			case string:
				vals = append(vals, x)
			case nil:
				vals = append(vals, "NULL")
			default:
				t.Fatalf("%s: unexpected value %v", line, v)
			}
		}
	}
	return op, strings.Join(vals, "|")
}

// kernelOutput runs query's kernel over the same events and folds its
// output the same way.
func kernelOutput(t *testing.T, query string, vars map[string]string, edit func(string) string, events int64) (map[string]int, map[string]int, Result) {
	t.Helper()
	rows, ops := map[string]int{}, map[string]int{}
	add := func(op exec.RowKind, row string) {
		ops[op.String()]++
		if op.IsAdd() {
			rows[row]++
		} else if rows[row]--; rows[row] == 0 {
			delete(rows, row)
		}
	}
	mem := memtest.NewChecked()
	res, err := run(context.Background(), config{query: query, events: events, batch: 1024, vars: vars, edit: edit, mem: mem,
		onOut: func(k kernel) {
			switch k := k.(type) {
			case *q1:
				for i := range k.auction {
					price := new(big.Rat).SetFrac(k.price[i].BigInt(), big.NewInt(1000))
					add(exec.Insert, fmt.Sprintf("%d|%d|%s|%d|%s", k.auction[i], k.bidder[i], price.RatString(),
						int64(k.dateTime[i]), k.extra[k.extraOff[i]:k.extraOff[i+1]]))
				}
			case *q2:
				for i := range k.auction {
					add(exec.Insert, fmt.Sprintf("%d|%d", k.auction[i], k.price[i]))
				}
			case *q5:
				for i := range k.Auction {
					add(exec.Insert, fmt.Sprintf("%d|%d", k.Auction[i], k.Num[i]))
				}
			case *q17:
				for i := range k.Auction {
					add(k.Ops[i], fmt.Sprintf("%d|%s|%d|%d|%d|%d|%d|%d|%d|%d", k.Auction[i], k.Day[k.DayOff[i]:k.DayOff[i+1]],
						k.Total[i], k.Rank1[i], k.Rank2[i], k.Rank3[i], k.Min[i], k.Max[i], k.Avg[i], k.Sum[i]))
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	return rows, ops, res
}

func diffRows(t *testing.T, what string, want, got map[string]int) {
	t.Helper()
	var bad []string
	for r, n := range want {
		if got[r] != n {
			bad = append(bad, fmt.Sprintf("%s: engine %d, kernel %d", r, n, got[r]))
		}
	}
	for r, n := range got {
		if _, ok := want[r]; !ok {
			bad = append(bad, fmt.Sprintf("%s: engine 0, kernel %d", r, n))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		if len(bad) > 10 {
			bad = append(bad[:10], fmt.Sprintf("... %d more", len(bad)-10))
		}
		t.Fatalf("%s: %d rows differ:\n%s", what, len(bad), strings.Join(bad, "\n"))
	}
}

func total(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// TestKernelsMatchEngine: each kernel's output equals the engine's output
// of the same query file over the same events: the multiset of rows for
// q1, q2 and q5 (the engine's q5 is an updating join; its folded result),
// and for q17 the final row of every key and the number of +I, -U and +U
// rows (the same per-batch granularity).
func TestKernelsMatchEngine(t *testing.T) {
	// no hot auction: bids spread evenly over the auctions in flight, so
	// q5's windows have ties for the maximum
	noHot := func(s string) string {
		return strings.Replace(s, "'connector' = 'nexmark',", "'connector' = 'nexmark', 'bid.hot-ratio.auctions' = '1',", 1)
	}
	for _, c := range []struct {
		query  string
		events int64
		tps    string
		edit   func(string) string
	}{
		{"q1", 20_000, "1000", nil},
		{"q2", 50_000, "1000", nil},
		{"q5", 5_000, "", nil},      // one set of windows, fired by the end of the input
		{"q5", 60_000, "1000", nil}, // 60 s: 30 panes, windows fired by the watermark
		{"q5", 20_000, "10", noHot}, // 2000 s, a few bids a window: ties
		{"q17", 20_000, "", nil},    // many updates per key
		{"q17", 100_000, "1", nil},  // 28 hours: two days
	} {
		name := fmt.Sprintf("%s/%d/tps=%s/hot=%v", c.query, c.events, c.tps, c.edit == nil)
		t.Run(name, func(t *testing.T) {
			vars := map[string]string{"EVENTS_NUM": strconv.FormatInt(c.events, 10)}
			if c.tps != "" {
				vars["TPS"] = c.tps
			}
			want, wantOps := engineOutput(t, c.query, vars, c.edit)
			got, gotOps, res := kernelOutput(t, c.query, vars, c.edit, c.events)
			if len(want) == 0 {
				t.Fatal("the engine produced no rows")
			}
			if res.Events != c.events {
				t.Fatalf("kernel saw %d events, want %d", res.Events, c.events)
			}
			diffRows(t, c.query, want, got)
			if c.query == "q17" {
				for _, op := range []string{"+I", "-U", "+U", "-D"} {
					if wantOps[op] != gotOps[op] {
						t.Fatalf("%s rows: engine %d, kernel %d", op, wantOps[op], gotOps[op])
					}
				}
				if wantOps["-U"] == 0 {
					t.Fatal("no updates: the test does not exercise the changelog")
				}
				if int64(total(wantOps)) != res.OutRows {
					t.Fatalf("OutRows %d, the engine's changelog has %d rows", res.OutRows, total(wantOps))
				}
			} else if int64(total(want)) != res.OutRows {
				t.Fatalf("OutRows %d, want %d", res.OutRows, total(want))
			}
			t.Logf("%d result rows, engine changelog %v", total(want), wantOps)
		})
	}
}

// TestSourceColumns: the columns the source is told to generate come from
// the engine's plan of each query (what it pushes down); they are pinned
// here so that a change of the push-down shows.
func TestSourceColumns(t *testing.T) {
	const base = "auction.dateTime bid.dateTime event_type person.dateTime"
	want := map[string]string{
		"q1":  "bid.auction bid.bidder bid.extra bid.price",
		"q2":  "bid.auction bid.price",
		"q5":  "bid.auction",
		"q17": "bid.auction bid.price",
	}
	for _, q := range Queries() {
		src, err := plan(q, map[string]string{"EVENTS_NUM": "1000"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		w := strings.Fields(base + " " + want[q])
		sort.Strings(w)
		if got := readColumns(src); got != strings.Join(w, " ") {
			t.Errorf("%s: the source reads %q, want %q", q, got, strings.Join(w, " "))
		}
	}
}

func TestUnknownQuery(t *testing.T) {
	if _, err := Run(context.Background(), "q3", 1000, 1024); err == nil {
		t.Fatal("q3 has no kernel: want an error")
	}
	if _, err := Run(context.Background(), "q1", 0, 1024); err == nil {
		t.Fatal("0 events: want an error")
	}
}

// TestRun: the public entry point over the benchmark's options.
func TestRun(t *testing.T) {
	for _, q := range Queries() {
		res, err := Run(context.Background(), q, 30_000, 1024)
		if err != nil {
			t.Fatal(err)
		}
		if res.Events != 30_000 || res.OutRows == 0 || res.CPU <= 0 || res.Wall <= 0 {
			t.Fatalf("%s: %+v", q, res)
		}
	}
}

// batches generates n batches of query's source (the test owns them).
func batches(t testing.TB, query string, n int, extra map[string]string, mem memory.Allocator) []arrow.Record {
	t.Helper()
	c := config{query: query, events: int64(n) * 1024, batch: 1024, vars: extra, mem: mem}
	src, err := plan(query, vars(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := src.open(c)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var recs []arrow.Record
	if err := s.Run(context.Background(), func(rec arrow.Record) error {
		if rec != nil {
			recs = append(recs, rec)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestKernelsDoNotAllocate: in steady state a kernel allocates nothing per
// batch: over a reused batch exactly nothing; over a stream of fresh
// batches (TPS 1000: windows fire every other batch, q17 creates groups)
// nothing for q1 and q2, and at most the amortized growth of the state for
// q5 and q17 (well under one allocation per 20 batches).
func TestKernelsDoNotAllocate(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	for _, q := range Queries() {
		t.Run(q, func(t *testing.T) {
			recs := batches(t, q, 400, map[string]string{"TPS": "1000"}, mem)
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			src, err := plan(q, map[string]string{"EVENTS_NUM": "1000"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			k, err := newKernel(q, src.schema.Arrow())
			if err != nil {
				t.Fatal(err)
			}
			half := len(recs) / 2
			for _, r := range recs[:half] {
				k.process(r)
			}
			// MemStats counts the whole process's allocations: a stray one
			// of another goroutine (the runtime, the test framework) is
			// not the kernel's. The pass is measured three times (the
			// same batches again) and the fewest count; an allocation of
			// the kernel shows in every pass.
			allocs := uint64(math.MaxUint64)
			for try := 0; try < 3 && allocs > 0; try++ {
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				for _, r := range recs[half:] {
					k.process(r)
				}
				runtime.ReadMemStats(&m1)
				allocs = min(allocs, m1.Mallocs-m0.Mallocs)
			}
			limit := uint64(0)
			if q == "q5" || q == "q17" {
				limit = uint64(len(recs)-half) / 20
			}
			t.Logf("%d allocations over %d fresh batches after %d", allocs, len(recs)-half, half)
			if allocs > limit {
				t.Errorf("%d allocations over %d fresh batches, want <= %d", allocs, len(recs)-half, limit)
			}
			if n := testing.AllocsPerRun(20, func() { k.process(recs[len(recs)-1]) }); n != 0 {
				t.Errorf("%v allocations per reused batch, want 0", n)
			}
			k.finish()
			if k.outRows() == 0 {
				t.Error("no output")
			}
		})
	}
}

// BenchmarkReference runs each kernel through Run (generation, kernel and
// the generator-only pass): events per CPU-second of the whole process,
// the kernel's share of CPU (by the generator-only pass), and the
// generator's events per CPU-second. BenchmarkKernel times the kernels
// alone.
// REF_EVENTS sets the events (default 5 M).
func BenchmarkReference(b *testing.B) {
	events := int64(5_000_000)
	if v, err := strconv.ParseInt(os.Getenv("REF_EVENTS"), 10, 64); err == nil && v > 0 {
		events = v
	}
	for _, q := range Queries() {
		b.Run(q, func(b *testing.B) {
			var cpu, gen, wall time.Duration
			var out int64
			for i := 0; i < b.N; i++ {
				res, err := Run(context.Background(), q, events, 1024)
				if err != nil {
					b.Fatal(err)
				}
				cpu, gen, wall, out = cpu+res.CPU, gen+res.GenCPU, wall+res.Wall, out+res.OutRows
			}
			ev := float64(events) * float64(b.N)
			b.ReportMetric(ev/cpu.Seconds(), "events/cpu-s")
			b.ReportMetric(ev/wall.Seconds(), "events/s")
			// (CPU - GenCPU) / CPU: the kernel's share; noise of the two
			// passes can make it negative when the kernel is cheap
			b.ReportMetric(100*(cpu-gen).Seconds()/cpu.Seconds(), "kernel-%cpu")
			b.ReportMetric(ev/gen.Seconds(), "gen-events/cpu-s")
			b.ReportMetric(float64(out)/float64(b.N), "out-rows")
		})
	}
}

// engineCPU runs query in the engine as the benchmark writes it (blackhole
// sink, parallelism 1, checkpoints off) and returns the process's CPU.
func engineCPU(b *testing.B, query string, events int64) time.Duration {
	b.Helper()
	script, err := nexmark.Script(query, map[string]string{"EVENTS_NUM": strconv.FormatInt(events, 10)})
	if err != nil {
		b.Fatal(err)
	}
	stmts, err := parser.ParseScript("SET 'parallelism.default' = '1';\n" + script)
	if err != nil {
		b.Fatal(err)
	}
	s := session.New(session.Config{})
	defer s.Close()
	ctx := context.Background()
	runtime.GC()
	cpu0 := processCPU()
	for _, st := range stmts {
		if _, err := s.Execute(ctx, st); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.WaitJobs(ctx); err != nil {
		b.Fatal(err)
	}
	return processCPU() - cpu0
}

// BenchmarkEngineRatio alternates the engine (checkpoints off) and the
// reference kernel on each query and reports both in events per
// CPU-second of the whole process and their ratio (issue 11's floor:
// engine / reference >= 0.5 for q1, q2 and q17). REF_EVENTS sets the
// events (default 5 M).
func BenchmarkEngineRatio(b *testing.B) {
	events := int64(5_000_000)
	if v, err := strconv.ParseInt(os.Getenv("REF_EVENTS"), 10, 64); err == nil && v > 0 {
		events = v
	}
	for _, q := range Queries() {
		b.Run(q, func(b *testing.B) {
			var eng, ref time.Duration
			for i := 0; i < b.N; i++ {
				eng += engineCPU(b, q, events)
				res, err := run(context.Background(), config{query: q, events: events, batch: 1024})
				if err != nil {
					b.Fatal(err)
				}
				ref += res.CPU
			}
			ev := float64(events) * float64(b.N)
			b.ReportMetric(ev/eng.Seconds(), "engine-events/cpu-s")
			b.ReportMetric(ev/ref.Seconds(), "ref-events/cpu-s")
			b.ReportMetric(ref.Seconds()/eng.Seconds(), "engine/ref")
		})
	}
}

// BenchmarkKernel times the kernels alone over 1 M pre-generated events
// (the benchmark's options): a fresh kernel per iteration, so state grows
// as in a run. ns/event and events/s of one core.
func BenchmarkKernel(b *testing.B) {
	for _, q := range Queries() {
		b.Run(q, func(b *testing.B) {
			recs := batches(b, q, 1000, nil, nil)
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			src, err := plan(q, map[string]string{"EVENTS_NUM": "1000"}, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k, _ := newKernel(q, src.schema.Arrow())
				for _, r := range recs {
					k.process(r)
				}
				k.finish()
			}
			ev := float64(len(recs)) * 1024 * float64(b.N)
			b.ReportMetric(b.Elapsed().Seconds()*1e9/ev, "ns/event")
			b.ReportMetric(ev/b.Elapsed().Seconds(), "events/s")
		})
	}
}
