package parser

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// tokKind classifies a token of the pre-lexer.
type tokKind uint8

const (
	tEOF     tokKind = iota
	tIdent           // bare word: keyword or identifier
	tQIdent          // `quoted identifier`
	tString          // 'string literal' ('' escapes a quote)
	tDString         // "double-quoted text" (passed to TiDB as is)
	tNumber          // 12, 1.5, 1e3
	tOp              // punctuation and operators
	tComment         // -- line comment or /* block comment */
	tHint            // /*+ optimizer hint */ (kept for TiDB)
)

// token is a span [start, end) of the original text.
type token struct {
	kind       tokKind
	start, end int
}

// lexer splits the whole original text into tokens. It never fails on
// unknown bytes (they become one-byte tOp tokens); it fails only on an
// unterminated string, quoted identifier or block comment.
type lexer struct {
	src string
	pos int
}

// lexAll tokenizes src. On an unterminated literal or comment it returns the
// tokens so far and an *Error at the literal's start; unterminated reports
// that the text merely stopped early (used by Complete).
func lexAll(src string, lines *lineIndex) (toks []token, err *Error) {
	lx := lexer{src: src}
	for {
		t, msg := lx.next()
		if msg != "" {
			return toks, &Error{Pos: lines.pos(t.start), Msg: msg}
		}
		if t.kind == tEOF {
			return toks, nil
		}
		toks = append(toks, t)
	}
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// next returns the next token, or a message for an unterminated construct.
func (lx *lexer) next() (token, string) {
	s := lx.src
	for lx.pos < len(s) {
		c := s[lx.pos]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' {
			lx.pos++
			continue
		}
		break
	}
	start := lx.pos
	if start >= len(s) {
		return token{kind: tEOF, start: start, end: start}, ""
	}
	c := s[start]
	tok := func(k tokKind, end int) token {
		lx.pos = end
		return token{kind: k, start: start, end: end}
	}
	switch {
	case c == '-' && start+1 < len(s) && s[start+1] == '-':
		end := strings.IndexByte(s[start:], '\n')
		if end < 0 {
			return tok(tComment, len(s)), ""
		}
		return tok(tComment, start+end), ""
	case c == '/' && start+1 < len(s) && s[start+1] == '*':
		end := strings.Index(s[start+2:], "*/")
		if end < 0 {
			lx.pos = len(s)
			return token{kind: tComment, start: start, end: len(s)}, "unterminated comment: missing */"
		}
		k := tComment
		if start+2 < len(s) && s[start+2] == '+' {
			k = tHint
		}
		return tok(k, start+2+end+2), ""
	case c == '\'' || c == '"' || c == '`':
		i := start + 1
		for {
			j := strings.IndexByte(s[i:], c)
			if j < 0 {
				lx.pos = len(s)
				what := map[byte]string{'\'': "string literal: missing '", '"': "quoted text: missing \"", '`': "quoted identifier: missing `"}[c]
				return token{kind: tString, start: start, end: len(s)}, "unterminated " + what
			}
			i += j + 1
			if i < len(s) && s[i] == c { // doubled quote escapes itself
				i++
				continue
			}
			break
		}
		k := map[byte]tokKind{'\'': tString, '"': tDString, '`': tQIdent}[c]
		return tok(k, i), ""
	case isDigit(c) || (c == '.' && start+1 < len(s) && isDigit(s[start+1])):
		i := start
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i < len(s) && s[i] == '.' {
			i++
			for i < len(s) && isDigit(s[i]) {
				i++
			}
		}
		if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
			j := i + 1
			if j < len(s) && (s[j] == '+' || s[j] == '-') {
				j++
			}
			if j < len(s) && isDigit(s[j]) {
				for j < len(s) && isDigit(s[j]) {
					j++
				}
				i = j
			}
		}
		return tok(tNumber, i), ""
	case isIdentStart(c):
		i := start + 1
		for i < len(s) && isIdentChar(s[i]) {
			i++
		}
		return tok(tIdent, i), ""
	}
	for _, op := range []string{"<=>", "<<", ">>", "<=", ">=", "<>", "!=", "||", "=>", "::", ":=", "&&"} {
		if strings.HasPrefix(s[start:], op) {
			return tok(tOp, start+len(op)), ""
		}
	}
	return tok(tOp, start+1), ""
}

// lineIndex converts byte offsets of one text to line:col positions. Lines
// are numbered from firstLine (1 for a whole script; a shell passes the line
// its buffer starts at in the whole input); columns count characters
// (Unicode code points), not bytes, so a position after non-ASCII text is
// where an editor shows it.
type lineIndex struct {
	src       string
	starts    []int // offset of the first byte of each line
	firstLine int
}

func newLineIndex(src string) *lineIndex { return newLineIndexAt(src, 1) }

func newLineIndexAt(src string, firstLine int) *lineIndex {
	if firstLine < 1 {
		firstLine = 1
	}
	li := &lineIndex{src: src, starts: []int{0}, firstLine: firstLine}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			li.starts = append(li.starts, i+1)
		}
	}
	return li
}

func (li *lineIndex) pos(off int) Pos {
	off = max(0, min(off, len(li.src)))
	// The last line start <= off.
	i := sort.Search(len(li.starts), func(i int) bool { return li.starts[i] > off }) - 1
	if i < 0 {
		i = 0
	}
	col := utf8.RuneCountInString(li.src[li.starts[i]:off]) + 1
	return Pos{Offset: off, Line: li.firstLine + i, Col: col}
}

// source is the whole original text with its tokens.
type source struct {
	text  string
	lines *lineIndex
	toks  []token // all tokens, comments included
}

func (s *source) tokText(t token) string { return s.text[t.start:t.end] }

// word returns the upper-cased text of a bare word token, or "".
func (s *source) word(t token) string {
	if t.kind != tIdent {
		return ""
	}
	return strings.ToUpper(s.text[t.start:t.end])
}

// ident returns the name of an identifier token (bare or backquoted).
func (s *source) ident(t token) (string, bool) {
	switch t.kind {
	case tIdent:
		return s.text[t.start:t.end], true
	case tQIdent:
		return strings.ReplaceAll(s.text[t.start+1:t.end-1], "``", "`"), true
	}
	return "", false
}

// stringValue returns the value of a '...' literal.
func (s *source) stringValue(t token) string {
	return strings.ReplaceAll(s.text[t.start+1:t.end-1], "''", "'")
}

func (s *source) pos(off int) Pos { return s.lines.pos(off) }

func (s *source) errAt(off int, format string, args ...any) *Error {
	return &Error{Pos: s.pos(off), Msg: fmt.Sprintf(format, args...)}
}

// describe renders a token for an error message.
func (s *source) describe(t token) string {
	if t.kind == tEOF {
		return "end of statement"
	}
	txt := s.tokText(t)
	if len(txt) > 40 {
		txt = txt[:40] + "..."
	}
	return `"` + txt + `"`
}
