package format

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
)

// batchOut is the output of a decoder that builds its own batches (see
// NewCSVBatchDecoder): a builder per column on the fixed allocator, except
// for STRING columns, written by a strCol (offsets and validity on fixed,
// the bytes on the bytes allocator), and ROW columns holding strings (a
// builder on the bytes allocator). Operators may keep views of a batch's
// string bytes after releasing it, so those must never be memory that is
// handed out again; fixed-width buffers may be.
type batchOut struct {
	schema *arrow.Schema
	bs     []array.Builder // nil for a strCol column
	sws    []*strCol       // by column; nil but for STRING columns
	cols   []arrow.Array
	rows   int
}

func newBatchOut(schema catalog.Schema, fixed, bytes memory.Allocator) *batchOut {
	as := schema.Arrow()
	o := &batchOut{schema: as, bs: make([]array.Builder, len(schema)), sws: make([]*strCol, len(schema)), cols: make([]arrow.Array, len(schema))}
	for i, c := range schema {
		switch {
		case c.Type.Kind == catalog.KindString:
			o.sws[i] = &strCol{fixed: fixed, bytes: bytes}
		case holdsBytes(as.Field(i).Type):
			o.bs[i] = array.NewBuilder(bytes, as.Field(i).Type)
		default:
			o.bs[i] = array.NewBuilder(fixed, as.Field(i).Type)
		}
	}
	return o
}

// holdsBytes reports whether arrays of t hold variable-length bytes.
func holdsBytes(t arrow.DataType) bool {
	switch t := t.(type) {
	case arrow.BinaryDataType:
		return true
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if holdsBytes(f.Type) {
				return true
			}
		}
		return false
	case arrow.NestedType:
		return true
	}
	return false
}

func (o *batchOut) newRecord() arrow.Record {
	for i := range o.cols {
		if w := o.sws[i]; w != nil {
			o.cols[i] = w.finish()
		} else {
			o.cols[i] = o.bs[i].NewArray()
		}
	}
	rec := array.NewRecord(o.schema, o.cols, int64(o.rows))
	for i, c := range o.cols {
		c.Release()
		o.cols[i] = nil
	}
	o.rows = 0
	return rec
}

func (o *batchOut) release() {
	for i := range o.cols {
		if w := o.sws[i]; w != nil {
			w.release()
		} else {
			o.bs[i].Release()
		}
	}
}

// strCol writes a STRING column's Arrow buffers directly: offsets and
// (once a NULL comes) validity in memory from fixed, the bytes from bytes.
type strCol struct {
	fixed, bytes memory.Allocator
	offs, data   *memory.Buffer
	valid        *memory.Buffer // nil while there is no NULL
	off          []int32        // offs' capacity; off[0..n] written
	buf          []byte         // data's capacity; buf[:dl] written
	bits         []byte         // valid's capacity
	n, nulls, dl int
}

// reserve makes room for rows more values of data bytes in all.
func (w *strCol) reserve(rows, data int) {
	if w.n+rows+1 > len(w.off) {
		w.growOffs(w.n + rows + 1)
	}
	if w.dl+data > len(w.buf) {
		w.growData(w.dl + data)
	}
}

func (w *strCol) growOffs(need int) {
	if w.offs == nil {
		w.offs = memory.NewResizableBuffer(w.fixed)
		w.offs.Resize(max(need, 64) * 4)
	} else {
		w.offs.Resize(max(need, 2*len(w.off)) * 4)
	}
	w.off = arrow.Int32Traits.CastFromBytes(w.offs.Buf())
	w.off[0] = 0
	if w.valid != nil && len(w.bits)*8 < len(w.off) {
		old := len(w.bits)
		w.valid.Resize((len(w.off) + 7) / 8)
		w.bits = w.valid.Buf()
		clear(w.bits[old:])
	}
}

func (w *strCol) growData(need int) {
	if w.data == nil {
		w.data = memory.NewResizableBuffer(w.bytes)
		w.data.Reserve(max(need, 256))
	} else {
		w.data.Reserve(max(need, 2*len(w.buf)))
	}
	w.buf = w.data.Buf()
}

func (w *strCol) append(b []byte) {
	if w.n+2 > len(w.off) {
		w.growOffs(w.n + 2)
	}
	if w.dl+len(b) > len(w.buf) {
		w.growData(w.dl + len(b))
	}
	w.dl += copy(w.buf[w.dl:], b)
	if w.bits != nil {
		bitutil.SetBit(w.bits, w.n)
	}
	w.n++
	w.off[w.n] = int32(w.dl)
}

func (w *strCol) appendNull() {
	if w.n+2 > len(w.off) {
		w.growOffs(w.n + 2)
	}
	if w.bits == nil {
		w.valid = memory.NewResizableBuffer(w.fixed)
		w.valid.Resize((len(w.off) + 7) / 8)
		w.bits = w.valid.Buf()
		clear(w.bits)
		bitutil.SetBitsTo(w.bits, 0, int64(w.n), true)
	}
	w.nulls++
	w.n++
	w.off[w.n] = int32(w.dl)
}

// finish returns the values written as an array and starts the next.
func (w *strCol) finish() arrow.Array {
	if w.offs == nil {
		w.growOffs(1)
	}
	if w.data == nil {
		w.growData(0)
	}
	w.offs.Resize((w.n + 1) * 4)
	w.data.Resize(w.dl)
	bufs := []*memory.Buffer{nil, w.offs, w.data}
	if w.valid != nil {
		w.valid.Resize((w.n + 7) / 8)
		bufs[0] = w.valid
	}
	d := array.NewData(arrow.BinaryTypes.String, w.n, bufs, nil, w.nulls, 0)
	a := array.NewStringData(d)
	d.Release()
	w.release()
	return a
}

func (w *strCol) release() {
	for _, b := range []*memory.Buffer{w.offs, w.data, w.valid} {
		if b != nil {
			b.Release()
		}
	}
	w.offs, w.data, w.valid = nil, nil, nil
	w.off, w.buf, w.bits = nil, nil, nil
	w.n, w.nulls, w.dl = 0, 0, 0
}

// builders returns the column builders for newRowDecoderOn (nil for strCol
// columns).
func (o *batchOut) builders() []array.Builder { return o.bs }

func newBatchRowDecoder(schema catalog.Schema, fixed, bytes memory.Allocator) (rowDecoder, error) {
	o := newBatchOut(schema, fixed, bytes)
	r, err := newRowDecoderOn(schema, o.builders())
	if err != nil {
		o.release()
		return rowDecoder{}, err
	}
	r.batch = o
	for i := range r.cols {
		r.cols[i].sw = o.sws[i]
	}
	return r, nil
}

// NewCSVBatchDecoder returns a decoder that builds its own batches (see
// NewRecord; call Release when done): fixed-width values and validity in
// memory from fixed (which may hand out memory again once a batch is
// released), STRING bytes in memory from bytes (which must not).
func NewCSVBatchDecoder(schema catalog.Schema, opts CSVOptions, fixed, bytes memory.Allocator) (*CSVDecoder, error) {
	r, err := newBatchRowDecoder(schema, fixed, bytes)
	if err != nil {
		return nil, err
	}
	return &CSVDecoder{opts: opts, row: r}, nil
}

// NewJSONBatchDecoder is NewCSVBatchDecoder for JSON lines.
func NewJSONBatchDecoder(schema catalog.Schema, opts JSONOptions, fixed, bytes memory.Allocator) (*JSONDecoder, error) {
	r, err := newBatchRowDecoder(schema, fixed, bytes)
	if err != nil {
		return nil, err
	}
	return newJSONDecoder(r, opts), nil
}

// Len returns the records in the batch being built (batch decoders).
func (d *CSVDecoder) Len() int { return d.row.batch.rows }

// NewRecord returns the batch built so far and starts the next (batch
// decoders).
func (d *CSVDecoder) NewRecord() arrow.Record { return d.row.batch.newRecord() }

// Release frees the batch being built (batch decoders).
func (d *CSVDecoder) Release() { d.row.batch.release() }

// Len is CSVDecoder.Len.
func (d *JSONDecoder) Len() int { return d.row.batch.rows }

// NewRecord is CSVDecoder.NewRecord.
func (d *JSONDecoder) NewRecord() arrow.Record { return d.row.batch.newRecord() }

// Release is CSVDecoder.Release.
func (d *JSONDecoder) Release() { d.row.batch.release() }
