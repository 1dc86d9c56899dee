package nexmark

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// exportView writes the rows of a Nexmark view (columns cols) as CSV with
// one more job and returns them.
func exportView(t *testing.T, dir string, vars map[string]string, view, cols string) [][]string {
	t.Helper()
	ddl, err := DDL(vars)
	if err != nil {
		t.Fatal(err)
	}
	var defs []string
	types := map[string]string{"id": "BIGINT", "name": "VARCHAR", "seller": "BIGINT", "`dateTime`": "TIMESTAMP(3)"}
	for _, c := range strings.Split(cols, ", ") {
		defs = append(defs, c+" "+types[c])
	}
	runScript(t, ddl+fmt.Sprintf(`
CREATE TABLE %s_csv (%s) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv');
INSERT INTO %s_csv SELECT %s FROM %s;
`, view, strings.Join(defs, ", "), dir, view, cols, view), 0)
	var rows [][]string
	files, _ := filepath.Glob(filepath.Join(dir, "part-*"))
	for _, f := range files {
		rows = append(rows, readCSV(t, f)...)
	}
	return rows
}

// TestNexmarkQ8AgainstSQLite runs q8 (a window join of two window
// aggregations) as the benchmark writes it and compares its output with
// SQLite's: the persons and the auctions' sellers of each 10 s window
// (the stream has no late events), joined by id and window, at
// parallelism 1, 3 (batch 7) and 2 with a crash.
func TestNexmarkQ8AgainstSQLite(t *testing.T) {
	vars := map[string]string{"EVENTS_NUM": goldenEvents, "TPS": "1000"}
	persons := exportView(t, t.TempDir(), vars, "person", "id, name, `dateTime`")
	auctions := exportView(t, t.TempDir(), vars, "auction", "seller, `dateTime`")
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, s := range []string{"CREATE TABLE person (id INTEGER, name TEXT, dateTime TEXT)", "CREATE TABLE auction (seller INTEGER, dateTime TEXT)"} {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range persons {
		if _, err := db.Exec("INSERT INTO person VALUES (?, ?, ?)", r[0], r[1], r[2]); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range auctions {
		if _, err := db.Exec("INSERT INTO auction VALUES (?, ?)", r[0], r[1]); err != nil {
			t.Fatal(err)
		}
	}
	want := sqliteRowsOf(t, db, `SELECT P.id, P.name, ts3(P.ws) FROM
	  (SELECT DISTINCT id, name, ms(dateTime) / 10000 * 10000 AS ws FROM person) P JOIN
	  (SELECT DISTINCT seller, ms(dateTime) / 10000 * 10000 AS ws FROM auction) A ON P.id = A.seller AND P.ws = A.ws`)
	if len(want) < 50 {
		t.Fatalf("SQLite's answer has %d rows (of %d persons, %d auctions): too few to check much", len(want), len(persons), len(auctions))
	}
	t.Logf("%d rows in SQLite's answer (%d persons, %d auctions)", len(want), len(persons), len(auctions))
	for _, v := range []struct {
		name, settings string
		crashAfter     int64
	}{
		{"p1", "SET 'parallelism.default' = '1';\n", 0},
		{"p3-batch7", "SET 'parallelism.default' = '3';\nSET 'execution.batch-size' = '7';\n", 0},
		{"p2-crash", "SET 'parallelism.default' = '2';\nSET 'execution.batch-size' = '1000';\n", 9},
	} {
		got := queryOutput(t, "q8", t.TempDir(), vars, v.settings, v.crashAfter)
		if d := diffRows(got, want); d != "" {
			t.Errorf("%s differs from SQLite (%d rows, want %d): %s", v.name, len(got), len(want), d)
		}
	}
}

// sqliteRowsOf runs query and renders its rows as the golden tests do.
func sqliteRowsOf(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	res, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	cols, _ := res.Columns()
	var out []string
	for res.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := res.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = canon(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	sort.Strings(out)
	return out
}

// TestNexmarkQ13AgainstSQLite runs q13 (a lookup join of the bids with a
// side input file) as the benchmark writes it, with a side input the test
// writes (keys 0..9999 but every 7th missing, so the inner join drops
// bids), against SQLite's join of the exported bids with the same file,
// at parallelism 1, 3 (batch 7) and 2 with a crash.
func TestNexmarkQ13AgainstSQLite(t *testing.T) {
	dir := t.TempDir()
	side := filepath.Join(dir, "side_input.txt")
	var sb strings.Builder
	for k := 0; k < 10000; k++ {
		if k%7 == 3 {
			continue
		}
		fmt.Fprintf(&sb, "%d,v%d\n", k, (k*31)%1009)
	}
	if err := os.WriteFile(side, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"EVENTS_NUM": goldenEvents, "TPS": "10000", "SIDE_INPUT_PATH": side}
	bids := exportBids(t, t.TempDir(), vars)
	want := sqliteAnswer(t, bids, `WITH RECURSIVE keys(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM keys WHERE k < 9999),
	  side AS (SELECT k, 'v' || ((k * 31) % 1009) AS v FROM keys WHERE k % 7 <> 3)
	  SELECT auction, bidder, price, dateTime, v FROM bid JOIN side ON auction % 10000 = k`)
	if len(want) < 1000 || len(want) >= len(bids) {
		t.Fatalf("SQLite's answer has %d rows of %d bids: the join must keep most and drop some", len(want), len(bids))
	}
	for _, v := range []struct {
		name, settings string
		crashAfter     int64
	}{
		{"p1", "SET 'parallelism.default' = '1';\n", 0},
		{"p3-batch7", "SET 'parallelism.default' = '3';\nSET 'execution.batch-size' = '7';\n", 0},
		{"p2-crash", "SET 'parallelism.default' = '2';\nSET 'execution.batch-size' = '1000';\n", 9},
	} {
		got := queryOutput(t, "q13", t.TempDir(), vars, v.settings, v.crashAfter)
		if d := diffRows(got, want); d != "" {
			t.Errorf("%s differs from SQLite (%d rows, want %d): %s", v.name, len(got), len(want), d)
		}
	}
}
