package exec

import (
	"time"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/planner"
)

// procWindowAgg is a window aggregation over a processing-time attribute
// (planner.WindowAggOp.Proctime, PROCTIME()): TUMBLE, HOP, CUMULATE and
// SESSION windows by the clock of the window operator (OpContext.Clock),
// as Flink assigns processing-time windows at the window operator.
//
// It is the event-time windowAgg with two changes:
//
//   - Every row of a batch gets the time the batch arrives (the clock, in
//     ms; never below what already fired, so no row is late): what its time
//     column holds (PROCTIME() evaluated upstream) is not read.
//   - Windows fire on processing-time timers: the state's timers (window
//     end - 1) are the same, and once the clock reaches a window's end
//     (OnProcessingTime at now: every timer < now) the window is emitted.
//     The operator asks the runtime (OpContext.WakeAt) for the earliest
//     window end. Event-time watermarks are forwarded and do not fire
//     windows, except the end of input (MaxWatermark: a bounded input's end
//     or a drain), which fires every open window, as Flink does at the end
//     of input.
//
// State (slots, timers) is checkpointed as windowAgg's; after a restore the
// windows whose end has passed fire at the first wake-up. Results depend on
// when rows arrive: not reproducible (docs/windows.md).
type procWindowAgg struct {
	*windowAgg
	asked int64 // the wake-up asked for (unix ms of a window end; 0: none)
}

func newProcWindowAgg(s *planner.WindowAggOp, ctx *OpContext) (*procWindowAgg, error) {
	w, err := newWindowAgg(s, ctx)
	if err != nil {
		return nil, err
	}
	w.proc = true
	return &procWindowAgg{windowAgg: w}, nil
}

func (p *procWindowAgg) now() int64 {
	if p.ctx.Clock == nil {
		return time.Now().UnixMilli()
	}
	return p.ctx.Clock.Now().UnixMilli()
}

// wake asks for a call when the clock reaches the earliest window end.
func (p *procWindowAgg) wake() {
	ts, ok := p.timers.Next()
	if !ok || ts == MaxWatermark {
		return
	}
	if end := ts + 1 + p.off; p.asked == 0 || end < p.asked {
		p.asked = end
		p.ctx.WakeAt(time.UnixMilli(end))
	}
}

func (p *procWindowAgg) ProcessBatch(input int, b Batch, out Collector) error {
	now := p.now()
	if p.wm != MaxWatermark && p.shift(now) <= p.wm {
		now = p.wm + p.off + 1 // the clock went back (another clock after a restore)
	}
	p.procNow = now
	if err := p.windowAgg.ProcessBatch(input, b, out); err != nil {
		return err
	}
	p.wake()
	return nil
}

// OnProcessingTime fires the windows that ended by now.
func (p *procWindowAgg) OnProcessingTime(now time.Time, out Collector) error {
	p.asked = 0
	if err := p.fireUpTo(now.UnixMilli()-1, out); err != nil {
		return err
	}
	p.wake()
	return nil
}

// ProcessWatermark forwards event time; its end fires every window.
func (p *procWindowAgg) ProcessWatermark(wm int64, out Collector) error {
	if wm == MaxWatermark {
		if err := p.fireUpTo(MaxWatermark, out); err != nil {
			return err
		}
	}
	if wm > p.forwarded {
		p.forwarded = wm
		return out.EmitWatermark(wm)
	}
	return nil
}

// Restore restores the windows and asks for the earliest window end; the
// restored per-key-group watermarks (processing times of the old run) do
// not judge lateness: no row is late in processing time.
func (p *procWindowAgg) Restore(r checkpoint.StateReader) error {
	if err := p.windowAgg.Restore(r); err != nil {
		return err
	}
	p.restored, p.restoredMax = nil, NoWatermark
	p.wake()
	return nil
}
