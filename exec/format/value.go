package format

import (
	"fmt"
	"math"
	"math/big"
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

func append2(dst []byte, v int) []byte { return append(dst, byte('0'+v/10), byte('0'+v%10)) }

// AppendTimestamp appends ms (milliseconds since the epoch, wall-clock time
// without a zone) in the given style.
func AppendTimestamp(dst []byte, ms int64, style Style) []byte {
	days := ms / 86400000
	rem := ms % 86400000
	if rem < 0 {
		rem += 86400000
		days--
	}
	y, mo, d := civil(days)
	if y >= 0 && y <= 9999 {
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

// ParseTimestamp parses a TIMESTAMP(3) text into milliseconds since the epoch
// (wall-clock time, no zone). With iso false the form is Flink's SQL one,
// yyyy-MM-dd HH:mm:ss[.fraction]; with iso true it is ISO-8601,
// yyyy-MM-ddTHH:mm:ss[.fraction][Z]. Seconds may be omitted (HH:mm); the
// fraction has 1 to 9 digits and is truncated to milliseconds.
func ParseTimestamp(s string, iso bool) (int64, error) {
	ms, reason := parseTimestamp([]byte(s), iso, false)
	if reason != "" {
		return 0, fmt.Errorf("%s", reason)
	}
	return ms, nil
}

func tsFormatHint(iso bool) string {
	if iso {
		return "expected 'yyyy-MM-ddTHH:mm:ss[.SSS]' (ISO-8601)"
	}
	return "expected 'yyyy-MM-dd HH:mm:ss[.SSS]'"
}

// parseTimestamp returns ("" on success) a reason on failure; jsonHint adds
// a hint about json.timestamp-format.standard when the other form was given.
func parseTimestamp(b []byte, iso, jsonHint bool) (int64, string) {
	b = trimSpace(b)
	num := func(p, n int) (int, bool) {
		if p+n > len(b) {
			return 0, false
		}
		v := 0
		for _, c := range b[p : p+n] {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	bad := func() (int64, string) {
		r := "invalid TIMESTAMP(3): " + tsFormatHint(iso)
		if jsonHint && len(b) > 10 {
			if !iso && b[10] == 'T' {
				r += "; for ISO-8601 text set 'json.timestamp-format.standard' = 'ISO-8601'"
			} else if iso && b[10] == ' ' {
				r += "; for 'yyyy-MM-dd HH:mm:ss' text set 'json.timestamp-format.standard' = 'SQL'"
			}
		}
		return 0, r
	}
	y, ok1 := num(0, 4)
	mo, ok2 := num(5, 2)
	d, ok3 := num(8, 2)
	if !ok1 || !ok2 || !ok3 || len(b) < 16 || b[4] != '-' || b[7] != '-' {
		return bad()
	}
	sep := byte(' ')
	if iso {
		sep = 'T'
	}
	if b[10] != sep {
		return bad()
	}
	h, ok4 := num(11, 2)
	mi, ok5 := num(14, 2)
	if !ok4 || !ok5 || b[13] != ':' {
		return bad()
	}
	sec, milli := 0, 0
	p := 16
	if p < len(b) && b[p] == ':' {
		var ok bool
		if sec, ok = num(p+1, 2); !ok {
			return bad()
		}
		p += 3
		if p < len(b) && b[p] == '.' {
			p++
			nd := 0
			for p < len(b) && b[p] >= '0' && b[p] <= '9' {
				if nd < 3 {
					milli = milli*10 + int(b[p]-'0')
				}
				nd++
				p++
			}
			if nd == 0 || nd > 9 {
				return bad()
			}
			for ; nd < 3; nd++ {
				milli *= 10
			}
		}
	}
	if iso && p < len(b) && b[p] == 'Z' {
		p++
	}
	if p != len(b) {
		return bad()
	}
	if mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || sec > 59 {
		return 0, "invalid TIMESTAMP(3): date or time field out of range"
	}
	days := daysFromCivil(int64(y), mo, d)
	return days*86400000 + int64(h)*3600000 + int64(mi)*60000 + int64(sec)*1000 + int64(milli), ""
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// parseInt parses a decimal integer within [lo, hi]; reason "" on success.
func parseInt(b []byte, lo, hi int64, typ string) (int64, string) {
	b = trimSpace(b)
	if len(b) == 0 {
		return 0, "invalid " + typ + ": empty value"
	}
	neg := false
	if b[0] == '-' || b[0] == '+' {
		neg = b[0] == '-'
		b = b[1:]
		if len(b) == 0 {
			return 0, "invalid " + typ
		}
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, "invalid " + typ
		}
		if u > (math.MaxUint64-9)/10 {
			return 0, typ + " out of range"
		}
		u = u*10 + uint64(c-'0')
	}
	var v int64
	if neg {
		if u > 1<<63 {
			return 0, typ + " out of range"
		}
		v = int64(-u)
	} else {
		if u > math.MaxInt64 {
			return 0, typ + " out of range"
		}
		v = int64(u)
	}
	if v < lo || v > hi {
		return 0, typ + " out of range"
	}
	return v, ""
}

// parseDouble parses a DOUBLE as Java's Double.parseDouble does (also NaN,
// Infinity).
func parseDouble(b []byte) (float64, string) {
	b = trimSpace(b)
	if len(b) == 0 {
		return 0, "invalid DOUBLE: empty value"
	}
	switch string(b) {
	case "NaN":
		return math.NaN(), ""
	case "Infinity", "+Infinity":
		return math.Inf(1), ""
	case "-Infinity":
		return math.Inf(-1), ""
	}
	for _, c := range b {
		// strconv accepts forms Java rejects (hex floats, "inf", underscores)
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+') {
			return 0, "invalid DOUBLE"
		}
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, "invalid DOUBLE"
	}
	return f, ""
}

var pow10u64 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < 20; i++ {
		p[i] = p[i-1] * 10
	}
	return
}()

// parseDecimal parses a number (plain or with an exponent) into an unscaled
// DECIMAL(prec, scale) value, rounding half up to the scale.
func parseDecimal(b []byte, prec, scale int32) (decimal128.Num, string) {
	b = trimSpace(b)
	typ := fmt.Sprintf("DECIMAL(%d, %d)", prec, scale)
	if len(b) == 0 {
		return decimal128.Num{}, "invalid " + typ + ": empty value"
	}
	p := 0
	neg := false
	if b[0] == '-' || b[0] == '+' {
		neg = b[0] == '-'
		p++
	}
	var mant uint64
	var big10 *big.Int
	nd, frac := 0, 0
	seenDot := false
	for ; p < len(b); p++ {
		c := b[p]
		if c == '.' && !seenDot {
			seenDot = true
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		nd++
		if seenDot {
			frac++
		}
		if big10 == nil && mant <= (math.MaxUint64-9)/10 {
			mant = mant*10 + uint64(c-'0')
		} else {
			if big10 == nil {
				big10 = new(big.Int).SetUint64(mant)
			}
			big10.Mul(big10, big.NewInt(10))
			big10.Add(big10, big.NewInt(int64(c-'0')))
		}
	}
	if nd == 0 {
		return decimal128.Num{}, "invalid " + typ
	}
	exp := 0
	if p < len(b) && (b[p] == 'e' || b[p] == 'E') {
		e, r := parseInt(b[p+1:], -100000, 100000, "exponent")
		if r != "" {
			return decimal128.Num{}, "invalid " + typ
		}
		exp = int(e)
		p = len(b)
	}
	if p != len(b) {
		return decimal128.Num{}, "invalid " + typ
	}
	shift := int(scale) + exp - frac // unscaled = mant * 10^shift
	if big10 == nil && shift >= 0 && shift < 19 && mant < math.MaxInt64/pow10u64[shift] {
		v := mant * pow10u64[shift]
		if prec < 19 && v >= pow10u64[prec] {
			return decimal128.Num{}, "value out of range for " + typ
		}
		n := decimal128.FromU64(v)
		if neg {
			n = n.Negate()
		}
		return n, ""
	}
	if big10 == nil && shift < 0 && -shift < 19 {
		d := pow10u64[-shift]
		q, r := mant/d, mant%d
		if r*2 >= d {
			q++
		}
		if prec < 19 && q >= pow10u64[prec] {
			return decimal128.Num{}, "value out of range for " + typ
		}
		n := decimal128.FromU64(q)
		if neg {
			n = n.Negate()
		}
		return n, ""
	}
	// Slow path: big integers.
	v := big10
	if v == nil {
		v = new(big.Int).SetUint64(mant)
	}
	if shift > 80 {
		return decimal128.Num{}, "value out of range for " + typ
	}
	if shift >= 0 {
		v.Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(shift)), nil))
	} else if -shift > 80 {
		v.SetInt64(0)
	} else {
		d := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-shift)), nil)
		q, r := new(big.Int).QuoRem(v, d, new(big.Int))
		if r.Lsh(r, 1).Cmp(d) >= 0 {
			q.Add(q, big.NewInt(1))
		}
		v = q
	}
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(prec)), nil)
	if v.Cmp(limit) >= 0 {
		return decimal128.Num{}, "value out of range for " + typ
	}
	if neg {
		v.Neg(v)
	}
	return decimal128.FromBigInt(v), ""
}

// parseBool accepts true/false, case-insensitive, surrounding blanks ignored.
func parseBool(b []byte) (bool, string) {
	b = trimSpace(b)
	if len(b) == 4 && (b[0]|0x20) == 't' && (b[1]|0x20) == 'r' && (b[2]|0x20) == 'u' && (b[3]|0x20) == 'e' {
		return true, ""
	}
	if len(b) == 5 && (b[0]|0x20) == 'f' && (b[1]|0x20) == 'a' && (b[2]|0x20) == 'l' && (b[3]|0x20) == 's' && (b[4]|0x20) == 'e' {
		return false, ""
	}
	return false, "invalid BOOLEAN (expected true or false)"
}
