package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/session"
)

func str(s string) *string { return &s }

func TestBoxTable(t *testing.T) {
	tests := []struct {
		name string
		cols []string
		rows [][]string
		want string
	}{
		{
			name: "empty",
			cols: []string{"table name"},
			want: "Empty set\n",
		},
		{
			name: "one row",
			cols: []string{"table name"},
			rows: [][]string{{"t"}},
			want: `+------------+
| table name |
+------------+
|          t |
+------------+
1 row in set
`,
		},
		{
			name: "widest cell wins, short rows padded, newlines flattened",
			cols: []string{"k", "value"},
			rows: [][]string{{"parallelism.default", "4"}, {"a\nb"}},
			want: `+---------------------+-------+
|                   k | value |
+---------------------+-------+
| parallelism.default |     4 |
|                 a b |       |
+---------------------+-------+
2 rows in set
`,
		},
		{
			name: "runes count as one cell",
			cols: []string{"x"},
			rows: [][]string{{"héllo"}},
			want: `+-------+
|     x |
+-------+
| héllo |
+-------+
1 row in set
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := writeBoxTable(&b, tc.cols, tc.rows); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestTableau(t *testing.T) {
	long := strings.Repeat("x", 40)
	tests := []struct {
		name       string
		cols       []string
		batches    [][]session.Change
		terminated bool
		want       string
	}{
		{
			name: "no rows",
			cols: []string{"word", "cnt"},
			want: `+----+------------+------------+
| op |       word |        cnt |
+----+------------+------------+
+----+------------+------------+
Received a total of 0 rows
`,
		},
		{
			name: "changelog with NULL",
			cols: []string{"word", "cnt"},
			batches: [][]session.Change{
				{{Op: "+I", Values: []*string{str("hello"), str("1")}}},
				{{Op: "-U", Values: []*string{str("hello"), str("1")}}, {Op: "+U", Values: []*string{str("hello"), str("2")}}},
				{{Op: "+I", Values: []*string{nil, str("1")}}},
			},
			want: `+----+------------+------------+
| op |       word |        cnt |
+----+------------+------------+
| +I |      hello |          1 |
| -U |      hello |          1 |
| +U |      hello |          2 |
| +I |     <NULL> |          1 |
+----+------------+------------+
Received a total of 4 rows
`,
		},
		{
			name: "first batch widens, later values are cut, long names kept",
			cols: []string{"s", "a_rather_long_column_name"},
			batches: [][]session.Change{
				{{Op: "+I", Values: []*string{str("twelve chars"), str("1")}}},
				{{Op: "+I", Values: []*string{str(long), str("2")}}},
			},
			terminated: true,
			want: `+----+--------------+---------------------------+
| op |            s | a_rather_long_column_name |
+----+--------------+---------------------------+
| +I | twelve chars |                         1 |
| +I | xxxxxxxxx... |                         2 |
+----+--------------+---------------------------+
Query terminated, received a total of 2 rows
`,
		},
		{
			name: "width capped at the maximum",
			cols: []string{"s"},
			batches: [][]session.Change{
				{{Op: "+I", Values: []*string{str(long)}}},
			},
			want: "+----+--------------------------------+\n" +
				"| op |                              s |\n" +
				"+----+--------------------------------+\n" +
				"| +I | " + strings.Repeat("x", 27) + "... |\n" +
				"+----+--------------------------------+\n" +
				"Received a total of 1 row\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			tb := newTableau(&b, tc.cols)
			for _, batch := range tc.batches {
				if err := tb.write(batch); err != nil {
					t.Fatal(err)
				}
			}
			if err := tb.finish(tc.terminated); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestTableauStreamsEachBatch(t *testing.T) {
	var b bytes.Buffer
	tb := newTableau(&b, []string{"n"})
	if err := tb.write([]session.Change{{Op: "+I", Values: []*string{str("1")}}}); err != nil {
		t.Fatal(err)
	}
	// The header and the first row must be out before the query ends.
	if got := strings.Count(b.String(), "\n"); got != 4 {
		t.Fatalf("after one batch: %d lines written, want 4:\n%s", got, b.String())
	}
	tb.abort()
	if !strings.HasSuffix(b.String(), "| +I |          1 |\n+----+------------+\n") {
		t.Fatalf("abort must close the table without a count:\n%s", b.String())
	}
}

func TestTruncateCell(t *testing.T) {
	tests := []struct {
		in    string
		width int
		want  string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "..."},
		{"abcdef", 5, "ab..."},
		{"ééééé", 4, "é..."},
		{"abc", 2, ".."},
	}
	for _, tc := range tests {
		if got := truncateCell(tc.in, tc.width); got != tc.want {
			t.Errorf("truncateCell(%q, %d) = %q, want %q", tc.in, tc.width, got, tc.want)
		}
	}
}

func TestCompleter(t *testing.T) {
	c := &completer{names: func() []string { return []string{"Words", "word_count", "orders"} }}
	tests := []struct {
		line string
		pos  int // -1: end of line
		want []string
	}{
		{line: "sel", want: []string{"ect"}},
		{line: "SEL", want: []string{"ECT"}},
		{line: "select * from wor", want: []string{"ds", "d_count"}},
		{line: "SELECT * FROM ord", want: []string{"ers", "er"}},
		{line: "SELECT * FROM Ord", want: []string{"ers", "ER"}},
		{line: "show tab", want: []string{"le", "les"}},
		{line: "", want: nil},
		{line: "select ", want: nil},
		{line: "set 'parall", want: nil},
		{line: "select x from wor where", pos: 17, want: []string{"ds", "d_count"}},
	}
	for _, tc := range tests {
		line := []rune(tc.line)
		pos := len(line)
		if tc.pos > 0 {
			pos = tc.pos
		}
		got, n := c.Do(line, pos)
		var gs []string
		for _, g := range got {
			gs = append(gs, string(g))
		}
		sort.Strings(gs)
		want := append([]string(nil), tc.want...)
		sort.Strings(want)
		if strings.Join(gs, ",") != strings.Join(want, ",") {
			t.Errorf("Do(%q, %d) = %q, want %q", tc.line, pos, gs, want)
		}
		if len(got) > 0 {
			start := pos
			for start > 0 && isWordRune(line[start-1]) {
				start--
			}
			if n != pos-start {
				t.Errorf("Do(%q): length %d, want %d", tc.line, n, pos-start)
			}
		}
	}
}

func TestHistoryPath(t *testing.T) {
	home := t.TempDir()
	state := t.TempDir()
	tests := []struct {
		name, xdg, want string
	}{
		{"xdg", state, filepath.Join(state, "streamsql", "history")},
		{"relative xdg ignored", "relative/dir", filepath.Join(home, ".streamsql_history")},
		{"home", "", filepath.Join(home, ".streamsql_history")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HOME", home)
			t.Setenv("XDG_STATE_HOME", tc.xdg)
			if got := historyPath(); got != tc.want {
				t.Fatalf("historyPath() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPrepareHistory(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "state", "streamsql", "history")
	if err := prepareHistory(ok); err != nil {
		t.Fatalf("prepareHistory(%s): %v", ok, err)
	}
	if _, err := os.Stat(ok); err != nil {
		t.Fatal(err)
	}
	// A regular file where a directory should be: history is unavailable
	// (whatever the user's privileges), and the shell goes on without it.
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := prepareHistory(filepath.Join(blocker, "streamsql", "history")); err == nil {
		t.Fatal("prepareHistory under a regular file: no error")
	}
	if err := prepareHistory(""); err == nil {
		t.Fatal("prepareHistory(\"\"): no error")
	}
}

func TestErrorFormats(t *testing.T) {
	st, err := parser.Parse("SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	perr := &parser.Error{Pos: parser.Pos{Line: 3, Col: 14}, Msg: "unknown column 'x'"}
	tests := []struct {
		name      string
		err       error
		st        parser.Statement
		wantFile  string
		wantShell string
	}{
		{"parser error", perr, st, "job.sql:3:14: unknown column 'x'",
			"[ERROR] Could not execute SQL statement. Reason:\n3:14: unknown column 'x'"},
		{"wrapped parser error", errors.Join(errors.New("planning"), perr), st, "job.sql:3:14: unknown column 'x'",
			"[ERROR] Could not execute SQL statement. Reason:\n3:14: unknown column 'x'"},
		{"other error at the statement", errors.New("boom"), st, "job.sql:1:1: boom",
			"[ERROR] Could not execute SQL statement. Reason:\n1:1: boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := fileError("job.sql", tc.err, tc.st); got != tc.wantFile {
				t.Errorf("fileError = %q, want %q", got, tc.wantFile)
			}
			if got := shellError(tc.err, tc.st); got != tc.wantShell {
				t.Errorf("shellError = %q, want %q", got, tc.wantShell)
			}
		})
	}
}

func TestJobSummary(t *testing.T) {
	tests := []struct {
		in   session.JobInfo
		want string
	}{
		{session.JobInfo{ID: "ab12", Name: "insert-into_out", Status: "FINISHED", RecordsIn: 3, RecordsOut: 2},
			"job ab12 (insert-into_out) FINISHED: 3 records in, 2 out"},
		{session.JobInfo{ID: "ab12", Name: "x", Status: "FINISHED", RecordsIn: 5, RecordsOut: 3, SkippedBad: 2},
			"job ab12 (x) FINISHED: 5 records in, 3 out, 2 bad records skipped"},
		{session.JobInfo{ID: "ab12", Name: "x", Status: "FINISHED", RecordsIn: 3, RecordsOut: 2, SkippedBad: 1},
			"job ab12 (x) FINISHED: 3 records in, 2 out, 1 bad record skipped"},
	}
	for _, tc := range tests {
		if got := jobSummary(tc.in); got != tc.want {
			t.Errorf("jobSummary = %q, want %q", got, tc.want)
		}
	}
}

func TestHistoryEntry(t *testing.T) {
	if got := historyEntry("SELECT a,\n   b\nFROM t;\n"); got != "SELECT a, b FROM t;" {
		t.Fatalf("historyEntry = %q", got)
	}
}
