package session

import (
	"context"
	"errors"
	"github.com/streamsql/streamsql/internal/memtest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/parser"
)

// countScript counts 300 sequence ids by id % 3 into a blackhole, with
// checkpoints in root (two retained).
func countScript(root, extra string) string {
	return "SET 'execution.checkpointing.interval' = '1 h';\n" +
		"SET 'state.checkpoints.dir' = '" + root + "';\n" +
		"SET 'state.checkpoints.num-retained' = '2';\n" +
		"SET 'execution.batch-size' = '10';\n" +
		"SET 'parallelism.default' = '1';\n" + extra +
		`CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '300',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '300');
CREATE TABLE snk (k BIGINT, c BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO snk SELECT id % 3, COUNT(*) FROM src GROUP BY id % 3;
`
}

// failAfterTwo runs countScript in a new session that fails the job right
// after checkpoint 2 completed, with no restart: the job ends FAILED. It
// returns the job directory.
func failAfterTwo(t *testing.T, root string) string {
	t.Helper()
	s, _, mem := newTestSession(t)
	s.CheckpointTestHook = func(c *exec.CheckpointConfig) { c.TriggerEveryBatch, c.FailAfter = true, 2 }
	res := execAll(t, s, countScript(root, "SET 'restart-strategy.type' = 'none';\n"))
	jobID := res[len(res)-1].JobID
	if err := s.WaitJobs(context.Background()); !errors.Is(err, exec.ErrInjectedCrash) {
		t.Fatalf("want the injected crash, got %v", err)
	}
	if st := s.Jobs()[0].Status; st != "FAILED" {
		t.Fatalf("status %s", st)
	}
	s.Close()
	mem.AssertSize(t, 0)
	return filepath.Join(root, jobID)
}

func assertEmptyDir(t *testing.T, dir string) {
	t.Helper()
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("%s should exist: %v", dir, err)
	}
	if len(names) != 0 {
		t.Fatalf("%s should be empty, holds %v", dir, names)
	}
}

// A FAILED job keeps its checkpoints (so that it can be resumed) but not its
// working state: taskowned/ is emptied, as after a cancel with retention.
func TestFailedJobDropsWorkingState(t *testing.T) {
	root := filepath.Join(t.TempDir(), "ck")
	jobDir := failAfterTwo(t, root)
	assertEmptyDir(t, filepath.Join(jobDir, "taskowned"))
	for _, chk := range []string{"chk-1", "chk-2"} {
		if _, err := os.Stat(filepath.Join(jobDir, chk, "_metadata")); err != nil {
			t.Fatalf("%s of the failed job is gone: %v", chk, err)
		}
	}
	// run --from the failed job's directory still works.
	s, _, mem := newTestSession(t)
	execAll(t, s, "SET 'execution.savepoint.path' = '"+jobDir+"';\n"+countScript(root, ""))
	if err := s.WaitJobs(context.Background()); err != nil {
		t.Fatal(err)
	}
	if in := s.Jobs()[0]; in.Status != "FINISHED" || in.RecordsIn != 280 {
		t.Fatalf("resumed job: %s, %d records in (want 280 after checkpoint 2)", in.Status, in.RecordsIn)
	}
	s.Close()
	mem.AssertSize(t, 0)
}

// A cancel with RETAIN_ON_CANCELLATION leaves Flink's layout: chk-<n>/,
// shared/ and an empty taskowned/.
func TestRetainOnCancelKeepsEmptyTaskowned(t *testing.T) {
	root := filepath.Join(t.TempDir(), "ck")
	s, _, mem := newTestSession(t)
	res := execAll(t, s, `SET 'execution.checkpointing.interval' = '1 h';
SET 'state.checkpoints.dir' = '`+root+`';
SET 'execution.checkpointing.externalized-checkpoint-retention' = 'RETAIN_ON_CANCELLATION';
CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '100');
CREATE TABLE snk (id BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO snk SELECT id FROM src;`)
	jobID := res[len(res)-1].JobID
	if err := s.CancelJob(jobID); err != nil {
		t.Fatal(err)
	}
	if st := s.Jobs()[0].Status; st != "CANCELED" {
		t.Fatalf("status %s", st)
	}
	jobDir := filepath.Join(root, jobID)
	assertEmptyDir(t, filepath.Join(jobDir, "taskowned"))
	if fi, err := os.Stat(filepath.Join(jobDir, "shared")); err != nil || !fi.IsDir() {
		t.Fatalf("shared/ is gone: %v", err)
	}
	s.Close()
	mem.AssertSize(t, 0)
}

// Restoring a job directory whose newest checkpoint fails verification is
// refused, saying which checkpoint, why, and which option allows the
// fallback; with the option the older checkpoint is restored and the skip
// is reported.
func TestRestoreFallbackNeedsTheOption(t *testing.T) {
	root := filepath.Join(t.TempDir(), "ck")
	jobDir := failAfterTwo(t, root)
	manifests, err := filepath.Glob(filepath.Join(jobDir, "chk-2", "MANIFEST-*"))
	if err != nil || len(manifests) != 1 {
		t.Fatalf("MANIFEST of chk-2: %v %v", manifests, err)
	}
	if err := os.Truncate(manifests[0], 1); err != nil {
		t.Fatal(err)
	}

	log := &syncBuf{}
	s := New(Config{Stdout: &syncBuf{}, Log: log})
	mem := memtest.NewChecked()
	s.Mem = mem
	script := "SET 'execution.savepoint.path' = '" + jobDir + "';\n" + countScript(root, "")
	stmts, err := parser.ParseScript(script)
	if err != nil {
		t.Fatal(err)
	}
	var insert parser.Statement
	for _, st := range stmts {
		if _, ok := st.(*parser.Insert); ok {
			insert = st
			continue
		}
		if _, err := s.Execute(context.Background(), st); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.Execute(context.Background(), insert)
	if err == nil {
		t.Fatal("the restore fell back to chk-1 silently")
	}
	for _, want := range []string{filepath.Join(jobDir, "chk-2"), manifests[0], "execution.checkpointing.restore-fallback", filepath.Join(jobDir, "chk-1")} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error does not name %s: %v", want, err)
		}
	}
	if len(s.Jobs()) != 0 {
		t.Fatal("a job was started")
	}

	execAll(t, s, "SET 'execution.checkpointing.restore-fallback' = 'true';")
	if _, err := s.Execute(context.Background(), insert); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitJobs(context.Background()); err != nil {
		t.Fatal(err)
	}
	if in := s.Jobs()[0]; in.Status != "FINISHED" || in.RecordsIn != 290 {
		t.Fatalf("job: %s, %d records in (want 290 after checkpoint 1)", in.Status, in.RecordsIn)
	}
	if l := log.String(); !strings.Contains(l, "skipped a newer checkpoint") || !strings.Contains(l, manifests[0]) ||
		!strings.Contains(l, "restoring "+filepath.Join(jobDir, "chk-1")) {
		t.Fatalf("the fallback is not reported:\n%s", l)
	}
	s.Close()
	mem.AssertSize(t, 0)
}

// Every operator's parallelism is at most pipeline.max-parallelism, which
// is at most 32768 (key groups are kept in 16 bits); the errors name the
// option responsible.
func TestParallelismBounds(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, script string
		want         []string
	}{
		{"max-parallelism above 32768", `SET 'pipeline.max-parallelism' = '65536';`,
			[]string{"'pipeline.max-parallelism'", "'65536'", "32768"}},
		{"sink.parallelism", `SET 'pipeline.max-parallelism' = '4';
SET 'parallelism.default' = '2';
CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '3');
CREATE TABLE snk (id BIGINT) WITH ('connector' = 'print', 'sink.parallelism' = '8');
INSERT INTO snk SELECT id FROM src;`, []string{"'sink.parallelism' = '8' of table 'snk'", "'pipeline.max-parallelism' (4)"}},
		{"scan.parallelism", `SET 'pipeline.max-parallelism' = '4';
SET 'parallelism.default' = '2';
CREATE TABLE src (id BIGINT) WITH ('connector' = 'filesystem', 'path' = 'in.csv', 'format' = 'csv', 'scan.parallelism' = '5');
CREATE TABLE snk (id BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO snk SELECT id FROM src;`, []string{"'scan.parallelism' = '5' of table 'src'", "'pipeline.max-parallelism' (4)"}},
		{"parallelism.default of an INSERT", `SET 'pipeline.max-parallelism' = '4';
SET 'parallelism.default' = '5';
CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '3');
CREATE TABLE snk (id BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO snk SELECT id FROM src;`, []string{"'parallelism.default' (5)", "'pipeline.max-parallelism' (4)"}},
		{"parallelism.default of a SELECT", `SET 'pipeline.max-parallelism' = '4';
SET 'parallelism.default' = '5';
CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '3');
SELECT id % 2, COUNT(*) FROM src GROUP BY id % 2;`, []string{"'parallelism.default' (5)", "'pipeline.max-parallelism' (4)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _, mem := newTestSession(t)
			stmts, err := parser.ParseScript(tc.script)
			if err != nil {
				t.Fatal(err)
			}
			for i, st := range stmts {
				_, err := s.Execute(ctx, st)
				if i < len(stmts)-1 {
					if err != nil {
						t.Fatalf("%s: %v", st.SQL(), err)
					}
					continue
				}
				if err == nil {
					t.Fatalf("%s: accepted", st.SQL())
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Fatalf("error does not contain %q: %v", w, err)
					}
				}
			}
			if len(s.Jobs()) != 0 {
				t.Fatal("a job was started")
			}
			s.Close()
			mem.AssertSize(t, 0)
		})
	}
}
