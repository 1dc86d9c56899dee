package session

import (
	"bytes"
	"context"
	"errors"
	"github.com/streamsql/streamsql/internal/memtest"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/parser"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTestSession(t *testing.T) (*Session, *syncBuf, *memory.CheckedAllocator) {
	t.Helper()
	out := &syncBuf{}
	s := New(Config{Stdout: out})
	mem := memtest.NewChecked()
	s.Mem = mem
	return s, out, mem
}

func execAll(t *testing.T, s *Session, script string) []*Result {
	t.Helper()
	stmts, err := parser.ParseScript(script)
	if err != nil {
		t.Fatal(err)
	}
	var res []*Result
	for _, st := range stmts {
		r, err := s.Execute(context.Background(), st)
		if err != nil {
			t.Fatalf("%s: %v", st.SQL(), err)
		}
		res = append(res, r)
	}
	return res
}

func TestShowJobsAndStopJob(t *testing.T) {
	before := runtime.NumGoroutine()
	s, _, mem := newTestSession(t)
	res := execAll(t, s, `
CREATE TABLE src (k INT, v BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '100',
  'fields.k.min' = '1', 'fields.k.max' = '5');
CREATE TABLE snk (k INT, c BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO snk SELECT k, COUNT(*) FROM src GROUP BY k;`)
	job := res[2]
	if job.Kind != ResultJob || !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(job.JobID) {
		t.Fatalf("INSERT should return a 32-hex job id, got %+v", job)
	}
	show := execAll(t, s, "SHOW JOBS;")[0]
	if len(show.Rows) != 1 || show.Rows[0][0] != job.JobID || show.Rows[0][2] != "RUNNING" {
		t.Fatalf("SHOW JOBS: %v", show.Rows)
	}
	if got := strings.Join(show.Columns, ","); got != "job id,job name,status,start time,records in,records out,skipped records,late records,attempts,last failure" {
		t.Fatalf("SHOW JOBS columns: %s", got)
	}
	execAll(t, s, "STOP JOB '"+job.JobID+"';")
	jobs := s.Jobs()
	if jobs[0].Status != "CANCELED" {
		t.Fatalf("after STOP JOB: %s", jobs[0].Status)
	}
	if _, err := s.Execute(context.Background(), mustParse(t, "STOP JOB 'ffff';")); err == nil {
		t.Fatal("stopping an unknown job must fail")
	}
	s.Close()
	mem.AssertSize(t, 0)
	waitGoroutines(t, before)
}

func mustParse(t *testing.T, q string) parser.Statement {
	t.Helper()
	st, err := parser.Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestSelectStreamCancelAndEnd(t *testing.T) {
	before := runtime.NumGoroutine()
	s, _, mem := newTestSession(t)
	execAll(t, s, `CREATE TABLE src (k INT) WITH ('connector' = 'datagen', 'rows-per-second' = '0',
  'fields.k.min' = '1', 'fields.k.max' = '3');`)
	// Unbounded: cancel after some changes arrived.
	r := execAll(t, s, "SELECT k, COUNT(*) FROM src GROUP BY k;")[0]
	if r.Kind != ResultStream || strings.Join(r.Columns, ",") != "k,EXPR$1" {
		t.Fatalf("bad stream result %+v", r)
	}
	n := 0
	for batch := range r.Stream.Changes {
		n += len(batch)
		if n >= 10 {
			r.Stream.Cancel()
			break
		}
	}
	for range r.Stream.Changes { // drain until closed
	}
	if err := r.Stream.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled stream: %v", err)
	}
	// Bounded: ends by itself with the full result.
	execAll(t, s, `CREATE TABLE b (k INT) WITH ('connector' = 'datagen', 'number-of-rows' = '100',
  'fields.k.kind' = 'sequence', 'fields.k.start' = '1', 'fields.k.end' = '100');`)
	r = execAll(t, s, "SELECT SUM(k) FROM b;")[0]
	var last []Change
	for batch := range r.Stream.Changes {
		last = batch
	}
	if err := r.Stream.Err(); err != nil {
		t.Fatal(err)
	}
	final := last[len(last)-1]
	if final.Op == "-U" || *final.Values[0] != "5050" {
		t.Fatalf("final change %v %v", final.Op, *final.Values[0])
	}
	s.Close()
	mem.AssertSize(t, 0)
	waitGoroutines(t, before)
}

func TestJobFailureIsReported(t *testing.T) {
	s, _, mem := newTestSession(t)
	dir := t.TempDir()
	execAll(t, s, `
CREATE TABLE src (a STRING) WITH ('connector' = 'datagen', 'number-of-rows' = '10', 'fields.a.length' = '3');
CREATE TABLE snk (a INT) WITH ('connector' = 'filesystem', 'path' = '`+dir+`', 'format' = 'csv');
INSERT INTO snk SELECT CAST(a AS INT) FROM src WHERE a LIKE '%z%' OR TRUE;`)
	err := s.WaitJobs(context.Background())
	if err == nil || !strings.Contains(err.Error(), "cannot cast") {
		t.Fatalf("want a cast failure, got %v", err)
	}
	if st := s.Jobs()[0].Status; st != "FAILED" {
		t.Fatalf("status %s", st)
	}
	s.Close()
	mem.AssertSize(t, 0)
}

func TestSetErrorsNameTheKey(t *testing.T) {
	s, _, _ := newTestSession(t)
	_, err := s.Execute(context.Background(), mustParse(t, "SET 'execution.batch-sise' = '3';"))
	if err == nil || !strings.Contains(err.Error(), "'execution.batch-size'") {
		t.Fatalf("want a suggestion, got %v", err)
	}
	_, err = s.Execute(context.Background(), mustParse(t, "SET 'execution.batch-size' = '0';"))
	var pe *parser.Error
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "execution.batch-size") || pe.Pos.Col != 30 {
		t.Fatalf("want an error at the value naming the key, got %v", err)
	}
}

func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < 1_000_000; i++ {
		if runtime.NumGoroutine() <= n {
			return
		}
		runtime.Gosched()
	}
	buf := make([]byte, 1<<16)
	t.Fatalf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
}

// TestCheckpointedJobsWithPlainSinks: print and blackhole sinks are not
// two-phase; completed checkpoints must not disturb them (they used to fail
// the attempt at every checkpoint, hidden by restarts).
func TestCheckpointedJobsWithPlainSinks(t *testing.T) {
	for _, sink := range []string{"blackhole", "print"} {
		t.Run(sink, func(t *testing.T) {
			s, out, mem := newTestSession(t)
			s.CheckpointTestHook = func(c *exec.CheckpointConfig) { c.TriggerEveryBatch = true }
			execAll(t, s, `
SET 'parallelism.default' = '2';
SET 'execution.batch-size' = '10';
SET 'execution.checkpointing.interval' = '1 h';
SET 'state.checkpoints.dir' = '`+t.TempDir()+`';
SET 'restart-strategy.type' = 'fixed-delay';
SET 'restart-strategy.fixed-delay.delay' = '0 ms';
CREATE TABLE src (k INT, v BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '500',
  'fields.k.min' = '1', 'fields.k.max' = '5');
CREATE TABLE snk (k INT, c BIGINT) WITH ('connector' = '`+sink+`');
INSERT INTO snk SELECT k, COUNT(*) FROM src GROUP BY k;`)
			if err := s.WaitJobs(context.Background()); err != nil {
				t.Fatal(err)
			}
			info := s.Jobs()[0]
			if info.Status != "FINISHED" || info.Attempts != 1 || info.Checkpoints < 10 {
				t.Fatalf("status %s, %d attempts, %d checkpoints: %v", info.Status, info.Attempts, info.Checkpoints, info.Failures)
			}
			if sink == "print" && !strings.Contains(out.String(), "+I[") {
				t.Fatalf("print output missing: %q", out.String())
			}
			s.Close()
			mem.AssertSize(t, 0)
		})
	}
}
