package parser

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser/ast"
)

// TestValuesRewrite: VALUES in FROM, as a query and in INSERT become a
// table function of kind VALUES with one argument per row.
func TestValuesRewrite(t *testing.T) {
	cases := []struct {
		sql   string
		rows  int
		width int // columns of the first row
		alias string
		cols  int
	}{
		{"SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS t(x, y)", 2, 2, "t", 2},
		{"SELECT x FROM (VALUES (1), (2), (CAST(3 AS BIGINT))) t (x) WHERE x > 1", 3, 1, "t", 1},
		{"SELECT * FROM (VALUES ROW(1, 'a')) v", 1, 2, "v", 0},
		{"VALUES (1, 'a'), (2, 'b')", 2, 2, "", 0},
		{"SELECT a.x FROM t AS a JOIN (VALUES (1)) AS v(x) ON a.x = v.x", 1, 1, "v", 1},
	}
	for _, tc := range cases {
		stmts, err := ParseScript(tc.sql)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		q := stmts[0].(*Select).Query
		var found *TableFunc
		var walk func(n ast.ResultSetNode)
		walk = func(n ast.ResultSetNode) {
			switch x := n.(type) {
			case *ast.SelectStmt:
				if x.From != nil {
					walk(x.From.TableRefs)
				}
			case *ast.Join:
				walk(x.Left)
				if x.Right != nil {
					walk(x.Right)
				}
			case *ast.TableSource:
				if tn, ok := x.Source.(*ast.TableName); ok {
					if tf, ok := q.Ctx.TableFunc(tn); ok && tf.Kind == "VALUES" {
						found = tf
					}
				}
			}
		}
		walk(q.Node)
		if found == nil {
			t.Fatalf("%s: no VALUES table function", tc.sql)
		}
		width := 1
		if r, ok := found.Args[0].(*ast.RowExpr); ok {
			width = len(r.Values)
		}
		if len(found.Args) != tc.rows || width != tc.width || found.Alias != tc.alias || len(found.Columns) != tc.cols {
			t.Fatalf("%s: rows %d width %d alias %q cols %v", tc.sql, len(found.Args), width, found.Alias, found.Columns)
		}
	}
	ins, err := ParseScript("INSERT INTO s VALUES (1, 'a'), (2, NULL)")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ins[0].(*Insert).Query.Node.(*ast.SelectStmt); !ok {
		t.Fatalf("INSERT ... VALUES: %T", ins[0].(*Insert).Query.Node)
	}
}
