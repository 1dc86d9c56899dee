package exec

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/planner"
)

// watermarkAssigner generates the watermarks of WATERMARK FOR ts AS
// ts - INTERVAL 'd' ...: chained right after a source, per source subtask
// (as Flink's WatermarkAssigner for connectors without watermark
// push-down), it tracks the largest ts seen and its watermark is that
// minus d minus 1 ms (Flink's BoundedOutOfOrderness).
//
// When watermarks are emitted decides which rows are late downstream, so
// that is made independent of batching and of wall-clock timing:
//
//   - Before a row that is behind the watermark the rows before it imply
//     (ts <= that watermark: only such a row can be late anywhere
//     downstream), the batch is cut and that watermark is emitted first.
//     A row's fate is therefore what it would be if the watermark were
//     emitted after every row (Flink's per-record punctuated watermarks),
//     at any batch size, with or without a restore (the largest ts is
//     checkpointed).
//   - Otherwise the watermark is emitted after a batch when at least
//     pipeline.auto-watermark-interval (processing time, the operator's
//     clock; 0: after every batch) passed since the last one. This only
//     decides how soon windows fire, never what they contain.
//   - The end of a bounded input (and stop --drain) emits the maximum
//     watermark (the runtime), firing every window.
//
// Watermarks the source itself emits are ignored except the maximum one
// (Flink: the assigner replaces them).
//
// With table.exec.source.idle-timeout (spec.IdleTimeout > 0), a source
// subtask that produced no rows for that long on the job's clock (also
// one that never produced any: no split, or no data yet) is marked idle:
// its consumers stop waiting for its watermark (the input gate, gate.go)
// until it emits again, which its next row does (as Flink's
// WatermarkAssignerOperator). The check is a processing-time wake-up, so
// it runs between the source's batches and heartbeats.
type watermarkAssigner struct {
	spec  *planner.WatermarkAssignerOp
	ctx   *OpContext
	maxTs int64 // largest timestamp seen (NoWatermark: none)
	wm    int64 // watermark implied by maxTs
	sent  int64 // last watermark emitted
	last  time.Time
	// idleness: the clock's time of the last row (unix ns) and whether the
	// subtask is marked idle
	active int64
	idle   bool
	// takenOver are old subtasks (>= parallelism) whose state this one took
	// over at a restore at lower parallelism: deleted by every snapshot.
	takenOver []int
}

func init() {
	RegisterOperator(func(s *planner.WatermarkAssignerOp, ctx *OpContext) (Operator, error) {
		return &watermarkAssigner{spec: s, ctx: ctx, maxTs: NoWatermark, wm: NoWatermark, sent: NoWatermark}, nil
	})
}

func (a *watermarkAssigner) Open(*OpContext) error {
	if a.spec.IdleTimeout > 0 && a.ctx.Clock != nil {
		now := a.ctx.Clock.Now()
		a.active = now.UnixNano()
		a.ctx.WakeAt(now.Add(a.spec.IdleTimeout))
	}
	return nil
}

// OnProcessingTime marks the subtask idle once no row came for the idle
// timeout, else asks again for the timeout after the last row.
func (a *watermarkAssigner) OnProcessingTime(now time.Time, _ Collector) error {
	if a.idle {
		return nil
	}
	due := time.Unix(0, a.active).Add(a.spec.IdleTimeout)
	if now.Before(due) {
		a.ctx.WakeAt(due)
		return nil
	}
	a.idle = true
	if a.ctx.Metrics != nil {
		a.ctx.Metrics.IdleMarks.Add(1)
	}
	if a.ctx.markIdle == nil {
		return nil
	}
	return a.ctx.markIdle()
}

// noteRows: rows came (the subtask is active again: its batch tells its
// consumers so).
func (a *watermarkAssigner) noteRows() {
	if a.spec.IdleTimeout <= 0 || a.ctx.Clock == nil {
		return
	}
	now := a.ctx.Clock.Now()
	a.active = now.UnixNano()
	if a.idle {
		a.idle = false
		a.ctx.WakeAt(now.Add(a.spec.IdleTimeout))
	}
}

func (a *watermarkAssigner) observe(ts int64) {
	if ts > a.maxTs {
		a.maxTs = ts
		a.wm = ts - a.spec.Delay - 1
	}
}

func (a *watermarkAssigner) emit(out Collector) error {
	if a.wm <= a.sent {
		return nil
	}
	a.sent = a.wm
	if a.ctx.Clock != nil {
		a.last = a.ctx.Clock.Now()
	}
	return out.EmitWatermark(a.wm)
}

func (a *watermarkAssigner) ProcessBatch(_ int, b Batch, out Collector) error {
	col, ok := b.Rec.Column(a.spec.TimeCol).(*array.Timestamp)
	if !ok {
		b.Rec.Release()
		return fmt.Errorf("watermark column %s is not a TIMESTAMP", a.spec.TimeName)
	}
	vs := col.TimestampValues()
	nulls := col.NullN() > 0
	if len(vs) > 0 {
		a.noteRows()
	}
	start := 0
	for i, v := range vs {
		if nulls && col.IsNull(i) {
			continue
		}
		t := int64(v)
		if t <= a.wm && a.wm > a.sent {
			// Row i is behind a watermark not emitted yet: emit the rows
			// before it, then the watermark.
			if i > start {
				if err := out.Collect(sliceBatch(b, start, i)); err != nil {
					b.Rec.Release()
					return err
				}
				start = i
			}
			if err := a.emit(out); err != nil {
				b.Rec.Release()
				return err
			}
		}
		a.observe(t)
	}
	if start == 0 {
		if err := out.Collect(b); err != nil {
			return err
		}
	} else {
		err := out.Collect(sliceBatch(b, start, len(vs)))
		b.Rec.Release()
		if err != nil {
			return err
		}
	}
	if a.spec.Interval <= 0 || a.ctx.Clock == nil || a.ctx.Clock.Now().Sub(a.last) >= a.spec.Interval {
		return a.emit(out)
	}
	return nil
}

// sliceBatch returns rows [lo, hi) of b as a new reference.
func sliceBatch(b Batch, lo, hi int) Batch {
	part := Batch{Rec: b.Rec.NewSlice(int64(lo), int64(hi))}
	if b.Ops != nil {
		part.Ops = b.Ops[lo:hi]
	}
	return part
}

func (a *watermarkAssigner) ProcessWatermark(wm int64, out Collector) error {
	if wm == MaxWatermark && a.sent != MaxWatermark {
		a.sent, a.wm = MaxWatermark, MaxWatermark
		return out.EmitWatermark(MaxWatermark)
	}
	return nil
}

// Snapshot stores the largest timestamp seen, per subtask.
func (a *watermarkAssigner) Snapshot(_ int64, w checkpoint.StateWriter) error {
	v := binary.BigEndian.AppendUint64(nil, uint64(a.maxTs))
	if err := w.Put(checkpoint.SubtaskKey(a.spec.ID, a.ctx.Subtask), v); err != nil {
		return err
	}
	for _, j := range a.takenOver {
		if err := w.Delete(checkpoint.SubtaskKey(a.spec.ID, j)); err != nil {
			return err
		}
	}
	return nil
}

// Restore: at the same parallelism a subtask continues from its own
// largest timestamp. After a rescale the sources hand their splits over by
// split (exec.SplitSource), so a subtask may read splits of any old
// subtask: it starts from the smallest largest timestamp of all of them,
// so that no row of a split becomes late because another split was ahead
// (a lower watermark only delays firing). Old subtasks beyond the
// parallelism are deleted by the next snapshots of new subtask i mod p.
func (a *watermarkAssigner) Restore(r checkpoint.StateReader) error {
	k0 := checkpoint.SubtaskKey(a.spec.ID, 0)
	prefix := k0[:len(k0)-4]
	var own, low int64
	n, haveOwn := 0, false
	err := r.Scan(prefix, func(k, v []byte) error {
		if len(k) != len(k0) || len(v) != 8 {
			return nil
		}
		i := int(binary.BigEndian.Uint32(k[len(prefix):]))
		ts := int64(binary.BigEndian.Uint64(v))
		if i >= a.ctx.Parallelism && i%a.ctx.Parallelism == a.ctx.Subtask {
			a.takenOver = append(a.takenOver, i)
		}
		if i == a.ctx.Subtask {
			own, haveOwn = ts, true
		}
		if n == 0 || ts < low {
			low = ts
		}
		n++
		return nil
	})
	if err != nil || n == 0 {
		return err
	}
	a.maxTs = low
	if haveOwn && n == a.ctx.Parallelism {
		a.maxTs = own
	}
	if a.maxTs != NoWatermark {
		a.wm = a.maxTs - a.spec.Delay - 1
	}
	return nil
}

func (a *watermarkAssigner) NotifyComplete(int64) error { return nil }
func (a *watermarkAssigner) NotifyAborted(int64) error  { return nil }
func (a *watermarkAssigner) Finish(Collector) error     { return nil }
func (a *watermarkAssigner) Close() error               { return nil }
