package session

import (
	"context"
	"path/filepath"
	"testing"
)

// TestLateRecordsShown checks that rows dropped by a window that had fired
// are counted in SHOW JOBS and DESCRIBE JOB (bids.csv has two rows late for
// 10 s windows, see sqltests/testdata/windows.sqltest).
func TestLateRecordsShown(t *testing.T) {
	s, _, mem := newTestSession(t)
	data, _ := filepath.Abs("../sqltests/testdata/data/bids.csv")
	execAll(t, s, `
SET 'parallelism.default' = '2';
SET 'execution.batch-size' = '3';
CREATE TABLE bids (ts TIMESTAMP(3), item STRING, price INT, WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
  WITH ('connector' = 'filesystem', 'path' = '`+data+`', 'format' = 'csv', 'scan.parallelism' = '1');
CREATE TABLE hole (ws TIMESTAMP(3), item STRING, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO hole SELECT window_start, item, COUNT(*) FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECONDS)) GROUP BY window_start, window_end, item;`)
	if err := s.WaitJobs(context.Background()); err != nil {
		t.Fatal(err)
	}
	show := execAll(t, s, "SHOW JOBS")[0]
	col := -1
	for i, c := range show.Columns {
		if c == "late records" {
			col = i
		}
	}
	if col < 0 || len(show.Rows) != 1 || show.Rows[0][col] != "2" {
		t.Fatalf("SHOW JOBS: %v %v", show.Columns, show.Rows)
	}
	d := execAll(t, s, "DESCRIBE JOB '"+show.Rows[0][0]+"'")[0]
	found := false
	for _, row := range d.Rows {
		if row[0] == "late records" {
			found = row[1] == "2"
		}
	}
	if !found {
		t.Fatalf("DESCRIBE JOB: %v", d.Rows)
	}
	s.Close()
	mem.AssertSize(t, 0)
}
