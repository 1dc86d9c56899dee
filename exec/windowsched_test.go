package exec

import (
	"context"
	"fmt"
	"sort"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

// The window job of the randomized fault schedule (faultsched_test.go,
// planWindow): the schedule's source with an event time t = 10 ms times
// the row's position in its split, WATERMARK FOR t AS t - 1.3 s, then
// HASH(k) -> HOP(slide 1 s, size 2 s) window aggregation of COUNT(*) and
// SUM(v) per k, with the two-phase sink chained. A round of batches covers
// 1.28 s of event time per split, so windows stay open across several
// checkpoints, slices are shared by two windows, and the watermark (and
// its restore) decides when they fire. The splits advance in lockstep, so
// no row is ever behind the watermark: the oracle is every row in both of
// its windows, exactly once. The delay is barely more than a round (a
// batch holds a round of each of its splits, one after the other): a
// watermark that runs ahead of a channel's by a round or more, e.g. one
// replayed wrongly from unaligned channel state, makes rows late.

const (
	windowSchedStep  = 10   // ms of event time per row of a split
	windowSchedDelay = 1300 // watermark delay
	windowSchedSlide = 1000
	windowSchedSize  = 2000
)

var windowSchedSchema = catalog.Schema{{Name: "k", Type: catalog.BigInt}, {Name: "v", Type: catalog.BigInt}, {Name: "t", Type: catalog.Timestamp}}

func windowSchedPlan(par int) *planner.Physical {
	return timedSchedPlan(par, planner.WindowSpec{Kind: planner.Hop, Slide: windowSchedSlide, Size: windowSchedSize})
}

// sessionSchedPlan is planSession's job: windowSchedPlan with a SESSION
// window of gap sessionSchedGap (the source's keys are row % sessionSchedKeys).
func sessionSchedPlan(par int) *planner.Physical {
	return timedSchedPlan(par, planner.WindowSpec{Kind: planner.Session, Gap: sessionSchedGap})
}

const (
	sessionSchedKeys = 101 // ~300 rows a key, 167 ms apart on average
	sessionSchedGap  = 100
)

func timedSchedPlan(par int, spec planner.WindowSpec) *planner.Physical {
	big, ts := catalog.BigInt, catalog.Timestamp.WithNotNull(true)
	src := &planner.Task{Name: "src", Parallelism: par, Source: &planner.SourceSpec{Table: &catalog.Table{Name: "gen"}, Schema: windowSchedSchema, ID: "src"},
		Ops:       []planner.Op{&planner.WatermarkAssignerOp{ID: "wm", TimeCol: 2, TimeName: "t", Delay: windowSchedDelay}},
		OutSchema: windowSchedSchema}
	out := catalog.Schema{{Name: "k", Type: big}, {Name: "window_start", Type: ts}, {Name: "window_end", Type: ts}, {Name: "window_time", Type: ts},
		{Name: "n", Type: big.WithNotNull(true)}, {Name: "s", Type: big}}
	win := &planner.WindowAggOp{ID: "win", Keys: []int{0}, KeyNames: []string{"k"}, TimeCol: 2, TimeName: "t",
		Window: spec,
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

// sessionSchedWant is the folded output of the uninterrupted session job:
// per key, its rows' times in order, a session ending where the next row
// comes more than the gap after the last (no row is late: the splits
// advance in lockstep, 1.28 s of event time a round, the watermark 1.3 s
// behind).
func sessionSchedWant() []string {
	type ev struct{ t, v int64 }
	rows := map[int64][]ev{}
	for j := int64(0); j < schedSplits; j++ {
		for i := int64(0); i < schedRows/schedSplits; i++ {
			_, v, t := windowSchedRow(j, i)
			k := v % sessionSchedKeys
			rows[k] = append(rows[k], ev{t, v})
		}
	}
	f := folded{}
	for k, es := range rows {
		sort.Slice(es, func(a, b int) bool { return es[a].t < es[b].t })
		start, n, sum := es[0].t, int64(0), int64(0)
		for i, e := range es {
			n, sum = n+1, sum+e.v
			if i == len(es)-1 || es[i+1].t-e.t > sessionSchedGap {
				end := e.t + sessionSchedGap
				f[fmt.Sprintf("%d|%d|%d|%d|%d|%d|", k, start, end, end-1, n, sum)]++
				if i+1 < len(es) {
					start, n, sum = es[i+1].t, 0, 0
				}
			}
		}
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
				if s.r.s.plan == planSession {
					k = v % sessionSchedKeys
				}
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
