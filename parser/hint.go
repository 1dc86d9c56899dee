package parser

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Hints.
//
// A hint comment /*+ NAME(args), ... */ is read by the pre-lexer, never by
// TiDB (which keeps only MySQL's hints and drops the others silently).
// streamsql knows two hints, in the places Flink puts them:
//
//   - UID('name') right after a SELECT keyword pins the state id of that
//     SELECT's aggregation:
//
//     SELECT /*+ UID('wc') */ word, COUNT(*) FROM words GROUP BY word
//
//     The name is a quoted string (or a bare identifier). The pre-lexer
//     replaces UID('wc') by QB_NAME(__ssql_uid_<n>), which TiDB keeps on
//     the SelectStmt it belongs to; QueryContext.UIDHint finds it again.
//
//   - OPTIONS('k' = 'v', ...) right after a table name (in FROM, or after
//     INSERT INTO t) gives dynamic table options, merged over the table's
//     WITH options for this query only (Flink's dynamic table options):
//
//     SELECT * FROM logs /*+ OPTIONS('path' = '/data/logs-2024') */
//
//     They are recorded on the TableRef (Insert.Options for a sink); the
//     hint is blanked in the text given to TiDB.
//
// Anything else is an error naming the hint: a hint streamsql does not know,
// Flink's join and state hints (not supported yet), a known hint in the
// wrong place, or a hint comment that follows neither SELECT nor a table
// name. A hint is never silently ignored.

// uidHint is one UID('name') hint.
type uidHint struct {
	name string
	pos  Pos
}

const uidQBPrefix = "__ssql_uid_"

// knownHints are the hints streamsql implements, with where they go.
var knownHints = map[string]string{
	"UID":     "right after SELECT",
	"OPTIONS": "right after a table name",
}

// flinkOnlyHints are hints Flink has that streamsql does not implement yet.
var flinkOnlyHints = map[string]bool{
	"BROADCAST": true, "SHUFFLE_HASH": true, "SHUFFLE_MERGE": true, "NEST_LOOP": true,
	"LOOKUP": true, "STATE_TTL": true, "JSON_AGGREGATE": true,
}

// hintItem is one NAME or NAME(args) of a hint comment.
type hintItem struct {
	name string  // upper-case
	at   int     // offset of the name
	args []token // the tokens between the parentheses
	// hasArgs: the name was followed by (...); close is the offset of ')'.
	hasArgs bool
	close   int
}

// hintPlace is where a hint comment is written.
type hintPlace uint8

const (
	hintAfterSelect hintPlace = iota
	hintAfterTable
	hintElsewhere
)

// parseHintItems splits the body of hint comment t into its items.
func parseHintItems(src *source, t token) ([]hintItem, *Error) {
	end := t.end - 2 // before "*/"
	lx := lexer{src: src.text[:end], pos: t.start + 3}
	var toks []token
	for {
		tk, msg := lx.next()
		if msg != "" {
			return nil, src.errAt(tk.start, "%s in hint", msg)
		}
		if tk.kind == tEOF {
			break
		}
		if tk.kind == tComment || tk.kind == tHint {
			continue
		}
		toks = append(toks, tk)
	}
	var items []hintItem
	for i := 0; i < len(toks); {
		tk := toks[i]
		if tk.kind == tOp && src.tokText(tk) == "," && len(items) > 0 {
			i++
			continue
		}
		if tk.kind != tIdent {
			return nil, src.errAt(tk.start, "expected a hint name such as OPTIONS or UID in the hint, found %s", src.describe(tk))
		}
		it := hintItem{name: strings.ToUpper(src.tokText(tk)), at: tk.start}
		i++
		if i < len(toks) && toks[i].kind == tOp && src.tokText(toks[i]) == "(" {
			depth, j := 0, i
			for ; j < len(toks); j++ {
				if toks[j].kind != tOp {
					continue
				}
				switch src.tokText(toks[j]) {
				case "(":
					depth++
				case ")":
					depth--
				}
				if depth == 0 {
					break
				}
			}
			if j == len(toks) {
				return nil, src.errAt(toks[i].start, "unclosed '(' in hint %s", it.name)
			}
			it.hasArgs, it.args, it.close = true, toks[i+1:j], toks[j].start
			i = j + 1
		}
		items = append(items, it)
	}
	if len(items) == 0 {
		return nil, src.errAt(t.start, "empty hint /*+ */")
	}
	return items, nil
}

// checkHintItem reports an item that is not allowed at place.
func checkHintItem(src *source, it hintItem, place hintPlace) *Error {
	switch {
	case it.name == "UID" && place == hintAfterSelect, it.name == "OPTIONS" && place == hintAfterTable:
		return nil
	case it.name == "UID":
		return src.errAt(it.at, "a /*+ UID('name') */ hint must follow SELECT directly, e.g. SELECT /*+ UID('wc') */ word, COUNT(*) FROM t GROUP BY word")
	case it.name == "OPTIONS":
		return src.errAt(it.at, "a /*+ OPTIONS('key' = 'value') */ hint must follow a table name directly, e.g. FROM t /*+ OPTIONS('path' = '/data/x') */ AS a")
	case flinkOnlyHints[it.name]:
		return src.errAt(it.at, "the %s hint is not supported yet (streamsql knows OPTIONS after a table name and UID after SELECT)", it.name)
	}
	msg := fmt.Sprintf("unknown hint %s (streamsql knows OPTIONS after a table name and UID after SELECT)", it.name)
	if s := closeWord(it.name, []string{"OPTIONS", "UID"}); s != "" {
		msg += fmt.Sprintf("; did you mean %s?", s)
	}
	return src.errAt(it.at, "%s", msg)
}

// closeWord returns the candidate within edit distance 2 of w, if any.
func closeWord(w string, cands []string) string {
	for _, c := range cands {
		if editDistance(w, c) <= 2 {
			return c
		}
	}
	return ""
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// parseOptionsHint parses the arguments of OPTIONS('k' = 'v', ...).
func parseOptionsHint(src *source, it hintItem) ([]Option, *Error) {
	if !it.hasArgs || len(it.args) == 0 {
		return nil, src.errAt(it.at, "malformed OPTIONS hint: expected OPTIONS('key' = 'value', ...)")
	}
	c := newCursor(src, it.args, it.close)
	var opts []Option
	seen := map[string]bool{}
	for {
		kt := c.peek()
		if kt.kind != tString {
			return nil, c.unexpected("an option key in quotes in the OPTIONS hint")
		}
		c.next()
		key := src.stringValue(kt)
		if strings.TrimSpace(key) == "" {
			return nil, c.errorf(kt, "empty option key in the OPTIONS hint")
		}
		if seen[key] {
			return nil, c.errorf(kt, "duplicate option '%s' in the OPTIONS hint", key)
		}
		seen[key] = true
		if err := c.expectOp("="); err != nil {
			return nil, err
		}
		vt := c.peek()
		if vt.kind != tString {
			return nil, c.unexpected("a value in quotes for option '" + key + "'")
		}
		c.next()
		opts = append(opts, Option{Key: key, Value: src.stringValue(vt), KeyPos: src.pos(kt.start), ValuePos: src.pos(vt.start)})
		if c.acceptOp(",") {
			continue
		}
		if err := c.expectEnd(); err != nil {
			return nil, err
		}
		return opts, nil
	}
}

// tableHint reads the hint comments that follow a table name: at most one
// OPTIONS hint.
func tableHint(src *source, hints []token) (opts []Option, at Pos, err *Error) {
	found := false
	for _, h := range hints {
		items, err := parseHintItems(src, h)
		if err != nil {
			return nil, Pos{}, err
		}
		for _, it := range items {
			if err := checkHintItem(src, it, hintAfterTable); err != nil {
				return nil, Pos{}, err
			}
			if found {
				return nil, Pos{}, src.errAt(it.at, "a table takes one OPTIONS hint")
			}
			found = true
			if opts, err = parseOptionsHint(src, it); err != nil {
				return nil, Pos{}, err
			}
			at = src.pos(h.start)
		}
	}
	return opts, at, nil
}

// hintsIn returns the hint tokens of src whose start is in [from, to).
func (s *source) hintsIn(from, to int) []token {
	i := sort.Search(len(s.toks), func(i int) bool { return s.toks[i].start >= from })
	var out []token
	for ; i < len(s.toks) && s.toks[i].start < to; i++ {
		if s.toks[i].kind == tHint {
			out = append(out, s.toks[i])
		}
	}
	return out
}

// noHints fails on the first hint comment in [from, to): a place where no
// hint is allowed.
func noHints(src *source, from, to int) *Error {
	for _, h := range src.hintsIn(from, to) {
		items, err := parseHintItems(src, h)
		if err != nil {
			return err
		}
		for _, it := range items {
			if err := checkHintItem(src, it, hintElsewhere); err != nil {
				return err
			}
		}
	}
	return nil
}

// rewriteHints reads every hint comment of the range, after analyze has
// found the table names: UID hints become QB_NAME hints for TiDB, OPTIONS
// hints go to their TableRef, and both are removed from the text.
func (r *rewriter) rewriteHints() *Error {
	selectOf := map[int]bool{} // code index of a SELECT that already has a UID
	for i, t := range r.toks {
		if t.kind != tHint {
			continue
		}
		items, err := parseHintItems(r.src, t)
		if err != nil {
			return err
		}
		k := sort.SearchInts(r.code, i) - 1 // last code token before the hint
		place := hintElsewhere
		ref := r.refByLast[k]
		switch {
		case k >= 0 && r.word(k) == "SELECT":
			place = hintAfterSelect
		case ref != nil:
			place = hintAfterTable
		}
		for _, it := range items {
			if err := checkHintItem(r.src, it, place); err != nil {
				return err
			}
		}
		switch place {
		case hintAfterTable:
			if ref.Options != nil {
				return r.src.errAt(t.start, "a table takes one OPTIONS hint")
			}
			opts, at, err := tableHint(r.src, []token{t})
			if err != nil {
				return err
			}
			ref.Options, ref.HintPos = opts, at
			r.repl[i] = replacement{end: i + 1, text: ""}
		case hintAfterSelect:
			var out []string
			for _, it := range items {
				name, err := r.uidName(it)
				if err != nil {
					return err
				}
				if selectOf[k] {
					return r.src.errAt(it.at, "a SELECT takes one UID hint")
				}
				selectOf[k] = true
				out = append(out, fmt.Sprintf("QB_NAME(%s%d)", uidQBPrefix, len(r.q.uids)))
				r.q.uids = append(r.q.uids, uidHint{name: name, pos: r.src.pos(it.at)})
			}
			r.repl[i] = replacement{end: i + 1, text: "/*+ " + strings.Join(out, " ") + " */"}
		}
	}
	return nil
}

// uidName returns the operator id of a UID('name') or UID(name) item.
func (r *rewriter) uidName(it hintItem) (string, *Error) {
	if !it.hasArgs || len(it.args) != 1 || (it.args[0].kind != tString && it.args[0].kind != tIdent) {
		return "", r.src.errAt(it.at, "malformed UID hint: expected UID('name')")
	}
	name := r.src.tokText(it.args[0])
	if it.args[0].kind == tString {
		name = r.src.stringValue(it.args[0])
	}
	if strings.TrimSpace(name) == "" {
		return "", r.src.errAt(it.at, "empty operator id in UID hint")
	}
	return name, nil
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
