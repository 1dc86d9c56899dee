package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

// The window job of the randomized fault schedule (faultsched_test.go,
// planWindow): the schedule's source with an event time t = 10 ms times
// the row's position in its split, WATERMARK FOR t AS t - 5 s, then
// HASH(k) -> HOP(slide 1 s, size 2 s) window aggregation of COUNT(*) and
// SUM(v) per k, with the two-phase sink chained. A round of batches covers
// 1.28 s of event time per split, so windows stay open across several
// checkpoints, slices are shared by two windows, and the watermark (and
// its restore) decides when they fire. The splits advance in lockstep, so
// no row is ever behind the watermark: the oracle is every row in both of
// its windows, exactly once.

const (
	windowSchedStep  = 10   // ms of event time per row of a split
	windowSchedDelay = 5000 // watermark delay
	windowSchedSlide = 1000
	windowSchedSize  = 2000
)

var windowSchedSchema = catalog.Schema{{Name: "k", Type: catalog.BigInt}, {Name: "v", Type: catalog.BigInt}, {Name: "t", Type: catalog.Timestamp}}

func windowSchedPlan(par int) *planner.Physical {
	big, ts := catalog.BigInt, catalog.Timestamp.WithNotNull(true)
	src := &planner.Task{Name: "src", Parallelism: par, Source: &planner.SourceSpec{Table: &catalog.Table{Name: "gen"}, Schema: windowSchedSchema, ID: "src"},
		Ops:       []planner.Op{&planner.WatermarkAssignerOp{ID: "wm", TimeCol: 2, TimeName: "t", Delay: windowSchedDelay}},
		OutSchema: windowSchedSchema}
	out := catalog.Schema{{Name: "k", Type: big}, {Name: "window_start", Type: ts}, {Name: "window_end", Type: ts}, {Name: "window_time", Type: ts},
		{Name: "n", Type: big.WithNotNull(true)}, {Name: "s", Type: big}}
	win := &planner.WindowAggOp{ID: "win", Keys: []int{0}, KeyNames: []string{"k"}, TimeCol: 2, TimeName: "t",
		Window: planner.WindowSpec{Kind: planner.Hop, Slide: windowSchedSlide, Size: windowSchedSize},
		Aggs:   []planner.AggCall{{Fn: "count_star", Arg: -1, T: big, Name: "n"}, {Fn: "sum", Arg: 1, ArgType: big, T: big, Name: "s"}},
		Out:    out}
	wt := &planner.Task{Name: "win", Parallelism: par, Ops: []planner.Op{win}, OutSchema: out, OutMode: planner.InsertOnly,
		Sink: &planner.SinkSpec{Table: &catalog.Table{Name: "txn"}, ID: "sink", Schema: out, Mode: planner.InsertOnly}}
	e := &planner.Edge{From: src, To: wt, Kind: planner.Hash, Keys: []int{0}}
	src.Outputs, wt.Inputs = []*planner.Edge{e}, []*planner.Edge{e}
	return &planner.Physical{Tasks: []*planner.Task{src, wt}, Edges: []*planner.Edge{e}}
}

// windowSchedRow is the i-th row of split j: key, value and event time.
func windowSchedRow(j, i int64) (k, v, t int64) {
	row := j + schedSplits*(i*schedStride%(schedRows/schedSplits))
	return row % schedKeys, row, i * windowSchedStep
}

// windowSchedWant is the folded output of the uninterrupted window job.
func windowSchedWant() []string {
	type acc struct{ n, s int64 }
	groups := map[[2]int64]*acc{}
	for j := int64(0); j < schedSplits; j++ {
		for i := int64(0); i < schedRows/schedSplits; i++ {
			k, v, t := windowSchedRow(j, i)
			last := t / windowSchedSlide * windowSchedSlide
			for ws := last; ws > t-windowSchedSize; ws -= windowSchedSlide {
				g := groups[[2]int64{k, ws}]
				if g == nil {
					g = &acc{}
					groups[[2]int64{k, ws}] = g
				}
				g.n++
				g.s += v
			}
		}
	}
	f := folded{}
	for key, g := range groups {
		ws := key[1]
		f[fmt.Sprintf("%d|%d|%d|%d|%d|%d|", key[0], ws, ws+windowSchedSize, ws+windowSchedSize-1, g.n, g.s)]++
	}
	return f.sorted()
}

// runTimed is schedSource.Run for planWindow: the same rows with their
// event time.
func (s *schedSource) runTimed(ctx context.Context, emit func(arrow.Record) error) error {
	schema := windowSchedSchema.Arrow()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		kb, vb := array.NewInt64Builder(s.sc.Mem), array.NewInt64Builder(s.sc.Mem)
		tb := array.NewTimestampBuilder(s.sc.Mem, windowSchedSchema[2].Type.ArrowType().(*arrow.TimestampType))
		for i := range s.splits {
			sp := &s.splits[i]
			for n := 0; n < schedBatch && sp.Next < schedRows/schedSplits; n++ {
				k, v, t := windowSchedRow(sp.J, sp.Next)
				kb.Append(k)
				vb.Append(v)
				tb.Append(arrow.Timestamp(t))
				sp.Next++
			}
		}
		if kb.Len() == 0 {
			kb.Release()
			vb.Release()
			tb.Release()
			s.r.sourceEnded(s.attempt)
			return nil
		}
		cols := []arrow.Array{kb.NewArray(), vb.NewArray(), tb.NewArray()}
		kb.Release()
		vb.Release()
		tb.Release()
		rec := array.NewRecord(schema, cols, int64(cols[0].Len()))
		for _, c := range cols {
			c.Release()
		}
		if err := emit(rec); err != nil {
			return err
		}
	}
}
