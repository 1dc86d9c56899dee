package expr

import (
	"math"
	"math/rand"
	"testing"
)

// TestCompareWordsMatchRows: the word-at-a-time comparison kernels set
// exactly the bits of the rows whose comparison holds, for every operator,
// lengths around multiples of 64, vector-vector and vector-scalar, and
// leave the bits past the last row zero.
func TestCompareWordsMatchRows(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	ops := []int{opEq, opNe, opLt, opGt, opLe, opGe}
	hold := func(op int, x, y float64) bool {
		switch op {
		case opEq:
			return x == y
		case opNe:
			return x != y
		case opLt:
			return x < y
		case opGt:
			return x > y
		case opLe:
			return x <= y
		}
		return x >= y
	}
	for _, n := range []int{0, 1, 7, 8, 9, 63, 64, 65, 127, 128, 130, 1000} {
		a, b := make([]int64, n), make([]int64, n)
		fa, fb := make([]float64, n), make([]float64, n)
		for i := range a {
			a[i], b[i] = rng.Int63n(5), rng.Int63n(5)
			fa[i], fb[i] = float64(a[i]), float64(b[i])
			if rng.Intn(10) == 0 {
				fa[i] = math.NaN()
			}
		}
		s := int64(2)
		for _, op := range ops {
			vv := make([]byte, (n+7)/8+8)
			vs := make([]byte, (n+7)/8+8)
			fvv := make([]byte, (n+7)/8+8)
			fvs := make([]byte, (n+7)/8+8)
			cmpVV(op, a, b, vv)
			cmpVS(op, a, s, vs)
			cmpVV(op, fa, fb, fvv)
			cmpVS(op, fa, 2, fvs)
			bit := func(m []byte, i int) bool { return m[i>>3]&(1<<(i&7)) != 0 }
			for i := 0; i < len(vv)*8; i++ {
				wantVV, wantVS, wantF, wantFS := false, false, false, false
				if i < n {
					wantVV = hold(op, float64(a[i]), float64(b[i]))
					wantVS = hold(op, float64(a[i]), float64(s))
					wantF = hold(op, fa[i], fb[i])
					wantFS = hold(op, fa[i], 2)
				}
				if bit(vv, i) != wantVV || bit(vs, i) != wantVS || bit(fvv, i) != wantF || bit(fvs, i) != wantFS {
					t.Fatalf("n %d op %d row %d: vv %v vs %v float %v %v, want %v %v %v %v",
						n, op, i, bit(vv, i), bit(vs, i), bit(fvv, i), bit(fvs, i), wantVV, wantVS, wantF, wantFS)
				}
			}
		}
	}
}

// BenchmarkCompareInt64Scalar: price < 10000 over a batch of 8192 rows.
func BenchmarkCompareInt64Scalar(b *testing.B) {
	a := make([]int64, 8192)
	for i := range a {
		a[i] = int64(i*7919) % 20000
	}
	out := make([]byte, len(a)/8)
	b.SetBytes(int64(len(a)) * 8)
	for i := 0; i < b.N; i++ {
		clear(out)
		cmpVS(opLt, a, 10000, out)
	}
}
