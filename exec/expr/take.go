package expr

import (
	"bytes"
	"fmt"
	"math/bits"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// FilterRecord keeps the rows of rec where mask is true (NULL counts as
// false). It returns a new record, or rec with one more reference when every
// row passes. mask must have rec.NumRows() rows.
func FilterRecord(rec arrow.Record, mask *array.Boolean, mem memory.Allocator) (arrow.Record, error) {
	n := int(rec.NumRows())
	if mask.Len() != n {
		return nil, fmt.Errorf("filter mask has %d rows, the batch has %d", mask.Len(), n)
	}
	vals, voff := boolBits(mask)
	vbits, boff, allNull := bitsOf(mask)
	idx := make([]int32, 0, n)
	if !allNull && vals != nil {
		// a word (64 rows) at a time: the TRUE and valid rows' indices
		for w := 0; w < (n+63)/64; w++ {
			m := BitWord(vals, voff, w, n)
			if vbits != nil {
				m &= BitWord(vbits, boff, w, n)
			}
			for ; m != 0; m &= m - 1 {
				idx = append(idx, int32(w<<6+bits.TrailingZeros64(m)))
			}
		}
	}
	if len(idx) == n {
		rec.Retain()
		return rec, nil
	}
	return TakeRecord(rec, idx, mem), nil
}

// TakeRecord gathers the rows idx of rec (in that order, repeats allowed)
// into a new record with the same schema. Every index must be in range.
func TakeRecord(rec arrow.Record, idx []int32, mem memory.Allocator) arrow.Record {
	cols := make([]arrow.Array, rec.NumCols())
	runs := runsOf(idx, nil)
	for i := range cols {
		c := rec.Column(i)
		cols[i] = gatherWith(c.DataType(), []arrow.Array{c}, nil, idx, runs, mem)
	}
	out := NewRecord(rec.Schema(), cols, int64(len(idx)))
	for _, c := range cols {
		c.Release()
	}
	return out
}

// takeColumns is TakeRecord for the columns cols marks (nil: all); every
// other column is a slice of the input of len(idx) rows (no copy), for
// evaluators that do not read it.
func takeColumns(rec arrow.Record, cols []bool, idx []int32, mem memory.Allocator) arrow.Record {
	if cols == nil {
		return TakeRecord(rec, idx, mem)
	}
	out := make([]arrow.Array, rec.NumCols())
	runs := runsOf(idx, nil)
	for i := range out {
		if i < len(cols) && cols[i] {
			c := rec.Column(i)
			out[i] = gatherWith(c.DataType(), []arrow.Array{c}, nil, idx, runs, mem)
		} else {
			out[i] = array.NewSlice(rec.Column(i), 0, int64(len(idx)))
		}
	}
	r := NewRecord(rec.Schema(), out, int64(len(idx)))
	for _, c := range out {
		c.Release()
	}
	return r
}

// takeArray gathers rows idx of a; an index of -1 gives NULL.
func takeArray(a arrow.Array, idx []int32, mem memory.Allocator) arrow.Array {
	return gather(a.DataType(), []arrow.Array{a}, nil, idx, mem)
}

// gather builds an array of type dt with len(rows) rows where row i is
// srcs[which[i]][rows[i]] (which == nil means source 0) and a negative
// rows[i] gives NULL. All sources have type dt.
func gather(dt arrow.DataType, srcs []arrow.Array, which []uint16, rows []int32, mem memory.Allocator) arrow.Array {
	return gatherWith(dt, srcs, which, rows, runsOf(rows, which), mem)
}

// srcBits is a gather source's validity (bitsOf).
type srcBits struct {
	bits    []byte
	off     int
	allNull bool
}

// gatherWith is gather with the runs of rows (runsOf; nil: none), found
// once for all the columns of a record.
func gatherWith(dt arrow.DataType, srcs []arrow.Array, which []uint16, rows []int32, runs []rowRun, mem memory.Allocator) arrow.Array {
	n := len(rows)
	// Validity first: shared by every type.
	sb := make([]srcBits, len(srcs))
	needValidity := false
	for k, s := range srcs {
		b, off, an := bitsOf(s)
		sb[k] = srcBits{b, off, an}
		if b != nil || an {
			needValidity = true
		}
	}
	if runs == nil {
		for _, r := range rows {
			if r < 0 {
				needValidity = true
				break
			}
		}
	} else if needValidity && runsValid(runs, sb) {
		// the rows taken are all valid (a filter's rows of one kind of
		// event, whose fields are NULL only in the other kinds' rows)
		needValidity = false
	}
	var vbuf *memory.Buffer
	if needValidity {
		var vb []byte
		vbuf, vb = allocBits(mem, n)
		if which == nil {
			gatherBits(vb, sb[0], rows)
		} else {
			for i, r := range rows {
				k := int(which[i])
				if r >= 0 && !sb[k].allNull && isValid(sb[k].bits, sb[k].off, int(r)) {
					bitutil.SetBit(vb, i)
				}
			}
		}
	}
	switch dt.ID() {
	case arrow.INT8:
		return gatherFixed[int8](dt, srcs, which, rows, vbuf, mem, runs)
	case arrow.INT16:
		return gatherFixed[int16](dt, srcs, which, rows, vbuf, mem, runs)
	case arrow.FLOAT32:
		return gatherFixed[float32](dt, srcs, which, rows, vbuf, mem, runs)
	case arrow.INT32, arrow.DATE32, arrow.TIME32, arrow.INTERVAL_MONTHS:
		return gatherFixed[int32](dt, srcs, which, rows, vbuf, mem, runs)
	case arrow.INT64, arrow.DURATION:
		return gatherFixed[int64](dt, srcs, which, rows, vbuf, mem, runs)
	case arrow.STRUCT:
		st := dt.(*arrow.StructType)
		kids := make([]arrow.ArrayData, st.NumFields())
		ks := make([]arrow.Array, len(srcs))
		for f := range kids {
			for k, src := range srcs {
				ks[k] = src.(*array.Struct).Field(f)
			}
			ka := gatherWith(st.Field(f).Type, ks, which, rows, runs, mem)
			kids[f] = ka.Data()
			kids[f].Retain()
			ka.Release()
		}
		nulls := 0
		if vbuf != nil {
			nulls = n - bitutil.CountSetBits(vbuf.Bytes(), 0, n)
		}
		d := array.NewData(dt, n, []*memory.Buffer{vbuf}, kids, nulls, 0)
		if vbuf != nil {
			vbuf.Release()
		}
		for _, k := range kids {
			k.Release()
		}
		a := array.MakeFromData(d)
		d.Release()
		return a
	case arrow.FLOAT64:
		return gatherFixed[float64](dt, srcs, which, rows, vbuf, mem, runs)
	case arrow.TIMESTAMP:
		return gatherFixed[arrow.Timestamp](dt, srcs, which, rows, vbuf, mem, runs)
	case arrow.DECIMAL128:
		return gatherFixed[decimal128.Num](dt, srcs, which, rows, vbuf, mem, runs)
	case arrow.BOOL:
		buf, out := allocBits(mem, n)
		type bsrc struct {
			b   []byte
			off int
		}
		bs := make([]bsrc, len(srcs))
		for k, s := range srcs {
			bs[k].b, bs[k].off = boolBits(s)
		}
		for i, r := range rows {
			if r < 0 {
				continue
			}
			k := 0
			if which != nil {
				k = int(which[i])
			}
			if bs[k].b != nil && bitutil.BitIsSet(bs[k].b, bs[k].off+int(r)) {
				bitutil.SetBit(out, i)
			}
		}
		return makeArray(dt, n, vbuf, buf)
	case arrow.STRING:
		if runs != nil {
			return gatherStringRuns(srcs, runs, n, vbuf, mem)
		}
		if which == nil {
			return gatherString(srcs[0].(*array.String), rows, vbuf, mem)
		}
		ss := make([]*array.String, len(srcs))
		total := 0
		for k, s := range srcs {
			ss[k] = s.(*array.String)
		}
		for i, r := range rows {
			if r < 0 {
				continue
			}
			k := 0
			if which != nil {
				k = int(which[i])
			}
			total += ss[k].ValueLen(int(r))
		}
		so := newStrOut(mem, n, total)
		for i, r := range rows {
			if r < 0 {
				so.appendEmpty()
				continue
			}
			k := 0
			if which != nil {
				k = int(which[i])
			}
			so.appendString(ss[k].Value(int(r)))
		}
		return so.finish(vbuf)
	case arrow.NULL:
		if vbuf != nil {
			vbuf.Release()
		}
		return array.NewNull(n)
	}
	if vbuf != nil {
		vbuf.Release()
	}
	panic(fmt.Sprintf("expr: cannot gather values of type %s", dt))
}

// rowRun is a run of neighbouring rows: output rows [at, at+k) are rows
// [r, r+k) of source s.
type rowRun struct {
	at, r, k int32
	s        uint16
}

// runsOf returns the maximal runs of neighbouring rows from one source
// (which nil: a single source) when they are long enough on average (8
// rows) to be copied a run at a time: a filter's selection of one kind of
// event from a source's batch, or a CASE whose branches come in runs (the
// nexmark source's computed dateTime: a bid's for 46 rows of every 50). It
// returns nil for rows with a negative row (a NULL) and for scattered rows.
func runsOf(rows []int32, which []uint16) []rowRun {
	if len(rows) < 8 {
		return nil
	}
	// counted first: scattered rows (a hash exchange's part of a batch)
	// are told apart without building runs
	n := 0
	for i := 0; i < len(rows); n++ {
		if rows[i] < 0 {
			return nil
		}
		if (n+1)*8 > len(rows) {
			return nil // scattered: the row-at-a-time loops are faster
		}
		i = runEnd(rows, which, i)
	}
	runs := make([]rowRun, 0, n)
	for i := 0; i < len(rows); {
		j := runEnd(rows, which, i)
		var s uint16
		if which != nil {
			s = which[i]
		}
		runs = append(runs, rowRun{at: int32(i), r: rows[i], k: int32(j - i), s: s})
		i = j
	}
	return runs
}

// runEnd returns the end of the run of neighbouring rows of one source
// that starts at rows[i].
func runEnd(rows []int32, which []uint16, i int) int {
	r, j := rows[i], i+1
	for j < len(rows) && rows[j] == r+int32(j-i) && (which == nil || which[j] == which[i]) {
		j++
	}
	return j
}

// runsValid reports whether every row of the runs is valid in its source's
// bitmap.
func runsValid(runs []rowRun, sb []srcBits) bool {
	for _, u := range runs {
		b := sb[u.s]
		if b.allNull {
			return false
		}
		if b.bits != nil && !allSet(b.bits, b.off+int(u.r), int(u.k)) {
			return false
		}
	}
	return true
}

// allSet reports whether bits [start, start+n) of b are all set: the
// partial bytes bit by bit, the whole ones a byte at a time (a run of a few
// dozen rows; bitutil.CountSetBits tests an unaligned run bit by bit).
func allSet(b []byte, start, n int) bool {
	i, end := start, start+n
	for ; i < end && i&7 != 0; i++ {
		if b[i>>3]&(1<<(i&7)) == 0 {
			return false
		}
	}
	for ; i+8 <= end; i += 8 {
		if b[i>>3] != 0xFF {
			return false
		}
	}
	for ; i < end; i++ {
		if b[i>>3]&(1<<(i&7)) == 0 {
			return false
		}
	}
	return true
}

// gatherStringRuns is gather of string arrays' rows by runs: bytes and
// offsets copied a run at a time.
func gatherStringRuns(srcs []arrow.Array, runs []rowRun, n int, vbuf *memory.Buffer, mem memory.Allocator) arrow.Array {
	type strSrc struct {
		offs []int32 // len+1, absolute into data
		data []byte
	}
	ss := make([]strSrc, len(srcs)) // once, not per run
	for k, s := range srcs {
		a := s.(*array.String)
		ss[k] = strSrc{a.ValueOffsets(), a.ValueBytes()}
	}
	total := 0
	for _, u := range runs {
		offs := ss[u.s].offs
		total += int(offs[u.r+u.k] - offs[u.r])
	}
	so := newStrOut(mem, n, total)
	so.grow(total)
	for _, u := range runs {
		offs, data := ss[u.s].offs, ss[u.s].data
		base := offs[0]
		r, k := int(u.r), int(u.k)
		shift := int32(len(so.data)) - offs[r]
		so.data = append(so.data, data[offs[r]-base:offs[r+k]-base]...)
		for _, o := range offs[r+1 : r+k+1] {
			so.offs = append(so.offs, o+shift)
		}
	}
	return so.finish(vbuf)
}

// gatherBits sets bit i of vb (zeroed) when row rows[i] of the source
// with validity s is valid (a negative row: NULL).
func gatherBits(vb []byte, s srcBits, rows []int32) {
	switch {
	case s.allNull:
	case s.bits == nil:
		for i, r := range rows {
			if r >= 0 {
				vb[i>>3] |= 1 << (i & 7)
			}
		}
	default:
		bits, off := s.bits, s.off
		for i, r := range rows {
			if r >= 0 {
				p := off + int(r)
				vb[i>>3] |= (bits[p>>3] >> (p & 7) & 1) << (i & 7)
			}
		}
	}
}

// SameStrings reports whether every row of c holds the same string:
// evenly spaced offsets, and the data equal to itself shifted by one
// value (a single comparison of the whole buffer instead of one per row).
func SameStrings(c *array.String) bool {
	n := c.Len()
	if n == 0 {
		return true
	}
	vo := c.ValueOffsets()
	l := vo[1] - vo[0]
	for i := 1; i < n; i++ {
		if vo[i+1]-vo[i] != l {
			return false
		}
	}
	data := c.ValueBytes() // the rows' bytes: vo[0] to vo[n]
	return bytes.Equal(data[l:], data[:len(data)-int(l)])
}

// gatherString is gather of one string source without runs: the sizes
// from the offsets, then one copy a row into a buffer of the total size.
func gatherString(src *array.String, rows []int32, vbuf *memory.Buffer, mem memory.Allocator) arrow.Array {
	offs, data := src.ValueOffsets(), src.ValueBytes()
	if len(rows) > 1 && src.Len() > 0 && src.NullN() == 0 && SameStrings(src) {
		return gatherOneString(data[:offs[1]-offs[0]], rows, vbuf, mem)
	}
	base := offs[0]
	total := 0
	for _, r := range rows {
		if r >= 0 {
			total += int(offs[r+1] - offs[r])
		}
	}
	so := newStrOut(mem, len(rows), total)
	so.grow(total)
	out, o := so.data[:total], so.offs[:len(rows)+1]
	o[0] = 0
	at := int32(0)
	for i, r := range rows {
		if r >= 0 {
			at += int32(copy(out[at:], data[offs[r]-base:offs[r+1]-base]))
		}
		o[i+1] = at
	}
	so.data, so.offs = out, o
	return so.finish(vbuf)
}

// gatherOneString is gatherString of a source whose every row holds v
// (a batch's DATE_FORMAT day): v repeated by doubling copies, no copy
// a row.
func gatherOneString(v []byte, rows []int32, vbuf *memory.Buffer, mem memory.Allocator) arrow.Array {
	l := int32(len(v))
	m := 0
	for _, r := range rows {
		m += int(uint32(r)>>31 ^ 1) // r >= 0
	}
	total := m * int(l)
	so := newStrOut(mem, len(rows), total)
	so.grow(total)
	out, o := so.data[:total], so.offs[:len(rows)+1]
	if total > 0 {
		for at := copy(out, v); at < total; {
			at += copy(out[at:], out[:at])
		}
	}
	o[0] = 0
	at := int32(0)
	for i, r := range rows {
		if r >= 0 {
			at += l
		}
		o[i+1] = at
	}
	so.data, so.offs = out, o
	return so.finish(vbuf)
}

func gatherFixed[T any](dt arrow.DataType, srcs []arrow.Array, which []uint16, rows []int32, vbuf *memory.Buffer, mem memory.Allocator, runs []rowRun) arrow.Array {
	buf, out := allocFixed[T](mem, len(rows))
	if runs != nil {
		vs := make([][]T, len(srcs)) // typed once, not per run
		for k, s := range srcs {
			vs[k] = values[T](s)
		}
		for _, u := range runs {
			copy(out[u.at:u.at+u.k], vs[u.s][u.r:u.r+u.k])
		}
		return makeArray(dt, len(rows), vbuf, buf)
	}
	if len(srcs) == 1 {
		src := values[T](srcs[0])
		for i, r := range rows {
			if r >= 0 {
				out[i] = src[r]
			}
		}
		return makeArray(dt, len(rows), vbuf, buf)
	}
	vs := make([][]T, len(srcs))
	for k, s := range srcs {
		vs[k] = values[T](s)
	}
	for i, r := range rows {
		if r >= 0 {
			out[i] = vs[which[i]][r]
		}
	}
	return makeArray(dt, len(rows), vbuf, buf)
}

// Broadcast repeats the single row of a 1-row array n times (a new array
// the caller releases).
func Broadcast(a arrow.Array, n int, mem memory.Allocator) arrow.Array {
	if a.DataType().ID() == arrow.NULL {
		return array.NewNull(n)
	}
	if a.IsNull(0) {
		return allNull(a.DataType(), n, mem)
	}
	switch a.DataType().ID() {
	case arrow.INT8:
		return fill(a.DataType(), values[int8](a)[0], n, mem)
	case arrow.INT16:
		return fill(a.DataType(), values[int16](a)[0], n, mem)
	case arrow.FLOAT32:
		return fill(a.DataType(), values[float32](a)[0], n, mem)
	case arrow.INT32, arrow.DATE32, arrow.TIME32, arrow.INTERVAL_MONTHS:
		return fill(a.DataType(), values[int32](a)[0], n, mem)
	case arrow.INT64, arrow.DURATION:
		return fill(a.DataType(), values[int64](a)[0], n, mem)
	case arrow.FLOAT64:
		return fill(a.DataType(), values[float64](a)[0], n, mem)
	case arrow.TIMESTAMP:
		return fill(a.DataType(), values[arrow.Timestamp](a)[0], n, mem)
	case arrow.DECIMAL128:
		return fill(a.DataType(), values[decimal128.Num](a)[0], n, mem)
	case arrow.BOOL:
		buf, out := allocBits(mem, n)
		if a.(*array.Boolean).Value(0) {
			bitutil.SetBitsTo(out, 0, int64(n), true)
		}
		return makeArray(a.DataType(), n, nil, buf)
	}
	rows := make([]int32, n)
	return gather(a.DataType(), []arrow.Array{a}, nil, rows, mem)
}

func fill[T any](dt arrow.DataType, v T, n int, mem memory.Allocator) arrow.Array {
	buf, out := allocFixed[T](mem, n)
	for i := range out {
		out[i] = v
	}
	return makeArray(dt, n, nil, buf)
}

// allNull returns an array of n NULLs of type dt.
func allNull(dt arrow.DataType, n int, mem memory.Allocator) arrow.Array {
	if dt.ID() == arrow.NULL {
		return array.NewNull(n)
	}
	rows := make([]int32, n)
	for i := range rows {
		rows[i] = -1
	}
	src := emptyArray(dt, mem)
	defer src.Release()
	return gather(dt, []arrow.Array{src}, nil, rows, mem)
}
