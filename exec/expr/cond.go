package expr

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

// caseNode is CASE WHEN c1 THEN v1 ... ELSE e END (args c1, v1, ..., e).
// Conditions are evaluated in order on the rows no earlier condition took;
// values that can fail are evaluated only on their own rows.
type caseNode struct {
	dt        arrow.DataType
	conds     []Evaluator
	condFails []bool
	condCols  [][]bool
	vals      []Evaluator // len(conds)+1, the last is ELSE
	valFails  []bool
	valCols   [][]bool
	consts    constPicker // every value a fixed-width constant; else nil
	// masked: CASE WHEN c THEN v END (ELSE NULL) with a v that cannot
	// fail, as an aggregate's FILTER (WHERE c) is planned: v's array with
	// its validity ANDed with c (evalMasked)
	masked bool
	// blend: fixed-width values that cannot fail (as the Nexmark views'
	// dateTime, a ROW field per event type): the ELSE array copied whole,
	// then each condition's rows overwritten from its value, a word of
	// rows at a time; nil otherwise
	blend blender
}

func compileCase(c *planner.Call, args []Evaluator) Evaluator {
	n := &caseNode{dt: c.T.ArrowType()}
	for i := 0; i+1 < len(args); i += 2 {
		n.conds = append(n.conds, args[i])
		n.condFails = append(n.condFails, canFail(c.Args[i]))
		n.condCols = append(n.condCols, colsOf(c.Args[i]))
		n.vals = append(n.vals, args[i+1])
		n.valFails = append(n.valFails, canFail(c.Args[i+1]))
		n.valCols = append(n.valCols, colsOf(c.Args[i+1]))
	}
	n.vals = append(n.vals, args[len(args)-1])
	n.valFails = append(n.valFails, canFail(c.Args[len(args)-1]))
	n.valCols = append(n.valCols, colsOf(c.Args[len(args)-1]))
	n.consts = constsOf(n.dt, n.vals)
	n.masked = n.consts == nil && len(n.conds) == 1 && !n.valFails[0] && isNullConst(n.vals[1])
	if n.consts == nil && !slices.Contains(n.valFails, true) {
		n.blend = blenderOf(n.dt)
	}
	return n
}

func (n *caseNode) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	if n.masked {
		if a, err := n.evalMasked(rec, mem); a != nil || err != nil {
			return a, err
		}
	}
	rows := int(rec.NumRows())
	k := len(n.conds)
	var which []uint16
	var masks [][]uint64 // constant or blended values: the rows of each condition
	if n.consts == nil && n.blend == nil {
		which = make([]uint16, rows)
		for i := range which {
			which[i] = uint16(k)
		}
	} else {
		masks = make([][]uint64, k)
	}
	// taken marks the rows an earlier condition took, a word per 64 rows;
	// each condition's rows are found a word at a time.
	taken := make([]uint64, (rows+63)/64)
	remaining := rows
	for j, cond := range n.conds {
		if remaining == 0 {
			break
		}
		var sel []int32
		if n.condFails[j] && remaining < rows {
			sel = make([]int32, 0, remaining)
			for i := 0; i < rows; i++ {
				if taken[i>>6]&(1<<(i&63)) == 0 {
					sel = append(sel, int32(i))
				}
			}
		}
		ca, err := evalRows(cond, n.condCols[j], rec, sel, mem)
		if err != nil {
			return nil, err
		}
		cv, coff := boolBits(ca)
		cb, cvo, cAllNull := bitsOf(ca)
		if !cAllNull && cv != nil {
			for w := range taken {
				m := BitWord(cv, coff, w, rows) &^ taken[w]
				if cb != nil {
					m &= BitWord(cb, cvo, w, rows)
				}
				if m == 0 {
					continue
				}
				taken[w] |= m
				remaining -= bits.OnesCount64(m)
				if masks != nil {
					if masks[j] == nil {
						masks[j] = make([]uint64, len(taken))
					}
					masks[j][w] = m
					continue
				}
				for ; m != 0; m &= m - 1 {
					which[w<<6+bits.TrailingZeros64(m)] = uint16(j)
				}
			}
		}
		ca.Release()
	}
	if n.consts != nil {
		return n.consts.pick(masks, taken, rows, mem), nil
	}
	if n.blend != nil {
		return n.blendValues(rec, masks, taken, rows, remaining, mem)
	}
	return pickRows(n.dt, n.vals, n.valFails, n.valCols, which, rec, mem)
}

// evalMasked is CASE WHEN c THEN v END for a v that cannot fail: v is
// evaluated on every row (as the general path would when c takes them
// all) and its value buffers are shared by the result, whose validity is
// v's AND c's (true and not NULL): no row is copied. It returns nil (and
// the general path runs) for an array it cannot share this way: one with
// children or a bit offset, or of another type than the CASE's (a
// dictionary-encoded one among them).
func (n *caseNode) evalMasked(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	rows := int(rec.NumRows())
	va, err := n.vals[0].Eval(rec, mem)
	if err != nil {
		return nil, err
	}
	defer va.Release()
	vd := va.Data()
	if vd.Offset() != 0 || len(vd.Children()) != 0 || len(vd.Buffers()) == 0 || !arrow.TypeEqual(va.DataType(), n.dt) {
		return nil, nil
	}
	ca, err := n.conds[0].Eval(rec, mem)
	if err != nil {
		return nil, err
	}
	defer ca.Release()
	cv, coff := boolBits(ca)
	cb, cbo, cAllNull := bitsOf(ca)
	vb, vbo, vAllNull := bitsOf(va)
	buf, ob := allocBits(mem, rows)
	defer buf.Release()
	nulls := rows
	if cv != nil && !cAllNull && !vAllNull {
		nulls = 0
		for w := 0; w<<6 < rows; w++ {
			m := BitWord(cv, coff, w, rows)
			if cb != nil {
				m &= BitWord(cb, cbo, w, rows)
			}
			if vb != nil {
				m &= BitWord(vb, vbo, w, rows)
			}
			putWord(ob, w, rows, m)
			nulls += min(64, rows-w<<6) - bits.OnesCount64(m)
		}
	}
	bufs := append([]*memory.Buffer{buf}, vd.Buffers()[1:]...)
	d := array.NewData(n.dt, rows, bufs, nil, nulls, 0)
	defer d.Release()
	return array.MakeFromData(d), nil
}

// pickRows evaluates each value on the rows that chose it and combines them:
// row i comes from vals[which[i]].
func pickRows(dt arrow.DataType, vals []Evaluator, fails []bool, cols [][]bool, which []uint16, rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	rows := len(which)
	counts := make([]int, len(vals))
	for _, w := range which {
		counts[w]++
	}
	for j, c := range counts {
		if c == rows {
			return vals[j].Eval(rec, mem)
		}
	}
	srcs := make([]arrow.Array, len(vals))
	defer releaseAll(srcs)
	for j, v := range vals {
		if counts[j] == 0 {
			srcs[j] = emptyArray(dt, mem)
			continue
		}
		var sel []int32
		if fails[j] {
			sel = make([]int32, 0, counts[j])
			for i, w := range which {
				if int(w) == j {
					sel = append(sel, int32(i))
				}
			}
		}
		var vc []bool
		if cols != nil {
			vc = cols[j]
		}
		a, err := evalRows(v, vc, rec, sel, mem)
		if err != nil {
			return nil, err
		}
		srcs[j] = a
	}
	idx := make([]int32, rows)
	for i := range idx {
		idx[i] = int32(i)
	}
	return gather(dt, srcs, which, idx, mem), nil
}

// blendValues is the blend path of Eval: each value with rows (masks[j]
// non-nil; the ELSE when rows remain) is evaluated on every row (none can
// fail) and blended.
func (n *caseNode) blendValues(rec arrow.Record, masks [][]uint64, taken []uint64, rows, remaining int, mem memory.Allocator) (arrow.Array, error) {
	k := len(n.conds)
	srcs := make([]arrow.Array, k+1)
	defer releaseAll(srcs)
	for j, v := range n.vals {
		if (j < k && masks[j] == nil) || (j == k && remaining == 0) {
			continue
		}
		a, err := v.Eval(rec, mem)
		if err != nil {
			return nil, err
		}
		srcs[j] = a
		if t := a.DataType(); !arrow.TypeEqual(t, n.dt) && t.ID() != arrow.NULL {
			// not the CASE's type (the planner casts branches, so
			// not expected): row by row
			which := make([]uint16, rows)
			for i := range which {
				which[i] = uint16(k)
			}
			for j, m := range masks {
				for w, bw := range m {
					for ; bw != 0; bw &= bw - 1 {
						which[w<<6+bits.TrailingZeros64(bw)] = uint16(j)
					}
				}
			}
			return pickRows(n.dt, n.vals, n.valFails, n.valCols, which, rec, mem)
		}
	}
	return n.blend.blend(srcs, masks, taken, rows, mem), nil
}

// blender builds a CASE of fixed-width values from its branches' arrays
// (nil: a branch with no rows) and the rows each condition took.
type blender interface {
	blend(srcs []arrow.Array, masks [][]uint64, taken []uint64, rows int, mem memory.Allocator) arrow.Array
}

func blenderOf(dt arrow.DataType) blender {
	switch dt.ID() {
	case arrow.INT32, arrow.DATE32:
		return fixedBlend[int32]{dt}
	case arrow.INT64, arrow.TIMESTAMP:
		return fixedBlend[int64]{dt}
	case arrow.FLOAT64:
		return fixedBlend[float64]{dt}
	}
	return nil
}

type fixedBlend[T int32 | int64 | float64] struct{ dt arrow.DataType }

func (b fixedBlend[T]) blend(srcs []arrow.Array, masks [][]uint64, taken []uint64, rows int, mem memory.Allocator) arrow.Array {
	k := len(srcs) - 1
	buf, out := allocFixed[T](mem, rows)
	// values: an all-NULL array may have none (its rows stay NULL)
	if e := srcs[k]; e != nil {
		if v := values[T](e); v != nil {
			copy(out, v)
		}
	}
	anyNull := false
	for j, a := range srcs {
		if a == nil {
			continue
		}
		anyNull = anyNull || a.NullN() > 0
		v := values[T](a)
		if j == k || v == nil {
			continue
		}
		for w, bw := range masks[j] {
			for ; bw != 0; bw &= bw - 1 {
				i := w<<6 + bits.TrailingZeros64(bw)
				out[i] = v[i]
			}
		}
	}
	if !anyNull {
		// every row valid: each row's branch was evaluated (the ELSE
		// whenever a row was left to it) and has no NULLs
		return makeArray(b.dt, rows, nil, buf)
	}
	vbuf, vb := allocBits(mem, rows)
	for w := range taken {
		var v uint64
		if e := srcs[k]; e != nil {
			v = ^taken[w] & validWord(e, w, rows)
		}
		for j, m := range masks {
			if m != nil && srcs[j] != nil {
				v |= m[w] & validWord(srcs[j], w, rows)
			}
		}
		putWord(vb, w, rows, v)
	}
	return makeArray(b.dt, rows, vbuf, buf)
}

// validWord is the validity of rows w*64.. of a (all ones without NULLs).
func validWord(a arrow.Array, w, rows int) uint64 {
	vb, off, allNull := bitsOf(a)
	switch {
	case allNull:
		return 0
	case vb == nil:
		return ^uint64(0)
	}
	return BitWord(vb, off, w, rows)
}

// constPicker builds a CASE whose values are all fixed-width constants
// (COUNT(*) FILTER (WHERE c) is planned as CASE WHEN c THEN 1 END) from
// the rows each condition took, a word per 64 rows: no per-branch arrays,
// no per-row branch index.
type constPicker interface {
	// pick: masks[j] holds condition j's rows (nil: none), taken their
	// union; the other rows take the ELSE value.
	pick(masks [][]uint64, taken []uint64, rows int, mem memory.Allocator) arrow.Array
}

// constsOf returns the constPicker of values of type dt, or nil.
func constsOf(dt arrow.DataType, vals []Evaluator) constPicker {
	consts := make([]arrow.Array, len(vals))
	for j, v := range vals {
		c := constArr(v)
		if c == nil || (c.IsValid(0) && !arrow.TypeEqual(c.DataType(), dt)) {
			return nil
		}
		consts[j] = c
	}
	switch dt.ID() {
	case arrow.INT32, arrow.DATE32:
		return newConstPick[int32](dt, consts)
	case arrow.INT64:
		return newConstPick[int64](dt, consts)
	case arrow.FLOAT64:
		return newConstPick[float64](dt, consts)
	case arrow.TIMESTAMP:
		return newConstPick[arrow.Timestamp](dt, consts)
	case arrow.DECIMAL128:
		return newConstPick[decimal128.Num](dt, consts)
	}
	return nil
}

type constPick[T any] struct {
	dt    arrow.DataType
	vs    []T    // per value, the last is ELSE
	valid []bool // per value: not NULL
	all   bool   // every value is valid
	one   int    // the only value not NULL, when every other one is NULL; else -1
}

func newConstPick[T any](dt arrow.DataType, consts []arrow.Array) *constPick[T] {
	c := &constPick[T]{dt: dt, vs: make([]T, len(consts)), valid: make([]bool, len(consts)), all: true, one: -1}
	n := 0
	for j, a := range consts {
		if c.valid[j] = a.IsValid(0); c.valid[j] {
			c.vs[j] = values[T](a)[0]
			c.one, n = j, n+1
		}
		c.all = c.all && c.valid[j]
	}
	if n != 1 {
		c.one = -1
	}
	return c
}

func (c *constPick[T]) pick(masks [][]uint64, taken []uint64, rows int, mem memory.Allocator) arrow.Array {
	buf, out := allocFixed[T](mem, rows)
	k := len(c.vs) - 1
	if c.one >= 0 {
		// one value that is not NULL (CASE WHEN c THEN 1 END): every row
		// holds it, the validity tells which rows took it
		for i, v := 0, c.vs[c.one]; i < rows; i++ {
			out[i] = v
		}
	} else {
		for i, e := 0, c.vs[k]; i < rows; i++ {
			out[i] = e
		}
		for j, m := range masks {
			if m == nil {
				continue
			}
			v := c.vs[j]
			for w, bw := range m {
				for ; bw != 0; bw &= bw - 1 {
					out[w<<6+bits.TrailingZeros64(bw)] = v
				}
			}
		}
	}
	if c.all {
		return makeArray(c.dt, rows, nil, buf)
	}
	vbuf, vb := allocBits(mem, rows)
	for w := range taken {
		var v uint64
		if c.valid[k] {
			v = ^taken[w]
		}
		for j, m := range masks {
			if m != nil && c.valid[j] {
				v |= m[w]
			}
		}
		putWord(vb, w, rows, v)
	}
	return makeArray(c.dt, rows, vbuf, buf)
}

// coalesceNode returns the first non-NULL argument per row. Arguments after
// the first are evaluated only while some rows are still NULL; those that can
// fail only on those rows.
type coalesceNode struct {
	dt    arrow.DataType
	args  []Evaluator
	fails []bool
	cols  [][]bool
}

func compileCoalesce(c *planner.Call, args []Evaluator) Evaluator {
	if len(args) == 1 {
		return args[0]
	}
	n := &coalesceNode{dt: c.T.ArrowType(), args: args}
	for _, a := range c.Args {
		n.fails = append(n.fails, canFail(a))
		n.cols = append(n.cols, colsOf(a))
	}
	return n
}

func (n *coalesceNode) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	rows := int(rec.NumRows())
	srcs := make([]arrow.Array, len(n.args))
	defer releaseAll(srcs)
	which := make([]uint16, rows)
	idx := make([]int32, rows)
	for i := range idx {
		idx[i] = -1
	}
	remaining := rows
	for j, ev := range n.args {
		if remaining == 0 {
			srcs[j] = emptyArray(n.dt, mem)
			continue
		}
		var sel []int32
		if n.fails[j] && remaining < rows {
			sel = make([]int32, 0, remaining)
			for i := range idx {
				if idx[i] < 0 {
					sel = append(sel, int32(i))
				}
			}
		}
		a, err := evalRows(ev, n.cols[j], rec, sel, mem)
		if err != nil {
			return nil, err
		}
		srcs[j] = a
		if j == 0 && a.NullN() == 0 {
			a.Retain()
			return a, nil
		}
		b, off, an := bitsOf(a)
		if an {
			continue
		}
		for i := range idx {
			if idx[i] < 0 && isValid(b, off, i) {
				idx[i] = int32(i)
				which[i] = uint16(j)
				remaining--
			}
		}
	}
	return gather(n.dt, srcs, which, idx, mem), nil
}

// orToIn rewrites a disjunction of equalities of one column (or field of
// a column) with constants, x = 'a' OR x = 'b' OR ..., as x IN ('a', 'b',
// ...) OR the other disjuncts (Calcite's SEARCH): one pass over x with a
// set instead of a comparison and an OR per constant. Three-valued logic
// is kept (a NULL x, or a NULL constant where x matches none, gives NULL
// in both), and neither side can fail, so the disjuncts may be reordered.
// It returns nil when there is nothing to rewrite.
func orToIn(c *planner.Call) *planner.Call {
	if c.Fn != "or" {
		return nil
	}
	var ds []planner.Expr
	var flat func(e planner.Expr)
	flat = func(e planner.Expr) {
		if o, ok := e.(*planner.Call); ok && o.Fn == "or" {
			for _, a := range o.Args {
				flat(a)
			}
			return
		}
		ds = append(ds, e)
	}
	flat(c)
	groups := map[string]*planner.Call{}
	var order []planner.Expr // the disjuncts kept, an IN call in place of its group's first
	for _, d := range ds {
		x, k, ok := refEqConst(d)
		if !ok {
			order = append(order, d)
			continue
		}
		key := x.String()
		if g := groups[key]; g != nil {
			g.Args = append(g.Args, k)
			continue
		}
		g := &planner.Call{Fn: "in", Args: []planner.Expr{x, k}, T: c.T}
		groups[key] = g
		order = append(order, g)
	}
	if len(order) == len(ds) {
		return nil // no column compared with two constants
	}
	for i, d := range order {
		// a group of one stays the equality it was
		if g, ok := d.(*planner.Call); ok && len(g.Args) == 2 && groups[g.Args[0].String()] == g {
			order[i] = &planner.Call{Fn: "=", Args: g.Args, T: c.T}
		}
	}
	if len(order) == 1 {
		return order[0].(*planner.Call)
	}
	return &planner.Call{Fn: "or", Args: order, T: c.T}
}

// refEqConst matches x = k or k = x, x a column or a field of one and k a
// literal, of a type a constant IN list takes as a set.
func refEqConst(e planner.Expr) (x, k planner.Expr, ok bool) {
	c, isCall := e.(*planner.Call)
	if !isCall || c.Fn != "=" || len(c.Args) != 2 {
		return nil, nil, false
	}
	x, k = c.Args[0], c.Args[1]
	if _, lit := x.(*planner.Literal); lit {
		x, k = k, x
	}
	if _, lit := k.(*planner.Literal); !lit || !pureRef(x) || !x.Type().Equal(k.Type()) {
		return nil, nil, false
	}
	switch x.Type().Kind {
	case catalog.KindBoolean, catalog.KindNull:
		return nil, nil, false
	}
	return x, k, true
}

// pureRef reports whether e reads a column or a field of one (nested).
func pureRef(e planner.Expr) bool {
	switch x := e.(type) {
	case *planner.ColRef:
		return true
	case *planner.Call:
		if x.Fn == "field" && len(x.Args) == 2 {
			_, lit := x.Args[1].(*planner.Literal)
			return lit && pureRef(x.Args[0])
		}
	}
	return false
}

// compileIn builds IN / NOT IN. A list of constants becomes a hash set; any
// other list is a chain of equalities combined with three-valued OR.
func compileIn(c *planner.Call, args []Evaluator) (Evaluator, error) {
	t := c.Args[0].Type()
	for i, a := range c.Args[1:] {
		if !a.Type().Equal(t) {
			return nil, fmt.Errorf("function %s: list element %d has type %s, expected %s", c.Fn, i+1, a.Type(), t)
		}
	}
	not := c.Fn == "not_in"
	allC := true
	for _, a := range args[1:] {
		if constArr(a) == nil {
			allC = false
		}
	}
	if allC && t.Kind != catalog.KindBoolean {
		consts := make([]arrow.Array, len(args)-1)
		for i, a := range args[1:] {
			consts[i] = constArr(a)
		}
		switch storageKind(t.Kind) {
		case catalog.KindTinyInt:
			return newInSet[int8](args[0], consts, not), nil
		case catalog.KindSmallInt:
			return newInSet[int16](args[0], consts, not), nil
		case catalog.KindFloat:
			return newInSet[float32](args[0], consts, not), nil
		case catalog.KindInt:
			return newInSet[int32](args[0], consts, not), nil
		case catalog.KindBigInt, catalog.KindTimestamp:
			return newInSet[int64](args[0], consts, not), nil
		case catalog.KindDouble:
			return newInSet[float64](args[0], consts, not), nil
		case catalog.KindDecimal:
			return newInSet[decimal128.Num](args[0], consts, not), nil
		case catalog.KindString:
			n := &inStrNode{arg: args[0], set: map[string]struct{}{}, not: not}
			for _, a := range consts {
				if a.IsNull(0) {
					n.hasNull = true
					continue
				}
				v := a.(*array.String).Value(0)
				if _, dup := n.set[v]; !dup {
					n.set[v] = struct{}{}
					n.list = append(n.list, v)
					n.lens |= 1 << min(len(v), 63)
				}
			}
			return n, nil
		}
	}
	var ev Evaluator
	for i, a := range args[1:] {
		eq := &cmpNode{op: opEq, kind: storageKind(t.Kind), l: newOperand(args[0]), r: newOperand(a)}
		if eq.l.c != nil && eq.r.c == nil {
			eq.l, eq.r = eq.r, eq.l
		}
		if i == 0 {
			ev = eq
		} else {
			ev = &logicNode{or: true, l: ev, r: eq}
		}
	}
	if not {
		ev = &unaryBoolNode{fn: "not", arg: ev}
	}
	return ev, nil
}

type inSetNode[K comparable] struct {
	arg     Evaluator
	set     map[K]struct{}
	hasNull bool
	not     bool
}

func newInSet[K comparable](arg Evaluator, consts []arrow.Array, not bool) *inSetNode[K] {
	n := &inSetNode[K]{arg: arg, set: make(map[K]struct{}, len(consts)), not: not}
	for _, a := range consts {
		if a.IsNull(0) {
			n.hasNull = true
		} else {
			n.set[values[K](a)[0]] = struct{}{}
		}
	}
	return n
}

func (n *inSetNode[K]) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	a, err := n.arg.Eval(rec, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	rows := a.Len()
	vals := values[K](a)
	buf, out := allocBits(mem, rows)
	vbuf, vb := writableValidity(mem, rows, a)
	for i := 0; i < rows; i++ {
		if !bitutil.BitIsSet(vb, i) {
			continue
		}
		_, found := n.set[vals[i]]
		switch {
		case found:
			if !n.not {
				bitutil.SetBit(out, i)
			}
		case n.hasNull:
			bitutil.ClearBit(vb, i)
		case n.not:
			bitutil.SetBit(out, i)
		}
	}
	return makeArray(arrow.FixedWidthTypes.Boolean, rows, vbuf, buf), nil
}

type inStrNode struct {
	arg     Evaluator
	set     map[string]struct{}
	list    []string // set's members, for a linear search of a few
	lens    uint64   // bit l: a member of length l (bit 63: 63 or more)
	hasNull bool
	not     bool
}

// has reports whether b is a member: a row whose length no member has
// (most rows of a selective filter) costs one test of lens.
func (n *inStrNode) has(b []byte) bool {
	if n.lens&(1<<min(len(b), 63)) == 0 {
		return false
	}
	if len(n.list) <= 8 {
		for _, m := range n.list {
			if string(b) == m {
				return true
			}
		}
		return false
	}
	_, ok := n.set[string(b)]
	return ok
}

func (n *inStrNode) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	a, err := n.arg.Eval(rec, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	rows := a.Len()
	sa := a.(*array.String)
	vo, data := sa.ValueOffsets(), sa.ValueBytes()
	base := vo[0]
	buf, out := allocBits(mem, rows)
	vbuf, vb := writableValidity(mem, rows, a)
	for i := 0; i < rows; i++ {
		if !bitutil.BitIsSet(vb, i) {
			continue
		}
		switch {
		case n.has(data[vo[i]-base : vo[i+1]-base]):
			if !n.not {
				bitutil.SetBit(out, i)
			}
		case n.hasNull:
			bitutil.ClearBit(vb, i)
		case n.not:
			bitutil.SetBit(out, i)
		}
	}
	return makeArray(arrow.FixedWidthTypes.Boolean, rows, vbuf, buf), nil
}
