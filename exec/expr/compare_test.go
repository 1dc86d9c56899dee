package expr

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"
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

// TestCompareStringsMatchRows: the string kernels (offsets and bytes read
// directly, lengths first for = and <>) agree with strings.Compare on every
// operator, vector-scalar and vector-vector, on sliced arrays (a non-zero
// offset into shared buffers) and lengths around multiples of 64, and
// leave the bits past the last row zero.
func TestCompareStringsMatchRows(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	word := func() string {
		b := make([]byte, rng.Intn(4))
		for i := range b {
			b[i] = "abz"[rng.Intn(3)]
		}
		return string(b)
	}
	hold := func(op int, x, y string) bool { return cmpTable[op][strings.Compare(x, y)+1] }
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	for _, n := range []int{0, 1, 8, 63, 64, 65, 130, 1000} {
		for _, skip := range []int{0, 3} {
			ab, bb := array.NewStringBuilder(mem), array.NewStringBuilder(mem)
			for i := 0; i < n+skip; i++ {
				ab.Append(word())
				bb.Append(word())
			}
			af, bf := ab.NewStringArray(), bb.NewStringArray()
			a := array.NewSlice(af, int64(skip), int64(skip+n)).(*array.String)
			b := array.NewSlice(bf, int64(skip), int64(skip+n)).(*array.String)
			for _, s := range []string{"", "a", "ab", "zz"} {
				for op := opEq; op <= opGe; op++ {
					vv := make([]byte, (n+7)/8+8)
					vs := make([]byte, (n+7)/8+8)
					cmpStrVV(op, a, b, vv)
					cmpStrVS(op, a, s, vs)
					bit := func(m []byte, i int) bool { return m[i>>3]&(1<<(i&7)) != 0 }
					for i := 0; i < len(vv)*8; i++ {
						wantVV, wantVS := false, false
						if i < n {
							wantVV = hold(op, a.Value(i), b.Value(i))
							wantVS = hold(op, a.Value(i), s)
						}
						if bit(vv, i) != wantVV || bit(vs, i) != wantVS {
							t.Fatalf("n %d skip %d op %d s %q row %d: vv %v vs %v, want %v %v",
								n, skip, op, s, i, bit(vv, i), bit(vs, i), wantVV, wantVS)
						}
					}
				}
			}
			for _, x := range []arrow.Array{a, b, af, bf} {
				x.Release()
			}
		}
	}
}

// BenchmarkCompareStringScalar: state = 'CA' over a batch of 8192 rows,
// most of them empty (the nulls of another event kind) or of another
// length, as nexmark's q3 filter sees them.
func BenchmarkCompareStringScalar(b *testing.B) {
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	for i := 0; i < 8192; i++ {
		switch {
		case i%50 == 0:
			sb.Append([]string{"CA", "OR", "ID", "WA", "AZ"}[i/50%5])
		case i%7 == 0:
			sb.Append("somewhere")
		default:
			sb.Append("")
		}
	}
	a := sb.NewStringArray()
	defer a.Release()
	out := make([]byte, 8192/8)
	for i := 0; i < b.N; i++ {
		clear(out)
		cmpStrVS(opEq, a, "CA", out)
	}
}

// TestCompareDecimalsMatchCmp: the DECIMAL kernel agrees with
// decimal128.Num.Cmp on every operator, vector-scalar and vector-vector,
// for values that differ in the high word, only in the low word (the
// unsigned half), negatives and zero, and leaves the bits past the last
// row zero.
func TestCompareDecimalsMatchCmp(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	pick := func() decimal128.Num {
		switch rng.Intn(4) {
		case 0:
			return decimal128.FromI64(rng.Int63n(7) - 3)
		case 1:
			return decimal128.New(rng.Int63n(3)-1, rng.Uint64())
		case 2:
			return decimal128.New(0, uint64(1)<<63+uint64(rng.Intn(3)))
		}
		return decimal128.New(-1, ^uint64(rng.Intn(3)))
	}
	for _, n := range []int{0, 1, 63, 64, 65, 200} {
		a, b := make([]decimal128.Num, n), make([]decimal128.Num, n)
		for i := range a {
			a[i], b[i] = pick(), pick()
		}
		s := []decimal128.Num{pick()}
		for op := opEq; op <= opGe; op++ {
			vv := make([]byte, (n+7)/8+8)
			vs := make([]byte, (n+7)/8+8)
			cmpDec(op, a, b, nil, vv)
			cmpDec(op, a, nil, s, vs)
			for i := 0; i < len(vv)*8; i++ {
				wantVV, wantVS := false, false
				if i < n {
					wantVV, wantVS = cmpTable[op][a[i].Cmp(b[i])+1], cmpTable[op][a[i].Cmp(s[0])+1]
				}
				if (vv[i>>3]&(1<<(i&7)) != 0) != wantVV || (vs[i>>3]&(1<<(i&7)) != 0) != wantVS {
					t.Fatalf("n %d op %d row %d: %v %v %v", n, op, i, a[min(i, max(n-1, 0))], b[min(i, max(n-1, 0))], s[0])
				}
			}
		}
	}
}
