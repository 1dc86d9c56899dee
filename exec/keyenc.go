package exec

import (
	"encoding/binary"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// encodeKeyColumns writes each row's key (columns keys of rec) as bytes:
// per column a null flag then a fixed-width value, or a length-prefixed
// string. Row i's key is buf[offs[i]:offs[i+1]]; buf and offs are reused.
// A NULL is a zero flag and a zeroed payload of the same width.
func encodeKeyColumns(rec arrow.Record, keys []int, keyBuf []byte, keyOffs []int) ([]byte, []int) {
	return encodeKeyRows(rec, keys, nil, keyBuf, keyOffs)
}

// encodeKeyRows is encodeKeyColumns of the rows sel (nil: every row):
// key j, of row sel[j], is buf[offs[j]:offs[j+1]].
func encodeKeyRows(rec arrow.Record, keys []int, sel []int32, keyBuf []byte, keyOffs []int) ([]byte, []int) {
	n := int(rec.NumRows())
	if sel != nil {
		n = len(sel)
	}
	if cap(keyOffs) < 2*n+1 {
		keyOffs = make([]int, 2*n+1)
	}
	offs := keyOffs[:n+1]
	for i := range offs {
		offs[i] = 0
	}
	// lengths into offs[i+1]
	for _, k := range keys {
		col := rec.Column(k)
		if s, ok := col.(*array.String); ok {
			// a NULL is 5 bytes whatever its slot's offsets say
			vo := s.ValueOffsets()
			nm, nulls := nullsOf(col)
			for j := 0; j < n; j++ {
				i := rowOf(sel, j)
				if nulls && nm.null(i) {
					offs[j+1] += 5
					continue
				}
				offs[j+1] += 5 + int(vo[i+1]-vo[i])
			}
			continue
		}
		w := 1 + fixedWidth(col.DataType())
		for i := 0; i < n; i++ {
			offs[i+1] += w
		}
	}
	for i := 0; i < n; i++ {
		offs[i+1] += offs[i]
	}
	if cap(keyBuf) < offs[n] {
		keyBuf = make([]byte, offs[n])
	}
	buf := keyBuf[:offs[n]]
	cur := keyOffs[n+1 : 2*n+1] // each row's write position (reused)
	copy(cur, offs[:n])
	for _, k := range keys {
		encodeKeyColumn(rec.Column(k), sel, buf, cur)
	}
	return buf, offs
}

// encodeKeyColumn appends the encoding of col's row j (sel[j] with a
// selection) at cur[j] and advances cur[j]: one typed loop per column, no
// per-row type switch.
func encodeKeyColumn(col arrow.Array, sel []int32, buf []byte, cur []int) {
	nm, nulls := nullsOf(col)
	switch c := col.(type) {
	case *array.Int64:
		putKeys64(buf, cur, sel, c.Int64Values(), nm, nulls)
	case *array.Timestamp:
		putKeys64(buf, cur, sel, c.TimestampValues(), nm, nulls)
	case *array.Duration:
		putKeys64(buf, cur, sel, c.DurationValues(), nm, nulls)
	case *array.Int32:
		putKeys32(buf, cur, sel, c.Int32Values(), nm, nulls)
	case *array.Date32:
		putKeys32(buf, cur, sel, c.Date32Values(), nm, nulls)
	case *array.Time32:
		putKeys32(buf, cur, sel, c.Time32Values(), nm, nulls)
	case *array.MonthInterval:
		putKeys32(buf, cur, sel, c.MonthIntervalValues(), nm, nulls)
	case *array.Int16:
		putKeys32(buf, cur, sel, c.Int16Values(), nm, nulls)
	case *array.Int8:
		putKeys32(buf, cur, sel, c.Int8Values(), nm, nulls)
	case *array.Float64:
		putKeysFloat(buf, cur, sel, c.Float64Values(), nm, nulls)
	case *array.Float32:
		putKeysFloat(buf, cur, sel, c.Float32Values(), nm, nulls)
	case *array.String:
		putKeysString(buf, cur, sel, c, nm, nulls)
	case *array.Decimal128:
		for j, p := range cur {
			i := rowOf(sel, j)
			if nulls && nm.null(i) {
				cur[j] = putNullKey(buf, p, 17)
				continue
			}
			v := c.Value(i)
			buf[p] = 1
			binary.LittleEndian.PutUint64(buf[p+1:], v.LowBits())
			binary.LittleEndian.PutUint64(buf[p+9:], uint64(v.HighBits()))
			cur[j] = p + 17
		}
	case *array.Boolean:
		for j, p := range cur {
			i := rowOf(sel, j)
			if nulls && nm.null(i) {
				cur[j] = putNullKey(buf, p, 2)
				continue
			}
			buf[p], buf[p+1] = 1, 0
			if c.Value(i) {
				buf[p+1] = 1
			}
			cur[j] = p + 2
		}
	default: // no payload (fixedWidth 0): the flag only
		for j, p := range cur {
			buf[p] = 1
			if nulls && nm.null(rowOf(sel, j)) {
				buf[p] = 0
			}
			cur[j] = p + 1
		}
	}
}

// putNullKey writes a NULL of w bytes (flag and payload) at p.
func putNullKey(buf []byte, p, w int) int {
	clear(buf[p : p+w])
	return p + w
}

// putKeys64 appends a flag and each 8-byte value at cur[j].
func putKeys64[T ~int64](buf []byte, cur []int, sel []int32, vals []T, nm nullMask, nulls bool) {
	for j, p := range cur {
		i := rowOf(sel, j)
		if nulls && nm.null(i) {
			cur[j] = putNullKey(buf, p, 9)
			continue
		}
		buf[p] = 1
		binary.LittleEndian.PutUint64(buf[p+1:], uint64(vals[i]))
		cur[j] = p + 9
	}
}

// putKeys32 appends a flag and each 4-byte value at cur[j] (TINYINT and
// SMALLINT widened to 4 bytes, as the hash exchange widens them).
func putKeys32[T ~int8 | ~int16 | ~int32](buf []byte, cur []int, sel []int32, vals []T, nm nullMask, nulls bool) {
	for j, p := range cur {
		i := rowOf(sel, j)
		if nulls && nm.null(i) {
			cur[j] = putNullKey(buf, p, 5)
			continue
		}
		buf[p] = 1
		binary.LittleEndian.PutUint32(buf[p+1:], uint32(int32(vals[i])))
		cur[j] = p + 5
	}
}

// putKeysFloat appends a flag and each value's canonical 8-byte bits (a
// FLOAT widened to DOUBLE: -0 and NaNs encode as 0 and one NaN).
func putKeysFloat[T float32 | float64](buf []byte, cur []int, sel []int32, vals []T, nm nullMask, nulls bool) {
	for j, p := range cur {
		i := rowOf(sel, j)
		if nulls && nm.null(i) {
			cur[j] = putNullKey(buf, p, 9)
			continue
		}
		buf[p] = 1
		binary.LittleEndian.PutUint64(buf[p+1:], canonicalFloatBits(float64(vals[i])))
		cur[j] = p + 9
	}
}

// putKeysString appends a flag, a 4-byte length and each string's bytes.
func putKeysString(buf []byte, cur []int, sel []int32, c *array.String, nm nullMask, nulls bool) {
	vo := c.ValueOffsets()
	data, base := c.ValueBytes(), vo[0] // ValueBytes starts at the first offset
	for j, p := range cur {
		i := rowOf(sel, j)
		if nulls && nm.null(i) {
			cur[j] = putNullKey(buf, p, 5)
			continue
		}
		s := data[vo[i]-base : vo[i+1]-base]
		buf[p] = 1
		binary.LittleEndian.PutUint32(buf[p+1:], uint32(len(s)))
		cur[j] = p + 5 + copy(buf[p+5:], s)
	}
}

// rowOf is the row of key j: sel[j], or j without a selection.
func rowOf(sel []int32, j int) int {
	if sel != nil {
		return int(sel[j])
	}
	return j
}

func fixedWidth(dt arrow.DataType) int {
	switch dt.ID() {
	case arrow.INT32, arrow.INT8, arrow.INT16, arrow.DATE32, arrow.TIME32, arrow.INTERVAL_MONTHS:
		return 4
	case arrow.INT64, arrow.TIMESTAMP, arrow.FLOAT64, arrow.FLOAT32, arrow.DURATION:
		return 8
	case arrow.DECIMAL128:
		return 16
	case arrow.BOOL:
		return 1
	}
	return 0
}
