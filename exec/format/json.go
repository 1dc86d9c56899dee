package format

import (
	"bufio"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
)

// JSONDecoder decodes one JSON object per line into a RecordBuilder, columns
// by name (exact name first, then case-insensitively). Missing keys are NULL
// (or an error with FailOnMissingField); extra keys are ignored. Numeric and
// BOOLEAN columns also accept their value as a JSON string ("12", "true");
// a STRING column takes a JSON string as is, and any other value as its JSON
// text.
type JSONDecoder struct {
	opts JSONOptions
	row  rowDecoder
	root *jsonLevel
	tmp  []byte
	// general turns the fast paths off (tests compare the two)
	general bool
}

// jsonLevel is the key lookup of one object: the record's, or a ROW
// column's nested object.
type jsonLevel struct {
	byName map[string]int
	byFold map[string]int
	seen   []bool
	kids   []*jsonLevel // by column: the level of a ROW column's fields
}

func newJSONLevel(r *rowDecoder) *jsonLevel {
	lv := &jsonLevel{byName: map[string]int{}, byFold: map[string]int{}, seen: make([]bool, len(r.cols)), kids: make([]*jsonLevel, len(r.cols))}
	for i, c := range r.cols {
		lv.byName[c.name] = i
		if _, dup := lv.byFold[strings.ToLower(c.name)]; !dup {
			lv.byFold[strings.ToLower(c.name)] = i
		}
		if c.child != nil {
			lv.kids[i] = newJSONLevel(c.child)
		}
	}
	return lv
}

// NewJSONDecoder returns a decoder appending to rb. ROW columns read
// nested JSON objects, their fields by name as the record's columns.
func NewJSONDecoder(schema catalog.Schema, opts JSONOptions, rb *array.RecordBuilder) (*JSONDecoder, error) {
	r, err := newRowDecoder(schema, rb)
	if err != nil {
		return nil, err
	}
	return newJSONDecoder(r, opts), nil
}

// NewJSONDecoderOn is NewJSONDecoder appending to bs, one builder per
// column of schema (builders the caller made, e.g. with different
// allocators).
func NewJSONDecoderOn(schema catalog.Schema, opts JSONOptions, bs []array.Builder) (*JSONDecoder, error) {
	if len(bs) != len(schema) {
		return nil, fmt.Errorf("%d builders for %d columns", len(bs), len(schema))
	}
	r, err := newRowDecoderOn(schema, bs)
	if err != nil {
		return nil, err
	}
	return newJSONDecoder(r, opts), nil
}

func newJSONDecoder(r rowDecoder, opts JSONOptions) *JSONDecoder {
	r.setFormat(opts.ISOTimestamps, true)
	d := &JSONDecoder{opts: opts, row: r}
	d.root = newJSONLevel(&d.row)
	return d
}

type jsonErr struct {
	pos    int
	reason string
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// Decode parses one line holding one JSON object (see Decoder). Blank lines
// are skipped.
func (d *JSONDecoder) Decode(line []byte) (bool, error) {
	p := 0
	for p < len(line) && isSpace(line[p]) {
		p++
	}
	if p == len(line) {
		return false, nil
	}
	r := &d.row
	r.reset()
	r.setLine(line)
	if line[p] != '{' {
		return false, d.syntax(line, p, "expected a JSON object")
	}
	p, err := d.object(r, d.root, line, p, "")
	if err != nil {
		return false, err
	}
	p = skipSpace(line, p)
	if p != len(line) {
		return false, d.syntax(line, p, "unexpected text after the object")
	}
	r.commit()
	return true, nil
}

// object parses the object at line[p] ('{') into r's slots; prefix names
// the enclosing ROW columns in errors ("person.").
func (d *JSONDecoder) object(r *rowDecoder, lv *jsonLevel, line []byte, p int, prefix string) (int, error) {
	for i := range lv.seen {
		lv.seen[i] = false
	}
	p++
	first := true
	next := 0 // the column expected next
	for {
		p = skipSpace(line, p)
		if p >= len(line) {
			return p, d.syntax(line, p, "unexpected end of line inside the object")
		}
		if line[p] == '}' && first {
			p++
			break
		}
		if line[p] != '"' {
			return p, d.syntax(line, p, "expected a quoted key")
		}
		// key: an ASCII key without escapes is matched where it is, first
		// against the column after the previous key's (keys usually come
		// in column order)
		var je *jsonErr
		var col int
		var ok bool
		if end, plain := plainString(line, p); plain && !d.general {
			key := line[p+1 : end]
			if next < len(r.cols) && string(key) == r.cols[next].name {
				col, ok = next, true
			} else if col, ok = lv.byName[string(key)]; !ok {
				col, ok = lv.byFold[strings.ToLower(string(key))]
			}
			p = end + 1
		} else {
			d.tmp, p, je = appendJSONString(d.tmp[:0], line, p)
			if je != nil {
				return p, d.syntax(line, je.pos, je.reason)
			}
			key := d.tmp
			col, ok = lv.byName[string(key)]
			if !ok {
				col, ok = lv.byFold[strings.ToLower(string(key))]
			}
		}
		if ok {
			next = col + 1
		}
		p = skipSpace(line, p)
		if p >= len(line) || line[p] != ':' {
			return p, d.syntax(line, p, "expected ':' after a key")
		}
		p = skipSpace(line, p+1)
		if p >= len(line) {
			return p, d.syntax(line, p, "expected a value")
		}
		colName := func() string {
			return prefix + r.cols[col].name
		}
		// value
		start := p
		c := line[p]
		switch {
		case c == '"':
			if !ok {
				_, p, je = appendJSONString(d.tmp[:0], line, p)
				if je != nil {
					return p, d.syntax(line, je.pos, je.reason)
				}
				break
			}
			if r.cols[col].kind == catalog.KindString {
				if end, plain := plainString(line, p); plain && !d.general {
					s := &r.slots[col] // ASCII: valid as it is
					s.null, s.ref, s.sOff, s.sN = false, true, p+1, end-p-1
					p = end + 1
					break
				}
				off := len(r.scratch)
				r.scratch, p, je = appendJSONString(r.scratch, line, p)
				if je != nil {
					return p, d.syntax(line, je.pos, je.reason)
				}
				r.setString(col, off)
			} else {
				d.tmp, p, je = appendJSONString(d.tmp[:0], line, p)
				if je != nil {
					return p, d.syntax(line, je.pos, je.reason)
				}
				if reason := r.parse(col, d.tmp); reason != "" {
					return p, &FieldError{Column: colName(), Value: shorten(d.tmp), Reason: reason}
				}
			}
		case c == '{' && ok && r.cols[col].child != nil:
			child := r.cols[col].child
			child.reset()
			r.slots[col].null = false
			var err error
			if p, err = d.object(child, lv.kids[col], line, p, colName()+"."); err != nil {
				return p, err
			}
		case c == '{' || c == '[':
			end, je := skipComposite(line, p)
			if je != nil {
				return p, d.syntax(line, je.pos, je.reason)
			}
			p = end
			if ok {
				if r.cols[col].kind != catalog.KindString {
					return p, &FieldError{Column: colName(), Value: shorten(line[start:p]),
						Reason: "cannot read a JSON " + map[byte]string{'{': "object", '[': "array"}[c] + " as " + typeName(&r.cols[col])}
				}
				r.parse(col, line[start:p])
			}
		default:
			if ok && !d.general && (c == '-' || c >= '0' && c <= '9') {
				if end, fast := d.fastInt(r, col, line, p); fast {
					p = end
					break
				}
			}
			for p < len(line) && !isSpace(line[p]) && line[p] != ',' && line[p] != '}' && line[p] != ']' {
				p++
			}
			tok := line[start:p]
			switch string(tok) {
			case "null":
				if ok {
					r.slots[col].null = true
					if ch := r.cols[col].child; ch != nil {
						ch.reset()
					}
				}
			case "true", "false":
				if ok {
					if k := r.cols[col].kind; k != catalog.KindBoolean && k != catalog.KindString {
						return p, &FieldError{Column: colName(), Value: string(tok), Reason: "cannot read a JSON boolean as " + typeName(&r.cols[col])}
					}
					r.parse(col, tok)
				}
			default:
				if !validNumber(tok) {
					return p, d.syntax(line, start, "invalid value")
				}
				if ok {
					switch r.cols[col].kind {
					case catalog.KindBoolean, catalog.KindTimestamp, catalog.KindTimestampLTZ, catalog.KindDate, catalog.KindTime, catalog.KindRow:
						return p, &FieldError{Column: colName(), Value: string(tok), Reason: "cannot read a JSON number as " + typeName(&r.cols[col])}
					}
					if reason := r.parse(col, tok); reason != "" {
						return p, &FieldError{Column: colName(), Value: shorten(tok), Reason: reason}
					}
				}
			}
		}
		if ok {
			lv.seen[col] = true
		}
		first = false
		p = skipSpace(line, p)
		if p >= len(line) {
			return p, d.syntax(line, p, "unexpected end of line inside the object")
		}
		if line[p] == ',' {
			p++
			continue
		}
		if line[p] == '}' {
			p++
			break
		}
		return p, d.syntax(line, p, "expected ',' or '}'")
	}
	if d.opts.FailOnMissingField {
		for i, s := range lv.seen {
			if !s {
				return p, &FieldError{Column: prefix + r.cols[i].name, Reason: "missing field ('json.fail-on-missing-field' is true)"}
			}
		}
	}
	return p, nil
}

// plainString reports whether the JSON string at b[p] ('"') is ASCII
// without escapes or control characters, and the position of its closing
// quote. When it is not (or it is not closed), the caller decodes it with
// appendJSONString, which also reports the errors.
func plainString(b []byte, p int) (int, bool) {
	for q := p + 1; q < len(b); q++ {
		c := b[q]
		if c == '"' {
			return q, true
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return q, false
		}
	}
	return len(b), false
}

// fastInt parses the JSON number at line[p] into an integer column's
// slot when it is a plain integer in range that ends where a value ends
// (anything else, including every error, is left to the general path).
func (d *JSONDecoder) fastInt(r *rowDecoder, col int, line []byte, p int) (int, bool) {
	var lo, hi int64
	switch r.cols[col].kind {
	case catalog.KindBigInt:
		lo, hi = math.MinInt64, math.MaxInt64
	case catalog.KindInt:
		lo, hi = math.MinInt32, math.MaxInt32
	case catalog.KindSmallInt:
		lo, hi = math.MinInt16, math.MaxInt16
	case catalog.KindTinyInt:
		lo, hi = math.MinInt8, math.MaxInt8
	default:
		return p, false
	}
	q := p
	neg := line[q] == '-'
	if neg {
		q++
	}
	start := q
	var v int64
	for q < len(line) && q-start < 19 {
		c := line[q]
		if c < '0' || c > '9' {
			break
		}
		v = v*10 + int64(c-'0')
		q++
	}
	if q == start || q-start >= 19 {
		return p, false // no digits, or maybe out of range: the general path decides
	}
	if q < len(line) {
		switch line[q] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
		default:
			return p, false
		}
	}
	if neg {
		v = -v
	}
	if v < lo || v > hi {
		return p, false
	}
	s := &r.slots[col]
	s.null, s.i = false, v
	return q, true
}

func typeName(c *colOut) string { return c.typ.Nullable().String() }

func (d *JSONDecoder) syntax(line []byte, pos int, reason string) error {
	return &FieldError{Reason: fmt.Sprintf("invalid JSON: %s at character %d", reason, pos+1), Value: shorten(line)}
}

func skipSpace(b []byte, p int) int {
	for p < len(b) && isSpace(b[p]) {
		p++
	}
	return p
}

func validNumber(b []byte) bool {
	p := 0
	if p < len(b) && b[p] == '-' {
		p++
	}
	digits := 0
	for p < len(b) && b[p] >= '0' && b[p] <= '9' {
		p++
		digits++
	}
	if digits == 0 {
		return false
	}
	if p < len(b) && b[p] == '.' {
		p++
		fd := 0
		for p < len(b) && b[p] >= '0' && b[p] <= '9' {
			p++
			fd++
		}
		if fd == 0 {
			return false
		}
	}
	if p < len(b) && (b[p] == 'e' || b[p] == 'E') {
		p++
		if p < len(b) && (b[p] == '+' || b[p] == '-') {
			p++
		}
		ed := 0
		for p < len(b) && b[p] >= '0' && b[p] <= '9' {
			p++
			ed++
		}
		if ed == 0 {
			return false
		}
	}
	return p == len(b)
}

// appendJSONString decodes the string starting at b[p] == '"' into dst and
// returns the position after the closing quote. What it appends is valid
// UTF-8: ill-formed bytes become U+FFFD (see AppendValidUTF8), and so does
// a \u escape of a lone surrogate.
func appendJSONString(dst, b []byte, p int) ([]byte, int, *jsonErr) {
	p++
	for {
		start := p
		for p < len(b) {
			c := b[p]
			if c < utf8.RuneSelf {
				if c == '"' || c == '\\' || c < 0x20 {
					break
				}
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
		dst = append(dst, b[start:p]...)
		if p >= len(b) {
			return dst, p, &jsonErr{p, "unterminated string"}
		}
		switch c := b[p]; {
		case c == '"':
			return dst, p + 1, nil
		case c < 0x20:
			return dst, p, &jsonErr{p, "control character in a string"}
		}
		// backslash
		if p+1 >= len(b) {
			return dst, p, &jsonErr{p, "unterminated string"}
		}
		e := b[p+1]
		p += 2
		switch e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(b, p)
			if !ok {
				return dst, p, &jsonErr{p - 2, "bad \\u escape"}
			}
			p += 4
			if utf16.IsSurrogate(r) {
				if r2, ok := hex4(b, p+2); ok && p+1 < len(b) && b[p] == '\\' && b[p+1] == 'u' {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						r = dec
						p += 6
					}
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, p - 2, &jsonErr{p - 2, "bad escape"}
		}
	}
}

func hex4(b []byte, p int) (rune, bool) {
	if p+4 > len(b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[p:p+4]), 16, 32)
	return rune(v), err == nil
}

// skipComposite returns the position after the object or array at b[p].
func skipComposite(b []byte, p int) (int, *jsonErr) {
	depth := 0
	for p < len(b) {
		switch b[p] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return p + 1, nil
			}
		case '"':
			var je *jsonErr
			if _, p, je = appendJSONString(nil, b, p); je != nil {
				return p, je
			}
			continue
		}
		p++
	}
	return p, &jsonErr{p, "unterminated object or array"}
}

// JSONEncoder writes rows as JSON objects, one per line, columns by name.
type JSONEncoder struct {
	opts  JSONOptions
	names [][]byte // `"name":` pre-encoded
	cols  []Column
	style Style
}

// NewJSONEncoder returns an encoder for the given column names.
func NewJSONEncoder(names []string, opts JSONOptions) *JSONEncoder {
	e := &JSONEncoder{opts: opts, style: StyleFormatSQL}
	if opts.ISOTimestamps {
		e.style = StyleFormatISO
	}
	for _, n := range names {
		k := appendJSONQuoted(nil, n)
		e.names = append(e.names, append(k, ':'))
	}
	return e
}

// Reset points the encoder at rec's columns (call once per batch).
func (e *JSONEncoder) Reset(rec arrow.Record) {
	e.cols = e.cols[:0]
	for _, a := range rec.Columns() {
		e.cols = append(e.cols, NewColumn(a))
	}
}

// AppendRow appends row i of the current record as one line. op, when not
// empty, is written first as "op" (the change kind: +I, -U, +U, -D).
func (e *JSONEncoder) AppendRow(dst []byte, i int, op string) []byte {
	dst = append(dst, '{')
	sep := false
	if op != "" {
		dst = append(dst, `"op":"`...)
		dst = append(dst, op...)
		dst = append(dst, '"')
		sep = true
	}
	for j := range e.cols {
		c := &e.cols[j]
		null := c.IsNull(i)
		if null && e.opts.IgnoreNullFields {
			continue
		}
		if sep {
			dst = append(dst, ',')
		}
		sep = true
		dst = append(dst, e.names[j]...)
		dst = e.appendValue(dst, c, i, null)
	}
	return append(dst, '}', '\n')
}

// appendValue appends one JSON value (a ROW as a nested object).
func (e *JSONEncoder) appendValue(dst []byte, c *Column, i int, null bool) []byte {
	if null {
		return append(dst, "null"...)
	}
	switch c.kind {
	case ckString:
		return appendJSONQuoted(dst, c.str.Value(i))
	case ckTimestamp, ckInstant, ckDate, ckTime, ckDuration, ckMonths:
		dst = append(dst, '"')
		dst = c.Append(dst, i, e.style)
		return append(dst, '"')
	case ckFloat64, ckFloat32:
		start := len(dst)
		dst = c.Append(dst, i, e.style)
		if d := dst[start]; d == 'N' || d == 'I' || d == '-' && len(dst) > start+1 && dst[start+1] == 'I' {
			// not a JSON number: quote it
			v := string(dst[start:])
			dst = append(append(append(dst[:start], '"'), v...), '"')
		}
		return dst
	case ckStruct:
		dst = append(dst, '{')
		for k := range c.fields {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONQuoted(dst, c.names[k])
			dst = append(dst, ':')
			dst = e.appendValue(dst, &c.fields[k], i, c.fields[k].IsNull(i))
		}
		return append(dst, '}')
	}
	return c.Append(dst, i, e.style)
}

// Encode writes every row of rec (append-only: no "op").
func (e *JSONEncoder) Encode(w *bufio.Writer, rec arrow.Record) error {
	e.Reset(rec)
	var buf []byte
	n := int(rec.NumRows())
	for i := 0; i < n; i++ {
		buf = e.AppendRow(buf[:0], i, "")
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

const hexDigits = "0123456789abcdef"

// appendJSONQuoted appends s as a JSON string. The output is valid JSON
// whatever s holds: ill-formed UTF-8 is written as U+FFFD (values inside
// the engine are valid already; this keeps the guarantee local).
func appendJSONQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for k := 0; k < len(s); k++ {
		c := s[k]
		if c >= utf8.RuneSelf {
			n, ok := seqLen(s[k:])
			if !ok {
				dst = append(dst, s[start:k]...)
				dst = append(dst, replacement...)
				start = k + n
			}
			k += n - 1
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:k]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		}
		start = k + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
