// Package bufpool is an Arrow memory allocator that recycles the buffers
// released to it.
//
// A streaming job allocates the same few buffer sizes for every batch (a
// column of 8192 BIGINTs, a bitmap, a string column's bytes) and releases
// them a few operators later. Go's allocator hands out fresh memory for each
// one: buffers over 32 KiB are allocated and zeroed page by page (page
// faults, system time), and the garbage collector runs once for every few
// megabytes allocated, however small the live heap. Recycler keeps freed
// buffers in size classes and hands them out again, so a job in steady state
// allocates almost nothing.
//
// # Contract
//
//   - Allocate returns zeroed memory, as Go's allocator (memory.GoAllocator)
//     does; Reallocate zeroes the bytes it adds.
//   - A buffer must not be read or written after it is freed (after its last
//     Release): the memory is handed out again. Tests run jobs with
//     internal/memtest's poisoning allocator, which overwrites freed memory,
//     so an operator that keeps a view of released bytes fails there.
//   - Buffers of at most 256 bytes and of more than 64 MiB are not pooled.
//     Class sizes grow by a quarter of a power of two (at most 25% slack).
//   - At most Limit bytes are kept free; beyond that, freed buffers are left
//     to the garbage collector. Free memory is kept until reused (no
//     trimming while idle): the limit bounds it.
//
// Recycler is safe for concurrent use: buffers are allocated by one
// operator's goroutine and freed by another's.
package bufpool

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

const (
	minPooled = 256 // sizes up to this are not pooled
	maxShift  = 26  // classes up to 1<<maxShift bytes (64 MiB)
	subShift  = 2   // 1<<subShift classes per doubling
	minShift  = 9   // first doubling pooled: (256, 512]
	nClasses  = (maxShift - minShift + 1) << subShift
	maxPooled = 1 << maxShift
)

// DefaultLimit is the free memory a Recycler keeps by default.
const DefaultLimit = 32 << 20

// Recycler is a memory.Allocator that keeps released buffers for reuse.
type Recycler struct {
	limit   int64
	free    atomic.Int64 // bytes in the free lists
	classes [nClasses]freeList

	reused, fresh, dropped atomic.Int64
}

type freeList struct {
	mu   sync.Mutex
	bufs [][]byte // each of its class's size (len == cap)
}

// New returns a Recycler that keeps at most limit free bytes (<= 0:
// DefaultLimit).
func New(limit int64) *Recycler {
	if limit <= 0 {
		limit = DefaultLimit
	}
	return &Recycler{limit: limit}
}

// classOf returns the class of a buffer of n bytes (minPooled < n <=
// maxPooled) and the class's size.
func classOf(n int) (int, int) {
	k := bits.Len(uint(n - 1)) // 1<<(k-1) < n <= 1<<k
	step := 1 << (k - 1 - subShift)
	m := (n - 1<<(k-1) + step - 1) / step // 1..1<<subShift
	return (k-minShift)<<subShift + m - 1, 1<<(k-1) + m*step
}

// sameClass reports whether a buffer of n bytes (n <= cs) takes the class
// of size cs.
func sameClass(n, cs int) bool {
	if n <= minPooled {
		return false
	}
	_, c := classOf(n)
	return c == cs
}

// Allocate implements memory.Allocator.
func (r *Recycler) Allocate(size int) []byte {
	if size <= minPooled || size > maxPooled {
		return make([]byte, size)
	}
	c, cs := classOf(size)
	fl := &r.classes[c]
	fl.mu.Lock()
	if n := len(fl.bufs); n > 0 {
		b := fl.bufs[n-1]
		fl.bufs[n-1] = nil
		fl.bufs = fl.bufs[:n-1]
		fl.mu.Unlock()
		r.free.Add(-int64(cs))
		r.reused.Add(1)
		b = b[:size]
		clear(b)
		return b
	}
	fl.mu.Unlock()
	r.fresh.Add(1)
	return make([]byte, size, cs)
}

// Free implements memory.Allocator.
func (r *Recycler) Free(b []byte) {
	cs := cap(b)
	if cs <= minPooled || cs > maxPooled {
		return
	}
	c, want := classOf(cs)
	if want != cs {
		return // not one of ours (a slice of another size)
	}
	if r.free.Add(int64(cs)) > r.limit {
		r.free.Add(-int64(cs))
		r.dropped.Add(1)
		return
	}
	fl := &r.classes[c]
	fl.mu.Lock()
	fl.bufs = append(fl.bufs, b[:cs])
	fl.mu.Unlock()
}

// Reallocate implements memory.Allocator: it grows or shrinks b in place
// when the new size is of b's class (zeroing the bytes it adds); a buffer
// shrunk to a smaller class moves, so that a long-lived array (a builder's
// result, shrunk to fit) does not hold a larger buffer than Go's allocator
// would give it.
func (r *Recycler) Reallocate(size int, b []byte) []byte {
	if cap(b) == 0 {
		return r.Allocate(size)
	}
	if size <= cap(b) && (cap(b) <= minPooled || size > maxPooled || sameClass(size, cap(b))) {
		if size > len(b) {
			clear(b[len(b):size])
		}
		return b[:size]
	}
	nb := r.Allocate(size)
	copy(nb, b)
	r.Free(b)
	return nb
}

// Stats counts the Recycler's work since New.
type Stats struct {
	Reused  int64 // allocations served from a free list
	Fresh   int64 // pooled-size allocations served by Go's allocator
	Dropped int64 // frees left to the garbage collector (over the limit)
	Free    int64 // bytes in the free lists now
}

// Stats returns the counters.
func (r *Recycler) Stats() Stats {
	return Stats{Reused: r.reused.Load(), Fresh: r.fresh.Load(), Dropped: r.dropped.Load(), Free: r.free.Load()}
}
