package parser

import (
	"strings"
	"testing"

	"github.com/pingcap/tidb/pkg/parser/ast"
)

func parseOneQuery(t *testing.T, sql string) *Query {
	t.Helper()
	stmts, err := ParseScript(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return stmts[0].(*Select).Query
}

func TestAggFilter(t *testing.T) {
	q := parseOneQuery(t, "SELECT COUNT(*) FILTER (WHERE a > 1), SUM(b) FILTER (WHERE c = 'x'), COUNT(DISTINCT d) FILTER (WHERE d > 0) AS n, MAX(e) FROM t")
	fields := q.Node.(*ast.SelectStmt).Fields.Fields
	for i, want := range []string{"a", "c", "d", ""} {
		a := fields[i].Expr.(*ast.AggregateFuncExpr)
		cond, at, ok := q.Ctx.AggFilter(a)
		if want == "" {
			if ok {
				t.Errorf("field %d: unexpected filter", i)
			}
			continue
		}
		if !ok {
			t.Fatalf("field %d: no filter", i)
		}
		b := cond.(*ast.BinaryOperationExpr)
		if c := b.L.(*ast.ColumnNameExpr); c.Name.Name.O != want {
			t.Errorf("field %d: filter on %s, want %s", i, c.Name.Name.O, want)
		}
		if at.Line != 1 || at.Col < 10 {
			t.Errorf("field %d: FILTER at %v", i, at)
		}
	}
}

func TestTimeSyntax(t *testing.T) {
	q := parseOneQuery(t, "SELECT FLOOR(ts TO HOUR), CEIL(ts TO DAY), FLOOR(x), EXTRACT(DOW FROM ts), REGEXP(s, 'a+')FROM t")
	fields := q.Node.(*ast.SelectStmt).Fields.Fields
	names := []string{FloorToFunc, CeilToFunc, "floor", ExtractFunc, "regexp"}
	for i, want := range names {
		fc := fields[i].Expr.(*ast.FuncCallExpr)
		if fc.FnName.L != want {
			t.Errorf("field %d: %s, want %s", i, fc.FnName.L, want)
		}
	}
	if v := fields[0].Expr.(*ast.FuncCallExpr).Args[1].(ast.ValueExpr).GetString(); v != "HOUR" {
		t.Errorf("FLOOR unit %q", v)
	}
	if v := fields[3].Expr.(*ast.FuncCallExpr).Args[0].(ast.ValueExpr).GetString(); v != "DOW" {
		t.Errorf("EXTRACT unit %q", v)
	}
}

func TestRowTypes(t *testing.T) {
	stmts, err := ParseScript("CREATE TABLE t (p ROW<id BIGINT NOT NULL, a ROW(x INT, y STRING)>, q ROW<b ROW<c INT>>) WITH ('connector' = 'datagen')")
	if err != nil {
		t.Fatal(err)
	}
	ct := stmts[0].(*CreateTable)
	p := ct.Columns[0].Type
	if p.Name != "ROW" || len(p.Fields) != 2 || !p.Fields[0].Type.NotNull || p.Fields[1].Type.Fields[1].Type.Name != "STRING" {
		t.Fatalf("p = %+v", p)
	}
	if q := ct.Columns[1].Type; len(q.Fields) != 1 || q.Fields[0].Type.Fields[0].Name != "c" {
		t.Fatalf("q = %+v", q)
	}
	_, err = ParseScript("CREATE TABLE t (p ROW<id BIGINT, id INT>) WITH ('connector' = 'datagen')")
	if err == nil || !strings.Contains(err.Error(), "1:34: duplicate field id") {
		t.Fatalf("duplicate field: %v", err)
	}
	_, err = ParseScript("CREATE TABLE t (p ROW<id BIGINT) WITH ('connector' = 'datagen')")
	if err == nil || !strings.Contains(err.Error(), `expected "," or ">"`) {
		t.Fatalf("unclosed: %v", err)
	}
}
