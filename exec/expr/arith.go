package expr

import (
	"fmt"
	"math"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

type number interface {
	~int32 | ~int64 | ~float64
}

type integer interface {
	~int32 | ~int64
}

func compileArith(c *planner.Call, args []Evaluator) (Evaluator, error) {
	at := c.Args[0].Type()
	if !at.Equal(c.Args[1].Type()) && at.Kind != catalog.KindDecimal {
		return nil, fmt.Errorf("function %s: arguments of different types %s and %s", c.Fn, at, c.Args[1].Type())
	}
	op := c.Fn[0]
	l, r := newOperand(args[0]), newOperand(args[1])
	switch at.Kind {
	case catalog.KindInt:
		ev := Evaluator(&numArith[int32]{k: numKernels[int32](op), l: l, r: r, dt: at.ArrowType()})
		return narrow(ev, at, c.T)
	case catalog.KindBigInt:
		ev := Evaluator(&numArith[int64]{k: numKernels[int64](op), l: l, r: r, dt: at.ArrowType()})
		return narrow(ev, at, c.T)
	case catalog.KindDouble:
		return &numArith[float64]{k: numKernels[float64](op), l: l, r: r, dt: at.ArrowType()}, nil
	case catalog.KindDecimal:
		bt := c.Args[1].Type()
		if bt.Kind != catalog.KindDecimal || c.T.Kind != catalog.KindDecimal {
			return nil, fmt.Errorf("function %s: DECIMAL arithmetic needs DECIMAL arguments, got %s and %s", c.Fn, at, bt)
		}
		return newDecArith(op, l, r, at, bt, c.T), nil
	}
	return nil, fmt.Errorf("function %s: unsupported argument type %s", c.Fn, at)
}

// narrow casts an integer result computed in type from to the call's type
// (MOD(BIGINT, INT) is INT).
func narrow(ev Evaluator, from, to catalog.Type) (Evaluator, error) {
	if from.Equal(to) {
		return ev, nil
	}
	return compileCast(from, to, ev, false)
}

// numArith is +, -, *, /, % over INT, BIGINT or DOUBLE.
type numArith[T number] struct {
	k    kernels[T]
	l, r operand
	dt   arrow.DataType
}

func (n *numArith[T]) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	rows := int(rec.NumRows())
	arrs, err := evalArgs([]operand{n.l, n.r}, rec, mem)
	if err != nil {
		return nil, err
	}
	defer releaseAll(arrs)
	la, ra := arrs[0], arrs[1]
	valid := andValidity(mem, rows, la, ra)
	buf, out := allocFixed[T](mem, rows)
	var vb []byte
	if valid != nil {
		vb = valid.Bytes()
	}
	switch {
	case la != nil && ra != nil:
		err = n.k.vv(values[T](la), values[T](ra), out, vb)
	case la != nil:
		err = n.k.vs(values[T](la), values[T](n.r.c)[0], out, vb)
	default:
		err = n.k.sv(values[T](n.l.c)[0], values[T](ra), out, vb)
	}
	if err != nil {
		buf.Release()
		if valid != nil {
			valid.Release()
		}
		return nil, err
	}
	return makeArray(n.dt, rows, valid, buf), nil
}

// kernels of one arithmetic operator over one type: column-column,
// column-scalar and scalar-column. valid is the combined validity bitmap (nil:
// no nulls), used to ignore division by zero in NULL rows.
type kernels[T number] struct {
	vv func(a, b, out []T, valid []byte) error
	vs func(a []T, b T, out []T, valid []byte) error
	sv func(a T, b []T, out []T, valid []byte) error
}

func addK[T number]() kernels[T] {
	return kernels[T]{
		vv: func(a, b, out []T, _ []byte) error {
			for i := range out {
				out[i] = a[i] + b[i]
			}
			return nil
		},
		vs: func(a []T, b T, out []T, _ []byte) error {
			for i := range out {
				out[i] = a[i] + b
			}
			return nil
		},
		sv: func(a T, b []T, out []T, _ []byte) error {
			for i := range out {
				out[i] = a + b[i]
			}
			return nil
		},
	}
}

func subK[T number]() kernels[T] {
	return kernels[T]{
		vv: func(a, b, out []T, _ []byte) error {
			for i := range out {
				out[i] = a[i] - b[i]
			}
			return nil
		},
		vs: func(a []T, b T, out []T, _ []byte) error {
			for i := range out {
				out[i] = a[i] - b
			}
			return nil
		},
		sv: func(a T, b []T, out []T, _ []byte) error {
			for i := range out {
				out[i] = a - b[i]
			}
			return nil
		},
	}
}

func mulK[T number]() kernels[T] {
	return kernels[T]{
		vv: func(a, b, out []T, _ []byte) error {
			for i := range out {
				out[i] = a[i] * b[i]
			}
			return nil
		},
		vs: func(a []T, b T, out []T, _ []byte) error {
			for i := range out {
				out[i] = a[i] * b
			}
			return nil
		},
		sv: func(a T, b []T, out []T, _ []byte) error {
			for i := range out {
				out[i] = a * b[i]
			}
			return nil
		},
	}
}

// floatDivK is IEEE division (x / 0 is an infinity or NaN) or math.Mod.
func floatDivK(mod bool) kernels[float64] {
	f := func(a, b float64) float64 { return a / b }
	if mod {
		f = math.Mod
	}
	return kernels[float64]{
		vv: func(a, b, out []float64, _ []byte) error {
			for i := range out {
				out[i] = f(a[i], b[i])
			}
			return nil
		},
		vs: func(a []float64, b float64, out []float64, _ []byte) error {
			for i := range out {
				out[i] = f(a[i], b)
			}
			return nil
		},
		sv: func(a float64, b []float64, out []float64, _ []byte) error {
			for i := range out {
				out[i] = f(a, b[i])
			}
			return nil
		},
	}
}

// intDivK is integer division or remainder truncating toward zero (as Java);
// a zero divisor in a non-NULL row is an error. MinInt / -1 wraps to MinInt.
func intDivK[T integer](mod bool) kernels[T] {
	zero := func(b []T, valid []byte) error {
		for i, v := range b {
			if v == 0 && (valid == nil || bitutil.BitIsSet(valid, i)) {
				return errDivZero
			}
		}
		return nil
	}
	return kernels[T]{
		vv: func(a, b, out []T, valid []byte) error {
			if err := zero(b, valid); err != nil {
				return err
			}
			for i := range out {
				if b[i] == 0 {
					continue
				}
				if b[i] == -1 { // avoid the hardware trap on MinInt / -1
					out[i] = -a[i]
					if mod {
						out[i] = 0
					}
					continue
				}
				if mod {
					out[i] = a[i] % b[i]
				} else {
					out[i] = a[i] / b[i]
				}
			}
			return nil
		},
		vs: func(a []T, b T, out []T, valid []byte) error {
			if b == 0 {
				if len(out) > 0 && (valid == nil || bitutil.CountSetBits(valid, 0, len(out)) > 0) {
					return errDivZero
				}
				return nil
			}
			switch {
			case b == -1 && mod:
			case b == -1:
				for i := range out {
					out[i] = -a[i]
				}
			case mod:
				for i := range out {
					out[i] = a[i] % b
				}
			default:
				for i := range out {
					out[i] = a[i] / b
				}
			}
			return nil
		},
		sv: func(a T, b []T, out []T, valid []byte) error {
			if err := zero(b, valid); err != nil {
				return err
			}
			for i := range out {
				switch {
				case b[i] == 0:
				case b[i] == -1:
					if !mod {
						out[i] = -a
					}
				case mod:
					out[i] = a % b[i]
				default:
					out[i] = a / b[i]
				}
			}
			return nil
		},
	}
}

func numKernels[T number](op byte) kernels[T] {
	switch op {
	case '+':
		return addK[T]()
	case '-':
		return subK[T]()
	case '*':
		return mulK[T]()
	}
	var z T
	switch any(z).(type) {
	case int32:
		return any(intDivK[int32](op == '%')).(kernels[T])
	case int64:
		return any(intDivK[int64](op == '%')).(kernels[T])
	}
	return any(floatDivK(op == '%')).(kernels[T])
}

func compileNeg(c *planner.Call, arg Evaluator) (Evaluator, error) {
	t := c.Args[0].Type()
	switch t.Kind {
	case catalog.KindInt:
		return &unaryNum[int32]{arg: arg, dt: t.ArrowType(), f: func(in, out []int32) {
			for i, v := range in {
				out[i] = -v
			}
		}}, nil
	case catalog.KindBigInt:
		return &unaryNum[int64]{arg: arg, dt: t.ArrowType(), f: func(in, out []int64) {
			for i, v := range in {
				out[i] = -v
			}
		}}, nil
	case catalog.KindDouble:
		return &unaryNum[float64]{arg: arg, dt: t.ArrowType(), f: func(in, out []float64) {
			for i, v := range in {
				out[i] = -v
			}
		}}, nil
	case catalog.KindDecimal:
		return &decUnary{arg: arg, in: t, out: c.T, fn: "neg"}, nil
	}
	return nil, fmt.Errorf("function neg: unsupported argument type %s", t)
}

// unaryNum applies a whole-column function to a fixed-width argument,
// keeping its validity.
type unaryNum[T any] struct {
	arg Evaluator
	dt  arrow.DataType
	f   func(in, out []T)
}

func (u *unaryNum[T]) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	a, err := u.arg.Eval(rec, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	n := a.Len()
	buf, out := allocFixed[T](mem, n)
	u.f(values[T](a), out)
	return makeArray(u.dt, n, andValidity(mem, n, a), buf), nil
}
