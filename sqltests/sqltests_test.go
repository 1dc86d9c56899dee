package sqltests

import (
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/internal/memtest"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/session"
)

// checkedAllocs hands out checked allocators and asserts, at the end of the
// test, that every one of them is back to zero bytes.
type checkedAllocs struct {
	mu     sync.Mutex
	allocs []*memory.CheckedAllocator
}

func (c *checkedAllocs) newAlloc() memory.Allocator {
	a := memory.NewCheckedAllocator(memtest.NewPoisoning(memory.NewGoAllocator()))
	c.mu.Lock()
	c.allocs = append(c.allocs, a)
	c.mu.Unlock()
	return a
}

func (c *checkedAllocs) assertZero(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.allocs {
		a.AssertSize(t, 0)
	}
}

func TestGolden(t *testing.T) {
	var ca checkedAllocs
	var inFlight atomic.Int64
	RunTest(t, "testdata", Options{Variants: !testing.Short(), Crash: true, InFlightRestored: &inFlight, newAlloc: ca.newAlloc})
	ca.assertZero(t)
	// The unaligned crash pass proves something only if restored jobs
	// replayed in-flight data.
	if !t.Failed() && inFlight.Load() == 0 {
		t.Error("the crash variant's unaligned pass restored no in-flight batches")
	}
	t.Logf("unaligned crash pass: %d in-flight batches restored", inFlight.Load())
}

// TestVariantApplies checks that a variant's parallelism and batch size
// reach the session, and survive RESET.
func TestVariantApplies(t *testing.T) {
	r, err := newFileRunner("testdata/ddl.sqltest", t.TempDir(), variant{Parallelism: 4, BatchSize: 7}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	for _, in := range []string{"SET;", "RESET;\nSET;", "RESET 'parallelism.default';\nSET;"} {
		out := r.run(&ddCase{Cmd: "exec", Input: in}).out
		if !strings.Contains(out, "parallelism.default | 4") || !strings.Contains(out, "execution.batch-size | 7") {
			t.Errorf("%s:\n%s", in, out)
		}
	}
}

func TestFoldPrinted(t *testing.T) {
	got := foldPrinted([]string{
		"2> +I[a, 1]", "1> +I[b, 1]", "2> -U[a, 1]", "3> +U[a, 2]", "x:1> +I[c]", "x:3> -D[c]", "x> +I[d]", "-D[zz]",
	})
	want := []string{"+I[a, 2]", "+I[b, 1]", "x> +I[d]", "error: retraction of a row not printed before: -D[zz]"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestFoldFileLines(t *testing.T) {
	got := foldFileLines([]string{
		`{"op":"+I","k":"a","n":1}`, `{"op":"-U","k":"a","n":1}`, `{"op":"+U","k":"a","n":2}`, `plain,line`, `{"k":"b"}`,
	})
	want := []string{`plain,line`, `{"k":"a","n":2}`, `{"k":"b"}`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestFoldChanges(t *testing.T) {
	s := func(v string) *string { return &v }
	got := foldChanges([]string{"k", "n"}, []session.Change{
		{Op: "+I", Values: []*string{s("a"), s("1")}},
		{Op: "+I", Values: []*string{nil, s("1")}},
		{Op: "-U", Values: []*string{s("a"), s("1")}},
		{Op: "+U", Values: []*string{s("a"), s("2")}},
		{Op: "-D", Values: []*string{s("b"), s("1")}},
	})
	want := []string{"k | n", "NULL | 1", "a | 2", "error: -D of a row that is not in the table: b | 1"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestShowJobs runs jobs and checks SHOW JOBS, whose ids and times make it
// unfit for golden files.
func TestShowJobs(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	var out lockedBuffer
	s := session.New(session.Config{Stdout: &out})
	s.Mem = mem
	defer s.Close()
	ctx := context.Background()
	run := func(sql string) *session.Result {
		t.Helper()
		st, err := parser.Parse(sql)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Execute(ctx, st)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return res
	}
	run("SET 'parallelism.default' = '2'")
	run("CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '10', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '10')")
	run("CREATE TABLE bad (id INT) WITH ('connector' = 'filesystem', 'path' = '" + filepath.Join(t.TempDir(), "missing.csv") + "', 'format' = 'csv')")
	run("CREATE TABLE out1 (id BIGINT) WITH ('connector' = 'blackhole')")
	run("CREATE TABLE out2 (id INT) WITH ('connector' = 'print')")
	run("SET 'pipeline.name' = 'named job'")
	j1 := run("INSERT INTO out1 SELECT id FROM src WHERE id > 3")
	run("RESET 'pipeline.name'")
	j2 := run("INSERT INTO out2 SELECT id FROM bad")
	if err := s.WaitJobs(ctx); err == nil || !strings.Contains(err.Error(), j2.JobID) {
		t.Fatalf("WaitJobs: %v, want the failure of job %s", err, j2.JobID)
	}
	res := run("SHOW JOBS")
	if res.Kind != session.ResultTable || len(res.Rows) != 2 {
		t.Fatalf("SHOW JOBS: %+v", res)
	}
	idRe := regexp.MustCompile(`^[0-9a-f]{32}$`)
	want := []struct {
		id, name, status string
		in, out          string
	}{
		{j1.JobID, "named job", "FINISHED", "10", "7"},
		{j2.JobID, "insert-into_out2", "FAILED", "0", "0"},
	}
	for i, w := range want {
		row := res.Rows[i]
		if !idRe.MatchString(row[0]) || row[0] != w.id || row[1] != w.name || row[2] != w.status {
			t.Errorf("row %d: %q, want id %s name %q status %q", i, row, w.id, w.name, w.status)
		}
		if row[4] != w.in || row[5] != w.out {
			t.Errorf("row %d: records in/out %s/%s, want %s/%s", i, row[4], row[5], w.in, w.out)
		}
	}
	// The cause is in "last failure" (shortened), whole in the job's info.
	lf := slices.Index(res.Columns, "last failure")
	if lf < 0 {
		t.Fatalf("SHOW JOBS has no 'last failure' column: %q", res.Columns)
	}
	cause := s.Jobs()[1].Err
	if cause == nil || !strings.Contains(cause.Error(), "missing.csv") ||
		!strings.HasPrefix(cause.Error(), strings.TrimSuffix(res.Rows[1][lf], "...")) {
		t.Errorf("failed job's last failure %q, cause %v", res.Rows[1][lf], cause)
	}
}
