package expr

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
)

// compileCast builds CAST(arg AS to) for an argument of type from. With try,
// values that cannot be converted become NULL instead of failing.
func compileCast(from, to catalog.Type, arg Evaluator, try bool) (Evaluator, error) {
	if from.Kind == catalog.KindNull {
		return &nullNode{dt: to.ArrowType()}, nil
	}
	bad := func() (Evaluator, error) {
		return nil, fmt.Errorf("cannot cast %s to %s", from.Nullable(), to.Nullable())
	}
	if to.Kind == catalog.KindString {
		if from.Kind == catalog.KindString {
			if to.Length > 0 && (from.Length == 0 || from.Length > to.Length) {
				return &formatNode{arg: arg, from: from, maxLen: to.Length}, nil
			}
			return arg, nil
		}
		return &formatNode{arg: arg, from: from, maxLen: to.Length}, nil
	}
	if from.Kind == catalog.KindString {
		switch to.Kind {
		case catalog.KindBoolean, catalog.KindInt, catalog.KindBigInt, catalog.KindDouble,
			catalog.KindDecimal, catalog.KindTimestamp:
			return &parseNode{arg: arg, to: to, try: try}, nil
		}
		return bad()
	}
	if from.Kind == to.Kind && (from.Kind != catalog.KindDecimal || from.Equal(to)) {
		return arg, nil
	}
	dt := to.ArrowType()
	switch from.Kind {
	case catalog.KindInt:
		switch to.Kind {
		case catalog.KindBigInt:
			return &convNode[int32, int64]{arg: arg, dt: dt, f: func(v int32) int64 { return int64(v) }}, nil
		case catalog.KindDouble:
			return &convNode[int32, float64]{arg: arg, dt: dt, f: func(v int32) float64 { return float64(v) }}, nil
		case catalog.KindDecimal:
			return &toDecNode[int32]{arg: arg, to: to, f: func(v int32) (decimal128.Num, bool) {
				return int64ToDec(int64(v), to)
			}}, nil
		case catalog.KindBoolean:
			return &toBoolNode[int32]{arg: arg, f: func(v int32) bool { return v != 0 }}, nil
		}
	case catalog.KindBigInt:
		switch to.Kind {
		case catalog.KindInt:
			return &convNode[int64, int32]{arg: arg, dt: dt, f: func(v int64) int32 { return int32(v) }}, nil
		case catalog.KindDouble:
			return &convNode[int64, float64]{arg: arg, dt: dt, f: func(v int64) float64 { return float64(v) }}, nil
		case catalog.KindDecimal:
			return &toDecNode[int64]{arg: arg, to: to, f: func(v int64) (decimal128.Num, bool) {
				return int64ToDec(v, to)
			}}, nil
		case catalog.KindBoolean:
			return &toBoolNode[int64]{arg: arg, f: func(v int64) bool { return v != 0 }}, nil
		}
	case catalog.KindDouble:
		switch to.Kind {
		case catalog.KindInt:
			return &convNode[float64, int32]{arg: arg, dt: dt, f: func(v float64) int32 {
				return int32(saturate(v, math.MinInt32, math.MaxInt32))
			}}, nil
		case catalog.KindBigInt:
			return &convNode[float64, int64]{arg: arg, dt: dt, f: func(v float64) int64 {
				return saturate(v, math.MinInt64, math.MaxInt64)
			}}, nil
		case catalog.KindDecimal:
			return &toDecNode[float64]{arg: arg, to: to, f: func(v float64) (decimal128.Num, bool) {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return decimal128.Num{}, false
				}
				var buf [32]byte
				n, err := parseDecimal(string(strconv.AppendFloat(buf[:0], v, 'g', -1, 64)), to)
				return n, err == nil
			}}, nil
		case catalog.KindBoolean:
			return &toBoolNode[float64]{arg: arg, f: func(v float64) bool { return v != 0 }}, nil
		}
	case catalog.KindDecimal:
		s := int32(from.Scale)
		switch to.Kind {
		case catalog.KindInt:
			return &convNode[decimal128.Num, int32]{arg: arg, dt: dt, f: func(v decimal128.Num) int32 {
				return int32(decToInt64(v, s))
			}}, nil
		case catalog.KindBigInt:
			return &convNode[decimal128.Num, int64]{arg: arg, dt: dt, f: func(v decimal128.Num) int64 {
				return decToInt64(v, s)
			}}, nil
		case catalog.KindDouble:
			return &convNode[decimal128.Num, float64]{arg: arg, dt: dt, f: func(v decimal128.Num) float64 {
				return v.ToFloat64(s)
			}}, nil
		case catalog.KindDecimal:
			ts, tp := int32(to.Scale), int32(to.Precision)
			return &toDecNode[decimal128.Num]{arg: arg, to: to, f: func(v decimal128.Num) (decimal128.Num, bool) {
				if ts < s {
					v = roundDown(v, s-ts)
				} else if ts > s {
					var ok bool
					if v, ok = scaleUp(v, ts-s); !ok {
						return v, false
					}
				}
				return v, fits(v, tp)
			}}, nil
		case catalog.KindBoolean:
			return &toBoolNode[decimal128.Num]{arg: arg, f: func(v decimal128.Num) bool { return v.Sign() != 0 }}, nil
		}
	case catalog.KindBoolean:
		switch to.Kind {
		case catalog.KindInt:
			return &fromBoolNode[int32]{arg: arg, dt: dt, t: 1}, nil
		case catalog.KindBigInt:
			return &fromBoolNode[int64]{arg: arg, dt: dt, t: 1}, nil
		case catalog.KindDouble:
			return &fromBoolNode[float64]{arg: arg, dt: dt, t: 1}, nil
		case catalog.KindDecimal:
			one, ok := int64ToDec(1, to)
			if !ok {
				return &toDecNode[decimal128.Num]{arg: &fromBoolNode[decimal128.Num]{arg: arg, dt: decimal128Type(38, 0), t: decimal128.FromI64(1)},
					to: to, f: func(v decimal128.Num) (decimal128.Num, bool) { return v, v.Sign() == 0 }}, nil
			}
			return &fromBoolNode[decimal128.Num]{arg: arg, dt: dt, t: one}, nil
		}
	}
	return bad()
}

func decimal128Type(p, s int32) arrow.DataType { return &arrow.Decimal128Type{Precision: p, Scale: s} }

// saturate converts like Java's (long)/(int) cast of a double: truncation
// toward zero, NaN to 0, out-of-range values to the nearest bound.
func saturate(v float64, lo, hi int64) int64 {
	switch {
	case math.IsNaN(v):
		return 0
	case v <= float64(lo):
		return lo
	case v >= float64(hi):
		return hi
	}
	return int64(v)
}

func int64ToDec(v int64, to catalog.Type) (decimal128.Num, bool) {
	n, ok := scaleUp(decimal128.FromI64(v), int32(to.Scale))
	if !ok || !fits(n, int32(to.Precision)) {
		return n, false
	}
	return n, true
}

// decToInt64 truncates toward zero and keeps the low 64 bits (Java's
// BigDecimal.longValue()).
func decToInt64(v decimal128.Num, scale int32) int64 {
	if scale > 0 {
		if scale <= 18 && fitsI64(v) {
			return int64(v.LowBits()) / pow10i64[scale]
		}
		b := v.BigInt()
		b.Quo(b, pow10Big(scale))
		v = decimal128.FromBigInt(b)
	}
	return int64(v.LowBits())
}

// convNode converts fixed-width values element-wise, keeping validity.
type convNode[F, T any] struct {
	arg Evaluator
	dt  arrow.DataType
	f   func(F) T
}

func (c *convNode[F, T]) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	a, err := c.arg.Eval(rec, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	n := a.Len()
	in := values[F](a)
	buf, out := allocFixed[T](mem, n)
	for i := range out {
		out[i] = c.f(in[i])
	}
	return makeArray(c.dt, n, andValidity(mem, n, a), buf), nil
}

// toDecNode converts to DECIMAL; values that do not fit become NULL.
type toDecNode[F any] struct {
	arg Evaluator
	to  catalog.Type
	f   func(F) (decimal128.Num, bool)
}

func (c *toDecNode[F]) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	a, err := c.arg.Eval(rec, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	n := a.Len()
	in := values[F](a)
	buf, out := allocFixed[decimal128.Num](mem, n)
	valid := andValidity(mem, n, a)
	if valid == nil {
		valid, _ = allValidBits(mem, n)
	}
	vb := valid.Bytes()
	for i := range out {
		if !bitutil.BitIsSet(vb, i) {
			continue
		}
		v, ok := c.f(in[i])
		if !ok {
			bitutil.ClearBit(vb, i)
			continue
		}
		out[i] = v
	}
	return makeArray(c.to.ArrowType(), n, valid, buf), nil
}

// toBoolNode converts numbers to BOOLEAN (non-zero is TRUE).
type toBoolNode[F any] struct {
	arg Evaluator
	f   func(F) bool
}

func (c *toBoolNode[F]) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	a, err := c.arg.Eval(rec, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	n := a.Len()
	in := values[F](a)
	buf, out := allocBits(mem, n)
	for i := 0; i < n; i++ {
		if c.f(in[i]) {
			bitutil.SetBit(out, i)
		}
	}
	return makeArray(arrow.FixedWidthTypes.Boolean, n, andValidity(mem, n, a), buf), nil
}

// fromBoolNode converts BOOLEAN to a number: t for TRUE, zero for FALSE.
type fromBoolNode[T any] struct {
	arg Evaluator
	dt  arrow.DataType
	t   T
}

func (c *fromBoolNode[T]) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	a, err := c.arg.Eval(rec, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	n := a.Len()
	bv, off := boolBits(a)
	buf, out := allocFixed[T](mem, n)
	for i := range out {
		if bv != nil && bitutil.BitIsSet(bv, off+i) {
			out[i] = c.t
		}
	}
	return makeArray(c.dt, n, andValidity(mem, n, a), buf), nil
}

// formatNode renders any type as STRING (truncated to maxLen characters when
// maxLen > 0, as a cast to VARCHAR(n) does).
type formatNode struct {
	arg    Evaluator
	from   catalog.Type
	maxLen int
}

func (c *formatNode) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	a, err := c.arg.Eval(rec, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	n := a.Len()
	bits, off, allNullA := bitsOf(a)
	so := newStrOut(mem, n, 0)
	var scratch []byte
	scale := int32(c.from.Scale)
	for i := 0; i < n; i++ {
		if allNullA || !isValid(bits, off, i) {
			so.appendEmpty()
			continue
		}
		scratch = scratch[:0]
		switch c.from.Kind {
		case catalog.KindBoolean:
			if a.(*array.Boolean).Value(i) {
				scratch = append(scratch, "TRUE"...)
			} else {
				scratch = append(scratch, "FALSE"...)
			}
		case catalog.KindInt:
			scratch = strconv.AppendInt(scratch, int64(a.(*array.Int32).Value(i)), 10)
		case catalog.KindBigInt:
			scratch = strconv.AppendInt(scratch, a.(*array.Int64).Value(i), 10)
		case catalog.KindDouble:
			scratch = AppendDouble(scratch, a.(*array.Float64).Value(i))
		case catalog.KindDecimal:
			scratch = append(scratch, FormatDecimal(a.(*array.Decimal128).Value(i), scale)...)
		case catalog.KindTimestamp:
			scratch = AppendTimestamp(scratch, int64(a.(*array.Timestamp).Value(i)))
		case catalog.KindString:
			scratch = append(scratch, a.(*array.String).Value(i)...)
		}
		if c.maxLen > 0 {
			scratch = truncRunes(scratch, c.maxLen)
		}
		so.appendBytes(scratch)
	}
	return so.finish(andValidity(mem, n, a)), nil
}

func truncRunes(b []byte, n int) []byte {
	count := 0
	for i := range string(b) {
		if count == n {
			return b[:i]
		}
		count++
	}
	return b
}

// parseNode converts STRING to another type; malformed text fails the job
// (or gives NULL with try).
type parseNode struct {
	arg Evaluator
	to  catalog.Type
	try bool
}

func (c *parseNode) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	a, err := c.arg.Eval(rec, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	n := a.Len()
	sa, _ := a.(*array.String)
	valid := andValidity(mem, n, a)
	if valid == nil {
		valid, _ = allValidBits(mem, n)
	}
	vb := valid.Bytes()
	if sa == nil { // untyped NULL column
		clear(vb)
	}
	fail := func(i int, s string, cause error) error {
		if c.try || cause == nil {
			bitutil.ClearBit(vb, i)
			return nil
		}
		return fmt.Errorf("cannot cast '%s' to %s: %v", s, c.to.Nullable(), cause)
	}
	var out []byte // bool bitmap or fixed values
	var buf *memory.Buffer
	var i32 []int32
	var i64 []int64
	var f64 []float64
	var dec []decimal128.Num
	switch c.to.Kind {
	case catalog.KindBoolean:
		buf, out = allocBits(mem, n)
	case catalog.KindInt:
		buf, i32 = allocFixed[int32](mem, n)
	case catalog.KindBigInt, catalog.KindTimestamp:
		buf, i64 = allocFixed[int64](mem, n)
	case catalog.KindDouble:
		buf, f64 = allocFixed[float64](mem, n)
	case catalog.KindDecimal:
		buf, dec = allocFixed[decimal128.Num](mem, n)
	}
	for i := 0; i < n; i++ {
		if !bitutil.BitIsSet(vb, i) {
			continue
		}
		s := sa.Value(i)
		var perr error
		switch c.to.Kind {
		case catalog.KindBoolean:
			var v bool
			if v, perr = parseBool(s); perr == nil && v {
				bitutil.SetBit(out, i)
			}
		case catalog.KindInt:
			var v int64
			if v, perr = parseInt(s, 32); perr == nil {
				i32[i] = int32(v)
			}
		case catalog.KindBigInt:
			i64[i], perr = parseInt(s, 64)
		case catalog.KindTimestamp:
			i64[i], perr = ParseTimestamp(s)
		case catalog.KindDouble:
			f64[i], perr = strconv.ParseFloat(strings.TrimSpace(s), 64)
			if perr != nil {
				perr = fmt.Errorf("not a number")
			}
		case catalog.KindDecimal:
			dec[i], perr = parseDecimal(s, c.to)
			if perr == errDecOverflow { // NULL, as Flink
				bitutil.ClearBit(vb, i)
				perr = nil
			}
		}
		if perr != nil {
			if err := fail(i, s, perr); err != nil {
				buf.Release()
				valid.Release()
				return nil, err
			}
		}
	}
	return makeArray(c.to.ArrowType(), n, valid, buf), nil
}

func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "t", "yes", "y", "1":
		return true, nil
	case "false", "f", "no", "n", "0":
		return false, nil
	}
	return false, fmt.Errorf("not a boolean")
}

// parseInt parses an integer, trimming spaces; a fractional part is
// truncated ("12.7" is 12) as in Flink.
func parseInt(s string, bitSize int) (int64, error) {
	s = strings.TrimSpace(s)
	v, err := strconv.ParseInt(s, 10, bitSize)
	if err == nil {
		return v, nil
	}
	if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
		return 0, fmt.Errorf("out of range")
	}
	if dot := strings.IndexByte(s, '.'); dot >= 0 {
		frac := s[dot+1:]
		intPart := s[:dot]
		for k := 0; k < len(frac); k++ {
			if frac[k] < '0' || frac[k] > '9' {
				return 0, fmt.Errorf("not an integer")
			}
		}
		if intPart == "" || intPart == "-" || intPart == "+" {
			if frac == "" {
				return 0, fmt.Errorf("not an integer")
			}
			return 0, nil
		}
		if v, err := strconv.ParseInt(intPart, 10, bitSize); err == nil {
			return v, nil
		}
	}
	return 0, fmt.Errorf("not an integer")
}

var errDecOverflow = fmt.Errorf("decimal overflow")

// parseDecimal parses [+-]digits[.digits][e[+-]digits] into DECIMAL(p, s),
// rounding half-up; a value too large for the precision is errDecOverflow.
func parseDecimal(s string, to catalog.Type) (decimal128.Num, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("not a decimal number")
	if s == "" {
		return decimal128.Num{}, bad
	}
	neg := false
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		s = s[1:]
	}
	mant, exp := s, 0
	if e := strings.IndexAny(s, "eE"); e >= 0 {
		x, err := strconv.Atoi(s[e+1:])
		if err != nil {
			return decimal128.Num{}, bad
		}
		mant, exp = s[:e], x
	}
	intPart, frac := mant, ""
	if dot := strings.IndexByte(mant, '.'); dot >= 0 {
		intPart, frac = mant[:dot], mant[dot+1:]
	}
	if intPart == "" && frac == "" {
		return decimal128.Num{}, bad
	}
	digits := make([]byte, 0, len(intPart)+len(frac))
	for _, part := range []string{intPart, frac} {
		for k := 0; k < len(part); k++ {
			if part[k] < '0' || part[k] > '9' {
				return decimal128.Num{}, bad
			}
		}
		digits = append(digits, part...)
	}
	// value = digits * 10^(exp - len(frac)); we want it at scale s.
	shift := exp - len(frac) + to.Scale // multiply digits by 10^shift
	b, ok := new(big.Int).SetString(string(digits), 10)
	if !ok {
		return decimal128.Num{}, bad
	}
	if shift >= 0 {
		if shift > 80 && b.Sign() != 0 {
			return decimal128.Num{}, errDecOverflow
		}
		b.Mul(b, pow10Big(int32(shift)))
	} else {
		if -shift > 80 {
			b.SetInt64(0)
		} else {
			d := pow10Big(int32(-shift))
			q, r := new(big.Int).QuoRem(b, d, new(big.Int))
			if r.Lsh(r, 1).Cmp(d) >= 0 {
				q.Add(q, big.NewInt(1))
			}
			b = q
		}
	}
	if neg {
		b.Neg(b)
	}
	if b.CmpAbs(pow10Big(int32(to.Precision))) >= 0 {
		return decimal128.Num{}, errDecOverflow
	}
	return decimal128.FromBigInt(b), nil
}

// FormatDouble renders a DOUBLE as Java's Double.toString does (with the
// shortest round-trip digits): "1.5", "100.0", "1.0E7", "1.0E-5", "NaN",
// "Infinity".
func FormatDouble(v float64) string { return string(AppendDouble(nil, v)) }

// AppendDouble appends FormatDouble(v) to dst.
func AppendDouble(dst []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(dst, "NaN"...)
	case math.IsInf(v, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(v, -1):
		return append(dst, "-Infinity"...)
	case v == 0:
		if math.Signbit(v) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	abs := math.Abs(v)
	if abs >= 1e-3 && abs < 1e7 {
		start := len(dst)
		dst = strconv.AppendFloat(dst, v, 'f', -1, 64)
		for _, c := range dst[start:] {
			if c == '.' {
				return dst
			}
		}
		return append(dst, ".0"...)
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], v, 'e', -1, 64) // d.ddde±xx
	k := 0
	for e[k] != 'e' {
		k++
	}
	mant, exp := e[:k], e[k+1:]
	dst = append(dst, mant...)
	hasDot := false
	for _, c := range mant {
		if c == '.' {
			hasDot = true
		}
	}
	if !hasDot {
		dst = append(dst, ".0"...)
	}
	dst = append(dst, 'E')
	if exp[0] == '-' {
		dst = append(dst, '-')
	}
	exp = exp[1:]
	for len(exp) > 1 && exp[0] == '0' {
		exp = exp[1:]
	}
	return append(dst, exp...)
}

// Timestamps: milliseconds since 1970-01-01 00:00:00, wall-clock, no zone.

const msPerDay = 86400000

// daysFromCivil returns days since 1970-01-01 for a proleptic Gregorian date.
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era = (z - 146096) / 146097
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return
}

// FormatTimestamp renders epoch milliseconds as "yyyy-MM-dd HH:mm:ss.SSS".
func FormatTimestamp(ms int64) string { return string(AppendTimestamp(nil, ms)) }

// AppendTimestamp appends FormatTimestamp(ms) to dst.
func AppendTimestamp(dst []byte, ms int64) []byte {
	days := ms / msPerDay
	rem := ms % msPerDay
	if rem < 0 {
		rem += msPerDay
		days--
	}
	y, mo, d := civilFromDays(days)
	pad := func(dst []byte, v int64, w int) []byte {
		var b [20]byte
		s := strconv.AppendInt(b[:0], v, 10)
		for k := len(s); k < w; k++ {
			dst = append(dst, '0')
		}
		return append(dst, s...)
	}
	if y < 0 {
		dst = append(dst, '-')
		y = -y
	}
	dst = pad(dst, y, 4)
	dst = append(dst, '-')
	dst = pad(dst, mo, 2)
	dst = append(dst, '-')
	dst = pad(dst, d, 2)
	dst = append(dst, ' ')
	dst = pad(dst, rem/3600000, 2)
	dst = append(dst, ':')
	dst = pad(dst, rem/60000%60, 2)
	dst = append(dst, ':')
	dst = pad(dst, rem/1000%60, 2)
	dst = append(dst, '.')
	return pad(dst, rem%1000, 3)
}

// ParseTimestamp parses "yyyy-MM-dd[ HH:mm[:ss[.fraction]]]" (a 'T' may
// separate date and time; month, day, hour, minute and second may have one
// digit; fractions beyond milliseconds are truncated) into epoch
// milliseconds.
func ParseTimestamp(s string) (int64, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("not a timestamp (expected yyyy-MM-dd HH:mm:ss.SSS)")
	p := 0
	num := func(minD, maxD int) (int64, bool) {
		start := p
		var v int64
		for p < len(s) && p-start < maxD && s[p] >= '0' && s[p] <= '9' {
			v = v*10 + int64(s[p]-'0')
			p++
		}
		return v, p-start >= minD
	}
	sep := func(c byte) bool {
		if p < len(s) && s[p] == c {
			p++
			return true
		}
		return false
	}
	y, ok := num(4, 4)
	if !ok || !sep('-') {
		return 0, bad
	}
	mo, ok := num(1, 2)
	if !ok || !sep('-') {
		return 0, bad
	}
	d, ok := num(1, 2)
	if !ok || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) {
		return 0, bad
	}
	var h, mi, sec, ms int64
	if p < len(s) {
		if !sep(' ') && !sep('T') {
			return 0, bad
		}
		if h, ok = num(1, 2); !ok || !sep(':') {
			return 0, bad
		}
		if mi, ok = num(1, 2); !ok {
			return 0, bad
		}
		if sep(':') {
			if sec, ok = num(1, 2); !ok {
				return 0, bad
			}
			if sep('.') {
				start := p
				for p < len(s) && s[p] >= '0' && s[p] <= '9' {
					if p-start < 3 {
						ms = ms*10 + int64(s[p]-'0')
					}
					p++
				}
				if p == start || p-start > 9 {
					return 0, bad
				}
				for k := p - start; k < 3; k++ {
					ms *= 10
				}
			}
		}
		if p != len(s) || h > 23 || mi > 59 || sec > 59 {
			return 0, bad
		}
	}
	return daysFromCivil(y, mo, d)*msPerDay + h*3600000 + mi*60000 + sec*1000 + ms, nil
}

func daysIn(y, m int64) int64 {
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
