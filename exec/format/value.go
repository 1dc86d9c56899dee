package format

import (
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
)

// Style selects how Column.Append renders values that have several text forms
// (only TIMESTAMP differs between styles today).
type Style uint8

const (
	// StyleSQL is the SQL client's form: TIMESTAMP(3) as yyyy-MM-dd HH:mm:ss.SSS.
	StyleSQL Style = iota
	// StylePrint is Java's toString, as Flink's print connector shows rows:
	// TIMESTAMP as LocalDateTime.toString (2024-01-01T12:00, 2024-01-01T12:00:01.500).
	StylePrint
	// StyleFormatSQL is the CSV/JSON 'SQL' timestamp form: yyyy-MM-dd HH:mm:ss
	// followed by the fraction of a second without trailing zeros, if any.
	StyleFormatSQL
	// StyleFormatISO is the JSON 'ISO-8601' form: yyyy-MM-ddTHH:mm:ss[.fraction].
	StyleFormatISO
)

type colKind uint8

const (
	ckNull colKind = iota
	ckBool
	ckInt32
	ckInt64
	ckFloat64
	ckDecimal
	ckString
	ckTimestamp // TIMESTAMP(p): i64 in units, unitsPerSec
	ckInt8
	ckInt16
	ckFloat32
	ckDate
	ckTime
	ckInstant // TIMESTAMP_LTZ(p)
	ckDuration
	ckMonths
	ckStruct
	ckUnknown colKind = 255
)

// Column is a typed read-only view of one Arrow array, built once per batch so
// that per-value access is a slice index, not an interface call.
type Column struct {
	kind  colKind
	valid []byte // validity bitmap; nil when the array has no nulls
	off   int    // array offset into valid
	i8    []int8
	i16   []int16
	i32   []int32 // INT, DATE (days), TIME (ms), INTERVAL YEAR TO MONTH (months)
	i64   []int64 // BIGINT, TIMESTAMP and TIMESTAMP_LTZ (units), INTERVAL DAY TO SECOND (ms)
	f32   []float32
	f64   []float64
	dec   []decimal128.Num
	scale int32
	bools *array.Boolean
	str   *array.String
	// TIMESTAMP, TIMESTAMP_LTZ and TIME: units per second and the SQL
	// precision (fraction digits shown by StyleSQL).
	unitsPerSec int64
	prec        int
	loc         *time.Location // TIMESTAMP_LTZ: the session time zone
	fields      []Column       // ROW
	names       []string
}

// NewColumn returns a view of arr. arr must be one of streamsql's storage
// types (see catalog.Type.ArrowType); other types render as "?". TIMESTAMP
// values show the fraction digits of their Arrow unit (3, 6 or 9; see
// SetPrecision) and TIMESTAMP_LTZ values are shown in UTC (see SetZone).
func NewColumn(arr arrow.Array) Column {
	c := Column{off: arr.Data().Offset()}
	if arr.NullN() > 0 {
		c.valid = arr.NullBitmapBytes()
	}
	switch a := arr.(type) {
	case *array.Boolean:
		c.kind, c.bools = ckBool, a
	case *array.Int8:
		c.kind, c.i8 = ckInt8, a.Int8Values()
	case *array.Int16:
		c.kind, c.i16 = ckInt16, a.Int16Values()
	case *array.Int32:
		c.kind, c.i32 = ckInt32, a.Int32Values()
	case *array.Int64:
		c.kind, c.i64 = ckInt64, a.Int64Values()
	case *array.Float32:
		c.kind, c.f32 = ckFloat32, a.Float32Values()
	case *array.Float64:
		c.kind, c.f64 = ckFloat64, a.Float64Values()
	case *array.Decimal128:
		c.kind, c.dec = ckDecimal, a.Values()
		c.scale = a.DataType().(*arrow.Decimal128Type).Scale
	case *array.String:
		c.kind, c.str = ckString, a
	case *array.Date32:
		c.kind = ckDate
		c.i32 = arrow.Int32Traits.CastFromBytes(arrow.Date32Traits.CastToBytes(a.Date32Values()))
	case *array.Time32:
		c.kind, c.prec = ckTime, 0
		c.i32 = arrow.Int32Traits.CastFromBytes(arrow.Time32Traits.CastToBytes(a.Time32Values()))
	case *array.Timestamp:
		vals := a.TimestampValues()
		tt := a.DataType().(*arrow.TimestampType)
		c.kind = ckTimestamp
		if tt.TimeZone != "" {
			c.kind, c.loc = ckInstant, time.UTC
		}
		c.i64 = arrow.Int64Traits.CastFromBytes(arrow.TimestampTraits.CastToBytes(vals))
		switch tt.Unit {
		case arrow.Second:
			c.unitsPerSec, c.prec = 1, 0
		case arrow.Millisecond:
			c.unitsPerSec, c.prec = 1e3, 3
		case arrow.Microsecond:
			c.unitsPerSec, c.prec = 1e6, 6
		default:
			c.unitsPerSec, c.prec = 1e9, 9
		}
	case *array.Duration:
		c.kind = ckDuration
		c.i64 = arrow.Int64Traits.CastFromBytes(arrow.DurationTraits.CastToBytes(a.DurationValues()))
	case *array.MonthInterval:
		c.kind = ckMonths
		c.i32 = arrow.Int32Traits.CastFromBytes(arrow.MonthIntervalTraits.CastToBytes(a.MonthIntervalValues()))
	case *array.Struct:
		c.kind = ckStruct
		st := a.DataType().(*arrow.StructType)
		for k := 0; k < a.NumField(); k++ {
			c.fields = append(c.fields, NewColumn(a.Field(k)))
			c.names = append(c.names, st.Field(k).Name)
		}
	case *array.Null:
		c.kind = ckNull
		c.valid = nil
	default:
		c.kind = ckUnknown
	}
	return c
}

// SetPrecision sets the SQL precision of a TIMESTAMP, TIMESTAMP_LTZ or TIME
// column (the fraction digits StyleSQL shows: TIMESTAMP(0) has none).
func (c *Column) SetPrecision(p int) { c.prec = p }

// SetZone sets the zone TIMESTAMP_LTZ values are shown in (the session's
// table.local-time-zone), for this column and the fields of a ROW.
func (c *Column) SetZone(loc *time.Location) {
	if c.kind == ckInstant {
		c.loc = loc
	}
	for k := range c.fields {
		c.fields[k].SetZone(loc)
	}
}

// IsNull reports whether value i is NULL.
func (c *Column) IsNull(i int) bool {
	if c.kind == ckNull {
		return true
	}
	return c.valid != nil && bitutil.BitIsNotSet(c.valid, c.off+i)
}

// Append appends the text of value i (not NULL; check IsNull first) in the
// given style. Strings are appended raw (no quoting).
func (c *Column) Append(dst []byte, i int, style Style) []byte {
	switch c.kind {
	case ckBool:
		if c.bools.Value(i) {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case ckInt8:
		return strconv.AppendInt(dst, int64(c.i8[i]), 10)
	case ckInt16:
		return strconv.AppendInt(dst, int64(c.i16[i]), 10)
	case ckInt32:
		return strconv.AppendInt(dst, int64(c.i32[i]), 10)
	case ckInt64:
		return strconv.AppendInt(dst, c.i64[i], 10)
	case ckFloat32:
		return AppendJavaFloat(dst, c.f32[i])
	case ckFloat64:
		return AppendJavaDouble(dst, c.f64[i])
	case ckDecimal:
		return AppendDecimal(dst, c.dec[i], c.scale)
	case ckString:
		return append(dst, c.str.Value(i)...)
	case ckDate:
		return AppendDate(dst, int64(c.i32[i]))
	case ckTime:
		return AppendTime(dst, c.i32[i], c.prec, style)
	case ckTimestamp:
		sec, ns := SplitUnits(c.i64[i], c.unitsPerSec)
		return AppendDateTime(dst, sec, ns, c.prec, style)
	case ckInstant:
		sec, ns := SplitUnits(c.i64[i], c.unitsPerSec)
		return AppendInstant(dst, sec, ns, c.prec, c.loc, style)
	case ckDuration:
		return AppendIntervalDT(dst, c.i64[i])
	case ckMonths:
		return AppendIntervalYM(dst, int64(c.i32[i]))
	case ckStruct:
		// Flink's SQL client shows a ROW as (f0, f1, ...); the print
		// connector as Row.toString: +I[f0, f1, ...].
		if style == StylePrint {
			dst = append(dst, "+I["...)
		} else {
			dst = append(dst, '(')
		}
		for k := range c.fields {
			if k > 0 {
				dst = append(dst, ", "...)
			}
			f := &c.fields[k]
			if f.IsNull(i) {
				if style == StylePrint {
					dst = append(dst, "null"...)
				} else {
					dst = append(dst, "NULL"...)
				}
				continue
			}
			dst = f.Append(dst, i, style)
		}
		if style == StylePrint {
			return append(dst, ']')
		}
		return append(dst, ')')
	case ckNull:
		return append(dst, "NULL"...)
	}
	return append(dst, '?')
}

// IsNull reports whether value i of arr is NULL.
func IsNull(arr arrow.Array, i int) bool { return arr.IsNull(i) }

// FormatValue returns Flink's SQL string form of value i of arr (the caller
// decides how to show NULL; see IsNull): BOOLEAN true/false, integers,
// DOUBLE as Java's Double.toString, DECIMAL with exactly its scale, STRING as
// is, TIMESTAMP(3) as yyyy-MM-dd HH:mm:ss.SSS. For display and tests; hot
// paths build a Column once per batch instead.
func FormatValue(arr arrow.Array, i int) string {
	c := NewColumn(arr)
	if c.IsNull(i) {
		return "NULL"
	}
	return string(c.Append(nil, i, StyleSQL))
}

// AppendJavaFloat appends f as Java's Float.toString prints it (the
// shortest digits that round-trip as a float32).
func AppendJavaFloat(dst []byte, f float32) []byte { return appendJava(dst, float64(f), 32) }

// AppendJavaDouble appends f as Java's Double.toString prints it: "1.0",
// "0.1", "123.456", "1.0E10", "1.234E-5", "NaN", "Infinity", "-0.0". Digits
// are the shortest that round-trip (as Java 19+ prints them).
func AppendJavaDouble(dst []byte, f float64) []byte { return appendJava(dst, f, 64) }

func appendJava(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, bits) // -d.ddde±XX
	neg := e[0] == '-'
	if neg {
		e = e[1:]
		dst = append(dst, '-')
	}
	// Split digits and exponent.
	var digits [24]byte
	nd := 0
	k := 0
	for ; k < len(e) && e[k] != 'e'; k++ {
		if e[k] != '.' {
			digits[nd] = e[k]
			nd++
		}
	}
	exp := 0
	esign := 1
	k++ // skip 'e'
	if e[k] == '-' {
		esign = -1
	}
	for k++; k < len(e); k++ {
		exp = exp*10 + int(e[k]-'0')
	}
	exp *= esign
	abs := math.Abs(f)
	if abs >= 1e-3 && abs < 1e7 {
		if exp >= 0 {
			// integer part: digits[0..exp]
			for j := 0; j <= exp; j++ {
				if j < nd {
					dst = append(dst, digits[j])
				} else {
					dst = append(dst, '0')
				}
			}
			dst = append(dst, '.')
			if exp+1 >= nd {
				return append(dst, '0')
			}
			return append(dst, digits[exp+1:nd]...)
		}
		dst = append(dst, '0', '.')
		for j := 0; j < -exp-1; j++ {
			dst = append(dst, '0')
		}
		return append(dst, digits[:nd]...)
	}
	dst = append(dst, digits[0], '.')
	if nd == 1 {
		dst = append(dst, '0')
	} else {
		dst = append(dst, digits[1:nd]...)
	}
	dst = append(dst, 'E')
	return strconv.AppendInt(dst, int64(exp), 10)
}

// AppendDecimal appends the unscaled value n with exactly scale digits after
// the point ("1.50", "-0.05", "12").
func AppendDecimal(dst []byte, n decimal128.Num, scale int32) []byte {
	var digits []byte
	var buf [48]byte
	neg := n.Sign() < 0
	if neg {
		n = n.Negate()
	}
	if n.HighBits() == 0 {
		digits = strconv.AppendUint(buf[:0], n.LowBits(), 10)
	} else {
		digits = n.BigInt().Append(buf[:0], 10)
	}
	if neg {
		dst = append(dst, '-')
	}
	s := int(scale)
	if s <= 0 {
		return append(dst, digits...)
	}
	if len(digits) <= s {
		dst = append(dst, '0', '.')
		for j := len(digits); j < s; j++ {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	dst = append(dst, digits[:len(digits)-s]...)
	dst = append(dst, '.')
	return append(dst, digits[len(digits)-s:]...)
}

// civil converts days since 1970-01-01 to a proleptic Gregorian date.
func civil(days int64) (y int64, m, d int) {
	z := days + 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era = (z - 146096) / 146097
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return
}

// daysFromCivil is the inverse of civil.
func daysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mm := int64(m)
	if m > 2 {
		mm -= 3
	} else {
		mm += 9
	}
	doy := (153*mm+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

const msPerDay = 86400000

func append2(dst []byte, v int) []byte { return append(dst, byte('0'+v/10), byte('0'+v%10)) }

// AppendTimestamp appends ms (milliseconds since the epoch, wall-clock time
// without a zone) in the given style, as a TIMESTAMP(3).
func AppendTimestamp(dst []byte, ms int64, style Style) []byte {
	return AppendDateTime(dst, floorDiv(ms, 1000), int32(floorMod(ms, 1000))*1e6, 3, style)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// SplitUnits splits a TIMESTAMP value stored in units (unitsPerSec: 1e3,
// 1e6 or 1e9 per second) into seconds since the epoch and nanoseconds.
func SplitUnits(v, unitsPerSec int64) (sec int64, nanos int32) {
	return floorDiv(v, unitsPerSec), int32(floorMod(v, unitsPerSec) * (1e9 / unitsPerSec))
}

// AppendDate appends days since the epoch as yyyy-MM-dd.
func AppendDate(dst []byte, days int64) []byte {
	y, mo, d := civil(days)
	if y < 0 { // outside DATE's range; java.time's form: -0001
		dst = append(dst, '-')
		y = -y
	}
	if y <= 9999 {
		dst = append(dst, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10))
	} else {
		dst = strconv.AppendInt(dst, y, 10)
	}
	dst = append(dst, '-')
	dst = append2(dst, mo)
	dst = append(dst, '-')
	return append2(dst, d)
}

// appendFraction appends the first digits of a nanosecond fraction.
func appendFraction(dst []byte, nanos int32, digits int) []byte {
	div := int32(1e8)
	for k := 0; k < digits; k++ {
		dst = append(dst, byte('0'+nanos/div%10))
		div /= 10
	}
	return dst
}

// appendClock appends HH:mm[:ss[.fraction]] of a time of day in the given
// style. prec is the SQL precision (fraction digits of StyleSQL).
func appendClock(dst []byte, secOfDay int64, nanos int32, prec int, style Style) []byte {
	h, mi, s := int(secOfDay/3600), int(secOfDay/60%60), int(secOfDay%60)
	dst = append2(dst, h)
	dst = append(dst, ':')
	dst = append2(dst, mi)
	switch style {
	case StyleSQL:
		dst = append(dst, ':')
		dst = append2(dst, s)
		if prec > 0 {
			dst = append(dst, '.')
			dst = appendFraction(dst, nanos, prec)
		}
	case StylePrint:
		// java.time's toString: seconds only when not zero, the fraction in
		// groups of three digits.
		if s != 0 || nanos != 0 {
			dst = append(dst, ':')
			dst = append2(dst, s)
		}
		if nanos != 0 {
			dst = append(dst, '.')
			switch {
			case nanos%1e6 == 0:
				dst = appendFraction(dst, nanos, 3)
			case nanos%1e3 == 0:
				dst = appendFraction(dst, nanos, 6)
			default:
				dst = appendFraction(dst, nanos, 9)
			}
		}
	default:
		dst = append(dst, ':')
		dst = append2(dst, s)
		if nanos != 0 {
			n := 9
			for v := nanos; v%10 == 0; v /= 10 {
				n--
			}
			dst = append(dst, '.')
			dst = appendFraction(dst, nanos, n)
		}
	}
	return dst
}

// AppendDateTime appends a wall-clock date-time (sec since the epoch plus
// nanos) in the given style; prec is the fraction digits of StyleSQL
// (TIMESTAMP(p) prints p digits in the SQL client, as Flink does).
func AppendDateTime(dst []byte, sec int64, nanos int32, prec int, style Style) []byte {
	days := floorDiv(sec, 86400)
	dst = AppendDate(dst, days)
	if style == StylePrint || style == StyleFormatISO {
		dst = append(dst, 'T')
	} else {
		dst = append(dst, ' ')
	}
	return appendClock(dst, sec-days*86400, nanos, prec, style)
}

// AppendTime appends a TIME value (milliseconds of the day).
func AppendTime(dst []byte, ms int32, prec int, style Style) []byte {
	return appendClock(dst, int64(ms/1000), (ms%1000)*1e6, min(prec, 3), style)
}

// AppendInstant appends an instant (TIMESTAMP_LTZ) in the given style:
// StylePrint as java.time.Instant.toString (UTC, with a Z), the CSV and
// JSON styles in UTC followed by Z, StyleSQL as the wall-clock time in loc
// (the session time zone).
func AppendInstant(dst []byte, sec int64, nanos int32, prec int, loc *time.Location, style Style) []byte {
	if style == StylePrint {
		dst = AppendDateTime(dst, sec, nanos, prec, StylePrint)
		// Instant.toString always shows seconds.
		if nanos == 0 && sec%60 == 0 {
			dst = append(dst, ':', '0', '0')
		}
		return append(dst, 'Z')
	}
	if style == StyleFormatSQL || style == StyleFormatISO {
		// the CSV and JSON formats write instants in UTC with a Z (Flink's
		// SQL and ISO-8601 forms of TIMESTAMP_LTZ)
		return append(AppendDateTime(dst, sec, nanos, prec, style), 'Z')
	}
	return AppendDateTime(dst, sec+ZoneOffset(sec, loc), nanos, prec, style)
}

// ZoneOffset returns loc's offset from UTC in seconds at the instant sec.
func ZoneOffset(sec int64, loc *time.Location) int64 {
	if loc == nil || loc == time.UTC {
		return 0
	}
	_, off := time.Unix(sec, 0).In(loc).Zone()
	return int64(off)
}

// AppendIntervalDT appends an INTERVAL DAY TO SECOND (milliseconds) as
// Flink prints it: +d hh:mm:ss.SSS.
func AppendIntervalDT(dst []byte, ms int64) []byte {
	if ms < 0 {
		dst = append(dst, '-')
		ms = -ms
	} else {
		dst = append(dst, '+')
	}
	dst = strconv.AppendInt(dst, ms/msPerDay, 10)
	dst = append(dst, ' ')
	rem := ms % msPerDay
	return appendClock(dst, rem/1000, int32(rem%1000)*1e6, 3, StyleSQL)
}

// AppendIntervalYM appends an INTERVAL YEAR TO MONTH as Flink prints it: +y-mm.
func AppendIntervalYM(dst []byte, months int64) []byte {
	if months < 0 {
		dst = append(dst, '-')
		months = -months
	} else {
		dst = append(dst, '+')
	}
	dst = strconv.AppendInt(dst, months/12, 10)
	dst = append(dst, '-')
	return append2(dst, int(months%12))
}
