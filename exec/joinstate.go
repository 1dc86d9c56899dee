package exec

import (
	"encoding/binary"
	"math"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
)

// decodeColumn appends to b the next column of every encoded row (the
// encoding of encodeKeyColumns: a null flag, then a fixed-width value or a
// 4-byte length and the bytes of a string); cur[r] is row r's read
// position, advanced past the column. One type dispatch per column, a
// typed loop over the rows.
func decodeColumn(b array.Builder, rows [][]byte, cur []int) {
	b.Reserve(len(rows))
	switch bb := b.(type) {
	case *array.Int8Builder:
		for r, row := range rows {
			p := cur[r]
			if row[p] == 0 {
				bb.AppendNull()
			} else {
				bb.Append(int8(int32(binary.LittleEndian.Uint32(row[p+1:]))))
			}
			cur[r] = p + 5
		}
	case *array.Int16Builder:
		for r, row := range rows {
			p := cur[r]
			if row[p] == 0 {
				bb.AppendNull()
			} else {
				bb.Append(int16(int32(binary.LittleEndian.Uint32(row[p+1:]))))
			}
			cur[r] = p + 5
		}
	case *array.Int32Builder:
		for r, row := range rows {
			p := cur[r]
			if row[p] == 0 {
				bb.AppendNull()
			} else {
				bb.Append(int32(binary.LittleEndian.Uint32(row[p+1:])))
			}
			cur[r] = p + 5
		}
	case *array.Date32Builder:
		for r, row := range rows {
			p := cur[r]
			if row[p] == 0 {
				bb.AppendNull()
			} else {
				bb.Append(arrow.Date32(binary.LittleEndian.Uint32(row[p+1:])))
			}
			cur[r] = p + 5
		}
	case *array.Time32Builder:
		for r, row := range rows {
			p := cur[r]
			if row[p] == 0 {
				bb.AppendNull()
			} else {
				bb.Append(arrow.Time32(binary.LittleEndian.Uint32(row[p+1:])))
			}
			cur[r] = p + 5
		}
	case *array.MonthIntervalBuilder:
		for r, row := range rows {
			p := cur[r]
			if row[p] == 0 {
				bb.AppendNull()
			} else {
				bb.Append(arrow.MonthInterval(binary.LittleEndian.Uint32(row[p+1:])))
			}
			cur[r] = p + 5
		}
	case *array.Int64Builder:
		for r, row := range rows {
			p := cur[r]
			if row[p] == 0 {
				bb.AppendNull()
			} else {
				bb.Append(int64(binary.LittleEndian.Uint64(row[p+1:])))
			}
			cur[r] = p + 9
		}
	case *array.TimestampBuilder:
		for r, row := range rows {
			p := cur[r]
			if row[p] == 0 {
				bb.AppendNull()
			} else {
				bb.Append(arrow.Timestamp(binary.LittleEndian.Uint64(row[p+1:])))
			}
			cur[r] = p + 9
		}
	case *array.DurationBuilder:
		for r, row := range rows {
			p := cur[r]
			if row[p] == 0 {
				bb.AppendNull()
			} else {
				bb.Append(arrow.Duration(binary.LittleEndian.Uint64(row[p+1:])))
			}
			cur[r] = p + 9
		}
	case *array.Float32Builder:
		for r, row := range rows {
			p := cur[r]
			if row[p] == 0 {
				bb.AppendNull()
			} else {
				bb.Append(float32(math.Float64frombits(binary.LittleEndian.Uint64(row[p+1:]))))
			}
			cur[r] = p + 9
		}
	case *array.Float64Builder:
		for r, row := range rows {
			p := cur[r]
			if row[p] == 0 {
				bb.AppendNull()
			} else {
				bb.Append(math.Float64frombits(binary.LittleEndian.Uint64(row[p+1:])))
			}
			cur[r] = p + 9
		}
	case *array.Decimal128Builder:
		for r, row := range rows {
			p := cur[r]
			if row[p] == 0 {
				bb.AppendNull()
			} else {
				lo := binary.LittleEndian.Uint64(row[p+1:])
				hi := int64(binary.LittleEndian.Uint64(row[p+9:]))
				bb.Append(decimal128.New(hi, lo))
			}
			cur[r] = p + 17
		}
	case *array.BooleanBuilder:
		for r, row := range rows {
			p := cur[r]
			if row[p] == 0 {
				bb.AppendNull()
			} else {
				bb.Append(row[p+1] == 1)
			}
			cur[r] = p + 2
		}
	case *array.StringBuilder:
		for r, row := range rows {
			p := cur[r]
			l := int(binary.LittleEndian.Uint32(row[p+1:]))
			if row[p] == 0 {
				bb.AppendNull()
			} else {
				bb.BinaryBuilder.Append(row[p+5 : p+5+l]) // copied, no string per row
			}
			cur[r] = p + 5 + l
		}
	default:
		for range rows {
			b.AppendNull()
		}
	}
}
