package parser

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Operator id hints.
//
// A query pins the state id of the aggregation of one SELECT with an
// optimizer hint right after its SELECT keyword:
//
//	SELECT /*+ UID('wc') */ word, COUNT(*) FROM words GROUP BY word
//
// The name is a quoted string (or a bare identifier). TiDB keeps only the
// hints it knows on SelectStmt.TableHints and drops others, so the
// pre-lexer replaces UID('wc') by QB_NAME(__ssql_uid_<n>), which TiDB
// keeps on the SelectStmt it belongs to, and remembers name n; the planner
// asks QueryContext.UIDHint for a SelectStmt. A UID hint anywhere but right
// after SELECT, or malformed, is an error rather than silently ignored.

// uidHint is one UID('name') hint.
type uidHint struct {
	name string
	pos  Pos
}

const uidQBPrefix = "__ssql_uid_"

var (
	uidWordRE = regexp.MustCompile(`(?i)\bUID\b`)
	uidCallRE = regexp.MustCompile(`(?i)^UID\s*\(\s*(?:'((?:[^']|'')*)'|([A-Za-z_][A-Za-z0-9_$-]*))\s*\)`)
)

// rewriteHints finds UID hints in the hint comments of the range and
// registers their replacements.
func (r *rewriter) rewriteHints() *Error {
	selectOf := map[int]bool{} // code index of a SELECT that already has a UID
	for i, t := range r.toks {
		if t.kind != tHint {
			continue
		}
		body := r.src.text[t.start:t.end]
		locs := uidWordRE.FindAllStringIndex(body, -1)
		if len(locs) == 0 {
			continue
		}
		// The hint must follow a SELECT keyword directly.
		k := sort.SearchInts(r.code, i) - 1 // last code token before the hint
		if k < 0 || r.word(k) != "SELECT" {
			return r.src.errAt(t.start+locs[0][0], "a /*+ UID('name') */ hint must follow SELECT directly, e.g. SELECT /*+ UID('wc') */ word, COUNT(*) FROM t GROUP BY word")
		}
		var out strings.Builder
		prev := 0
		for _, l := range locs {
			if l[0] < prev {
				continue // inside the previous match
			}
			m := uidCallRE.FindStringSubmatchIndex(body[l[0]:])
			at := t.start + l[0]
			if m == nil {
				return r.src.errAt(at, "malformed UID hint: expected UID('name')")
			}
			name := ""
			if m[2] >= 0 {
				name = strings.ReplaceAll(body[l[0]+m[2]:l[0]+m[3]], "''", "'")
			} else {
				name = body[l[0]+m[4] : l[0]+m[5]]
			}
			if strings.TrimSpace(name) == "" {
				return r.src.errAt(at, "empty operator id in UID hint")
			}
			if selectOf[k] {
				return r.src.errAt(at, "a SELECT takes one UID hint")
			}
			selectOf[k] = true
			out.WriteString(body[prev:l[0]])
			fmt.Fprintf(&out, "QB_NAME(%s%d)", uidQBPrefix, len(r.q.uids))
			r.q.uids = append(r.q.uids, uidHint{name: name, pos: r.src.pos(at)})
			prev = l[0] + m[1]
		}
		out.WriteString(body[prev:])
		r.repl[i] = replacement{end: i + 1, text: out.String()}
	}
	return nil
}

func (q *qctx) uidHint(sel *ast.SelectStmt) (string, Pos, bool) {
	if sel == nil {
		return "", Pos{}, false
	}
	for _, h := range sel.TableHints {
		if h == nil || h.HintName.L != "qb_name" || !strings.HasPrefix(h.QBName.L, uidQBPrefix) {
			continue
		}
		n, err := strconv.Atoi(h.QBName.L[len(uidQBPrefix):])
		if err != nil || n < 0 || n >= len(q.uids) {
			continue
		}
		return q.uids[n].name, q.uids[n].pos, true
	}
	return "", Pos{}, false
}
