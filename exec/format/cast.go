package format

import (
	"errors"
	"math"
	"strings"

	"github.com/apache/arrow/go/v17/arrow/decimal128"
)

// The text rules of CAST(STRING AS T), Flink's (see docs/sql.md). exec/expr's
// CAST kernels call these per value; errors are short causes that the caller
// wraps ("cannot cast 'x' to INT: not an integer").

var (
	errCastBool      = errors.New("not a boolean")
	errCastInt       = errors.New("not an integer")
	errCastIntRange  = errors.New("out of range")
	errCastDouble    = errors.New("not a number")
	errCastDecimal   = errors.New("not a decimal number")
	errCastTimestamp = errors.New("not a timestamp (expected yyyy-MM-dd HH:mm:ss.SSS)")
)

// ErrDecimalOverflow is CastDecimal's error for a well-formed number too
// large for the precision (CAST gives NULL for it, as Flink does).
var ErrDecimalOverflow = errors.New("decimal overflow")

// CastBool parses true, t, yes, y, 1 and false, f, no, n, 0 in any case.
func CastBool(s string) (bool, error) {
	t := trimSpace(s)
	if len(t) > 5 {
		return false, errCastBool
	}
	var low [5]byte
	for i := 0; i < len(t); i++ {
		low[i] = t[i]
		if 'A' <= t[i] && t[i] <= 'Z' {
			low[i] += 'a' - 'A'
		}
	}
	switch string(low[:len(t)]) {
	case "true", "t", "yes", "y", "1":
		return true, nil
	case "false", "f", "no", "n", "0":
		return false, nil
	}
	return false, errCastBool
}

// CastInt parses an integer of bitSize 8 (TINYINT), 16, 32 (INT) or 64 (BIGINT); a fractional
// part is dropped ("12.7" is 12, "-.5" is 0), as in Flink.
func CastInt(s string, bitSize int) (int64, error) {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	switch bitSize {
	case 32:
		lo, hi = math.MinInt32, math.MaxInt32
	case 16:
		lo, hi = math.MinInt16, math.MaxInt16
	case 8:
		lo, hi = math.MinInt8, math.MaxInt8
	}
	v, st := parseInt(s, lo, hi)
	if st == stBad {
		t := trimSpace(s)
		if dot := strings.IndexByte(t, '.'); dot >= 0 && allDigits(t[dot+1:]) {
			switch ip := t[:dot]; ip {
			case "", "-", "+":
				if dot+1 < len(t) {
					return 0, nil
				}
			default:
				v, st = parseIntUntrimmed(ip, lo, hi)
			}
		}
	}
	switch st {
	case stOK:
		return v, nil
	case stRange:
		return 0, errCastIntRange
	}
	return 0, errCastInt
}

// CastDouble parses a DOUBLE as Java's Double.parseDouble does (decimal or
// hexadecimal literals, NaN, Infinity).
func CastDouble(s string) (float64, error) {
	f, st := parseDouble(s)
	if st != stOK {
		return 0, errCastDouble
	}
	return f, nil
}

// CastDecimal parses a number with an optional exponent into an unscaled
// DECIMAL(prec, scale) value, rounded half up; ErrDecimalOverflow when it
// does not fit the precision.
func CastDecimal(s string, prec, scale int32) (decimal128.Num, error) {
	n, st := parseDecimal(s, prec, scale)
	switch st {
	case stOK:
		return n, nil
	case stRange:
		return n, ErrDecimalOverflow
	}
	return n, errCastDecimal
}

// CastTimestamp parses yyyy-MM-dd[( |T)HH:mm[:ss[.fraction]]] into epoch
// milliseconds; month, day, hour, minute and second may have one digit and
// fraction digits beyond milliseconds are dropped.
func CastTimestamp(s string) (int64, error) {
	ms, st := scanTimestamp(s, tsCast)
	if st != stOK {
		return 0, errCastTimestamp
	}
	return ms, nil
}

var (
	errCastDate = errors.New("not a DATE (expected yyyy-MM-dd)")
	errCastTime = errors.New("not a TIME (expected HH:mm:ss[.SSS])")
)

// CastTimestampNanos is CastTimestamp that also returns the nanoseconds
// below the millisecond (for TIMESTAMP(p) with p > 3).
func CastTimestampNanos(s string) (int64, int32, error) {
	ms, sub, st := scanTimestampNanos(s, tsCast)
	if st != stOK {
		return 0, 0, errCastTimestamp
	}
	return ms, sub, nil
}

// CastDate parses yyyy-M-d (Flink's lenient CAST to DATE) into days since
// the epoch.
func CastDate(s string) (int64, error) {
	d, st := scanDate(s, true)
	if st != stOK {
		return 0, errCastDate
	}
	return d, nil
}

// CastTime parses H:m[:s[.fraction]] into milliseconds of the day.
func CastTime(s string) (int64, error) {
	ms, st := scanTime(s, true)
	if st != stOK {
		return 0, errCastTime
	}
	return ms, nil
}
