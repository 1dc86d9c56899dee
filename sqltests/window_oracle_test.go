package sqltests

import (
	"database/sql"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWindowOracleSQLite compares window aggregations with SQLite over a
// seeded random event stream with bounded disorder (up to 1.5 s, more than
// the watermark's 1 s delay, so some rows are late). The oracle knows
// nothing of batches or operators: SQLite gets, per row, the watermark the
// rows before it imply (max ts - 1000 - 1) and counts a row in a window
// iff the window had not fired then (window end - 1 > that watermark),
// which is Flink's per-record watermark semantics. Windows are integer
// arithmetic on epoch milliseconds. Run at parallelism 1 and 3 and batch
// sizes 1, 7 and 100; the source is one split.
func TestWindowOracleSQLite(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "ev.csv")
	rng := rand.New(rand.NewSource(99))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("CREATE TABLE ev (ts INTEGER, k INTEGER, v INTEGER, wm INTEGER)"); err != nil {
		t.Fatal(err)
	}
	offs := "CREATE TABLE offs (n INTEGER)"
	if _, err := db.Exec(offs); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < 10; n++ {
		if _, err := db.Exec("INSERT INTO offs VALUES (?)", n); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	tx, _ := db.Begin()
	clock, maxTs := int64(0), int64(-1)
	for i := 0; i < 3000; i++ {
		clock += int64(rng.Intn(40))
		ts := max(clock-int64(rng.Intn(1500)), 0)
		k, v := rng.Intn(5), rng.Intn(100)-20
		wm := int64(-1 << 62) // no watermark yet
		if maxTs >= 0 {
			wm = maxTs - 1000 - 1
		}
		if _, err := tx.Exec("INSERT INTO ev VALUES (?, ?, ?, ?)", ts, k, v, wm); err != nil {
			t.Fatal(err)
		}
		maxTs = max(maxTs, ts)
		fmt.Fprintf(&b, "%s,%d,%d\n", time.UnixMilli(base+ts).UTC().Format("2006-01-02 15:04:05.000"), k, v)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(csvPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	tsStr := func(e string) string {
		return fmt.Sprintf("strftime('%%Y-%%m-%%d %%H:%%M:%%f', (%s + %d) / 1000.0, 'unixepoch')", e, base)
	}
	fl := func(x string, size int) string { // floor(x / size) * size for x > -1e9
		return fmt.Sprintf("((%s) + %d) / %d * %d - %d", x, 1_000_000*size, size, size, 1_000_000*size)
	}
	queries := []oracleQuery{
		{name: "tumble",
			stream: "SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS s, MAX(v) AS hi FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '2' SECONDS)) GROUP BY window_start, window_end, k",
			sqlite: "SELECT k, " + tsStr("ws") + ", " + tsStr("ws + 2000") + ", COUNT(*), SUM(v), MAX(v) FROM (SELECT k, v, wm, (ts / 2000) * 2000 AS ws FROM ev) WHERE ws + 2000 - 1 > wm GROUP BY k, ws",
			kinds:  "isiiii"},
		{name: "hop",
			stream: "SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo FROM TABLE(HOP(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' SECONDS, INTERVAL '3' SECONDS)) GROUP BY window_start, window_end, k",
			sqlite: "SELECT k, " + tsStr("ws") + ", " + tsStr("ws + 3000") + ", COUNT(*), SUM(v), MIN(v) FROM (SELECT k, v, wm, (ts / 1000) * 1000 - n * 1000 AS ws FROM ev, offs WHERE n < 3) WHERE ws + 3000 - 1 > wm GROUP BY k, ws",
			kinds:  "isiiii"},
		{name: "cumulate",
			stream: "SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS s FROM TABLE(CUMULATE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' SECONDS, INTERVAL '4' SECONDS)) GROUP BY window_start, window_end, k",
			sqlite: "SELECT k, " + tsStr("p") + ", " + tsStr("e") + ", COUNT(*), SUM(v) FROM (SELECT k, v, wm, ts, (ts / 4000) * 4000 AS p, (ts / 4000) * 4000 + (n + 1) * 1000 AS e FROM ev, offs WHERE n < 4) WHERE e > ts AND e - 1 > wm GROUP BY k, p, e",
			kinds:  "issii"},
		// OFFSET: window starts at a multiple of the slide plus the offset
		// (SQLite's / truncates: fl floors)
		{name: "tumble-offset",
			stream: "SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS s FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '2' SECONDS, INTERVAL '0.7' SECOND)) GROUP BY window_start, window_end, k",
			sqlite: "SELECT k, " + tsStr("ws") + ", " + tsStr("ws + 2000") + ", COUNT(*), SUM(v) FROM (SELECT k, v, wm, " + fl("ts - 700", 2000) + " + 700 AS ws FROM ev) WHERE ws + 2000 - 1 > wm GROUP BY k, ws",
			kinds:  "issii"},
		{name: "hop-negative-offset",
			stream: "SELECT k, window_start, window_end, COUNT(*) AS n, MAX(v) AS hi FROM TABLE(HOP(DATA => TABLE ev, TIMECOL => DESCRIPTOR(ts), SLIDE => INTERVAL '1' SECONDS, SIZE => INTERVAL '3' SECONDS, OFFSET => INTERVAL '-0.3' SECOND)) GROUP BY window_start, window_end, k",
			sqlite: "SELECT k, " + tsStr("ws") + ", " + tsStr("ws + 3000") + ", COUNT(*), MAX(v) FROM (SELECT k, v, wm, " + fl("ts + 300", 1000) + " - 300 - n * 1000 AS ws FROM ev, offs WHERE n < 3) WHERE ws + 3000 - 1 > wm GROUP BY k, ws",
			kinds:  "issii"},
		{name: "cumulate-offset",
			stream: "SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS s FROM TABLE(CUMULATE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' SECONDS, INTERVAL '4' SECONDS, INTERVAL '1.5' SECOND)) GROUP BY window_start, window_end, k",
			sqlite: "SELECT k, " + tsStr("p") + ", " + tsStr("e") + ", COUNT(*), SUM(v) FROM (SELECT k, v, wm, ts, " + fl("ts - 1500", 4000) + " + 1500 AS p, " + fl("ts - 1500", 4000) + " + 1500 + (n + 1) * 1000 AS e FROM ev, offs WHERE n < 4) WHERE e > ts AND e - 1 > wm GROUP BY k, p, e",
			kinds:  "issii"},
		{name: "global-legacy-tumble",
			stream: "SELECT TUMBLE_START(ts, INTERVAL '5' SECOND) AS ws, COUNT(*) AS n, SUM(v) AS s FROM ev GROUP BY TUMBLE(ts, INTERVAL '5' SECOND)",
			sqlite: "SELECT " + tsStr("ws") + ", COUNT(*), SUM(v) FROM (SELECT v, wm, (ts / 5000) * 5000 AS ws FROM ev) WHERE ws + 5000 - 1 > wm GROUP BY ws",
			kinds:  "sii"},
	}
	// GROUP BY window_start, window_end over a window aggregation's output
	// (renamed or not, with more keys), or over a window TVF's projected
	// rows (late rows dropped there): window aggregations attached to the
	// input's windows; the join of two such relations is a window join (as
	// Nexmark q5)
	tumbleCounts := "SELECT k, ws, COUNT(*) AS cnt FROM (SELECT k, wm, (ts / 2000) * 2000 AS ws FROM ev) WHERE ws + 2000 - 1 > wm GROUP BY k, ws"
	hopCounts := "SELECT k, ws, COUNT(*) AS cnt, MIN(v) AS lo FROM (SELECT k, v, wm, (ts / 1000) * 1000 - n * 1000 AS ws FROM ev, offs WHERE n < 3) WHERE ws + 3000 - 1 > wm GROUP BY k, ws"
	streamHop := "SELECT k, window_start, window_end, COUNT(*) AS cnt, MIN(v) AS lo FROM TABLE(HOP(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' SECONDS, INTERVAL '3' SECONDS)) GROUP BY k, window_start, window_end"
	queries = append(queries,
		oracleQuery{name: "attached-renamed",
			stream: "SELECT starttime, endtime, MAX(cnt) AS maxn, COUNT(*) AS c FROM (SELECT k, window_start AS starttime, window_end AS endtime, COUNT(*) AS cnt FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '2' SECONDS)) GROUP BY k, window_start, window_end) GROUP BY starttime, endtime",
			sqlite: "SELECT " + tsStr("ws") + ", " + tsStr("ws + 2000") + ", MAX(cnt), COUNT(*) FROM (" + tumbleCounts + ") GROUP BY ws",
			kinds:  "ssii"},
		oracleQuery{name: "attached-hop-keys",
			stream: "SELECT window_start, window_end, k % 2 AS par, SUM(cnt) AS s, MIN(lo) AS lo FROM (" + streamHop + ") GROUP BY window_start, window_end, k % 2",
			sqlite: "SELECT " + tsStr("ws") + ", " + tsStr("ws + 3000") + ", k % 2, SUM(cnt), MIN(lo) FROM (" + hopCounts + ") GROUP BY ws, k % 2",
			kinds:  "ssiii"},
		oracleQuery{name: "attached-hop-join",
			stream: "SELECT A.k, A.cnt, A.window_start FROM (" + streamHop + ") AS A JOIN (SELECT MAX(cnt) AS maxn, window_start, window_end FROM (" + streamHop + ") GROUP BY window_start, window_end) AS M ON A.window_start = M.window_start AND A.window_end = M.window_end AND A.cnt >= M.maxn",
			sqlite: "SELECT A.k, A.cnt, " + tsStr("A.ws") + " FROM (" + hopCounts + ") AS A JOIN (SELECT MAX(cnt) AS maxn, ws FROM (" + hopCounts + ") GROUP BY ws) AS M ON A.ws = M.ws AND A.cnt >= M.maxn",
			kinds:  "iis"},
		oracleQuery{name: "attached-tvf-rows",
			stream: "SELECT ws, we, k, COUNT(*) AS n, SUM(v) AS s FROM (SELECT k, v, window_start AS ws, window_end AS we FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '2' SECONDS))) GROUP BY ws, we, k",
			sqlite: "SELECT " + tsStr("ws") + ", " + tsStr("ws + 2000") + ", k, COUNT(*), SUM(v) FROM (SELECT k, v, wm, (ts / 2000) * 2000 AS ws FROM ev) WHERE ws + 2000 - 1 > wm GROUP BY k, ws",
			kinds:  "ssiii"},
	)
	var late int
	if err := db.QueryRow("SELECT COUNT(*) FROM ev WHERE (ts / 2000) * 2000 + 1999 <= wm").Scan(&late); err != nil || late == 0 {
		t.Fatalf("the stream must have late rows for 2 s windows: %d, %v", late, err)
	}
	t.Logf("%d of 3000 rows are late for 2 s tumbling windows", late)
	// no query may have an empty result: SQLite's is checked here, and the
	// engine's must equal it
	want := sqliteWant(t, db, queries, true)
	for _, p := range []int{1, 3} {
		for _, bs := range []int{1, 7, 100} {
			t.Run(fmt.Sprintf("p=%d,batch=%d", p, bs), func(t *testing.T) {
				s, done := newOracleSession(t)
				defer done()
				checkQueries(t, s, []string{
					"SET 'parallelism.default' = '" + strconv.Itoa(p) + "'",
					"SET 'execution.batch-size' = '" + strconv.Itoa(bs) + "'",
					"CREATE TABLE ev (ts TIMESTAMP(3), k INT, v INT, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', 'path' = '" +
						csvPath + "', 'format' = 'csv', 'scan.parallelism' = '1')",
				}, queries, want)
			})
		}
	}
}
