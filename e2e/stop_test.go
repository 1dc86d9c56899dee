package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestStopWithSavepoint is the stop half of Proof 7: `streamsql stop
// --savepoint DIR [--drain] <id>` ends the job FINISHED at a savepoint, the
// `run` process exits 0, and the sink committed everything the job read:
// the committed counts add up to the records in. (Draining shows only in
// operators that flush at the end, such as windows; a GROUP BY has
// nothing to flush.)
func TestStopWithSavepoint(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	isolateRegistry(t)
	for _, drain := range []bool{false, true} {
		t.Run(fmt.Sprintf("drain=%v", drain), func(t *testing.T) {
			dir := t.TempDir()
			spDir, out := filepath.Join(dir, "savepoints"), filepath.Join(dir, "out")
			// An unbounded generator: the job only ends when stopped.
			job := writeFile(t, dir, "job.sql", fmt.Sprintf(`SET 'execution.checkpointing.interval' = '100 ms';
SET 'state.checkpoints.dir' = %s;
CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence',
  'fields.id.start' = '1', 'fields.id.end' = '1000000000000', 'rows-per-second' = '20000');
CREATE TABLE out (k STRING, n BIGINT) WITH ('connector' = 'filesystem', 'path' = %s, 'format' = 'json');
INSERT INTO out SELECT CONCAT('k', CAST(MOD(id, 100) AS STRING)), COUNT(*) FROM src GROUP BY CONCAT('k', CAST(MOD(id, 100) AS STRING));
`, sqlQuote(filepath.Join(dir, "checkpoints")), sqlQuote(out)))
			p := startRun(t, "run", dir, "run", "-p", "2", job)
			id := p.job()
			p.waitFor("taking two checkpoints", func(lines []string) bool { return checkpointsSeen(lines) >= 2 })
			args := []string{"stop", "--savepoint", spDir}
			if drain {
				args = append(args, "--drain")
			}
			r := mustCLI(t, dir, append(args, id)...)
			sp := savepointPath(t, r)
			if !strings.Contains(r.stderr, "Suspending job "+id) {
				t.Errorf("stop printed %q", r.stderr)
			}
			if code := p.wait(); code != 0 {
				t.Fatalf("run exited %d after stop, want 0\n%s", code, p.tail())
			}
			in := recordsIn(t, p) // fails unless the summary says FINISHED
			got, clean := committed(t, out)
			if !clean {
				t.Errorf("the output is not exactly one row per key")
			}
			var sum int64
			for _, a := range got {
				sum += a.N
			}
			if sum != in || in == 0 {
				t.Errorf("the committed counts add up to %d, the job read %d records: the last output was not committed", sum, in)
			}
			if ids := listJobs(t, dir); len(ids) != 0 {
				t.Errorf("streamsql list still shows running jobs %v", ids)
			}
			// The stop's savepoint is a complete one the same job accepts.
			if r := mustCLI(t, dir, "run", "--check", "--from", sp, job); !strings.Contains(r.stdout, "COMPATIBLE:") {
				t.Errorf("run --check from the stop's savepoint:\n%s", r.stdout)
			}
			t.Logf("stopped after %d records into %s", in, filepath.Base(sp))
		})
	}
}
