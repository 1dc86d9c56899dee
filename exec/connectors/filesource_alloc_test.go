package connectors

import (
	"context"
	"fmt"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/streamsql/streamsql/internal/memtest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
)

// TestRecyclingAllocator: a freed buffer is handed out again (zeroed) for
// a request of its size class, reallocation keeps or moves the bytes,
// and after close every byte is back with the parent, including buffers
// freed after close.
func TestRecyclingAllocator(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	a := newRecyclingAllocator(mem)
	b := a.Allocate(1000)
	if len(b) != 1000 || cap(b) != 1024 {
		t.Fatalf("len %d cap %d, want 1000 and 1024", len(b), cap(b))
	}
	for i := range b {
		b[i] = 0xAB
	}
	a.Free(b)
	c := a.Allocate(700) // same class: the same memory, zeroed
	if &c[0] != &b[0] {
		t.Errorf("a buffer of the same class was not reused")
	}
	for i, x := range c[:cap(c)] {
		if x != 0 {
			t.Fatalf("reused buffer not zeroed at %d", i)
		}
	}
	c[0] = 7
	d := a.Reallocate(900, c) // fits: in place
	if &d[0] != &c[0] || len(d) != 900 {
		t.Errorf("reallocation within the class moved the buffer")
	}
	e := a.Reallocate(5000, d) // grows: moved, bytes kept
	if len(e) != 5000 || cap(e) != 8192 || e[0] != 7 {
		t.Errorf("grown buffer: len %d cap %d first %d", len(e), cap(e), e[0])
	}
	f := a.Reallocate(100, e) // shrinks below half: moved to a smaller class
	if cap(f) != 128 || f[0] != 7 {
		t.Errorf("shrunk buffer: cap %d first %d", cap(f), f[0])
	}
	g := a.Allocate(64)
	a.Free(f)
	a.close()
	a.Free(g) // after close: straight back to the parent
	if z := a.Allocate(0); len(z) != 0 {
		t.Errorf("Allocate(0) has %d bytes", len(z))
	}
}

// TestFileSourceStringViews: string values read from a batch stay intact
// after the batch is released and later batches are read (operators keep
// such views, e.g. as group keys), while the fixed-width buffers are
// recycled; every row is read, and nothing leaks.
func TestFileSourceStringViews(t *testing.T) {
	// Not a poisoning allocator: this is the file source's own guarantee
	// that string bytes are never handed out again.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	schema := catalog.Schema{{Name: "s", Type: catalog.String}, {Name: "n", Type: catalog.BigInt}, {Name: "u", Type: catalog.String}}
	var csvText, jsonText strings.Builder
	const n = 5000
	for i := 0; i < n; i++ {
		fmt.Fprintf(&csvText, "key%d,%d,%s\n", i, i, strings.Repeat("u", i%17))
		fmt.Fprintf(&jsonText, `{"s":"key%d","n":%d,"u":"%s"}`+"\n", i, i, strings.Repeat("u", i%17))
	}
	writeFile(t, filepath.Join(dir, "a.csv"), csvText.String())
	writeFile(t, filepath.Join(dir, "a.json"), jsonText.String())
	for _, f := range []string{"csv", "json"} {
		for _, batch := range []int{1, 7, 1024} {
			tb := table("f", schema, "connector", "filesystem", "path", filepath.Join(dir, "a."+f), "format", f)
			src, err := NewSource(tb, &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: batch, Schema: schema, SkippedRecords: new(atomic.Int64)})
			if err != nil {
				t.Fatal(err)
			}
			var keys []string // views into released batches
			var nums []int64
			err = src.Run(context.Background(), func(r arrow.Record) error {
				if r == nil {
					return nil
				}
				s, v := r.Column(0).(*array.String), r.Column(1).(*array.Int64)
				for i := 0; i < s.Len(); i++ {
					keys = append(keys, s.Value(i))
					nums = append(nums, v.Value(i))
				}
				r.Release()
				return nil
			})
			src.Close()
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) != n {
				t.Fatalf("%s, batches of %d: %d rows, want %d", f, batch, len(keys), n)
			}
			for i := range keys {
				if want := fmt.Sprintf("key%d", i); keys[i] != want || nums[i] != int64(i) {
					t.Fatalf("%s, batches of %d: row %d is %q %d, want %q %d", f, batch, i, keys[i], nums[i], want, i)
				}
			}
		}
	}
}
