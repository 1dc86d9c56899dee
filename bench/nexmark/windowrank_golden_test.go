package nexmark

import (
	"fmt"
	"testing"
)

// TestNexmarkWindowTopNAgainstSQLite: a Window TopN over the Nexmark bid
// stream (not a Nexmark query: q19 is a regular TopN), the 2 highest bids
// of every bidder per 1 s tumbling window by RANK (ties kept, so the
// answer is deterministic), against SQLite's RANK() over the exported
// bids, at parallelism 1 and 3 and with a crash.
func TestNexmarkWindowTopNAgainstSQLite(t *testing.T) {
	vars := map[string]string{"EVENTS_NUM": goldenEvents, "TPS": "10000"}
	bids := exportBids(t, t.TempDir(), vars)
	want := sqliteAnswer(t, bids, `SELECT ts3(ws), bidder, auction, price, r FROM (
	  SELECT *, RANK() OVER (PARTITION BY ws, bidder ORDER BY price DESC) AS r
	  FROM (SELECT *, ms(dateTime) / 1000 * 1000 AS ws FROM bid)) WHERE r <= 2`)
	if len(want) < 1000 {
		t.Fatalf("SQLite's answer has %d rows: too few to check much", len(want))
	}
	t.Logf("%d rows in SQLite's answer", len(want))
	ddl, err := DDL(vars)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		name, settings string
		crashAfter     int64
	}{
		{"p1", "SET 'parallelism.default' = '1';\n", 0},
		{"p3-batch7", "SET 'parallelism.default' = '3';\nSET 'execution.batch-size' = '7';\n", 0},
		{"p2-crash", "SET 'parallelism.default' = '2';\nSET 'execution.batch-size' = '1000';\n", 9},
	} {
		dir := t.TempDir()
		runScript(t, v.settings+ddl+fmt.Sprintf(`
CREATE TABLE top2 (window_start TIMESTAMP(3), bidder BIGINT, auction BIGINT, price BIGINT, r BIGINT)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
INSERT INTO top2 SELECT window_start, bidder, auction, price, r FROM (
  SELECT *, RANK() OVER (PARTITION BY window_start, window_end, bidder ORDER BY price DESC) AS r
  FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(`+"`dateTime`"+`), INTERVAL '1' SECOND)))
WHERE r <= 2;
`, dir), v.crashAfter)
		got := foldJSON(t, dir)
		if d := diffRows(got, want); d != "" {
			t.Errorf("%s differs from SQLite (%d rows, want %d): %s", v.name, len(got), len(want), d)
		}
	}
}
