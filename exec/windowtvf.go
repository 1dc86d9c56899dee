package exec

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/planner"
)

// windowTVF is a window table function that is not under a window
// aggregation (planner.WindowTVFOp): every row gets window_start,
// window_end and window_time, once per window it belongs to (TUMBLE: one,
// HOP: size/slide, CUMULATE: one per step until the end of its period).
// Stateless: like Flink's window TVF alone, it drops nothing; rows with a
// NULL time are dropped.
type windowTVF struct {
	Stateless
	spec   *planner.WindowTVFOp
	mem    memory.Allocator
	schema *arrow.Schema
	take   []int32
	starts []arrow.Timestamp
	ends   []arrow.Timestamp
	times  []arrow.Timestamp
}

func init() {
	RegisterOperator(func(s *planner.WindowTVFOp, ctx *OpContext) (Operator, error) {
		return &windowTVF{spec: s, mem: ctx.Mem, schema: s.Out.Arrow()}, nil
	})
}

func (o *windowTVF) add(row int, start, end int64) {
	o.take = append(o.take, int32(row))
	o.starts = append(o.starts, arrow.Timestamp(start))
	o.ends = append(o.ends, arrow.Timestamp(end))
	o.times = append(o.times, arrow.Timestamp(end-1))
}

func (o *windowTVF) ProcessBatch(_ int, b Batch, out Collector) error {
	defer b.Rec.Release()
	tcol := b.Rec.Column(o.spec.TimeCol).(*array.Timestamp)
	ts := tcol.TimestampValues()
	nulls := tcol.NullN() > 0
	o.take, o.starts, o.ends, o.times = o.take[:0], o.starts[:0], o.ends[:0], o.times[:0]
	w := o.spec.Window
	for i, v := range ts {
		if nulls && tcol.IsNull(i) {
			continue
		}
		t := int64(v) - w.Offset // windows start at multiples of the slide plus the offset
		switch w.Kind {
		case planner.Tumble:
			s := floorDiv(t, w.Size) * w.Size
			o.add(i, s+w.Offset, s+w.Size+w.Offset)
		case planner.Hop:
			// windows [s, s+size) with s a multiple of slide, s <= t < s+size
			for s := floorDiv(t, w.Slide) * w.Slide; s > t-w.Size; s -= w.Slide {
				o.add(i, s+w.Offset, s+w.Size+w.Offset)
			}
		case planner.Cumulate:
			s := floorDiv(t, w.Size) * w.Size
			for e := floorDiv(t, w.Slide)*w.Slide + w.Slide; e <= s+w.Size; e += w.Slide {
				o.add(i, s+w.Offset, e+w.Offset)
			}
		}
	}
	if len(o.take) == 0 {
		return nil
	}
	in := expr.TakeRecord(b.Rec, o.take, o.mem)
	defer in.Release()
	cols := make([]arrow.Array, 0, in.NumCols()+3)
	cols = append(cols, in.Columns()...)
	tsType := catalog.Timestamp.ArrowType()
	extra := []arrow.Array{buildArray(o.mem, tsType, o.starts, nil), buildArray(o.mem, tsType, o.ends, nil), buildArray(o.mem, tsType, o.times, nil)}
	cols = append(cols, extra...)
	rec := expr.NewRecord(o.schema, cols, int64(len(o.take)))
	for _, c := range extra {
		c.Release()
	}
	return out.Collect(Batch{Rec: rec})
}
