package parser

import (
	"fmt"
	"strings"
)

// cursor walks the code tokens (no comments) of one statement or clause.
// Past the last token it returns a tEOF token at offset end.
type cursor struct {
	src  *source
	toks []token
	i    int
	end  int // offset of the EOF token (the ';' or the end of the text)
}

func newCursor(src *source, toks []token, end int) *cursor {
	return &cursor{src: src, toks: toks, end: end}
}

func (c *cursor) peekN(n int) token {
	if c.i+n < len(c.toks) {
		return c.toks[c.i+n]
	}
	return token{kind: tEOF, start: c.end, end: c.end}
}

func (c *cursor) peek() token { return c.peekN(0) }

func (c *cursor) next() token {
	t := c.peek()
	if c.i < len(c.toks) {
		c.i++
	}
	return t
}

func (c *cursor) atEnd() bool { return c.i >= len(c.toks) }

// isWord reports whether the n-th next token is the bare word w (upper-case).
func (c *cursor) isWordN(n int, w string) bool { return c.src.word(c.peekN(n)) == w }

func (c *cursor) isWord(w string) bool { return c.isWordN(0, w) }

// acceptWords consumes the sequence ws if the next tokens are exactly ws.
func (c *cursor) acceptWords(ws ...string) bool {
	for n, w := range ws {
		if !c.isWordN(n, w) {
			return false
		}
	}
	c.i += len(ws)
	return true
}

func (c *cursor) isOpN(n int, op string) bool {
	t := c.peekN(n)
	return t.kind == tOp && c.src.tokText(t) == op
}

func (c *cursor) isOp(op string) bool { return c.isOpN(0, op) }

func (c *cursor) acceptOp(op string) bool {
	if c.isOp(op) {
		c.i++
		return true
	}
	return false
}

// acceptCloser consumes closer (")" or ">"). A ">>" token (two nested ROW
// types ending together) is split: its first half is consumed.
func (c *cursor) acceptCloser(closer string) bool {
	if c.acceptOp(closer) {
		return true
	}
	if closer == ">" && c.isOp(">>") {
		// copy on write: the token slice may be shared with the source
		t := c.toks[c.i]
		c.toks = append(append(c.toks[:c.i:c.i], token{kind: tOp, start: t.start + 1, end: t.end}), c.toks[c.i+1:]...)
		return true
	}
	return false
}

func (c *cursor) errorf(t token, format string, args ...any) *Error {
	return &Error{Pos: c.src.pos(t.start), Msg: fmt.Sprintf(format, args...)}
}

// unexpected reports the next token as unexpected, saying what was expected.
func (c *cursor) unexpected(expected string) *Error {
	t := c.peek()
	return c.errorf(t, "expected %s, found %s", expected, c.src.describe(t))
}

func (c *cursor) expectWords(ws ...string) *Error {
	for _, w := range ws {
		if !c.isWord(w) {
			return c.unexpected(w)
		}
		c.i++
	}
	return nil
}

func (c *cursor) expectOp(op string) *Error {
	if !c.acceptOp(op) {
		return c.unexpected(`"` + op + `"`)
	}
	return nil
}

// expectEnd fails unless every token was consumed.
func (c *cursor) expectEnd() *Error {
	if c.atEnd() {
		return nil
	}
	t := c.peek()
	return c.errorf(t, "unexpected %s", c.src.describe(t))
}

// ident consumes one identifier (bare or backquoted).
func (c *cursor) ident(what string) (string, token, *Error) {
	t := c.peek()
	if name, ok := c.src.ident(t); ok {
		c.i++
		return name, t, nil
	}
	return "", t, c.unexpected(what)
}

// name consumes a possibly qualified name a.b.c; parts are joined by '.'.
func (c *cursor) name(what string) (string, token, *Error) {
	n, first, err := c.ident(what)
	if err != nil {
		return "", first, err
	}
	parts := []string{n}
	for c.isOp(".") {
		c.i++
		p, _, err := c.ident(what)
		if err != nil {
			return "", first, err
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "."), first, nil
}

// identList parses ( a, b, ... ).
func (c *cursor) identList(what string) ([]string, *Error) {
	out, _, err := c.identListPos(what)
	return out, err
}

// identListPos parses ( a, b, ... ) and returns where each name is.
func (c *cursor) identListPos(what string) ([]string, []Pos, *Error) {
	if err := c.expectOp("("); err != nil {
		return nil, nil, err
	}
	var out []string
	var pos []Pos
	for {
		n, t, err := c.ident(what)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, n)
		pos = append(pos, c.src.pos(t.start))
		if c.acceptOp(",") {
			continue
		}
		if err := c.expectOp(")"); err != nil {
			return nil, nil, err
		}
		return out, pos, nil
	}
}

// stringLit consumes a '...' literal.
func (c *cursor) stringLit(what string) (string, token, *Error) {
	t := c.peek()
	if t.kind != tString {
		return "", t, c.unexpected(what)
	}
	c.i++
	return c.src.stringValue(t), t, nil
}

// restRange returns the original byte range of the remaining tokens.
func (c *cursor) restRange() (from, to int) {
	if c.atEnd() {
		return c.end, c.end
	}
	return c.toks[c.i].start, c.toks[len(c.toks)-1].end
}
