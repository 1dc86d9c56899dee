package sqltests

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseDD(t *testing.T) {
	text := `# comment
exec a=1 b=(x, y)
SELECT 1;

SELECT 2
----
one
two

query error \
  more
SELECT 3
----
----
x

y
----
----

files dir=$TMP/out
----
`
	f, err := parseDD("t", text)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		line          int
		cmd, full, in string
		expected      string
	}{
		{2, "exec", "exec a=1 b=(x, y)", "SELECT 1;\n\nSELECT 2", "one\ntwo\n"},
		{10, "query", "query error more", "SELECT 3", "x\n\ny\n"},
		{21, "files", "files dir=$TMP/out", "", ""},
	}
	if len(f.Cases) != len(want) {
		t.Fatalf("got %d cases, want %d", len(f.Cases), len(want))
	}
	for i, w := range want {
		c := f.Cases[i]
		if c.Line != w.line || c.Cmd != w.cmd || c.fullCmd() != w.full || c.Input != w.in || c.Expected != w.expected {
			t.Errorf("case %d: got line %d cmd %q full %q input %q expected %q", i, c.Line, c.Cmd, c.fullCmd(), c.Input, c.Expected)
		}
	}
	// Rendering with the expected outputs gives the file back, except the
	// last case, whose empty output gets datadriven's layout.
	outs := []string{"one\ntwo\n", "x\n\ny\n", ""}
	if got := f.render(outs); got != text {
		t.Errorf("render:\n%s\nwant:\n%s", got, text)
	}
}

// TestTestdataRoundTrip checks that every test file is in the layout
// datadriven's rewrite produces, so that RunFiles' reader and writer agree
// with datadriven's.
func TestTestdataRoundTrip(t *testing.T) {
	files, err := ListFiles([]string{"testdata"})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no test files")
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parseDD(p, string(data))
		if err != nil {
			t.Fatal(err)
		}
		outs := make([]string, len(f.Cases))
		for i, c := range f.Cases {
			outs[i] = c.Expected
		}
		if got := f.render(outs); got != string(data) {
			t.Errorf("%s: rendering the parsed file does not give it back:\n%s", p, lineDiff(string(data), got))
		}
	}
}

func TestRunFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.sqltest")
	text := `exec
CREATE TABLE t (x INT) WITH ('connector' = 'datagen', 'number-of-rows' = '3', 'fields.x.kind' = 'sequence', 'fields.x.start' = '1', 'fields.x.end' = '3');
----
wrong

query
SELECT SUM(x) AS s FROM t
----
`
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	failed, err := RunFiles([]string{dir}, Options{Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	if failed != 2 || !strings.Contains(out.String(), "FAIL "+p+":1: exec") || !strings.Contains(out.String(), "  + [INFO] Execute statement succeeded.") {
		t.Fatalf("failed=%d, output:\n%s", failed, out.String())
	}
	out.Reset()
	if failed, err = RunFiles([]string{p}, Options{Out: &out, Rewrite: true}); err != nil || failed != 0 {
		t.Fatalf("rewrite: failed=%d err=%v\n%s", failed, err, out.String())
	}
	out.Reset()
	if failed, err = RunFiles([]string{p}, Options{Out: &out, Variants: true}); err != nil || failed != 0 {
		t.Fatalf("after rewrite: failed=%d err=%v\n%s", failed, err, out.String())
	}
	if out.String() != "PASS "+p+"\n" {
		t.Fatalf("output: %q", out.String())
	}
	data, _ := os.ReadFile(p)
	if !strings.Contains(string(data), "+U[6]\nfinal:\ns\n6\n") {
		t.Fatalf("rewritten file:\n%s", data)
	}
}
