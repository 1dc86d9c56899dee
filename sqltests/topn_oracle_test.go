package sqltests

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/session"
)

// TestTopNOracleSQLite compares the regular TopN and deduplication with
// SQLite's ROW_NUMBER() over a seeded random stream (out-of-order times,
// NULLs and many ties in the ranked column), folding the engine's
// changelog into a table. The stream is read by one source subtask, so
// rows of one partition arrive in file (id) order: ties of the ORDER BY
// are broken by arrival in the engine and by id in SQLite; a
// deduplication keeps, of equal times, the first row (ASC) or the last
// (DESC). Variants: parallelism 1 and 3 x batch 1, 7 and 100, and a crash
// (parallelism 2, batch size 50, a checkpoint per source batch, a crash
// after a seeded checkpoint, restored once: asserted) whose output goes through a JSON
// filesystem sink.
func TestTopNOracleSQLite(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "ev.csv")
	rng := rand.New(rand.NewSource(11))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("CREATE TABLE ev (id INTEGER, ts INTEGER, k INTEGER, k2 INTEGER, v INTEGER)"); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	tx, _ := db.Begin()
	clock := int64(0)
	const rows = 1500
	for id := 0; id < rows; id++ {
		clock += int64(rng.Intn(30))
		ts := max(clock-int64(rng.Intn(800)), 0)
		k, k2 := rng.Intn(6), rng.Intn(60)
		var v any = rng.Intn(25)
		vs := strconv.Itoa(v.(int))
		if rng.Intn(15) == 0 {
			v, vs = nil, ""
		}
		if _, err := tx.Exec("INSERT INTO ev VALUES (?, ?, ?, ?, ?)", id, ts, k, k2, v); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%d,%s,%d,%d,%s\n", id, time.UnixMilli(base+ts).UTC().Format("2006-01-02 15:04:05.000"), k, k2, vs)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(csvPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	grouped := "(SELECT k, g, SUM(v) AS s FROM (SELECT k, MOD(id, 7) AS g, v FROM ev) GROUP BY k, g)"
	groupedSQLite := "(SELECT k, g, SUM(v) AS s FROM (SELECT k, id % 7 AS g, v FROM ev) GROUP BY k, g)"
	queries := []oracleQuery{
		{name: "top3-per-key-rank",
			stream: "SELECT id, k, v, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC, id) AS rn FROM ev) WHERE rn <= 3",
			kinds:  "iiii"},
		{name: "range-no-rank",
			stream: "SELECT id, k, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v, id) AS rn FROM ev) WHERE rn BETWEEN 2 AND 4",
			kinds:  "iii"},
		{name: "range-rank",
			stream: "SELECT id, k, v, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k2 ORDER BY v) AS rn FROM ev) WHERE rn > 1 AND rn < 4",
			sqlite: "SELECT id, k, v, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k2 ORDER BY v, id) AS rn FROM ev) WHERE rn > 1 AND rn < 4",
			kinds:  "iiii"},
		{name: "ties-by-arrival",
			stream: "SELECT id, k, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM ev) WHERE rn <= 2",
			sqlite: "SELECT id, k, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC, id) AS rn FROM ev) WHERE rn <= 2",
			kinds:  "iii"},
		{name: "global-top5",
			stream: "SELECT id, v, rn FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY v DESC, id) AS rn FROM ev) WHERE rn <= 5",
			kinds:  "iii"},
		{name: "updating-input-rank",
			stream: "SELECT k, g, s, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY s DESC, g) AS rn FROM " + grouped + ") WHERE rn <= 2",
			sqlite: "SELECT k, g, s, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY s DESC, g) AS rn FROM " + groupedSQLite + ") WHERE rn <= 2",
			kinds:  "iiii"},
		{name: "updating-input-no-rank",
			stream: "SELECT k, g, s FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY s, k, g) AS rn FROM " + grouped + ") WHERE rn BETWEEN 3 AND 6",
			sqlite: "SELECT k, g, s FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY s, k, g) AS rn FROM " + groupedSQLite + ") WHERE rn BETWEEN 3 AND 6",
			kinds:  "iii"},
		{name: "updating-input-global",
			stream: "SELECT k, g, s FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY s DESC, k, g) AS rn FROM " + grouped + ") WHERE rn <= 4",
			sqlite: "SELECT k, g, s FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY s DESC, k, g) AS rn FROM " + groupedSQLite + ") WHERE rn <= 4",
			kinds:  "iii"},
		{name: "dedup-last",
			stream: "SELECT id, k2, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k2 ORDER BY ts DESC) AS rn FROM ev) WHERE rn = 1",
			sqlite: "SELECT id, k2, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k2 ORDER BY ts DESC, id DESC) AS rn FROM ev) WHERE rn = 1",
			kinds:  "iii"},
		{name: "dedup-first",
			stream: "SELECT id, k2, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k2, k ORDER BY ts) AS rn FROM ev) WHERE rn <= 1",
			sqlite: "SELECT id, k2, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k2, k ORDER BY ts, id) AS rn FROM ev) WHERE rn = 1",
			kinds:  "iii"},
	}
	want := sqliteWant(t, db, queries, true)
	ddl := "CREATE TABLE ev (id BIGINT, ts TIMESTAMP(3), k INT, k2 INT, v INT, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', 'path' = '" +
		csvPath + "', 'format' = 'csv', 'csv.null-literal' = '', 'scan.parallelism' = '1')"
	type variant struct {
		p, bs int
		rocks bool // state.backend.type 'rocksdb', a hot budget of a few keys
	}
	variants := []variant{{1, 1, false}, {1, 7, false}, {1, 100, false}, {3, 1, false}, {3, 7, false}, {3, 100, false}, {2, 7, true}}
	for _, v := range variants {
		p, bs := v.p, v.bs
		name := fmt.Sprintf("p=%d,batch=%d", p, bs)
		if v.rocks {
			name += ",rocksdb"
		}
		t.Run(name, func(t *testing.T) {
			s, done := newOracleSession(t)
			defer done()
			setup := []string{
				"SET 'parallelism.default' = '" + strconv.Itoa(p) + "'",
				"SET 'execution.batch-size' = '" + strconv.Itoa(bs) + "'",
				ddl,
			}
			if v.rocks {
				setup = append(tierSetup(t), setup...)
			}
			checkQueries(t, s, setup, nil, want)
			for _, q := range queries {
				before := state.TableTierTotals()
				// a query that ran paged the TopN and deduplication tables
				// (a global TopN has one partition: nothing to evict)
				if checkQueries(t, s, nil, []oracleQuery{q}, want) && v.rocks && !strings.HasPrefix(q.name, "global") {
					tierPaged(t, q.name, before)
				}
			}
		})
	}
	t.Run("crash", func(t *testing.T) {
		r := rand.New(rand.NewSource(crashSeed("topn_oracle")))
		for _, q := range queries {
			if !crashQueries[q.name] {
				continue
			}
			// 1500 rows in batches of 50: 30 source batches, a checkpoint
			// after each
			crashAfter := 1 + int64(r.Intn(25))
			got := crashRun(t, ddl, q, crashAfter)
			if msg := compareTables(q.kinds, want[q.name], got); msg != "" {
				t.Errorf("%s (crash after checkpoint %d): %s\nquery: %s", q.name, crashAfter, msg, q.stream)
			}
		}
	})
	// the crash with the state tier: checkpoints of tables whose keys are
	// mostly cold, restored straight into Pebble
	t.Run("crash-rocksdb", func(t *testing.T) {
		r := rand.New(rand.NewSource(crashSeed("topn_oracle_rocksdb")))
		for _, q := range queries {
			if !crashQueries[q.name] {
				continue
			}
			crashAfter := 1 + int64(r.Intn(25))
			before := state.TableTierTotals()
			got := crashRun(t, ddl, q, crashAfter, tierSetup(t)...)
			if msg := compareTables(q.kinds, want[q.name], got); msg != "" {
				t.Errorf("%s (rocksdb, crash after checkpoint %d): %s\nquery: %s", q.name, crashAfter, msg, q.stream)
			}
			tierPaged(t, q.name, before)
		}
	})
}

// crashQueries are the queries of the crash variant (each is a job with
// a checkpoint per source batch: all would make the test slow).
var crashQueries = map[string]bool{"top3-per-key-rank": true, "range-no-rank": true, "updating-input-rank": true,
	"updating-input-no-rank": true, "dedup-last": true}

// crashRun runs q as an INSERT into a JSON filesystem table at parallelism
// 2, batch size 50, with a checkpoint after every source batch and a crash
// after checkpoint crashAfter (restored once: asserted), and folds the
// files it wrote into a table.
func crashRun(t *testing.T, ddl string, q oracleQuery, crashAfter int64, setup ...string) [][]*string {
	t.Helper()
	s, done := newOracleSession(t)
	defer done()
	s.CheckpointTestHook = func(c *exec.CheckpointConfig) { c.TriggerEveryBatch, c.FailAfter = true, crashAfter }
	out := t.TempDir()
	cols := make([]string, len(q.kinds))
	for i := range cols {
		cols[i] = fmt.Sprintf("c%d BIGINT", i)
	}
	script := append(setup,
		"SET 'parallelism.default' = '2'",
		"SET 'execution.batch-size' = '50'",
		"SET 'execution.checkpointing.interval' = '1 h'",
		"SET 'state.checkpoints.dir' = '"+t.TempDir()+"'",
		"SET 'restart-strategy.type' = 'fixed-delay'",
		"SET 'restart-strategy.fixed-delay.attempts' = '1'",
		"SET 'restart-strategy.fixed-delay.delay' = '0 ms'",
		ddl,
		"CREATE TABLE out ("+strings.Join(cols, ", ")+") WITH ('connector' = 'filesystem', 'path' = '"+out+"', 'format' = 'json')",
		"INSERT INTO out "+q.stream,
	)
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	for _, text := range script {
		st, err := parser.Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if _, err := s.Execute(ctx, st); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
	}
	if err := s.WaitJobs(ctx); err != nil {
		t.Fatal(err)
	}
	for _, j := range s.Jobs() {
		if j.Attempts != 2 || len(j.Failures) != 1 || !strings.Contains(j.Failures[0], "injected crash") {
			t.Fatalf("%s: job %s: %d attempts, failures %q: the crash after checkpoint %d did not happen once", q.name, j.Name, j.Attempts, j.Failures, crashAfter)
		}
	}
	counts := map[string]int{}
	rowsOf := map[string][]*string{}
	files, _ := filepath.Glob(filepath.Join(out, "part-*"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if line == "" {
				continue
			}
			var m map[string]any
			dec := json.NewDecoder(strings.NewReader(line))
			dec.UseNumber()
			if err := dec.Decode(&m); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			row := make([]*string, len(q.kinds))
			for i := range row {
				if v := m[fmt.Sprintf("c%d", i)]; v != nil {
					s := fmt.Sprint(v)
					row[i] = &s
				}
			}
			key := strings.Join(changeValues(session.Change{Values: row}, "\x00NULL"), "\x01")
			rowsOf[key] = row
			if op, _ := m["op"].(string); op == "-U" || op == "-D" {
				counts[key]--
			} else {
				counts[key]++
			}
		}
	}
	var got [][]*string
	for k, n := range counts {
		if n < 0 {
			t.Fatalf("%s: a retraction of a row not in the table: %q", q.name, k)
		}
		for ; n > 0; n-- {
			got = append(got, rowsOf[k])
		}
	}
	return got
}

// TestOverOracleSQLite compares OVER aggregations on an event-time
// attribute with SQLite's window functions over a seeded random stream
// with bounded disorder and NULLs. Which rows are late is computed here
// from the watermark the rows before each row imply (max time - 1 s -
// 1 ms, as Flink's bounded out-of-orderness): a row is late when its key
// (or, without PARTITION BY, the stream) has processed a row at its time
// or later, rows being processed when the watermark rises past them; SQLite
// aggregates the rows that are not late, ROWS frames in (time, arrival)
// order, RANGE frames with peers.
func TestOverOracleSQLite(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "ev.csv")
	rng := rand.New(rand.NewSource(13))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("CREATE TABLE ev (id INTEGER, ts INTEGER, k INTEGER, v INTEGER, late INTEGER, late_global INTEGER)"); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	tx, _ := db.Begin()
	clock, maxTs := int64(0), int64(math.MinInt64)
	// per group (5 keys, or all rows in one group): times accepted, not
	// yet processed; the last time processed. Timers fire when the
	// watermark rises (as Flink's): a row accepted at a time <= the
	// watermark waits for the next rise.
	type group struct {
		pending []int64
		last    int64
		fired   int64 // the watermark the group's timers last fired at
	}
	keyed, global := map[int]*group{}, &group{last: math.MinInt64, fired: math.MinInt64}
	isLate := func(gr *group, ts, wm int64) bool {
		if wm > gr.fired {
			rest := gr.pending[:0]
			for _, p := range gr.pending {
				if p <= wm {
					gr.last = max(gr.last, p)
				} else {
					rest = append(rest, p)
				}
			}
			gr.pending, gr.fired = rest, wm
		}
		if ts <= gr.last {
			return true
		}
		gr.pending = append(gr.pending, ts)
		return false
	}
	lateRows := 0
	for id := 0; id < 1500; id++ {
		clock += int64(rng.Intn(40))
		ts := max(clock-int64(rng.Intn(1500)), 0)
		k := rng.Intn(5)
		var v any = rng.Intn(30) - 5
		vs := strconv.Itoa(v.(int))
		if rng.Intn(12) == 0 {
			v, vs = nil, ""
		}
		wm := int64(math.MinInt64)
		if maxTs != math.MinInt64 {
			wm = maxTs - 1000 - 1
		}
		if keyed[k] == nil {
			keyed[k] = &group{last: math.MinInt64, fired: math.MinInt64}
		}
		late, lateGlobal := 0, 0
		if isLate(keyed[k], ts, wm) {
			late, lateRows = 1, lateRows+1
		}
		if isLate(global, ts, wm) {
			lateGlobal = 1
		}
		maxTs = max(maxTs, ts)
		if _, err := tx.Exec("INSERT INTO ev VALUES (?, ?, ?, ?, ?, ?)", id, ts, k, v, late, lateGlobal); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%d,%s,%d,%s\n", id, time.UnixMilli(base+ts).UTC().Format("2006-01-02 15:04:05.000"), k, vs)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if lateRows == 0 {
		t.Fatal("the stream must have late rows")
	}
	if err := os.WriteFile(csvPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := "(SELECT * FROM ev WHERE late = 0)"
	queries := []oracleQuery{
		{name: "rows-2-preceding",
			stream: "SELECT id, k, v, SUM(v) OVER w AS s, COUNT(v) OVER w AS n, MAX(v) OVER w AS mx FROM ev",
			sqlite: "SELECT id, k, v, SUM(v) OVER w, COUNT(v) OVER w, MAX(v) OVER w FROM " + ok + " WINDOW w AS (PARTITION BY k ORDER BY ts, id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)",
			kinds:  "iiiiii"},
		{name: "range-1s",
			stream: "SELECT id, k, AVG(v) OVER w AS a, MIN(v) OVER w AS m, COUNT(*) OVER w AS c FROM ev",
			sqlite: "SELECT id, k, SUM(v) / COUNT(v), MIN(v) OVER w, COUNT(*) OVER w FROM (SELECT id, k, v, SUM(v) OVER w AS sv, COUNT(v) OVER w AS cv FROM " + ok + " WINDOW w AS (PARTITION BY k ORDER BY ts RANGE BETWEEN 1000 PRECEDING AND CURRENT ROW))",
			kinds:  "iiiii"},
		{name: "range-unbounded",
			stream: "SELECT id, k, SUM(v) OVER (PARTITION BY k ORDER BY ts) AS s, COUNT(*) OVER (PARTITION BY k ORDER BY ts) AS c FROM ev",
			sqlite: "SELECT id, k, SUM(v) OVER w, COUNT(*) OVER w FROM " + ok + " WINDOW w AS (PARTITION BY k ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)",
			kinds:  "iiii"},
		{name: "rows-unbounded-global",
			stream: "SELECT id, COUNT(*) OVER w AS c, MIN(v) OVER w AS m FROM ev",
			sqlite: "SELECT id, COUNT(*) OVER w, MIN(v) OVER w FROM (SELECT * FROM ev WHERE late_global = 0) WINDOW w AS (ORDER BY ts, id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)",
			kinds:  "iii"},
	}
	// the stream side's windows, written out per query (no named windows)
	windows := map[string]string{
		"rows-2-preceding":      "(PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)",
		"range-1s":              "(PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' SECOND PRECEDING AND CURRENT ROW)",
		"rows-unbounded-global": "(ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)",
	}
	for i, q := range queries {
		if w, ok := windows[q.name]; ok {
			queries[i].stream = strings.ReplaceAll(q.stream, "OVER w", "OVER "+w)
		}
	}
	queries[1].sqlite = "SELECT id, k, sv / cv, m, c FROM (SELECT id, k, SUM(v) OVER w AS sv, COUNT(v) OVER w AS cv, MIN(v) OVER w AS m, COUNT(*) OVER w AS c FROM " + ok +
		" WINDOW w AS (PARTITION BY k ORDER BY ts RANGE BETWEEN 1000 PRECEDING AND CURRENT ROW))"
	want := sqliteWant(t, db, queries, true)
	ddl := "CREATE TABLE ev (id BIGINT, ts TIMESTAMP(3), k INT, v INT, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', 'path' = '" +
		csvPath + "', 'format' = 'csv', 'csv.null-literal' = '', 'scan.parallelism' = '1')"
	for _, p := range []int{1, 3} {
		for _, bs := range []int{1, 7, 100} {
			t.Run(fmt.Sprintf("p=%d,batch=%d", p, bs), func(t *testing.T) {
				s, done := newOracleSession(t)
				defer done()
				checkQueries(t, s, []string{"SET 'parallelism.default' = '" + strconv.Itoa(p) + "'", "SET 'execution.batch-size' = '" + strconv.Itoa(bs) + "'", ddl}, queries, want)
			})
		}
	}
	t.Run("crash", func(t *testing.T) {
		r := rand.New(rand.NewSource(crashSeed("over_oracle")))
		for _, q := range queries[:2] {
			crashAfter := 1 + int64(r.Intn(25))
			got := crashRun(t, ddl, q, crashAfter)
			if msg := compareTables(q.kinds, want[q.name], got); msg != "" {
				t.Errorf("%s (crash after checkpoint %d): %s\nquery: %s", q.name, crashAfter, msg, q.stream)
			}
		}
	})
}
