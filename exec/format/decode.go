package format

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

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
	sOff, sN int  // string bytes in rowDecoder.scratch (or line, when ref)
	ref      bool // the string is line[sOff:sOff+sN], not a copy in scratch
}

// colOut is one column's typed builder.
type colOut struct {
	name  string
	typ   catalog.Type
	kind  catalog.Kind
	prec  int32
	scale int32
	upm   int64 // TIMESTAMP: storage units per millisecond
	b     array.Builder
	bo    *array.BooleanBuilder
	i8    *array.Int8Builder
	i16   *array.Int16Builder
	i32   *array.Int32Builder
	i64   *array.Int64Builder
	f32   *array.Float32Builder
	f64   *array.Float64Builder
	dec   *array.Decimal128Builder
	str   *array.StringBuilder
	ts    *array.TimestampBuilder
	date  *array.Date32Builder
	tm    *array.Time32Builder
	st    *array.StructBuilder
	child *rowDecoder // ROW: its fields
	sw    *strCol     // STRING of a batch decoder: written directly (b is nil)
	// STRING: bytes appended so far (with the rows committed, an
	// estimate of a batch's data size; see reserve)
	strBytes int64
}

// rowDecoder holds the scratch of the record being decoded and commits it
// to the builders once every field parsed.
type rowDecoder struct {
	cols    []colOut
	slots   []slot
	scratch []byte
	isoTS   bool
	json    bool   // JSON decoder: timestamp errors hint at the format option
	line    []byte // the record being decoded (what ref slots point into)
	rows    int64  // records committed
	batch   *batchOut
	nested  bool // a column is a ROW
}

func newRowDecoder(schema catalog.Schema, rb *array.RecordBuilder) (rowDecoder, error) {
	if int(rb.Schema().NumFields()) != len(schema) {
		return rowDecoder{}, fmt.Errorf("record builder has %d fields, schema has %d", rb.Schema().NumFields(), len(schema))
	}
	bs := make([]array.Builder, len(schema))
	for i := range schema {
		bs[i] = rb.Field(i)
	}
	return newRowDecoderOn(schema, bs)
}

func newRowDecoderOn(schema catalog.Schema, bs []array.Builder) (rowDecoder, error) {
	r := rowDecoder{cols: make([]colOut, len(schema)), slots: make([]slot, len(schema))}
	for i, c := range schema {
		o := colOut{name: c.Name, typ: c.Type, kind: c.Type.Kind, prec: int32(c.Type.Precision), scale: int32(c.Type.Scale), b: bs[i]}
		ok := true
		if o.b == nil && c.Type.Kind == catalog.KindString {
			r.cols[i] = o // a batch decoder's strCol (set by the caller)
			continue
		}
		switch c.Type.Kind {
		case catalog.KindBoolean:
			o.bo, ok = o.b.(*array.BooleanBuilder)
		case catalog.KindTinyInt:
			o.i8, ok = o.b.(*array.Int8Builder)
		case catalog.KindSmallInt:
			o.i16, ok = o.b.(*array.Int16Builder)
		case catalog.KindInt:
			o.i32, ok = o.b.(*array.Int32Builder)
		case catalog.KindBigInt:
			o.i64, ok = o.b.(*array.Int64Builder)
		case catalog.KindFloat:
			o.f32, ok = o.b.(*array.Float32Builder)
		case catalog.KindDouble:
			o.f64, ok = o.b.(*array.Float64Builder)
		case catalog.KindDecimal:
			o.dec, ok = o.b.(*array.Decimal128Builder)
		case catalog.KindString:
			o.str, ok = o.b.(*array.StringBuilder)
		case catalog.KindTimestamp, catalog.KindTimestampLTZ:
			o.ts, ok = o.b.(*array.TimestampBuilder)
			o.upm = c.Type.UnitsPerMilli()
		case catalog.KindDate:
			o.date, ok = o.b.(*array.Date32Builder)
		case catalog.KindTime:
			o.tm, ok = o.b.(*array.Time32Builder)
		case catalog.KindRow:
			o.st, ok = o.b.(*array.StructBuilder)
			if ok {
				kids := make([]array.Builder, len(c.Type.Fields))
				for k := range kids {
					kids[k] = o.st.FieldBuilder(k)
				}
				child, err := newRowDecoderOn(catalog.Schema(c.Type.Fields), kids)
				if err != nil {
					return rowDecoder{}, fmt.Errorf("column %q: %w", c.Name, err)
				}
				o.child = &child
				r.nested = true
			}
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

func (r *rowDecoder) setFormat(iso, json bool) {
	r.isoTS, r.json = iso, json
	for i := range r.cols {
		if r.cols[i].child != nil {
			r.cols[i].child.setFormat(iso, json)
		}
	}
}

func (r *rowDecoder) reset() {
	r.scratch = r.scratch[:0]
	for i := range r.slots {
		r.slots[i].null = true
	}
	if r.nested {
		for i := range r.cols {
			if c := r.cols[i].child; c != nil {
				c.reset()
			}
		}
	}
}

// setLine makes line the record that ref slots point into (for ROW
// columns' decoders too).
func (r *rowDecoder) setLine(line []byte) {
	r.line = line
	if !r.nested {
		return
	}
	for i := range r.cols {
		if c := r.cols[i].child; c != nil {
			c.setLine(line)
		}
	}
}

// reserve makes room in the builders for rows more records, STRING data
// by the average size seen so far, so that a batch is built without
// growing (and copying) its buffers.
func (r *rowDecoder) reserve(rows int) {
	for i := range r.cols {
		c := &r.cols[i]
		data := 0
		if r.rows > 0 {
			data = int(c.strBytes*int64(rows)/r.rows*9/8) + 64
		}
		switch {
		case c.sw != nil:
			c.sw.reserve(rows, data)
		case c.str != nil:
			c.b.Reserve(rows)
			if data > 0 {
				c.str.ReserveData(data)
			}
		default:
			c.b.Reserve(rows)
		}
	}
}

// refString stores line[off:off+n] as column i's STRING value without
// copying it (copied, repaired, when it is not valid UTF-8).
func (r *rowDecoder) refString(i, off, n int) {
	b := r.line[off : off+n]
	s := &r.slots[i]
	s.null = false
	if !utf8.Valid(b) {
		s.ref = false
		s.sOff = len(r.scratch)
		r.scratch = AppendValidUTF8(r.scratch, b)
		s.sN = len(r.scratch) - s.sOff
		return
	}
	s.ref, s.sOff, s.sN = true, off, n
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
	case catalog.KindTinyInt:
		var st status
		s.i, st = parseInt(text, math.MinInt8, math.MaxInt8)
		reason = intReason(st, "TINYINT")
	case catalog.KindSmallInt:
		var st status
		s.i, st = parseInt(text, math.MinInt16, math.MaxInt16)
		reason = intReason(st, "SMALLINT")
	case catalog.KindInt:
		var st status
		s.i, st = parseInt(text, math.MinInt32, math.MaxInt32)
		reason = intReason(st, "INT")
	case catalog.KindBigInt:
		var st status
		s.i, st = parseInt(text, math.MinInt64, math.MaxInt64)
		reason = intReason(st, "BIGINT")
	case catalog.KindFloat, catalog.KindDouble:
		var st status
		s.f, st = parseDouble(text)
		reason = doubleReason(st)
	case catalog.KindDecimal:
		var st status
		s.d, st = parseDecimal(text, c.prec, c.scale)
		reason = decimalReason(st, c.prec, c.scale)
	case catalog.KindTimestamp:
		var sub int32
		s.i, sub, reason = parseTimestampNanos(text, r.isoTS, r.json, c.typ)
		s.i = UnitsOf(s.i, sub, c.upm)
	case catalog.KindTimestampLTZ:
		form := tsZ
		if r.isoTS {
			form = tsISO
		}
		ms, sub, st := scanTimestampNanos(text, form)
		switch st {
		case stOK:
			s.i = UnitsOf(ms, sub, c.upm)
		case stRange:
			reason = "invalid " + c.typ.String() + ": date or time field out of range"
		default:
			reason = "invalid " + c.typ.String() + ": expected 'yyyy-MM-dd HH:mm:ss[.SSS][Z]' (UTC)"
			if r.isoTS {
				reason = "invalid " + c.typ.String() + ": expected 'yyyy-MM-ddTHH:mm:ss[.SSS]Z' (ISO-8601, UTC)"
			}
		}
	case catalog.KindDate:
		var st status
		s.i, st = scanDate(text, false)
		switch st {
		case stRange:
			reason = "invalid DATE: date field out of range"
		case stOK:
		default:
			reason = "invalid DATE: expected 'yyyy-MM-dd'"
		}
	case catalog.KindTime:
		var st status
		s.i, st = scanTime(text, false)
		switch st {
		case stRange:
			reason = "invalid TIME: time field out of range"
		case stOK:
		default:
			reason = "invalid TIME: expected 'HH:mm:ss[.SSS]'"
		}
	case catalog.KindRow:
		reason = "cannot read " + c.typ.String() + " from text (only the JSON format reads ROW columns, from nested objects)"
	case catalog.KindString:
		s.ref = false
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
	s.ref = false
	s.sOff, s.sN = off, len(r.scratch)-off
}

// commit appends the slots to the builders.
func (r *rowDecoder) commit() {
	r.rows++
	if r.batch != nil {
		r.batch.rows++
	}
	for i := range r.cols {
		c := &r.cols[i]
		s := &r.slots[i]
		if c.sw != nil {
			if s.null {
				c.sw.appendNull()
				continue
			}
			c.strBytes += int64(s.sN)
			if s.ref {
				c.sw.append(r.line[s.sOff : s.sOff+s.sN])
			} else {
				c.sw.append(r.scratch[s.sOff : s.sOff+s.sN])
			}
			continue
		}
		if s.null {
			c.b.AppendNull()
			continue
		}
		switch c.kind {
		case catalog.KindBoolean:
			c.bo.Append(s.b)
		case catalog.KindTinyInt:
			c.i8.Append(int8(s.i))
		case catalog.KindSmallInt:
			c.i16.Append(int16(s.i))
		case catalog.KindInt:
			c.i32.Append(int32(s.i))
		case catalog.KindBigInt:
			c.i64.Append(s.i)
		case catalog.KindFloat:
			c.f32.Append(float32(s.f))
		case catalog.KindDouble:
			c.f64.Append(s.f)
		case catalog.KindDecimal:
			c.dec.Append(s.d)
		case catalog.KindTimestamp, catalog.KindTimestampLTZ:
			c.ts.Append(arrow.Timestamp(s.i))
		case catalog.KindDate:
			c.date.Append(arrow.Date32(s.i))
		case catalog.KindTime:
			c.tm.Append(arrow.Time32(s.i))
		case catalog.KindRow:
			c.st.Append(true)
			c.child.commit()
		case catalog.KindString:
			c.strBytes += int64(s.sN)
			if s.ref {
				c.str.BinaryBuilder.Append(r.line[s.sOff : s.sOff+s.sN])
			} else {
				c.str.BinaryBuilder.Append(r.scratch[s.sOff : s.sOff+s.sN])
			}
		}
	}
}

// Reserve makes room in the builders for rows more records (STRING data
// by the average size of the records decoded so far): called at the start
// of each batch, it keeps the builders from growing their buffers record
// by record.
func (d *CSVDecoder) Reserve(rows int) { d.row.reserve(rows) }

// Reserve is CSVDecoder.Reserve.
func (d *JSONDecoder) Reserve(rows int) { d.row.reserve(rows) }
