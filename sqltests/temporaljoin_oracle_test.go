package sqltests

import (
	"database/sql"
	"math/rand"
	"path/filepath"
	"testing"
	"time"
)

// TestTemporalJoinOracleSQLite compares event-time temporal joins (INNER;
// LEFT with a residual; a WHERE above the join) with SQLite over two seeded
// random streams with disorder, late rows and NULL keys (those of
// TestIntervalJoinOracleSQLite): orders a, and the versioned table b
// (PRIMARY KEY k, each row a new version of its key). SQLite picks, for
// each row of a that is not late, the version of b that is not late with
// the same key and the largest ts <= a's (of equal times the later one in
// file order, which is arrival order). Same variants as the interval join
// oracle: parallelism 1 and 3, batch sizes 1, 7 and 100, then the golden
// runner's variants including the crash variant (a restore at another
// parallelism).
func TestTemporalJoinOracleSQLite(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(23))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	aPath, bPath := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv")
	lateA, nullA := timeJoinStream(t, db, rng, "a", aPath, 600, base)
	lateB, nullB := timeJoinStream(t, db, rng, "b", bPath, 300, base)
	if lateA == 0 || lateB == 0 || nullA == 0 {
		t.Fatalf("the streams must have late rows and NULL keys: %d %d %d %d", lateA, lateB, nullA, nullB)
	}
	t.Logf("late rows: a %d, b %d; NULL keys: a %d, b %d", lateA, lateB, nullA, nullB)
	const version = "(SELECT v.id FROM b v WHERE v.late = 0 AND v.k = a.k AND v.ts <= a.ts ORDER BY v.ts DESC, v.id DESC LIMIT 1)"
	const liveA = "(SELECT * FROM a WHERE late = 0) a"
	queries := []oracleQuery{
		{name: "inner",
			stream: "SELECT a.id AS aid, b.id AS bid, a.x + b.x AS s FROM a JOIN b FOR SYSTEM_TIME AS OF a.ts AS b ON a.k = b.k",
			sqlite: "SELECT a.id, b.id, a.x + b.x FROM " + liveA + " JOIN b ON b.id = " + version,
			kinds:  "iii"},
		{name: "left-residual",
			stream: "SELECT a.id AS aid, b.id AS bid, b.x FROM a LEFT JOIN b FOR SYSTEM_TIME AS OF a.ts AS b ON b.k = a.k AND a.x > b.x",
			sqlite: "SELECT a.id, b.id, b.x FROM " + liveA + " LEFT JOIN b ON b.id = " + version + " AND a.x > b.x",
			kinds:  "iii"},
		{name: "where",
			stream: "SELECT a.id AS aid, b.id AS bid FROM a JOIN b FOR SYSTEM_TIME AS OF a.ts AS b ON a.k = b.k WHERE b.x < 50",
			sqlite: "SELECT a.id, b.id FROM " + liveA + " JOIN b ON b.id = " + version + " WHERE b.x < 50",
			kinds:  "ii"},
	}
	want := sqliteWant(t, db, queries, true)
	versioned := "CREATE TABLE b (id INT, ts TIMESTAMP(3), k INT, x INT, PRIMARY KEY (k) NOT ENFORCED, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', 'path' = '" +
		bPath + "', 'format' = 'csv', 'csv.null-literal' = '', 'scan.parallelism' = '1')"
	runTimeJoinOracle(t, dir, []string{timeJoinDDL("a", aPath), versioned}, queries, want, []oracleQuery{queries[1]})
}
