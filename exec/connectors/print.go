package connectors

import (
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/exec/format"
)

// stdoutMu serialises the print sinks' writes: every subtask of every print
// sink writes one whole batch per Write call under it, so lines of different
// subtasks never interleave even when they share sc.Stdout.
var stdoutMu sync.Mutex

// PrintSink writes rows as Flink's print connector does:
// "[identifier[:N]> ]+I[v1, v2]", NULL as "null", N = subtask index + 1
// shown only when the parallelism is above 1.
//
// The print sink is not two-phase: it writes each batch as it arrives. With
// checkpointing it is at-least-once: after a restore, rows printed after
// the restored checkpoint are printed again. The blackhole sink keeps
// nothing, so it needs no checkpoint state either.
type PrintSink struct {
	w      io.Writer
	prefix string
	cols   []format.Column
	buf    []byte
}

// PrintPrefix returns the line prefix of Flink's print sink for a subtask.
func PrintPrefix(identifier string, subtask, parallelism int) string {
	switch {
	case identifier == "" && parallelism > 1:
		return strconv.Itoa(subtask+1) + "> "
	case identifier == "":
		return ""
	case parallelism > 1:
		return identifier + ":" + strconv.Itoa(subtask+1) + "> "
	}
	return identifier + "> "
}

func newPrintSink(t *catalog.Table, sc *exec.SinkContext) (*PrintSink, error) {
	w := sc.Stdout
	if w == nil {
		w = os.Stdout
	}
	if optBool(t, "standard-error", false) {
		w = os.Stderr
	}
	id, _ := t.Option("print-identifier")
	return &PrintSink{w: w, prefix: PrintPrefix(id, sc.Subtask, max(sc.Parallelism, 1))}, nil
}

// AppendRows appends the print form of every row of b to dst.
func (p *PrintSink) AppendRows(dst []byte, b exec.Batch) []byte {
	p.cols = p.cols[:0]
	for _, a := range b.Rec.Columns() {
		p.cols = append(p.cols, format.NewColumn(a))
	}
	n := b.Rows()
	for i := 0; i < n; i++ {
		dst = append(dst, p.prefix...)
		dst = append(dst, b.Op(i).String()...)
		dst = append(dst, '[')
		for j := range p.cols {
			if j > 0 {
				dst = append(dst, ',', ' ')
			}
			c := &p.cols[j]
			if c.IsNull(i) {
				dst = append(dst, "null"...)
			} else {
				dst = c.Append(dst, i, format.StylePrint)
			}
		}
		dst = append(dst, ']', '\n')
	}
	return dst
}

// Write prints the batch with one Write call.
func (p *PrintSink) Write(b exec.Batch) error {
	if b.Rec == nil || b.Rows() == 0 {
		return nil
	}
	p.buf = p.AppendRows(p.buf[:0], b)
	stdoutMu.Lock()
	_, err := p.w.Write(p.buf)
	stdoutMu.Unlock()
	if cap(p.buf) > 1<<20 {
		p.buf = nil
	}
	return err
}

// Finish implements exec.Sink.
func (p *PrintSink) Finish() error { return nil }

// Close implements exec.Sink.
func (p *PrintSink) Close() error { return nil }

// blackhole discards everything.
type blackhole struct{}

func (blackhole) Write(exec.Batch) error { return nil }
func (blackhole) Finish() error          { return nil }
func (blackhole) Close() error           { return nil }
