package expr

import (
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/decimal128"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec/format"
)

const msPerDay = 86_400_000

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// pow10 of the precision: the units of a second kept by TIMESTAMP(p).
var pow10i = [...]int64{1, 10, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000}

// truncUnits drops the digits of a TIMESTAMP value (in t's storage units)
// beyond t's precision (TIMESTAMP(0) keeps whole seconds in milliseconds).
func truncUnits(v int64, t catalog.Type) int64 {
	perSec := 1000 * t.UnitsPerMilli()
	keep := pow10i[min(max(t.Precision, 0), 9)]
	if keep >= perSec {
		return v
	}
	step := perSec / keep
	return floorDiv(v, step) * step
}

// truncMillis drops the digits of a TIME (milliseconds) beyond precision p.
func truncMillis(ms int64, p int) int64 {
	if p >= 3 {
		return ms
	}
	step := int64(1000 / pow10i[p])
	return floorDiv(ms, step) * step
}

// zoneOffsetMillis is loc's offset at the UTC instant ms.
func zoneOffsetMillis(ms int64, loc *time.Location) int64 {
	if loc == nil || loc == time.UTC {
		return 0
	}
	_, off := time.UnixMilli(ms).In(loc).Zone()
	return int64(off) * 1000
}

// localToUTCMillis converts a wall-clock time in loc to the instant, as
// java.time resolves it (a gap moves forward, an overlap takes the earlier
// offset).
func localToUTCMillis(local int64, loc *time.Location) int64 {
	if loc == nil || loc == time.UTC {
		return local
	}
	sec := floorDiv(local, 1000)
	ms := floorMod(local, 1000)
	days := floorDiv(sec, 86400)
	rem := sec - days*86400
	y, mo, d := civil(days)
	t := time.Date(int(y), time.Month(mo), d, int(rem/3600), int(rem/60%60), int(rem%60), 0, loc)
	return t.UnixMilli() + ms
}

// civil converts days since 1970-01-01 to a proleptic Gregorian date.
func civil(days int64) (y int64, m, d int) {
	z := days + 719468
	era := floorDiv(z, 146097)
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
	era := floorDiv(y, 400)
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

// ltzLocal converts an instant in units to wall-clock milliseconds in loc.
func ltzLocalMillis(v, upm int64, loc *time.Location) int64 {
	ms := floorDiv(v, upm)
	return ms + zoneOffsetMillis(ms, loc)
}

// compileTimeCast builds the casts between DATE, TIME, TIMESTAMP(p) and
// TIMESTAMP_LTZ(p); ok is false for other pairs.
func compileTimeCast(from, to catalog.Type, arg Evaluator, try bool, loc *time.Location) (Evaluator, bool, error) {
	if !from.IsDatetime() || !to.IsDatetime() {
		return nil, false, nil
	}
	dt := to.ArrowType()
	fu, tu := from.UnitsPerMilli(), to.UnitsPerMilli()
	switch from.Kind {
	case catalog.KindDate:
		switch to.Kind {
		case catalog.KindDate:
			return arg, true, nil
		case catalog.KindTimestamp:
			return &convNode[int32, int64]{arg: arg, dt: dt, f: func(d int32) int64 { return int64(d) * msPerDay * tu }}, true, nil
		case catalog.KindTimestampLTZ:
			return &convNode[int32, int64]{arg: arg, dt: dt, f: func(d int32) int64 {
				return localToUTCMillis(int64(d)*msPerDay, loc) * tu
			}}, true, nil
		}
	case catalog.KindTime:
		switch to.Kind {
		case catalog.KindTime:
			if to.Precision >= from.Precision {
				return arg, true, nil
			}
			p := to.Precision
			return &convNode[int32, int32]{arg: arg, dt: dt, f: func(t int32) int32 { return int32(truncMillis(int64(t), p)) }}, true, nil
		case catalog.KindTimestamp: // on 1970-01-01, as Flink
			return &convNode[int32, int64]{arg: arg, dt: dt, f: func(t int32) int64 { return int64(t) * tu }}, true, nil
		}
	case catalog.KindTimestamp:
		switch to.Kind {
		case catalog.KindDate:
			return &convNode[int64, int32]{arg: arg, dt: dt, f: func(v int64) int32 { return int32(floorDiv(v, msPerDay*fu)) }}, true, nil
		case catalog.KindTime:
			p := to.Precision
			return &convNode[int64, int32]{arg: arg, dt: dt, f: func(v int64) int32 {
				return int32(truncMillis(floorMod(floorDiv(v, fu), msPerDay), p))
			}}, true, nil
		case catalog.KindTimestamp:
			if from.Precision == to.Precision {
				return arg, true, nil
			}
			return &convNode[int64, int64]{arg: arg, dt: dt, f: func(v int64) int64 { return truncUnits(rescale(v, fu, tu), to) }}, true, nil
		case catalog.KindTimestampLTZ:
			return &convNode[int64, int64]{arg: arg, dt: dt, f: func(v int64) int64 {
				ms := floorDiv(v, fu)
				sub := v - ms*fu
				return truncUnits(rescale(localToUTCMillis(ms, loc)*fu+sub, fu, tu), to)
			}}, true, nil
		}
	case catalog.KindTimestampLTZ:
		switch to.Kind {
		case catalog.KindDate:
			return &convNode[int64, int32]{arg: arg, dt: dt, f: func(v int64) int32 {
				return int32(floorDiv(ltzLocalMillis(v, fu, loc), msPerDay))
			}}, true, nil
		case catalog.KindTime:
			p := to.Precision
			return &convNode[int64, int32]{arg: arg, dt: dt, f: func(v int64) int32 {
				return int32(truncMillis(floorMod(ltzLocalMillis(v, fu, loc), msPerDay), p))
			}}, true, nil
		case catalog.KindTimestamp:
			return &convNode[int64, int64]{arg: arg, dt: dt, f: func(v int64) int64 {
				ms := floorDiv(v, fu)
				sub := v - ms*fu
				return truncUnits(rescale((ms+zoneOffsetMillis(ms, loc))*fu+sub, fu, tu), to)
			}}, true, nil
		case catalog.KindTimestampLTZ:
			if from.Precision == to.Precision {
				return arg, true, nil
			}
			return &convNode[int64, int64]{arg: arg, dt: dt, f: func(v int64) int64 { return truncUnits(rescale(v, fu, tu), to) }}, true, nil
		}
	}
	return nil, false, nil
}

// rescale converts a value in units of fu per millisecond to tu per
// millisecond (flooring when the unit grows).
func rescale(v, fu, tu int64) int64 {
	switch {
	case fu == tu:
		return v
	case tu > fu:
		return v * (tu / fu)
	}
	return floorDiv(v, fu/tu)
}

func isNewNumeric(k catalog.Kind) bool {
	return k == catalog.KindTinyInt || k == catalog.KindSmallInt || k == catalog.KindFloat
}

// compileNumCast builds casts from or to TINYINT, SMALLINT and FLOAT, as
// Java's primitive conversions (integers wrap, floating point to integer
// truncates and saturates to INT first for TINYINT and SMALLINT).
func compileNumCast(from, to catalog.Type, arg Evaluator) Evaluator {
	dt := to.ArrowType()
	switch from.Kind {
	case catalog.KindTinyInt:
		return numFromInt[int8](to, arg, dt)
	case catalog.KindSmallInt:
		return numFromInt[int16](to, arg, dt)
	case catalog.KindInt:
		return numFromInt[int32](to, arg, dt)
	case catalog.KindBigInt:
		return numFromInt[int64](to, arg, dt)
	case catalog.KindFloat:
		return numFromFloat[float32](to, arg, dt)
	case catalog.KindDouble:
		return numFromFloat[float64](to, arg, dt)
	case catalog.KindDecimal:
		s := int32(from.Scale)
		switch to.Kind {
		case catalog.KindTinyInt:
			return &convNode[decimal128.Num, int8]{arg: arg, dt: dt, f: func(v decimal128.Num) int8 { return int8(decToInt64(v, s)) }}
		case catalog.KindSmallInt:
			return &convNode[decimal128.Num, int16]{arg: arg, dt: dt, f: func(v decimal128.Num) int16 { return int16(decToInt64(v, s)) }}
		case catalog.KindFloat:
			return &convNode[decimal128.Num, float32]{arg: arg, dt: dt, f: func(v decimal128.Num) float32 { return float32(decToFloat64(v, s)) }}
		}
	case catalog.KindBoolean:
		switch to.Kind {
		case catalog.KindTinyInt:
			return &fromBoolNode[int8]{arg: arg, dt: dt, t: 1}
		case catalog.KindSmallInt:
			return &fromBoolNode[int16]{arg: arg, dt: dt, t: 1}
		case catalog.KindFloat:
			return &fromBoolNode[float32]{arg: arg, dt: dt, t: 1}
		}
	}
	return nil
}

func numFromInt[F int8 | int16 | int32 | int64](to catalog.Type, arg Evaluator, dt arrow.DataType) Evaluator {
	switch to.Kind {
	case catalog.KindTinyInt:
		return &convNode[F, int8]{arg: arg, dt: dt, f: func(v F) int8 { return int8(v) }}
	case catalog.KindSmallInt:
		return &convNode[F, int16]{arg: arg, dt: dt, f: func(v F) int16 { return int16(v) }}
	case catalog.KindInt:
		return &convNode[F, int32]{arg: arg, dt: dt, f: func(v F) int32 { return int32(v) }}
	case catalog.KindBigInt:
		return &convNode[F, int64]{arg: arg, dt: dt, f: func(v F) int64 { return int64(v) }}
	case catalog.KindFloat:
		return &convNode[F, float32]{arg: arg, dt: dt, f: func(v F) float32 { return float32(v) }}
	case catalog.KindDouble:
		return &convNode[F, float64]{arg: arg, dt: dt, f: func(v F) float64 { return float64(v) }}
	case catalog.KindDecimal:
		return &toDecNode[F]{arg: arg, to: to, f: func(v F) (decimal128.Num, bool) { return int64ToDec(int64(v), to) }}
	case catalog.KindBoolean:
		return &toBoolNode[F]{arg: arg, f: func(v F) bool { return v != 0 }}
	}
	return nil
}

func numFromFloat[F float32 | float64](to catalog.Type, arg Evaluator, dt arrow.DataType) Evaluator {
	switch to.Kind {
	case catalog.KindTinyInt:
		return &convNode[F, int8]{arg: arg, dt: dt, f: func(v F) int8 { return int8(saturate(float64(v), math.MinInt32, math.MaxInt32)) }}
	case catalog.KindSmallInt:
		return &convNode[F, int16]{arg: arg, dt: dt, f: func(v F) int16 { return int16(saturate(float64(v), math.MinInt32, math.MaxInt32)) }}
	case catalog.KindInt:
		return &convNode[F, int32]{arg: arg, dt: dt, f: func(v F) int32 { return int32(saturate(float64(v), math.MinInt32, math.MaxInt32)) }}
	case catalog.KindBigInt:
		return &convNode[F, int64]{arg: arg, dt: dt, f: func(v F) int64 { return saturate(float64(v), math.MinInt64, math.MaxInt64) }}
	case catalog.KindFloat:
		return &convNode[F, float32]{arg: arg, dt: dt, f: func(v F) float32 { return float32(v) }}
	case catalog.KindDouble:
		return &convNode[F, float64]{arg: arg, dt: dt, f: func(v F) float64 { return float64(v) }}
	case catalog.KindDecimal:
		bits := 64
		if _, is32 := any(F(0)).(float32); is32 {
			bits = 32
		}
		return &toDecNode[F]{arg: arg, to: to, f: func(v F) (decimal128.Num, bool) {
			f := float64(v)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return decimal128.Num{}, false
			}
			var buf [32]byte
			n, err := castDecimalText(string(appendFloatShortest(buf[:0], f, bits)), to)
			return n, err == nil
		}}
	case catalog.KindBoolean:
		return &toBoolNode[F]{arg: arg, f: func(v F) bool { return v != 0 }}
	}
	return nil
}

func appendFloatShortest(dst []byte, f float64, bits int) []byte {
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
}

func castDecimalText(s string, to catalog.Type) (decimal128.Num, error) {
	return format.CastDecimal(s, int32(to.Precision), int32(to.Scale))
}
