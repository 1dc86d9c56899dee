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

// TestWindowRankOracleSQLite compares Window TopN and window deduplication
// with SQLite's window functions over a seeded random stream with bounded
// disorder (late rows included) and NULLs in the ranked column. As in
// TestWindowOracleSQLite, SQLite knows per row the watermark the rows
// before it imply and keeps a row in a window iff the window had not fired
// (window end - 1 > that watermark). ROW_NUMBER orders are total (the
// arrival number id breaks ties), RANK and DENSE_RANK keep their ties; a
// deduplication keeps, of equal times, the first (ASC) or the last (DESC)
// row to arrive, which is ORDER BY ts, id or ts DESC, id DESC in SQLite.
// NULLs sort as the smallest values in both.
func TestWindowRankOracleSQLite(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "ev.csv")
	rng := rand.New(rand.NewSource(7))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{"CREATE TABLE ev (id INTEGER, ts INTEGER, k INTEGER, v INTEGER, wm INTEGER)", "CREATE TABLE offs (n INTEGER)",
		"INSERT INTO offs VALUES (0), (1), (2)"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	tx, _ := db.Begin()
	clock, maxTs := int64(0), int64(-1)
	for id := 0; id < 3000; id++ {
		clock += int64(rng.Intn(40))
		ts := max(clock-int64(rng.Intn(1500)), 0)
		k := rng.Intn(4)
		var v any = rng.Intn(30) // few values: ties
		vs := strconv.Itoa(v.(int))
		if rng.Intn(20) == 0 {
			v, vs = nil, ""
		}
		wm := int64(-1 << 62)
		if maxTs >= 0 {
			wm = maxTs - 1000 - 1
		}
		if _, err := tx.Exec("INSERT INTO ev VALUES (?, ?, ?, ?, ?)", id, ts, k, v, wm); err != nil {
			t.Fatal(err)
		}
		maxTs = max(maxTs, ts)
		fmt.Fprintf(&b, "%d,%s,%d,%s\n", id, time.UnixMilli(base+ts).UTC().Format("2006-01-02 15:04:05.000"), k, vs)
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
	// Rows of 2 s tumbling windows not late for them; of 3 s hopping
	// windows sliding by 1 s.
	tumble2 := "(SELECT *, (ts / 2000) * 2000 AS ws, (ts / 2000) * 2000 + 2000 AS we FROM ev WHERE (ts / 2000) * 2000 + 2000 - 1 > wm)"
	hop := "(SELECT * FROM (SELECT ev.*, (ts / 1000) * 1000 - n * 1000 AS ws, (ts / 1000) * 1000 - n * 1000 + 3000 AS we FROM ev, offs) WHERE we - 1 > wm)"
	queries := []oracleQuery{
		{name: "top3-rownumber",
			stream: "SELECT id, k, v, window_start, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY v DESC, id) AS rn FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '2' SECONDS))) WHERE rn <= 3",
			sqlite: "SELECT id, k, v, " + tsStr("ws") + ", rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY ws ORDER BY v DESC, id) AS rn FROM " + tumble2 + ") WHERE rn <= 3",
			kinds:  "iiisi"},
		{name: "rank-per-key-hop",
			stream: "SELECT id, k, v, window_start, window_end, r FROM (SELECT *, RANK() OVER (PARTITION BY window_start, window_end, k ORDER BY v DESC) AS r FROM TABLE(HOP(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' SECONDS, INTERVAL '3' SECONDS))) WHERE r <= 2",
			sqlite: "SELECT id, k, v, " + tsStr("ws") + ", " + tsStr("we") + ", r FROM (SELECT *, RANK() OVER (PARTITION BY ws, k ORDER BY v DESC) AS r FROM " + hop + ") WHERE r <= 2",
			kinds:  "iiissi"},
		{name: "dense-rank-asc-range",
			stream: "SELECT id, k, v, window_start, r FROM (SELECT *, DENSE_RANK() OVER (PARTITION BY window_start, window_end, k ORDER BY v) AS r FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '2' SECONDS))) WHERE r BETWEEN 2 AND 3",
			sqlite: "SELECT id, k, v, " + tsStr("ws") + ", r FROM (SELECT *, DENSE_RANK() OVER (PARTITION BY ws, k ORDER BY v) AS r FROM " + tumble2 + ") WHERE r BETWEEN 2 AND 3",
			kinds:  "iiisi"},
		{name: "dedup-first",
			stream: "SELECT id, k, v, window_start FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, k ORDER BY ts) AS rn FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '2' SECONDS))) WHERE rn = 1",
			sqlite: "SELECT id, k, v, " + tsStr("ws") + " FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY ws, k ORDER BY ts, id) AS rn FROM " + tumble2 + ") WHERE rn = 1",
			kinds:  "iiis"},
		{name: "dedup-last",
			stream: "SELECT id, k, v, window_start FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, k ORDER BY ts DESC) AS rn FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '2' SECONDS))) WHERE rn <= 1",
			sqlite: "SELECT id, k, v, " + tsStr("ws") + " FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY ws, k ORDER BY ts DESC, id DESC) AS rn FROM " + tumble2 + ") WHERE rn = 1",
			kinds:  "iiis"},
		{name: "top2-after-window-agg",
			stream: "SELECT window_start, k, s, n, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY s DESC, k) AS rn FROM (" +
				"SELECT window_start, window_end, k, SUM(v) AS s, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '2' SECONDS)) GROUP BY window_start, window_end, k)) WHERE rn <= 2",
			sqlite: "SELECT " + tsStr("ws") + ", k, s, n, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY ws ORDER BY s DESC, k) AS rn FROM (" +
				"SELECT ws, k, SUM(v) AS s, COUNT(*) AS n FROM " + tumble2 + " GROUP BY ws, k)) WHERE rn <= 2",
			kinds: "siiii"},
	}
	var late int
	if err := db.QueryRow("SELECT COUNT(*) FROM ev WHERE (ts / 2000) * 2000 + 1999 <= wm").Scan(&late); err != nil || late == 0 {
		t.Fatalf("the stream must have late rows for 2 s windows: %d, %v", late, err)
	}
	want := sqliteWant(t, db, queries, true)
	for _, p := range []int{1, 3} {
		for _, bs := range []int{1, 7, 100} {
			t.Run(fmt.Sprintf("p=%d,batch=%d", p, bs), func(t *testing.T) {
				s, done := newOracleSession(t)
				defer done()
				checkQueries(t, s, []string{
					"SET 'parallelism.default' = '" + strconv.Itoa(p) + "'",
					"SET 'execution.batch-size' = '" + strconv.Itoa(bs) + "'",
					"CREATE TABLE ev (id BIGINT, ts TIMESTAMP(3), k INT, v INT, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', 'path' = '" +
						csvPath + "', 'format' = 'csv', 'csv.null-literal' = '', 'scan.parallelism' = '1')",
				}, queries, want)
			})
		}
	}
}
