package parser

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
)

// A position after non-ASCII text counts characters.
func TestExpressionColumnCountsCharacters(t *testing.T) {
	sel, ctx := mustQuery(t, "SELECT '日本', nope FROM t")
	if p := ctx.PosOf(sel.Fields.Fields[1].Expr); p != (Pos{Offset: 17, Line: 1, Col: 14}) {
		t.Errorf("nope at %+v", p)
	}
}

// Expressions carry their positions (the start of their first token), also
// past rewritten text and inside table function arguments.
func TestExpressionPositions(t *testing.T) {
	sql := "SELECT CAST(a AS STRING) || b, x >> 1, c\nFROM t, LATERAL TABLE(SPLIT(d, ' ')) AS T(w)\nWHERE INTERVAL '1' SECOND > e AND EXISTS (SELECT 1)"
	sel, ctx := mustQuery(t, sql)
	f := sel.Fields.Fields
	concat := f[0].Expr.(*ast.FuncCallExpr) // TiDB parses || as CONCAT
	shift := f[1].Expr.(*ast.BinaryOperationExpr)
	and := sel.Where.(*ast.BinaryOperationExpr)
	gt := and.L.(*ast.BinaryOperationExpr)
	tf, _ := ctx.TableFunc(collect[*ast.TableName](sel)[1])
	tests := []struct {
		n    ast.Node
		want string
	}{
		{concat, "1:8"},
		{concat.Args[1], "1:29"},
		{shift, "1:32"},
		{shift.R, "1:37"},
		{f[2].Expr, "1:40"},
		{tf.Args[0], "2:29"},
		{tf.Args[1], "2:32"},
		{gt.L, "3:7"}, // the INTERVAL literal, rewritten for TiDB
		{gt.R, "3:29"},
		{and.R, "3:35"},
	}
	for _, tc := range tests {
		if !ctx.HasPos(tc.n) {
			t.Errorf("%T has no position", tc.n)
			continue
		}
		if got := ctx.PosOf(tc.n).String(); got != tc.want {
			t.Errorf("%T at %s, want %s", tc.n, got, tc.want)
		}
	}
	if text, p, ok := ctx.TokenBefore(shift.R); !ok || text != ">>" || p.String() != "1:34" {
		t.Errorf("operator %q at %v", text, p)
	}
	if text, _, ok := ctx.TokenBefore(and.R); !ok || text != "AND" {
		t.Errorf("operator %q", text)
	}
}

func TestDistinctFrom(t *testing.T) {
	sel, ctx := mustQuery(t, "SELECT a IS DISTINCT FROM b, a IS NOT DISTINCT FROM (b), a <=> b, (a IS DISTINCT FROM 1) IS NOT DISTINCT FROM TRUE FROM t")
	want := []struct{ distinct, ok bool }{{true, true}, {false, true}, {false, false}, {false, true}}
	for i, w := range want {
		e, isBin := sel.Fields.Fields[i].Expr.(*ast.BinaryOperationExpr)
		if !isBin || e.Op != opcode.NullEQ {
			t.Fatalf("field %d: %T", i, sel.Fields.Fields[i].Expr)
		}
		if d, _, ok := ctx.NullSafeEqual(e); d != w.distinct || ok != w.ok {
			t.Errorf("field %d: distinct %v ok %v, want %v %v", i, d, ok, w.distinct, w.ok)
		}
	}
	inner := unparenTest(sel.Fields.Fields[3].Expr.(*ast.BinaryOperationExpr).L).(*ast.BinaryOperationExpr)
	if d, at, ok := ctx.NullSafeEqual(inner); !d || !ok || at.String() != "1:70" {
		t.Errorf("inner: distinct %v ok %v at %v", d, ok, at)
	}
}

func unparenTest(n ast.ExprNode) ast.ExprNode {
	for {
		p, ok := n.(*ast.ParenthesesExpr)
		if !ok {
			return n
		}
		n = p.Expr
	}
}

// Every table name of a FROM clause has a TableRef: its position, its
// qualifiers and where its join is written.
func TestTableRefs(t *testing.T) {
	sql := "SELECT * FROM a, c.d.b AS x LEFT OUTER JOIN `e f` ON TRUE, (SELECT y FROM g) WHERE TRIM(BOTH 'x' FROM h) = SUBSTRING(i FROM 2)"
	sel, ctx := mustQuery(t, sql)
	var got []TableRef
	for _, tn := range collect[*ast.TableName](sel) {
		ref, ok := ctx.TableRef(tn)
		if !ok {
			t.Fatalf("table %s has no TableRef", tn.Name)
		}
		if tn.Name.O != ref.Name {
			t.Errorf("TiDB name %q, ref %q", tn.Name.O, ref.Name)
		}
		got = append(got, *ref)
	}
	want := []TableRef{
		{Name: "a", Pos: Pos{14, 1, 15}},
		{Name: "b", Qualifiers: []string{"c", "d"}, QualifierPos: Pos{17, 1, 18}, Pos: Pos{21, 1, 22}, JoinPos: Pos{15, 1, 16}},
		{Name: "e f", Pos: Pos{44, 1, 45}, JoinPos: Pos{28, 1, 29}},
		{Name: "g", Pos: Pos{74, 1, 75}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("refs\n got %+v\nwant %+v", got, want)
	}
	// Columns after FROM in a function call stay columns.
	if n := len(collect[*ast.ColumnNameExpr](sel.Where)); n != 2 {
		t.Errorf("%d columns in WHERE", n)
	}
}

func TestUnsupportedConstructs(t *testing.T) {
	tests := []struct{ sql, want string }{
		{"SELECT * FROM (VALUES (1), 2) AS v(a)", "1:28: expected a row (v1, v2, ...) after VALUES, found \"2\""},
		{"SELECT * FROM (VALUES (1) x) AS v(a)", "1:27: expected \")\" after the rows of VALUES, found \"x\""},
		{"SELECT a, COUNT(*) FROM t GROUP BY GROUPING SETS ((a), ())", "1:36: GROUPING SETS are not supported yet"},
		{"SELECT a FROM t WHERE s SIMILAR TO 'a%'", "1:25: SIMILAR TO is not supported yet"},
		{"SELECT a FROM t WHERE s NOT SIMILAR TO 'a%'", "1:25: NOT SIMILAR TO is not supported yet"},
		{"SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS a > 1)", "1:17: MATCH_RECOGNIZE (pattern recognition) is not supported yet"},
		{"SELECT ARRAY[1, 2] FROM t", "1:8: ARRAY[...] constructors are not supported yet"},
		{"SELECT m['k'] FROM t", "1:9: '[' (element access of an ARRAY or MAP) is not supported yet"},
		{"SELECT a FROM t WHERE s LIKE 'a' ESCAPE 'xy'", "1:41: ESCAPE takes exactly one character, got 'xy'"},
		{"SELECT X'41' FROM t", "1:8: binary string literals (X'41') are not supported"},
		{"SELECT 0x41 FROM t", "1:8: hexadecimal and binary literals (0x41) are not supported"},
		{"CREATE TABLE t2 WITH ('connector' = 'blackhole') AS SELECT * FROM t", "1:50: CREATE TABLE ... AS SELECT is not supported yet"},
		{"CREATE TABLE t2 (a INT) WITH ('connector' = 'blackhole') AS SELECT * FROM t", "1:58: CREATE TABLE ... AS SELECT is not supported yet"},
		{"CREATE TABLE t2 AS SELECT * FROM t", "1:17: CREATE TABLE ... AS SELECT is not supported yet"},
	}
	for _, tc := range tests {
		_, err := Parse(tc.sql)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s:\n error %v\n want %q", tc.sql, err, tc.want)
		}
	}
	// The Flink aggregate FIRST_VALUE (no OVER) parses as a plain call for
	// the planner to name; with OVER it is TiDB's window function.
	sel, _ := mustQuery(t, "SELECT FIRST_VALUE(a), LAST_VALUE(b) OVER (ORDER BY c) FROM t")
	if fc, ok := sel.Fields.Fields[0].Expr.(*ast.FuncCallExpr); !ok || fc.FnName.L != "first_value" {
		t.Errorf("FIRST_VALUE: %T", sel.Fields.Fields[0].Expr)
	}
	if _, ok := sel.Fields.Fields[1].Expr.(*ast.WindowFuncExpr); !ok {
		t.Errorf("LAST_VALUE OVER: %T", sel.Fields.Fields[1].Expr)
	}
}

func TestPrimaryKeyPositions(t *testing.T) {
	ct := mustParse(t, "CREATE TABLE t (a INT PRIMARY KEY NOT ENFORCED, b INT)").(*CreateTable)
	if !reflect.DeepEqual(ct.PrimaryKeyPos, []Pos{{16, 1, 17}}) {
		t.Errorf("column key at %v", ct.PrimaryKeyPos)
	}
	ct = mustParse(t, "CREATE TABLE t (a INT, b INT, PRIMARY KEY (b, a) NOT ENFORCED)").(*CreateTable)
	if !reflect.DeepEqual(ct.PrimaryKeyPos, []Pos{{43, 1, 44}, {46, 1, 47}}) {
		t.Errorf("table key at %v", ct.PrimaryKeyPos)
	}
}
