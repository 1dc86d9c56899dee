package session

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTwoJobsOneSinkPath: two jobs writing one filesystem table at the
// same time (with checkpoints) keep every row of both. Their part files
// were named alike (table and path only): both numbered from the same
// directory scan and overwrote each other's files (found in session 26:
// only the second job's rows were left). Plain and partitioned sinks.
func TestTwoJobsOneSinkPath(t *testing.T) {
	const rows = 3000
	for _, partitioned := range []bool{false, true} {
		t.Run(fmt.Sprintf("partitioned=%v", partitioned), func(t *testing.T) {
			s, _, mem := newTestSession(t)
			defer mem.AssertSize(t, 0)
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			part := ""
			if partitioned {
				part = "PARTITIONED BY (p) "
			}
			// Each job takes about 0.3 s (rows-per-second): they overlap.
			execAll(t, s, fmt.Sprintf(`SET 'execution.checkpointing.interval' = '50 ms';
SET 'state.checkpoints.dir' = '%s';
SET 'parallelism.default' = '2';
CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '%d', 'rows-per-second' = '10000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '%d');
CREATE TABLE t (id BIGINT, tag STRING, p INT) %sWITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv');
INSERT INTO t SELECT id, 'a', CAST(id %% 2 AS INT) FROM src;
INSERT INTO t SELECT id, 'b', CAST(id %% 2 AS INT) FROM src;`, filepath.Join(dir, "ck"), rows, rows, part, out))
			if err := s.WaitJobs(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, j := range s.Jobs() {
				if j.Status != "FINISHED" || j.RecordsOut != rows {
					t.Fatalf("job %s: %s, %d rows out", j.Name, j.Status, j.RecordsOut)
				}
			}
			got := map[string]int{}
			err := filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
					return err
				}
				f, err := os.Open(path)
				if err != nil {
					return err
				}
				defer f.Close()
				sc := bufio.NewScanner(f)
				for sc.Scan() {
					fields := strings.Split(sc.Text(), ",")
					got[fields[1]]++
				}
				return sc.Err()
			})
			if err != nil {
				t.Fatal(err)
			}
			if got["a"] != rows || got["b"] != rows {
				t.Fatalf("rows in the table's files by job: %v, want %d each", got, rows)
			}
		})
	}
}
