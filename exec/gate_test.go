package exec

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/cockroachdb/datadriven"
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
func (h *scriptGate) onBarrier(b Barrier) error {
	h.log = append(h.log, fmt.Sprintf("snapshot+forward barrier %d", b.ID))
	return nil
}
func (h *scriptGate) onCancel(id int64) error {
	h.log = append(h.log, fmt.Sprintf("forward cancel %d", id))
	return nil
}
func (h *scriptGate) onEnd() error      { h.log = append(h.log, "end"); return nil }
func (h *scriptGate) onShutdown() error { h.log = append(h.log, "shutdown"); return nil }

// TestGateScripts runs testdata/gate: scripted per-channel interleavings
// of batches, barriers, watermarks, idleness, cancel markers, ends and
// shutdowns, asserting the order in which the gate processes, snapshots
// and forwards. Directives:
//
//	gate channels=N [at-least-once]   a new gate
//	deliver                           one message per line: "<ch> data <rows>",
//	                                  "<ch> barrier <id>", "<ch> cancel <id>",
//	                                  "<ch> watermark <ts>", "<ch> idle",
//	                                  "<ch> end", "<ch> shutdown"
//	abort <id>                        the coordinator aborted checkpoint id
//
// Each directive prints what the handler was asked to do.
func TestGateScripts(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
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
