package parser

import (
	"strings"
	"testing"
)

// Columns count characters: an error after non-ASCII text is where an
// editor shows it (they counted UTF-8 bytes).
func TestColumnsCountCharacters(t *testing.T) {
	tests := []struct{ sql, want string }{
		{"SELECT 'héllo wörld', ,x FROM t", "1:23: syntax error"},
		{"SELECT 1;\n-- ünïcödé\nSELECT '日本', 'x", "3:14: unterminated string literal"},
		{"CREATE TABLE t (é INT, x INT WITH ('connector' = 'blackhole')", "1:30: expected"},
	}
	for _, tc := range tests {
		_, err := ParseScript(tc.sql)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.sql, err, tc.want)
		}
	}
}

// ParseScriptAt numbers lines from the given line: a shell reports
// positions in its whole input although it parses one buffer at a time.
func TestParseScriptAt(t *testing.T) {
	stmts, err := ParseScriptAt("SHOW TABLES;\n  DESCRIBE t;", 7)
	if err != nil {
		t.Fatal(err)
	}
	if p := stmts[1].Position(); p != (Pos{Offset: 15, Line: 8, Col: 3}) {
		t.Errorf("second statement at %+v", p)
	}
	_, err = ParseScriptAt("\nSELECT ,", 3)
	if err == nil || !strings.HasPrefix(err.Error(), "4:8: ") {
		t.Errorf("error %v, want at 4:8", err)
	}
}
