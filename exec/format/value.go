package format

import (
	"math"
	"strconv"

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
	ckTimestamp
)

// Column is a typed read-only view of one Arrow array, built once per batch so
// that per-value access is a slice index, not an interface call.
type Column struct {
	kind  colKind
	valid []byte // validity bitmap; nil when the array has no nulls
	off   int    // array offset into valid
	i32   []int32
	i64   []int64 // BIGINT and TIMESTAMP (ms)
	f64   []float64
	dec   []decimal128.Num
	scale int32
	bools *array.Boolean
	str   *array.String
}

// NewColumn returns a view of arr. arr must be one of streamsql's storage
// types (see catalog.Type.ArrowType); other types render as "?".
func NewColumn(arr arrow.Array) Column {
	c := Column{off: arr.Data().Offset()}
	if arr.NullN() > 0 {
		c.valid = arr.NullBitmapBytes()
	}
	switch a := arr.(type) {
	case *array.Boolean:
		c.kind, c.bools = ckBool, a
	case *array.Int32:
		c.kind, c.i32 = ckInt32, a.Int32Values()
	case *array.Int64:
		c.kind, c.i64 = ckInt64, a.Int64Values()
	case *array.Float64:
		c.kind, c.f64 = ckFloat64, a.Float64Values()
	case *array.Decimal128:
		c.kind, c.dec = ckDecimal, a.Values()
		c.scale = a.DataType().(*arrow.Decimal128Type).Scale
	case *array.String:
		c.kind, c.str = ckString, a
	case *array.Timestamp:
		vals := a.TimestampValues()
		c.kind = ckTimestamp
		c.i64 = arrow.Int64Traits.CastFromBytes(arrow.TimestampTraits.CastToBytes(vals))
	case *array.Null:
		c.kind = ckNull
		c.valid = nil
	default:
		c.kind = 255
	}
	return c
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
	case ckInt32:
		return strconv.AppendInt(dst, int64(c.i32[i]), 10)
	case ckInt64:
		return strconv.AppendInt(dst, c.i64[i], 10)
	case ckFloat64:
		return AppendJavaDouble(dst, c.f64[i])
	case ckDecimal:
		return AppendDecimal(dst, c.dec[i], c.scale)
	case ckString:
		return append(dst, c.str.Value(i)...)
	case ckTimestamp:
		return AppendTimestamp(dst, c.i64[i], style)
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

// AppendJavaDouble appends f as Java's Double.toString prints it: "1.0",
// "0.1", "123.456", "1.0E10", "1.234E-5", "NaN", "Infinity", "-0.0". Digits
// are the shortest that round-trip (as Java 19+ prints them).
func AppendJavaDouble(dst []byte, f float64) []byte {
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
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // -d.ddde±XX
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
// without a zone) in the given style.
func AppendTimestamp(dst []byte, ms int64, style Style) []byte {
	days := ms / msPerDay
	rem := ms % msPerDay
	if rem < 0 {
		rem += msPerDay
		days--
	}
	y, mo, d := civil(days)
	if y < 0 { // outside TIMESTAMP's range; java.time's form: -0001
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
	dst = append2(dst, d)
	if style == StylePrint || style == StyleFormatISO {
		dst = append(dst, 'T')
	} else {
		dst = append(dst, ' ')
	}
	h, mi, s, milli := int(rem/3600000), int(rem/60000%60), int(rem/1000%60), int(rem%1000)
	dst = append2(dst, h)
	dst = append(dst, ':')
	dst = append2(dst, mi)
	switch style {
	case StyleSQL:
		dst = append(dst, ':')
		dst = append2(dst, s)
		dst = append(dst, '.', byte('0'+milli/100), byte('0'+milli/10%10), byte('0'+milli%10))
	case StylePrint:
		if s != 0 || milli != 0 {
			dst = append(dst, ':')
			dst = append2(dst, s)
		}
		if milli != 0 {
			dst = append(dst, '.', byte('0'+milli/100), byte('0'+milli/10%10), byte('0'+milli%10))
		}
	default:
		dst = append(dst, ':')
		dst = append2(dst, s)
		if milli != 0 {
			dst = append(dst, '.', byte('0'+milli/100))
			if milli%100 != 0 {
				dst = append(dst, byte('0'+milli/10%10))
				if milli%10 != 0 {
					dst = append(dst, byte('0'+milli%10))
				}
			}
		}
	}
	return dst
}
