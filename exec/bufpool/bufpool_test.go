package bufpool

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

func TestClassOf(t *testing.T) {
	prev, prevSize := -1, 0
	for n := minPooled + 1; n <= maxPooled; n += 1 + n/97 {
		c, cs := classOf(n)
		if cs < n || cs > n+n/4+1 {
			t.Fatalf("classOf(%d) = size %d: not in [n, 1.25n]", n, cs)
		}
		if c < prev || c >= nClasses {
			t.Fatalf("classOf(%d) = class %d after class %d (of %d)", n, c, prev, nClasses)
		}
		if c == prev && cs != prevSize {
			t.Fatalf("class %d has sizes %d and %d", c, prevSize, cs)
		}
		if c2, cs2 := classOf(cs); c2 != c || cs2 != cs {
			t.Fatalf("classOf(%d) = (%d, %d), but its size maps to (%d, %d)", n, c, cs, c2, cs2)
		}
		if cs%64 != 0 {
			t.Fatalf("class size %d is not a multiple of 64", cs)
		}
		prev, prevSize = c, cs
	}
	if c, cs := classOf(maxPooled); c != nClasses-1 || cs != maxPooled {
		t.Fatalf("classOf(max) = (%d, %d)", c, cs)
	}
}

func TestReuseIsZeroed(t *testing.T) {
	r := New(0)
	a := r.Allocate(1000)
	if len(a) != 1000 || cap(a) != 1024 {
		t.Fatalf("len %d cap %d", len(a), cap(a))
	}
	for i := range a[:cap(a)] {
		a[:cap(a)][i] = 0xFF
	}
	r.Free(a)
	b := r.Allocate(900) // same class (768, 1024]
	if &b[0] != &a[0] {
		t.Fatal("the freed buffer was not reused")
	}
	for i, v := range b {
		if v != 0 {
			t.Fatalf("byte %d of a reused buffer is %#x", i, v)
		}
	}
	// growing in place zeroes what it adds, beyond what Allocate cleared
	c := r.Reallocate(1024, b)
	if &c[0] != &a[0] || len(c) != 1024 {
		t.Fatal("Reallocate within the class moved")
	}
	for i, v := range c {
		if v != 0 {
			t.Fatalf("byte %d after Reallocate is %#x", i, v)
		}
	}
	c[5] = 7
	d := r.Reallocate(5000, c) // to another class: moved, copied
	if len(d) != 5000 || d[5] != 7 || &d[0] == &c[0] {
		t.Fatal("Reallocate across classes did not copy")
	}
	if s := r.Stats(); s.Reused != 1 || s.Fresh != 2 || s.Free != 1024 {
		t.Fatalf("stats %+v", s)
	}
	r.Free(d)
	// unpooled sizes come from Go's allocator and are not kept
	small := r.Allocate(100)
	r.Free(small)
	if s := r.Stats(); s.Free != 1024+5120 {
		t.Fatalf("free bytes %d", s.Free)
	}
}

func TestLimit(t *testing.T) {
	r := New(3 << 10)
	var bs [][]byte
	for range 5 {
		bs = append(bs, r.Allocate(1024))
	}
	for _, b := range bs {
		r.Free(b)
	}
	if s := r.Stats(); s.Free != 3<<10 || s.Dropped != 2 {
		t.Fatalf("stats %+v, want 3 KiB kept and 2 dropped", s)
	}
	for range 3 {
		r.Allocate(1024)
	}
	if s := r.Stats(); s.Free != 0 || s.Reused != 3 {
		t.Fatalf("stats %+v", s)
	}
}

// TestConcurrentOwners hands buffers between goroutines, as operators do,
// and checks that no buffer is ever held by two owners: each owner fills
// its buffer with its own mark and finds it intact before freeing it.
func TestConcurrentOwners(t *testing.T) {
	r := New(1 << 20)
	ch := make(chan []byte, 16)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 4 {
		wg.Add(2)
		go func() { // producer
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 2000 {
				b := r.Allocate(257 + rng.IntN(20000))
				for i := range b {
					if b[i] != 0 {
						errs <- "an allocated buffer was not zeroed"
						return
					}
					b[i] = byte(g + 1)
				}
				ch <- b
			}
		}()
		go func() { // consumer
			defer wg.Done()
			for range 2000 {
				b := <-ch
				mark := b[0]
				for _, v := range b {
					if v != mark {
						errs <- "a buffer changed while its owner held it"
						return
					}
				}
				r.Free(b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if s := r.Stats(); s.Reused == 0 {
		t.Fatalf("nothing was reused: %+v", s)
	}
}

// TestArrowArrays builds and releases Arrow arrays through a checked
// allocator over a Recycler: every byte comes back, and the second round's
// buffers are recycled ones.
func TestArrowArrays(t *testing.T) {
	r := New(0)
	mem := memory.NewCheckedAllocator(r)
	defer mem.AssertSize(t, 0)
	for round := range 3 {
		ib := array.NewInt64Builder(mem)
		sb := array.NewStringBuilder(mem)
		for i := range 5000 {
			if i%7 == 0 {
				ib.AppendNull()
				sb.AppendNull()
				continue
			}
			ib.Append(int64(i * round))
			sb.Append("row")
		}
		ia, sa := ib.NewInt64Array(), sb.NewStringArray()
		ib.Release()
		sb.Release()
		for i := range 5000 {
			if (i%7 == 0) != ia.IsNull(i) || (i%7 != 0 && (ia.Value(i) != int64(i*round) || sa.Value(i) != "row")) {
				t.Fatalf("round %d row %d: %v %q", round, i, ia.ValueStr(i), sa.ValueStr(i))
			}
		}
		ia.Release()
		sa.Release()
	}
	if s := r.Stats(); s.Reused == 0 {
		t.Fatalf("no buffer was reused: %+v", s)
	}
}

// TestShrinkMoves: a buffer shrunk within its class stays; one shrunk to a
// smaller class moves there (its bytes copied), so a builder's result
// shrunk to fit holds no more memory than it needs.
func TestShrinkMoves(t *testing.T) {
	r := New(0)
	a := r.Allocate(5000) // class 5120
	a[4200], a[10] = 1, 2
	b := r.Reallocate(4200, a)
	if &b[0] != &a[0] || cap(b) != 5120 {
		t.Fatalf("a shrink within the class moved (cap %d)", cap(b))
	}
	c := r.Reallocate(1000, b)
	if &c[0] == &b[0] || cap(c) != 1024 || c[10] != 2 {
		t.Fatalf("a shrink to class 1024 kept cap %d (byte 10 = %d)", cap(c), c[10])
	}
	if s := r.Stats(); s.Free != 5120 {
		t.Fatalf("the old buffer was not freed: %+v", s)
	}
}
