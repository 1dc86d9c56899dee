package exec

import (
	"context"
	"fmt"
	"github.com/streamsql/streamsql/internal/memtest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/cockroachdb/datadriven"

	"github.com/streamsql/streamsql/catalog"
)

// scriptGate records what the gate asks of its handler.
type scriptGate struct {
	log []string
}

func (h *scriptGate) onBatch(ch int, b Batch) error {
	h.log = append(h.log, fmt.Sprintf("process ch%d rows=%d", ch, b.Rows()))
	b.Rec.Release()
	return nil
}
func (h *scriptGate) onWatermark(wm int64) error {
	h.log = append(h.log, fmt.Sprintf("watermark %d", wm))
	return nil
}
func (h *scriptGate) onIdle() error {
	h.log = append(h.log, "idle")
	return nil
}
func (h *scriptGate) onBarrier(b Barrier) error {
	h.log = append(h.log, fmt.Sprintf("snapshot+forward barrier %d", b.ID))
	return nil
}
func (h *scriptGate) onCancel(id int64) error {
	h.log = append(h.log, fmt.Sprintf("forward cancel %d", id))
	return nil
}
func (h *scriptGate) onUnalignedBarrier(b Barrier) error {
	h.log = append(h.log, fmt.Sprintf("unaligned snapshot+forward barrier %d", b.ID))
	return nil
}
func (h *scriptGate) onChannelState(ch int, m Message) error {
	switch m.Kind {
	case MsgData:
		h.log = append(h.log, fmt.Sprintf("channel state ch%d rows=%d", ch, m.Batch.Rows()))
	case MsgWatermark:
		h.log = append(h.log, fmt.Sprintf("channel state ch%d watermark %d", ch, m.Watermark))
	case MsgIdle:
		h.log = append(h.log, fmt.Sprintf("channel state ch%d idle", ch))
	default:
		h.log = append(h.log, fmt.Sprintf("channel state ch%d unexpected message kind %d", ch, m.Kind))
	}
	return nil
}
func (h *scriptGate) onUnalignedDone(b Barrier) error {
	h.log = append(h.log, fmt.Sprintf("ack barrier %d with channel state", b.ID))
	return nil
}
func (h *scriptGate) onUnalignedAbort(id int64) {
	h.log = append(h.log, fmt.Sprintf("drop unaligned checkpoint %d", id))
}
func (h *scriptGate) onEnd() error      { h.log = append(h.log, "end"); return nil }
func (h *scriptGate) onShutdown() error { h.log = append(h.log, "shutdown"); return nil }

// TestGateScripts runs testdata/gate: scripted per-channel interleavings
// of batches, barriers, watermarks, idleness, cancel markers, ends and
// shutdowns, asserting the order in which the gate processes, snapshots
// and forwards. Directives:
//
//	gate channels=N [at-least-once] [unaligned]   a new gate
//	deliver                           one message per line: "<ch> data <rows>",
//	                                  "<ch> barrier <id>", "<ch> savepoint <id>", "<ch> cancel <id>",
//	                                  "<ch> watermark <ts>", "<ch> idle",
//	                                  "<ch> end", "<ch> shutdown"
//	abort <id>                        the coordinator aborted checkpoint id
//	timeout                           the alignment timeout fired
//	step                              (unaligned) process what is queued
//
// Each directive prints what the handler was asked to do.
func TestGateScripts(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var g *inputGate
	var h *scriptGate
	var chans *gateChans
	datadriven.RunTest(t, "testdata/gate", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "gate":
			var n int
			d.ScanArgs(t, "channels", &n)
			h = &scriptGate{}
			chans = newGateChans(n, 8)
			g = newInputGate(chans, n, d.HasArg("at-least-once"), h)
			g.unaligned = d.HasArg("unaligned")
			return ""
		case "deliver":
			h.log = nil
			for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
				f := strings.Fields(line)
				ch, _ := strconv.Atoi(f[0])
				arg := int64(0)
				if len(f) > 2 {
					arg, _ = strconv.ParseInt(f[2], 10, 64)
				}
				var m Message
				switch f[1] {
				case "data":
					b := array.NewInt64Builder(mem)
					for i := int64(0); i < arg; i++ {
						b.Append(i)
					}
					col := b.NewArray()
					b.Release()
					m = Message{Kind: MsgData, Batch: Batch{Rec: array.NewRecord(schema, []arrow.Array{col}, arg)}}
					col.Release()
					chans.credits[ch] <- struct{}{} // the producer's credit
				case "barrier":
					m = Message{Kind: MsgBarrier, Barrier: Barrier{ID: arg}}
				case "savepoint":
					m = Message{Kind: MsgBarrier, Barrier: Barrier{ID: arg, Kind: Savepoint}}
				case "cancel":
					m = Message{Kind: MsgCancel, Barrier: Barrier{ID: arg}}
				case "watermark":
					m = Message{Kind: MsgWatermark, Watermark: arg}
				case "idle":
					m = Message{Kind: MsgIdle}
				case "end":
					m = Message{Kind: MsgEnd}
				case "shutdown":
					m = Message{Kind: MsgShutdown}
				default:
					d.Fatalf(t, "unknown message %q", line)
				}
				m.from = ch
				if err := g.deliver(m); err != nil {
					h.log = append(h.log, "error: "+err.Error())
				}
			}
		case "timeout":
			h.log = nil
			if err := g.alignmentTimedOut(); err != nil {
				h.log = append(h.log, "error: "+err.Error())
			}
		case "step":
			h.log = nil
			for g.hasWork() {
				var err error
				if g.queueing() {
					err = g.step()
				} else {
					err = g.resume()
				}
				if err != nil {
					h.log = append(h.log, "error: "+err.Error())
					break
				}
			}
		case "abort":
			h.log = nil
			var id int64
			d.ScanArgs(t, "id", &id)
			if err := g.abortAlignment(id); err != nil {
				h.log = append(h.log, "error: "+err.Error())
			}
		default:
			d.Fatalf(t, "unknown directive %s", d.Cmd)
		}
		// An aligned gate that timed out queues like an unaligned one; the
		// runtime's loop then steps until the queues are taken.
		for !g.unaligned && g.hasWork() {
			var err error
			if g.queueing() {
				err = g.step()
			} else {
				err = g.resume()
			}
			if err != nil {
				h.log = append(h.log, "error: "+err.Error())
				break
			}
		}
		var queued []string
		for i, q := range g.queue {
			if len(q) > 0 {
				queued = append(queued, fmt.Sprintf("ch%d:%d", i, len(q)))
			}
		}
		out := h.log
		if len(queued) > 0 {
			out = append(out, "queued "+strings.Join(queued, " "))
		}
		if len(out) == 0 {
			return ""
		}
		return strings.Join(out, "\n") + "\n"
	})
	g.release()
}

// wmSource is a MessageSource: subtask i emits one batch, then watermark
// wms[i][0], another batch, then wms[i][1], ...
type wmSource struct {
	genSource
	wms  []int64
	both *sync.WaitGroup // no source ends before every source emitted all
}

func (s *wmSource) RunMessages(ctx context.Context, out SourceOutput) error {
	s.total = int64(len(s.wms)) * int64(s.sc.BatchSize) * int64(s.sc.Parallelism)
	i := 0
	err := s.genSource.Run(ctx, func(rec arrow.Record) error {
		if err := out.Emit(rec); err != nil {
			return err
		}
		wm := s.wms[i]
		i++
		return out.EmitWatermark(wm)
	})
	s.both.Done()
	s.both.Wait()
	return err
}

// wmRecorder records the watermarks an operator receives.
type wmRecorder struct {
	Operator
	mu  *sync.Mutex
	got *[]int64
}

func (o *wmRecorder) ProcessWatermark(wm int64, out Collector) error {
	o.mu.Lock()
	*o.got = append(*o.got, wm)
	o.mu.Unlock()
	return o.Operator.ProcessWatermark(wm, out)
}

// TestSourcesEmitWatermarksCombinedByMinimum: watermarks emitted by sources
// travel in-band through a hash exchange; each consumer gets the minimum
// over its input channels, never going back; a bounded source ends with
// the end of event time.
func TestSourcesEmitWatermarksCombinedByMinimum(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	wms := [][]int64{{100, 200, 300}, {50, 150, 250}}
	var mu sync.Mutex
	got := map[int]*[]int64{}
	var both sync.WaitGroup
	both.Add(2)
	cfg := JobConfig{Mem: mem, BatchSize: 16,
		NewSource: func(_ *catalog.Table, sc *SourceContext) (Source, error) {
			return &wmSource{genSource: genSource{sc: sc, keys: 7}, wms: wms[sc.Subtask], both: &both}, nil
		},
		NewSink: func(*catalog.Table, *SinkContext) (Sink, error) { return &funcSink{write: func(Batch) {}}, nil },
		Collect: func(Batch) error { return nil },
		WrapOperator: func(_ string, sub int, op Operator) Operator {
			mu.Lock()
			defer mu.Unlock()
			got[sub] = &[]int64{}
			return &wmRecorder{Operator: op, mu: &mu, got: got[sub]}
		}}
	if err := RunJob(context.Background(), aggPlan(2), cfg); err != nil {
		t.Fatal(err)
	}
	for sub, g := range got {
		w := *g
		has250 := false
		for _, x := range w {
			has250 = has250 || x == 250
		}
		if !has250 || w[len(w)-1] != MaxWatermark {
			t.Fatalf("subtask %d got watermarks %v, want min(300, 250) = 250, then the end of event time when both inputs ended", sub, w)
		}
		for i := 1; i < len(w); i++ {
			if w[i] <= w[i-1] {
				t.Fatalf("subtask %d: watermarks went back or repeated: %v", sub, w)
			}
		}
		if w[0] < 50 || w[0] > 100 {
			t.Fatalf("subtask %d: first watermark %d is above both sources' firsts: %v", sub, w[0], w)
		}
	}
}
