package exec

import (
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
)

// scalar is the set of Go types keyed state holds, one per SQL type:
// bool, int32, int64, float64, decimal128.Num, string, arrow.Timestamp.
type scalar interface {
	bool | int32 | int64 | float64 | decimal128.Num | string | arrow.Timestamp
}

// valuesOf returns the values of col as []T (T must match the column's
// storage). Strings are views into the Arrow buffer: clone before keeping.
// scratch is reused for types without a contiguous value slice, and for
// the types state keeps widened (see stateType): TINYINT and SMALLINT as
// int32, FLOAT as float64; DATE, TIME and INTERVAL YEAR TO MONTH are int32
// views, INTERVAL DAY TO SECOND an int64 view.
func valuesOf[T scalar](col arrow.Array, scratch []T) []T {
	switch a := col.(type) {
	case *array.Int8:
		s := any(scratch).([]int32)[:0]
		for _, v := range a.Int8Values() {
			s = append(s, int32(v))
		}
		return any(s).([]T)
	case *array.Int16:
		s := any(scratch).([]int32)[:0]
		for _, v := range a.Int16Values() {
			s = append(s, int32(v))
		}
		return any(s).([]T)
	case *array.Float32:
		s := any(scratch).([]float64)[:0]
		for _, v := range a.Float32Values() {
			s = append(s, float64(v))
		}
		return any(s).([]T)
	case *array.Date32:
		return any(arrow.Int32Traits.CastFromBytes(arrow.Date32Traits.CastToBytes(a.Date32Values()))).([]T)
	case *array.Time32:
		return any(arrow.Int32Traits.CastFromBytes(arrow.Time32Traits.CastToBytes(a.Time32Values()))).([]T)
	case *array.MonthInterval:
		return any(arrow.Int32Traits.CastFromBytes(arrow.MonthIntervalTraits.CastToBytes(a.MonthIntervalValues()))).([]T)
	case *array.Duration:
		return any(arrow.Int64Traits.CastFromBytes(arrow.DurationTraits.CastToBytes(a.DurationValues()))).([]T)
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
		switch dt.ID() {
		case arrow.INT8:
			b := array.NewInt8Builder(mem)
			defer b.Release()
			for i, x := range v {
				if valid != nil && !valid[i] {
					b.AppendNull()
				} else {
					b.Append(int8(x))
				}
			}
			return b.NewArray()
		case arrow.INT16:
			b := array.NewInt16Builder(mem)
			defer b.Release()
			for i, x := range v {
				if valid != nil && !valid[i] {
					b.AppendNull()
				} else {
					b.Append(int16(x))
				}
			}
			return b.NewArray()
		case arrow.DATE32, arrow.TIME32, arrow.INTERVAL_MONTHS:
			return retype(buildArray(mem, arrow.PrimitiveTypes.Int32, vals, valid), dt)
		}
		b := array.NewInt32Builder(mem)
		defer b.Release()
		b.AppendValues(v, valid)
		return b.NewArray()
	case []int64:
		if dt.ID() == arrow.DURATION {
			return retype(buildArray(mem, arrow.PrimitiveTypes.Int64, vals, valid), dt)
		}
		b := array.NewInt64Builder(mem)
		defer b.Release()
		b.AppendValues(v, valid)
		return b.NewArray()
	case []float64:
		if dt.ID() == arrow.FLOAT32 {
			b := array.NewFloat32Builder(mem)
			defer b.Release()
			for i, x := range v {
				if valid != nil && !valid[i] {
					b.AppendNull()
				} else {
					b.Append(float32(x))
				}
			}
			return b.NewArray()
		}
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

// retype gives the buffers of a (same layout) the type dt; a is released.
func retype(a arrow.Array, dt arrow.DataType) arrow.Array {
	d := a.Data()
	nd := array.NewData(dt, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
	a.Release()
	out := array.MakeFromData(nd)
	nd.Release()
	return out
}

// stateKind is the kind whose Go type keyed state uses for values of kind
// k (see valuesOf).
func stateKind(k catalog.Kind) catalog.Kind {
	switch k {
	case catalog.KindTinyInt, catalog.KindSmallInt, catalog.KindDate, catalog.KindTime, catalog.KindIntervalYM:
		return catalog.KindInt
	case catalog.KindFloat:
		return catalog.KindDouble
	case catalog.KindTimestampLTZ:
		return catalog.KindTimestamp
	case catalog.KindIntervalDT:
		return catalog.KindBigInt
	}
	return k
}

// cloneScalar copies strings out of Arrow buffers so state may keep them.
func cloneScalar[T scalar](v T) T {
	if s, ok := any(v).(string); ok {
		return any(strings.Clone(s)).(T)
	}
	return v
}
