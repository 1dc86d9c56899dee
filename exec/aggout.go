package exec

import (
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// The output of a group aggregation is built in one copy. Per batch each
// aggregate stages the finalized results of the touched groups as they
// were before the batch, then as they are after it, in one typed Go slice
// (old results first: index i < len(before) is an old result, the others
// new ones). Unchanged -U/+U pairs are found by comparing staged values,
// and each output column is then written straight into its Arrow buffer by
// index (takeCol). Key columns are written the same way from the key
// stores, by slot. Before, old and new results were built as Arrow
// records, concatenated, then taken: every output row copied three times.

// stagedCol is an aggregate's staged results (see above).
type stagedCol interface {
	reset()
	// diff sets changed[k] when the staged values oi[k] and ni[k] differ
	// (NULL equals NULL, NaN equals NaN).
	diff(oi, ni []int32, changed []bool)
	// take builds the output column: row r is staged value idx[r].
	take(idx []int32, mem memory.Allocator) arrow.Array
}

// staged is a stagedCol of Go type T and Arrow type dt.
type staged[T scalar] struct {
	dt    arrow.DataType
	vals  []T
	valid []bool
	nulls int
}

func (s *staged[T]) reset() { s.vals, s.valid, s.nulls = s.vals[:0], s.valid[:0], 0 }

func (s *staged[T]) add(v T, ok bool) {
	s.vals = append(s.vals, v)
	s.valid = append(s.valid, ok)
	if !ok {
		s.nulls++
	}
}

func (s *staged[T]) diff(oi, ni []int32, changed []bool) {
	vals, valid := s.vals, s.valid
	for k, i := range oi {
		if changed[k] {
			continue
		}
		j := ni[k]
		vi, vj := valid[i], valid[j]
		if !vi || !vj {
			changed[k] = vi != vj
			continue
		}
		x, y := vals[i], vals[j]
		changed[k] = x != y && !(x != x && y != y) // NaN equals NaN, as in GROUP BY
	}
}

func (s *staged[T]) take(idx []int32, mem memory.Allocator) arrow.Array {
	var valid []bool
	if s.nulls > 0 {
		valid = s.valid
	}
	return takeCol(s.vals, valid, idx, s.dt, mem)
}

// takeCol builds an Arrow array of type dt whose row r is vals[idx[r]]
// (NULL where valid is not nil and valid[idx[r]] is false), writing the
// buffers directly for the common layouts.
func takeCol[T scalar](vals []T, valid []bool, idx []int32, dt arrow.DataType, mem memory.Allocator) arrow.Array {
	switch v := any(vals).(type) {
	case []int64:
		if id := dt.ID(); id == arrow.INT64 || id == arrow.DURATION {
			return takeFixed(v, valid, idx, dt, mem)
		}
	case []int32:
		switch dt.ID() {
		case arrow.INT32, arrow.DATE32, arrow.TIME32, arrow.INTERVAL_MONTHS:
			return takeFixed(v, valid, idx, dt, mem)
		}
	case []float64:
		if dt.ID() == arrow.FLOAT64 {
			return takeFixed(v, valid, idx, dt, mem)
		}
	case []arrow.Timestamp:
		if dt.ID() == arrow.TIMESTAMP {
			return takeFixed(v, valid, idx, dt, mem)
		}
	case []decimal128.Num:
		if dt.ID() == arrow.DECIMAL128 {
			return takeFixed(v, valid, idx, dt, mem)
		}
	case []string:
		if dt.ID() == arrow.STRING {
			return takeStrings(v, valid, idx, dt, mem)
		}
	}
	// Other layouts (TINYINT, SMALLINT, FLOAT, BOOLEAN): through a builder.
	sv := make([]T, len(idx))
	var sok []bool
	if valid != nil {
		sok = make([]bool, len(idx))
	}
	for r, i := range idx {
		sv[r] = vals[i]
		if sok != nil {
			sok[r] = valid[i]
		}
	}
	return buildArray(mem, dt, sv, sok)
}

// takeValidity returns the validity bitmap of the taken rows and their
// null count (nil, 0: no NULL).
func takeValidity(valid []bool, idx []int32, mem memory.Allocator) (*memory.Buffer, int) {
	if valid == nil {
		return nil, 0
	}
	nulls := 0
	for _, i := range idx {
		if !valid[i] {
			nulls++
		}
	}
	if nulls == 0 {
		return nil, 0
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(len(idx)))))
	bits := buf.Bytes()
	for j := range bits {
		bits[j] = 0
	}
	for r, i := range idx {
		if valid[i] {
			bitutil.SetBit(bits, r)
		}
	}
	return buf, nulls
}

func takeFixed[T int32 | int64 | float64 | arrow.Timestamp | decimal128.Num](vals []T, valid []bool, idx []int32, dt arrow.DataType, mem memory.Allocator) arrow.Array {
	n := len(idx)
	var zero T
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(n * int(unsafe.Sizeof(zero)))
	if n > 0 {
		out := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(buf.Bytes()))), n)
		for r, i := range idx {
			out[r] = vals[i]
		}
	}
	nb, nulls := takeValidity(valid, idx, mem)
	return newArray(dt, n, nulls, nb, buf, nil)
}

func takeStrings(vals []string, valid []bool, idx []int32, dt arrow.DataType, mem memory.Allocator) arrow.Array {
	n := len(idx)
	total := 0
	for _, i := range idx {
		total += len(vals[i])
	}
	offs := memory.NewResizableBuffer(mem)
	offs.Resize((n + 1) * 4)
	data := memory.NewResizableBuffer(mem)
	data.Resize(total)
	o := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(offs.Bytes()))), n+1)
	d := data.Bytes()
	p := 0
	for r, i := range idx {
		o[r] = int32(p)
		p += copy(d[p:], vals[i])
	}
	o[n] = int32(p)
	nb, nulls := takeValidity(valid, idx, mem)
	return newArray(dt, n, nulls, nb, offs, data)
}

// newArray makes an array of the buffers, which it takes over.
func newArray(dt arrow.DataType, n, nulls int, bufs ...*memory.Buffer) arrow.Array {
	if bufs[len(bufs)-1] == nil {
		bufs = bufs[:len(bufs)-1]
	}
	d := array.NewData(dt, n, bufs, nil, nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	a := array.MakeFromData(d)
	d.Release()
	return a
}
