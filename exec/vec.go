package exec

import (
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// scalar is the set of Go types keyed state holds, one per SQL type:
// bool, int32, int64, float64, decimal128.Num, string, arrow.Timestamp.
type scalar interface {
	bool | int32 | int64 | float64 | decimal128.Num | string | arrow.Timestamp
}

// valuesOf returns the values of col as []T (T must match the column's
// storage). Strings are views into the Arrow buffer: clone before keeping.
// scratch is reused for types without a contiguous value slice.
func valuesOf[T scalar](col arrow.Array, scratch []T) []T {
	switch a := col.(type) {
	case *array.Int32:
		return any(a.Int32Values()).([]T)
	case *array.Int64:
		return any(a.Int64Values()).([]T)
	case *array.Float64:
		return any(a.Float64Values()).([]T)
	case *array.Timestamp:
		return any(a.TimestampValues()).([]T)
	case *array.Decimal128:
		return any(a.Values()).([]T)
	case *array.String:
		s := any(scratch).([]string)[:0]
		for i := 0; i < a.Len(); i++ {
			s = append(s, a.Value(i))
		}
		return any(s).([]T)
	case *array.Boolean:
		s := any(scratch).([]bool)[:0]
		for i := 0; i < a.Len(); i++ {
			s = append(s, a.Value(i))
		}
		return any(s).([]T)
	}
	panic(fmt.Sprintf("valuesOf: unsupported column %s", col.DataType()))
}

// buildArray builds an Arrow array of type dt from vals; valid == nil means
// all valid.
func buildArray[T scalar](mem memory.Allocator, dt arrow.DataType, vals []T, valid []bool) arrow.Array {
	switch v := any(vals).(type) {
	case []int32:
		b := array.NewInt32Builder(mem)
		defer b.Release()
		b.AppendValues(v, valid)
		return b.NewArray()
	case []int64:
		b := array.NewInt64Builder(mem)
		defer b.Release()
		b.AppendValues(v, valid)
		return b.NewArray()
	case []float64:
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		b.AppendValues(v, valid)
		return b.NewArray()
	case []arrow.Timestamp:
		b := array.NewTimestampBuilder(mem, dt.(*arrow.TimestampType))
		defer b.Release()
		b.AppendValues(v, valid)
		return b.NewArray()
	case []decimal128.Num:
		b := array.NewDecimal128Builder(mem, dt.(*arrow.Decimal128Type))
		defer b.Release()
		b.AppendValues(v, valid)
		return b.NewArray()
	case []string:
		b := array.NewStringBuilder(mem)
		defer b.Release()
		b.AppendValues(v, valid)
		return b.NewArray()
	case []bool:
		b := array.NewBooleanBuilder(mem)
		defer b.Release()
		b.AppendValues(v, valid)
		return b.NewArray()
	}
	panic("buildArray: unsupported type")
}

// cloneScalar copies strings out of Arrow buffers so state may keep them.
func cloneScalar[T scalar](v T) T {
	if s, ok := any(v).(string); ok {
		return any(strings.Clone(s)).(T)
	}
	return v
}
