package expr

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec/format"
)

// compileCast builds CAST(arg AS to) for an argument of type from. With try,
// values that cannot be converted become NULL instead of failing.
func compileCast(from, to catalog.Type, arg Evaluator, try bool) (Evaluator, error) {
	return compileCastIn(from, to, arg, try, time.UTC)
}

// compileCastIn is compileCast with the session time zone (casts from and
// to TIMESTAMP_LTZ).
func compileCastIn(from, to catalog.Type, arg Evaluator, try bool, loc *time.Location) (Evaluator, error) {
	if from.Kind == catalog.KindNull {
		return &nullNode{dt: to.ArrowType()}, nil
	}
	bad := func() (Evaluator, error) {
		return nil, fmt.Errorf("cannot cast %s to %s", from.Nullable(), to.Nullable())
	}
	if ev, ok, err := compileTimeCast(from, to, arg, try, loc); ok || err != nil {
		return ev, err
	}
	if (isNewNumeric(from.Kind) || isNewNumeric(to.Kind)) && from.Kind != catalog.KindString && to.Kind != catalog.KindString {
		if ev := compileNumCast(from, to, arg); ev != nil {
			return ev, nil
		}
	}
	if to.Kind == catalog.KindString {
		if from.Kind == catalog.KindString {
			if to.Length > 0 && (from.Length == 0 || from.Length > to.Length) {
				return &formatNode{arg: arg, from: from, maxLen: to.Length}, nil
			}
			return arg, nil
		}
		return &formatNode{arg: arg, from: from, maxLen: to.Length, loc: loc}, nil
	}
	if from.Kind == catalog.KindString {
		switch to.Kind {
		case catalog.KindBoolean, catalog.KindInt, catalog.KindBigInt, catalog.KindDouble,
			catalog.KindDecimal, catalog.KindTimestamp, catalog.KindTimestampLTZ, catalog.KindDate,
			catalog.KindTime, catalog.KindTinyInt, catalog.KindSmallInt, catalog.KindFloat:
			return &parseNode{arg: arg, to: to, try: try, loc: loc}, nil
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
			return &numConvNode[int32, int64]{arg: arg, dt: dt}, nil
		case catalog.KindDouble:
			return &numConvNode[int32, float64]{arg: arg, dt: dt}, nil
		case catalog.KindDecimal:
			if to.Precision-to.Scale >= 10 {
				return &intToDecNode[int32]{arg: arg, dt: dt, mul: pow10(int32(to.Scale))}, nil
			}
			return &toDecNode[int32]{arg: arg, to: to, f: func(v int32) (decimal128.Num, bool) {
				return int64ToDec(int64(v), to)
			}}, nil
		case catalog.KindBoolean:
			return &toBoolNode[int32]{arg: arg, f: func(v int32) bool { return v != 0 }}, nil
		}
	case catalog.KindBigInt:
		switch to.Kind {
		case catalog.KindInt:
			return &numConvNode[int64, int32]{arg: arg, dt: dt}, nil
		case catalog.KindDouble:
			return &numConvNode[int64, float64]{arg: arg, dt: dt}, nil
		case catalog.KindDecimal:
			if to.Precision-to.Scale >= 19 {
				return &intToDecNode[int64]{arg: arg, dt: dt, mul: pow10(int32(to.Scale))}, nil
			}
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
				n, err := format.CastDecimal(string(strconv.AppendFloat(buf[:0], v, 'g', -1, 64)), int32(to.Precision), int32(to.Scale))
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
				return decToFloat64(v, s)
			}}, nil
		case catalog.KindDecimal:
			ts, tp := int32(to.Scale), int32(to.Precision)
			if ts == s && tp >= int32(from.Precision) {
				return retypeNode{arg: arg, dt: dt}, nil // every value fits as it is
			}
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
	return mapValues(c.arg, c.dt, rec, mem, func(in []F, out []T) {
		for i := range out {
			out[i] = c.f(in[i])
		}
	})
}

// mapValues evaluates arg and maps its fixed-width values row for row to a
// new array of type dt with the same validity: fill writes out[i] from
// in[i] (one call a batch).
func mapValues[F, T any](arg Evaluator, dt arrow.DataType, rec arrow.Record, mem memory.Allocator, fill func(in []F, out []T)) (arrow.Array, error) {
	a, err := arg.Eval(rec, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	n := a.Len()
	buf, out := allocFixed[T](mem, n)
	fill(values[F](a), out)
	return makeArray(dt, n, andValidity(mem, n, a), buf), nil
}

// numConvNode is a conversion Go's own conversion does (INT <-> BIGINT,
// either to DOUBLE): one typed loop, no call per row.
type numConvNode[F int32 | int64, T int32 | int64 | float64] struct {
	arg Evaluator
	dt  arrow.DataType
}

func (c *numConvNode[F, T]) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	return mapValues(c.arg, c.dt, rec, mem, func(in []F, out []T) {
		for i, v := range in {
			out[i] = T(v)
		}
	})
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
	valid, vb := writableValidity(mem, n, a)
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

// intToDecNode converts INT or BIGINT to a DECIMAL that holds every value
// of the type (at least 10 or 19 integer digits): v * 10^scale, with no
// check.
type intToDecNode[F int32 | int64] struct {
	arg Evaluator
	dt  arrow.DataType
	mul decimal128.Num // 10^scale
}

func (c *intToDecNode[F]) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	return mapValues(c.arg, c.dt, rec, mem, func(in []F, out []decimal128.Num) {
		if c.mul == decimal128.FromI64(1) {
			for i, v := range in {
				out[i] = decimal128.FromI64(int64(v))
			}
			return
		}
		for i, v := range in {
			out[i] = decimal128.FromI64(int64(v)).Mul(c.mul)
		}
	})
}

// retypeNode gives its argument's values another type of the same layout
// (a DECIMAL of more precision and the same scale): no copy.
type retypeNode struct {
	arg Evaluator
	dt  arrow.DataType
}

func (c retypeNode) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	a, err := c.arg.Eval(rec, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	d := a.Data()
	nd := array.NewData(c.dt, d.Len(), d.Buffers(), d.Children(), d.NullN(), d.Offset())
	out := array.MakeFromData(nd)
	nd.Release()
	return out, nil
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
	loc    *time.Location
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
	view := format.NewColumn(a)
	if c.from.IsDatetime() {
		view.SetPrecision(c.from.Precision)
	}
	view.SetZone(c.loc)
	isBool := c.from.Kind == catalog.KindBoolean
	for i := 0; i < n; i++ {
		if allNullA || !isValid(bits, off, i) {
			so.appendEmpty()
			continue
		}
		scratch = scratch[:0]
		if isBool { // Flink 1.15+: TRUE/FALSE
			if a.(*array.Boolean).Value(i) {
				scratch = append(scratch, "TRUE"...)
			} else {
				scratch = append(scratch, "FALSE"...)
			}
		} else {
			scratch = view.Append(scratch, i, format.StyleSQL)
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
	loc *time.Location // TIMESTAMP_LTZ: the text is wall-clock time in loc
}

func (c *parseNode) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	a, err := c.arg.Eval(rec, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	n := a.Len()
	sa, _ := a.(*array.String)
	valid, vb := writableValidity(mem, n, a)
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
	var i8 []int8
	var i16 []int16
	var f32 []float32
	upm := c.to.UnitsPerMilli()
	switch c.to.Kind {
	case catalog.KindBoolean:
		buf, out = allocBits(mem, n)
	case catalog.KindInt:
		buf, i32 = allocFixed[int32](mem, n)
	case catalog.KindBigInt, catalog.KindTimestamp, catalog.KindTimestampLTZ:
		buf, i64 = allocFixed[int64](mem, n)
	case catalog.KindDate, catalog.KindTime:
		buf, i32 = allocFixed[int32](mem, n)
	case catalog.KindTinyInt:
		buf, i8 = allocFixed[int8](mem, n)
	case catalog.KindSmallInt:
		buf, i16 = allocFixed[int16](mem, n)
	case catalog.KindFloat:
		buf, f32 = allocFixed[float32](mem, n)
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
			if v, perr = format.CastBool(s); perr == nil && v {
				bitutil.SetBit(out, i)
			}
		case catalog.KindInt:
			var v int64
			if v, perr = format.CastInt(s, 32); perr == nil {
				i32[i] = int32(v)
			}
		case catalog.KindBigInt:
			i64[i], perr = format.CastInt(s, 64)
		case catalog.KindTimestamp, catalog.KindTimestampLTZ:
			var ms int64
			var sub int32
			if ms, sub, perr = format.CastTimestampNanos(s); perr == nil {
				if c.to.Kind == catalog.KindTimestampLTZ {
					ms = localToUTCMillis(ms, c.loc)
				}
				i64[i] = truncUnits(format.UnitsOf(ms, sub, upm), c.to)
			}
		case catalog.KindTinyInt:
			var v int64
			if v, perr = format.CastInt(s, 8); perr == nil {
				i8[i] = int8(v)
			}
		case catalog.KindSmallInt:
			var v int64
			if v, perr = format.CastInt(s, 16); perr == nil {
				i16[i] = int16(v)
			}
		case catalog.KindFloat:
			var v float64
			if v, perr = format.CastDouble(s); perr == nil {
				f32[i] = float32(v)
			}
		case catalog.KindDate:
			var d int64
			if d, perr = format.CastDate(s); perr == nil {
				i32[i] = int32(d)
			}
		case catalog.KindTime:
			var t int64
			if t, perr = format.CastTime(s); perr == nil {
				i32[i] = int32(truncMillis(t, c.to.Precision))
			}
		case catalog.KindDouble:
			f64[i], perr = format.CastDouble(s)
		case catalog.KindDecimal:
			dec[i], perr = format.CastDecimal(s, int32(c.to.Precision), int32(c.to.Scale))
			if perr == format.ErrDecimalOverflow { // NULL, as Flink
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
