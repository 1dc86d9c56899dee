package sqltests

import (
	"sync"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

// checkedAllocs hands out checked allocators and asserts, at the end of the
// test, that every one of them is back to zero bytes.
type checkedAllocs struct {
	mu     sync.Mutex
	allocs []*memory.CheckedAllocator
}

func (c *checkedAllocs) newAlloc() memory.Allocator {
	a := memory.NewCheckedAllocator(memory.NewGoAllocator())
	c.mu.Lock()
	c.allocs = append(c.allocs, a)
	c.mu.Unlock()
	return a
}

func (c *checkedAllocs) assertZero(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.allocs {
		a.AssertSize(t, 0)
	}
}

func TestGolden(t *testing.T) {
	var ca checkedAllocs
	RunTest(t, "testdata", Options{Variants: !testing.Short(), newAlloc: ca.newAlloc})
	ca.assertZero(t)
}
