package sqltests

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/session"
)

// timeJoinStream writes a seeded random stream of n rows (id, ts, k, x)
// with bounded disorder (up to 1.5 s, more than the watermark's 1 s delay,
// so some rows are late) and some NULL keys, as CSV at path and into
// SQLite table name with a late flag: a row is late iff its ts is not
// above the watermark the rows before it imply (max ts - 1000 - 1), which
// is what the join judges a row by (the watermark of its own input).
func timeJoinStream(t *testing.T, db *sql.DB, rng *rand.Rand, name, path string, n int, base int64) (late, nullKeys int) {
	t.Helper()
	if _, err := db.Exec("CREATE TABLE " + name + " (id INTEGER, ts INTEGER, k INTEGER, x INTEGER, late INTEGER, wm INTEGER)"); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	clock, maxTs := int64(0), int64(-1)
	for i := 0; i < n; i++ {
		clock += int64(rng.Intn(40))
		ts := max(clock-int64(rng.Intn(1500)), 0)
		var k any = rng.Intn(5)
		kText := strconv.Itoa(k.(int))
		if rng.Intn(25) == 0 {
			k, kText = nil, ""
			nullKeys++
		}
		x := rng.Intn(100)
		isLate, wm := 0, int64(-1<<62)
		if maxTs >= 0 {
			wm = maxTs - 1000 - 1
		}
		if ts <= wm {
			isLate = 1
			late++
		}
		if _, err := tx.Exec("INSERT INTO "+name+" VALUES (?, ?, ?, ?, ?, ?)", i, ts, k, x, isLate, wm); err != nil {
			t.Fatal(err)
		}
		maxTs = max(maxTs, ts)
		fmt.Fprintf(&b, "%d,%s,%s,%d\n", i, time.UnixMilli(base+ts).UTC().Format("2006-01-02 15:04:05.000"), kText, x)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return late, nullKeys
}

// TestIntervalJoinOracleSQLite compares interval joins (INNER, LEFT,
// RIGHT, FULL; bounds on either side, strict and not, a positive lower
// bound, a residual, no key) with SQLite over two seeded random streams
// with disorder, late rows and NULL keys. SQLite joins the rows that are
// not late (each judged by its own stream) with integer arithmetic on
// epoch milliseconds. Runs at parallelism 1 and 3 and batch sizes 1, 7 and
// 100 (each source one split), checks the output is append-only, and then
// runs the same cases as a golden file with the oracle's answers in every
// variant of the golden runner, including the crash variant (a failure
// after a checkpoint and a restore at another parallelism than the
// canonical run's).
func TestIntervalJoinOracleSQLite(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(7))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	aPath, bPath := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv")
	lateA, nullA := timeJoinStream(t, db, rng, "a", aPath, 600, base)
	lateB, nullB := timeJoinStream(t, db, rng, "b", bPath, 600, base)
	if lateA == 0 || lateB == 0 || nullA == 0 || nullB == 0 {
		t.Fatalf("the streams must have late rows and NULL keys: %d %d %d %d", lateA, lateB, nullA, nullB)
	}
	t.Logf("late rows: a %d, b %d; NULL keys: a %d, b %d", lateA, lateB, nullA, nullB)
	const live = "(SELECT * FROM a WHERE late = 0) a %s JOIN (SELECT * FROM b WHERE late = 0) b ON "
	queries := []oracleQuery{
		{name: "inner",
			stream: "SELECT a.id AS aid, b.id AS bid, a.x + b.x AS s FROM a JOIN b ON a.k = b.k AND b.ts BETWEEN a.ts - INTERVAL '0.5' SECOND AND a.ts + INTERVAL '1' SECOND",
			sqlite: "SELECT a.id, b.id, a.x + b.x FROM " + fmt.Sprintf(live, "INNER") + "a.k = b.k AND b.ts BETWEEN a.ts - 500 AND a.ts + 1000",
			kinds:  "iii"},
		{name: "left-residual",
			stream: "SELECT a.id AS aid, b.id AS bid FROM a LEFT JOIN b ON a.k = b.k AND a.ts >= b.ts - INTERVAL '0.3' SECOND AND a.ts <= b.ts + INTERVAL '0.7' SECOND AND a.x > b.x",
			sqlite: "SELECT a.id, b.id FROM " + fmt.Sprintf(live, "LEFT") + "a.k = b.k AND a.ts >= b.ts - 300 AND a.ts <= b.ts + 700 AND a.x > b.x",
			kinds:  "ii"},
		{name: "right-strict",
			stream: "SELECT a.id AS aid, b.id AS bid, b.k FROM a RIGHT JOIN b ON b.k = a.k AND b.ts > a.ts - INTERVAL '1' SECOND AND b.ts < a.ts + INTERVAL '0.3' SECOND",
			sqlite: "SELECT a.id, b.id, b.k FROM " + fmt.Sprintf(live, "RIGHT") + "b.k = a.k AND b.ts > a.ts - 1000 AND b.ts < a.ts + 300",
			kinds:  "iii"},
		{name: "full-positive-lower",
			stream: "SELECT a.id AS aid, b.id AS bid FROM a FULL JOIN b ON a.k = b.k AND a.ts BETWEEN b.ts + INTERVAL '0.2' SECOND AND b.ts + INTERVAL '2' SECOND",
			sqlite: "SELECT a.id, b.id FROM " + fmt.Sprintf(live, "FULL") + "a.k = b.k AND a.ts BETWEEN b.ts + 200 AND b.ts + 2000",
			kinds:  "ii"},
		{name: "no-key",
			stream: "SELECT a.id AS aid, b.id AS bid FROM a, b WHERE b.ts BETWEEN a.ts AND a.ts + INTERVAL '0.03' SECOND",
			sqlite: "SELECT a.id, b.id FROM " + fmt.Sprintf(live, "INNER") + "b.ts BETWEEN a.ts AND a.ts + 30",
			kinds:  "ii"},
	}
	want := sqliteWant(t, db, queries, true)
	runTimeJoinOracle(t, dir, []string{timeJoinDDL("a", aPath), timeJoinDDL("b", bPath)}, queries, want, []oracleQuery{queries[1], queries[3]})
}

func timeJoinDDL(name, path string) string {
	return "CREATE TABLE " + name + " (id INT, ts TIMESTAMP(3), k INT, x INT, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', 'path' = '" +
		path + "', 'format' = 'csv', 'csv.null-literal' = '', 'scan.parallelism' = '1')"
}

// runTimeJoinOracle runs the stream queries after the setup statements at
// parallelism 1 and 3 and batch sizes 1, 7 and 100 and compares each with
// want (the output must be append-only); then (not in -short) it runs
// the crash queries as a golden file whose expected output is want, in
// every variant of the golden runner including the crash variant.
func runTimeJoinOracle(t *testing.T, dir string, setup []string, queries []oracleQuery, want map[string][][]*string, crash []oracleQuery) {
	t.Helper()
	for _, p := range []int{1, 3} {
		for _, bs := range []int{1, 7, 100} {
			t.Run(fmt.Sprintf("p=%d,batch=%d", p, bs), func(t *testing.T) {
				s, done := newOracleSession(t)
				defer done()
				checkQueriesBy(t, s, appendOnlyRows, append([]string{
					"SET 'parallelism.default' = '" + strconv.Itoa(p) + "'",
					"SET 'execution.batch-size' = '" + strconv.Itoa(bs) + "'",
				}, setup...), queries, want)
			})
		}
	}
	// The golden runner's variants and crash variant, with SQLite's answers
	// as the expected output (the crash variant checkpoints after every
	// source batch: a few hundred checkpoints a query).
	if testing.Short() {
		return
	}
	gdir := filepath.Join(dir, "golden")
	if err := os.MkdirAll(gdir, 0o755); err != nil {
		t.Fatal(err)
	}
	var g strings.Builder
	g.WriteString("exec\n" + strings.Join(setup, ";\n") + "\n----\n")
	for range setup {
		g.WriteString("[INFO] Execute statement succeeded.\n")
	}
	g.WriteString("\n")
	for _, q := range crash {
		fmt.Fprintf(&g, "query final\n%s\n----\n%s\n", q.stream, goldenTable(q.stream, want[q.name]))
	}
	if err := os.WriteFile(filepath.Join(gdir, "timejoin_oracle.sqltest"), []byte(g.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var ca checkedAllocs
	RunTest(t, gdir, Options{Variants: true, Crash: true, newAlloc: ca.newAlloc})
	ca.assertZero(t)
}

// TestWindowJoinOracleSQLite compares window joins (INNER, LEFT, FULL
// with a residual, and window aggregations on both sides, Nexmark q8's
// shape) of 2 s tumbling windows with SQLite over the two seeded streams
// of TestIntervalJoinOracleSQLite: SQLite drops a row iff its window had
// ended at the watermark of its own stream (window_end - 1 <= watermark),
// as the window join and the window aggregation do, and joins by key and
// window start; same variants as the interval join oracle.
func TestWindowJoinOracleSQLite(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(8))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	aPath, bPath := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv")
	timeJoinStream(t, db, rng, "a", aPath, 600, base)
	timeJoinStream(t, db, rng, "b", bPath, 600, base)
	for _, v := range []string{
		"CREATE VIEW aw AS SELECT id, k, x, (ts / 2000) * 2000 AS ws FROM a WHERE (ts / 2000) * 2000 + 1999 > wm",
		"CREATE VIEW bw AS SELECT id, k, x, (ts / 2000) * 2000 AS ws FROM b WHERE (ts / 2000) * 2000 + 1999 > wm",
	} {
		if _, err := db.Exec(v); err != nil {
			t.Fatal(err)
		}
	}
	var lateA, lateB int
	if err := db.QueryRow("SELECT (SELECT COUNT(*) FROM a) - (SELECT COUNT(*) FROM aw), (SELECT COUNT(*) FROM b) - (SELECT COUNT(*) FROM bw)").Scan(&lateA, &lateB); err != nil || lateA == 0 || lateB == 0 {
		t.Fatalf("the streams must have late rows for 2 s windows: %d %d %v", lateA, lateB, err)
	}
	tsStr := func(e string) string {
		return fmt.Sprintf("strftime('%%Y-%%m-%%d %%H:%%M:%%f', (%s + %d) / 1000.0, 'unixepoch')", e, base)
	}
	const on = " ON a.k = b.k AND a.window_start = b.window_start AND a.window_end = b.window_end"
	queries := []oracleQuery{
		{name: "inner",
			stream: "SELECT a.id AS aid, b.id AS bid, a.window_start AS ws FROM aw a JOIN bw b" + on,
			sqlite: "SELECT a.id, b.id, " + tsStr("a.ws") + " FROM aw a JOIN bw b ON a.k = b.k AND a.ws = b.ws",
			kinds:  "iis"},
		{name: "left-residual",
			stream: "SELECT a.id AS aid, b.id AS bid FROM aw a LEFT JOIN bw b" + on + " AND a.x < b.x",
			sqlite: "SELECT a.id, b.id FROM aw a LEFT JOIN bw b ON a.k = b.k AND a.ws = b.ws AND a.x < b.x",
			kinds:  "ii"},
		{name: "full",
			stream: "SELECT a.id AS aid, b.id AS bid, b.window_end AS we FROM aw a FULL JOIN bw b" + on,
			sqlite: "SELECT a.id, b.id, CASE WHEN b.id IS NULL THEN NULL ELSE " + tsStr("b.ws + 2000") + " END FROM aw a FULL JOIN bw b ON a.k = b.k AND a.ws = b.ws",
			kinds:  "iis"},
		{name: "aggregates",
			stream: "SELECT A.k, A.n, B.m, A.window_start AS ws FROM (SELECT k, COUNT(*) AS n, window_start, window_end FROM aw GROUP BY k, window_start, window_end) A" +
				" JOIN (SELECT k, SUM(x) AS m, window_start, window_end FROM bw GROUP BY k, window_start, window_end) B ON A.k = B.k AND A.window_start = B.window_start AND A.window_end = B.window_end",
			sqlite: "SELECT A.k, A.n, B.m, " + tsStr("A.ws") + " FROM (SELECT k, ws, COUNT(*) AS n FROM aw GROUP BY k, ws) A JOIN (SELECT k, ws, SUM(x) AS m FROM bw GROUP BY k, ws) B ON A.k = B.k AND A.ws = B.ws",
			kinds:  "iiis"},
	}
	want := sqliteWant(t, db, queries, true)
	setup := []string{timeJoinDDL("a", aPath), timeJoinDDL("b", bPath),
		"CREATE VIEW aw AS SELECT * FROM TABLE(TUMBLE(TABLE a, DESCRIPTOR(ts), INTERVAL '2' SECOND))",
		"CREATE VIEW bw AS SELECT * FROM TABLE(TUMBLE(TABLE b, DESCRIPTOR(ts), INTERVAL '2' SECOND))"}
	runTimeJoinOracle(t, dir, setup, queries, want, []oracleQuery{queries[2], queries[3]})
}

// goldenTable renders rows as the golden runner prints a final table: the
// header (the SELECT's output names, read from the aliases), then the rows
// sorted, NULL as NULL.
func goldenTable(selectSQL string, rows [][]*string) string {
	head := selectSQL[len("SELECT "):strings.Index(selectSQL, " FROM ")]
	var names []string
	for _, f := range strings.Split(head, ", ") {
		if i := strings.LastIndex(f, " AS "); i >= 0 {
			f = f[i+4:]
		} else if j := strings.LastIndexByte(f, '.'); j >= 0 {
			f = f[j+1:]
		}
		names = append(names, f)
	}
	lines := make([]string, 0, len(rows))
	for _, r := range rows {
		parts := make([]string, len(r))
		for i, v := range r {
			if v == nil {
				parts[i] = "NULL"
			} else {
				parts[i] = *v
			}
		}
		lines = append(lines, strings.Join(parts, " | "))
	}
	sort.Strings(lines)
	return "final:\n" + strings.Join(names, " | ") + "\n" + strings.Join(lines, "\n") + "\n"
}

// appendOnlyRows runs a SELECT and returns its rows, failing if the
// changelog has anything but inserts.
func appendOnlyRows(s *session.Session, q string) ([][]*string, error) {
	st, err := parser.Parse(q)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	res, err := s.Execute(ctx, st)
	if err != nil {
		return nil, err
	}
	if res.Kind != session.ResultStream {
		return nil, fmt.Errorf("not a stream")
	}
	var out [][]*string
	var bad string
	for batch := range res.Stream.Changes {
		for _, ch := range batch {
			if ch.Op != "+I" && bad == "" {
				bad = ch.Op
			}
			out = append(out, ch.Values)
		}
	}
	if err := res.Stream.Err(); err != nil {
		return nil, err
	}
	if bad != "" {
		return nil, fmt.Errorf("the output is not append-only: a %s row", bad)
	}
	return out, nil
}
