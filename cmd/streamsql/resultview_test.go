package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/session"
)

func change(op string, vals ...string) session.Change {
	ch := session.Change{Op: op}
	for _, v := range vals {
		if v == "NULL" {
			ch.Values = append(ch.Values, nil)
		} else {
			ch.Values = append(ch.Values, str(v))
		}
	}
	return ch
}

func TestMaterialized(t *testing.T) {
	m := newMaterialized(0)
	for _, ch := range []session.Change{
		change("+I", "a", "1"), change("+I", "b", "1"), change("+I", "c", "NULL"),
		change("-U", "a", "1"), change("+U", "a", "2"), // an update stays in place
		change("-D", "b", "1"),
		change("-U", "x", "9"), // unknown rows are ignored
		change("+I", "a", "2"), // a duplicate row
	} {
		m.apply(ch)
	}
	want := [][]string{{"a", "2"}, {"c", nullText}, {"a", "2"}}
	if got := m.cells(10); !reflect.DeepEqual(got, want) {
		t.Errorf("table %q, want %q", got, want)
	}
	if got := m.cells(2); !reflect.DeepEqual(got, want[1:]) {
		t.Errorf("last two rows %q", got)
	}
	if m.live != 3 || m.changes != 8 {
		t.Errorf("live %d changes %d", m.live, m.changes)
	}

	// At most max rows: the oldest go first.
	m = newMaterialized(2)
	for _, v := range []string{"1", "2", "3"} {
		m.apply(change("+I", v))
	}
	m.apply(change("-D", "1")) // dropped already
	if got := m.cells(10); !reflect.DeepEqual(got, [][]string{{"2"}, {"3"}}) {
		t.Errorf("capped table %q", got)
	}

	// Many removals compact the table without changing it.
	m = newMaterialized(0)
	for i := 0; i < 3000; i++ {
		v := string(rune('a' + i%26))
		m.apply(change("+I", v, "x"))
		if i%3 != 0 {
			m.apply(change("-D", v, "x"))
		}
	}
	if m.live != 1000 || len(m.rows) > 2100 || len(m.cells(5000)) != 1000 {
		t.Errorf("after compaction: live %d, %d slots, %d cells", m.live, len(m.rows), len(m.cells(5000)))
	}
}

// selectStream runs a GROUP BY query over a small file, one row per batch,
// and returns its result.
func selectStream(t *testing.T) *session.Result {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "w.csv")
	if err := os.WriteFile(path, []byte("a\nb\na\nc\na\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := session.New(session.Config{})
	t.Cleanup(func() { s.Close() })
	stmts, err := parser.ParseScript("SET 'parallelism.default' = '1'; SET 'execution.batch-size' = '1';\n" +
		"CREATE TABLE w (s STRING) WITH ('connector' = 'filesystem', 'path' = '" + path + "', 'format' = 'csv');\n" +
		"SELECT s, COUNT(*) AS n FROM w GROUP BY s;")
	if err != nil {
		t.Fatal(err)
	}
	var res *session.Result
	for _, st := range stmts {
		if res, err = s.Execute(context.Background(), st); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

// lastFrame returns what a live view shows at the end: the text after its
// last "clear to the end of the screen".
func lastFrame(out string) string {
	return out[strings.LastIndex(out, "\033[J")+len("\033[J"):]
}

func TestTableModeLive(t *testing.T) {
	res := selectStream(t)
	var b bytes.Buffer
	vc := viewConfig{mode: modeTable, live: true, maxRows: 100, size: func() (int, int) { return 80, 24 }}
	terminated, err := presentQuery(&b, res.Columns, res.Stream, nil, vc)
	if err != nil || terminated {
		t.Fatalf("terminated %v, err %v", terminated, err)
	}
	want := `+---+---+
| s | n |
+---+---+
| a | 3 |
| b | 1 |
| c | 1 |
+---+---+
showing 3 of 3 rows (7 changes received); query finished
`
	if got := lastFrame(b.String()); got != want {
		t.Errorf("final frame\n%s\nwant\n%s", got, want)
	}
	// Every redraw moves up over the previous frame, whose line count it
	// knows: the first frame (waiting) has 5 lines.
	if !strings.Contains(b.String(), "\r\033[5A\033[J") {
		t.Errorf("no redraw over the first frame: %q", b.String())
	}
}

func TestTableModeLiveFitsTheScreen(t *testing.T) {
	res := selectStream(t)
	var b bytes.Buffer
	vc := viewConfig{mode: modeTable, live: true, maxRows: 100, size: func() (int, int) { return 12, 8 }}
	if _, err := presentQuery(&b, res.Columns, res.Stream, nil, vc); err != nil {
		t.Fatal(err)
	}
	// 8 lines: 2 rows fit; every line is cut to the width.
	want := "+---+---+\n| s | n |\n+---+---+\n| b | 1 |\n| c | 1 |\n+---+---+\nshowing the\n"
	if got := lastFrame(b.String()); got != want {
		t.Errorf("final frame\n%q\nwant\n%q", got, want)
	}
}

func TestTableModeNotLive(t *testing.T) {
	res := selectStream(t)
	var b bytes.Buffer
	if _, err := presentQuery(&b, res.Columns, res.Stream, nil, viewConfig{mode: modeTable, maxRows: 100}); err != nil {
		t.Fatal(err)
	}
	want := "+---+---+\n| s | n |\n+---+---+\n| a | 3 |\n| b | 1 |\n| c | 1 |\n+---+---+\n3 rows in set\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestChangelogModeLive(t *testing.T) {
	res := selectStream(t)
	var b bytes.Buffer
	vc := viewConfig{mode: modeChangelog, live: true, size: func() (int, int) { return 80, 11 }}
	if _, err := presentQuery(&b, res.Columns, res.Stream, nil, vc); err != nil {
		t.Fatal(err)
	}
	want := `+----+---+---+
| op | s | n |
+----+---+---+
| -U | a | 1 |
| +U | a | 2 |
| +I | c | 1 |
| -U | a | 2 |
| +U | a | 3 |
+----+---+---+
showing the last 5 of 7 changes; query finished
`
	if got := lastFrame(b.String()); got != want {
		t.Errorf("final frame\n%s\nwant\n%s", got, want)
	}
}

func TestLiveViewInterrupt(t *testing.T) {
	// A query over an unbounded source, stopped by the user.
	s := session.New(session.Config{})
	defer s.Close()
	stmts, err := parser.ParseScript("CREATE TABLE g (x BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '100');\nSELECT x FROM g;")
	if err != nil {
		t.Fatal(err)
	}
	var res *session.Result
	for _, st := range stmts {
		if res, err = s.Execute(context.Background(), st); err != nil {
			t.Fatal(err)
		}
	}
	interrupt := make(chan struct{})
	go func() {
		time.Sleep(300 * time.Millisecond)
		close(interrupt)
	}()
	var b bytes.Buffer
	vc := viewConfig{mode: modeTable, live: true, maxRows: 10, size: func() (int, int) { return 80, 24 }}
	terminated, err := presentQuery(&b, res.Columns, res.Stream, interrupt, vc)
	if err != nil || !terminated {
		t.Fatalf("terminated %v, err %v", terminated, err)
	}
	if f := lastFrame(b.String()); !strings.HasSuffix(f, "; query terminated\n") {
		t.Errorf("final frame %q", f)
	}
}

func TestClearScreenFilter(t *testing.T) {
	var b bytes.Buffer
	f := clearScreenFilter(&b)
	if r, ok := f('a'); r != 'a' || !ok || b.Len() != 0 {
		t.Errorf("a: %q %v, wrote %q", r, ok, b.String())
	}
	if r, ok := f(12); r != 12 || !ok || b.String() != "\033[H\033[2J" {
		t.Errorf("Ctrl-L: %q %v, wrote %q", r, ok, b.String())
	}
}

func TestAnnounceFailures(t *testing.T) {
	s := session.New(session.Config{})
	defer s.Close()
	stmts, err := parser.ParseScript("CREATE TABLE bad (x INT) WITH ('connector' = 'filesystem', 'path' = '" +
		filepath.Join(t.TempDir(), "missing.csv") + "', 'format' = 'csv');\n" +
		"CREATE TABLE out (x INT) WITH ('connector' = 'blackhole');\nINSERT INTO out SELECT x FROM bad;")
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range stmts {
		if _, err := s.Execute(context.Background(), st); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.WaitJobs(context.Background())
	jw := newJobWatcher(s, &bytes.Buffer{})
	var b bytes.Buffer
	jw.announce(&b)
	jw.announce(&b) // once per job
	id := s.Jobs()[0].ID
	want := "[ERROR] Job " + id + " (insert-into_out) failed: "
	if !strings.HasPrefix(b.String(), want) || !strings.Contains(b.String(), "missing.csv") || strings.Count(b.String(), "\n") != 1 {
		t.Errorf("announcement %q, want %q...", b.String(), want)
	}
	// The background announcer does the same.
	jw = newJobWatcher(s, &bytes.Buffer{})
	var lb lockedBuf
	stop := jw.announceFailures(&lb, 10*time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(lb.String(), want) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if !strings.Contains(lb.String(), want) {
		t.Errorf("announcer wrote %q", lb.String())
	}
}

// lockedBuf is a bytes.Buffer safe for one writer goroutine and a reader.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
