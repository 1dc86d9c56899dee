package connectors

import (
	"bytes"
	"context"
	"errors"
	"github.com/streamsql/streamsql/internal/memtest"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

var kv = catalog.Schema{{Name: "s", Type: catalog.String}, {Name: "n", Type: catalog.BigInt}}

func TestFileSource(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.csv"), "a,1\r\n\"multi\nline\",2\n\nb,3")
	writeFile(t, filepath.Join(dir, "b.csv"), "c,4\n")
	writeFile(t, filepath.Join(dir, "c.csv"), "d,5\ne,6\n")
	writeFile(t, filepath.Join(dir, ".hidden"), "x,x\n")
	writeFile(t, filepath.Join(dir, "_SUCCESS"), "")
	tb := table("f", kv, "connector", "filesystem", "path", dir, "format", "csv")
	want := "a|1,b|3,c|4,d|5,e|6,multi\nline|2"
	for _, c := range []struct{ p, batch int }{{1, 1024}, {2, 1}, {4, 2}} {
		rows, _ := runSource(t, mem, tb, c.p, c.batch)
		if got := strings.Join(rows, ","); got != want {
			t.Fatalf("p=%d: %q", c.p, got)
		}
	}
	// JSON, one file path
	jf := filepath.Join(t.TempDir(), "x.json")
	writeFile(t, jf, "{\"s\":\"j\",\"n\":7}\n{\"n\":8}\n")
	rows, _ := runSource(t, mem, table("j", kv, "connector", "filesystem", "path", jf, "format", "json"), 1, 10)
	if strings.Join(rows, ",") != "NULL|8,j|7" {
		t.Fatal(rows)
	}
}

func TestFileSourceErrors(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	f := filepath.Join(dir, "bad.csv")
	writeFile(t, f, "a,1\n\"q\nq\",2\nb,x\nc,3\n")
	run := func(tb *catalog.Table) ([]string, int64, error) {
		sc := &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: 100, SkippedRecords: new(atomic.Int64)}
		src, err := NewSource(tb, sc)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		var rows []string
		err = src.Run(context.Background(), func(r arrow.Record) error {
			rows = append(rows, recRows(r)...)
			r.Release()
			return nil
		})
		return rows, sc.SkippedRecords.Load(), err
	}
	_, _, err := run(table("f", kv, "connector", "filesystem", "path", f, "format", "csv"))
	want := f + `:4: byte offset 12: invalid BIGINT in column "n" (value "x")`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant %s", err, want)
	}
	rows, skipped, err := run(table("f", kv, "connector", "filesystem", "path", f, "format", "csv", "csv.ignore-parse-errors", "true"))
	if err != nil || skipped != 1 || strings.Join(rows, ",") != "a|1,q\nq|2,c|3" {
		t.Fatalf("rows %v skipped %d err %v", rows, skipped, err)
	}
	jf := filepath.Join(dir, "bad.json")
	writeFile(t, jf, "{\"n\":1}\n{\"n\":}\n")
	_, _, err = run(table("j", kv, "connector", "filesystem", "path", jf, "format", "json"))
	want = jf + `:2: byte offset 8: invalid JSON: invalid value at character 6 (value "{\"n\":}")`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant %s", err, want)
	}
	if _, err := NewSource(table("m", kv, "connector", "filesystem", "path", filepath.Join(dir, "missing"), "format", "csv"), &exec.SourceContext{}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatal(err)
	}
}

func TestFileSourceOffsets(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "1.csv"), "a,1\nb,2\nc,3\n")
	writeFile(t, filepath.Join(dir, "2.csv"), "d,4\ne,x\n")
	tb := table("f", kv, "connector", "filesystem", "path", dir, "format", "csv")
	sc := &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: 2}
	src, _ := NewSource(tb, sc)
	fs := src.(*FileSource)
	if f, o := fs.Offset(); f != filepath.Join(dir, "1.csv") || o != 0 {
		t.Fatal(f, o)
	}
	stop := errors.New("stop")
	src.Run(context.Background(), func(r arrow.Record) error { r.Release(); return stop })
	file, off := fs.Offset()
	src.Close()
	if file != filepath.Join(dir, "1.csv") || off != 8 {
		t.Fatalf("offset %s %d", file, off)
	}
	// resume: the error's line number accounts for the skipped prefix
	src2, _ := NewSource(tb, sc)
	defer src2.Close()
	fs2 := src2.(*FileSource)
	if err := fs2.SeekTo(filepath.Join(dir, "2.csv"), 4); err != nil {
		t.Fatal(err)
	}
	err := src2.Run(context.Background(), func(r arrow.Record) error { r.Release(); return nil })
	if err == nil || !strings.HasPrefix(err.Error(), filepath.Join(dir, "2.csv")+":2: byte offset 4: ") {
		t.Fatal(err)
	}
	if err := fs2.SeekTo(filepath.Join(dir, "2.csv"), 100); err == nil || !strings.Contains(err.Error(), "has only 8 bytes") {
		t.Fatal(err)
	}
	if err := fs2.SeekTo(filepath.Join(dir, "3.csv"), 0); err == nil || !strings.Contains(err.Error(), "not one of this subtask's files") {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "2.csv"))
	if err := fs2.SeekTo(filepath.Join(dir, "2.csv"), 0); err == nil {
		t.Fatal("missing file accepted")
	}
}

func kvRecord(mem memory.Allocator, ss []string, ns []int64, valid []bool) arrow.Record {
	b := array.NewRecordBuilder(mem, kv.Arrow())
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues(ss, valid)
	b.Field(1).(*array.Int64Builder).AppendValues(ns, nil)
	return b.NewRecord()
}

func TestPrintSink(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	rec := kvRecord(mem, []string{"hello", "", "x"}, []int64{1, 2, 3}, []bool{true, false, true})
	defer rec.Release()
	ops := []exec.RowKind{exec.Insert, exec.UpdateBefore, exec.Delete}
	cases := []struct {
		name    string
		opts    []string
		subtask int
		par     int
		ops     []exec.RowKind
		want    string
	}{
		{"p1", nil, 0, 1, nil, "+I[hello, 1]\n+I[null, 2]\n+I[x, 3]\n"},
		{"p2", nil, 1, 2, ops, "2> +I[hello, 1]\n2> -U[null, 2]\n2> -D[x, 3]\n"},
		{"id p1", []string{"print-identifier", "out"}, 0, 1, nil, "out> +I[hello, 1]\nout> +I[null, 2]\nout> +I[x, 3]\n"},
		{"id p3", []string{"print-identifier", "out"}, 2, 3, nil, "out:3> +I[hello, 1]\nout:3> +I[null, 2]\nout:3> +I[x, 3]\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			tb := table("p", kv, append([]string{"connector", "print"}, c.opts...)...)
			s, err := NewSink(tb, &exec.SinkContext{Subtask: c.subtask, Parallelism: c.par, Mem: mem, Stdout: &buf, Updating: c.ops != nil})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Write(exec.Batch{Rec: rec, Ops: c.ops}); err != nil {
				t.Fatal(err)
			}
			s.Finish()
			s.Close()
			if buf.String() != c.want {
				t.Fatalf("got\n%s\nwant\n%s", buf.String(), c.want)
			}
		})
	}
	// Flink's print form of the other types
	ts := catalog.Schema{{Name: "d", Type: catalog.Double}, {Name: "m", Type: catalog.Decimal(5, 2)}, {Name: "t", Type: catalog.Timestamp}, {Name: "b", Type: catalog.Boolean}}
	b := array.NewRecordBuilder(mem, ts.Arrow())
	b.Field(0).(*array.Float64Builder).Append(1e10)
	b.Field(1).(*array.Decimal128Builder).Append(decimalOf(150))
	b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(DatagenBaseTime + 12*3600000))
	b.Field(3).(*array.BooleanBuilder).Append(true)
	r2 := b.NewRecord()
	b.Release()
	defer r2.Release()
	var buf bytes.Buffer
	s, _ := NewSink(table("p", ts, "connector", "print"), &exec.SinkContext{Parallelism: 1, Stdout: &buf})
	s.Write(exec.Batch{Rec: r2})
	if buf.String() != "+I[1.0E10, 1.50, 2024-01-01T12:00, true]\n" {
		t.Fatalf("%q", buf.String())
	}
}

func TestFileSink(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	rec := kvRecord(mem, []string{"a,b", "", "z"}, []int64{1, 2, 3}, []bool{true, false, true})
	defer rec.Release()
	dir := filepath.Join(t.TempDir(), "out")
	list := func() []string {
		ents, _ := os.ReadDir(dir)
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		sort.Strings(out)
		return out
	}
	tb := table("sink", kv, "connector", "filesystem", "path", dir, "format", "csv")
	id := PartID(tb)
	s, err := NewSink(tb, &exec.SinkContext{Subtask: 1, Parallelism: 2, Mem: mem, Schema: kv})
	if err != nil {
		t.Fatal(err)
	}
	s.Write(exec.Batch{Rec: rec})
	if got := strings.Join(list(), " "); got != ".part-"+id+"-1-0000000000.inprogress" {
		t.Fatalf("before commit: %s", got)
	}
	if err := s.Finish(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got := strings.Join(list(), " "); got != "part-"+id+"-1-0000000000" {
		t.Fatalf("after commit: %s", got)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "part-"+id+"-1-0000000000"))
	if string(data) != "\"a,b\",1\n,2\nz,3\n" {
		t.Fatalf("%q", data)
	}
	// a second run continues the numbering; Close without Finish discards
	s2, _ := NewSink(tb, &exec.SinkContext{Subtask: 1, Parallelism: 2, Mem: mem})
	s2.Write(exec.Batch{Rec: rec})
	s2.Close()
	if got := strings.Join(list(), " "); got != "part-"+id+"-1-0000000000" {
		t.Fatalf("after abort: %s", got)
	}
	// rolling by size commits each file when there is no checkpointing
	tr := table("sink", kv, "connector", "filesystem", "path", dir, "format", "csv", "sink.rolling-policy.file-size", "1")
	s3, _ := NewSink(tr, &exec.SinkContext{Subtask: 1, Parallelism: 2, Mem: mem})
	s3.Write(exec.Batch{Rec: rec})
	s3.Write(exec.Batch{Rec: rec})
	s3.Finish()
	s3.Close()
	if got := strings.Join(list(), " "); got != "part-"+id+"-1-0000000000 part-"+id+"-1-0000000001 part-"+id+"-1-0000000002" {
		t.Fatalf("after rolling: %s", got)
	}
	// updating input: rejected for CSV, "op" for JSON
	if _, err := NewSink(tb, &exec.SinkContext{Updating: true}); err == nil || !strings.Contains(err.Error(), "use 'format' = 'json'") {
		t.Fatal(err)
	}
	jdir := filepath.Join(t.TempDir(), "j")
	tj := table("sj", kv, "connector", "filesystem", "path", jdir, "format", "json")
	sj, err := NewSink(tj, &exec.SinkContext{Parallelism: 1, Updating: true})
	if err != nil {
		t.Fatal(err)
	}
	sj.Write(exec.Batch{Rec: rec, Ops: []exec.RowKind{exec.Insert, exec.UpdateBefore, exec.UpdateAfter}})
	sj.Finish()
	sj.Close()
	data, _ = os.ReadFile(filepath.Join(jdir, "part-"+PartID(tj)+"-0-0000000000"))
	want := `{"op":"+I","s":"a,b","n":1}` + "\n" + `{"op":"-U","s":null,"n":2}` + "\n" + `{"op":"+U","s":"z","n":3}` + "\n"
	if string(data) != want {
		t.Fatalf("%s", data)
	}
}

// TestPartFilesTwoPhase exercises PreCommit/Commit across epochs.
func TestPartFilesTwoPhase(t *testing.T) {
	dir := t.TempDir()
	p, err := NewPartFiles(dir, "id", 0)
	if err != nil {
		t.Fatal(err)
	}
	visible := func() int {
		n := 0
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), ".") {
				n++
			}
		}
		return n
	}
	for epoch := int64(1); epoch <= 2; epoch++ {
		w, _ := p.Writer()
		w.WriteString("x\n")
		p.PreCommit(epoch)
	}
	if visible() != 0 {
		t.Fatal("pre-committed files are visible")
	}
	p.Commit(1)
	if visible() != 1 {
		t.Fatal("commit(1)")
	}
	p.Commit(1)
	p.Commit(2)
	if visible() != 2 {
		t.Fatal("commit(2)")
	}
	w, _ := p.Writer()
	w.WriteString("y\n")
	p.Abort()
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Fatal("abort left files")
	}
}

func decimalOf(n int64) decimal128.Num { return decimal128.FromI64(n) }

func serve(t *testing.T, handle func(c net.Conn)) (port string, done chan struct{}, ln net.Listener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done = make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		handle(c)
	}()
	_, port, _ = net.SplitHostPort(ln.Addr().String())
	return port, done, ln
}

func TestSocketSource(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	port, done, ln := serve(t, func(c net.Conn) {
		io.WriteString(c, "hello\nwor")
		io.WriteString(c, "ld\r\n\nlast")
		c.Close()
	})
	defer ln.Close()
	line := catalog.Schema{{Name: "line", Type: catalog.String}}
	tb := table("s", line, "connector", "socket", "hostname", "127.0.0.1", "port", port)
	rows, _ := runSource(t, mem, tb, 1, 2)
	<-done
	if strings.Join(rows, ",") != ",hello,last,world" {
		t.Fatalf("%q", rows)
	}
	// CSV format with another delimiter
	port, done, ln2 := serve(t, func(c net.Conn) {
		io.WriteString(c, "a,1;\"b;c\",2;")
		c.Close()
	})
	defer ln2.Close()
	tb = table("s", kv, "connector", "socket", "hostname", "127.0.0.1", "port", port, "format", "csv", "byte-delimiter", strconv.Itoa(';'))
	rows, _ = runSource(t, mem, tb, 1, 100)
	<-done
	if strings.Join(rows, ",") != "a|1,b;c|2" {
		t.Fatalf("%q", rows)
	}
}

// TestSocketSourceNoLeak cancels a source whose peer never closes and
// checks that Close joins the reader goroutine.
func TestSocketSourceNoLeak(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	before := runtime.NumGoroutine()
	release := make(chan struct{})
	port, done, ln := serve(t, func(c net.Conn) {
		io.WriteString(c, "one\n")
		<-release
		c.Close()
	})
	line := catalog.Schema{{Name: "line", Type: catalog.String}}
	tb := table("s", line, "connector", "socket", "hostname", "127.0.0.1", "port", port)
	src, err := NewSource(tb, &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: 1, Linger: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan string, 1)
	runErr := make(chan error, 1)
	go func() {
		runErr <- src.Run(ctx, func(r arrow.Record) error {
			if r != nil {
				got <- strings.Join(recRows(r), ",")
				r.Release()
			}
			return nil
		})
	}()
	if s := <-got; s != "one" {
		t.Fatal(s)
	}
	cancel()
	if err := <-runErr; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	src.Close()
	src.Close() // idempotent
	close(release)
	<-done
	ln.Close()
	// Close joined the reader (wg.Wait); a goroutine past its deferred Done
	// may still be exiting, so let it finish.
	for i := 0; i < 1000000 && runtime.NumGoroutine() > before; i++ {
		runtime.Gosched()
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// TestFileSinkTickRollsIdleFile: an unbounded job that stops writing still
// commits its file once it is older than the rollover interval.
func TestFileSinkTickRollsIdleFile(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	rec := kvRecord(mem, []string{"x"}, []int64{1}, nil)
	defer rec.Release()
	dir := filepath.Join(t.TempDir(), "out")
	tb := table("sink", kv, "connector", "filesystem", "path", dir, "format", "csv", "sink.rolling-policy.rollover-interval", "1 min")
	s, err := NewSink(tb, &exec.SinkContext{Parallelism: 1, Mem: mem, Schema: kv})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(exec.Batch{Rec: rec}); err != nil {
		t.Fatal(err)
	}
	visible := func() int {
		files, _ := ListFiles(dir)
		return len(files)
	}
	tk := s.(exec.Ticker)
	if err := tk.Tick(time.Now().Add(30 * time.Second)); err != nil || visible() != 0 {
		t.Fatalf("rolled too early: err=%v, %d visible", err, visible())
	}
	if err := tk.Tick(time.Now().Add(61 * time.Second)); err != nil || visible() != 1 {
		t.Fatalf("not rolled after the interval: err=%v, %d visible", err, visible())
	}
}
