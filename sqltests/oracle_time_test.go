package sqltests

import (
	"database/sql"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Time functions checked against SQLite's date functions over seeded
// random timestamps (1970..2100, millisecond precision), where SQLite's
// semantics are Flink's: calendar fields, DAYOFWEEK (SQLite's %w is 0 for
// Sunday, Flink's 1), formatting, day and hour truncation, day-time
// interval arithmetic, epoch seconds and differences.
var oracleTimeQueries = []oracleQuery{
	{name: "fields",
		stream: "SELECT id, YEAR(ts), MONTH(ts), DAYOFMONTH(ts), HOUR(ts), MINUTE(ts), SECOND(ts), DAYOFYEAR(ts), DAYOFWEEK(ts), QUARTER(ts) FROM tt",
		sqlite: "SELECT id, CAST(strftime('%Y', ts) AS INTEGER), CAST(strftime('%m', ts) AS INTEGER), CAST(strftime('%d', ts) AS INTEGER), CAST(strftime('%H', ts) AS INTEGER), CAST(strftime('%M', ts) AS INTEGER), CAST(strftime('%S', ts) AS INTEGER), CAST(strftime('%j', ts) AS INTEGER), CAST(strftime('%w', ts) AS INTEGER) + 1, (CAST(strftime('%m', ts) AS INTEGER) + 2) / 3 FROM tt",
		kinds:  "iiiiiiiiii"},
	{name: "format-and-cast",
		stream: "SELECT id, DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm'), CAST(CAST(ts AS DATE) AS STRING), CAST(ts AS STRING), CAST(CAST(ts AS TIME) AS STRING) FROM tt",
		sqlite: "SELECT id, strftime('%Y-%m-%d %H:%M', ts), date(ts), strftime('%Y-%m-%d %H:%M:%f', ts), time(ts) FROM tt",
		kinds:  "issss"},
	{name: "floor-and-intervals",
		stream: "SELECT id, CAST(FLOOR(ts TO HOUR) AS STRING), CAST(FLOOR(ts TO DAY) AS STRING), CAST(ts + INTERVAL '90' MINUTE AS STRING), CAST(ts - INTERVAL '3 04:05:06.789' DAY TO SECOND AS STRING), CAST(CAST(ts AS DATE) + INTERVAL '40' DAY AS STRING) FROM tt",
		sqlite: "SELECT id, strftime('%Y-%m-%d %H:00:00.000', ts), strftime('%Y-%m-%d 00:00:00.000', ts), strftime('%Y-%m-%d %H:%M:%f', ts, '+90 minutes'), strftime('%Y-%m-%d %H:%M:%f', ts, '-3 days', '-4 hours', '-5 minutes', '-6.789 seconds'), date(ts, '+40 days') FROM tt",
		kinds:  "isssss"},
	{name: "epoch-and-diff",
		stream: "SELECT id, EXTRACT(EPOCH FROM ts), UNIX_TIMESTAMP(DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss')), TIMESTAMPDIFF(DAY, CAST(ts AS DATE), CAST(ts2 AS DATE)), TIMESTAMPDIFF(HOUR, FLOOR(ts TO HOUR), FLOOR(ts2 TO HOUR)) FROM tt",
		sqlite: "SELECT id, CAST(strftime('%s', ts) AS INTEGER), CAST(strftime('%s', ts) AS INTEGER), CAST(julianday(date(ts2)) - julianday(date(ts)) AS INTEGER), (CAST(strftime('%s', strftime('%Y-%m-%d %H:00:00', ts2)) AS INTEGER) - CAST(strftime('%s', strftime('%Y-%m-%d %H:00:00', ts)) AS INTEGER)) / 3600 FROM tt",
		kinds:  "iiiii"},
	{name: "group-by-day",
		stream: "SELECT CAST(CAST(ts AS DATE) AS STRING) AS day, COUNT(*) AS n, CAST(MAX(ts) AS STRING) AS hi, CAST(MIN(ts2) AS STRING) AS lo FROM tt GROUP BY CAST(ts AS DATE)",
		sqlite: "SELECT date(ts) AS day, COUNT(*) AS n, strftime('%Y-%m-%d %H:%M:%f', MAX(ts)), strftime('%Y-%m-%d %H:%M:%f', MIN(ts2)) FROM tt GROUP BY date(ts)",
		kinds:  "siss"},
}

func TestOracleSQLiteTime(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "tt.csv")
	rng := rand.New(rand.NewSource(20240901))
	var b strings.Builder
	type row struct {
		id      int
		ts, ts2 string
	}
	var rows []row
	lo, hi := int64(0), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	text := func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000") }
	for i := 0; i < 2000; i++ {
		ms := lo + rng.Int63n(hi-lo)
		if i%7 == 0 { // many rows on few days, for the grouping
			ms = time.Date(2024, 2, 28+i%3, 0, 0, 0, 0, time.UTC).UnixMilli() + rng.Int63n(86_400_000)
		}
		ms2 := ms + rng.Int63n(400*86_400_000) - 200*86_400_000
		if ms2 < 0 {
			ms2 = -ms2
		}
		r := row{id: i, ts: text(ms), ts2: text(ms2)}
		rows = append(rows, r)
		fmt.Fprintf(&b, "%d,%s,%s\n", r.id, r.ts, r.ts2)
	}
	if err := os.WriteFile(csvPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("CREATE TABLE tt (id INTEGER, ts TEXT, ts2 TEXT)"); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if _, err := tx.Exec("INSERT INTO tt VALUES (?, ?, ?)", r.id, r.ts, r.ts2); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	want := sqliteWant(t, db, oracleTimeQueries, false)
	s, done := newOracleSession(t)
	defer done()
	checkQueries(t, s, []string{
		"SET 'parallelism.default' = '2'",
		"SET 'execution.batch-size' = '100'",
		"CREATE TABLE tt (id INT, ts TIMESTAMP(3), ts2 TIMESTAMP(3)) WITH ('connector' = 'filesystem', 'path' = '" + csvPath + "', 'format' = 'csv')",
	}, oracleTimeQueries, want)
}
