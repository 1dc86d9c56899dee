package parser

import (
	"fmt"
	"strings"

	tidb "github.com/pingcap/tidb/pkg/parser"
)

// reservedKW are the words TiDB reserves. A reserved word in a table
// position is not taken for a table name (FROM WHERE ... stays a syntax
// error), except those Flink does not reserve (mysqlOnlyReserved).
var reservedKW = map[string]bool{}

func init() {
	for _, kw := range tidb.Keywords {
		if kw.Reserved {
			reservedKW[kw.Word] = true
		}
	}
}

// joinWords may precede JOIN.
var joinWords = map[string]bool{
	"LEFT": true, "RIGHT": true, "FULL": true, "INNER": true, "OUTER": true, "CROSS": true, "NATURAL": true,
}

// isTableName reports whether code token k, in a table position, is a table
// name (not a keyword that ends or continues the FROM clause).
func (r *rewriter) isTableName(k int) bool {
	t := r.codeTok(k)
	switch t.kind {
	case tQIdent:
		return true
	case tIdent:
		w := r.src.word(t)
		return !reservedKW[w] || mysqlOnlyReserved[w]
	}
	return false
}

// rewriteTableRef handles a table name at code index k of a FROM clause,
// possibly qualified (db.t, c.db.t): it records a TableRef and gives TiDB
// `__ssql_ref_<i>`.`t` instead.
func (r *rewriter) rewriteTableRef(k int) *Error {
	var parts []string
	var starts []int
	j := k
	for {
		name, _ := r.src.ident(r.codeTok(j))
		parts = append(parts, name)
		starts = append(starts, r.codeTok(j).start)
		if r.isOp(j+1, ".") {
			if _, ok := r.src.ident(r.codeTok(j + 2)); ok {
				j += 2
				continue
			}
		}
		break
	}
	n := len(parts) - 1
	ref := &TableRef{Name: parts[n], Pos: r.src.pos(starts[n])}
	if n > 0 {
		ref.Qualifiers = parts[:n]
		ref.QualifierPos = r.src.pos(starts[0])
	}
	switch p := k - 1; {
	case r.isOp(p, ","):
		ref.JoinPos = r.src.pos(r.codeTok(p).start)
	case r.word(p) == "JOIN":
		for joinWords[r.word(p-1)] {
			p--
		}
		ref.JoinPos = r.src.pos(r.codeTok(p).start)
	}
	idx := len(r.q.refs)
	r.q.refs = append(r.q.refs, ref)
	r.refByLast[j] = ref
	r.replace(k, j, fmt.Sprintf("`%s%d`.`%s`", tableRefPrefix, idx, strings.ReplaceAll(ref.Name, "`", "``")))
	return nil
}
