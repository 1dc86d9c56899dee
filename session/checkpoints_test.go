package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/streamsql/streamsql/checkpoint"
)

// boundedJob is a job over 30 sequence rows; dir is its checkpoint root.
func boundedJob(dir, extra string) string {
	return "SET 'execution.checkpointing.interval' = '50 ms';\n" +
		"SET 'state.checkpoints.dir' = '" + dir + "';\n" + extra +
		`CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '30',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '30');
CREATE TABLE snk (k BIGINT, c BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO snk SELECT id % 3, COUNT(*) FROM src GROUP BY id % 3;
`
}

func TestShowCheckpoints(t *testing.T) {
	tests := []struct {
		name   string
		script func(dir string) string
		rows   int // rows with status COMPLETED; -1: none at all
	}{
		{"no checkpointing", func(string) string {
			return `CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '3');
CREATE TABLE snk (id BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO snk SELECT id FROM src;`
		}, -1},
		// A finished job's checkpoints are deleted, unless retained.
		{"finished, deleted", func(dir string) string { return boundedJob(dir, "") }, -1},
		{"finished, retained", func(dir string) string {
			return boundedJob(dir, "SET 'execution.checkpointing.externalized-checkpoint-retention' = 'RETAIN_ON_CANCELLATION';\n")
		}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _, mem := newTestSession(t)
			dir := filepath.Join(t.TempDir(), "ck")
			res := execAll(t, s, tc.script(dir))
			jobID := res[len(res)-1].JobID
			if err := s.WaitJobs(context.Background()); err != nil {
				t.Fatal(err)
			}
			show := execAll(t, s, "SHOW CHECKPOINTS;")[0]
			if got := strings.Join(show.Columns, ","); got != "job id,checkpoint id,status,completed at,size,incremental,duration" {
				t.Fatalf("columns: %s", got)
			}
			if tc.rows < 0 {
				if show.Kind != ResultTable || len(show.Rows) != 0 {
					t.Fatalf("want an empty table, got %+v", show)
				}
			} else {
				if len(show.Rows) != tc.rows {
					t.Fatalf("rows: %v", show.Rows)
				}
				r := show.Rows[0]
				if r[0] != jobID || r[2] != "COMPLETED" || r[3] == "" || !strings.HasSuffix(r[4], "B") || !strings.HasSuffix(r[6], " ms") {
					t.Fatalf("row: %q", r)
				}
				if _, err := os.Stat(filepath.Join(dir, jobID, "chk-"+r[1], "_metadata")); err != nil {
					t.Fatalf("listed checkpoint not on disk: %v", err)
				}
			}
			s.Close()
			mem.AssertSize(t, 0)
		})
	}
}

func TestShowJobsAttempts(t *testing.T) {
	s, _, mem := newTestSession(t)
	dir := filepath.Join(t.TempDir(), "ck")
	// Row 20 fails the cast in every attempt: 1 + 2 restarts, then FAILED.
	execAll(t, s, `SET 'execution.checkpointing.interval' = '50 ms';
SET 'state.checkpoints.dir' = '`+dir+`';
SET 'restart-strategy.type' = 'fixed-delay';
SET 'restart-strategy.fixed-delay.attempts' = '2';
SET 'restart-strategy.fixed-delay.delay' = '0 ms';
CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '30',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '30');
CREATE TABLE snk (id BIGINT, x BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO snk SELECT id, CAST(CASE WHEN id = 20 THEN 'not a number, and a rather long explanation of why' ELSE '1' END AS BIGINT) FROM src;`)
	if err := s.WaitJobs(context.Background()); err == nil {
		t.Fatal("the job should fail")
	}
	show := execAll(t, s, "SHOW JOBS;")[0]
	if len(show.Columns) != 10 || show.Columns[8] != "attempts" || show.Columns[9] != "last failure" {
		t.Fatalf("columns: %q", show.Columns)
	}
	r := show.Rows[0]
	if r[2] != "FAILED" || r[8] != "3" {
		t.Fatalf("row: %q", r)
	}
	if n := utf8.RuneCountInString(r[9]); n > maxFailureWidth || !strings.HasSuffix(r[9], "...") || !strings.Contains(r[9], "src") {
		t.Fatalf("last failure %q (%d runes)", r[9], n)
	}
	if in := s.Jobs()[0]; len(in.Failures) != 2 || !strings.Contains(in.Failures[1], "cannot cast") {
		t.Fatalf("failures: %q", in.Failures)
	}
	s.Close()
	mem.AssertSize(t, 0)
}

func TestShorten(t *testing.T) {
	tests := []struct{ in, want string }{
		{"short", "short"},
		{"line 1\nline 2", "line 1 ..."},
		{strings.Repeat("é", 12), "ééééééé..."},
		{strings.Repeat("a", 10), strings.Repeat("a", 10)},
	}
	for _, tc := range tests {
		if got := shorten(tc.in, 10); got != tc.want {
			t.Errorf("shorten(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCheckpointsTable(t *testing.T) {
	id := "0123456789abcdef0123456789abcdef"
	res := CheckpointsTable([]checkpoint.JobCheckpoints{{
		JobID:       id,
		Checkpoints: []checkpoint.Info{{ID: 4, TimeMS: 1, Size: 3 << 20, Written: 1536, SyncMS: 2, AsyncMS: 5}},
		Incomplete:  []string{"chk-2", "chk-5"},
	}})
	want := [][]string{
		{id, "2", "INCOMPLETE", "", "", "", ""},
		{id, "4", "COMPLETED", res.Rows[1][3], "3.0 MiB", "1.5 KiB", "7 ms"},
		{id, "5", "INCOMPLETE", "", "", "", ""},
	}
	if len(res.Rows) != len(want) {
		t.Fatalf("rows: %q", res.Rows)
	}
	for i := range want {
		if strings.Join(res.Rows[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("row %d: %q, want %q", i, res.Rows[i], want[i])
		}
	}
	for n, s := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 5 << 30: "5.0 GiB"} {
		if got := FormatBytes(n); got != s {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, s)
		}
	}
}
