package expr

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"golang.org/x/text/cases"
	"golang.org/x/text/language"

	"github.com/streamsql/streamsql/planner"
)

// strCol reads a string operand row by row: a column, or a constant.
type strCol struct {
	a     *array.String
	c     string
	isC   bool
	bits  []byte
	off   int
	nullC bool
}

func (s *strCol) get(i int) string {
	if s.isC {
		return s.c
	}
	return s.a.Value(i)
}

func (s *strCol) valid(i int) bool {
	if s.isC {
		return !s.nullC
	}
	return isValid(s.bits, s.off, i)
}

// intCol reads an INT operand row by row.
type intCol struct {
	v    []int32
	step int
	bits []byte
	off  int
	null bool
}

func (c *intCol) get(i int) int32 { return c.v[i*c.step] }
func (c *intCol) valid(i int) bool {
	return !c.null && (c.step == 0 || isValid(c.bits, c.off, i))
}

func newStrCol(a arrow.Array, c arrow.Array) strCol {
	if a == nil {
		if c.IsNull(0) {
			return strCol{isC: true, nullC: true}
		}
		return strCol{isC: true, c: c.(*array.String).Value(0)}
	}
	b, off, an := bitsOf(a)
	if an {
		return strCol{isC: true, nullC: true}
	}
	return strCol{a: a.(*array.String), bits: b, off: off}
}

func newIntCol(a arrow.Array, c arrow.Array) intCol {
	if a == nil {
		return intCol{v: values[int32](c), step: 0, null: c.IsNull(0)}
	}
	b, off, an := bitsOf(a)
	return intCol{v: values[int32](a), step: 1, bits: b, off: off, null: an}
}

// strFn evaluates the string functions.
type strFn struct {
	fn   string
	args []operand
	mode string // trim: BOTH, LEADING or TRAILING
}

func compileString(c *planner.Call, args []Evaluator) (Evaluator, error) {
	n := &strFn{fn: c.Fn}
	for _, a := range args {
		n.args = append(n.args, newOperand(a))
	}
	want := map[string][2]int{
		"upper": {1, 1}, "lower": {1, 1}, "concat": {1, -1}, "concat_ws": {2, -1},
		"substring": {2, 3}, "char_length": {1, 1}, "trim": {1, 3}, "ltrim": {1, 2},
		"rtrim": {1, 2}, "replace": {3, 3}, "position": {2, 2},
	}[c.Fn]
	if err := nargs(c, want[0], want[1]); err != nil {
		return nil, err
	}
	switch c.Fn {
	case "trim":
		n.mode = "BOTH"
		if len(args) == 3 {
			m := constArr(args[2])
			if m == nil || m.IsNull(0) {
				return nil, fmt.Errorf("function TRIM: the mode must be a constant")
			}
			n.mode = strings.ToUpper(m.(*array.String).Value(0))
			n.args = n.args[:2]
		}
	case "ltrim":
		n.mode = "LEADING"
	case "rtrim":
		n.mode = "TRAILING"
	}
	return n, nil
}

func (n *strFn) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	rows := int(rec.NumRows())
	arrs, err := evalArgs(n.args, rec, mem)
	if err != nil {
		return nil, err
	}
	defer releaseAll(arrs)
	switch n.fn {
	case "substring":
		return n.substring(rows, arrs, mem), nil
	case "concat_ws":
		return n.concatWS(rows, arrs, mem), nil
	}
	cols := make([]strCol, len(arrs))
	for i := range arrs {
		cols[i] = newStrCol(arrs[i], n.args[i].c)
	}
	valid, _ := writableValidity(mem, rows, arrs...)
	for _, c := range cols {
		if c.nullC {
			clear(valid.Bytes())
		}
	}
	vb := valid.Bytes()
	switch n.fn {
	case "char_length", "position":
		buf, out := allocFixed[int32](mem, rows)
		for i := 0; i < rows; i++ {
			if !bitutil.BitIsSet(vb, i) {
				continue
			}
			if n.fn == "char_length" {
				out[i] = int32(utf8.RuneCountInString(cols[0].get(i)))
			} else {
				out[i] = position(cols[0].get(i), cols[1].get(i))
			}
		}
		return makeArray(arrow.PrimitiveTypes.Int32, rows, valid, buf), nil
	}
	so := newStrOut(mem, rows, 0)
	var scratch []byte
	cm := caseMapper{upper: n.fn == "upper"}
	for i := 0; i < rows; i++ {
		if !bitutil.BitIsSet(vb, i) {
			so.appendEmpty()
			continue
		}
		switch n.fn {
		case "upper", "lower":
			scratch = changeCase(scratch[:0], cols[0].get(i), &cm)
			so.appendBytes(scratch)
		case "concat":
			scratch = scratch[:0]
			for k := range cols {
				scratch = append(scratch, cols[k].get(i)...)
			}
			so.appendBytes(scratch)
		case "trim", "ltrim", "rtrim":
			chars := " "
			if len(cols) > 1 {
				chars = cols[1].get(i)
			}
			so.appendString(trim(cols[0].get(i), chars, n.mode))
		case "replace":
			s, from := cols[0].get(i), cols[1].get(i)
			if from == "" || !strings.Contains(s, from) {
				so.appendString(s)
			} else {
				so.appendString(strings.ReplaceAll(s, from, cols[2].get(i)))
			}
		}
	}
	return so.finish(valid), nil
}

// substring is SUBSTRING(s, pos[, len]) with Flink's rules: positions count
// characters from 1; a negative pos counts from the end; pos 0 is 1; a
// negative len gives NULL.
func (n *strFn) substring(rows int, arrs []arrow.Array, mem memory.Allocator) arrow.Array {
	s := newStrCol(arrs[0], n.args[0].c)
	pos := newIntCol(arrs[1], n.args[1].c)
	var ln intCol
	hasLen := len(arrs) == 3
	if hasLen {
		ln = newIntCol(arrs[2], n.args[2].c)
	}
	vbuf, vb := allocBits(mem, rows)
	so := newStrOut(mem, rows, 0)
	for i := 0; i < rows; i++ {
		if !s.valid(i) || !pos.valid(i) || (hasLen && (!ln.valid(i) || ln.get(i) < 0)) {
			so.appendEmpty()
			continue
		}
		bitutil.SetBit(vb, i)
		str := s.get(i)
		length := int64(-1)
		if hasLen {
			length = int64(ln.get(i))
		}
		so.appendString(substr(str, int64(pos.get(i)), length))
	}
	return so.finish(vbuf)
}

// substr implements the character arithmetic of SUBSTRING; length < 0 means
// "to the end".
func substr(s string, pos, length int64) string {
	ascii := isASCII(s)
	nchars := int64(len(s))
	if !ascii {
		nchars = int64(utf8.RuneCountInString(s))
	}
	var start int64
	switch {
	case pos > 0:
		start = pos - 1
		if start >= nchars {
			return ""
		}
	case pos < 0:
		start = nchars + pos
		if start < 0 {
			return ""
		}
	}
	end := nchars
	if length >= 0 && nchars-start > length {
		end = start + length
	}
	if ascii {
		return s[start:end]
	}
	bs, be := -1, len(s)
	ci := int64(0)
	for bi := range s {
		if ci == start {
			bs = bi
		}
		if ci == end {
			be = bi
			break
		}
		ci++
	}
	if bs < 0 {
		return ""
	}
	return s[bs:be]
}

// concatWS is CONCAT_WS(sep, s1, ...): NULL when sep is NULL; NULL arguments
// are skipped.
func (n *strFn) concatWS(rows int, arrs []arrow.Array, mem memory.Allocator) arrow.Array {
	cols := make([]strCol, len(arrs))
	for i := range arrs {
		cols[i] = newStrCol(arrs[i], n.args[i].c)
	}
	vbuf, vb := allocBits(mem, rows)
	so := newStrOut(mem, rows, 0)
	var scratch []byte
	for i := 0; i < rows; i++ {
		if !cols[0].valid(i) {
			so.appendEmpty()
			continue
		}
		bitutil.SetBit(vb, i)
		sep := cols[0].get(i)
		scratch = scratch[:0]
		first := true
		for _, c := range cols[1:] {
			if !c.valid(i) {
				continue
			}
			if !first {
				scratch = append(scratch, sep...)
			}
			first = false
			scratch = append(scratch, c.get(i)...)
		}
		so.appendBytes(scratch)
	}
	return so.finish(vbuf)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// caseMapper maps non-ASCII text with Unicode's full case mappings, as
// Java's String.toUpperCase and toLowerCase (root locale), and so Flink, do:
// UPPER('straße') is 'STRASSE', UPPER('ﬁ') is 'FI', LOWER gives a final
// sigma at the end of a word. Go's strings.ToUpper maps each rune to one
// rune and left ß alone. A cases.Caser keeps state between calls, so each
// Eval makes its own, and only when a value is not ASCII.
type caseMapper struct {
	upper bool
	c     cases.Caser
	made  bool
}

func (m *caseMapper) caser() cases.Caser {
	if !m.made {
		if m.upper {
			m.c = cases.Upper(language.Und)
		} else {
			m.c = cases.Lower(language.Und)
		}
		m.made = true
	}
	return m.c
}

// changeCase appends s in upper or lower case (m.upper) to dst.
func changeCase(dst []byte, s string, m *caseMapper) []byte {
	upper := m.upper
	if !isASCII(s) {
		return append(dst, m.caser().String(s)...)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if upper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		} else if !upper && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// trim removes the characters of chars from the ends of s selected by mode.
func trim(s, chars, mode string) string {
	if chars == "" {
		return s
	}
	if mode != "TRAILING" {
		if len(chars) == 1 {
			s = strings.TrimLeft(s, chars)
		} else {
			s = strings.TrimLeftFunc(s, func(r rune) bool { return strings.ContainsRune(chars, r) })
		}
	}
	if mode != "LEADING" {
		if len(chars) == 1 {
			s = strings.TrimRight(s, chars)
		} else {
			s = strings.TrimRightFunc(s, func(r rune) bool { return strings.ContainsRune(chars, r) })
		}
	}
	return s
}

// position is POSITION(sub IN s): the 1-based character index of the first
// occurrence, 0 when absent, 1 for an empty sub.
func position(sub, s string) int32 {
	i := strings.Index(s, sub)
	if i < 0 {
		return 0
	}
	return int32(utf8.RuneCountInString(s[:i])) + 1
}
