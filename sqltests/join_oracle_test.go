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
)

// joinOracleQueries are regular joins run through streamsql and SQLite:
// every join type, residual conditions, NULL keys, null-safe keys, and
// updating inputs (GROUP BY results, which retract).
var joinOracleQueries = []oracleQuery{
	{name: "inner-residual",
		stream: "SELECT l.k, l.v, r.w FROM l JOIN r ON l.k = r.k AND l.v < r.w",
		kinds:  "iii"},
	{name: "left-residual",
		stream: "SELECT l.k, l.s, l.v, r.w FROM l LEFT JOIN r ON l.k = r.k AND l.v < r.w - 500",
		kinds:  "isii"},
	{name: "right",
		stream: "SELECT l.v, r.k, r.s FROM l RIGHT JOIN r ON l.k = r.k AND l.s = r.s",
		kinds:  "iis"},
	{name: "full-residual",
		stream: "SELECT l.v, r.w FROM l FULL JOIN r ON l.k = r.k AND l.v + r.w > 900",
		kinds:  "ii"},
	{name: "null-safe",
		stream: "SELECT l.v, r.w FROM l JOIN r ON l.s = r.s WHERE l.k IS NOT DISTINCT FROM r.k",
		sqlite: "SELECT l.v, r.w FROM l JOIN r ON l.s = r.s WHERE l.k IS r.k",
		kinds:  "ii"},
	{name: "full-of-aggregates",
		stream: "SELECT a.k, a.n, b.sw FROM (SELECT k, COUNT(*) AS n FROM l GROUP BY k) a FULL JOIN (SELECT k, SUM(w) AS sw FROM r GROUP BY k) b ON a.k = b.k",
		kinds:  "iii"},
	{name: "left-raw-aggregate",
		stream: "SELECT l.s, l.v, a.n, a.hi FROM l LEFT JOIN (SELECT s, COUNT(*) AS n, MAX(w) AS hi FROM r GROUP BY s) a ON l.s = a.s AND l.v < a.hi",
		kinds:  "siii"},
	{name: "aggregate-of-join",
		stream: "SELECT l.k, COUNT(*) AS n, SUM(r.w) AS sw FROM l JOIN r ON l.k = r.k AND l.s <> r.s GROUP BY l.k",
		kinds:  "iii"},
	{name: "three-way",
		stream: "SELECT l.v, r.w, m.n FROM l JOIN r ON l.k = r.k LEFT JOIN (SELECT s, COUNT(*) AS n FROM l GROUP BY s) m ON r.s = m.s AND l.v > 0",
		kinds:  "iii"},
}

// joinOracleData writes a seeded random table (k INT with NULLs, s STRING
// with NULLs, an integer) as CSV and returns its rows.
func joinOracleData(t *testing.T, path string, seed int64, n int) [][]any {
	rng := rand.New(rand.NewSource(seed))
	var b strings.Builder
	rows := make([][]any, n)
	for i := range rows {
		row := make([]any, 3)
		if rng.Intn(8) > 0 {
			row[0] = int64(rng.Intn(8))
		}
		if rng.Intn(8) > 0 {
			row[1] = string(rune('a' + rng.Intn(3)))
		}
		row[2] = int64(rng.Intn(1001) - 100)
		for j, v := range row {
			if j > 0 {
				b.WriteByte(',')
			}
			switch x := v.(type) {
			case nil:
				b.WriteString("NULL")
			case int64:
				b.WriteString(strconv.FormatInt(x, 10))
			case string:
				b.WriteString(x)
			}
		}
		b.WriteByte('\n')
		rows[i] = row
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestJoinOracleSQLite compares regular joins with SQLite over two seeded
// random tables, at parallelism 1 and 4 and batch sizes 1 and 64.
func TestJoinOracleSQLite(t *testing.T) {
	dir := t.TempDir()
	lPath, rPath := filepath.Join(dir, "l.csv"), filepath.Join(dir, "r.csv")
	lRows := joinOracleData(t, lPath, 7, 120)
	rRows := joinOracleData(t, rPath, 8, 100)

	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, tb := range []struct {
		name, w string
		rows    [][]any
	}{{"l", "v", lRows}, {"r", "w", rRows}} {
		if _, err := db.Exec(fmt.Sprintf("CREATE TABLE %s (k INTEGER, s TEXT, %s INTEGER)", tb.name, tb.w)); err != nil {
			t.Fatal(err)
		}
		for _, r := range tb.rows {
			if _, err := db.Exec(fmt.Sprintf("INSERT INTO %s VALUES (?, ?, ?)", tb.name), r...); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := sqliteWant(t, db, joinOracleQueries, true)
	type variant struct {
		p, bs   int
		backend string // state.backend.type ("": the default, in memory)
	}
	// the last one keeps the join state in the Pebble tier with a budget
	// of 16 KiB per KV: most rows are evicted and read back
	variants := []variant{{1, 1, ""}, {1, 64, ""}, {4, 1, ""}, {4, 64, ""}, {2, 7, "rocksdb"}}
	for _, v := range variants {
		p, bs := v.p, v.bs
		{
			t.Run(fmt.Sprintf("p=%d,batch=%d%s", p, bs, v.backend), func(t *testing.T) {
				s, done := newOracleSession(t)
				defer done()
				setup := []string{
					fmt.Sprintf("SET 'parallelism.default' = '%d'", p),
					fmt.Sprintf("SET 'execution.batch-size' = '%d'", bs),
				}
				if v.backend != "" {
					setup = append(setup, "SET 'state.backend.type' = '"+v.backend+"'",
						"SET 'state.backend.rocksdb.memory.fixed-per-slot' = '16 kb'",
						"SET 'state.backend.rocksdb.localdir' = '"+t.TempDir()+"'")
				}
				setup = append(setup,
					"CREATE TABLE l (k INT, s STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '"+lPath+"', 'format' = 'csv', 'csv.null-literal' = 'NULL')",
					"CREATE TABLE r (k INT, s STRING, w BIGINT) WITH ('connector' = 'filesystem', 'path' = '"+rPath+"', 'format' = 'csv', 'csv.null-literal' = 'NULL')",
				)
				checkQueries(t, s, setup, joinOracleQueries, want)
			})
		}
	}
}
