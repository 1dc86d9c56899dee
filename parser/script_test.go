package parser

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseScriptSplit(t *testing.T) {
	tests := []struct {
		name   string
		script string
		texts  []string
	}{
		{"single no semicolon", "SHOW TABLES", []string{"SHOW TABLES"}},
		{"two", "SHOW TABLES; SHOW VIEWS;", []string{"SHOW TABLES", "SHOW VIEWS"}},
		{"empty statements skipped", ";;  -- only a comment\n; /* c */ ;SHOW JOBS", []string{"SHOW JOBS"}},
		{"semicolon in string", "SET 'a;b' = 'c;''d';\nSHOW TABLES", []string{"SET 'a;b' = 'c;''d'", "SHOW TABLES"}},
		{"semicolon in comments", "SHOW TABLES -- x; y\n; /* ; */ SHOW VIEWS", []string{"SHOW TABLES", "SHOW VIEWS"}},
		{"semicolon in backquotes", "DESCRIBE `a;b`; HELP", []string{"DESCRIBE `a;b`", "HELP"}},
		{"statement set", "EXECUTE STATEMENT SET BEGIN\nINSERT INTO a SELECT x FROM t;\nINSERT INTO b SELECT CASE WHEN x THEN 1 END FROM t;\nEND;\nSHOW JOBS;",
			[]string{"EXECUTE STATEMENT SET BEGIN\nINSERT INTO a SELECT x FROM t;\nINSERT INTO b SELECT CASE WHEN x THEN 1 END FROM t;\nEND", "SHOW JOBS"}},
		{"begin statement set", "BEGIN STATEMENT SET;\nINSERT INTO a SELECT x FROM t;\nEND;",
			[]string{"BEGIN STATEMENT SET;\nINSERT INTO a SELECT x FROM t;\nEND"}},
		{"leading comment not in text", "-- job\nQUIT", []string{"QUIT"}},
		{"empty script", "  \n-- nothing\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stmts, err := ParseScript(tc.script)
			if err != nil {
				t.Fatal(err)
			}
			var texts []string
			for _, s := range stmts {
				texts = append(texts, s.SQL())
				if got := tc.script[s.Position().Offset:]; !strings.HasPrefix(got, s.SQL()) {
					t.Errorf("position %v does not point at %q", s.Position(), s.SQL())
				}
			}
			if !reflect.DeepEqual(texts, tc.texts) {
				t.Errorf("got %q, want %q", texts, tc.texts)
			}
		})
	}
}

func TestStatementPositions(t *testing.T) {
	script := "SHOW TABLES;\n\n  -- c\n  DESCRIBE t;\nSET 'a' = 'b'"
	stmts, err := ParseScript(script)
	if err != nil {
		t.Fatal(err)
	}
	want := []Pos{{0, 1, 1}, {23, 4, 3}, {35, 5, 1}}
	for i, s := range stmts {
		if s.Position() != want[i] {
			t.Errorf("statement %d at %+v, want %+v", i, s.Position(), want[i])
		}
	}
	d := stmts[1].(*Describe)
	if d.NamePos != (Pos{32, 4, 12}) {
		t.Errorf("name pos %+v", d.NamePos)
	}
}

func TestComplete(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"", false},
		{"SELECT 1", false},
		{"SELECT 1;", true},
		{"SELECT 1;  -- trailing comment", true},
		{"SELECT 1; SELECT 2", false},
		{"SELECT ';", false},
		{"SELECT ';'", false},
		{"SELECT ';';", true},
		{"SELECT 1 /* ; */", false},
		{"SELECT 1 /* ;", false},
		{"SELECT 1 -- ;", false},
		{"SELECT `a;", false},
		{"quit", true},
		{"  EXIT \n", true},
		{"Help", true},
		{"help me", false},
		{"QUIT;", true},
		{"BEGIN STATEMENT SET;", false},
		{"BEGIN STATEMENT SET;\nINSERT INTO a SELECT 1;", false},
		{"BEGIN STATEMENT SET;\nINSERT INTO a SELECT 1;\nEND;", true},
		{"EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT CASE WHEN x THEN 1 END FROM t;", false},
		{"EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT CASE WHEN x THEN 1 END FROM t; END;", true},
		{";", true},
	}
	for _, tc := range tests {
		if got := Complete(tc.text); got != tc.want {
			t.Errorf("Complete(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

// errorCase expects an *Error at line:col whose message contains msg.
type errorCase struct {
	name      string
	script    string
	line, col int
	msg       string
}

func checkErrors(t *testing.T, tests []errorCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseScript(tc.script)
			if err == nil {
				t.Fatalf("no error for %q", tc.script)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not *Error: %v", err, err)
			}
			if pe.Pos.Line != tc.line || pe.Pos.Col != tc.col || !strings.Contains(pe.Msg, tc.msg) {
				t.Errorf("got %v, want %d:%d: ...%s...", err, tc.line, tc.col, tc.msg)
			}
			// Offset, line and column agree.
			if want := newLineIndex(tc.script).pos(pe.Pos.Offset); want != pe.Pos {
				t.Errorf("inconsistent position %+v (offset says %+v)", pe.Pos, want)
			}
		})
	}
}

func TestScriptErrors(t *testing.T) {
	checkErrors(t, []errorCase{
		{"unknown statement", "FOO bar", 1, 1, `unsupported statement "FOO"; see HELP`},
		{"unknown statement 3rd line", "SHOW TABLES;\nSHOW VIEWS;\n  frobnicate;", 3, 3, `unsupported statement "FROBNICATE"`},
		{"unterminated string", "SHOW TABLES;\nSET 'a' = 'b", 2, 11, "unterminated string"},
		{"unterminated comment", "SHOW TABLES; /* x", 1, 14, "unterminated comment"},
		{"unterminated backquote", "DESCRIBE `x", 1, 10, "unterminated quoted identifier"},
		{"open statement set", "SHOW JOBS;\nEXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1;", 2, 1, "missing END"},
		{"query syntax error multi-line", "CREATE TABLE t (a INT) WITH ('connector' = 'x');\nSELECT a,\n  b FORM t WHERE a = 1;", 3, 10, `syntax error near "t"`},
		{"query error near keyword", "SHOW TABLES;\nSELECT a FROM t WHERE WHERE b", 2, 23, `syntax error near "WHERE"`},
		{"query unexpected end", "SELECT a FROM t WHERE\n", 1, 22, "unexpected end of statement"},
		{"query error after rewrite", "SELECT CAST(a AS INT), INTERVAL '1' DAY, x y z\nFROM t", 1, 46, `syntax error near "z"`},
		{"query error after lateral", "SELECT w FROM t, LATERAL TABLE(f(x)) AS T(w) WHERE ) ", 1, 52, `syntax error near ")"`},
		{"table function arg error", "SELECT w FROM t,\n LATERAL TABLE(f(x, ,)) AS T(w)", 2, 21, `syntax error near ","`},
		{"watermark error", "CREATE TABLE t (\n  ts TIMESTAMP(3),\n  WATERMARK FOR ts AS ts - - - \n) WITH ()", 3, 31, "unexpected end"},
		{"bad interval unit", "SELECT INTERVAL '5' FORTNIGHT FROM t", 1, 21, "expected an INTERVAL unit"},
		{"bad interval value", "SELECT INTERVAL 'x' SECOND FROM t", 1, 17, "invalid INTERVAL value"},
		{"bad cast type", "SELECT CAST(a AS DECIMAL(10 2)) FROM t", 1, 29, `expected ")", found "2"`},
		{"nested type", "CREATE TABLE t (a ARRAY<INT>)", 1, 24, "nested type ARRAY<...> is not supported"},
		{"duplicate option", "CREATE TABLE t (a INT) WITH (\n 'connector' = 'x',\n 'connector' = 'y')", 3, 2, "duplicate option 'connector'"},
		{"duplicate column", "CREATE TABLE t (a INT, A INT)", 1, 24, "duplicate column A"},
		{"pk enforced", "CREATE TABLE t (a INT, PRIMARY KEY (a))", 1, 24, "NOT ENFORCED"},
		{"show unknown", "SHOW DATABASES", 1, 6, "unsupported statement SHOW \"DATABASES\""},
		{"drop what", "DROP FUNCTION f", 1, 6, "expected TABLE or VIEW after DROP"},
		{"create what", "CREATE DATABASE d", 1, 8, "expected TABLE or VIEW after CREATE"},
		{"set junk", "SET a b = 1", 1, 7, `expected "=", found "b"`},
		{"stop job no quotes", "STOP JOB abc", 1, 10, "a job id in quotes"},
		{"stop job bad with", "STOP JOB 'a' WITH FLUSH", 1, 14, "expected WITH SAVEPOINT or WITH DRAIN"},
		{"statement set with select", "EXECUTE STATEMENT SET BEGIN\n  SELECT 1;\nEND", 2, 3, "only INSERT INTO"},
		{"explain show", "EXPLAIN SHOW TABLES", 1, 9, "EXPLAIN supports"},
		{"insert values", "INSERT INTO t VALUES (1), ", 1, 26, "expected a row (v1, v2, ...) after VALUES"},
		{"insert no query", "INSERT INTO t", 1, 14, "expected a query"},
		{"view not a query", "CREATE VIEW v AS DELETE FROM t", 1, 18, "expected a query"},
		{"help junk", "HELP me", 1, 6, `unexpected "me"`},
	})
}

func TestParseOne(t *testing.T) {
	if _, err := Parse("SHOW TABLES;"); err != nil {
		t.Fatal(err)
	}
	_, err := Parse("SHOW TABLES; SHOW VIEWS")
	var pe *Error
	if !errors.As(err, &pe) || pe.Pos != (Pos{13, 1, 14}) {
		t.Fatalf("got %v", err)
	}
	_, err = Parse(" -- nothing")
	if !errors.As(err, &pe) || pe.Msg != "empty statement" {
		t.Fatalf("got %v", err)
	}
}
