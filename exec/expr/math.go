package expr

import (
	"fmt"
	"math"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

func compileMath(c *planner.Call, args []Evaluator) (Evaluator, error) {
	max := 1
	switch c.Fn {
	case "round", "power":
		max = 2
	}
	min := 1
	if c.Fn == "power" {
		min = 2
	}
	if err := nargs(c, min, max); err != nil {
		return nil, err
	}
	t := c.Args[0].Type()
	switch c.Fn {
	case "abs":
		switch t.Kind {
		case catalog.KindInt:
			return &unaryNum[int32]{arg: args[0], dt: t.ArrowType(), f: func(in, out []int32) {
				for i, v := range in {
					if v < 0 {
						v = -v
					}
					out[i] = v
				}
			}}, nil
		case catalog.KindBigInt:
			return &unaryNum[int64]{arg: args[0], dt: t.ArrowType(), f: func(in, out []int64) {
				for i, v := range in {
					if v < 0 {
						v = -v
					}
					out[i] = v
				}
			}}, nil
		case catalog.KindDouble:
			return doubleFn(args[0], math.Abs), nil
		case catalog.KindDecimal:
			return &decUnary{arg: args[0], in: t, out: c.T, fn: "abs"}, nil
		}
	case "floor", "ceil":
		switch t.Kind {
		case catalog.KindInt, catalog.KindBigInt:
			return args[0], nil
		case catalog.KindDouble:
			if c.Fn == "floor" {
				return doubleFn(args[0], math.Floor), nil
			}
			return doubleFn(args[0], math.Ceil), nil
		case catalog.KindDecimal:
			return &decUnary{arg: args[0], in: t, out: c.T, fn: c.Fn}, nil
		}
	case "round":
		var d operand
		if len(args) == 2 {
			d = newOperand(args[1])
		} else {
			d = operand{c: zeroInt32}
		}
		switch t.Kind {
		case catalog.KindInt:
			return &roundNode[int32]{x: args[0], d: d, dt: t.ArrowType(), f: roundInt32}, nil
		case catalog.KindBigInt:
			return &roundNode[int64]{x: args[0], d: d, dt: t.ArrowType(), f: roundInt64}, nil
		case catalog.KindDouble:
			return &roundNode[float64]{x: args[0], d: d, dt: t.ArrowType(), f: roundDouble}, nil
		case catalog.KindDecimal:
			digits := int32(0)
			if len(args) == 2 {
				if d.c == nil || d.c.IsNull(0) {
					return nil, fmt.Errorf("function ROUND: the number of decimal places must be a constant for DECIMAL")
				}
				digits = values[int32](d.c)[0]
			}
			return &decUnary{arg: args[0], in: t, out: c.T, fn: "round", digits: digits}, nil
		}
	case "sqrt":
		return doubleFn(args[0], math.Sqrt), nil
	case "exp":
		return doubleFn(args[0], math.Exp), nil
	case "ln":
		return doubleFn(args[0], math.Log), nil
	case "log10":
		return doubleFn(args[0], math.Log10), nil
	case "power":
		return &numArith[float64]{k: powK(), l: newOperand(args[0]), r: newOperand(args[1]), dt: arrow.PrimitiveTypes.Float64}, nil
	}
	return nil, fmt.Errorf("function %s: unsupported argument type %s", c.Fn, t)
}

var zeroInt32 = func() arrow.Array {
	a, _ := literalArray(&planner.Literal{Value: int32(0), T: catalog.Int})
	return a
}()

func doubleFn(arg Evaluator, f func(float64) float64) Evaluator {
	return &unaryNum[float64]{arg: arg, dt: arrow.PrimitiveTypes.Float64, f: func(in, out []float64) {
		for i, v := range in {
			out[i] = f(v)
		}
	}}
}

func powK() kernels[float64] {
	return kernels[float64]{
		vv: func(a, b, out []float64, _ []byte) error {
			for i := range out {
				out[i] = math.Pow(a[i], b[i])
			}
			return nil
		},
		vs: func(a []float64, b float64, out []float64, _ []byte) error {
			for i := range out {
				out[i] = math.Pow(a[i], b)
			}
			return nil
		},
		sv: func(a float64, b []float64, out []float64, _ []byte) error {
			for i := range out {
				out[i] = math.Pow(a, b[i])
			}
			return nil
		},
	}
}

// roundNode is ROUND(x, d) over INT, BIGINT or DOUBLE.
type roundNode[T number] struct {
	x  Evaluator
	d  operand
	dt arrow.DataType
	f  func(v T, d int32) T
}

func (n *roundNode[T]) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	rows := int(rec.NumRows())
	xa, err := n.x.Eval(rec, mem)
	if err != nil {
		return nil, err
	}
	defer xa.Release()
	var da arrow.Array
	if n.d.c == nil {
		if da, err = n.d.ev.Eval(rec, mem); err != nil {
			return nil, err
		}
		defer da.Release()
	}
	d := newIntCol(da, n.d.c)
	xs := values[T](xa)
	buf, out := allocFixed[T](mem, rows)
	valid := andValidity(mem, rows, xa, da)
	if d.step == 0 {
		dv := d.get(0)
		for i := range out {
			out[i] = n.f(xs[i], dv)
		}
	} else {
		for i := range out {
			out[i] = n.f(xs[i], d.get(i))
		}
	}
	return makeArray(n.dt, rows, valid, buf), nil
}

func roundInt64(v int64, d int32) int64 {
	if d >= 0 {
		return v
	}
	if d <= -19 {
		return 0
	}
	p := pow10i64[-d]
	q, r := v/p, v%p
	if absU(r)*2 >= uint64(p) {
		if v < 0 {
			q--
		} else {
			q++
		}
	}
	return q * p
}

func roundInt32(v int32, d int32) int32 {
	return int32(roundInt64(int64(v), d))
}

// roundDouble rounds half-up on the shortest decimal representation of v, as
// Flink does through BigDecimal.valueOf(v).setScale(d, HALF_UP).
func roundDouble(v float64, d int32) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) || v == 0 {
		return v
	}
	var buf [40]byte
	b := strconv.AppendFloat(buf[:0], v, 'e', -1, 64)
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	// b is d[.ddd]e±x
	var digits [24]byte
	nd := 0
	i := 0
	for ; i < len(b) && b[i] != 'e'; i++ {
		if b[i] != '.' {
			digits[nd] = b[i]
			nd++
		}
	}
	exp, _ := strconv.Atoi(string(b[i+1:]))
	// value = 0.digits * 10^(exp+1); keep exp+1+d digits
	keep := exp + 1 + int(d)
	if keep >= nd {
		return v
	}
	if keep < 0 {
		return math.Copysign(0, v)
	}
	up := digits[keep] >= '5'
	kept := digits[:keep]
	// propagate the carry
	mant := make([]byte, 0, keep+1)
	mant = append(mant, kept...)
	if up {
		j := len(mant) - 1
		for ; j >= 0; j-- {
			if mant[j] == '9' {
				mant[j] = '0'
				continue
			}
			mant[j]++
			break
		}
		if j < 0 {
			mant = append([]byte{'1'}, mant...)
			exp++
		}
	}
	if len(mant) == 0 {
		return math.Copysign(0, v)
	}
	s := "0." + string(mant) + "e" + strconv.Itoa(exp+1)
	r, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return v
	}
	if neg {
		r = -r
	}
	return r
}
