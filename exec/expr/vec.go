package expr

import (
	"encoding/binary"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// fixed is the set of fixed-width value types kernels read and write.
type fixed interface {
	~int32 | ~int64 | ~float64 | ~uint64
}

// values returns the typed values of a fixed-width array (offset applied).
func values[T any](a arrow.Array) []T {
	d := a.Data()
	bufs := d.Buffers()
	if len(bufs) < 2 || bufs[1] == nil || bufs[1].Len() == 0 {
		return nil
	}
	b := bufs[1].Bytes()
	var zero T
	n := len(b) / int(unsafe.Sizeof(zero))
	s := unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
	return s[d.Offset() : d.Offset()+d.Len()]
}

// allocFixed allocates a zeroed value buffer of n elements of T. The
// allocators jobs run with (Go's, exec/bufpool's, the tests' checked and
// poisoning wrappers of Go's) return zeroed memory, so it is not cleared
// again here.
func allocFixed[T any](mem memory.Allocator, n int) (*memory.Buffer, []T) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(n * size)
	b := buf.Bytes()
	if n == 0 {
		return buf, nil
	}
	return buf, unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// allocBits allocates a zeroed bitmap of n bits.
func allocBits(mem memory.Allocator, n int) (*memory.Buffer, []byte) {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	b := buf.Bytes()
	clear(b)
	return buf, b
}

// allValidBits allocates a bitmap of n set bits.
func allValidBits(mem memory.Allocator, n int) (*memory.Buffer, []byte) {
	buf, b := allocBits(mem, n)
	bitutil.SetBitsTo(b, 0, int64(n), true)
	return buf, b
}

// writableValidity is andValidity always allocated (all bits set when no
// argument has nulls), for kernels that clear bits of rows that fail.
func writableValidity(mem memory.Allocator, n int, arrs ...arrow.Array) (*memory.Buffer, []byte) {
	if valid := andValidity(mem, n, arrs...); valid != nil {
		return valid, valid.Bytes()
	}
	return allValidBits(mem, n)
}

// makeArray wraps buffers into an array of type dt and length n, taking over
// the caller's references to the buffers. validity may be nil (no nulls).
func makeArray(dt arrow.DataType, n int, validity *memory.Buffer, bufs ...*memory.Buffer) arrow.Array {
	nulls := 0
	if validity != nil {
		nulls = n - bitutil.CountSetBits(validity.Bytes(), 0, n)
		if nulls == 0 {
			validity.Release()
			validity = nil
		}
	}
	all := append([]*memory.Buffer{validity}, bufs...)
	d := array.NewData(dt, n, all, nil, nulls, 0)
	for _, b := range all {
		if b != nil {
			b.Release()
		}
	}
	a := array.MakeFromData(d)
	d.Release()
	return a
}

// bitsOf returns the validity bitmap of a and its bit offset; bits is nil when
// a has no nulls. For an all-NULL array without a bitmap (type NULL), allNull
// is true.
func bitsOf(a arrow.Array) (bits []byte, off int, allNull bool) {
	if a.NullN() == 0 {
		return nil, 0, false
	}
	if a.DataType().ID() == arrow.NULL {
		return nil, 0, true
	}
	return a.NullBitmapBytes(), a.Data().Offset(), false
}

// isValid reports whether row i of an array with bitmap (bits, off) is valid.
func isValid(bits []byte, off, i int) bool {
	return bits == nil || bitutil.BitIsSet(bits, off+i)
}

// andValidity returns the AND of the validity of the given arrays, or nil when
// none has nulls.
func andValidity(mem memory.Allocator, n int, arrs ...arrow.Array) *memory.Buffer {
	var out *memory.Buffer
	var ob []byte
	for _, a := range arrs {
		if a == nil {
			continue
		}
		bits, off, allNull := bitsOf(a)
		if bits == nil && !allNull {
			continue
		}
		if out == nil {
			out, ob = allocBits(mem, n)
			if allNull {
				continue
			}
			bitutil.CopyBitmap(bits, off, n, ob, 0)
			continue
		}
		if allNull {
			clear(ob)
			continue
		}
		bitutil.BitmapAnd(ob, bits, 0, int64(off), ob, 0, int64(n))
	}
	return out
}

// boolBits returns the value bitmap of a boolean array and its bit offset.
func boolBits(a arrow.Array) ([]byte, int) {
	d := a.Data()
	bufs := d.Buffers()
	if len(bufs) < 2 || bufs[1] == nil {
		return nil, 0
	}
	return bufs[1].Bytes(), d.Offset()
}

// strOut builds a utf8 array's offsets and data directly in Arrow buffers.
type strOut struct {
	offBuf  *memory.Buffer
	offs    []int32
	dataBuf *memory.Buffer
	data    []byte
	n       int
}

func newStrOut(mem memory.Allocator, rows, dataHint int) *strOut {
	s := &strOut{}
	s.offBuf, s.offs = allocFixed[int32](mem, rows+1)
	s.offs = s.offs[:1]
	s.dataBuf = memory.NewResizableBuffer(mem)
	if dataHint < 64 {
		dataHint = 64
	}
	s.dataBuf.Reserve(dataHint)
	s.data = s.dataBuf.Buf()[:0]
	return s
}

// grow makes room for k more bytes.
func (s *strOut) grow(k int) {
	if len(s.data)+k <= cap(s.data) {
		return
	}
	n := len(s.data)
	want := 2 * cap(s.data)
	if want < n+k {
		want = n + k
	}
	s.dataBuf.Resize(n)
	s.dataBuf.Reserve(want)
	s.data = s.dataBuf.Buf()[:n]
}

func (s *strOut) appendString(v string) {
	s.grow(len(v))
	s.data = append(s.data, v...)
	s.offs = append(s.offs, int32(len(s.data)))
}

func (s *strOut) appendBytes(v []byte) {
	s.grow(len(v))
	s.data = append(s.data, v...)
	s.offs = append(s.offs, int32(len(s.data)))
}

// appendEmpty appends an empty value (used for NULL rows).
func (s *strOut) appendEmpty() { s.offs = append(s.offs, int32(len(s.data))) }

// finish builds the array; validity may be nil.
func (s *strOut) finish(validity *memory.Buffer) arrow.Array {
	n := len(s.offs) - 1
	s.dataBuf.Resize(len(s.data))
	return makeArray(arrow.BinaryTypes.String, n, validity, s.offBuf, s.dataBuf)
}

// release frees the buffers of an unfinished builder.
func (s *strOut) release() {
	s.offBuf.Release()
	s.dataBuf.Release()
}

// emptyArray returns a zero-length array of type dt.
func emptyArray(dt arrow.DataType, mem memory.Allocator) arrow.Array {
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	return b.NewArray()
}

// BitWord returns bits [64w, 64w+64) of the bitmap (b, off) as a word (bit
// i of the word is bit 64w+i), the bits at or past n cleared.
func BitWord(b []byte, off, w, n int) uint64 {
	start := off + w<<6
	cnt := min(64, n-w<<6)
	var v uint64
	if start&7 == 0 && cnt == 64 && start>>3+8 <= len(b) {
		return binary.LittleEndian.Uint64(b[start>>3:])
	}
	for i := 0; i < cnt; i++ {
		if bitutil.BitIsSet(b, start+i) {
			v |= 1 << i
		}
	}
	return v
}

// putWord writes v as bits [64w, 64w+64) of the bitmap b of n bits (bit i
// of v is bit 64w+i); the bits at or past n stay clear.
func putWord(b []byte, w, n int, v uint64) {
	if rem := n - w<<6; rem < 64 {
		v &= 1<<rem - 1
	}
	for k := 0; k < 8 && w<<3+k < len(b); k++ {
		b[w<<3+k] = byte(v >> (k << 3))
	}
}
