package exec

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/streamsql/streamsql/planner"
)

// insertOnlySpec is joinSpec (no unique key) with sides declared
// insert-only: both keep the insert-only layout (Key(side, joinKey, seq)
// -> row).
func insertOnlySpec(typ planner.JoinType, residual bool) *planner.JoinOp {
	s := joinSpec(typ, 0, false, residual)
	s.Left.Mode, s.Right.Mode = planner.InsertOnly, planner.InsertOnly
	return s
}

// insertsOnly drops every change but the inserts from g.next (and the
// rows it retracted come back to life: g.live is rebuilt).
func insertsOnly(g *joinGen, n int) []jchange {
	var cs []jchange
	for len(cs) < n {
		for _, c := range g.next(1) {
			if c.kind == Insert {
				cs = append(cs, c)
			}
		}
	}
	g.live = g.live[:0]
	return cs
}

// TestJoinInsertOnlyOracle: sides that receive only inserts keep their
// rows under short sequence-numbered keys; every join type gives, after
// every batch, the nested-loop join of all rows so far (with duplicates,
// NULL keys and the residual), at parallelism 1 and 2.
func TestJoinInsertOnlyOracle(t *testing.T) {
	for _, typ := range []planner.JoinType{planner.InnerJoin, planner.LeftJoin, planner.FullJoin, planner.SemiJoin, planner.AntiJoin} {
		for _, residual := range []bool{false, true} {
			for _, par := range []int{1, 2} {
				t.Run(fmt.Sprintf("%s/res%v/p%d", typ, residual, par), func(t *testing.T) {
					mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
					defer mem.AssertSize(t, 0)
					rng := rand.New(rand.NewSource(int64(typ)*10 + int64(par)))
					spec := insertOnlySpec(typ, residual)
					jr := newJoinRun(t, mem, spec, par)
					defer jr.close()
					for _, op := range jr.ops {
						for _, s := range op.sides {
							if s.layout != layoutAppend {
								t.Fatalf("side %s has layout %d, want the insert-only layout", s.ns, s.layout)
							}
						}
					}
					lg := &joinGen{rng: rng, nk: 5}
					rg := &joinGen{rng: rng, nk: 5, id: 1000}
					var lrows, rrows []jrow
					folded := map[string]int{}
					maxResult := 0
					for step := 0; step < 120; step++ {
						left := rng.Intn(2) == 0
						g, rows := rg, &rrows
						if left {
							g, rows = lg, &lrows
						}
						cs := insertsOnly(g, 1+rng.Intn(7))
						for _, c := range cs {
							*rows = append(*rows, c.r)
						}
						jr.out.rows = jr.out.rows[:0]
						jr.feed(left, cs)
						fold(t, folded, jr.out.rows)
						maxResult = max(maxResult, len(folded))
						want := joinOracle(typ, false, residual, true, lrows, rrows)
						if d := diffMultisets(folded, want); d != "" {
							t.Fatalf("step %d: %s", step, d)
						}
					}
					if maxResult < 3 {
						t.Fatalf("degenerate run: at most %d result rows", maxResult)
					}
				})
			}
		}
	}
}

// TestJoinInsertOnlyRetractions: a side planned insert-only that receives
// retractions after all (never from the planner) still gives the
// nested-loop join of the live rows: a retraction finds one copy of its
// row among the join key's entries.
func TestJoinInsertOnlyRetractions(t *testing.T) {
	for _, typ := range []planner.JoinType{planner.InnerJoin, planner.FullJoin, planner.SemiJoin} {
		t.Run(typ.String(), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rng := rand.New(rand.NewSource(int64(typ) + 500))
			spec := insertOnlySpec(typ, true)
			jr := newJoinRun(t, mem, spec, 2)
			defer jr.close()
			lg := &joinGen{rng: rng, nk: 4}
			rg := &joinGen{rng: rng, nk: 4, id: 1000}
			folded := map[string]int{}
			retracted := 0
			for step := 0; step < 150; step++ {
				left := rng.Intn(2) == 0
				g := rg
				if left {
					g = lg
				}
				cs := g.next(1 + rng.Intn(7))
				for _, c := range cs {
					if c.kind == Delete || c.kind == UpdateBefore {
						retracted++
					}
				}
				jr.out.rows = jr.out.rows[:0]
				jr.feed(left, cs)
				fold(t, folded, jr.out.rows)
				want := joinOracle(typ, false, true, true, lg.live, rg.live)
				if d := diffMultisets(folded, want); d != "" {
					t.Fatalf("step %d: %s", step, d)
				}
			}
			if retracted == 0 {
				t.Fatal("no retraction was fed: nothing tested")
			}
		})
	}
}

// TestJoinInsertOnlyRestore: insert-only sides checkpointed (one
// checkpoint aborted) and restored at the same and another parallelism
// continue with exactly the changes of the uninterrupted run, and so does
// a join whose sides were checkpointed in the row-keyed layout (a plan
// that did not know them insert-only) and restored in the insert-only
// one: its rows are read from their keys, and new rows' sequence numbers
// continue after the restored ones. The other way round (a plan whose
// sides now retract), retractions find the rows the insert-only layout
// stored.
func TestJoinInsertOnlyRestore(t *testing.T) {
	for _, typ := range []planner.JoinType{planner.InnerJoin, planner.LeftJoin, planner.AntiJoin} {
		for _, pp := range [][2]int{{1, 1}, {1, 2}, {2, 1}} {
			for _, change := range []string{"same", "fromRowKeyed", "toRowKeyed"} {
				name := fmt.Sprintf("%s/p%d-to-p%d/%s", typ, pp[0], pp[1], change)
				t.Run(name, func(t *testing.T) { runInsertOnlyRestore(t, typ, pp[0], pp[1], change) })
			}
		}
	}
}

func runInsertOnlyRestore(t *testing.T, typ planner.JoinType, from, to int, change string) {
	spec := insertOnlySpec(typ, true)
	first := spec
	switch change {
	case "fromRowKeyed":
		first = joinSpec(typ, 0, false, true) // Retract sides: the row-keyed layout
	case "toRowKeyed":
		// rows stored insert-only, then retracted by a plan whose sides
		// keep the row-keyed layout
		spec = joinSpec(typ, 0, false, true)
		steps := joinSteps(int64(typ)*7+int64(from), 0, 110)
		restoreAndCompare(t, first, spec, steps, from, to, true)
		return
	}
	rng := rand.New(rand.NewSource(int64(typ)*7 + int64(from)))
	lg := &joinGen{rng: rng, nk: 6}
	rg := &joinGen{rng: rng, nk: 6, id: 1000}
	var steps []joinStep
	for i := 0; i < 110; i++ {
		left := rng.Intn(2) == 0
		g := rg
		if left {
			g = lg
		}
		steps = append(steps, joinStep{left, insertsOnly(g, 1+rng.Intn(6))})
	}
	var maxSeq uint64
	for _, op := range restoreAndCompare(t, first, spec, steps, from, to, true) {
		maxSeq = max(maxSeq, op.seq)
	}
	if maxSeq <= 1 {
		t.Fatalf("no restored subtask continued after a restored sequence number (next %d)", maxSeq)
	}
}

// TestJoinInsertOnlyCandidateOrder: the rows of one join key are matched
// in row order, not in the order of their sequence numbers, whose framed
// bytes order differently from their values (255 and 256) and which
// depend on what else the subtask stored: two joins that stored other
// keys' rows before emit the same changes in the same order.
func TestJoinInsertOnlyCandidateOrder(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	spec := insertOnlySpec(planner.InnerJoin, false)
	var outs [2][]string
	for i, filler := range []int{0, 254} {
		jr := newJoinRun(t, mem, spec, 1)
		var cs []jchange
		for f := 0; f < filler; f++ { // other keys' rows: sequence numbers 1..254
			cs = append(cs, jchange{Insert, jrow{k: 100 + int64(f), id: 5000 + int64(f)}})
		}
		jr.feed(false, cs)
		// key 7's rows, in descending row order: sequence numbers from
		// 1 or from 255 on
		cs = cs[:0]
		for r := 5; r > 0; r-- {
			cs = append(cs, jchange{Insert, jrow{k: 7, id: int64(r), x: int64(r)}})
		}
		jr.feed(false, cs)
		jr.out.rows = jr.out.rows[:0]
		jr.feed(true, []jchange{{Insert, jrow{k: 7, id: 900, x: 1}}})
		outs[i] = append(outs[i], jr.out.rows...)
		jr.close()
	}
	if len(outs[0]) != 5 || strings.Join(outs[0], " ") != strings.Join(outs[1], " ") {
		t.Fatalf("the same probe matched differently:\n%v\n%v", outs[0], outs[1])
	}
}
