// Package memtest holds allocators for tests.
package memtest

import "github.com/apache/arrow/go/v17/arrow/memory"

// Poison is the byte Poisoning writes over freed memory.
const Poison = 0xA5

// Poisoning wraps an allocator so that freed memory is overwritten with
// Poison before it is returned. A batch's buffers are freed when its last
// reference is released; an operator that keeps a view of the bytes of a
// batch it no longer holds then reads poison instead of silently reading
// memory a recycling source may have handed out again.
type Poisoning struct {
	memory.Allocator
}

// NewPoisoning wraps a.
func NewPoisoning(a memory.Allocator) *Poisoning { return &Poisoning{Allocator: a} }

// Free implements memory.Allocator.
func (p *Poisoning) Free(b []byte) {
	b = b[:cap(b)]
	for i := range b {
		b[i] = Poison
	}
	p.Allocator.Free(b)
}

// Reallocate implements memory.Allocator: the old memory is poisoned when
// the allocation moves.
func (p *Poisoning) Reallocate(size int, b []byte) []byte {
	nb := p.Allocator.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// NewChecked is a checked allocator over a poisoning Go allocator: tests
// assert it is back to zero bytes, and a view kept of freed memory reads
// poison.
func NewChecked() *memory.CheckedAllocator {
	return memory.NewCheckedAllocator(NewPoisoning(memory.NewGoAllocator()))
}
