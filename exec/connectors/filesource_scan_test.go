package connectors

import (
	"context"
	"errors"
	"fmt"
	"github.com/streamsql/streamsql/internal/memtest"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
)

// endlessQuote makes a named pipe that reads as a CSV file whose second
// record opens a quote that never closes: the rest of the input, without
// end, belongs to one quoted field. A goroutine writes it until stop is
// called; past is closed once it wrote more than after bytes. Writes block
// while the pipe is full, so by then the reader has read at least after
// minus the pipe's buffer (64 KiB).
func endlessQuote(t *testing.T, after int64) (path string, past <-chan struct{}, stop func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "stray-quote.csv")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	quit := make(chan struct{})
	done := make(chan struct{})
	pastC := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.OpenFile(path, os.O_WRONLY, 0) // blocks until the source opens it
		if err != nil {
			return
		}
		defer f.Close()
		line := []byte(strings.Repeat("x", 99) + "\n")
		chunk := append([]byte("a,1\nb,\"never closed\n"), line...)
		var written int64
		for {
			select {
			case <-quit:
				return
			default:
			}
			n, err := f.Write(chunk)
			if err != nil {
				return
			}
			if written < after && written+int64(n) >= after {
				close(pastC)
			}
			written += int64(n)
			chunk = line
		}
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		close(quit)
		// Unblock a writer still waiting for a reader to open the pipe.
		if f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-done
	}
	t.Cleanup(stop)
	return path, pastC, stop
}

// runUntil runs src in a goroutine and returns its result channel.
func runAsync(ctx context.Context, src exec.Source, emit func(arrow.Record) error) <-chan error {
	ret := make(chan error, 1)
	go func() { ret <- src.Run(ctx, emit) }()
	return ret
}

func stringIntSource(t testing.TB, mem memory.Allocator, path string) exec.Source {
	t.Helper()
	tb := table("f", catalog.Schema{{Name: "s", Type: catalog.String}, {Name: "n", Type: catalog.String}},
		"connector", "filesystem", "path", path, "format", "csv")
	src, err := NewSource(tb, &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: 1024, SkippedRecords: new(atomic.Int64)})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestFileSourceCancelInsideRecord: a job reading a record that never ends
// (an unterminated quote) returns ctx's error within a second of the
// cancellation. Before, the source looked at its context only between
// batches, so STOP JOB and SIGTERM waited for the end of the scan.
func TestFileSourceCancelInsideRecord(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	path, past, stop := endlessQuote(t, 3<<20)
	src := stringIntSource(t, mem, path)
	defer src.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ret := runAsync(ctx, src, func(r arrow.Record) error {
		if r != nil {
			r.Release()
		}
		return nil
	})
	select {
	case <-past: // well inside the quoted field
	case err := <-ret:
		t.Fatalf("Run returned %v before the cancellation", err)
	}
	cancel()
	select {
	case err := <-ret:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v, want context.Canceled", err)
		}
	case <-time.After(time.Second):
		stop() // end the input, so that Run returns
		<-ret
		t.Fatal("Run did not return within a second of the cancellation")
	}
}

// TestFileSourceHeartbeatInsideRecord: while it reads one long record the
// source keeps calling emit(nil), through which the runtime injects
// barriers and stop-with-savepoint requests, and returns what emit
// returned.
func TestFileSourceHeartbeatInsideRecord(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	path, _, stop := endlessQuote(t, 0)
	src := stringIntSource(t, mem, path)
	defer src.Close()
	errStop := errors.New("stop requested")
	beats := 0
	ret := runAsync(context.Background(), src, func(r arrow.Record) error {
		if r != nil {
			r.Release()
			return nil
		}
		if beats++; beats == 3 {
			return errStop
		}
		return nil
	})
	select {
	case err := <-ret:
		if !errors.Is(err, errStop) {
			t.Fatalf("Run returned %v, want the error of the heartbeat", err)
		}
	case <-time.After(10 * time.Second):
		stop()
		<-ret
		t.Fatal("no heartbeat stopped the source in 10 s")
	}
}

// TestFileSourceStrayQuoteError: the unterminated field is reported once
// the file ends, at the record where it started.
func TestFileSourceStrayQuoteError(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	path := filepath.Join(t.TempDir(), "q.csv")
	writeFile(t, path, "a,1\nb,\"open\n"+strings.Repeat("c,3\n", 50000))
	src := stringIntSource(t, mem, path)
	defer src.Close()
	rows := 0
	err := src.Run(context.Background(), func(r arrow.Record) error {
		if r != nil {
			rows += int(r.NumRows())
			r.Release()
		}
		return nil
	})
	want := fmt.Sprintf("%s:2: byte offset 4: unterminated quoted field", path)
	if err == nil || !strings.HasPrefix(err.Error(), want) || rows != 1 {
		t.Fatalf("got %d rows and %v, want 1 row and %s", rows, err, want)
	}
}

// TestFileSourceInvalidUTF8: ill-formed UTF-8 in a file becomes U+FFFD, one
// per maximal ill-formed subsequence, in CSV and JSON alike.
func TestFileSourceInvalidUTF8(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	c := filepath.Join(dir, "a.csv")
	writeFile(t, c, "caf\xE9,1\n\"\xE2\x82,\xFF\",2\n")
	rows, _ := runSource(t, mem, table("c", kv, "connector", "filesystem", "path", c, "format", "csv"), 1, 1024)
	if got, want := strings.Join(rows, ","), "caf\uFFFD|1,\uFFFD,\uFFFD|2"; got != want {
		t.Errorf("csv: %q, want %q", got, want)
	}
	j := filepath.Join(dir, "a.json")
	writeFile(t, j, "{\"s\":\"caf\xE9\",\"n\":1}\n{\"s\":[\"\xED\xA0\x80\"],\"n\":2}\n")
	rows, _ = runSource(t, mem, table("j", kv, "connector", "filesystem", "path", j, "format", "json"), 1, 1024)
	if got, want := strings.Join(rows, ","), "[\"\uFFFD\uFFFD\uFFFD\"]|2,caf\uFFFD|1"; got != want {
		t.Errorf("json: %q, want %q", got, want)
	}
}

// TestSocketSourceInvalidUTF8: raw socket lines follow the same rule.
func TestSocketSourceInvalidUTF8(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	port, done, ln := serve(t, func(c net.Conn) {
		io.WriteString(c, "caf\xE9\nok\n\xF0\x9F\x98")
		c.Close()
	})
	defer ln.Close()
	tb := table("s", catalog.Schema{{Name: "line", Type: catalog.String}}, "connector", "socket", "hostname", "127.0.0.1", "port", port)
	rows, _ := runSource(t, mem, tb, 1, 100)
	<-done
	if got, want := strings.Join(rows, ","), "caf\uFFFD,ok,\uFFFD"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}

// TestFileSourceBOM: a UTF-8 byte order mark at the start of a file is
// skipped (CSV and JSON), and offsets still count it.
func TestFileSourceBOM(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	bom := "\xEF\xBB\xBF"
	c := filepath.Join(dir, "a.csv")
	writeFile(t, c, bom+"a,1\nb,2\n")
	rows, _ := runSource(t, mem, table("c", kv, "connector", "filesystem", "path", c, "format", "csv"), 1, 1024)
	if got := strings.Join(rows, ","); got != "a|1,b|2" {
		t.Errorf("csv: %q", got)
	}
	j := filepath.Join(dir, "a.json")
	writeFile(t, j, bom+`{"s":"a","n":1}`+"\n")
	rows, _ = runSource(t, mem, table("j", kv, "connector", "filesystem", "path", j, "format", "json"), 1, 1024)
	if got := strings.Join(rows, ","); got != "a|1" {
		t.Errorf("json: %q", got)
	}
	// A bad first record names byte offset 3, after the mark.
	bad := filepath.Join(dir, "bad.csv")
	writeFile(t, bad, bom+"a,x\n")
	src, err := NewSource(table("b", kv, "connector", "filesystem", "path", bad, "format", "csv"),
		&exec.SourceContext{Parallelism: 1, Mem: mem, SkippedRecords: new(atomic.Int64)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	err = src.Run(context.Background(), func(r arrow.Record) error {
		if r != nil {
			r.Release()
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "bad.csv:1: byte offset 3: invalid BIGINT") {
		t.Errorf("bad record: %v", err)
	}
}

// BenchmarkFileSourceStrayQuote reads a file whose second record opens a
// quote that never closes (the rest of the file is one quoted field) up to
// the "unterminated quoted field" error. ns/op per line must stay flat as
// the file grows (it grew linearly per line: quadratic time).
func BenchmarkFileSourceStrayQuote(b *testing.B) {
	for _, n := range []int{20_000, 80_000, 320_000} {
		b.Run(fmt.Sprintf("lines=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "stray.csv")
			text := "1,first\n2,\"a quote that never closes\n" + strings.Repeat("0000000,some text of a line, padded out\n", n)
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				src := stringIntSource(b, memory.DefaultAllocator, path)
				err := src.Run(context.Background(), func(r arrow.Record) error {
					if r != nil {
						r.Release()
					}
					return nil
				})
				src.Close()
				if err == nil || !strings.Contains(err.Error(), "unterminated quoted field") {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/line")
		})
	}
}
