package parser

import (
	"fmt"
	"strings"
)

// VALUES lists, which TiDB's grammar does not take where Flink does:
//
//	SELECT ... FROM (VALUES (1, 'a'), (2, 'b')) [AS] t [(x, y)]
//	VALUES (1, 'a'), (2, 'b')            -- as a query (INSERT INTO t VALUES ...)
//
// The pre-lexer replaces the list by a table name, as it does a table
// function call (QueryContext.TableFunc gives a TableFunc of Kind
// "VALUES"), and parses the rows separately: each row is one argument, a
// ParenthesesExpr for a one-column row or a RowExpr (also for ROW(...)).
// A VALUES query becomes SELECT * FROM that table.

// valuesEnd returns the code index of the last token of the row list that
// starts after the VALUES word at kw, or an error.
func (r *rewriter) valuesEnd(kw int) (int, *Error) {
	j := kw + 1
	for {
		if r.word(j) == "ROW" && r.isOp(j+1, "(") {
			j++
		}
		if !r.isOp(j, "(") {
			at := r.codeTok(j)
			return 0, r.src.errAt(at.start, "expected a row (v1, v2, ...) after VALUES, found %s", r.src.describe(at))
		}
		closeK := r.matchParen(j)
		if closeK < 0 {
			return 0, r.src.errAt(r.codeTok(j).start, "unclosed row of VALUES")
		}
		if !r.isOp(closeK+1, ",") {
			return closeK, nil
		}
		j = closeK + 2
	}
}

// rewriteValues handles VALUES at code index kw: in FROM, (VALUES rows)
// [AS] t [(c1, ...)] with the '(' at kw-1; as a query (query is true),
// VALUES rows at the start of the query.
func (r *rewriter) rewriteValues(kw int, query bool) *Error {
	tf := &TableFunc{Kind: "VALUES", Name: "VALUES", Pos: r.src.pos(r.codeTok(kw).start)}
	end, err := r.valuesEnd(kw)
	if err != nil {
		return err
	}
	start, last := kw, end
	if !query {
		start = kw - 1
		last = r.matchParen(start)
		if last != end+1 {
			at := r.codeTok(end + 1)
			return r.src.errAt(at.start, "expected \")\" after the rows of VALUES, found %s", r.src.describe(at))
		}
		j := last + 1
		hasAS := r.word(j) == "AS"
		if hasAS {
			j++
		}
		at := r.codeTok(j)
		if name, ok := r.src.ident(at); ok && (at.kind == tQIdent || !aliasStop[r.word(j)]) {
			tf.Alias = name
			last = j
			j++
			if r.isOp(j, "(") {
				closeK := r.matchParen(j)
				if closeK < 0 {
					return r.src.errAt(r.codeTok(j).start, "unclosed column list")
				}
				cols, err := r.subCursor(j, closeK+1).identList("a column name")
				if err != nil {
					return err
				}
				tf.Columns = cols
				last = closeK
			}
		} else if hasAS {
			return r.src.errAt(at.start, "expected an alias after AS, found %s", r.src.describe(at))
		}
	}
	idx := len(r.q.funcs)
	r.q.funcs = append(r.q.funcs, tf)
	text := fmt.Sprintf("%s%d", tableFuncPrefix, idx)
	if tf.Alias != "" {
		text += " AS `" + strings.ReplaceAll(tf.Alias, "`", "``") + "`"
	}
	if query {
		text = "SELECT * FROM " + text
	}
	r.replace(start, last, text)
	r.funcs = append(r.funcs, pendingFunc{tf: tf, argFrom: r.code[kw] + 1, argTo: r.code[end] + 1,
		argOrig: r.codeTok(kw).end, argStop: r.codeTok(end).end})
	return nil
}

// afterSetOp reports whether code token k follows UNION, INTERSECT or
// EXCEPT (with ALL or DISTINCT): a VALUES query as an input of a set
// operation.
func (r *rewriter) afterSetOp(k int) bool {
	p := k - 1
	if w := r.word(p); w == "ALL" || w == "DISTINCT" {
		p--
	}
	switch r.word(p) {
	case "UNION", "INTERSECT", "EXCEPT":
		return true
	}
	return false
}
