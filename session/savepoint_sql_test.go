package session

import (
	"context"
	"errors"
	"github.com/streamsql/streamsql/internal/memtest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/parser"
)

// logWatch is a session Log that signals lines containing a substring.
type logWatch struct {
	mu    sync.Mutex
	buf   strings.Builder
	waits []logWait
}

type logWait struct {
	sub string
	ch  chan struct{}
}

func (l *logWatch) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	keep := l.waits[:0]
	for _, w := range l.waits {
		if strings.Contains(l.buf.String(), w.sub) {
			close(w.ch)
		} else {
			keep = append(keep, w)
		}
	}
	l.waits = keep
	return len(p), nil
}

// waitFor returns a channel closed once the log contains sub.
func (l *logWatch) waitFor(sub string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := make(chan struct{})
	if strings.Contains(l.buf.String(), sub) {
		close(ch)
		return ch
	}
	l.waits = append(l.waits, logWait{sub, ch})
	return ch
}

func newLoggedSession(t *testing.T) (*Session, *logWatch, *memory.CheckedAllocator) {
	t.Helper()
	lw := &logWatch{}
	s := New(Config{Stdout: &syncBuf{}, Log: lw})
	mem := memtest.NewChecked()
	s.Mem = mem
	return s, lw, mem
}

// unboundedJob submits a checkpointed job that runs until stopped.
func unboundedJob(t *testing.T, s *Session, ckDir string) string {
	t.Helper()
	res := execAll(t, s, `SET 'execution.checkpointing.interval' = '50 ms';
SET 'state.checkpoints.dir' = '`+ckDir+`';
CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '200',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '1000000000');
CREATE TABLE snk (k BIGINT, c BIGINT) WITH ('connector' = 'filesystem', 'format' = 'json',
  'path' = '`+filepath.Join(filepath.Dir(ckDir), "out")+`');
INSERT INTO snk SELECT id % 3, COUNT(*) FROM src GROUP BY id % 3;`)
	return res[len(res)-1].JobID
}

func execErr(t *testing.T, s *Session, sql string) *parser.Error {
	t.Helper()
	st, err := parser.Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Execute(context.Background(), st)
	var pe *parser.Error
	if !errors.As(err, &pe) {
		t.Fatalf("%s: error %v, want a *parser.Error", sql, err)
	}
	return pe
}

func TestSavepointStatements(t *testing.T) {
	s, lw, mem := newLoggedSession(t)
	tmp := t.TempDir()
	into, def := filepath.Join(tmp, "into"), filepath.Join(tmp, "default")
	id := unboundedJob(t, s, filepath.Join(tmp, "ck"))
	<-lw.waitFor("checkpoint 1 complete")

	// CREATE SAVEPOINT ... INTO, then into state.savepoints.dir.
	r := execAll(t, s, "CREATE SAVEPOINT FOR JOB '"+id+"' INTO '"+into+"';")[0]
	if r.Kind != ResultTable || len(r.Rows) != 1 || !strings.HasPrefix(r.Rows[0][0], filepath.Join(into, "savepoint-"+id[:6]+"-")) {
		t.Fatalf("CREATE SAVEPOINT INTO: %+v", r)
	}
	sp1 := r.Rows[0][0]
	if _, err := os.Stat(filepath.Join(sp1, "_metadata")); err != nil {
		t.Fatalf("savepoint has no _metadata: %v", err)
	}
	if pe := execErr(t, s, "CREATE SAVEPOINT FOR JOB '"+id+"'"); !strings.Contains(pe.Msg, "state.savepoints.dir") {
		t.Fatalf("without a directory: %v", pe)
	}
	r = execAll(t, s, "SET 'state.savepoints.dir' = '"+def+"';\nCREATE SAVEPOINT FOR JOB '"+id+"';")[1]
	sp2 := r.Rows[0][0]
	if filepath.Dir(sp2) != def {
		t.Fatalf("default savepoint at %s", sp2)
	}
	// An interrupted savepoint of this job next to the first one, and
	// another job's under state.savepoints.dir.
	broken := filepath.Join(into, "savepoint-"+id[:6]+"-0badbad")
	foreign := filepath.Join(def, "savepoint-abcdef-1234")
	for _, d := range []string{broken, foreign} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	show := func(sql string) map[string]string {
		t.Helper()
		r := execAll(t, s, sql)[0]
		if strings.Join(r.Columns, ",") != "job id,savepoint path,status,time" {
			t.Fatalf("columns %q", r.Columns)
		}
		got := map[string]string{}
		for _, row := range r.Rows {
			got[row[1]] = row[0] + " " + row[2]
		}
		return got
	}
	all := show("SHOW SAVEPOINTS")
	want := map[string]string{sp1: id + " COMPLETED", sp2: id + " COMPLETED", broken: id + " INCOMPLETE", foreign: "abcdef INCOMPLETE"}
	if len(all) != len(want) {
		t.Fatalf("SHOW SAVEPOINTS: %v", all)
	}
	for p, w := range want {
		if all[p] != w {
			t.Errorf("SHOW SAVEPOINTS %s: %q, want %q", p, all[p], w)
		}
	}
	mine := show("SHOW SAVEPOINTS FOR JOB '" + id + "'")
	if len(mine) != 3 || mine[foreign] != "" {
		t.Fatalf("SHOW SAVEPOINTS FOR JOB: %v", mine)
	}
	if other := show("SHOW SAVEPOINTS FOR JOB 'abcdef0123456789abcdef0123456789'"); len(other) != 1 || other[foreign] == "" {
		t.Fatalf("another job's savepoints: %v", other)
	}

	// DESCRIBE JOB.
	r = execAll(t, s, "DESCRIBE JOB '"+id+"'")[0]
	props := map[string][]string{}
	for _, row := range r.Rows {
		props[row[0]] = append(props[row[0]], row[1])
	}
	if props["job id"][0] != id || props["status"][0] != "RUNNING" || props["parallelism"][0] == "" ||
		props["attempts"][0] != "1" || !strings.HasPrefix(props["checkpoint dir"][0], filepath.Join(tmp, "ck")) ||
		props["last checkpoint"][0] == "" || len(props["savepoint"]) != 3 || props["input holds"][0] != "0" ||
		props["in-flight batches restored"][0] != "0" || props["join rows mapped to files"][0] != "0" {
		t.Fatalf("DESCRIBE JOB: %q", r.Rows)
	}

	// SHOW CHECKPOINTS FOR JOB.
	r = execAll(t, s, "SHOW CHECKPOINTS FOR JOB '"+id+"'")[0]
	if len(r.Rows) == 0 {
		t.Fatal("SHOW CHECKPOINTS FOR JOB: no rows")
	}
	for _, row := range r.Rows {
		if row[0] != id {
			t.Fatalf("row of another job: %q", row)
		}
	}

	// Unknown jobs are reported at the id.
	for _, sql := range []string{"CREATE SAVEPOINT FOR JOB 'nope'", "DESCRIBE JOB 'nope'", "SHOW CHECKPOINTS FOR JOB 'nope'"} {
		pe := execErr(t, s, sql)
		if !strings.Contains(pe.Msg, "no job with id 'nope'") || pe.Pos.Col != strings.Index(sql, "'nope'")+1 {
			t.Errorf("%s: %v", sql, pe)
		}
	}

	// STOP JOB WITH SAVEPOINT goes to state.savepoints.dir and is listed.
	stop := execAll(t, s, "STOP JOB '"+id+"' WITH SAVEPOINT")[0]
	if got := show("SHOW SAVEPOINTS FOR JOB '" + id + "'"); len(got) != 4 || got[stop.Rows[0][0]] != id+" COMPLETED" {
		t.Fatalf("after STOP WITH SAVEPOINT: %v", got)
	}
	if in := s.Jobs()[0]; in.Status != "FINISHED" {
		t.Fatalf("job %s after stop", in.Status)
	}
	s.Close()
	mem.AssertSize(t, 0)
}

func TestSavepointNeedsCheckpointing(t *testing.T) {
	s, _, mem := newTestSession(t)
	res := execAll(t, s, `CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '10');
CREATE TABLE snk (id BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO snk SELECT id FROM src;`)
	id := res[len(res)-1].JobID
	pe := execErr(t, s, "CREATE SAVEPOINT FOR JOB '"+id+"' INTO '"+t.TempDir()+"'")
	if !strings.Contains(pe.Msg, "takes no checkpoints") || pe.Pos.Col != 26 {
		t.Fatalf("%v", pe)
	}
	if r := execAll(t, s, "SHOW SAVEPOINTS")[0]; len(r.Rows) != 0 {
		t.Fatalf("SHOW SAVEPOINTS: %q", r.Rows)
	}
	s.Close()
	mem.AssertSize(t, 0)
}
