package parser

import "strings"

// Flink constructs that TiDB's grammar cannot parse and streamsql does not
// implement yet. Without these checks each would be a bare "syntax error
// near ..."; the pre-lexer names the construct instead, at its position.

// unsupported reports the construct starting at code token k, if it is one
// of those.
func (r *rewriter) unsupported(k int) *Error {
	t := r.codeTok(k)
	w := r.src.word(t)
	at := func(format string, args ...any) *Error { return r.src.errAt(t.start, format, args...) }
	next := r.codeTok(k + 1)
	adjacent := next.start == t.end // no space between t and the next token
	switch {
	case w == "GROUPING" && r.word(k+1) == "SETS":
		return at("GROUPING SETS are not supported yet")
	case w == "SIMILAR" && r.word(k+1) == "TO":
		if r.word(k-1) == "NOT" {
			return r.src.errAt(r.codeTok(k-1).start, "NOT SIMILAR TO is not supported yet; use NOT LIKE")
		}
		return at("SIMILAR TO is not supported yet; use LIKE")
	case w == "MATCH_RECOGNIZE":
		return at("MATCH_RECOGNIZE (pattern recognition) is not supported yet")
	case (w == "ARRAY" || w == "MAP") && r.isOp(k+1, "["):
		return at("%s[...] constructors are not supported yet (there are no ARRAY or MAP types)", w)
	case t.kind == tOp && r.src.tokText(t) == "[":
		return at("'[' (element access of an ARRAY or MAP) is not supported yet (there are no ARRAY or MAP types)")
	case w == "ESCAPE" && next.kind == tString:
		if v := r.src.stringValue(next); len(v) != 1 {
			return r.src.errAt(next.start, "ESCAPE takes exactly one character, got '%s'", v)
		}
	case (w == "X" || w == "B") && next.kind == tString && adjacent:
		return at("binary string literals (%s) are not supported (there is no BINARY or BYTES type)", r.src.text[t.start:next.end])
	case t.kind == tNumber && r.src.tokText(t) == "0" && next.kind == tIdent && adjacent &&
		(strings.HasPrefix(r.src.word(next), "X") || strings.HasPrefix(r.src.word(next), "B")):
		return at("hexadecimal and binary literals (%s) are not supported; write the number in decimal", r.src.text[t.start:next.end])
	}
	return nil
}
