package expr

import (
	"math/big"
	"math/bits"
	"strconv"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
)

// Result status of a per-value DECIMAL operation.
const (
	decOK = iota
	decNull
	decDivZero
)

func pow10(k int32) decimal128.Num { return decimal128.GetScaleMultiplier(int(k)) }

func fitsI64(n decimal128.Num) bool {
	h, l := n.HighBits(), n.LowBits()
	return (h == 0 && l < 1<<63) || (h == -1 && l >= 1<<63)
}

var pow10i64 = func() [19]int64 {
	var p [19]int64
	p[0] = 1
	for i := 1; i < 19; i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// fits reports whether n has at most p digits.
func fits(n decimal128.Num, p int32) bool {
	if p >= 38 {
		return n.Abs().Less(pow10(38)) || n == pow10(38).Negate()
	}
	return n.Abs().Less(pow10(p))
}

// scaleUp multiplies n by 10^k; ok is false when the result has more than 38
// digits.
func scaleUp(n decimal128.Num, k int32) (decimal128.Num, bool) {
	if k == 0 {
		return n, true
	}
	if k > 38 || !n.Abs().Less(pow10(38-k)) {
		return n, n.Sign() == 0
	}
	return n.Mul(pow10(k)), true
}

// roundDown divides n by 10^k rounding half away from zero (HALF_UP).
func roundDown(n decimal128.Num, k int32) decimal128.Num {
	if k <= 0 {
		return n
	}
	if k <= 18 && fitsI64(n) {
		v := int64(n.LowBits())
		p := pow10i64[k]
		q, r := v/p, v%p
		if r < 0 {
			r = -r
		}
		if r*2 >= p {
			if v < 0 {
				q--
			} else {
				q++
			}
		}
		return decimal128.FromI64(q)
	}
	if k > 38 {
		return decimal128.Num{}
	}
	return n.ReduceScaleBy(k, true)
}

// truncDown divides n by 10^k toward negative infinity (floor) or positive
// infinity (ceil).
func floorCeilDown(n decimal128.Num, k int32, ceil bool) decimal128.Num {
	if k <= 0 {
		return n
	}
	b := n.BigInt()
	p := pow10Big(k)
	q, r := new(big.Int).QuoRem(b, p, new(big.Int))
	if r.Sign() != 0 {
		if ceil && r.Sign() > 0 {
			q.Add(q, big.NewInt(1))
		} else if !ceil && r.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		}
	}
	return decimal128.FromBigInt(q)
}

func pow10Big(k int32) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil)
}

// bigToDec rounds an exact big value at scale from to scale to and checks
// precision p.
func bigToDec(v *big.Int, from, to, p int32) (decimal128.Num, int) {
	if from > to {
		d := pow10Big(from - to)
		q, r := new(big.Int).QuoRem(v, d, new(big.Int))
		r.Abs(r).Lsh(r, 1)
		if r.Cmp(d) >= 0 {
			if v.Sign() < 0 {
				q.Sub(q, big.NewInt(1))
			} else {
				q.Add(q, big.NewInt(1))
			}
		}
		v = q
	} else if from < to {
		v = new(big.Int).Mul(v, pow10Big(to-from))
	}
	if v.CmpAbs(pow10Big(p)) >= 0 {
		return decimal128.Num{}, decNull
	}
	return decimal128.FromBigInt(v), decOK
}

// decArith is +, -, *, /, % over DECIMAL arguments of possibly different
// scales, producing the result type the planner derived.
type decArith struct {
	op         byte
	l, r       operand
	sa, sb     int32
	pa, pb     int32
	sr, pr     int32
	dt         arrow.DataType
	fastAddSub bool // exact result fits 38 digits: pure 128-bit arithmetic
	fastMul    bool
}

func newDecArith(op byte, l, r operand, a, b, res catalog.Type) *decArith {
	d := &decArith{op: op, l: l, r: r, sa: int32(a.Scale), sb: int32(b.Scale), pa: int32(a.Precision),
		pb: int32(b.Precision), sr: int32(res.Scale), pr: int32(res.Precision), dt: res.ArrowType()}
	s := max(d.sa, d.sb)
	d.fastAddSub = max(d.pa-d.sa, d.pb-d.sb)+s+1 <= 38 && d.sr == s
	d.fastMul = d.pa+d.pb <= 38 && d.sr == d.sa+d.sb
	return d
}

func (d *decArith) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	rows := int(rec.NumRows())
	arrs, err := evalArgs([]operand{d.l, d.r}, rec, mem)
	if err != nil {
		return nil, err
	}
	defer releaseAll(arrs)
	av, as := decVals(arrs[0], d.l.c)
	bv, bs := decVals(arrs[1], d.r.c)
	if (d.op == '*' && d.fastMul) || ((d.op == '+' || d.op == '-') && d.fastAddSub) {
		// exact in 128 bits: no row can fail, so every row is computed
		// (a NULL row's value is never read) in a loop of its own
		buf, out := allocFixed[decimal128.Num](mem, rows)
		d.exact(out, av, as, bv, bs)
		return makeArray(d.dt, rows, andValidity(mem, rows, arrs[0], arrs[1]), buf), nil
	}
	valid, vb := writableValidity(mem, rows, arrs[0], arrs[1])
	buf, out := allocFixed[decimal128.Num](mem, rows)
	f := d.kernel()
	for i := 0; i < rows; i++ {
		if !bitutil.BitIsSet(vb, i) {
			continue
		}
		v, st := f(av[i*as], bv[i*bs])
		switch st {
		case decOK:
			out[i] = v
		case decNull:
			bitutil.ClearBit(vb, i)
		case decDivZero:
			buf.Release()
			valid.Release()
			return nil, errDivZero
		}
	}
	return makeArray(d.dt, rows, valid, buf), nil
}

// exact is the fast kernels' loop: out[i] = a[i*as] op b[i*bs], strides 0
// (a constant) or 1.
func (d *decArith) exact(out, av []decimal128.Num, as int, bv []decimal128.Num, bs int) {
	if d.op == '*' {
		switch {
		case as == 0:
			a := av[0]
			for i := range out {
				out[i] = bv[i].Mul(a)
			}
		case bs == 0:
			b := bv[0]
			for i := range out {
				out[i] = av[i].Mul(b)
			}
		default:
			for i := range out {
				out[i] = av[i].Mul(bv[i])
			}
		}
		return
	}
	s := max(d.sa, d.sb)
	ma, mb := pow10(s-d.sa), pow10(s-d.sb) // to the common scale
	if d.op == '-' {
		mb = mb.Negate()
	}
	for i := range out {
		out[i] = av[i*as].Mul(ma).Add(bv[i*bs].Mul(mb))
	}
}

// decVals returns the values of an evaluated array, or of the constant c
// with stride 0.
func decVals(a, c arrow.Array) ([]decimal128.Num, int) {
	if a != nil {
		return values[decimal128.Num](a), 1
	}
	return values[decimal128.Num](c), 0
}

// kernel is the per-row kernel of the operations that can fail or need more
// than 128 bits; the exact ones run in exact.
func (d *decArith) kernel() func(a, b decimal128.Num) (decimal128.Num, int) {
	s := max(d.sa, d.sb)
	switch d.op {
	case '+', '-':
		return func(a, b decimal128.Num) (decimal128.Num, int) {
			x := new(big.Int).Mul(a.BigInt(), pow10Big(s-d.sa))
			y := new(big.Int).Mul(b.BigInt(), pow10Big(s-d.sb))
			if d.op == '+' {
				x.Add(x, y)
			} else {
				x.Sub(x, y)
			}
			return bigToDec(x, s, d.sr, d.pr)
		}
	case '*':
		se := d.sa + d.sb
		return func(a, b decimal128.Num) (decimal128.Num, int) {
			if fitsI64(a) && fitsI64(b) {
				x, y := int64(a.LowBits()), int64(b.LowBits())
				neg := (x < 0) != (y < 0)
				hi, lo := bits.Mul64(absU(x), absU(y))
				if hi < 1<<62 {
					p := decimal128.New(int64(hi), lo)
					if neg {
						p = p.Negate()
					}
					p = roundDown(p, se-d.sr)
					if !fits(p, d.pr) {
						return p, decNull
					}
					return p, decOK
				}
			}
			return bigToDec(new(big.Int).Mul(a.BigInt(), b.BigInt()), se, d.sr, d.pr)
		}
	case '/':
		// result = a / b at scale sr: (a * 10^k) / b with k = sr - sa + sb.
		k := d.sr - d.sa + d.sb
		return func(a, b decimal128.Num) (decimal128.Num, int) {
			if b.Sign() == 0 {
				return b, decDivZero
			}
			if k >= 0 && k <= 18 && fitsI64(a) && fitsI64(b) {
				x, y := int64(a.LowBits()), int64(b.LowBits())
				if p := pow10i64[k]; absU(x) <= uint64(1<<62)/uint64(p) {
					num := x * p
					q, r := num/y, num%y
					if absU(r)*2 >= absU(y) {
						if (num < 0) != (y < 0) {
							q--
						} else {
							q++
						}
					}
					v := decimal128.FromI64(q)
					if !fits(v, d.pr) {
						return v, decNull
					}
					return v, decOK
				}
			}
			x := a.BigInt()
			y := b.BigInt()
			if k >= 0 {
				x.Mul(x, pow10Big(k))
			} else {
				y.Mul(y, pow10Big(-k))
			}
			q, r := new(big.Int).QuoRem(x, y, new(big.Int))
			r.Abs(r).Lsh(r, 1)
			if r.CmpAbs(y) >= 0 {
				if (x.Sign() < 0) != (y.Sign() < 0) {
					q.Sub(q, big.NewInt(1))
				} else {
					q.Add(q, big.NewInt(1))
				}
			}
			return bigToDec(q, 0, 0, d.pr)
		}
	default: // '%'
		return func(a, b decimal128.Num) (decimal128.Num, int) {
			if b.Sign() == 0 {
				return b, decDivZero
			}
			x, ok1 := scaleUp(a, s-d.sa)
			y, ok2 := scaleUp(b, s-d.sb)
			if ok1 && ok2 && fitsI64(x) && fitsI64(y) {
				v := decimal128.FromI64(int64(x.LowBits()) % int64(y.LowBits()))
				return roundDown(v, s-d.sr), decOK
			}
			bx := new(big.Int).Mul(a.BigInt(), pow10Big(s-d.sa))
			by := new(big.Int).Mul(b.BigInt(), pow10Big(s-d.sb))
			return bigToDec(new(big.Int).Rem(bx, by), s, d.sr, d.pr)
		}
	}
}

func absU(x int64) uint64 {
	if x < 0 {
		return uint64(-x)
	}
	return uint64(x)
}

// decUnary is neg, abs, floor, ceil and round over DECIMAL.
type decUnary struct {
	arg     Evaluator
	in, out catalog.Type
	fn      string
	digits  int32 // round: decimal places
}

func (u *decUnary) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	a, err := u.arg.Eval(rec, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	n := a.Len()
	in := values[decimal128.Num](a)
	buf, out := allocFixed[decimal128.Num](mem, n)
	valid, vb := writableValidity(mem, n, a)
	si, so := int32(u.in.Scale), int32(u.out.Scale)
	po := int32(u.out.Precision)
	for i := 0; i < n; i++ {
		if !bitutil.BitIsSet(vb, i) {
			continue
		}
		v := in[i]
		switch u.fn {
		case "neg":
			v = v.Negate()
		case "abs":
			v = v.Abs()
		case "floor", "ceil":
			v = floorCeilDown(v, si, u.fn == "ceil")
		case "round":
			if u.digits < si {
				d := u.digits
				if d < 0 {
					// round to 10^-d, then express at scale 0
					v = roundDown(v, si-d)
					var ok bool
					if v, ok = scaleUp(v, -d); !ok {
						bitutil.ClearBit(vb, i)
						continue
					}
				} else {
					v = roundDown(v, si-d)
				}
			}
		}
		// rescale to the output scale when the types differ
		if cur := scaleAfter(u.fn, si, u.digits); cur < so {
			var ok bool
			if v, ok = scaleUp(v, so-cur); !ok {
				bitutil.ClearBit(vb, i)
				continue
			}
		}
		if !fits(v, po) {
			bitutil.ClearBit(vb, i)
			continue
		}
		out[i] = v
	}
	return makeArray(u.out.ArrowType(), n, valid, buf), nil
}

// scaleAfter is the scale of the value computed by a decUnary function before
// rescaling to the output type.
func scaleAfter(fn string, si, digits int32) int32 {
	switch fn {
	case "floor", "ceil":
		return 0
	case "round":
		if digits < 0 {
			return 0
		}
		return min(si, digits)
	}
	return si
}

// pow10f holds the powers of ten that are exact doubles.
var pow10f = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// decToFloat64 returns the double nearest to n·10^-scale (ties to even), as
// Java's BigDecimal.doubleValue() does. Arrow's Num.ToFloat64 multiplies by
// an inexact power of ten and can miss by an ulp: CAST(0.3 AS DOUBLE) was
// 0.30000000000000004, so 0.3 = 0.3e0 was false.
//
// When the unscaled value has at most 53 bits and the scale at most 22,
// both operands are exact doubles and one IEEE division rounds correctly
// (most DECIMAL columns: DECIMAL(15, s) and below). Otherwise the value's
// decimal text goes through strconv.ParseFloat, which is correctly
// rounded; the text is built on the stack, and only values of more than
// about 28 significant digits make the conversion to string allocate.
func decToFloat64(n decimal128.Num, scale int32) float64 {
	if fitsI64(n) {
		if v := int64(n.LowBits()); v >= -(1<<53) && v <= 1<<53 && scale >= 0 && int(scale) < len(pow10f) {
			return float64(v) / pow10f[scale]
		}
	}
	var buf [64]byte
	b := buf[:0]
	if n.Sign() < 0 {
		b = append(b, '-')
		n = n.Negate() // -2^127 is no DECIMAL(38) value: no overflow
	}
	start := len(b)
	b = appendUint128(b, uint64(n.HighBits()), n.LowBits())
	exp := -int64(scale)
	for len(b) > start+1 && b[len(b)-1] == '0' { // shorter text, same value
		b = b[:len(b)-1]
		exp++
	}
	b = append(b, 'e')
	b = strconv.AppendInt(b, exp, 10)
	f, _ := strconv.ParseFloat(string(b), 64) // well formed; out of range is ±Inf or 0, as in Java
	return f
}

// appendUint128 appends the decimal digits of hi·2^64 + lo.
func appendUint128(dst []byte, hi, lo uint64) []byte {
	if hi == 0 {
		return strconv.AppendUint(dst, lo, 10)
	}
	const e19 = 10_000_000_000_000_000_000
	qhi, rem := hi/e19, hi%e19
	qlo, r := bits.Div64(rem, lo, e19)
	dst = appendUint128(dst, qhi, qlo)
	var tail [19]byte
	for i := len(tail) - 1; i >= 0; i-- {
		tail[i] = byte('0' + r%10)
		r /= 10
	}
	return append(dst, tail[:]...)
}
