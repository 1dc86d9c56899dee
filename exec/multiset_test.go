package exec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/internal/memtest"
	"github.com/streamsql/streamsql/planner"
)

// TestStringMultisetsOwnTheirValues: MIN, MAX (retracting) and
// COUNT(DISTINCT) of STRING over random inserts and deletes of a few values
// in several groups, each batch released (and its memory poisoned) right
// after it is applied, equal a brute-force multiset after every batch.
// A Go map assignment to a present key stores the assigned key, so a
// multiset that assigned counts by the batch's value kept views of freed
// memory (COUNT(DISTINCT) then counted a value twice).
func TestStringMultisetsOwnTheirValues(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	mk := func(fn string, distinct bool) accumulator {
		t.Helper()
		a, err := newAccumulator(planner.AggCall{Fn: fn, Distinct: distinct, ArgType: catalog.String, T: catalog.String}, true)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	const groups = 4
	maxA, minA, cntA := mk("max", false), mk("min", false), mk("count", true)
	for _, a := range []accumulator{maxA, minA, cntA} {
		a.grow(groups)
	}
	rng := rand.New(rand.NewSource(7))
	truth := make([]map[string]int, groups)
	for g := range truth {
		truth[g] = map[string]int{}
	}
	for batch := 0; batch < 400; batch++ {
		b := array.NewStringBuilder(mem)
		var gids []int32
		var ops []RowKind
		for i := rng.Intn(6); i >= 0; i-- {
			g := int32(rng.Intn(groups))
			// delete a present value half the time, else insert one
			var present []string
			for v, c := range truth[g] {
				for ; c > 0; c-- {
					present = append(present, v)
				}
			}
			sort.Strings(present)
			if len(present) > 0 && rng.Intn(2) == 0 {
				v := present[rng.Intn(len(present))]
				b.Append(v)
				ops = append(ops, Delete)
				if truth[g][v]--; truth[g][v] == 0 {
					delete(truth[g], v)
				}
			} else {
				v := fmt.Sprintf("v%02d", rng.Intn(12))
				b.Append(v)
				ops = append(ops, Insert)
				truth[g][v]++
			}
			gids = append(gids, g)
		}
		col := b.NewArray()
		b.Release()
		for _, a := range []accumulator{maxA, minA, cntA} {
			a.update(gids, col, ops)
		}
		col.Release() // poisons the batch's bytes
		slots := []int32{0, 1, 2, 3}
		mx, mn, cn := maxA.result(slots, mem), minA.result(slots, mem), cntA.result(slots, mem)
		for g := 0; g < groups; g++ {
			var vals []string
			for v := range truth[g] {
				vals = append(vals, v)
			}
			sort.Strings(vals)
			if n := cn.(*array.Int64).Value(g); n != int64(len(vals)) {
				t.Fatalf("batch %d group %d: COUNT(DISTINCT) %d, want %d %v", batch, g, n, len(vals), vals)
			}
			if len(vals) == 0 {
				if mx.IsValid(g) || mn.IsValid(g) {
					t.Fatalf("batch %d group %d: MIN/MAX of nothing is %v / %v", batch, g, mn.ValueStr(g), mx.ValueStr(g))
				}
				continue
			}
			if got := mx.(*array.String).Value(g); got != vals[len(vals)-1] {
				t.Fatalf("batch %d group %d: MAX %q, want %q", batch, g, got, vals[len(vals)-1])
			}
			if got := mn.(*array.String).Value(g); got != vals[0] {
				t.Fatalf("batch %d group %d: MIN %q, want %q", batch, g, got, vals[0])
			}
		}
		mx.Release()
		mn.Release()
		cn.Release()
	}
}

// TestMultisetEncodingFastPaths: the integer multisets' encoders (sorted
// by the byte-reversed value) write exactly the bytes of the generic
// encoder (sorted by encoding), and read back to the same counts, for
// random values of every sign and magnitude, including empty multisets and
// ones large enough to be radix sorted.
func TestMultisetEncodingFastPaths(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	val := func() int64 {
		switch rng.Intn(4) {
		case 0:
			return rng.Int63n(512) - 256
		case 1:
			return rng.Int63()
		case 2:
			return -rng.Int63()
		}
		return int64(rng.Uint32())<<8 | int64(rng.Intn(256))
	}
	for iter := 0; iter < 200; iter++ {
		var m64 multiset[int64]
		var mts multiset[arrow.Timestamp]
		var m32 multiset[int32]
		n := rng.Intn(300)
		switch {
		case iter == 0:
			n = 0
		case iter%8 == 1: // radix sorted
			n = 300 + rng.Intn(5000)
		}
		// rounds of changes between encodings (each encoding keeps its
		// order for the next: values only added, counts changed, values
		// removed and indexes reused)
		for round := 0; round < 4; round++ {
			inserts := round%2 == 1 // only new values or count increases
			for i := 0; i < n; i++ {
				v, c := val(), rng.Int63n(5)-2
				if inserts {
					c = 1 + rng.Int63n(2)
				}
				m64.add(v, c)
				mts.add(arrow.Timestamp(v), c)
				m32.add(int32(v), c)
			}
			checkMultisetEncoding(t, &m64)
			checkMultisetEncoding(t, &mts)
			checkMultisetEncoding(t, &m32)
			n = rng.Intn(n + 1)
		}
	}
}

func checkMultisetEncoding[T int64 | int32 | arrow.Timestamp](t *testing.T, m *multiset[T]) {
	t.Helper()
	got := appendMultiset([]byte{9}, m)
	want := appendMultisetEncoded(binary.AppendUvarint([]byte{9}, uint64(m.len())), m)
	if !bytes.Equal(got, want) {
		t.Fatalf("%T: fast encoding differs from the generic one:\n%x\n%x", m, got, want)
	}
	back, n, err := readMultiset[T](got[1:])
	if err != nil || n != len(got)-1 {
		t.Fatalf("%T: read back: %d of %d bytes, %v", m, n, len(got)-1, err)
	}
	if back.len() != m.len() {
		t.Fatalf("%T: read back %d values, want %d", m, back.len(), m.len())
	}
	m.each(func(v T, c int64) {
		if i, ok := back.find(v); !ok || back.cnt[i] != c {
			t.Fatalf("%T: value %v: count %d lost (read back: %v)", m, v, c, ok)
		}
	})
}
