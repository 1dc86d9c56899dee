package format

import "unicode/utf8"

// The one rule for text that is not valid UTF-8, applied by every decoder
// (CSV, JSON, the socket source's raw lines) and to string literals, so
// that every STRING value inside the engine is valid UTF-8: each maximal
// ill-formed subsequence is replaced by one U+FFFD, the practice the
// Unicode standard recommends (chapter 3, "U+FFFD Substitution of Maximal
// Subparts") and the result of Java's new String(bytes, UTF_8), which is
// what Flink's decoders give. A truncated sequence (E2 82 followed by an
// ASCII byte) is one U+FFFD; a byte that can never start a sequence (C0,
// F5..FF, a stray continuation byte) is one U+FFFD each; an encoded
// surrogate (ED A0 80) is three, as its second byte is already ill-formed.

const replacement = "\uFFFD"

// AppendValidUTF8 appends b to dst with every maximal ill-formed
// subsequence replaced by U+FFFD. Valid input is appended unchanged.
func AppendValidUTF8(dst, b []byte) []byte {
	start := 0
	for p := 0; p < len(b); {
		c := b[p]
		if c < utf8.RuneSelf {
			p++
			continue
		}
		n, ok := seqLen(b[p:])
		if !ok {
			dst = append(dst, b[start:p]...)
			dst = append(dst, replacement...)
			start = p + n
		}
		p += n
	}
	return append(dst, b[start:]...)
}

// appendText appends b to dst, repaired with AppendValidUTF8 when it is
// not valid UTF-8 (the common, valid case is one check and one copy).
func appendText(dst, b []byte) []byte {
	if utf8.Valid(b) {
		return append(dst, b...)
	}
	return AppendValidUTF8(dst, b)
}

// ValidUTF8 returns s when it is valid UTF-8, else a copy repaired as
// AppendValidUTF8 does.
func ValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string(AppendValidUTF8(nil, []byte(s)))
}

// seqLen looks at the sequence starting at b[0], a byte >= 0x80: ok is
// true when it is a well-formed UTF-8 sequence of n bytes; otherwise n
// (>= 1) is the length of the maximal ill-formed subsequence there (the
// lead byte plus the continuation bytes that still fit a well-formed
// sequence, up to the first byte that does not), which becomes one U+FFFD.
func seqLen[T text](b T) (n int, ok bool) {
	c := b[0]
	var need int         // continuation bytes a sequence with this lead has
	lo, hi := 0x80, 0xBF // the range of the second byte
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default: // 80..C1, F5..FF: never a lead byte
		return 1, false
	}
	n = 1
	for k := 0; k < need && n < len(b); k++ {
		x := int(b[n])
		if x < lo || x > hi {
			break
		}
		n++
		lo, hi = 0x80, 0xBF
	}
	return n, n == need+1
}
