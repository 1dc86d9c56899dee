package planner

// VALUES lists: FROM (VALUES (1, 'a'), (2, 'b')) AS t(x, y), a VALUES
// query and INSERT INTO t VALUES (...). The rows are constant expressions;
// each column has the common type of its values (as Flink's), NULLs
// alone make a nullable STRING. Column names are the alias's column list,
// else EXPR$0, EXPR$1, ... as in Flink. The plan is a bounded source at
// parallelism 1 that emits the rows once (a restored job does not emit
// them again).

import (
	"fmt"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

func (p *Planner) buildValues(tf *parser.TableFunc, ctx *parser.QueryContext) (*rel, error) {
	empty := &rel{kind: relScan, values: true, describ: "Values"}
	b := &exprBuilder{p: p, ctx: ctx, in: empty, clause: "VALUES"}
	var rows [][]Expr
	for ri, a := range tf.Args {
		var items []ast.ExprNode
		switch x := a.(type) {
		case *ast.RowExpr:
			items = x.Values
		case *ast.ParenthesesExpr:
			items = []ast.ExprNode{x.Expr}
		default:
			items = []ast.ExprNode{a}
		}
		var row []Expr
		for _, it := range items {
			e, err := b.build(it)
			if err != nil {
				return nil, err
			}
			if !isConstant(e) {
				return nil, exprErr(ctx, it, "VALUES", "VALUES takes constant expressions")
			}
			row = append(row, e)
		}
		if ri > 0 && len(row) != len(rows[0]) {
			at := tf.Pos
			if ctx.HasPos(items[0]) {
				at = ctx.PosOf(items[0])
			}
			return nil, &parser.Error{Pos: at, Msg: fmt.Sprintf("row %d of VALUES has %d columns, row 1 has %d", ri+1, len(row), len(rows[0]))}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, &parser.Error{Pos: tf.Pos, Msg: "VALUES needs at least one row"}
	}
	n := len(rows[0])
	if len(tf.Columns) > 0 && len(tf.Columns) != n {
		return nil, &parser.Error{Pos: tf.Pos, Msg: fmt.Sprintf("VALUES has %d columns but %s(%s) names %d", n, tf.Alias, strings.Join(tf.Columns, ", "), len(tf.Columns))}
	}
	schema := make(catalog.Schema, n)
	for c := 0; c < n; c++ {
		ts := make([]catalog.Type, len(rows))
		for r := range rows {
			ts[r] = rows[r][c].Type()
		}
		t, err := CommonType(ts...)
		if err != nil {
			return nil, &parser.Error{Pos: tf.Pos, Msg: fmt.Sprintf("column %d of VALUES: %v", c+1, err)}
		}
		if t.Kind == catalog.KindNull {
			t = catalog.String
		}
		name := fmt.Sprintf("EXPR$%d", c)
		if len(tf.Columns) > 0 {
			name = tf.Columns[c]
		}
		schema[c] = catalog.Column{Name: name, Type: t}
		for r := range rows {
			e := rows[r][c]
			if e.Type().Kind == catalog.KindNull {
				rows[r][c] = &Literal{T: t.Nullable()}
				continue
			}
			if !e.Type().Equal(t) || e.Type().Length != t.Length {
				ce, err := ResolveCast(e, t)
				if err != nil {
					return nil, &parser.Error{Pos: tf.Pos, Msg: fmt.Sprintf("column %d of VALUES: %v", c+1, err)}
				}
				rows[r][c] = ce
			}
		}
	}
	r := &rel{kind: relScan, values: true, rows: rows, schema: schema, quals: make([]string, n), describ: "Values"}
	if tf.Alias != "" {
		r = r.qualify(tf.Alias)
	}
	return r, nil
}

// isConstant reports whether e reads no column (and calls nothing that
// depends on the row or the time).
func isConstant(e Expr) bool {
	switch x := e.(type) {
	case *ColRef:
		return false
	case *Call:
		if IsProctimeCall(e) {
			return false
		}
		for _, a := range x.Args {
			if !isConstant(a) {
				return false
			}
		}
	}
	return true
}

// valuesTuples renders the rows of a VALUES source for EXPLAIN.
func valuesTuples(rows [][]Expr) string {
	var sb strings.Builder
	for i, row := range rows {
		if i > 0 {
			sb.WriteString(", ")
		}
		if i == 8 {
			fmt.Fprintf(&sb, "... %d more", len(rows)-i)
			break
		}
		sb.WriteString("{ ")
		for j, e := range row {
			if j > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(e.String())
		}
		sb.WriteString(" }")
	}
	return sb.String()
}
