package format

import (
	"errors"
	"strings"

	"fmt"
	"github.com/streamsql/streamsql/catalog"
	"math"
	"math/big"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow/decimal128"
)

// This file holds the one set of value parsers. Two callers apply them with
// different rules, both Flink's:
//   - the CSV and JSON decoders (strict: BOOLEAN is true/false, integers
//     have no fraction, TIMESTAMP has two-digit fields and a time);
//   - CAST(STRING AS T) in exec/expr, through the Cast* functions (lenient:
//     t/yes/1 are TRUE, "12.7" is 12, TIMESTAMP may be a date alone).
// Both ignore surrounding blanks and control characters (bytes <= ' ', as
// Java's String.trim).

// text is what the parsers read: a decoder's field bytes or a STRING
// column's value, never copied.
type text interface{ ~string | ~[]byte }

// status is a parse outcome; callers turn it into their own message.
type status uint8

const (
	stOK    status = iota
	stEmpty        // nothing but blanks
	stBad          // malformed
	stRange        // well-formed but too large for the type
)

func trimSpace[T text](b T) T {
	for len(b) > 0 && b[0] <= ' ' {
		b = b[1:]
	}
	for len(b) > 0 && b[len(b)-1] <= ' ' {
		b = b[:len(b)-1]
	}
	return b
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func allDigits[T text](b T) bool {
	for i := 0; i < len(b); i++ {
		if !isDigit(b[i]) {
			return false
		}
	}
	return true
}

// parseInt parses [+-]digits within [lo, hi] (Java's Long.parseLong after
// trim).
func parseInt[T text](b T, lo, hi int64) (int64, status) {
	b = trimSpace(b)
	if len(b) == 0 {
		return 0, stEmpty
	}
	return parseIntUntrimmed(b, lo, hi)
}

func parseIntUntrimmed[T text](b T, lo, hi int64) (int64, status) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, stBad
	}
	var u uint64
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !isDigit(c) {
			return 0, stBad
		}
		if u > (math.MaxUint64-9)/10 {
			return 0, stRange
		}
		u = u*10 + uint64(c-'0')
	}
	var v int64
	switch {
	case neg && u > 1<<63, !neg && u > math.MaxInt64:
		return 0, stRange
	case neg:
		v = int64(-u)
	default:
		v = int64(u)
	}
	if v < lo || v > hi {
		return 0, stRange
	}
	return v, stOK
}

// parseDouble parses a DOUBLE as Java's Double.parseDouble does: a decimal
// or hexadecimal (0x1.8p1) literal with an optional type suffix (1.5d,
// 2f), NaN, Infinity, with an optional sign. A number beyond the range of
// DOUBLE is ±Infinity and one below it 0, as in Java ('1e999' is
// Infinity). Go-only forms (inf, nan in any case, underscores) are
// rejected.
func parseDouble[T text](b T) (float64, status) {
	b = trimSpace(b)
	if len(b) == 0 {
		return 0, stEmpty
	}
	s := b
	neg := false
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		s = s[1:]
	}
	switch string(s) {
	case "NaN":
		return math.NaN(), stOK
	case "Infinity":
		if neg {
			return math.Inf(-1), stOK
		}
		return math.Inf(1), stOK
	}
	hex := len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')
	if n := len(b); n > 1 {
		// Java's FloatTypeSuffix; in hex digits an f or d is a digit
		// unless it follows the binary exponent
		if lc := b[n-1] | 0x20; (lc == 'f' || lc == 'd') && (!hex || hasByte(s, 'p', 'P')) {
			b, s = b[:n-1], s[:len(s)-1]
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		lc := c | 0x20
		switch {
		case isDigit(c), c == '.', c == '+', c == '-':
		case hex && (i == 1 || lc >= 'a' && lc <= 'f' || lc == 'p'):
		case !hex && lc == 'e':
		default:
			return 0, stBad
		}
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) { // out of range: ±Inf, as Java
		return 0, stBad
	}
	return f, stOK
}

func hasByte[T text](b T, c1, c2 byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] == c1 || b[i] == c2 {
			return true
		}
	}
	return false
}

var pow10u64 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < 20; i++ {
		p[i] = p[i-1] * 10
	}
	return
}()

func pow10Big(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

// parseDecimal parses [+-]digits[.digits][(e|E)[+-]digits] (Java's
// BigDecimal syntax) into an unscaled DECIMAL(prec, scale) value, rounding
// half up (away from zero) to the scale; stRange when it does not fit prec.
func parseDecimal[T text](b T, prec, scale int32) (decimal128.Num, status) {
	b = trimSpace(b)
	if len(b) == 0 {
		return decimal128.Num{}, stEmpty
	}
	p := 0
	neg := false
	if b[0] == '-' || b[0] == '+' {
		neg = b[0] == '-'
		p++
	}
	var mant uint64
	var bigMant *big.Int // once mant would overflow
	nd, frac := 0, 0
	seenDot := false
	for ; p < len(b); p++ {
		c := b[p]
		if c == '.' && !seenDot {
			seenDot = true
			continue
		}
		if !isDigit(c) {
			break
		}
		nd++
		if seenDot {
			frac++
		}
		if bigMant == nil && mant <= (math.MaxUint64-9)/10 {
			mant = mant*10 + uint64(c-'0')
		} else {
			if bigMant == nil {
				bigMant = new(big.Int).SetUint64(mant)
			}
			bigMant.Mul(bigMant, big.NewInt(10))
			bigMant.Add(bigMant, big.NewInt(int64(c-'0')))
		}
	}
	if nd == 0 {
		return decimal128.Num{}, stBad
	}
	exp := 0
	if p < len(b) && (b[p] == 'e' || b[p] == 'E') {
		p++
		eneg := false
		if p < len(b) && (b[p] == '+' || b[p] == '-') {
			eneg = b[p] == '-'
			p++
		}
		start := p
		for ; p < len(b) && isDigit(b[p]); p++ {
			if exp < 1e9 { // beyond that the result is 0 or too large anyway
				exp = exp*10 + int(b[p]-'0')
			}
		}
		if p == start {
			return decimal128.Num{}, stBad
		}
		if eneg {
			exp = -exp
		}
	}
	if p != len(b) {
		return decimal128.Num{}, stBad
	}
	if bigMant == nil && mant == 0 {
		return decimal128.Num{}, stOK
	}
	finish := func(u uint64) (decimal128.Num, status) {
		if prec < 19 && u >= pow10u64[prec] {
			return decimal128.Num{}, stRange
		}
		n := decimal128.FromU64(u)
		if neg {
			n = n.Negate()
		}
		return n, stOK
	}
	shift := int(scale) + exp - frac // unscaled = mantissa * 10^shift
	if bigMant == nil && shift >= 0 && shift < 19 && mant < math.MaxInt64/pow10u64[shift] {
		return finish(mant * pow10u64[shift])
	}
	if bigMant == nil && shift < 0 && -shift < 19 {
		d := pow10u64[-shift]
		q, r := mant/d, mant%d
		if r >= d-r {
			q++
		}
		return finish(q)
	}
	// Slow path: big integers.
	v := bigMant
	if v == nil {
		v = new(big.Int).SetUint64(mant)
	}
	switch {
	case shift > 80: // a non-zero mantissa times 10^81 exceeds any precision
		return decimal128.Num{}, stRange
	case shift >= 0:
		v.Mul(v, pow10Big(shift))
	case -shift > nd: // below 0.1 of the last unit: rounds to 0
		v.SetInt64(0)
	default:
		d := pow10Big(-shift)
		q, r := new(big.Int).QuoRem(v, d, new(big.Int))
		if r.Lsh(r, 1).Cmp(d) >= 0 {
			q.Add(q, big.NewInt(1))
		}
		v = q
	}
	if v.Cmp(pow10Big(int(prec))) >= 0 {
		return decimal128.Num{}, stRange
	}
	if neg {
		v.Neg(v)
	}
	return decimal128.FromBigInt(v), stOK
}

// tsForm selects the timestamp grammar.
type tsForm uint8

const (
	tsSQL  tsForm = iota // yyyy-MM-dd HH:mm[:ss[.f]] (CSV, JSON 'SQL')
	tsISO                // yyyy-MM-ddTHH:mm[:ss[.f]][Z] (JSON 'ISO-8601')
	tsCast               // yyyy-M-d[( |T)H:m[:s[.f]]] (CAST)
	tsZ                  // tsSQL with an optional Z (TIMESTAMP_LTZ in CSV and JSON 'SQL')
)

// scanTimestamp parses a TIMESTAMP(3) text into milliseconds since the epoch
// (wall-clock time, no zone). The fraction has 1 to 9 digits and is
// truncated to milliseconds. stRange: well-formed, but a field is out of
// range (month 13, February 30, hour 24, ...).
func scanTimestamp[T text](b T, form tsForm) (int64, status) {
	ms, _, st := scanTimestampNanos(b, form)
	return ms, st
}

// scanTimestampNanos is scanTimestamp that also returns the nanoseconds
// below the millisecond (0..999999) of a fraction with more than 3 digits.
func scanTimestampNanos[T text](b T, form tsForm) (int64, int32, status) {
	var sub int32
	b = trimSpace(b)
	p := 0
	minDigits := 2
	if form == tsCast {
		minDigits = 1
	}
	num := func(lo, hi int) (int64, bool) {
		start := p
		var v int64
		for p < len(b) && p-start < hi && isDigit(b[p]) {
			v = v*10 + int64(b[p]-'0')
			p++
		}
		return v, p-start >= lo
	}
	sep := func(c byte) bool {
		if p < len(b) && b[p] == c {
			p++
			return true
		}
		return false
	}
	y, ok := num(4, 4)
	if !ok || !sep('-') {
		return 0, 0, stBad
	}
	mo, ok := num(minDigits, 2)
	if !ok || !sep('-') {
		return 0, 0, stBad
	}
	d, ok := num(minDigits, 2)
	if !ok {
		return 0, 0, stBad
	}
	var h, mi, sec, ms int64
	if form != tsCast || p < len(b) {
		switch form {
		case tsSQL, tsZ:
			ok = sep(' ')
		case tsISO:
			ok = sep('T')
		default:
			ok = sep(' ') || sep('T')
		}
		if !ok {
			return 0, 0, stBad
		}
		if h, ok = num(minDigits, 2); !ok || !sep(':') {
			return 0, 0, stBad
		}
		if mi, ok = num(minDigits, 2); !ok {
			return 0, 0, stBad
		}
		if sep(':') {
			if sec, ok = num(minDigits, 2); !ok {
				return 0, 0, stBad
			}
			if sep('.') {
				start := p
				for p < len(b) && isDigit(b[p]) {
					if p-start < 3 {
						ms = ms*10 + int64(b[p]-'0')
					} else if p-start < 9 {
						sub = sub*10 + int32(b[p]-'0')
					}
					p++
				}
				if p == start || p-start > 9 {
					return 0, 0, stBad
				}
				for k := p - start; k < 3; k++ {
					ms *= 10
				}
				for k := max(p-start, 3); k < 9; k++ {
					sub *= 10
				}
			}
		}
		if form == tsISO || form == tsZ {
			sep('Z')
		}
	}
	if p != len(b) {
		return 0, 0, stBad
	}
	if mo < 1 || mo > 12 || d < 1 || d > int64(daysIn(y, int(mo))) || h > 23 || mi > 59 || sec > 59 {
		return 0, 0, stRange
	}
	return daysFromCivil(y, int(mo), int(d))*msPerDay + h*3600000 + mi*60000 + sec*1000 + ms, sub, stOK
}

func daysIn(y int64, m int) int {
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

// ParseTimestamp parses a TIMESTAMP(3) text of the CSV and JSON formats into
// milliseconds since the epoch (wall-clock time, no zone). With iso false the
// form is Flink's SQL one, yyyy-MM-dd HH:mm:ss[.fraction]; with iso true it
// is ISO-8601, yyyy-MM-ddTHH:mm:ss[.fraction][Z]. Seconds may be omitted
// (HH:mm); the fraction has 1 to 9 digits and is truncated to milliseconds.
func ParseTimestamp(s string, iso bool) (int64, error) {
	ms, reason := parseTimestamp(s, iso, false)
	if reason != "" {
		return 0, errors.New(reason)
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
func parseTimestamp[T text](b T, iso, jsonHint bool) (int64, string) {
	form := tsSQL
	if iso {
		form = tsISO
	}
	ms, st := scanTimestamp(b, form)
	switch st {
	case stOK:
		return ms, ""
	case stRange:
		return 0, "invalid TIMESTAMP(3): date or time field out of range"
	}
	r := "invalid TIMESTAMP(3): " + tsFormatHint(iso)
	if b = trimSpace(b); jsonHint && len(b) > 10 {
		if !iso && b[10] == 'T' {
			r += "; for ISO-8601 text set 'json.timestamp-format.standard' = 'ISO-8601'"
		} else if iso && b[10] == ' ' {
			r += "; for 'yyyy-MM-dd HH:mm:ss' text set 'json.timestamp-format.standard' = 'SQL'"
		}
	}
	return 0, r
}

// parseTimestampNanos is parseTimestamp for TIMESTAMP(p) t, returning the
// nanoseconds below the millisecond too.
func parseTimestampNanos[T text](b T, iso, jsonHint bool, t catalog.Type) (int64, int32, string) {
	form := tsSQL
	if iso {
		form = tsISO
	}
	ms, sub, st := scanTimestampNanos(b, form)
	if st == stOK {
		return ms, sub, ""
	}
	_, reason := parseTimestamp(b, iso, jsonHint)
	if t.Precision != 3 {
		reason = strings.Replace(reason, "TIMESTAMP(3)", t.String(), 1)
	}
	return 0, 0, reason
}

// Reasons of the CSV and JSON decoders.

func intReason(st status, typ string) string {
	switch st {
	case stEmpty:
		return "invalid " + typ + ": empty value"
	case stBad:
		return "invalid " + typ
	case stRange:
		return typ + " out of range"
	}
	return ""
}

func doubleReason(st status) string {
	switch st {
	case stEmpty:
		return "invalid DOUBLE: empty value"
	case stBad, stRange:
		return "invalid DOUBLE"
	}
	return ""
}

func decimalReason(st status, prec, scale int32) string {
	switch st {
	case stEmpty:
		return fmt.Sprintf("invalid DECIMAL(%d, %d): empty value", prec, scale)
	case stBad:
		return fmt.Sprintf("invalid DECIMAL(%d, %d)", prec, scale)
	case stRange:
		return fmt.Sprintf("value out of range for DECIMAL(%d, %d)", prec, scale)
	}
	return ""
}

// parseBool accepts true/false, case-insensitive (the formats' rule).
func parseBool[T text](b T) (bool, string) {
	b = trimSpace(b)
	if len(b) == 4 && (b[0]|0x20) == 't' && (b[1]|0x20) == 'r' && (b[2]|0x20) == 'u' && (b[3]|0x20) == 'e' {
		return true, ""
	}
	if len(b) == 5 && (b[0]|0x20) == 'f' && (b[1]|0x20) == 'a' && (b[2]|0x20) == 'l' && (b[3]|0x20) == 's' && (b[4]|0x20) == 'e' {
		return false, ""
	}
	return false, "invalid BOOLEAN (expected true or false)"
}

// scanDate parses yyyy-MM-dd (strict: two-digit fields; lenient for
// CAST: one-digit month and day) into days since the epoch.
func scanDate[T text](b T, lenient bool) (int64, status) {
	b = trimSpace(b)
	p := 0
	minDigits := 2
	if lenient {
		minDigits = 1
	}
	num := func(lo, hi int) (int64, bool) {
		start := p
		var v int64
		for p < len(b) && p-start < hi && isDigit(b[p]) {
			v = v*10 + int64(b[p]-'0')
			p++
		}
		return v, p-start >= lo
	}
	y, ok := num(4, 4)
	if !ok || p >= len(b) || b[p] != '-' {
		return 0, stBad
	}
	p++
	mo, ok := num(minDigits, 2)
	if !ok || p >= len(b) || b[p] != '-' {
		return 0, stBad
	}
	p++
	d, ok := num(minDigits, 2)
	if !ok || p != len(b) {
		return 0, stBad
	}
	if mo < 1 || mo > 12 || d < 1 || d > int64(daysIn(y, int(mo))) {
		return 0, stRange
	}
	return daysFromCivil(y, int(mo), int(d)), stOK
}

// scanTime parses HH:mm[:ss[.fraction]] into milliseconds of the day
// (fraction digits beyond milliseconds are dropped).
func scanTime[T text](b T, lenient bool) (int64, status) {
	b = trimSpace(b)
	p := 0
	minDigits := 2
	if lenient {
		minDigits = 1
	}
	num := func(lo, hi int) (int64, bool) {
		start := p
		var v int64
		for p < len(b) && p-start < hi && isDigit(b[p]) {
			v = v*10 + int64(b[p]-'0')
			p++
		}
		return v, p-start >= lo
	}
	h, ok := num(minDigits, 2)
	if !ok || p >= len(b) || b[p] != ':' {
		return 0, stBad
	}
	p++
	mi, ok := num(minDigits, 2)
	if !ok {
		return 0, stBad
	}
	var sec, ms int64
	if p < len(b) && b[p] == ':' {
		p++
		if sec, ok = num(minDigits, 2); !ok {
			return 0, stBad
		}
		if p < len(b) && b[p] == '.' {
			p++
			start := p
			for p < len(b) && isDigit(b[p]) {
				if p-start < 3 {
					ms = ms*10 + int64(b[p]-'0')
				}
				p++
			}
			if p == start || p-start > 9 {
				return 0, stBad
			}
			for k := p - start; k < 3; k++ {
				ms *= 10
			}
		}
	}
	if p != len(b) {
		return 0, stBad
	}
	if h > 23 || mi > 59 || sec > 59 {
		return 0, stRange
	}
	return h*3600000 + mi*60000 + sec*1000 + ms, stOK
}

// ParseDate parses a DATE text (yyyy-MM-dd) into days since the epoch.
func ParseDate(s string) (int64, error) {
	d, st := scanDate(s, false)
	if st != stOK {
		return 0, errors.New("invalid DATE: expected 'yyyy-MM-dd'")
	}
	return d, nil
}

// UnitsOf converts a timestamp's milliseconds and sub-millisecond nanos to
// its storage units (unitsPerMilli 1, 1000 or 1000000).
func UnitsOf(ms int64, sub int32, unitsPerMilli int64) int64 {
	return ms*unitsPerMilli + int64(sub)/(1e6/unitsPerMilli)
}
