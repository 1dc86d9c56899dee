package parser

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	tidb "github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	_ "github.com/pingcap/tidb/pkg/parser/test_driver" // value expressions
)

const (
	// castFlenBase + i is the CHAR length by which the pre-lexer marks the
	// i-th CAST of a query (CAST(x AS INT) -> CAST(x AS CHAR(900000000))).
	castFlenBase = 900_000_000
	// tableFuncPrefix + i names the table that replaces the i-th table
	// function of a query.
	tableFuncPrefix = "__ssql_tf_"
	// tableRefPrefix + i is the database name the pre-lexer gives the i-th
	// table name of a FROM clause (see TableRef).
	tableRefPrefix = "__ssql_ref_"
)

// mysqlOnlyReserved are words TiDB reserves but Flink SQL does not: in a
// Flink query they can only be identifiers, so the pre-lexer backquotes them
// (unless a '(' follows, as in REPLACE(s, a, b)).
var mysqlOnlyReserved = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`ANALYZE CASCADE CHANGE CONTINUE DATABASE DATABASES DELAYED DISTINCTROW DIV DUAL
		ELSEIF ENCLOSED ESCAPED EXIT FORCE FULLTEXT GENERATED HIGH_PRIORITY IGNORE INDEX INFILE ITERATE KEY KEYS
		KILL LEAVE LINEAR LINES LOAD LOCK LONG LOW_PRIORITY MAXVALUE MIDDLEINT NO_WRITE_TO_BINLOG OPTIMIZE OPTION
		OPTIONALLY OUTFILE READ REGEXP RENAME REQUIRE RESTRICT RLIKE SPATIAL SSL STARTING STORED TERMINATED
		TIDB_CURRENT_TSO UNLOCK UNSIGNED UNTIL USAGE USE VIRTUAL WHILE WRITE XOR ZEROFILL`) {
		mysqlOnlyReserved[w] = true
	}
}

// unreservedKW are TiDB's non-reserved keywords. Many of them are not
// accepted as function names (SPLIT(...) fails), although a backquoted name
// is; funcNameNeedsQuote finds out once per word by asking TiDB.
var (
	unreservedKW   = map[string]bool{}
	quoteFuncCache sync.Map // word -> bool
)

func init() {
	for _, kw := range tidb.Keywords {
		if !kw.Reserved {
			unreservedKW[kw.Word] = true
		}
	}
	// Structural words that may precede '(' and must stay as they are.
	for _, w := range []string{"ANY", "SOME"} {
		delete(unreservedKW, w)
	}
}

// funcNameNeedsQuote reports whether word (upper-case), used as a function
// name, must be backquoted for TiDB to parse the call.
func funcNameNeedsQuote(word string) bool {
	if !unreservedKW[word] {
		return false
	}
	if v, ok := quoteFuncCache.Load(word); ok {
		return v.(bool)
	}
	needs := true
	for _, args := range []string{"", "1", "1, 1", "1, 1, 1", "*", "1 FROM 1", "1 IN 1", "1 AS CHAR"} {
		if _, err := tidbParse("SELECT " + word + "(" + args + ")"); err == nil {
			needs = false
			break
		}
	}
	quoteFuncCache.Store(word, needs)
	return needs
}

var tidbPool = sync.Pool{New: func() any {
	p := tidb.New()
	p.SetSQLMode(mysql.ModePipesAsConcat | mysql.ModeNoBackslashEscapes)
	p.EnableWindowFunc(true)
	return p
}}

// tidbParse runs the TiDB parser, converting a panic into an error.
func tidbParse(sql string) (node ast.StmtNode, err error) {
	p := tidbPool.Get().(*tidb.Parser)
	defer func() {
		if r := recover(); r != nil {
			node, err = nil, fmt.Errorf("internal error in the SQL parser: %v", r)
			return // do not reuse a parser that panicked
		}
		tidbPool.Put(p)
	}()
	return p.ParseOneStmt(sql, "", "")
}

// builder assembles the text given to TiDB and remembers where each piece
// came from in the original text.
type builder struct {
	sb      strings.Builder
	segs    []seg
	origEnd int // original offset reported for the end of the text
}

type seg struct {
	newOff, origOff int
	inserted        bool // generated text: every offset maps to origOff
}

func (b *builder) copy(src string, from, to int) {
	if to <= from {
		return
	}
	b.segs = append(b.segs, seg{newOff: b.sb.Len(), origOff: from})
	b.sb.WriteString(src[from:to])
}

// blank copies src[from:to] as spaces, keeping line breaks.
func (b *builder) blank(src string, from, to int) {
	if to <= from {
		return
	}
	b.segs = append(b.segs, seg{newOff: b.sb.Len(), origOff: from})
	for i := from; i < to; i++ {
		if src[i] == '\n' {
			b.sb.WriteByte('\n')
		} else {
			b.sb.WriteByte(' ')
		}
	}
}

func (b *builder) insert(text string, origOff int) {
	if text == "" {
		return
	}
	b.segs = append(b.segs, seg{newOff: b.sb.Len(), origOff: origOff, inserted: true})
	b.sb.WriteString(text)
}

// orig maps an offset of the built text to the original text.
func (b *builder) orig(n int) int {
	if n >= b.sb.Len() || len(b.segs) == 0 {
		return b.origEnd
	}
	i := sort.Search(len(b.segs), func(i int) bool { return b.segs[i].newOff > n }) - 1
	if i < 0 {
		i = 0
	}
	s := b.segs[i]
	if s.inserted {
		return s.origOff
	}
	return s.origOff + n - s.newOff
}

// replacement replaces tokens [i, end) by text.
type replacement struct {
	end  int
	text string
}

// pendingFunc is a table function whose arguments are parsed after the
// main text.
type pendingFunc struct {
	tf               *TableFunc
	argFrom, argTo   int // token indexes of the arguments
	argOrig, argStop int // original byte range of the arguments
	empty            bool
}

// rewriter is the pre-lexer of one query or expression.
type rewriter struct {
	src   *source
	toks  []token // all tokens of the range, comments included
	code  []int   // indexes into toks of the code tokens
	match []int   // by code index: the matching ')' of a '(' or -1
	// clause, by code index: the clause keyword in effect at that token at
	// its nesting depth (SELECT, FROM, WHERE, GROUP, ...; "(" inside
	// parentheses that hold no clause keyword yet, "" before any).
	clause []string
	// refByLast maps the code index of the last token of a FROM table name
	// to its TableRef (where an OPTIONS hint may follow).
	refByLast map[int]*TableRef
	repl      map[int]replacement
	q         *qctx
	funcs     []pendingFunc
	filters   []pendingFilter
}

// qctx implements QueryContext.
type qctx struct {
	src      *source
	from, to int
	casts    []TypeName
	tries    []bool // tries[i]: the i-th cast was written TRY_CAST
	funcs    []*TableFunc
	uids     []uidHint // by number: QB_NAME(__ssql_uid_<n>) in the text given to TiDB
	refs     []*TableRef
	// pos maps TiDB's expression nodes to their offset in the original text.
	pos map[ast.Node]int
	// filters maps the original offset of an aggregate's name to its
	// FILTER (WHERE ...) condition, and where FILTER is written.
	filters map[int]aggFilter
}

type aggFilter struct {
	cond ast.ExprNode
	at   int
}

func (q *qctx) aggFilter(n ast.Node) (ast.ExprNode, Pos, bool) {
	off, ok := q.pos[n]
	if !ok {
		return nil, Pos{}, false
	}
	f, ok := q.filters[off]
	if !ok {
		return nil, Pos{}, false
	}
	return f.cond, q.src.pos(f.at), true
}

func (q *qctx) tableRef(tn *ast.TableName) (*TableRef, bool) {
	if tn == nil || !strings.HasPrefix(tn.Schema.L, tableRefPrefix) {
		return nil, false
	}
	n, err := strconv.Atoi(tn.Schema.L[len(tableRefPrefix):])
	if err != nil || n < 0 || n >= len(q.refs) {
		return nil, false
	}
	return q.refs[n], true
}

func (q *qctx) nodePos(n ast.Node) (Pos, bool) {
	off, ok := q.pos[n]
	if !ok {
		return Pos{}, false
	}
	return q.src.pos(off), true
}

// codeBefore returns the index in q.src.toks of the last code token that
// ends at or before offset off, or -1.
func (q *qctx) codeBefore(off int) int {
	toks := q.src.toks
	i := sort.Search(len(toks), func(i int) bool { return toks[i].end > off }) - 1
	for ; i >= 0 && toks[i].start >= q.from; i-- {
		if toks[i].kind != tComment && toks[i].kind != tHint {
			return i
		}
	}
	return -1
}

func (q *qctx) tokenBefore(n ast.Node) (string, Pos, bool) {
	off, ok := q.pos[n]
	if !ok {
		return "", Pos{}, false
	}
	i := q.codeBefore(off)
	if i < 0 {
		return "", Pos{}, false
	}
	t := q.src.toks[i]
	text := q.src.tokText(t)
	if t.kind == tIdent {
		text = strings.ToUpper(text)
	}
	return text, q.src.pos(t.start), true
}

func (q *qctx) nullSafeEqual(e *ast.BinaryOperationExpr) (distinct bool, at Pos, ok bool) {
	if e == nil || e.R == nil {
		return false, Pos{}, false
	}
	off, found := q.pos[e.R]
	if !found {
		return false, Pos{}, false
	}
	word := func(i int) string {
		if i < 0 || q.src.toks[i].kind != tIdent {
			return ""
		}
		return strings.ToUpper(q.src.tokText(q.src.toks[i]))
	}
	from := q.codeBefore(off)
	if word(from) != "FROM" {
		return false, Pos{}, false
	}
	dist := q.codeBefore(q.src.toks[from].start)
	if word(dist) != "DISTINCT" {
		return false, Pos{}, false
	}
	is := q.codeBefore(q.src.toks[dist].start)
	distinct = word(is) != "NOT"
	if !distinct {
		is = q.codeBefore(q.src.toks[is].start)
	}
	if word(is) != "IS" {
		return false, Pos{}, false
	}
	return distinct, q.src.pos(q.src.toks[is].start), true
}

func (q *qctx) isTryCast(e *ast.FuncCastExpr) bool {
	if _, ok := q.castType(e); !ok {
		return false
	}
	return q.tries[e.Tp.GetFlen()-castFlenBase]
}

func (q *qctx) castType(e *ast.FuncCastExpr) (TypeName, bool) {
	if e == nil || e.Tp == nil || (e.Tp.GetType() != mysql.TypeVarString && e.Tp.GetType() != mysql.TypeString) {
		return TypeName{}, false
	}
	n := e.Tp.GetFlen() - castFlenBase
	if n < 0 || n >= len(q.casts) {
		return TypeName{}, false
	}
	return q.casts[n], true
}

func (q *qctx) tableFunc(tn *ast.TableName) (*TableFunc, bool) {
	if tn == nil || tn.Schema.L != "" || !strings.HasPrefix(tn.Name.L, tableFuncPrefix) {
		return nil, false
	}
	n, err := strconv.Atoi(tn.Name.L[len(tableFuncPrefix):])
	if err != nil || n < 0 || n >= len(q.funcs) {
		return nil, false
	}
	return q.funcs[n], true
}

func (q *qctx) locate(word string, after int) Pos {
	parts := strings.Split(word, ".")
	toks := q.src.toks
	i := sort.Search(len(toks), func(i int) bool { return toks[i].start >= q.from })
	if after > q.from {
		i = sort.Search(len(toks), func(i int) bool { return toks[i].start >= after })
	}
	for ; i < len(toks) && toks[i].end <= q.to; i++ {
		j, k := i, 0
		for ; k < len(parts) && j < len(toks) && toks[j].end <= q.to; k++ {
			if k > 0 {
				if toks[j].kind != tOp || q.src.tokText(toks[j]) != "." || j+1 >= len(toks) {
					break
				}
				j++
			}
			name, ok := q.src.ident(toks[j])
			if !ok || !strings.EqualFold(name, parts[k]) {
				break
			}
			j++
		}
		if k == len(parts) {
			return q.src.pos(toks[i].start)
		}
	}
	return q.src.pos(q.from)
}

func (q *qctx) startPos() Pos { return q.src.pos(q.from) }

// newRewriter prepares the pre-lexer for the original byte range [from, to).
func newRewriter(src *source, from, to int) *rewriter {
	lo := sort.Search(len(src.toks), func(i int) bool { return src.toks[i].start >= from })
	hi := lo
	for hi < len(src.toks) && src.toks[hi].end <= to {
		hi++
	}
	// Comments and hints after the last code token belong to the range too
	// (a trailing OPTIONS hint: FROM t /*+ OPTIONS(...) */).
	for hi < len(src.toks) && (src.toks[hi].kind == tComment || src.toks[hi].kind == tHint) {
		hi++
	}
	r := &rewriter{src: src, toks: src.toks[lo:hi], repl: map[int]replacement{}, refByLast: map[int]*TableRef{},
		q: &qctx{src: src, from: from, to: to, pos: map[ast.Node]int{}}}
	for i, t := range r.toks {
		if t.kind != tComment && t.kind != tHint {
			r.code = append(r.code, i)
		}
	}
	// Matching parentheses, once.
	r.match = make([]int, len(r.code))
	var stack []int
	for k := range r.code {
		r.match[k] = -1
		switch {
		case r.isOp(k, "("):
			stack = append(stack, k)
		case r.isOp(k, ")") && len(stack) > 0:
			r.match[stack[len(stack)-1]] = k
			stack = stack[:len(stack)-1]
		}
	}
	r.computeClauses()
	return r
}

// clauseWords are the keywords that start a clause of a query.
var clauseWords = map[string]bool{
	"SELECT": true, "FROM": true, "WHERE": true, "GROUP": true, "HAVING": true, "ORDER": true,
	"LIMIT": true, "WINDOW": true, "UNION": true, "INTERSECT": true, "EXCEPT": true, "VALUES": true,
}

// computeClauses fills r.clause in one pass. A FROM counts as a clause only
// right in a SELECT's list (not in TRIM(x FROM s), SUBSTRING(s FROM 2),
// IS DISTINCT FROM, or a WHERE after the FROM clause).
func (r *rewriter) computeClauses() {
	r.clause = make([]string, len(r.code))
	stack := []string{""}
	for k := range r.code {
		top := len(stack) - 1
		switch {
		case r.isOp(k, "("):
			r.clause[k] = stack[top]
			stack = append(stack, "(")
			continue
		case r.isOp(k, ")"):
			if top > 0 {
				stack = stack[:top]
				top--
			}
			r.clause[k] = stack[top]
			continue
		}
		if w := r.word(k); clauseWords[w] && (w != "FROM" || (stack[top] == "SELECT" && r.word(k-1) != "DISTINCT")) {
			stack[top] = w
		}
		r.clause[k] = stack[top]
	}
}

// queryFrom reports whether code token k is the FROM keyword of a SELECT.
func (r *rewriter) queryFrom(k int) bool {
	return k >= 0 && k < len(r.clause) && r.word(k) == "FROM" && r.clause[k] == "FROM" && r.word(k-1) != "DISTINCT"
}

// inFrom reports whether code token k is in the FROM clause of a SELECT
// (ON conditions included).
func (r *rewriter) inFrom(k int) bool {
	return k >= 0 && k < len(r.clause) && r.clause[k] == "FROM"
}

// tablePosition reports whether a table name may start at code token k:
// it follows a SELECT's FROM, a JOIN, or a ',' of a FROM clause.
func (r *rewriter) tablePosition(k int) bool {
	p := k - 1
	return r.queryFrom(p) || (r.inFrom(p) && (r.word(p) == "JOIN" || r.isOp(p, ",")))
}

// parseQuery parses the query at original bytes [from, to).
func parseQuery(src *source, from, to int) (*Query, *Error) {
	r := newRewriter(src, from, to)
	if err := r.analyze(); err != nil {
		return nil, err
	}
	b := &builder{origEnd: to}
	r.emit(b, 0, len(r.toks))
	node, err := r.parse(b, from)
	if err != nil {
		return nil, err
	}
	var rs ast.ResultSetNode
	switch n := node.(type) {
	case *ast.SelectStmt:
		rs = n
	case *ast.SetOprStmt:
		rs = n
	default:
		return nil, src.errAt(from, "expected a query (SELECT ...)")
	}
	if err := r.parseFuncArgs(); err != nil {
		return nil, err
	}
	return &Query{Node: rs, Ctx: &QueryContext{impl: r.q}}, nil
}

// parseExpr parses the scalar expression at original bytes [from, to).
func parseExpr(src *source, from, to int) (*Expr, *Error) {
	r := newRewriter(src, from, to)
	if err := r.analyze(); err != nil {
		return nil, err
	}
	e, err := r.parseExprRange(0, len(r.toks), from, to)
	if err != nil {
		return nil, err
	}
	if len(e) != 1 {
		return nil, src.errAt(from, "expected one expression")
	}
	if err := r.parseFuncArgs(); err != nil {
		return nil, err
	}
	return &Expr{Node: e[0], Ctx: &QueryContext{impl: r.q}, Text: src.text[from:to]}, nil
}

// parseExprRange parses tokens [i, j) as a comma-separated expression list
// by giving TiDB "SELECT <list>".
func (r *rewriter) parseExprRange(i, j, from, to int) ([]ast.ExprNode, *Error) {
	b := &builder{origEnd: to}
	b.insert("SELECT ", from)
	r.emit(b, i, j)
	node, err := r.parse(b, from)
	if err != nil {
		return nil, err
	}
	sel, ok := node.(*ast.SelectStmt)
	if !ok || sel.From != nil || sel.Where != nil || sel.GroupBy != nil || sel.Having != nil ||
		sel.OrderBy != nil || sel.Limit != nil || sel.Distinct || sel.Fields == nil {
		return nil, r.src.errAt(from, "expected an expression")
	}
	out := make([]ast.ExprNode, 0, len(sel.Fields.Fields))
	for _, f := range sel.Fields.Fields {
		if f.Expr == nil || f.AsName.L != "" {
			return nil, r.src.errAt(from, "expected an expression")
		}
		out = append(out, f.Expr)
	}
	return out, nil
}

func (r *rewriter) parseFuncArgs() *Error {
	for _, pf := range r.filters {
		e, err := r.parseExprRange(pf.argFrom, pf.argTo, pf.argOrig, pf.argStop)
		if err != nil {
			return err
		}
		if len(e) != 1 {
			return r.src.errAt(pf.argOrig, "FILTER (WHERE ...) takes one condition")
		}
		if r.q.filters == nil {
			r.q.filters = map[int]aggFilter{}
		}
		r.q.filters[pf.aggOff] = aggFilter{cond: e[0], at: pf.at}
	}
	for _, pf := range r.funcs {
		if pf.empty {
			continue
		}
		args, err := r.parseExprRange(pf.argFrom, pf.argTo, pf.argOrig, pf.argStop)
		if err != nil {
			return err
		}
		pf.tf.Args = args
	}
	return nil
}

// parse hands the built text to TiDB and maps errors back.
func (r *rewriter) parse(b *builder, from int) (ast.StmtNode, *Error) {
	sql := b.sb.String()
	node, err := tidbParse(sql)
	if err != nil {
		return nil, r.tidbError(err, b, sql, from)
	}
	node.Accept(normalizer{})
	node.Accept(&posRecorder{b: b, pos: r.q.pos})
	return node, nil
}

// posRecorder maps the positions TiDB records on expression nodes (offsets
// of their first token in the text given to TiDB) to the original text.
type posRecorder struct {
	b   *builder
	pos map[ast.Node]int
}

func (v *posRecorder) Enter(n ast.Node) (ast.Node, bool) {
	if _, ok := n.(ast.ExprNode); ok {
		if off := n.OriginTextPosition(); off > 0 {
			v.pos[n] = v.b.orig(off)
		}
	}
	return n, false
}

func (v *posRecorder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// normalizer lower-cases aggregate and window function names (TiDB keeps
// them as written).
type normalizer struct{}

func (normalizer) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.AggregateFuncExpr:
		x.F = strings.ToLower(x.F)
	case *ast.WindowFuncExpr:
		x.Name = strings.ToLower(x.Name)
	}
	return n, false
}

func (normalizer) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// IsFullOuterJoin reports whether j was written FULL [OUTER] JOIN. TiDB's
// grammar has no full join; the pre-lexer writes it as STRAIGHT_JOIN (which
// Flink SQL does not have), so j.Tp is 0 and j.StraightJoin is set.
func IsFullOuterJoin(j *ast.Join) bool { return j != nil && j.StraightJoin }

var (
	tidbPosRE  = regexp.MustCompile(`line (\d+) column (\d+) near "`)
	tidbCodeRE = regexp.MustCompile(`^\[[a-z]+:\d+\]`)
	quotedRE   = regexp.MustCompile(`'([^']+)'`)
)

// tidbError converts a TiDB error ("line L column C near "rest of text"")
// into an *Error at the offending token of the original text.
func (r *rewriter) tidbError(err error, b *builder, sql string, from int) *Error {
	msg := err.Error()
	m := tidbPosRE.FindStringSubmatchIndex(msg)
	if m == nil {
		msg = strings.TrimSpace(tidbCodeRE.ReplaceAllString(msg, ""))
		at := from
		// Point at a quoted fragment of the message if the text has it.
		if q := quotedRE.FindStringSubmatch(msg); q != nil {
			if i := strings.Index(r.src.text[from:b.origEnd], q[1]); i >= 0 {
				at = from + i
			}
		}
		return r.src.errAt(at, "%s", msg)
	}
	line, _ := strconv.Atoi(msg[m[2]:m[3]])
	col, _ := strconv.Atoi(msg[m[4]:m[5]])
	rest := msg[m[1]:]
	approx := newLineIndex(sql).offset(line, col) + 64
	if approx > len(sql) {
		approx = len(sql)
	}
	off := -1
	for o := approx; o >= 0; o-- {
		v := sql[o:]
		if len(v) > 2048 {
			v = v[:2048]
		}
		if len(rest) > len(v) && rest[len(v)] == '"' && strings.HasPrefix(rest, v) {
			off = o
			break
		}
	}
	if off < 0 {
		off = approx
	}
	orig := b.orig(off)
	if strings.TrimSpace(sql[min(off, len(sql)):]) == "" || orig >= b.origEnd {
		return r.src.errAt(b.origEnd, "syntax error: unexpected end of statement")
	}
	// The original token at orig.
	toks := r.src.toks
	i := sort.Search(len(toks), func(i int) bool { return toks[i].end > orig })
	if i < len(toks) {
		t := toks[i]
		if t.start > orig {
			orig = t.start
		}
		return r.src.errAt(orig, "syntax error near %s", r.src.describe(t))
	}
	return r.src.errAt(orig, "syntax error")
}

// offset converts a TiDB line/column (1-based line, column counted from 1
// or 0) into a byte offset, clamped to the text.
func (li *lineIndex) offset(line, col int) int {
	if line < 1 {
		line = 1
	}
	if line > len(li.starts) {
		line = len(li.starts)
	}
	return li.starts[line-1] + max(col, 0)
}

// codeTok returns the k-th code token (tEOF past the end).
func (r *rewriter) codeTok(k int) token {
	if k >= 0 && k < len(r.code) {
		return r.toks[r.code[k]]
	}
	end := r.q.to
	return token{kind: tEOF, start: end, end: end}
}

func (r *rewriter) word(k int) string { return r.src.word(r.codeTok(k)) }

func (r *rewriter) isOp(k int, op string) bool {
	t := r.codeTok(k)
	return t.kind == tOp && r.src.tokText(t) == op
}

// matchParen returns the code index of the ')' matching the '(' at k, or -1.
func (r *rewriter) matchParen(k int) int {
	if k < 0 || k >= len(r.match) {
		return -1
	}
	return r.match[k]
}

// replace registers a replacement of code tokens [k, l] (inclusive).
func (r *rewriter) replace(k, l int, text string) {
	if _, dup := r.repl[r.code[k]]; !dup {
		r.repl[r.code[k]] = replacement{end: r.code[l] + 1, text: text}
	}
}

// subCursor returns a cursor over code tokens [k, l).
func (r *rewriter) subCursor(k, l int) *cursor {
	toks := make([]token, 0, l-k)
	for i := k; i < l; i++ {
		toks = append(toks, r.codeTok(i))
	}
	return newCursor(r.src, toks, r.codeTok(l).start)
}

// analyze finds the Flink constructs TiDB lacks and registers replacements.
func (r *rewriter) analyze() *Error {
	for k := 0; k < len(r.code); k++ {
		t := r.codeTok(k)
		w := r.src.word(t)
		if err := r.unsupported(k); err != nil {
			return err
		}
		var err *Error
		switch {
		case w == "CAST" && r.isOp(k+1, "("):
			err = r.rewriteCast(k, false)
		case w == "TRY_CAST" && r.isOp(k+1, "("):
			r.replace(k, k, "CAST")
			err = r.rewriteCast(k, true)
		case w == "INTERVAL" && !r.isOp(k+1, "("):
			err = r.rewriteInterval(k)
		case w == "VALUES" && r.isOp(k-1, "(") && r.tablePosition(k-1):
			err = r.rewriteValues(k, false)
		case w == "VALUES" && (k == 0 || r.afterSetOp(k)):
			err = r.rewriteValues(k, true)
		case w == "LATERAL" && r.word(k+1) == "TABLE" && r.isOp(k+2, "("):
			err = r.rewriteTableFunc(k, k+1, "LATERAL")
		case w == "TABLE" && r.isOp(k+1, "(") && r.fromPosition(k-1):
			err = r.rewriteTableFunc(k, k, "TABLE")
		case w == "UNNEST" && r.isOp(k+1, "(") && (r.fromPosition(k-1) || r.word(k-1) == "LATERAL"):
			start := k
			if r.word(k-1) == "LATERAL" {
				start = k - 1
			}
			err = r.rewriteTableFunc(start, k, "UNNEST")
		case w == "FOR" && r.word(k+1) == "SYSTEM_TIME" && r.word(k+2) == "AS" && r.word(k+3) == "OF":
			err = r.rewriteSystemTime(k)
		case w == "FULL" && (r.word(k+1) == "JOIN" || (r.word(k+1) == "OUTER" && r.word(k+2) == "JOIN")):
			last := k + 1
			if r.word(k+1) == "OUTER" {
				last = k + 2
			}
			r.replace(k, last, "STRAIGHT_JOIN")
		case w == "IS" && r.word(k+1) == "DISTINCT" && r.word(k+2) == "FROM":
			r.replace(k, k+2, "<=>") // QueryContext.NullSafeEqual tells the two apart
		case w == "IS" && r.word(k+1) == "NOT" && r.word(k+2) == "DISTINCT" && r.word(k+3) == "FROM":
			r.replace(k, k+3, "<=>")
		case r.tablePosition(k) && r.isTableName(k) && !r.isOp(k+1, "("):
			err = r.rewriteTableRef(k)
		case w == "REGEXP" && r.isOp(k+1, "(") && !r.isOp(k-1, "."):
			// Flink's REGEXP(str, pattern) function; TiDB knows only the operator
			r.replace(k, k, "`REGEXP`")
		case w == "EXTRACT" && r.isOp(k+1, "(") && r.word(k+3) == "FROM" && r.codeTok(k+2).kind == tIdent:
			// EXTRACT(unit FROM x): TiDB lacks Flink's DOW, DOY, EPOCH, ...
			r.replace(k, k+3, fmt.Sprintf("%s('%s', ", ExtractFunc, r.word(k+2)))
		case (w == "FLOOR" || w == "CEIL" || w == "CEILING") && r.isOp(k+1, "("):
			r.rewriteFloorTo(k)
		case w == "FILTER" && r.isOp(k+1, "(") && r.word(k+2) == "WHERE" && r.isOp(k-1, ")"):
			err = r.rewriteAggFilter(k)
		case mysqlOnlyReserved[w] && !r.isOp(k+1, "("):
			r.replace(k, k, "`"+r.src.tokText(t)+"`")
		case windowOnlyFuncs[w] && r.isOp(k+1, "(") && r.matchParen(k+1) > 0 && r.word(r.matchParen(k+1)+1) != "OVER":
			// FIRST_VALUE(x) without OVER is Flink's aggregate; TiDB knows
			// only the window function. Quoted, it is a plain call the
			// planner reports by name.
			r.replace(k, k, "`"+r.src.tokText(t)+"`")
		case w != "" && r.isOp(k+1, "(") && !r.isOp(k-1, ".") && funcNameNeedsQuote(w):
			r.replace(k, k, "`"+r.src.tokText(t)+"`")
		}
		if err != nil {
			return err
		}
	}
	return r.rewriteHints()
}

// Names of the calls the pre-lexer writes for Flink's time syntax.
const (
	// ExtractFunc is EXTRACT(unit FROM x): __ssql_extract('UNIT', x).
	ExtractFunc = "__ssql_extract"
	// FloorToFunc and CeilToFunc are FLOOR(x TO unit) and CEIL(x TO unit):
	// __ssql_floor(x, 'UNIT').
	FloorToFunc = "__ssql_floor"
	CeilToFunc  = "__ssql_ceil"
)

// rewriteFloorTo handles FLOOR(x TO unit) and CEIL(x TO unit) (TiDB has
// only FLOOR(x)); FLOOR(x) stays as it is.
func (r *rewriter) rewriteFloorTo(k int) {
	closeK := r.matchParen(k + 1)
	if closeK < 0 || closeK < k+4 {
		return
	}
	depth := 0
	for i := k + 2; i < closeK; i++ {
		switch {
		case r.isOp(i, "("):
			depth++
		case r.isOp(i, ")"):
			depth--
		case depth == 0 && r.word(i) == "TO" && i+2 == closeK && r.codeTok(i+1).kind == tIdent:
			fn := FloorToFunc
			if r.word(k) != "FLOOR" {
				fn = CeilToFunc
			}
			r.replace(k, k, fn)
			r.replace(i, i+1, fmt.Sprintf(", '%s'", r.word(i+1)))
			return
		}
	}
}

// rewriteAggFilter handles agg(...) FILTER (WHERE cond): the clause is
// removed from the text given to TiDB and cond is parsed on its own;
// QueryContext.AggFilter finds it from the aggregate's node.
func (r *rewriter) rewriteAggFilter(k int) *Error {
	closeK := r.matchParen(k + 1)
	if closeK < 0 {
		return nil
	}
	// the aggregate's name: the token before the '(' matching the ')' before FILTER
	open := -1
	for i := k - 1; i >= 0; i-- {
		if r.matchParen(i) == k-1 {
			open = i
			break
		}
	}
	if open < 1 || r.codeTok(open-1).kind != tIdent {
		return r.src.errAt(r.codeTok(k).start, "FILTER (WHERE ...) must follow an aggregate function call")
	}
	if closeK == k+3 {
		return r.src.errAt(r.codeTok(closeK).start, "FILTER (WHERE ...) needs a condition")
	}
	r.replace(k, closeK, "")
	r.filters = append(r.filters, pendingFilter{aggOff: r.codeTok(open - 1).start,
		argFrom: r.code[k+3], argTo: r.code[closeK], argOrig: r.codeTok(k + 3).start, argStop: r.codeTok(closeK).start,
		at: r.codeTok(k).start})
	return nil
}

// pendingFilter is a FILTER (WHERE cond) whose condition is parsed after
// the main text.
type pendingFilter struct {
	aggOff           int // original offset of the aggregate's name
	argFrom, argTo   int // token indexes of the condition
	argOrig, argStop int
	at               int // offset of FILTER
}

// windowOnlyFuncs are the functions TiDB parses only with OVER (...).
var windowOnlyFuncs = map[string]bool{
	"FIRST_VALUE": true, "LAST_VALUE": true, "NTH_VALUE": true, "LEAD": true, "LAG": true,
	"ROW_NUMBER": true, "RANK": true, "DENSE_RANK": true, "CUME_DIST": true, "PERCENT_RANK": true, "NTILE": true,
}

// fromPosition reports whether code token k is a SELECT's FROM, or a JOIN
// or ',' of a FROM clause (so that a table source follows).
func (r *rewriter) fromPosition(k int) bool { return r.tablePosition(k + 1) }

// rewriteCast handles CAST(expr AS type) and TRY_CAST (which becomes CAST,
// remembered as a try): the type becomes
// CHAR(castFlenBase + i) and the Flink type is kept in the context.
func (r *rewriter) rewriteCast(k int, try bool) *Error {
	closeK := r.matchParen(k + 1)
	if closeK < 0 {
		return nil // TiDB reports the unbalanced parenthesis
	}
	asK, depth := -1, 0
	for i := k + 1; i < closeK; i++ {
		switch {
		case r.isOp(i, "("):
			depth++
		case r.isOp(i, ")"):
			depth--
		case depth == 1 && r.word(i) == "AS":
			asK = i
		}
	}
	if asK < 0 {
		return nil
	}
	if asK+1 == closeK {
		return r.src.errAt(r.codeTok(closeK).start, "missing type in CAST")
	}
	c := r.subCursor(asK+1, closeK)
	tn, err := parseType(c)
	if err != nil {
		return err
	}
	if !c.atEnd() {
		return c.errorf(c.peek(), "unexpected %s in CAST type", r.src.describe(c.peek()))
	}
	idx := len(r.q.casts)
	r.q.casts = append(r.q.casts, tn)
	r.q.tries = append(r.q.tries, try)
	r.replace(asK+1, closeK-1, fmt.Sprintf("CHAR(%d)", castFlenBase+idx))
	return nil
}

// rewriteInterval handles INTERVAL [+|-] 'value' unit [TO unit].
func (r *rewriter) rewriteInterval(k int) *Error {
	it := r.codeTok(k)
	j := k + 1
	sign := ""
	if r.isOp(j, "-") || r.isOp(j, "+") {
		sign = r.src.tokText(r.codeTok(j))
		j++
	}
	vt := r.codeTok(j)
	if vt.kind != tString && vt.kind != tNumber {
		return r.src.errAt(it.start, "INTERVAL needs a literal value and a unit, e.g. INTERVAL '5' SECOND")
	}
	j++
	unitAt := r.codeTok(j)
	unit := singularUnit(r.word(j))
	if unit == "" {
		return r.src.errAt(unitAt.start, "expected an INTERVAL unit (SECOND, MINUTE, HOUR, DAY, MONTH, YEAR), found %s", r.src.describe(unitAt))
	}
	j++
	skipPrecision := func() {
		if r.isOp(j, "(") && r.codeTok(j+1).kind == tNumber && r.isOp(j+2, ")") {
			j += 3
		}
	}
	skipPrecision()
	if r.word(j) == "TO" {
		to := singularUnit(r.word(j + 1))
		if to == "" {
			return r.src.errAt(r.codeTok(j+1).start, "expected an INTERVAL unit after TO, found %s", r.src.describe(r.codeTok(j+1)))
		}
		unit += " TO " + to
		if !compoundUnits[unit] {
			return r.src.errAt(unitAt.start, "unsupported INTERVAL unit %s", unit)
		}
		j += 2
		skipPrecision()
	}
	last := j - 1
	text := r.src.tokText(vt)
	if vt.kind == tString {
		text = r.src.stringValue(vt)
	}
	iv, err := parseIntervalValue(sign+text, unit)
	if err != nil {
		return r.src.errAt(vt.start, "%s", err.Error())
	}
	if w := r.word(j); w == "PRECEDING" || w == "FOLLOWING" {
		// Window frame bound: TiDB's grammar has INTERVAL expr unit here.
		lit := "'" + strings.ReplaceAll(sign+text, "'", "''") + "'"
		r.replace(k, last, "INTERVAL "+lit+" "+tidbUnit(unit))
		return nil
	}
	n := iv.Millis
	if iv.YearMonth {
		n = iv.Months
	}
	r.replace(k, last, fmt.Sprintf("%s('%d', '%s')", IntervalFunc, n, unit))
	return nil
}

// rewriteSystemTime handles a temporal join's table
//
//	r FOR SYSTEM_TIME AS OF o.ts [AS] alias  ->  r AS alias AS OF TIMESTAMP o.ts
//
// (TiDB's grammar wants the alias first). The planner finds the time
// attribute in TableName.AsOf.TsExpr.
func (r *rewriter) rewriteSystemTime(k int) *Error {
	j := k + 4
	var parts []string
	for {
		name, ok := r.src.ident(r.codeTok(j))
		if !ok {
			at := r.codeTok(j)
			return r.src.errAt(at.start, "expected a time attribute (a column) after FOR SYSTEM_TIME AS OF, found %s", r.src.describe(at))
		}
		parts = append(parts, "`"+strings.ReplaceAll(name, "`", "``")+"`")
		j++
		if !r.isOp(j, ".") {
			break
		}
		j++
	}
	last := j - 1
	text := ""
	if r.word(j) == "AS" {
		j++
	}
	if at := r.codeTok(j); at.kind == tQIdent || (at.kind == tIdent && !aliasStop[r.word(j)]) {
		name, _ := r.src.ident(at)
		text = "AS `" + strings.ReplaceAll(name, "`", "``") + "` "
		last = j
	}
	r.replace(k, last, text+"AS OF TIMESTAMP "+strings.Join(parts, "."))
	return nil
}

// aliasStop are words that end a table source (they cannot be an alias).
var aliasStop = map[string]bool{
	"ON": true, "WHERE": true, "GROUP": true, "ORDER": true, "HAVING": true, "LIMIT": true, "JOIN": true,
	"CROSS": true, "LEFT": true, "RIGHT": true, "INNER": true, "FULL": true, "UNION": true, "WINDOW": true,
	"NATURAL": true, "OUTER": true, "USING": true, "EXCEPT": true, "INTERSECT": true, "STRAIGHT_JOIN": true,
}

// rewriteTableFunc handles, from code index start (LATERAL, TABLE or
// UNNEST) with the TABLE/UNNEST word at kw:
//
//	[LATERAL] TABLE ( F ( args ) ) [AS] [T [(c1, ...)]]
//	[LATERAL] UNNEST ( args ) [AS] [T [(c1, ...)]]
func (r *rewriter) rewriteTableFunc(start, kw int, kind string) *Error {
	tf := &TableFunc{Kind: kind}
	var argOpen, argClose, last int
	if r.word(kw) == "UNNEST" {
		tf.Name = "UNNEST"
		tf.Pos = r.src.pos(r.codeTok(kw).start)
		argOpen = kw + 1
		if argClose = r.matchParen(argOpen); argClose < 0 {
			return nil
		}
		last = argClose
	} else {
		outerClose := r.matchParen(kw + 1)
		if outerClose < 0 {
			return nil
		}
		ft := r.codeTok(kw + 2)
		name, ok := r.src.ident(ft)
		if !ok || !r.isOp(kw+3, "(") {
			return r.src.errAt(ft.start, "expected a function call inside TABLE(...), found %s", r.src.describe(ft))
		}
		tf.Name = strings.ToUpper(name)
		tf.Pos = r.src.pos(ft.start)
		argOpen = kw + 3
		argClose = r.matchParen(argOpen)
		if argClose+1 != outerClose {
			at := r.codeTok(argClose + 1)
			return r.src.errAt(at.start, "expected \")\" after the call inside TABLE(...), found %s", r.src.describe(at))
		}
		last = outerClose
	}
	// Alias and column list.
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
			c := r.subCursor(j, closeK+1)
			cols, err := c.identList("a column name")
			if err != nil {
				return err
			}
			tf.Columns = cols
			last = closeK
		}
	} else if hasAS {
		return r.src.errAt(at.start, "expected an alias after AS, found %s", r.src.describe(at))
	}
	// Arguments: TABLE t inside a window TVF's arguments names a table.
	if err := r.windowTVFArgs(tf, argOpen, argClose); err != nil {
		return err
	}
	idx := len(r.q.funcs)
	r.q.funcs = append(r.q.funcs, tf)
	text := fmt.Sprintf("%s%d", tableFuncPrefix, idx)
	if tf.Alias != "" {
		text += " AS `" + strings.ReplaceAll(tf.Alias, "`", "``") + "`"
	}
	r.replace(start, last, text)
	pf := pendingFunc{tf: tf, argFrom: r.code[argOpen] + 1, argTo: r.code[argClose],
		argOrig: r.codeTok(argOpen).end, argStop: r.codeTok(argClose).start, empty: argOpen+1 == argClose}
	r.funcs = append(r.funcs, pf)
	return nil
}

// emit appends tokens [from, to) (indexes into r.toks) to b, applying the
// replacements, blanking comments and keeping whitespace.
func (r *rewriter) emit(b *builder, from, to int) {
	if from >= to {
		return
	}
	text := r.src.text
	prev := r.toks[from].start
	for i := from; i < to; {
		t := r.toks[i]
		b.copy(text, prev, t.start)
		if rp, ok := r.repl[i]; ok && rp.end <= to {
			b.insert(rp.text, t.start)
			prev = r.toks[rp.end-1].end
			i = rp.end
			continue
		}
		if t.kind == tComment {
			b.blank(text, t.start, t.end)
		} else {
			b.copy(text, t.start, t.end)
		}
		prev = t.end
		i++
	}
}
