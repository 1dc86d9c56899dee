package exec

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// refKey is the key encoding row by row (what encodeKeyColumns's typed
// loops must write; the keys are state keys in checkpoints, so the bytes
// may not change): per column a flag (1, or 0 for NULL with a zeroed
// payload), then the value: 4 bytes for the 32-bit and narrower
// integers, 8 for 64-bit ones and floats (canonical bits of the DOUBLE),
// 16 for decimals, 1 for booleans, a 4-byte length and the bytes for a
// string, nothing for other types.
func refKey(dst []byte, cols []arrow.Array, i int) []byte {
	for _, col := range cols {
		w := 1 + fixedWidth(col.DataType())
		if _, ok := col.(*array.String); ok {
			w = 5
		}
		if col.IsNull(i) || col.DataType().ID() == arrow.NULL { // a NULL array has no bitmap
			dst = append(dst, make([]byte, w)...)
			continue
		}
		dst = append(dst, 1)
		switch c := col.(type) {
		case *array.Int8:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(int32(c.Value(i))))
		case *array.Int16:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(int32(c.Value(i))))
		case *array.Int32:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(c.Value(i)))
		case *array.Date32:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(c.Value(i)))
		case *array.Time32:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(c.Value(i)))
		case *array.MonthInterval:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(c.Value(i)))
		case *array.Int64:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(c.Value(i)))
		case *array.Timestamp:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(c.Value(i)))
		case *array.Duration:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(c.Value(i)))
		case *array.Float32:
			dst = binary.LittleEndian.AppendUint64(dst, canonicalFloatBits(float64(c.Value(i))))
		case *array.Float64:
			dst = binary.LittleEndian.AppendUint64(dst, canonicalFloatBits(c.Value(i)))
		case *array.Decimal128:
			dst = binary.LittleEndian.AppendUint64(dst, c.Value(i).LowBits())
			dst = binary.LittleEndian.AppendUint64(dst, uint64(c.Value(i).HighBits()))
		case *array.Boolean:
			if c.Value(i) {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
		case *array.String:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(len(c.Value(i))))
			dst = append(dst, c.Value(i)...)
		}
	}
	return dst
}

// TestEncodeKeyColumnsRowByRow: the typed column loops write, for every
// key type, with NULLs (a NULL string whose slot has bytes among them),
// over sliced records, combinations of columns and selections of rows,
// the bytes of the row-by-row encoding.
func TestEncodeKeyColumnsRowByRow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const n = 300
	rng := rand.New(rand.NewSource(9))
	rec := keyRecord(t, mem, rng, n, 1<<40)
	cols := rec.Columns()
	defer rec.Release()

	var buf []byte
	var offs []int
	check := func(r arrow.Record, keys []int) {
		t.Helper()
		buf, offs = encodeKeyColumns(r, keys, buf, offs)
		kc := make([]arrow.Array, len(keys))
		for i, k := range keys {
			kc[i] = r.Column(k)
		}
		for i := 0; i < int(r.NumRows()); i++ {
			want := refKey(nil, kc, i)
			if got := buf[offs[i]:offs[i+1]]; !bytes.Equal(got, want) {
				t.Fatalf("keys %v row %d of %d: %x, want %x", keys, i, r.NumRows(), got, want)
			}
		}
		// a selection of rows, repeats and any order
		sel := make([]int32, rng.Intn(2*int(r.NumRows())+1))
		for j := range sel {
			sel[j] = int32(rng.Intn(int(r.NumRows())))
		}
		buf, offs = encodeKeyRows(r, keys, sel, buf, offs)
		if len(offs) != len(sel)+1 {
			t.Fatalf("%d offsets for %d rows", len(offs), len(sel))
		}
		for j, i := range sel {
			want := refKey(nil, kc, int(i))
			if got := buf[offs[j]:offs[j+1]]; !bytes.Equal(got, want) {
				t.Fatalf("keys %v, key %d (row %d): %x, want %x", keys, j, i, got, want)
			}
		}
	}
	all := make([]int, len(cols))
	for i := range all {
		all[i] = i
	}
	for _, r := range []arrow.Record{rec, rec.NewSlice(7, n-5), rec.NewSlice(130, 131)} {
		for c := range cols {
			check(r, []int{c})
		}
		check(r, all)
		for k := 0; k < 50; k++ {
			keys := rng.Perm(len(cols))[:1+rng.Intn(4)]
			check(r, keys)
		}
		if r != rec {
			r.Release()
		}
	}
}

// keyRecord is a seeded record of n rows with a column of each key type,
// with and without NULLs, values drawn from span values around zero,
// and a string column whose NULL slots keep bytes (Arrow allows it).
func keyRecord(t *testing.T, mem memory.Allocator, rng *rand.Rand, n int, span int64) arrow.Record {
	t.Helper()
	types := []arrow.DataType{
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64, &arrow.Decimal128Type{Precision: 20, Scale: 3},
		arrow.FixedWidthTypes.Boolean, arrow.BinaryTypes.String, arrow.FixedWidthTypes.Date32,
		arrow.FixedWidthTypes.Time32ms, &arrow.TimestampType{Unit: arrow.Millisecond}, arrow.FixedWidthTypes.Duration_ms,
		arrow.FixedWidthTypes.MonthInterval, arrow.Null,
	}
	var fields []arrow.Field
	var cols []arrow.Array
	for _, dt := range types {
		for _, withNulls := range []bool{false, true} {
			fields = append(fields, arrow.Field{Name: dt.String(), Type: dt, Nullable: true})
			b := array.NewBuilder(mem, dt)
			for i := 0; i < n; i++ {
				if dt.ID() == arrow.NULL || (withNulls && rng.Intn(4) == 0) {
					b.AppendNull()
					continue
				}
				v := rng.Int63n(span) - span/2
				switch b := b.(type) {
				case *array.Int8Builder:
					b.Append(int8(v))
				case *array.Int16Builder:
					b.Append(int16(v))
				case *array.Int32Builder:
					b.Append(int32(v))
				case *array.Int64Builder:
					b.Append(v)
				case *array.Float32Builder:
					b.Append([]float32{float32(v), float32(math.NaN()), float32(math.Copysign(0, -1))}[int(v&1)])
				case *array.Float64Builder:
					b.Append([]float64{float64(v) / 3, math.NaN(), math.Copysign(0, -1), 0}[int(v&3)])
				case *array.Decimal128Builder:
					b.Append(decimal128.New(v, uint64(v)*7))
				case *array.BooleanBuilder:
					b.Append(v > 0)
				case *array.StringBuilder:
					b.Append(string(make([]byte, v&7)) + "x")
				case *array.Date32Builder:
					b.Append(arrow.Date32(v))
				case *array.Time32Builder:
					b.Append(arrow.Time32(v))
				case *array.TimestampBuilder:
					b.Append(arrow.Timestamp(v))
				case *array.DurationBuilder:
					b.Append(arrow.Duration(v))
				case *array.MonthIntervalBuilder:
					b.Append(arrow.MonthInterval(v))
				default:
					t.Fatalf("no values for %s", dt)
				}
			}
			cols = append(cols, b.NewArray())
			b.Release()
		}
	}
	// a string column whose NULL slots keep bytes (Arrow allows it)
	sb := array.NewStringBuilder(mem)
	for i := 0; i < n; i++ {
		sb.Append(string(rune('a' + i%26)))
	}
	full := sb.NewStringArray()
	sb.Release()
	valid := memory.NewResizableBuffer(mem)
	valid.Resize((n + 7) / 8)
	for i := 0; i < n; i++ {
		if i%3 != 0 {
			valid.Bytes()[i/8] |= 1 << (i % 8)
		}
	}
	d := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{valid, full.Data().Buffers()[1], full.Data().Buffers()[2]}, nil, array.UnknownNullCount, 0)
	holey := array.NewStringData(d)
	d.Release()
	valid.Release()
	full.Release()
	if holey.NullN() == 0 || len(holey.ValueOffsets()) < 2 || holey.ValueOffsets()[1] == 0 {
		t.Fatal("the NULL slots have no bytes")
	}
	fields = append(fields, arrow.Field{Name: "holey", Type: arrow.BinaryTypes.String, Nullable: true})
	cols = append(cols, holey)

	rec := array.NewRecord(arrow.NewSchema(fields, nil), cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}
