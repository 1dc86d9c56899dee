package parser

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pingcap/tidb/pkg/parser/ast"
)

// selectOf returns the top SELECT of a SELECT or INSERT statement.
func selectOf(t *testing.T, st Statement) (*ast.SelectStmt, *QueryContext) {
	t.Helper()
	var q *Query
	switch x := st.(type) {
	case *Select:
		q = x.Query
	case *Insert:
		q = x.Query
	default:
		t.Fatalf("unexpected statement %T", st)
	}
	return q.Node.(*ast.SelectStmt), q.Ctx
}

func TestUIDHint(t *testing.T) {
	tests := []struct {
		sql  string
		want string // "" = no hint
		line int
		col  int
	}{
		{"SELECT /*+ UID('wc') */ word, COUNT(*) FROM t GROUP BY word", "wc", 1, 12},
		{"select /*+ uid(wc) */ word, count(*) from t group by word", "wc", 1, 12},
		{"INSERT INTO s\nSELECT /*+ UID('it''s a-b') */ word, COUNT(*) FROM t GROUP BY word", "it's a-b", 2, 12},
		{"SELECT /*+ UID( 'n1' ) */ word FROM t", "n1", 1, 12},
		{"SELECT /* a comment */ word FROM t", "", 0, 0},
		{"SELECT word FROM t", "", 0, 0},
	}
	for _, tc := range tests {
		st, err := Parse(tc.sql)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		sel, ctx := selectOf(t, st)
		name, pos, ok := ctx.UIDHint(sel)
		if ok != (tc.want != "") || name != tc.want {
			t.Errorf("%s: UIDHint = %q, %v; want %q", tc.sql, name, ok, tc.want)
			continue
		}
		if ok && (pos.Line != tc.line || pos.Col != tc.col) {
			t.Errorf("%s: position %v, want %d:%d", tc.sql, pos, tc.line, tc.col)
		}
	}
}

func TestUIDHintNested(t *testing.T) {
	st, err := Parse("SELECT /*+ UID('outer') */ c, COUNT(*) FROM (SELECT /*+ UID('inner') */ word, COUNT(*) AS c FROM t GROUP BY word) GROUP BY c")
	if err != nil {
		t.Fatal(err)
	}
	sel, ctx := selectOf(t, st)
	if n, _, _ := ctx.UIDHint(sel); n != "outer" {
		t.Errorf("outer hint %q", n)
	}
	inner := sel.From.TableRefs.Left.(*ast.TableSource).Source.(*ast.SelectStmt)
	if n, _, _ := ctx.UIDHint(inner); n != "inner" {
		t.Errorf("inner hint %q", n)
	}
}

func TestUIDHintErrors(t *testing.T) {
	tests := []struct{ sql, want string }{
		{"SELECT word /*+ UID('x') */ FROM t", "1:17: a /*+ UID('name') */ hint must follow SELECT directly"},
		{"SELECT /*+ UID() */ word FROM t", "1:12: malformed UID hint"},
		{"SELECT /*+ UID('') */ word FROM t", "1:12: empty operator id"},
		{"SELECT /*+ UID('a') UID('b') */ word FROM t", "1:21: a SELECT takes one UID hint"},
		{"SELECT /*+ UID('a'), QB_NAME(x) */ word FROM t", "1:22: unknown hint QB_NAME"},
		{"SELECT word FROM t /*+ UID('x') */", "1:24: a /*+ UID('name') */ hint must follow SELECT directly"},
	}
	for _, tc := range tests {
		_, err := Parse(tc.sql)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.sql, err, tc.want)
		}
	}
}

func TestExplainUpgrade(t *testing.T) {
	st, err := Parse("EXPLAIN UPGRADE FROM SAVEPOINT '/sp/savepoint-1' INSERT INTO s SELECT * FROM t")
	if err != nil {
		t.Fatal(err)
	}
	eu, ok := st.(*ExplainUpgrade)
	if !ok {
		t.Fatalf("got %T", st)
	}
	if eu.Path != "/sp/savepoint-1" || eu.PathPos != (Pos{31, 1, 32}) {
		t.Errorf("path %q at %v", eu.Path, eu.PathPos)
	}
	if ins, ok := eu.Stmt.(*Insert); !ok || ins.Table != "s" {
		t.Errorf("inner %#v", eu.Stmt)
	}
	st, err = Parse("explain upgrade from savepoint 'p' EXECUTE STATEMENT SET BEGIN INSERT INTO s SELECT * FROM t; END")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.(*ExplainUpgrade).Stmt.(*StatementSet); !ok {
		t.Errorf("inner %T", st.(*ExplainUpgrade).Stmt)
	}

	errs := []struct{ sql, want string }{
		{"EXPLAIN UPGRADE", "1:16: expected FROM"},
		{"EXPLAIN UPGRADE FROM SAVEPOINT", "1:31: expected a savepoint path in quotes"},
		{"EXPLAIN UPGRADE FROM SAVEPOINT ' '", "1:32: empty savepoint path"},
		{"EXPLAIN UPGRADE FROM SAVEPOINT 'p'", "1:35: expected INSERT or EXECUTE STATEMENT SET"},
		{"EXPLAIN UPGRADE FROM SAVEPOINT 'p' SELECT 1", "1:36: EXPLAIN UPGRADE supports INSERT and EXECUTE STATEMENT SET"},
	}
	for _, tc := range errs {
		_, err := Parse(tc.sql)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.sql, err, tc.want)
		}
	}
}

func TestOptionsHint(t *testing.T) {
	sql := "SELECT a FROM t /*+ OPTIONS('path' = '/x', 'format'='json') */ AS x, LATERAL TABLE(SPLIT(a)) AS T(w)"
	sel, ctx := mustQuery(t, sql)
	var refs []*TableRef
	for _, tn := range collect[*ast.TableName](sel) {
		if ref, ok := ctx.TableRef(tn); ok {
			refs = append(refs, ref)
			if tn.Name.O != "t" {
				t.Errorf("name %q", tn.Name.O)
			}
		}
	}
	if len(refs) != 1 {
		t.Fatalf("%d table refs", len(refs))
	}
	want := []Option{
		{Key: "path", Value: "/x", KeyPos: Pos{28, 1, 29}, ValuePos: Pos{37, 1, 38}},
		{Key: "format", Value: "json", KeyPos: Pos{43, 1, 44}, ValuePos: Pos{52, 1, 53}},
	}
	if !reflect.DeepEqual(refs[0].Options, want) {
		t.Errorf("options %+v", refs[0].Options)
	}
	if refs[0].HintPos != (Pos{16, 1, 17}) || refs[0].Pos != (Pos{14, 1, 15}) {
		t.Errorf("hint at %v, name at %v", refs[0].HintPos, refs[0].Pos)
	}

	st, err := Parse("INSERT INTO s /*+ OPTIONS('sink.parallelism' = '2') */ (a, b) SELECT a, b FROM t")
	if err != nil {
		t.Fatal(err)
	}
	ins := st.(*Insert)
	if len(ins.Options) != 1 || ins.Options[0].Key != "sink.parallelism" || ins.HintPos != (Pos{14, 1, 15}) {
		t.Errorf("insert options %+v at %v", ins.Options, ins.HintPos)
	}
	if !reflect.DeepEqual(ins.ColumnPos, []Pos{{56, 1, 57}, {59, 1, 60}}) {
		t.Errorf("column positions %v", ins.ColumnPos)
	}
}

func TestHintErrors(t *testing.T) {
	tests := []struct{ sql, want string }{
		{"SELECT /*+ OPTIONS('a' = 'b') */ x FROM t", "1:12: a /*+ OPTIONS('key' = 'value') */ hint must follow a table name directly"},
		{"SELECT x FROM t AS a /*+ OPTIONS('a' = 'b') */", "1:26: a /*+ OPTIONS('key' = 'value') */ hint must follow a table name directly"},
		{"SELECT x FROM t /*+ OPTION('a' = 'b') */", "1:21: unknown hint OPTION (streamsql knows OPTIONS after a table name and UID after SELECT); did you mean OPTIONS?"},
		{"SELECT x FROM t /*+ BROADCAST(t) */", "1:21: the BROADCAST hint is not supported yet"},
		{"SELECT x FROM t /*+ OPTIONS('a' = 'b') OPTIONS('c' = 'd') */", "1:40: a table takes one OPTIONS hint"},
		{"SELECT x FROM t /*+ OPTIONS('a' = 'b', 'a' = 'c') */", "1:40: duplicate option 'a' in the OPTIONS hint"},
		{"SELECT x FROM t /*+ OPTIONS('a' 'b') */", "1:33: expected \"=\", found \"'b'\""},
		{"SELECT x FROM t /*+ OPTIONS('a' = 1) */", "1:35: expected a value in quotes for option 'a'"},
		{"SELECT x FROM t /*+ OPTIONS() */", "1:21: malformed OPTIONS hint"},
		{"SELECT x FROM t /*+ OPTIONS('a = 'b') */", "1:36: unterminated string literal"},
		{"SELECT x FROM t WHERE x > 1 /*+ OPTIONS('a' = 'b') */", "1:33: a /*+ OPTIONS('key' = 'value') */ hint must follow a table name"},
		{"SELECT x FROM t WHERE x > 1 /*+ FOO */", "1:33: unknown hint FOO"},
		{"INSERT INTO s /*+ UID('x') */ SELECT x FROM t", "1:19: a /*+ UID('name') */ hint must follow SELECT"},
		{"INSERT INTO s (a) /*+ OPTIONS('a' = 'b') */ SELECT x FROM t", "1:23: a /*+ OPTIONS('key' = 'value') */ hint must follow a table name"},
		{"CREATE TABLE t (x INT) /*+ OPTIONS('a' = 'b') */ WITH ('connector' = 'blackhole')", "1:28: a /*+ OPTIONS('key' = 'value') */ hint must follow a table name"},
	}
	for _, tc := range tests {
		_, err := Parse(tc.sql)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s:\n error %v\n want %q", tc.sql, err, tc.want)
		}
	}
}
