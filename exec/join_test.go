package exec

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

// Test rows: left (k, id, s STRING), right (k, id, w); k nullable.
type jrow struct {
	null bool
	k    int64
	id   int64
	x    int64 // left: s = fmt "s<x>"; right: w
}

type jchange struct {
	kind RowKind
	r    jrow
}

var (
	joinLeftSchema  = catalog.Schema{{Name: "k", Type: catalog.BigInt}, {Name: "id", Type: catalog.BigInt}, {Name: "s", Type: catalog.String}}
	joinRightSchema = catalog.Schema{{Name: "k2", Type: catalog.BigInt}, {Name: "id2", Type: catalog.BigInt}, {Name: "w", Type: catalog.BigInt}}
)

func joinBatch(mem memory.Allocator, left bool, cs []jchange) Batch {
	sch := joinRightSchema
	if left {
		sch = joinLeftSchema
	}
	b := array.NewRecordBuilder(mem, sch.Arrow())
	defer b.Release()
	ops := make([]RowKind, len(cs))
	for i, c := range cs {
		ops[i] = c.kind
		if c.r.null {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(c.r.k)
		}
		b.Field(1).(*array.Int64Builder).Append(c.r.id)
		if left {
			b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("s%d", c.r.x))
		} else {
			b.Field(2).(*array.Int64Builder).Append(c.r.x)
		}
	}
	return Batch{Rec: b.NewRecord(), Ops: ops}
}

// joinSpec builds the JoinOp of the tests. uk: 0 none, 1 unique key id
// (HasUniqueKey), 2 unique key k (JoinKeyContainsUniqueKey). residual:
// left.id <= right.w.
func joinSpec(typ planner.JoinType, uk int, nullSafe, residual bool) *planner.JoinOp {
	return joinSpecKeys(typ, uk, nullSafe, residual, true)
}

// joinSpecKeys is joinSpec; without keys the join is a cross join
// (filtered by the residual), run at parallelism 1.
func joinSpecKeys(typ planner.JoinType, uk int, nullSafe, residual, keyed bool) *planner.JoinOp {
	side := func(s catalog.Schema) planner.JoinSide {
		js := planner.JoinSide{Keys: []int{0}, Mode: planner.Retract, Schema: s}
		if !keyed {
			js.Keys = nil
		}
		switch uk {
		case 1:
			js.UniqueKey = []int{1}
		case 2:
			js.UniqueKey = []int{0}
		}
		return js
	}
	s := &planner.JoinOp{ID: "j", Type: typ, Left: side(joinLeftSchema), Right: side(joinRightSchema), NullSafe: []bool{nullSafe}, OutMode: planner.Retract}
	if !keyed {
		s.NullSafe = nil
	}
	if residual {
		s.Residual = &planner.Call{Fn: "<=", Args: []planner.Expr{&planner.ColRef{Index: 1, Name: "id", T: catalog.BigInt}, &planner.ColRef{Index: 5, Name: "w", T: catalog.BigInt}}, T: catalog.Boolean}
	}
	out := catalog.Schema{}
	for _, c := range joinLeftSchema {
		out = append(out, catalog.Column{Name: c.Name, Type: c.Type.Nullable()})
	}
	if typ != planner.SemiJoin && typ != planner.AntiJoin {
		for _, c := range joinRightSchema {
			out = append(out, catalog.Column{Name: c.Name, Type: c.Type.Nullable()})
		}
	}
	s.Out = out
	return s
}

const joinTestMaxP = 8

func joinKG(sub, par int) KeyGroups {
	return KeyGroups{Start: (sub*joinTestMaxP + par - 1) / par, End: ((sub+1)*joinTestMaxP + par - 1) / par, MaxParallelism: joinTestMaxP}
}

func newTestJoin(t *testing.T, s *planner.JoinOp, mem memory.Allocator, sub, par int, clock Clock, ttl time.Duration) *streamJoin {
	t.Helper()
	op, err := newJoin(s, &OpContext{OpID: s.ID, Subtask: sub, Parallelism: par, KeyGroups: joinKG(sub, par), Checkpointing: true, Mem: mem, BatchSize: 7, Clock: clock, StateTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// changeOut records every emitted row as "kind(row)".
type changeOut struct {
	rows []string
	wms  []int64
}

func (c *changeOut) Collect(b Batch) error {
	defer b.Rec.Release()
	for i := 0; i < b.Rows(); i++ {
		c.rows = append(c.rows, b.Op(i).String()+"["+fmtRow(b.Rec, i)+"]")
	}
	return nil
}
func (c *changeOut) EmitWatermark(wm int64) error { c.wms = append(c.wms, wm); return nil }

func fmtRow(rec arrow.Record, i int) string {
	parts := make([]string, rec.NumCols())
	for j := range parts {
		col := rec.Column(j)
		if col.IsNull(i) {
			parts[j] = "null"
			continue
		}
		switch a := col.(type) {
		case *array.Int64:
			parts[j] = fmt.Sprint(a.Value(i))
		case *array.String:
			parts[j] = a.Value(i)
		default:
			parts[j] = "?"
		}
	}
	return strings.Join(parts, ",")
}

func lrow(k, id, x int64) jrow { return jrow{k: k, id: id, x: x} }

// TestJoinRowKinds checks the exact changelogs of Flink's operators for
// small examples.
func TestJoinRowKinds(t *testing.T) {
	ins := func(r jrow) jchange { return jchange{Insert, r} }
	del := func(r jrow) jchange { return jchange{Delete, r} }
	ub := func(r jrow) jchange { return jchange{UpdateBefore, r} }
	ua := func(r jrow) jchange { return jchange{UpdateAfter, r} }
	type step struct {
		left bool
		cs   []jchange
		want string
	}
	l1, r1, r2 := lrow(1, 10, 1), lrow(1, 20, 100), lrow(1, 21, 200)
	cases := []struct {
		name  string
		typ   planner.JoinType
		steps []step
	}{
		{"left", planner.LeftJoin, []step{
			{true, []jchange{ins(l1)}, "+I[1,10,s1,null,null,null]"},
			{false, []jchange{ins(r1)}, "-D[1,10,s1,null,null,null] +I[1,10,s1,1,20,100]"},
			{false, []jchange{ins(r2)}, "+I[1,10,s1,1,21,200]"},
			{false, []jchange{del(r1)}, "-D[1,10,s1,1,20,100]"},
			{false, []jchange{del(r2)}, "-D[1,10,s1,1,21,200] +I[1,10,s1,null,null,null]"},
			{true, []jchange{del(l1)}, "-D[1,10,s1,null,null,null]"},
		}},
		{"left-update-right", planner.LeftJoin, []step{
			{true, []jchange{ins(l1)}, "+I[1,10,s1,null,null,null]"},
			{false, []jchange{ins(r1)}, "-D[1,10,s1,null,null,null] +I[1,10,s1,1,20,100]"},
			// a retraction of the inner side keeps its kind (-U), the
			// accumulate of an outer join is +I
			{false, []jchange{ub(r1), ua(lrow(1, 20, 101))}, "-U[1,10,s1,1,20,100] +I[1,10,s1,null,null,null] -D[1,10,s1,null,null,null] +I[1,10,s1,1,20,101]"},
		}},
		{"inner", planner.InnerJoin, []step{
			{true, []jchange{ins(l1)}, ""},
			{false, []jchange{ins(r1)}, "+I[1,10,s1,1,20,100]"},
			{true, []jchange{ub(l1), ua(lrow(1, 10, 2))}, "-U[1,10,s1,1,20,100] +U[1,10,s2,1,20,100]"},
			{false, []jchange{del(r1)}, "-D[1,10,s2,1,20,100]"},
		}},
		{"right", planner.RightJoin, []step{
			{false, []jchange{ins(r1)}, "+I[null,null,null,1,20,100]"},
			{true, []jchange{ins(l1)}, "-D[null,null,null,1,20,100] +I[1,10,s1,1,20,100]"},
			{true, []jchange{ub(l1)}, "-U[1,10,s1,1,20,100] +I[null,null,null,1,20,100]"},
		}},
		{"full", planner.FullJoin, []step{
			{true, []jchange{ins(l1)}, "+I[1,10,s1,null,null,null]"},
			{false, []jchange{ins(r1), ins(r2)}, "-D[1,10,s1,null,null,null] +I[1,10,s1,1,20,100] +I[1,10,s1,1,21,200]"},
			{true, []jchange{del(l1)}, "-D[1,10,s1,1,20,100] +I[null,null,null,1,20,100] -D[1,10,s1,1,21,200] +I[null,null,null,1,21,200]"},
			{true, []jchange{ins(jrow{null: true, id: 11, x: 3})}, "+I[null,11,s3,null,null,null]"},
		}},
		{"semi", planner.SemiJoin, []step{
			{true, []jchange{ins(l1)}, ""},
			{false, []jchange{ua(r1)}, "+U[1,10,s1]"},
			{false, []jchange{ins(r2)}, ""},
			{false, []jchange{del(r1)}, ""},
			{false, []jchange{ub(r2)}, "-U[1,10,s1]"},
			{false, []jchange{ins(r2)}, "+I[1,10,s1]"},
			{true, []jchange{ub(l1)}, "-U[1,10,s1]"},
		}},
		{"anti", planner.AntiJoin, []step{
			{true, []jchange{ins(l1)}, "+I[1,10,s1]"},
			{false, []jchange{ins(r1)}, "-D[1,10,s1]"},
			{false, []jchange{ub(r1)}, "+I[1,10,s1]"},
			{true, []jchange{del(l1)}, "-D[1,10,s1]"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			op := newTestJoin(t, joinSpec(tc.typ, 0, false, false), mem, 0, 1, nil, 0)
			defer op.Close()
			for i, st := range tc.steps {
				out := &changeOut{}
				input := 1
				if st.left {
					input = 0
				}
				if err := op.ProcessBatch(input, joinBatch(mem, st.left, st.cs), out); err != nil {
					t.Fatal(err)
				}
				if got := strings.Join(out.rows, " "); got != st.want {
					t.Fatalf("step %d: got %q, want %q", i, got, st.want)
				}
			}
		})
	}
}

// joinGen generates a random changelog of one side: inserts, -U/+U
// updates and deletes of live rows, NULL keys, duplicate rows (without a
// unique key).
type joinGen struct {
	rng  *rand.Rand
	uk   int
	live []jrow
	id   int64
	nk   int64
}

func (g *joinGen) newRow() jrow {
	g.id++
	r := jrow{k: g.rng.Int63n(g.nk), id: g.id, x: g.rng.Int63n(40)}
	if g.rng.Intn(8) == 0 {
		r.null = true
	}
	if g.uk == 0 && len(g.live) > 0 && g.rng.Intn(4) == 0 {
		r = g.live[g.rng.Intn(len(g.live))] // a duplicate
	}
	if r.null {
		r.k = 0
	}
	if g.uk == 2 { // k is unique: take a key no live row has
		used := map[jrow]bool{}
		for _, l := range g.live {
			used[jrow{null: l.null, k: l.k}] = true
		}
		for tries := 0; ; tries++ {
			if !used[jrow{null: r.null, k: r.k}] {
				break
			}
			if tries > 20 {
				return jrow{id: -1}
			}
			r.null, r.k = g.rng.Intn(8) == 0, g.rng.Int63n(g.nk)
			if r.null { // NULL keys are one value
				r.k = 0
			}
		}
	}
	if r.null {
		r.k = 0
	}
	return r
}

func (g *joinGen) next(n int) []jchange {
	var cs []jchange
	for len(cs) < n {
		switch op := g.rng.Intn(10); {
		case op < 5 || len(g.live) == 0:
			r := g.newRow()
			if r.id < 0 {
				continue
			}
			g.live = append(g.live, r)
			cs = append(cs, jchange{Insert, r})
		case op < 8:
			i := g.rng.Intn(len(g.live))
			old := g.live[i]
			nr := old
			nr.x = g.rng.Int63n(40)
			if g.uk != 2 && g.rng.Intn(3) == 0 {
				nr.k, nr.null = g.rng.Int63n(g.nk), false // the join key changes
			}
			g.live[i] = nr
			cs = append(cs, jchange{UpdateBefore, old}, jchange{UpdateAfter, nr})
		default:
			i := g.rng.Intn(len(g.live))
			cs = append(cs, jchange{Delete, g.live[i]})
			g.live = append(g.live[:i], g.live[i+1:]...)
		}
	}
	return cs
}

func fmtJRow(left bool, r *jrow) []string {
	if r == nil {
		return []string{"null", "null", "null"}
	}
	k := fmt.Sprint(r.k)
	if r.null {
		k = "null"
	}
	x := fmt.Sprint(r.x)
	if left {
		x = "s" + x
	}
	return []string{k, fmt.Sprint(r.id), x}
}

// joinOracle is the nested-loop join of the live rows of both sides.
func joinOracle(typ planner.JoinType, nullSafe, residual, keyed bool, ls, rs []jrow) map[string]int {
	match := func(l, r jrow) bool {
		if !keyed {
			return !residual || l.id <= r.x
		}
		if l.null || r.null {
			if !(nullSafe && l.null && r.null) {
				return false
			}
		} else if l.k != r.k {
			return false
		}
		return !residual || l.id <= r.x
	}
	res := map[string]int{}
	add := func(l, r *jrow) {
		cols := fmtJRow(true, l)
		if typ != planner.SemiJoin && typ != planner.AntiJoin {
			cols = append(cols, fmtJRow(false, r)...)
		}
		res[strings.Join(cols, ",")]++
	}
	rMatched := make([]bool, len(rs))
	for i := range ls {
		n := 0
		for j := range rs {
			if match(ls[i], rs[j]) {
				n++
				rMatched[j] = true
				if typ != planner.SemiJoin && typ != planner.AntiJoin {
					add(&ls[i], &rs[j])
				}
			}
		}
		switch {
		case typ == planner.SemiJoin && n > 0, typ == planner.AntiJoin && n == 0, n == 0 && typ.PadsRight():
			add(&ls[i], nil)
		}
	}
	if typ.PadsLeft() {
		for j := range rs {
			if !rMatched[j] {
				add(nil, &rs[j])
			}
		}
	}
	return res
}

// fold applies a changelog to a multiset of rows; it fails on a
// retraction of an absent row.
func fold(t *testing.T, m map[string]int, rows []string) {
	t.Helper()
	for _, r := range rows {
		kind, row := r[:2], r[3:len(r)-1]
		if kind == "+I" || kind == "+U" {
			m[row]++
			continue
		}
		if m[row] == 0 {
			t.Fatalf("%s retracts a row that is not in the result", r)
		}
		m[row]--
		if m[row] == 0 {
			delete(m, row)
		}
	}
}

func diffMultisets(got, want map[string]int) string {
	var d []string
	for k, v := range want {
		if got[k] != v {
			d = append(d, fmt.Sprintf("%s: got %d want %d", k, got[k], v))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			d = append(d, fmt.Sprintf("%s: got %d want 0", k, v))
		}
	}
	sort.Strings(d)
	if len(d) > 8 {
		d = d[:8]
	}
	return strings.Join(d, "; ")
}

// joinRun drives par subtasks of a join over a changelog, routing every
// row by the key group of its join key as the hash exchange does.
type joinRun struct {
	t    *testing.T
	mem  memory.Allocator
	spec *planner.JoinOp
	ops  []*streamJoin
	out  *changeOut
}

func newJoinRun(t *testing.T, mem memory.Allocator, spec *planner.JoinOp, par int) *joinRun {
	jr := &joinRun{t: t, mem: mem, spec: spec, out: &changeOut{}}
	for s := 0; s < par; s++ {
		op := newTestJoin(t, spec, mem, s, par, nil, 0)
		if par > 1 {
			op.maxPairs = 3 // batches are split into passes: the same result
		}
		jr.ops = append(jr.ops, op)
	}
	return jr
}

func (jr *joinRun) close() {
	for _, op := range jr.ops {
		op.Close()
	}
}

// feed sends a batch of one side, split by subtask.
func (jr *joinRun) feed(left bool, cs []jchange) {
	input := 1
	if left {
		input = 0
	}
	par := len(jr.ops)
	parts := make([][]jchange, par)
	if par == 1 {
		parts[0] = cs
	} else {
		probe := joinBatch(jr.mem, left, cs)
		hs := HashKeys(probe.Rec, []int{0}, nil)
		probe.Rec.Release()
		for i, c := range cs {
			kg := int(hs[i] % joinTestMaxP)
			for s := 0; s < par; s++ {
				if g := joinKG(s, par); kg >= g.Start && kg < g.End {
					parts[s] = append(parts[s], c)
				}
			}
		}
	}
	for s, p := range parts {
		if len(p) == 0 {
			continue
		}
		if err := jr.ops[s].ProcessBatch(input, joinBatch(jr.mem, left, p), jr.out); err != nil {
			jr.t.Fatal(err)
		}
	}
}

// TestJoinOracle: seeded random changelogs on both sides, every join type,
// with and without unique keys, a residual and null-safe keys, at
// parallelism 1 and 2: after every batch the folded output equals the
// nested-loop join of the folded inputs.
func TestJoinOracle(t *testing.T) {
	types := []planner.JoinType{planner.InnerJoin, planner.LeftJoin, planner.RightJoin, planner.FullJoin, planner.SemiJoin, planner.AntiJoin}
	for _, typ := range types {
		for uk := 0; uk < 3; uk++ {
			for _, residual := range []bool{false, true} {
				for _, nullSafe := range []bool{false, true} {
					for _, par := range []int{1, 2} {
						name := fmt.Sprintf("%s/uk%d/res%v/ns%v/p%d", typ, uk, residual, nullSafe, par)
						t.Run(name, func(t *testing.T) {
							seed := int64(uk*1000 + int(typ)*100 + par)
							if residual {
								seed += 7
							}
							if nullSafe {
								seed += 13
							}
							runJoinOracle(t, typ, uk, residual, nullSafe, true, par, seed)
						})
					}
				}
			}
		}
		// no equi-condition: a cross join filtered by the residual, at
		// parallelism 1 (every row in one key group)
		t.Run(fmt.Sprintf("%s/nokeys", typ), func(t *testing.T) {
			runJoinOracle(t, typ, 0, true, false, false, 1, int64(typ)+77)
		})
	}
}

func runJoinOracle(t *testing.T, typ planner.JoinType, uk int, residual, nullSafe, keyed bool, par int, seed int64) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(seed))
	spec := joinSpecKeys(typ, uk, nullSafe, residual, keyed)
	jr := newJoinRun(t, mem, spec, par)
	defer jr.close()
	lg := &joinGen{rng: rng, uk: uk, nk: 5}
	rg := &joinGen{rng: rng, uk: uk, nk: 5, id: 1000}
	folded := map[string]int{}
	maxResult, retracted := 0, 0
	for step := 0; step < 150; step++ {
		left := rng.Intn(2) == 0
		g := rg
		if left {
			g = lg
		}
		jr.out.rows = jr.out.rows[:0]
		jr.feed(left, g.next(1+rng.Intn(7)))
		fold(t, folded, jr.out.rows)
		maxResult = max(maxResult, len(folded))
		for _, r := range jr.out.rows {
			if r[0] == '-' {
				retracted++
			}
		}
		want := joinOracle(typ, nullSafe, residual, keyed, lg.live, rg.live)
		if d := diffMultisets(folded, want); d != "" {
			t.Fatalf("step %d: %s", step, d)
		}
	}
	if len(lg.live) == 0 || len(rg.live) == 0 || maxResult < 3 || retracted == 0 {
		t.Fatalf("degenerate run: %d left and %d right rows live, at most %d result rows, %d retractions", len(lg.live), len(rg.live), maxResult, retracted)
	}
}

// joinSteps is a seeded random sequence of batches of both sides.
type joinStep struct {
	left bool
	cs   []jchange
}

func joinSteps(seed int64, uk, n int) []joinStep {
	rng := rand.New(rand.NewSource(seed))
	lg := &joinGen{rng: rng, uk: uk, nk: 6}
	rg := &joinGen{rng: rng, uk: uk, nk: 6, id: 1000}
	var steps []joinStep
	for i := 0; i < n; i++ {
		left := rng.Intn(2) == 0
		g := rg
		if left {
			g = lg
		}
		steps = append(steps, joinStep{left, g.next(1 + rng.Intn(7))})
	}
	return steps
}

func sortedCopy(rows []string) []string {
	s := append([]string(nil), rows...)
	sort.Strings(s)
	return s
}

// snapshotAll snapshots every subtask of jr as checkpoint id into w.
func (jr *joinRun) snapshotAll(id int64, w memState) {
	for _, op := range jr.ops {
		if err := op.Snapshot(id, w); err != nil {
			jr.t.Fatal(err)
		}
	}
}

// TestJoinRestoreRescale: a checkpoint restored at the same and at another
// parallelism (1 -> 2, 2 -> 1, by key-group range) continues with exactly
// the changes of the uninterrupted run; so does a crash after an aborted
// checkpoint (its changes are written again by the next one).
func TestJoinRestoreRescale(t *testing.T) {
	for _, typ := range []planner.JoinType{planner.InnerJoin, planner.FullJoin, planner.LeftJoin, planner.SemiJoin, planner.AntiJoin} {
		for uk := 0; uk < 3; uk++ {
			for _, pp := range [][2]int{{1, 1}, {1, 2}, {2, 1}, {2, 2}} {
				for _, abort := range []bool{false, true} {
					name := fmt.Sprintf("%s/uk%d/p%d-to-p%d/abort%v", typ, uk, pp[0], pp[1], abort)
					t.Run(name, func(t *testing.T) { runJoinRestore(t, typ, uk, pp[0], pp[1], abort) })
				}
			}
		}
	}
}

func runJoinRestore(t *testing.T, typ planner.JoinType, uk, from, to int, abort bool) {
	spec := joinSpec(typ, uk, false, true)
	restoreAndCompare(t, spec, spec, joinSteps(int64(uk*31+int(typ)), uk, 120), from, to, abort)
}

// restoreAndCompare runs steps through a join of spec first at parallelism
// from, checkpointed after steps 30 and 70 (and, with abort, a checkpoint
// after step 50 that fails), restores it at parallelism to as a join of
// spec, and requires the rest of the steps to give exactly the changes of
// an uninterrupted run of spec (and as many state keys). It returns the
// restored subtasks (closed).
func restoreAndCompare(t *testing.T, first, spec *planner.JoinOp, steps []joinStep, from, to int, abort bool) []*streamJoin {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const a, b, c = 30, 50, 70 // checkpoints after these steps

	ref := newJoinRun(t, mem, spec, 1)
	defer ref.close()
	var refTail []string
	for i, st := range steps {
		n := len(ref.out.rows)
		ref.feed(st.left, st.cs)
		if i >= c {
			refTail = append(refTail, ref.out.rows[n:]...)
		}
	}

	run := newJoinRun(t, mem, first, from)
	defer run.close()
	store := memState{}
	for i, st := range steps[:c] {
		run.feed(st.left, st.cs)
		switch {
		case i == a-1:
			run.snapshotAll(1, store)
			for _, op := range run.ops {
				op.NotifyComplete(1)
			}
		case i == b-1 && abort:
			junk := memState{} // the failed checkpoint's writes are lost
			run.snapshotAll(2, junk)
			if len(junk) == 0 {
				t.Fatal("checkpoint 2 wrote nothing: the abort case tests nothing")
			}
			for _, op := range run.ops {
				op.NotifyAborted(2)
			}
		}
	}
	run.snapshotAll(3, store)
	for _, op := range run.ops {
		op.NotifyComplete(3)
	}
	// crash: new subtasks restored from the store
	restored := &joinRun{t: t, mem: mem, spec: spec, out: &changeOut{}}
	defer restored.close()
	for s := 0; s < to; s++ {
		op := newTestJoin(t, spec, mem, s, to, nil, 0)
		if err := op.Restore(store); err != nil {
			t.Fatal(err)
		}
		restored.ops = append(restored.ops, op)
	}
	for _, st := range steps[c:] {
		restored.feed(st.left, st.cs)
	}
	if len(refTail) == 0 {
		t.Fatal("no output after the restore: nothing compared")
	}
	got, want := sortedCopy(restored.out.rows), sortedCopy(refTail)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("after restore:\n got %v\nwant %v", got, want)
	}
	live := 0
	for _, op := range restored.ops {
		live += op.kv.Len()
	}
	if live != ref.ops[0].kv.Len() {
		t.Fatalf("restored state has %d keys, the uninterrupted run %d", live, ref.ops[0].kv.Len())
	}
	return restored.ops
}

// testMsClock is a processing-time clock the test moves (unix ms).
type testMsClock struct{ ms int64 }

func (c *testMsClock) Now() time.Time { return time.UnixMilli(c.ms) }

// TestJoinStateTTL: with table.exec.state.ttl a row not written for longer
// than the TTL no longer matches (Flink's NeverReturnExpired; an outer
// row's padded result stays, as in Flink); a write (a new match counted
// on an outer row) refreshes it.
func TestJoinStateTTL(t *testing.T) {
	ins := func(r jrow) jchange { return jchange{Insert, r} }
	for _, uk := range []int{0, 1, 2} {
		t.Run(fmt.Sprint("uk", uk), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			clk := &testMsClock{ms: 1_000_000}
			op := newTestJoin(t, joinSpec(planner.LeftJoin, uk, false, false), mem, 0, 1, clk, 10*time.Second)
			defer op.Close()
			step := func(left bool, cs []jchange, want string) {
				t.Helper()
				out := &changeOut{}
				input := 1
				if left {
					input = 0
				}
				if err := op.ProcessBatch(input, joinBatch(mem, left, cs), out); err != nil {
					t.Fatal(err)
				}
				if got := strings.Join(out.rows, " "); got != want {
					t.Fatalf("at %d ms: got %q, want %q", clk.ms, got, want)
				}
			}
			step(true, []jchange{ins(lrow(1, 10, 1)), ins(lrow(2, 11, 2))}, "+I[1,10,s1,null,null,null] +I[2,11,s2,null,null,null]")
			clk.ms += 6_000
			// l(k=1) gets a match: its association count is written (TTL refreshed)
			step(false, []jchange{ins(lrow(1, 20, 100))}, "-D[1,10,s1,null,null,null] +I[1,10,s1,1,20,100]")
			clk.ms += 6_000
			// 12 s after its insert, l(k=2) has expired: no match
			step(false, []jchange{ins(lrow(2, 21, 200))}, "")
			// l(k=1) was written 6 s ago: it still matches
			step(false, []jchange{ins(lrow(1, 22, 300))}, "+I[1,10,s1,1,22,300]")
			clk.ms += 10_001
			// everything expired: a new left row matches nothing
			step(true, []jchange{ins(lrow(1, 12, 3))}, "+I[1,12,s3,null,null,null]")
		})
	}
}

// TestJoinStateTTLCleanup: expired join rows whose key no probe reads
// again still leave the state (incremental cleanup, as Flink's) and the
// next checkpoint, in memory and in the Pebble tier with most rows cold.
// The checkpoint state (every snapshot applied) ends with only the rows
// written after the expiry.
func TestJoinStateTTLCleanup(t *testing.T) {
	ins := func(r jrow) jchange { return jchange{Insert, r} }
	for _, backend := range []string{"", "rocksdb"} {
		t.Run("backend="+backend, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			clk := &testMsClock{ms: 1_000_000}
			s := joinSpec(planner.InnerJoin, 0, false, false)
			ctx := &OpContext{OpID: s.ID, Parallelism: 1, KeyGroups: joinKG(0, 1), Checkpointing: true, Mem: mem,
				BatchSize: 1024, Clock: clk, StateTTL: 10 * time.Second}
			if backend != "" {
				ctx.StateBackend, ctx.StateMemory, ctx.StateDir = backend, 10<<20, t.TempDir()
			}
			op, err := newJoin(s, ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer op.Close()
			out := &joinCountOut{}
			const old = 20_000
			for k := 0; k < old; k += 1000 {
				var cs []jchange
				for i := k; i < k+1000; i++ {
					cs = append(cs, ins(lrow(int64(i), int64(i), 1)))
				}
				if err := op.ProcessBatch(0, joinBatch(mem, true, cs), out); err != nil {
					t.Fatal(err)
				}
			}
			ck := memState{}
			if err := op.Snapshot(1, ck); err != nil {
				t.Fatal(err)
			}
			op.NotifyComplete(1)
			if len(ck) != old {
				t.Fatalf("checkpoint 1 holds %d keys, want %d", len(ck), old)
			}
			if backend != "" {
				if st := op.kv.Stats(); st.Evictions == 0 || st.Hot >= old {
					t.Fatalf("the tier kept everything in memory: %+v", st)
				}
			}
			clk.ms += 10_001
			// right rows on keys no left row has: the probes never read
			// the expired rows; 200 batches of 100 rows look at 41,600 keys,
			// more than the 40,000 the state ever holds
			fresh := 0
			for b := 0; b < 200; b++ {
				var cs []jchange
				for i := 0; i < 100; i++ {
					cs = append(cs, ins(lrow(int64(-1-fresh), int64(fresh), 1)))
					fresh++
				}
				if err := op.ProcessBatch(1, joinBatch(mem, false, cs), out); err != nil {
					t.Fatal(err)
				}
			}
			if n := op.kv.Len(); n != fresh {
				t.Fatalf("state holds %d keys after the sweep, want the %d fresh ones", n, fresh)
			}
			if err := op.Snapshot(2, ck); err != nil {
				t.Fatal(err)
			}
			op.NotifyComplete(2)
			if len(ck) != fresh {
				t.Fatalf("checkpoint state holds %d keys, want the %d fresh ones", len(ck), fresh)
			}
			if out.n != 0 {
				t.Fatalf("%d join results; the keys never met", out.n)
			}
		})
	}
}

// TestJoinWatermarkForwarded: the join forwards the watermark it is given
// (the minimum over its inputs, computed by the runtime).
func TestJoinWatermarkForwarded(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	op := newTestJoin(t, joinSpec(planner.InnerJoin, 0, false, false), mem, 0, 1, nil, 0)
	defer op.Close()
	out := &changeOut{}
	for _, wm := range []int64{5, 9} {
		if err := op.ProcessWatermark(wm, out); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(out.wms) != "[5 9]" {
		t.Fatalf("watermarks %v", out.wms)
	}
}

// TestJoinUnsupportedColumn: a ROW column in a join input is refused with
// an error naming the join, the side and the column.
func TestJoinUnsupportedColumn(t *testing.T) {
	s := joinSpec(planner.InnerJoin, 0, false, false)
	s.Right.Schema = append(append(catalog.Schema{}, joinRightSchema...), catalog.Column{Name: "addr", Type: catalog.Row(catalog.Column{Name: "city", Type: catalog.String})})
	_, err := newJoin(s, &OpContext{OpID: "j", KeyGroups: joinKG(0, 1), Mem: memory.NewGoAllocator()})
	if err == nil || !strings.Contains(err.Error(), "right input column addr") || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("got %v", err)
	}
}

// BenchmarkJoin: an inner join; the right side (keys 0..n-1, one row
// each) is loaded first, then left batches of 1024 rows probe it (one
// match per row). uk2: the right side's key is unique (KV Get per key);
// uk0: no unique key (a KV Scan per distinct key of a batch).
func BenchmarkJoin(b *testing.B) {
	for _, uk := range []int{2, 0} {
		for _, n := range []int{1_000, 10_000} {
			b.Run(fmt.Sprintf("uk%d/state%d", uk, n), func(b *testing.B) {
				mem := memory.NewGoAllocator()
				spec := joinSpec(planner.InnerJoin, uk, false, false)
				op, err := newJoin(spec, &OpContext{OpID: "j", KeyGroups: joinKG(0, 1), Checkpointing: true, Mem: mem, BatchSize: 1024})
				if err != nil {
					b.Fatal(err)
				}
				defer op.Close()
				sink := &joinCountOut{}
				var cs []jchange
				for k := 0; k < n; k++ {
					cs = append(cs, jchange{Insert, lrow(int64(k), int64(k), int64(k))})
				}
				if err := op.ProcessBatch(1, joinBatch(mem, false, cs), sink); err != nil {
					b.Fatal(err)
				}
				rng := rand.New(rand.NewSource(1))
				probes := make([]Batch, 16)
				for i := range probes {
					cs = cs[:0]
					for r := 0; r < 1024; r++ {
						cs = append(cs, jchange{Insert, lrow(rng.Int63n(int64(n)), int64(r), 1)})
					}
					probes[i] = joinBatch(mem, true, cs)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					p := probes[i%len(probes)]
					p.Rec.Retain()
					if err := op.ProcessBatch(0, p, sink); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N)*1024/b.Elapsed().Seconds(), "rows/s")
				for _, p := range probes {
					p.Rec.Release()
				}
				if sink.n == 0 {
					b.Fatal("no output")
				}
			})
		}
	}
}

type joinCountOut struct{ n int }

func (c *joinCountOut) Collect(b Batch) error     { c.n += b.Rows(); b.Rec.Release(); return nil }
func (c *joinCountOut) EmitWatermark(int64) error { return nil }

// TestJoinStateRowTypes: rows of every supported column type (with NULLs)
// go through the join state and come back equal: the right side is stored
// first, so its output columns are decoded from the state's encoding.
func TestJoinStateRowTypes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	types := []catalog.Type{catalog.BigInt, catalog.Boolean, catalog.TinyInt, catalog.SmallInt, catalog.Int, catalog.Float, catalog.Double,
		catalog.Decimal(20, 3), catalog.String, catalog.Date, catalog.Time, catalog.Timestamp, catalog.TimestampLTZP(6),
		catalog.IntervalDT, catalog.IntervalYM}
	var rs catalog.Schema
	for i, ty := range types {
		rs = append(rs, catalog.Column{Name: fmt.Sprintf("c%d", i), Type: ty})
	}
	ls := catalog.Schema{{Name: "k", Type: catalog.BigInt}}
	out := append(append(catalog.Schema{}, ls...), rs...)
	spec := &planner.JoinOp{ID: "j", Type: planner.InnerJoin, OutMode: planner.Retract, Out: out,
		Left:  planner.JoinSide{Keys: []int{0}, Schema: ls, Mode: planner.Retract},
		Right: planner.JoinSide{Keys: []int{0}, Schema: rs, Mode: planner.Retract}}
	op := newTestJoin(t, spec, mem, 0, 1, nil, 0)
	defer op.Close()

	const n = 50
	rng := rand.New(rand.NewSource(5))
	rb := array.NewRecordBuilder(mem, rs.Arrow())
	defer rb.Release()
	for r := 0; r < n; r++ {
		rb.Field(0).(*array.Int64Builder).Append(int64(r)) // the key: never NULL
		for c := 1; c < len(types); c++ {
			f := rb.Field(c)
			if rng.Intn(5) == 0 {
				f.AppendNull()
				continue
			}
			v := rng.Int63n(2_000_000) - 1_000_000
			switch b := f.(type) {
			case *array.BooleanBuilder:
				b.Append(v%2 == 0)
			case *array.Int8Builder:
				b.Append(int8(v))
			case *array.Int16Builder:
				b.Append(int16(v))
			case *array.Int32Builder:
				b.Append(int32(v))
			case *array.Float32Builder:
				b.Append(float32(v) / 7)
			case *array.Float64Builder:
				b.Append(float64(v) / 7)
			case *array.Decimal128Builder:
				b.Append(decimal128.FromI64(v * 1_000_003))
			case *array.StringBuilder:
				b.Append(strings.Repeat("é", int(v%5+5)))
			case *array.Date32Builder:
				b.Append(arrow.Date32(v % 30000))
			case *array.Time32Builder:
				b.Append(arrow.Time32(v % 86_400_000))
			case *array.TimestampBuilder:
				b.Append(arrow.Timestamp(v * 1_000_003))
			case *array.DurationBuilder:
				b.Append(arrow.Duration(v))
			case *array.MonthIntervalBuilder:
				b.Append(arrow.MonthInterval(v % 1000))
			default:
				t.Fatalf("column %d: no generator for %T", c, f)
			}
		}
	}
	right := rb.NewRecord()
	defer right.Release()
	right.Retain()
	if err := op.ProcessBatch(1, Batch{Rec: right}, &changeOut{}); err != nil {
		t.Fatal(err)
	}
	lb := array.NewRecordBuilder(mem, ls.Arrow())
	defer lb.Release()
	for r := 0; r < n; r++ {
		lb.Field(0).(*array.Int64Builder).Append(int64(r))
	}
	got := &recsOut{}
	if err := op.ProcessBatch(0, Batch{Rec: lb.NewRecord()}, got); err != nil {
		t.Fatal(err)
	}
	defer got.release()
	if len(got.recs) != 1 || got.recs[0].NumRows() != n {
		t.Fatalf("got %d batches", len(got.recs))
	}
	res := got.recs[0]
	for c := range types {
		if !array.Equal(res.Column(1+c), right.Column(c)) {
			t.Errorf("column %s (%s): got %v, want %v", rs[c].Name, types[c], res.Column(1+c), right.Column(c))
		}
	}
}

// recsOut keeps the emitted records.
type recsOut struct{ recs []arrow.Record }

func (c *recsOut) Collect(b Batch) error     { c.recs = append(c.recs, b.Rec); return nil }
func (c *recsOut) EmitWatermark(int64) error { return nil }
func (c *recsOut) release() {
	for _, r := range c.recs {
		r.Release()
	}
}
