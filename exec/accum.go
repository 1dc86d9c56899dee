package exec

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/planner"
)

// accumulator is the columnar state of one aggregate over all groups
// (slots). update runs one typed pass over a batch; no per-row dispatch.
type accumulator interface {
	grow(n int)
	reset(g int32)
	// update applies rows of col (nil for COUNT(*)) to their slots gids;
	// ops == nil means all rows are additions.
	update(gids []int32, col arrow.Array, ops []RowKind)
	result(slots []int32, mem memory.Allocator) arrow.Array
	// encode appends slot g's state; decode reads it back into slot g and
	// returns the bytes used (checkpoints, see aggstate.go).
	encode(dst []byte, g int32) []byte
	decode(src []byte, g int32) (int, error)
	// mergeFrom adds the state of slot s of src (an accumulator of the same
	// aggregate) to slot g: window panes combine into windows
	// (accummerge.go).
	mergeFrom(g int32, src accumulator, s int32)
	// stage appends the results of slots to the staged results (aggout.go);
	// staged returns them.
	stage(slots []int32)
	staged() stagedCol
}

// runUpdater is an accumulator that can apply an insert-only batch by
// runs of consecutive rows of one slot (gidRuns), one update of the slot
// a run: the rows of a skewed stream (Nexmark's hot auction) otherwise
// update the same slot row after row, each update waiting for the one
// before it through memory. updateRuns reports false when it cannot (the
// caller then updates by rows): a floating-point sum, whose rounding
// would depend on where runs break.
type runUpdater interface {
	updateRuns(gids, runs []int32, col arrow.Array) bool
}

// minRunRows and minRunLen: a batch of at least minRunRows rows is
// applied by runs when its runs average minRunLen rows or more.
const (
	minRunRows = 64
	minRunLen  = 8
)

// gidRuns appends to runs the first row of each run of equal slots in
// gids, then len(gids); false when there are more than max runs (runs is
// then incomplete).
func gidRuns(gids, runs []int32, max int) ([]int32, bool) {
	if len(gids) == 0 {
		return append(runs, 0), true
	}
	runs = append(runs, 0)
	prev := gids[0]
	for i, g := range gids {
		if g != prev {
			if len(runs) == max {
				return runs, false
			}
			runs = append(runs, int32(i))
			prev = g
		}
	}
	return append(runs, int32(len(gids))), true
}

// nullMask is a column's validity bitmap for per-row NULL tests without an
// interface call per row.
type nullMask struct {
	bits []byte
	off  int
}

// nullsOf returns col's validity and whether it has NULLs (an all-NULL
// array without a bitmap gets a zeroed one).
func nullsOf(col arrow.Array) (nullMask, bool) {
	if col == nil || col.NullN() == 0 { // nil: COUNT(*)'s missing argument
		return nullMask{}, false
	}
	b := col.NullBitmapBytes()
	if b == nil {
		b = make([]byte, (col.Data().Offset()+col.Len()+7)/8)
	}
	return nullMask{bits: b, off: col.Data().Offset()}, true
}

// null reports whether row i is NULL (only when nullsOf said it has NULLs).
func (m nullMask) null(i int) bool { return m.bits[(m.off+i)>>3]&(1<<((m.off+i)&7)) == 0 }

func sign(ops []RowKind, i int) int64 {
	if ops == nil || ops[i].IsAdd() {
		return 1
	}
	return -1
}

func newAccumulator(c planner.AggCall, retract bool) (accumulator, error) {
	switch c.Fn {
	case "count_star":
		return &countAcc{}, nil
	case "count":
		if c.Distinct {
			return newDistinctCount(c.ArgType)
		}
		return &countAcc{nonNull: true}, nil
	case "sum", "avg":
		avg := c.Fn == "avg"
		switch c.ArgType.Kind {
		case catalog.KindInt:
			return &sumAcc[int32, int64]{avg: avg, out: c.T}, nil
		case catalog.KindBigInt:
			return &sumAcc[int64, int64]{avg: avg, out: c.T}, nil
		case catalog.KindDouble:
			return &sumAcc[float64, float64]{avg: avg, out: c.T}, nil
		case catalog.KindDecimal:
			return &decSumAcc{avg: avg, in: c.ArgType, out: c.T}, nil
		}
		return nil, fmt.Errorf("%s does not accept %s", c.Fn, c.ArgType)
	case "min", "max":
		isMax := c.Fn == "max"
		dt := c.T.ArrowType()
		switch stateKind(c.ArgType.Kind) {
		case catalog.KindBoolean:
			return newMinMax(dt, isMax, retract, func(a, b bool) bool { return !a && b }), nil
		case catalog.KindInt:
			return newMinMax(dt, isMax, retract, cmp.Less[int32]), nil
		case catalog.KindBigInt:
			return newMinMax(dt, isMax, retract, cmp.Less[int64]), nil
		case catalog.KindDouble:
			return newMinMax(dt, isMax, retract, cmp.Less[float64]), nil
		case catalog.KindDecimal:
			return newMinMax(dt, isMax, retract, decimal128.Num.Less), nil
		case catalog.KindString:
			return newMinMax(dt, isMax, retract, cmp.Less[string]), nil
		case catalog.KindTimestamp:
			return newMinMax(dt, isMax, retract, cmp.Less[arrow.Timestamp]), nil
		}
	}
	return nil, fmt.Errorf("unsupported aggregate %s(%s)", c.Fn, c.ArgType)
}

// countAcc is COUNT(*) (nonNull false) or COUNT(x).
type countAcc struct {
	nonNull bool
	n       []int64
	scratch []int64
	st      staged[int64]
}

func (a *countAcc) staged() stagedCol { return &a.st }
func (a *countAcc) stage(slots []int32) {
	a.st.dt = arrow.PrimitiveTypes.Int64
	for _, g := range slots {
		a.st.vals = append(a.st.vals, a.n[g])
		a.st.valid = append(a.st.valid, true)
	}
}

func (a *countAcc) grow(n int) {
	a.n = state.Grow(a.n, n, 0)
}
func (a *countAcc) reset(g int32) { a.n[g] = 0 }
func (a *countAcc) update(gids []int32, col arrow.Array, ops []RowKind) {
	nm, hasNulls := nullsOf(col)
	nulls := a.nonNull && hasNulls
	switch {
	case ops == nil && !nulls:
		for _, g := range gids {
			a.n[g]++
		}
	case ops == nil: // COUNT(x) of an insert-only input: each valid row counts
		// (a word of rows at a time: a FILTER's column is NULL in most rows)
		for w := 0; w<<6 < len(gids); w++ {
			gs := gids[w<<6:]
			for m := expr.BitWord(nm.bits, nm.off, w, len(gids)); m != 0; m &= m - 1 {
				a.n[gs[bits.TrailingZeros64(m)]]++
			}
		}
	default:
		for i, g := range gids {
			if nulls && nm.null(i) {
				continue
			}
			a.n[g] += sign(ops, i)
		}
	}
}
func (a *countAcc) updateRuns(gids, runs []int32, col arrow.Array) bool {
	nm, hasNulls := nullsOf(col)
	if !a.nonNull || !hasNulls {
		for k := 0; k+1 < len(runs); k++ {
			a.n[gids[runs[k]]] += int64(runs[k+1] - runs[k])
		}
		return true
	}
	for k := 0; k+1 < len(runs); k++ {
		s, e := int(runs[k]), int(runs[k+1])
		a.n[gids[s]] += int64(bitutil.CountSetBits(nm.bits, nm.off+s, e-s))
	}
	return true
}
func (a *countAcc) result(slots []int32, mem memory.Allocator) arrow.Array {
	a.scratch = a.scratch[:0]
	for _, g := range slots {
		a.scratch = append(a.scratch, a.n[g])
	}
	return buildArray(mem, arrow.PrimitiveTypes.Int64, a.scratch, nil)
}

// sumAcc is SUM or AVG over INT, BIGINT or DOUBLE. I is the input storage,
// S the running sum's type. SUM's result type equals the input type (as
// Flink: SUM(INT) is INT); AVG of integers is integer division (as Flink).
type sumAcc[I int32 | int64 | float64, S int64 | float64] struct {
	avg  bool
	out  catalog.Type
	sum  []S
	nn   []int64 // non-null count
	sv   []bool
	sOut []S
	iOut []int32
	fOut []float64
	i64  []int64
	st32 staged[int32]
	st64 staged[int64]
	stf  staged[float64]
}

func (a *sumAcc[I, S]) staged() stagedCol {
	switch a.out.Kind {
	case catalog.KindInt:
		return &a.st32
	case catalog.KindBigInt:
		return &a.st64
	}
	return &a.stf
}

func (a *sumAcc[I, S]) stage(slots []int32) {
	switch a.out.Kind {
	case catalog.KindInt:
		a.st32.dt = a.out.ArrowType()
		stageSums(a, &a.st32, slots)
	case catalog.KindBigInt:
		a.st64.dt = a.out.ArrowType()
		stageSums(a, &a.st64, slots)
	default:
		a.stf.dt = a.out.ArrowType()
		stageSums(a, &a.stf, slots)
	}
}

// stageSums stages SUM or AVG results converted to the output type O.
func stageSums[I int32 | int64 | float64, S int64 | float64, O int32 | int64 | float64](a *sumAcc[I, S], st *staged[O], slots []int32) {
	for _, g := range slots {
		nn := a.nn[g]
		if nn <= 0 {
			st.add(0, false)
			continue
		}
		v := a.sum[g]
		if a.avg {
			v /= S(nn)
		}
		st.vals = append(st.vals, O(v))
		st.valid = append(st.valid, true)
	}
}

func (a *sumAcc[I, S]) grow(n int) {
	a.sum = state.Grow(a.sum, n, 0)
	a.nn = state.Grow(a.nn, n, 0)
}
func (a *sumAcc[I, S]) reset(g int32) { a.sum[g], a.nn[g] = 0, 0 }
func (a *sumAcc[I, S]) update(gids []int32, col arrow.Array, ops []RowKind) {
	vs := valuesOf[I](col, nil)
	nm, nulls := nullsOf(col)
	if ops == nil && !nulls {
		for i, g := range gids {
			a.sum[g] += S(vs[i])
			a.nn[g]++
		}
		return
	}
	for i, g := range gids {
		if nulls && nm.null(i) {
			continue
		}
		s := sign(ops, i)
		a.sum[g] += S(s) * S(vs[i])
		a.nn[g] += s
	}
}
func (a *sumAcc[I, S]) updateRuns(gids, runs []int32, col arrow.Array) bool {
	var zero S
	if _, float := any(zero).(float64); float {
		return false
	}
	vs := valuesOf[I](col, nil)
	nm, nulls := nullsOf(col)
	for k := 0; k+1 < len(runs); k++ {
		s, e := int(runs[k]), int(runs[k+1])
		var sum S
		nn := int64(e - s)
		if !nulls {
			for _, v := range vs[s:e] {
				sum += S(v)
			}
		} else {
			for i := s; i < e; i++ {
				if nm.null(i) {
					nn--
					continue
				}
				sum += S(vs[i])
			}
		}
		g := gids[s]
		a.sum[g] += sum
		a.nn[g] += nn
	}
	return true
}
func (a *sumAcc[I, S]) result(slots []int32, mem memory.Allocator) arrow.Array {
	a.sv = a.sv[:0]
	for _, g := range slots {
		a.sv = append(a.sv, a.nn[g] > 0)
	}
	val := func(g int32) S {
		if a.nn[g] <= 0 {
			return 0
		}
		if a.avg {
			return a.sum[g] / S(a.nn[g])
		}
		return a.sum[g]
	}
	switch a.out.Kind {
	case catalog.KindInt:
		a.iOut = a.iOut[:0]
		for _, g := range slots {
			a.iOut = append(a.iOut, int32(val(g)))
		}
		return buildArray(mem, a.out.ArrowType(), a.iOut, a.sv)
	case catalog.KindBigInt:
		a.i64 = a.i64[:0]
		for _, g := range slots {
			a.i64 = append(a.i64, int64(val(g)))
		}
		return buildArray(mem, a.out.ArrowType(), a.i64, a.sv)
	default:
		a.fOut = a.fOut[:0]
		for _, g := range slots {
			a.fOut = append(a.fOut, float64(val(g)))
		}
		return buildArray(mem, a.out.ArrowType(), a.fOut, a.sv)
	}
}

// decSumAcc is SUM or AVG over DECIMAL(p, s). The running sum keeps the
// input scale; SUM's result is DECIMAL(38, s); AVG rescales to the result
// scale and divides, rounding half up as Flink's decimal division does.
type decSumAcc struct {
	avg     bool
	in, out catalog.Type
	sum     []decimal128.Num
	nn      []int64
	sv      []bool
	res     []decimal128.Num
	st      staged[decimal128.Num]
}

func (a *decSumAcc) staged() stagedCol { return &a.st }
func (a *decSumAcc) stage(slots []int32) {
	a.st.dt = a.out.ArrowType()
	for _, g := range slots {
		v := a.sum[g]
		if a.out.Scale != a.in.Scale {
			v = v.IncreaseScaleBy(int32(a.out.Scale - a.in.Scale))
		}
		if a.avg && a.nn[g] > 0 {
			v = divHalfUp(v, a.nn[g])
		}
		a.st.add(v, a.nn[g] > 0)
	}
}

func (a *decSumAcc) grow(n int) {
	a.sum = state.Grow(a.sum, n, decimal128.Num{})
	a.nn = state.Grow(a.nn, n, 0)
}
func (a *decSumAcc) reset(g int32) { a.sum[g], a.nn[g] = decimal128.Num{}, 0 }
func (a *decSumAcc) update(gids []int32, col arrow.Array, ops []RowKind) {
	vs := valuesOf[decimal128.Num](col, nil)
	nm, nulls := nullsOf(col)
	for i, g := range gids {
		if nulls && nm.null(i) {
			continue
		}
		if sign(ops, i) > 0 {
			a.sum[g] = a.sum[g].Add(vs[i])
			a.nn[g]++
		} else {
			a.sum[g] = a.sum[g].Sub(vs[i])
			a.nn[g]--
		}
	}
}
func (a *decSumAcc) result(slots []int32, mem memory.Allocator) arrow.Array {
	a.sv, a.res = a.sv[:0], a.res[:0]
	for _, g := range slots {
		a.sv = append(a.sv, a.nn[g] > 0)
		v := a.sum[g]
		if a.out.Scale != a.in.Scale {
			v = v.IncreaseScaleBy(int32(a.out.Scale - a.in.Scale))
		}
		if a.avg && a.nn[g] > 0 {
			v = divHalfUp(v, a.nn[g])
		}
		a.res = append(a.res, v)
	}
	return buildArray(mem, a.out.ArrowType(), a.res, a.sv)
}

// minMax is MIN or MAX. On an append-only input it keeps the extreme value
// per slot; on a retracting input it keeps a multiset of values per slot so
// the extreme can be recomputed after a retraction.
type minMax[T scalar] struct {
	dt      arrow.DataType
	isMax   bool
	retract bool
	less    func(a, b T) bool // a direct call, resolved once per operator
	seen    []uint64          // retract mode: epoch a group was last recomputed
	epoch   uint64
	val     []T
	has     []bool
	multi   []multiset[T]
	redo    []int32 // retract mode: groups whose extreme was removed in this batch
	scratch []T
	sv      []bool
	in      []T
	st      staged[T]
}

func (a *minMax[T]) staged() stagedCol { return &a.st }
func (a *minMax[T]) stage(slots []int32) {
	a.st.dt = a.dt
	for _, g := range slots {
		a.st.add(a.val[g], a.has[g])
	}
}

func newMinMax[T scalar](dt arrow.DataType, isMax, retract bool, less func(a, b T) bool) *minMax[T] {
	return &minMax[T]{dt: dt, isMax: isMax, retract: retract, less: less}
}

func (a *minMax[T]) grow(n int) {
	var zero T
	a.val = state.Grow(a.val, n, zero)
	a.has = state.Grow(a.has, n, false)
	if a.retract {
		a.multi = state.Grow(a.multi, n, multiset[T]{})
		a.seen = state.Grow(a.seen, n, 0)
	}
}
func (a *minMax[T]) reset(g int32) {
	var zero T
	a.val[g], a.has[g] = zero, false
	if a.retract {
		a.multi[g] = multiset[T]{}
	}
}

func (a *minMax[T]) better(x, y T) bool {
	if a.isMax {
		return a.less(y, x)
	}
	return a.less(x, y)
}

func (a *minMax[T]) update(gids []int32, col arrow.Array, ops []RowKind) {
	vs := valuesOf[T](col, a.in)
	a.in = vs
	nm, nulls := nullsOf(col)
	if !a.retract {
		// integers: compared in the loop, not through less
		switch m := any(a).(type) {
		case *minMax[int64]:
			keepExtremes(m.val, m.has, gids, m.in, nm, nulls, m.isMax)
			return
		case *minMax[int32]:
			keepExtremes(m.val, m.has, gids, m.in, nm, nulls, m.isMax)
			return
		case *minMax[arrow.Timestamp]:
			keepExtremes(m.val, m.has, gids, m.in, nm, nulls, m.isMax)
			return
		}
		for i, g := range gids {
			if nulls && nm.null(i) {
				continue
			}
			if !a.has[g] || a.better(vs[i], a.val[g]) {
				a.val[g] = cloneScalar(vs[i])
				a.has[g] = true
			}
		}
		return
	}
	// The extreme is kept up to date per row: a value that becomes present
	// and beats it replaces it; only a group whose extreme disappears is
	// rescanned, once per batch.
	a.epoch++
	a.redo = a.redo[:0]
	for i, g := range gids {
		if nulls && nm.null(i) {
			continue
		}
		v := vs[i]
		before, after := a.multi[g].add(v, sign(ops, i))
		switch {
		case before <= 0 && after > 0:
			if !a.has[g] || a.better(v, a.val[g]) {
				a.val[g], a.has[g] = cloneScalar(v), true
			}
		case before > 0 && after <= 0:
			if a.has[g] && a.seen[g] != a.epoch && (v == a.val[g] || v != v) {
				a.seen[g] = a.epoch
				a.redo = append(a.redo, g)
			}
		}
	}
	for _, g := range a.redo {
		a.recompute(g)
	}
}

func (a *minMax[T]) updateRuns(gids, runs []int32, col arrow.Array) bool {
	if a.retract {
		return false
	}
	nm, nulls := nullsOf(col)
	switch m := any(a).(type) {
	case *minMax[int64]:
		m.in = valuesOf[int64](col, m.in)
		extremesByRuns(m.val, m.has, gids, runs, m.in, nm, nulls, m.isMax)
	case *minMax[int32]:
		m.in = valuesOf[int32](col, m.in)
		extremesByRuns(m.val, m.has, gids, runs, m.in, nm, nulls, m.isMax)
	case *minMax[arrow.Timestamp]:
		m.in = valuesOf[arrow.Timestamp](col, m.in)
		extremesByRuns(m.val, m.has, gids, runs, m.in, nm, nulls, m.isMax)
	default:
		return false
	}
	return true
}

// extremesByRuns is keepExtremes by runs of rows of one slot (gidRuns):
// each run's extreme, then one comparison with the slot's.
func extremesByRuns[T int32 | int64 | arrow.Timestamp](val []T, has []bool, gids, runs []int32, vs []T, nm nullMask, nulls, isMax bool) {
	for k := 0; k+1 < len(runs); k++ {
		s, e := int(runs[k]), int(runs[k+1])
		var best T
		found := false
		if !nulls {
			best, found = vs[s], true
			if isMax {
				for _, v := range vs[s+1 : e] {
					best = max(best, v)
				}
			} else {
				for _, v := range vs[s+1 : e] {
					best = min(best, v)
				}
			}
		} else {
			for i := s; i < e; i++ {
				if nm.null(i) {
					continue
				}
				if v := vs[i]; !found || (isMax && v > best) || (!isMax && v < best) {
					best, found = v, true
				}
			}
		}
		if !found {
			continue
		}
		if g := gids[s]; !has[g] || (isMax && best > val[g]) || (!isMax && best < val[g]) {
			val[g], has[g] = best, true
		}
	}
}

// keepExtremes is minMax.update of an append-only integer input: each
// group's value becomes the largest (isMax) or smallest it has seen.
func keepExtremes[T int32 | int64 | arrow.Timestamp](val []T, has []bool, gids []int32, vs []T, nm nullMask, nulls, isMax bool) {
	vs = vs[:len(gids)]
	switch {
	case isMax && !nulls:
		for i, g := range gids {
			if v := vs[i]; !has[g] || v > val[g] {
				val[g], has[g] = v, true
			}
		}
	case !isMax && !nulls:
		for i, g := range gids {
			if v := vs[i]; !has[g] || v < val[g] {
				val[g], has[g] = v, true
			}
		}
	default:
		for i, g := range gids {
			if nulls && nm.null(i) {
				continue
			}
			if v := vs[i]; !has[g] || (isMax && v > val[g]) || (!isMax && v < val[g]) {
				val[g], has[g] = v, true
			}
		}
	}
}

// recompute sets group g's extreme from its multiset.
func (a *minMax[T]) recompute(g int32) {
	var best T
	has := false
	a.multi[g].eachIndex(func(v T, i int32) {
		if a.multi[g].cnt[i] > 0 && (!has || a.better(v, best)) {
			best, has = v, true
		}
	})
	a.val[g], a.has[g] = best, has
}

func (a *minMax[T]) result(slots []int32, mem memory.Allocator) arrow.Array {
	a.scratch, a.sv = a.scratch[:0], a.sv[:0]
	for _, g := range slots {
		a.scratch = append(a.scratch, a.val[g])
		a.sv = append(a.sv, a.has[g])
	}
	return buildArray(mem, a.dt, a.scratch, a.sv)
}

// distinctCount is COUNT(DISTINCT x): a multiset of values per slot.
type distinctCount[T scalar] struct {
	sets    []multiset[T]
	scratch []int64
	in      []T
	st      staged[int64]
}

func (a *distinctCount[T]) staged() stagedCol { return &a.st }
func (a *distinctCount[T]) stage(slots []int32) {
	a.st.dt = arrow.PrimitiveTypes.Int64
	for _, g := range slots {
		a.st.vals = append(a.st.vals, int64(a.sets[g].len()))
		a.st.valid = append(a.st.valid, true)
	}
}

func newDistinctCount(t catalog.Type) (accumulator, error) {
	switch stateKind(t.Kind) {
	case catalog.KindBoolean:
		return &distinctCount[bool]{}, nil
	case catalog.KindInt:
		return &distinctCount[int32]{}, nil
	case catalog.KindBigInt:
		return &distinctCount[int64]{}, nil
	case catalog.KindDouble:
		return &distinctDouble{}, nil
	case catalog.KindDecimal:
		return &distinctCount[decimal128.Num]{}, nil
	case catalog.KindString:
		return &distinctCount[string]{}, nil
	case catalog.KindTimestamp:
		return &distinctCount[arrow.Timestamp]{}, nil
	}
	return nil, fmt.Errorf("COUNT(DISTINCT) does not accept %s", t)
}

func (a *distinctCount[T]) grow(n int) {
	a.sets = state.Grow(a.sets, n, multiset[T]{})
}
func (a *distinctCount[T]) reset(g int32) { a.sets[g] = multiset[T]{} }
func (a *distinctCount[T]) update(gids []int32, col arrow.Array, ops []RowKind) {
	vs := valuesOf[T](col, a.in)
	a.in = vs
	a.add(gids, vs, col, ops)
}

// add applies the values vs of col's rows to the multisets of their slots.
func (a *distinctCount[T]) add(gids []int32, vs []T, col arrow.Array, ops []RowKind) {
	nm, nulls := nullsOf(col)
	for i, g := range gids {
		if nulls && nm.null(i) {
			continue
		}
		a.sets[g].add(vs[i], sign(ops, i))
	}
}
func (a *distinctCount[T]) result(slots []int32, mem memory.Allocator) arrow.Array {
	a.scratch = a.scratch[:0]
	for _, g := range slots {
		a.scratch = append(a.scratch, int64(a.sets[g].len()))
	}
	return buildArray(mem, arrow.PrimitiveTypes.Int64, a.scratch, nil)
}

// distinctDouble is COUNT(DISTINCT x) of DOUBLE. A Go map never finds a NaN
// key (NaN != NaN): each NaN counted as one more value, and a retracted NaN
// was never removed. Values are therefore keyed by their bits, with every
// NaN (any payload) made one NaN and -0.0 made 0.0: the equality of Java's
// Double.equals, and of DISTINCT and GROUP BY. These keys are the bytes
// appendScalar writes for a DOUBLE, so the encoded state is the same as a
// distinctCount[float64]'s; decode merges the NaNs of a state written
// before, which may hold several.
type distinctDouble struct {
	distinctCount[int64]
	keys []int64
	f64  []float64 // FLOAT widened
}

// canonicalNaN is the bit pattern every NaN is counted as.
const canonicalNaN = 0x7FF8000000000000

func doubleKey(v float64) int64 {
	switch {
	case v != v:
		return canonicalNaN
	case v == 0:
		return 0
	}
	return int64(math.Float64bits(v))
}

func (a *distinctDouble) update(gids []int32, col arrow.Array, ops []RowKind) {
	vs := valuesOf[float64](col, a.f64)
	a.f64 = vs
	a.keys = a.keys[:0]
	for _, v := range vs {
		a.keys = append(a.keys, doubleKey(v))
	}
	a.add(gids, a.keys, col, ops)
}

func (a *distinctDouble) decode(src []byte, g int32) (int, error) {
	n, err := a.distinctCount.decode(src, g)
	if err != nil {
		return n, err
	}
	m := &a.sets[g]
	var nan int64
	var nans []int64
	m.each(func(k, c int64) {
		if f := math.Float64frombits(uint64(k)); f != f && k != canonicalNaN {
			nan += c
			nans = append(nans, k)
		}
	})
	for _, k := range nans {
		i, _ := m.find(k)
		m.add(k, -m.cnt[i])
	}
	if len(nans) > 0 {
		m.add(canonicalNaN, nan)
	}
	return n, nil
}

// divHalfUp divides v by a positive count, rounding half away from zero.
func divHalfUp(v decimal128.Num, n int64) decimal128.Num {
	d := decimal128.FromI64(n)
	q, r := v.Div(d)
	if !r.Abs().Mul(decimal128.FromI64(2)).Less(d) {
		if v.Sign() < 0 {
			return q.Sub(decimal128.FromI64(1))
		}
		return q.Add(decimal128.FromI64(1))
	}
	return q
}
