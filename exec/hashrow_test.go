package exec

import (
	"math"
	"math/rand"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
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
	types := []arrow.DataType{
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64, &arrow.Decimal128Type{Precision: 20, Scale: 3},
		arrow.FixedWidthTypes.Boolean, arrow.BinaryTypes.String, arrow.FixedWidthTypes.Date32,
		arrow.FixedWidthTypes.Time32ms, &arrow.TimestampType{Unit: arrow.Millisecond}, arrow.FixedWidthTypes.Duration_ms,
		arrow.FixedWidthTypes.MonthInterval, arrow.Null, arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}),
	}
	fields := make([]arrow.Field, len(types))
	cols := make([]arrow.Array, len(types))
	for c, dt := range types {
		fields[c] = arrow.Field{Name: dt.String(), Type: dt, Nullable: true}
		b := array.NewBuilder(mem, dt)
		for i := 0; i < n; i++ {
			if dt.ID() == arrow.NULL || rng.Intn(5) == 0 {
				b.AppendNull()
				continue
			}
			v := rng.Int63n(40) - 20
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
				b.Append([]float32{float32(v), float32(math.NaN()), float32(math.Copysign(0, -1))}[rng.Intn(3)])
			case *array.Float64Builder:
				b.Append([]float64{float64(v) / 3, math.NaN(), math.Copysign(0, -1), 0}[rng.Intn(4)])
			case *array.Decimal128Builder:
				b.Append(decimal128.FromI64(v * 1000003))
			case *array.BooleanBuilder:
				b.Append(v > 0)
			case *array.StringBuilder:
				b.Append(string(rune('a' + v + 20)))
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
			case *array.StructBuilder:
				b.Append(true)
				b.FieldBuilder(0).(*array.Int64Builder).Append(v)
			default:
				t.Fatalf("no values for %s", dt)
			}
		}
		cols[c] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecord(arrow.NewSchema(fields, nil), cols, n)
	for _, c := range cols {
		c.Release()
	}
	defer rec.Release()
	var keySets [][]int
	for c := range types {
		keySets = append(keySets, []int{c})
	}
	for k := 0; k < 20; k++ {
		keySets = append(keySets, []int{rng.Intn(len(types)), rng.Intn(len(types)), rng.Intn(len(types))})
	}
	for _, keys := range keySets {
		want := HashKeys(rec, keys, nil)
		for i := 0; i < n; i++ {
			if got := HashRow(rec, keys, i); got != want[i] {
				t.Fatalf("keys %v (%v...), row %d: HashRow %x, HashKeys %x", keys, types[keys[0]], i, got, want[i])
			}
		}
	}
}
