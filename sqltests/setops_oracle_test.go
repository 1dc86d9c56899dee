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

// Set operations, WITH and VALUES against SQLite over two seeded random
// tables with NULLs and many duplicates (small domains, so that
// intersections and differences are not trivial), at parallelism 1 and 3
// and batch sizes 1, 7 and 100. Updating inputs come from aggregations.
var setopsOracleQueries = []oracleQuery{
	{name: "union-all", stream: "SELECT k, s FROM t UNION ALL SELECT k, s FROM u", kinds: "is"},
	{name: "union", stream: "SELECT k, s FROM t UNION SELECT k, s FROM u", kinds: "is"},
	{name: "intersect", stream: "SELECT k, s FROM t INTERSECT SELECT k, s FROM u", kinds: "is"},
	{name: "except", stream: "SELECT k, v FROM t EXCEPT SELECT k, v FROM u", kinds: "ii"},
	{name: "except-rev", stream: "SELECT s, v FROM u WHERE v < 10 EXCEPT SELECT s, v FROM t", kinds: "si"},
	{name: "three-way-union-all", stream: "SELECT s FROM t WHERE k = 1 UNION ALL SELECT s FROM u WHERE k = 2 UNION ALL SELECT s FROM t WHERE v > 15", kinds: "s"},
	{name: "precedence", stream: "SELECT k FROM t WHERE v < 5 UNION SELECT k FROM u WHERE v > 5 INTERSECT SELECT k FROM t WHERE s = 'a' EXCEPT SELECT k FROM u WHERE v = 7", kinds: "i"},
	{name: "nested",
		stream: "SELECT k, s FROM (SELECT k, s FROM t EXCEPT SELECT k, s FROM u) AS a UNION ALL SELECT k, s FROM (SELECT k, s FROM u INTERSECT SELECT k, s FROM t) AS b",
		kinds:  "is"},
	// updating inputs: the counts of an aggregation change while it runs
	{name: "intersect-aggs",
		stream: "SELECT k, s, COUNT(*) AS n FROM t WHERE v < 3 GROUP BY k, s INTERSECT SELECT k, s, COUNT(*) AS n FROM u WHERE v < 3 GROUP BY k, s",
		kinds:  "isi"},
	{name: "except-aggs",
		stream: "SELECT k, COUNT(*) AS n FROM t WHERE v < 4 GROUP BY k EXCEPT SELECT k, COUNT(*) AS n FROM u WHERE v < 4 GROUP BY k",
		kinds:  "ii"},
	{name: "union-all-agg-and-stream",
		stream: "SELECT k, COUNT(*) AS n FROM t GROUP BY k UNION ALL SELECT k, v FROM u WHERE v > 18",
		kinds:  "ii"},
	{name: "count-over-union",
		stream: "SELECT s, COUNT(*) AS n, SUM(v) AS sv FROM (SELECT s, v FROM t UNION ALL SELECT s, v FROM u) AS x GROUP BY s",
		kinds:  "sii"},
	{name: "distinct-count-over-union",
		stream: "SELECT COUNT(*) AS n FROM (SELECT k, v FROM t UNION SELECT k, v FROM u) AS x",
		kinds:  "i"},
	{name: "with",
		stream: "WITH a AS (SELECT k, s FROM t WHERE v < 10), b AS (SELECT k, s FROM a INTERSECT SELECT k, s FROM u) SELECT s, COUNT(*) AS n FROM b GROUP BY s",
		kinds:  "si"},
	// sub-plan reuse: an aggregation read twice is planned once and read
	// by both (updating input to a union, a self-join, a MAX of itself)
	{name: "reuse-cte-union",
		stream: "WITH a AS (SELECT k, COUNT(*) AS n, SUM(v) AS sv FROM t GROUP BY k) SELECT k, n FROM a UNION ALL SELECT k, sv FROM a",
		kinds:  "ii"},
	{name: "reuse-self-join",
		stream: "WITH a AS (SELECT s, COUNT(*) AS n FROM t WHERE v < 12 GROUP BY s) SELECT x.s, x.n, y.s FROM a AS x JOIN a AS y ON x.n = y.n",
		kinds:  "sis"},
	{name: "reuse-max-of-counts",
		stream: "SELECT c.k, c.n FROM (SELECT k, COUNT(*) AS n FROM t GROUP BY k) AS c JOIN (SELECT MAX(n) AS m FROM (SELECT k, COUNT(*) AS n FROM t GROUP BY k) AS c2) AS mx ON c.n = mx.m",
		kinds:  "ii"},
	{name: "values",
		stream: "SELECT k FROM t INTERSECT SELECT x FROM (VALUES (1), (3), (NULL), (9)) AS v(x)",
		sqlite: "SELECT k FROM t INTERSECT SELECT column1 FROM (VALUES (1), (3), (NULL), (9))",
		kinds:  "i"},
	// subqueries (joins)
	{name: "in", stream: "SELECT k, s, v FROM t WHERE v > 10 AND s IN (SELECT s FROM u WHERE k = 1)", kinds: "isi"},
	{name: "not-in", stream: "SELECT k, v FROM t WHERE v NOT IN (SELECT v FROM u WHERE k = 2 AND v IS NOT NULL)", kinds: "ii"},
	// the outer k is nullable: NULL NOT IN (non-empty) is unknown
	{name: "not-in-outer-nulls", stream: "SELECT k, v FROM t WHERE k NOT IN (SELECT k FROM u WHERE v = 3 AND k IS NOT NULL)", kinds: "ii"},
	// a NULL in the subquery makes NOT IN unknown for every row: the first
	// input is empty (the second keeps the result non-trivial)
	{name: "not-in-inner-null",
		stream: "SELECT k, v FROM t WHERE k NOT IN (SELECT k FROM u WHERE v = 3) UNION ALL SELECT k, v FROM t WHERE v = 19",
		kinds:  "ii"},
	{name: "exists",
		stream: "SELECT k, s FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k AND u.s = t.s AND u.v > t.v)",
		kinds:  "is"},
	{name: "not-exists",
		stream: "SELECT k, s, v FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.k = t.k AND u.v = t.v)",
		kinds:  "isi"},
	{name: "scalar",
		stream: "SELECT k, v FROM t WHERE v > (SELECT AVG(v) FROM u) + 5",
		sqlite: "SELECT k, v FROM t WHERE v > (SELECT SUM(v) / COUNT(v) FROM u) + 5",
		kinds:  "ii"},
	{name: "scalar-select-list", stream: "SELECT k, v, (SELECT MAX(v) FROM u WHERE k = 3) AS m, (SELECT COUNT(*) FROM u) AS n FROM t WHERE v = 4", kinds: "iiii"},
	{name: "in-agg", stream: "SELECT s, COUNT(*) AS n FROM t WHERE k IN (SELECT k FROM u GROUP BY k HAVING COUNT(*) > 60) GROUP BY s", kinds: "si"},
	{name: "except-values",
		stream: "SELECT s, k FROM u EXCEPT SELECT * FROM (VALUES ('a', 1), ('b', 2), (NULL, 3)) AS v(s, k)",
		sqlite: "SELECT s, k FROM u EXCEPT SELECT * FROM (VALUES ('a', 1), ('b', 2), (NULL, 3))",
		kinds:  "si"},
}

// setopsData writes a seeded random table (k INT, s STRING, v BIGINT) as
// CSV and returns its rows.
func setopsData(t *testing.T, path string, seed int64, n int) [][]any {
	rng := rand.New(rand.NewSource(seed))
	var b strings.Builder
	rows := make([][]any, n)
	for i := range rows {
		row := make([]any, 3)
		if rng.Intn(8) > 0 {
			row[0] = int64(rng.Intn(6))
		}
		if rng.Intn(8) > 0 {
			row[1] = string(rune('a' + rng.Intn(4)))
		}
		if rng.Intn(8) > 0 {
			row[2] = int64(rng.Intn(20))
		}
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

func TestSetOpsOracleSQLite(t *testing.T) {
	dir := t.TempDir()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var ddl []string
	for i, name := range []string{"t", "u"} {
		path := filepath.Join(dir, name+".csv")
		data := setopsData(t, path, 7000+int64(i), 400)
		if _, err := db.Exec("CREATE TABLE " + name + " (k INTEGER, s TEXT, v INTEGER)"); err != nil {
			t.Fatal(err)
		}
		for _, r := range data {
			if _, err := db.Exec("INSERT INTO "+name+" VALUES (?, ?, ?)", r...); err != nil {
				t.Fatal(err)
			}
		}
		ddl = append(ddl, "CREATE TABLE "+name+" (k INT, s STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '"+
			path+"', 'format' = 'csv', 'csv.null-literal' = 'NULL')")
	}
	want := sqliteWant(t, db, setopsOracleQueries, true)
	for _, p := range []int{1, 3} {
		for _, bs := range []int{1, 7, 100} {
			t.Run(fmt.Sprintf("p=%d/batch=%d", p, bs), func(t *testing.T) {
				s, done := newOracleSession(t)
				defer done()
				setup := append([]string{
					fmt.Sprintf("SET 'parallelism.default' = '%d'", p),
					fmt.Sprintf("SET 'execution.batch-size' = '%d'", bs),
				}, ddl...)
				checkQueries(t, s, setup, setopsOracleQueries, want)
			})
		}
	}
}
