package e2e

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
)

// Sizes of the join + TopN rescale test: orders arrive at 20,000 rows/s,
// customers at 100 rows/s, so that orders come before and after their
// customer (the join matches from both sides) and every run is stopped
// mid-stream.
const (
	rjOrders    = 60_000
	rjCustomers = 500
	rjRegions   = 10
	rjTop       = 3
)

// rescaleJoinJob writes the job: orders joined with their customer, then
// the top 3 orders by amount per region (a TopN with its rank, updating),
// written as k = 'r<region>#<rank>', n = order id, s = amount.
func rescaleJoinJob(t *testing.T, dir, name, ckDir, out string) string {
	t.Helper()
	return writeFile(t, dir, name, fmt.Sprintf(`SET 'execution.checkpointing.interval' = '100 ms';
SET 'state.checkpoints.dir' = %s;
CREATE TABLE orders (id BIGINT) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence',
  'fields.id.start' = '1', 'fields.id.end' = '%d', 'rows-per-second' = '20000');
CREATE TABLE customers (cid BIGINT) WITH ('connector' = 'datagen', 'fields.cid.kind' = 'sequence',
  'fields.cid.start' = '0', 'fields.cid.end' = '%d', 'rows-per-second' = '100');
CREATE TABLE out (k STRING, n BIGINT, s BIGINT) WITH ('connector' = 'filesystem', 'path' = %s, 'format' = 'json');
INSERT INTO out
SELECT CONCAT('r', CAST(region AS STRING), '#', CAST(rn AS STRING)), id, amount FROM (
  SELECT c.region, o.id, o.amount,
    ROW_NUMBER() OVER (PARTITION BY c.region ORDER BY o.amount DESC, o.id ASC) AS rn
  FROM (SELECT id, MOD(id * 7, %d) AS cust, MOD(id * 7919, 100003) AS amount FROM orders) AS o
  JOIN (SELECT cid, MOD(cid, %d) AS region FROM customers) AS c ON o.cust = c.cid
) WHERE rn <= %d;
`, sqlQuote(ckDir), rjOrders, rjCustomers-1, sqlQuote(out), rjCustomers, rjRegions, rjTop))
}

// rescaleJoinOracle asks SQLite for the answer of rescaleJoinJob.
func rescaleJoinOracle(t *testing.T) map[string]agg {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "oracle.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(fmt.Sprintf(`WITH RECURSIVE
  seq(id) AS (SELECT 1 UNION ALL SELECT id + 1 FROM seq WHERE id < %d),
  cust(cid) AS (SELECT 0 UNION ALL SELECT cid + 1 FROM cust WHERE cid < %d),
  j AS (SELECT c.cid %% %d AS region, o.id, (o.id * 7919) %% 100003 AS amount
        FROM seq o JOIN cust c ON (o.id * 7) %% %d = c.cid),
  r AS (SELECT region, id, amount, ROW_NUMBER() OVER (PARTITION BY region ORDER BY amount DESC, id ASC) AS rn FROM j)
SELECT 'r' || region || '#' || rn, id, amount FROM r WHERE rn <= %d`, rjOrders, rjCustomers-1, rjRegions, rjCustomers, rjTop))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]agg{}
	for rows.Next() {
		var k string
		var a agg
		if err := rows.Scan(&k, &a.N, &a.S); err != nil {
			t.Fatal(err)
		}
		out[k] = a
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRescaleJoinTopN: a job with a regular join feeding a TopN, stopped
// with a savepoint at parallelism 2, restored at 5, stopped again and
// restored at 1, gives exactly the rows of an uninterrupted run and of
// SQLite: one row per (region, rank), and every source row read once.
func TestRescaleJoinTopN(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	isolateRegistry(t)
	dir := t.TempDir()
	out, refOut := filepath.Join(dir, "out"), filepath.Join(dir, "out-uninterrupted")
	job := rescaleJoinJob(t, dir, "job.sql", filepath.Join(dir, "checkpoints"), out)
	ref := startRun(t, "uninterrupted", dir, "run", "-p", "2",
		rescaleJoinJob(t, dir, "ref.sql", filepath.Join(dir, "checkpoints-ref"), refOut))
	oracle := rescaleJoinOracle(t)
	if len(oracle) != rjRegions*rjTop {
		t.Fatalf("SQLite has %d rows, want %d", len(oracle), rjRegions*rjTop)
	}
	total := rescaleRuns(t, dir, job, filepath.Join(dir, "savepoints"), rjOrders+rjCustomers, false)
	if total != rjOrders+rjCustomers {
		t.Errorf("the three runs read %d records in all, want each of the %d rows exactly once", total, rjOrders+rjCustomers)
	}
	if code := ref.wait(); code != 0 {
		t.Fatalf("the uninterrupted run exited %d\n%s", code, ref.tail())
	}
	got, clean := committed(t, out)
	if !clean {
		t.Errorf("the rescaled job's output is not exactly one row per (region, rank)")
	}
	want, refClean := committed(t, refOut)
	if !refClean {
		t.Errorf("the uninterrupted run's output is not exactly one row per (region, rank)")
	}
	if d := diffAggs(want, oracle); d != "" {
		t.Errorf("the uninterrupted run differs from SQLite:\n%s", d)
	}
	if d := diffAggs(got, oracle); d != "" {
		t.Errorf("the rescaled job (-p 2, 5, 1) differs from SQLite:\n%s", d)
	}
}
