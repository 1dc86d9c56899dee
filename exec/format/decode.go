package format

import (
	"fmt"
	"math"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"

	"github.com/streamsql/streamsql/catalog"
)

// FieldError is a record that cannot be decoded. Column is "" when the
// problem is the record as a whole (e.g. malformed JSON, wrong field count).
type FieldError struct {
	Column string
	Value  string // the offending text (shortened when long)
	Reason string
}

func (e *FieldError) Error() string {
	if e.Column == "" {
		if e.Value == "" {
			return e.Reason
		}
		return fmt.Sprintf("%s (value %s)", e.Reason, strconv.Quote(e.Value))
	}
	return fmt.Sprintf("%s in column %s (value %s)", e.Reason, strconv.Quote(e.Column), strconv.Quote(e.Value))
}

func shorten(b []byte) string {
	const max = 100
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}

// Decoder is what the CSV and JSON decoders share.
type Decoder interface {
	// Decode parses one record (a line without its terminator) and appends it
	// to the builder. Blank lines (and comments, where enabled) are skipped
	// with (false, nil). On error nothing is appended.
	Decode(line []byte) (appended bool, err error)
}

// slot is one column's parsed value of the record being decoded.
type slot struct {
	null     bool
	i        int64
	f        float64
	b        bool
	d        decimal128.Num
	sOff, sN int // string bytes in rowDecoder.scratch
}

// colOut is one column's typed builder.
type colOut struct {
	name  string
	kind  catalog.Kind
	prec  int32
	scale int32
	b     array.Builder
	bo    *array.BooleanBuilder
	i32   *array.Int32Builder
	i64   *array.Int64Builder
	f64   *array.Float64Builder
	dec   *array.Decimal128Builder
	str   *array.StringBuilder
	ts    *array.TimestampBuilder
}

// rowDecoder holds the scratch of the record being decoded and commits it
// to the builders once every field parsed.
type rowDecoder struct {
	cols    []colOut
	slots   []slot
	scratch []byte
	isoTS   bool
	json    bool // JSON decoder: timestamp errors hint at the format option
}

func newRowDecoder(schema catalog.Schema, rb *array.RecordBuilder) (rowDecoder, error) {
	if int(rb.Schema().NumFields()) != len(schema) {
		return rowDecoder{}, fmt.Errorf("record builder has %d fields, schema has %d", rb.Schema().NumFields(), len(schema))
	}
	r := rowDecoder{cols: make([]colOut, len(schema)), slots: make([]slot, len(schema))}
	for i, c := range schema {
		o := colOut{name: c.Name, kind: c.Type.Kind, prec: int32(c.Type.Precision), scale: int32(c.Type.Scale), b: rb.Field(i)}
		ok := true
		switch c.Type.Kind {
		case catalog.KindBoolean:
			o.bo, ok = o.b.(*array.BooleanBuilder)
		case catalog.KindInt:
			o.i32, ok = o.b.(*array.Int32Builder)
		case catalog.KindBigInt:
			o.i64, ok = o.b.(*array.Int64Builder)
		case catalog.KindDouble:
			o.f64, ok = o.b.(*array.Float64Builder)
		case catalog.KindDecimal:
			o.dec, ok = o.b.(*array.Decimal128Builder)
		case catalog.KindString:
			o.str, ok = o.b.(*array.StringBuilder)
		case catalog.KindTimestamp:
			o.ts, ok = o.b.(*array.TimestampBuilder)
		default:
			return rowDecoder{}, fmt.Errorf("column %q: type %s cannot be decoded", c.Name, c.Type)
		}
		if !ok {
			return rowDecoder{}, fmt.Errorf("column %q: builder %T does not match type %s", c.Name, o.b, c.Type)
		}
		r.cols[i] = o
	}
	return r, nil
}

func (r *rowDecoder) reset() {
	r.scratch = r.scratch[:0]
	for i := range r.slots {
		r.slots[i].null = true
	}
}

// parse parses text into column i's slot; it returns a reason on failure.
// A STRING value is stored repaired to valid UTF-8 (see AppendValidUTF8).
func (r *rowDecoder) parse(i int, text []byte) string {
	c := &r.cols[i]
	s := &r.slots[i]
	s.null = false
	var reason string
	switch c.kind {
	case catalog.KindBoolean:
		s.b, reason = parseBool(text)
	case catalog.KindInt:
		var st status
		s.i, st = parseInt(text, math.MinInt32, math.MaxInt32)
		reason = intReason(st, "INT")
	case catalog.KindBigInt:
		var st status
		s.i, st = parseInt(text, math.MinInt64, math.MaxInt64)
		reason = intReason(st, "BIGINT")
	case catalog.KindDouble:
		var st status
		s.f, st = parseDouble(text)
		reason = doubleReason(st)
	case catalog.KindDecimal:
		var st status
		s.d, st = parseDecimal(text, c.prec, c.scale)
		reason = decimalReason(st, c.prec, c.scale)
	case catalog.KindTimestamp:
		s.i, reason = parseTimestamp(text, r.isoTS, r.json)
	case catalog.KindString:
		s.sOff = len(r.scratch)
		r.scratch = appendText(r.scratch, text)
		s.sN = len(r.scratch) - s.sOff
	}
	return reason
}

// setString stores bytes already written at scratch[off:] (valid UTF-8) as
// column i's value.
func (r *rowDecoder) setString(i, off int) {
	s := &r.slots[i]
	s.null = false
	s.sOff, s.sN = off, len(r.scratch)-off
}

// commit appends the slots to the builders.
func (r *rowDecoder) commit() {
	for i := range r.cols {
		c := &r.cols[i]
		s := &r.slots[i]
		if s.null {
			c.b.AppendNull()
			continue
		}
		switch c.kind {
		case catalog.KindBoolean:
			c.bo.Append(s.b)
		case catalog.KindInt:
			c.i32.Append(int32(s.i))
		case catalog.KindBigInt:
			c.i64.Append(s.i)
		case catalog.KindDouble:
			c.f64.Append(s.f)
		case catalog.KindDecimal:
			c.dec.Append(s.d)
		case catalog.KindTimestamp:
			c.ts.Append(arrow.Timestamp(s.i))
		case catalog.KindString:
			c.str.BinaryBuilder.Append(r.scratch[s.sOff : s.sOff+s.sN])
		}
	}
}
