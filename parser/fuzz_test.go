package parser

import (
	"errors"
	"strings"
	"testing"
)

func FuzzParseScript(f *testing.F) {
	for _, s := range []string{
		"SELECT a FROM t;",
		"SHOW TABLES; SET 'a' = 'b'; RESET; HELP; QUIT",
		"CREATE TABLE t (a INT NOT NULL, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'x');",
		"SELECT CAST(a AS DECIMAL(10, 2)), INTERVAL '1 02:03' DAY TO MINUTE FROM t, LATERAL TABLE(f(x)) AS T(c)",
		"SELECT w FROM t CROSS JOIN UNNEST(a) AS T(w) FULL OUTER JOIN u ON TRUE",
		"SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTES))",
		"EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT CASE WHEN x THEN 1 END FROM t; END;",
		"BEGIN STATEMENT SET; INSERT INTO a SELECT 1; END;",
		"EXPLAIN PLAN FOR SELECT 'x;y' -- c\n/* d */ FROM `t;`",
		"STOP JOB 'x' WITH SAVEPOINT WITH DRAIN",
		"SELECT a FORM t",
		"SELECT SUM(x) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) FROM t",
		"CREATE VIEW v (a) AS SELECT key FROM t",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		stmts, err := ParseScript(text)
		if err == nil {
			for _, s := range stmts {
				p := s.Position()
				if p.Offset < 0 || p.Offset > len(text) || !strings.HasPrefix(text[p.Offset:], s.SQL()) {
					t.Fatalf("statement position %+v does not point at %q", p, s.SQL())
				}
			}
			return
		}
		var pe *Error
		if !errors.As(err, &pe) {
			t.Fatalf("error %T is not *Error: %v", err, err)
		}
		if strings.Contains(pe.Msg, "internal parser error") {
			t.Fatalf("panic: %v", err)
		}
		if pe.Pos.Offset < 0 || pe.Pos.Offset > len(text) {
			t.Fatalf("position %+v outside the text (%d bytes): %v", pe.Pos, len(text), err)
		}
		if want := newLineIndex(text).pos(pe.Pos.Offset); want != pe.Pos {
			t.Fatalf("inconsistent position %+v, offset says %+v", pe.Pos, want)
		}
	})
}
