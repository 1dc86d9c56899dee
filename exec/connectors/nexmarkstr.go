package connectors

import (
	"math/bits"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// nexStrs is a string field of a ROW being built, written in place: its
// offsets and bytes go straight into buffers of the source's bufPool, so
// that a batch's strings land in memory a released batch gave back (warm,
// already faulted in) instead of fresh builder buffers grown per batch.
// Its validity is the ROW's bitmap (the field is NULL exactly where the
// ROW is). Each event of the batch writes one value (append*) or a NULL
// (null), in order.
type nexStrs struct {
	used bool // the field is read: generated

	offBuf  *memory.Buffer
	offs    []int32 // rows+1
	dataBuf *memory.Buffer
	data    []byte // the whole capacity of dataBuf
	n       int    // bytes written
	k       int    // values written
	// hint is the capacity the field's bytes needed so far: a batch
	// reserves at least that much (rounded to a size class, so that the
	// pool hands the same buffers back batch after batch).
	hint int
}

// start begins a batch of rows values, about est bytes.
func (s *nexStrs) start(pool *bufPool, rows, est int) {
	s.offBuf = newBuffer(pool, (rows+1)*4)
	s.offs = arrow.Int32Traits.CastFromBytes(s.offBuf.Bytes())[:rows+1]
	s.offs[0] = 0
	s.n, s.k = 0, 0
	s.dataBuf = newBuffer(pool, nexSizeClass(max(est+est/8, s.hint, 64)))
	s.data = s.dataBuf.Buf()
}

// nexSizeClass rounds n up to one of 8 classes per power of two: 1/8 at
// most wasted, and a batch whose size varies a little reserves the same
// size (the pool keeps buffers by size).
func nexSizeClass(n int) int {
	if n <= 64 {
		return 64
	}
	step := 1 << max(bits.Len(uint(n-1))-4, 6)
	return (n + step - 1) &^ (step - 1)
}

// grow makes room for more bytes: a buffer of the next size class, the
// bytes written so far copied; the next batches start with that size.
func (s *nexStrs) grow(pool *bufPool, more int) {
	need := nexSizeClass(max(2*len(s.data), s.n+more))
	buf := newBuffer(pool, need)
	copy(buf.Buf(), s.data[:s.n])
	s.dataBuf.Release()
	s.dataBuf, s.data = buf, buf.Buf()
	s.hint = max(s.hint, need)
}

func (s *nexStrs) appendBytes(pool *bufPool, v []byte) {
	if s.n+len(v) > len(s.data) {
		s.grow(pool, len(v))
	}
	s.n += copy(s.data[s.n:], v)
	s.k++
	s.offs[s.k] = int32(s.n)
}

func (s *nexStrs) appendString(pool *bufPool, v string) {
	if s.n+len(v) > len(s.data) {
		s.grow(pool, len(v))
	}
	s.n += copy(s.data[s.n:], v)
	s.k++
	s.offs[s.k] = int32(s.n)
}

// null writes a NULL (an empty value; the ROW's bitmap says NULL).
func (s *nexStrs) null() {
	s.k++
	s.offs[s.k] = int32(s.n)
}

// finish returns the batch's rows values as the data of a string array
// of type dt whose validity is valid (nulls NULLs), and hands its buffers
// over to it.
func (s *nexStrs) finish(dt arrow.DataType, rows int, valid *memory.Buffer, nulls int) arrow.ArrayData {
	if s.k != rows {
		panic("nexmark: a string field was not written for every event")
	}
	s.dataBuf.ResizeNoShrink(s.n)
	d := array.NewData(dt, rows, []*memory.Buffer{valid, s.offBuf, s.dataBuf}, nil, nulls, 0)
	s.offBuf.Release()
	s.dataBuf.Release()
	s.offBuf, s.offs, s.dataBuf, s.data = nil, nil, nil, nil
	return d
}

// release frees a batch begun but not finished.
func (s *nexStrs) release() {
	if s.offBuf != nil {
		s.offBuf.Release()
	}
	if s.dataBuf != nil {
		s.dataBuf.Release()
	}
	s.offBuf, s.offs, s.dataBuf, s.data = nil, nil, nil, nil
}
