package checkpoint

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

// TestTableWritable: writes of any size (below, at and above the buffer)
// reach the file in order and whole by Finish, in few write calls; a
// failing write surfaces from Write or Finish.
func TestTableWritable(t *testing.T) {
	fs := vfs.NewMem()
	f, err := fs.Create("t.sst")
	if err != nil {
		t.Fatal(err)
	}
	cw := &countingFile{File: f}
	w := TableWritable(cw)
	r := rand.New(rand.NewPCG(1, 2))
	var want bytes.Buffer
	for _, n := range []int{0, 1, 4096, tableWriteBuffer - 1, tableWriteBuffer, tableWriteBuffer + 1, 3 * tableWriteBuffer, 7} {
		for k := 0; k < 5; k++ {
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(r.Uint32())
			}
			want.Write(p)
			if err := w.Write(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	g, err := fs.Open("t.sst")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(g)
	g.Close()
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("file holds %d bytes (err %v), want the %d written", len(got), err, want.Len())
	}
	if max := want.Len()/tableWriteBuffer + 40; cw.writes > max || cw.syncs != 1 {
		t.Fatalf("%d writes (want at most %d) and %d syncs for %d bytes", cw.writes, max, cw.syncs, want.Len())
	}

	// a failing file: the error comes back
	f2, _ := fs.Create("u.sst")
	w = TableWritable(&countingFile{File: f2, fail: true})
	if err := w.Write(make([]byte, 10)); err != nil {
		t.Fatalf("a buffered write failed early: %v", err)
	}
	if err := w.Finish(); !errors.Is(err, errWriteFailed) {
		t.Fatalf("Finish: %v, want the write's error", err)
	}
	f3, _ := fs.Create("v.sst")
	w = TableWritable(&countingFile{File: f3, fail: true})
	if err := w.Write(make([]byte, 2*tableWriteBuffer)); !errors.Is(err, errWriteFailed) {
		t.Fatalf("a write past the buffer: %v, want the write's error", err)
	}
	w.Abort()
}

var errWriteFailed = errors.New("write failed")

type countingFile struct {
	vfs.File
	writes, syncs int
	fail          bool
}

func (c *countingFile) Write(p []byte) (int, error) {
	c.writes++
	if c.fail {
		return 0, errWriteFailed
	}
	return c.File.Write(p)
}

func (c *countingFile) Sync() error {
	c.syncs++
	return c.File.Sync()
}
