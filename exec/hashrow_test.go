package exec

import (
	"math/rand"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// TestHashRowIsHashKeys: the hash of one row equals the batch's hash of
// that row, for every key type the exchange hashes (NULLs, NaN and -0.0
// among the values) and combinations of several columns.
func TestHashRowIsHashKeys(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const n = 300
	rng := rand.New(rand.NewSource(5))
	// every key type (keyRecord), and a ROW column (hashed as NULL)
	base := keyRecord(t, mem, rng, n, 40)
	sb := array.NewStructBuilder(mem, arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}))
	for i := 0; i < n; i++ {
		if rng.Intn(5) == 0 {
			sb.AppendNull()
			continue
		}
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int64Builder).Append(rng.Int63n(40))
	}
	st := sb.NewArray()
	sb.Release()
	fields := append(append([]arrow.Field{}, base.Schema().Fields()...), arrow.Field{Name: "row", Type: st.DataType(), Nullable: true})
	rec := array.NewRecord(arrow.NewSchema(fields, nil), append(append([]arrow.Array{}, base.Columns()...), st), n)
	base.Release()
	st.Release()
	defer rec.Release()
	ncol := int(rec.NumCols())
	var keySets [][]int
	for c := 0; c < ncol; c++ {
		keySets = append(keySets, []int{c})
	}
	for k := 0; k < 20; k++ {
		keySets = append(keySets, []int{rng.Intn(ncol), rng.Intn(ncol), rng.Intn(ncol)})
	}
	for _, keys := range keySets {
		want := HashKeys(rec, keys, nil)
		for i := 0; i < n; i++ {
			if got := HashRow(rec, keys, i); got != want[i] {
				t.Fatalf("keys %v (%v...), row %d: HashRow %x, HashKeys %x", keys, rec.Schema().Field(keys[0]).Type, i, got, want[i])
			}
		}
	}
}

// TestHashKeysStringRuns: strings in runs of equal values (the hash of
// the row before reused), NULLs and the empty string between them, hash
// as HashRow hashes each row on its own.
func TestHashKeysStringRuns(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(9))
	b := array.NewStringBuilder(mem)
	vals := []string{"2026-12-06", "2026-12-07", "", "x"}
	for i := 0; i < 500; {
		v := vals[rng.Intn(len(vals))]
		for k := rng.Intn(30); k >= 0 && i < 500; k-- {
			if rng.Intn(15) == 0 {
				b.AppendNull()
			} else {
				b.Append(v)
			}
			i++
		}
	}
	a := b.NewArray()
	b.Release()
	rec := array.NewRecord(arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil), []arrow.Array{a}, int64(a.Len()))
	a.Release()
	defer rec.Release()
	for _, lo := range []int64{0, 7} {
		r := rec.NewSlice(lo, rec.NumRows())
		want := HashKeys(r, []int{0}, nil)
		for i := range want {
			if got := HashRow(r, []int{0}, i); got != want[i] {
				t.Fatalf("from %d, row %d: HashRow %x, HashKeys %x", lo, i, got, want[i])
			}
		}
		r.Release()
	}
}

// TestHashKeysOneString: a string column of one value in every row (hashed
// once) after an integer key hashes as HashRow hashes each row, also in a
// slice and for the empty string; a column that differs only in its last
// row or only in a length does not take the one-value path's hash.
func TestHashKeysOneString(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	for _, vals := range [][]string{
		{"2026-12-06", "2026-12-06", "2026-12-06", "2026-12-06"},
		{"", "", ""},
		{"ab", "ab", "ab", "ac"},
		{"ab", "ab", "abab", "", "ab"},
	} {
		ib := array.NewInt64Builder(mem)
		sb := array.NewStringBuilder(mem)
		for i, v := range vals {
			ib.Append(int64(i * 7))
			sb.Append(v)
		}
		ia, sa := ib.NewArray(), sb.NewArray()
		ib.Release()
		sb.Release()
		rec := array.NewRecord(schema, []arrow.Array{ia, sa}, int64(len(vals)))
		ia.Release()
		sa.Release()
		for _, lo := range []int64{0, 1} {
			r := rec.NewSlice(lo, rec.NumRows())
			for _, keys := range [][]int{{1}, {0, 1}} {
				want := HashKeys(r, keys, nil)
				for i := range want {
					if got := HashRow(r, keys, i); got != want[i] {
						t.Fatalf("%q from %d, keys %v, row %d: HashRow %x, HashKeys %x", vals, lo, keys, i, got, want[i])
					}
				}
			}
			r.Release()
		}
		rec.Release()
	}
}

// TestKeyGroupIsModulo: keyGroup is h mod maxP for powers of two (by a
// mask) and other values alike.
func TestKeyGroupIsModulo(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	for _, maxP := range []int{1, 2, 3, 100, 128, 4096, 32768, 1000} {
		for range 1000 {
			h := rng.Uint64()
			if got, want := keyGroup(h, maxP), int(h%uint64(maxP)); got != want {
				t.Fatalf("keyGroup(%x, %d) = %d, want %d", h, maxP, got, want)
			}
		}
	}
}
