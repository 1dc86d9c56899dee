package format

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
)

// CSVDecoder decodes CSV records into a RecordBuilder, fields by column
// order (RFC 4180 quoting with Flink's options).
type CSVDecoder struct {
	opts CSVOptions
	row  rowDecoder
	tmp  []byte
	// general turns the fast paths off (tests compare the two)
	general bool
}

// NewCSVDecoder returns a decoder appending to rb, whose fields must be the
// Arrow storage of schema.
func NewCSVDecoder(schema catalog.Schema, opts CSVOptions, rb *array.RecordBuilder) (*CSVDecoder, error) {
	r, err := newRowDecoder(schema, rb)
	if err != nil {
		return nil, err
	}
	return &CSVDecoder{opts: opts, row: r}, nil
}

// NewCSVDecoderOn is NewCSVDecoder appending to bs, one builder per column
// of schema (builders the caller made, e.g. with different allocators).
func NewCSVDecoderOn(schema catalog.Schema, opts CSVOptions, bs []array.Builder) (*CSVDecoder, error) {
	if len(bs) != len(schema) {
		return nil, fmt.Errorf("%d builders for %d columns", len(bs), len(schema))
	}
	r, err := newRowDecoderOn(schema, bs)
	if err != nil {
		return nil, err
	}
	return &CSVDecoder{opts: opts, row: r}, nil
}

// Complete reports whether rec is a whole record: false when it ends inside a
// quoted field, so the caller should append the line break and the next line
// (a quoted field may contain line breaks). It reads all of rec; a caller
// growing a record line by line uses Scan instead.
func (d *CSVDecoder) Complete(rec []byte) bool {
	var s CSVScan
	return d.Scan(rec, &s)
}

// CSVScan is where CSVDecoder.Scan stopped in a record that is not complete
// yet. The zero value starts a new record.
type CSVScan struct {
	pos    int  // bytes of the record read so far
	quoted bool // pos is inside a quoted field
	esc    bool // the byte at pos is escaped (the escape character ended the part read)
}

// Scan is Complete for a record assembled a line at a time: rec must begin
// with the bytes given to the previous call with the same s (the caller
// appended a line break and the next line), and only the bytes after them
// are read. Reading a record of n bytes therefore costs O(n) however many
// lines it spans (calling Complete on each longer prefix would cost O(n²):
// one stray quote made a file's read quadratic). When it returns true, s is
// reset to the zero value, ready for the next record.
func (d *CSVDecoder) Scan(rec []byte, s *CSVScan) bool {
	if d.opts.DisableQuote {
		return true
	}
	q, delim := d.opts.Quote, d.opts.FieldDelimiter
	escape, hasEscape := d.opts.Escape, d.opts.HasEscape
	p, quoted, esc := s.pos, s.quoted, s.esc
	if p == 0 && bytes.IndexByte(rec, q) < 0 {
		return true // no quote at all: the common case, one scan
	}
	for {
		if !quoted {
			// at the start of a field
			if p >= len(rec) || rec[p] != q {
				i := bytes.IndexByte(rec[p:], delim)
				if i < 0 {
					*s = CSVScan{}
					return true
				}
				p += i + 1
				continue
			}
			p++
			quoted = true
		}
		// inside a quoted field: find its closing quote
		for quoted {
			if !hasEscape {
				i := bytes.IndexByte(rec[p:], q)
				if i < 0 {
					p = len(rec)
				} else {
					p += i
				}
			}
			if p >= len(rec) {
				s.pos, s.quoted, s.esc = p, true, esc
				return false
			}
			c := rec[p]
			switch {
			case esc:
				esc = false
				p++
			case hasEscape && c == escape:
				esc = true
				p++
			case c == q && p+1 < len(rec) && rec[p+1] == q: // doubled quote
				p += 2
			case c == q:
				quoted = false
				p++
			default:
				p++
			}
		}
		// after the closing quote: up to the next delimiter (Decode reports
		// text in between)
		i := bytes.IndexByte(rec[p:], delim)
		if i < 0 {
			*s = CSVScan{}
			return true
		}
		p += i + 1
	}
}

// Decode parses one record and appends it (see Decoder). A trailing '\r' is
// dropped (CRLF files); an empty line is skipped; with AllowComments a line
// starting with '#' is skipped.
func (d *CSVDecoder) Decode(line []byte) (bool, error) {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) == 0 || d.opts.AllowComments && line[0] == '#' {
		return false, nil
	}
	r := &d.row
	r.reset()
	r.setLine(line)
	ncols := len(r.cols)
	q, delim := d.opts.Quote, d.opts.FieldDelimiter
	quoting := !d.opts.DisableQuote
	// plain: fields may be read in place by fastField
	plain := !d.opts.HasEscape && !d.opts.HasNullLiteral && !d.general
	p := 0
	f := 0
	for {
		if f >= ncols {
			return false, &FieldError{Reason: fmt.Sprintf("expected %d fields but found more", ncols), Value: shorten(line)}
		}
		if np, ok := d.fastField(r, f, line, p, plain, quoting); ok {
			p = np
		} else {
			var text []byte
			textOff := -1 // text is line[textOff:], not a copy
			quoted := false
			if quoting && p < len(line) && line[p] == q {
				quoted = true
				p++
				start := p
				simple := true
				closed := false
				for p < len(line) {
					if !d.opts.HasEscape {
						i := bytes.IndexByte(line[p:], q)
						if i < 0 {
							p = len(line)
							break
						}
						p += i
					}
					c := line[p]
					if d.opts.HasEscape && c == d.opts.Escape {
						simple = false
						p += 2
						continue
					}
					if c == q {
						if p+1 < len(line) && line[p+1] == q {
							simple = false
							p += 2
							continue
						}
						closed = true
						break
					}
					p++
				}
				if !closed {
					return false, &FieldError{Column: r.cols[f].name, Reason: "unterminated quoted field", Value: shorten(line[start-1:])}
				}
				if simple {
					text, textOff = line[start:p], start
				} else {
					d.tmp = d.tmp[:0]
					for j := start; j < p; j++ {
						c := line[j]
						if d.opts.HasEscape && c == d.opts.Escape && j+1 < p {
							j++
							d.tmp = append(d.tmp, line[j])
							continue
						}
						if c == q { // doubled quote
							j++
						}
						d.tmp = append(d.tmp, c)
					}
					text = d.tmp
				}
				p++ // closing quote
				if p < len(line) && line[p] != delim {
					return false, &FieldError{Column: r.cols[f].name, Reason: "unexpected character after closing quote", Value: shorten(line[start-1:])}
				}
			} else {
				start := p
				if d.opts.HasEscape {
					d.tmp = d.tmp[:0]
					for p < len(line) && line[p] != delim {
						if line[p] == d.opts.Escape && p+1 < len(line) {
							p++
						}
						d.tmp = append(d.tmp, line[p])
						p++
					}
					text = d.tmp
				} else {
					i := bytes.IndexByte(line[p:], delim)
					if i < 0 {
						p = len(line)
					} else {
						p += i
					}
					text, textOff = line[start:p], start
				}
			}
			if !quoted && d.opts.HasNullLiteral && string(text) == d.opts.NullLiteral {
				r.slots[f].null = true
			} else if textOff >= 0 && r.cols[f].kind == catalog.KindString {
				r.refString(f, textOff, len(text))
			} else if reason := r.parse(f, text); reason != "" {
				return false, &FieldError{Column: r.cols[f].name, Value: shorten(text), Reason: reason}
			}
		}
		f++
		if p >= len(line) {
			break
		}
		p++ // delimiter
		if p == len(line) {
			// trailing delimiter: one more, empty field
			if f >= ncols {
				return false, &FieldError{Reason: fmt.Sprintf("expected %d fields but found more", ncols), Value: shorten(line)}
			}
			if d.opts.HasNullLiteral && d.opts.NullLiteral == "" {
				r.slots[f].null = true
			} else if reason := r.parse(f, nil); reason != "" {
				return false, &FieldError{Column: r.cols[f].name, Value: "", Reason: reason}
			}
			f++
			break
		}
	}
	if f != ncols {
		return false, &FieldError{Reason: fmt.Sprintf("expected %d fields but found %d", ncols, f), Value: shorten(line)}
	}
	r.commit()
	return true, nil
}

// fastField reads field f at line[p] in the common cases, in one pass: an
// unquoted integer of a TINYINT to BIGINT column (optional '-', up to 18
// digits, in range) and an unquoted STRING field. It returns the position
// after the field and whether it read it; anything else (spaces, signs,
// out of range, quotes, errors) is left to the general path.
func (d *CSVDecoder) fastField(r *rowDecoder, f int, line []byte, p int, plain, quoting bool) (int, bool) {
	if !plain || p >= len(line) || quoting && line[p] == d.opts.Quote {
		return p, false
	}
	delim := d.opts.FieldDelimiter
	c := &r.cols[f]
	switch c.kind {
	case catalog.KindString:
		q := p
		var or byte
		for q < len(line) && line[q] != delim {
			or |= line[q]
			q++
		}
		if or >= utf8.RuneSelf {
			r.refString(f, p, q-p)
		} else {
			s := &r.slots[f]
			s.null, s.ref, s.sOff, s.sN = false, true, p, q-p
		}
		return q, true
	case catalog.KindBigInt, catalog.KindInt, catalog.KindSmallInt, catalog.KindTinyInt:
		q := p
		neg := line[q] == '-'
		if neg {
			q++
		}
		start := q
		var v int64
		for q < len(line) && q-start < 19 {
			b := line[q]
			if b < '0' || b > '9' {
				break
			}
			v = v*10 + int64(b-'0')
			q++
		}
		if q == start || q-start >= 19 || q < len(line) && line[q] != delim {
			return p, false
		}
		if neg {
			v = -v
		}
		var lo, hi int64 = math.MinInt64, math.MaxInt64
		switch c.kind {
		case catalog.KindInt:
			lo, hi = math.MinInt32, math.MaxInt32
		case catalog.KindSmallInt:
			lo, hi = math.MinInt16, math.MaxInt16
		case catalog.KindTinyInt:
			lo, hi = math.MinInt8, math.MaxInt8
		}
		if v < lo || v > hi {
			return p, false
		}
		s := &r.slots[f]
		s.null, s.i = false, v
		return q, true
	}
	return p, false
}

// CSVEncoder writes rows of records as CSV lines.
type CSVEncoder struct {
	opts CSVOptions
	cols []Column
	tmp  []byte
	// the bytes that make a field quoted (delimiter, quote, CR, LF,
	// escape): special by byte, and each broadcast to the 8 bytes of a
	// word for needsQuote's word-at-a-time scan
	special [256]bool
	// needsQuote's words: the delimiter, the quote and the escape (the
	// quote again without one) broadcast to 8 bytes; CR and LF are found
	// by one test for bytes below 0x0e (other control bytes there are
	// checked byte by byte)
	wDelim, wQuote, wEsc uint64
}

// NewCSVEncoder returns an encoder with the given options.
func NewCSVEncoder(opts CSVOptions) *CSVEncoder {
	e := &CSVEncoder{opts: opts}
	specials := []byte{opts.FieldDelimiter, opts.Quote, '\n', '\r'}
	if opts.HasEscape {
		specials = append(specials, opts.Escape)
	}
	for _, c := range specials {
		e.special[c] = true
	}
	e.wDelim, e.wQuote, e.wEsc = uint64(opts.FieldDelimiter)*lowBytes, uint64(opts.Quote)*lowBytes, uint64(opts.Quote)*lowBytes
	if opts.HasEscape {
		e.wEsc = uint64(opts.Escape) * lowBytes
	}
	return e
}

// lowBytes and highBits are the words of 8 bytes 0x01 and 0x80.
const (
	lowBytes = 0x0101010101010101
	highBits = 0x8080808080808080
)

// Reset points the encoder at rec's columns (call once per batch).
func (e *CSVEncoder) Reset(rec arrow.Record) {
	e.cols = e.cols[:0]
	for _, a := range rec.Columns() {
		e.cols = append(e.cols, NewColumn(a))
	}
}

// AppendRow appends row i of the current record and a '\n'.
func (e *CSVEncoder) AppendRow(dst []byte, i int) []byte {
	for j := range e.cols {
		if j > 0 {
			dst = append(dst, e.opts.FieldDelimiter)
		}
		c := &e.cols[j]
		if c.IsNull(i) {
			if e.opts.HasNullLiteral {
				dst = append(dst, e.opts.NullLiteral...)
			}
			continue
		}
		switch c.kind {
		case ckString:
			dst = e.appendString(dst, c.str.Value(i))
		case ckStruct:
			e.tmp = c.Append(e.tmp[:0], i, StyleFormatSQL)
			dst = e.appendString(dst, string(e.tmp))
		default:
			dst = c.Append(dst, i, StyleFormatSQL)
		}
	}
	return append(dst, '\n')
}

func (e *CSVEncoder) needsQuote(s string) bool {
	if s == "" {
		return true // distinguishes "" from NULL (an empty field)
	}
	if e.opts.HasNullLiteral && s == e.opts.NullLiteral {
		return true
	}
	if e.opts.AllowComments && s[0] == '#' {
		return true
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return true
	}
	k := 0
	for ; k+8 <= len(s); k += 8 {
		// a byte of x equal to c is a zero byte of x^c; a word has a
		// zero byte iff (v - lowBytes) &^ v & highBits is not 0 (the
		// compiler makes the shifts one 8-byte load)
		x := uint64(s[k]) | uint64(s[k+1])<<8 | uint64(s[k+2])<<16 | uint64(s[k+3])<<24 |
			uint64(s[k+4])<<32 | uint64(s[k+5])<<40 | uint64(s[k+6])<<48 | uint64(s[k+7])<<56
		v1, v2, v3 := x^e.wDelim, x^e.wQuote, x^e.wEsc
		if ((v1-lowBytes)&^v1|(v2-lowBytes)&^v2|(v3-lowBytes)&^v3)&highBits != 0 {
			return true
		}
		// a byte below 0x0e: (x - 0x0e..) &^ x has its high bit (exact
		// for n <= 0x80); then CR or LF, or another control byte
		if (x-0x0e*lowBytes)&^x&highBits != 0 {
			for _, c := range []byte(s[k : k+8]) {
				if e.special[c] {
					return true
				}
			}
		}
	}
	for ; k < len(s); k++ {
		if e.special[s[k]] {
			return true
		}
	}
	return false
}

func (e *CSVEncoder) appendString(dst []byte, s string) []byte {
	if !e.needsQuote(s) {
		return append(dst, s...)
	}
	if e.opts.DisableQuote {
		if !e.opts.HasEscape {
			return append(dst, s...)
		}
		for k := 0; k < len(s); k++ {
			c := s[k]
			if c == e.opts.FieldDelimiter || c == e.opts.Escape || c == '\n' || c == '\r' {
				dst = append(dst, e.opts.Escape)
			}
			dst = append(dst, c)
		}
		return dst
	}
	q := e.opts.Quote
	dst = append(dst, q)
	for k := 0; k < len(s); k++ {
		c := s[k]
		if c == q {
			dst = append(dst, q)
		} else if e.opts.HasEscape && c == e.opts.Escape {
			dst = append(dst, c)
		}
		dst = append(dst, c)
	}
	return append(dst, q)
}

// Encode writes every row of rec.
func (e *CSVEncoder) Encode(w *bufio.Writer, rec arrow.Record) error {
	e.Reset(rec)
	var buf []byte
	n := int(rec.NumRows())
	for i := 0; i < n; i++ {
		buf = e.AppendRow(buf[:0], i)
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}
