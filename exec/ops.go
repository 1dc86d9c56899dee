package exec

import (
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/planner"
)

func init() {
	RegisterOperator(func(s *planner.CalcOp, ctx *OpContext) (Operator, error) { return newCalc(s, ctx.Mem, ctx.Clock) })
	RegisterOperator(func(s *planner.TableFuncOp, ctx *OpContext) (Operator, error) { return newTableFunc(s, ctx.Mem) })
	RegisterOperator(func(s *planner.AggOp, ctx *OpContext) (Operator, error) { return newAgg(s, ctx) })
	RegisterOperator(func(s *planner.LocalAggOp, ctx *OpContext) (Operator, error) { return newLocalAgg(s, ctx) })
}

// calc filters and projects whole batches with compiled expressions.
type calc struct {
	Stateless
	spec   *planner.CalcOp
	mem    memory.Allocator
	filter expr.Evaluator
	projs  []expr.Evaluator
	schema *arrow.Schema
	// projectFirst: every projection only picks columns or ROW fields
	// (no copy), so the batch is projected before it is filtered and the
	// filter copies only the columns kept (a view over a wide table).
	projectFirst bool
	cols         []arrow.Array // reused by project
	// leafEvs, when set, pick what the projections read (see narrowInput)
	// into a record of leafSchema, which the filter then copies.
	leafEvs    []expr.Evaluator
	leafSchema *arrow.Schema
	// shared: calls the filter and the projections both compute (each
	// once, Hoistable), evaluated on the input first; the filter and the
	// leaves then read a record of their columns followed by the input's
	// (extSchema, for the input schema extFor)
	shared    []expr.Evaluator
	sharedTs  []arrow.DataType
	extSchema *arrow.Schema
	extFor    *arrow.Schema
	extCols   []arrow.Array // reused by extend
}

func newCalc(s *planner.CalcOp, mem memory.Allocator, clock Clock) (*calc, error) {
	c := &calc{spec: s, mem: mem, schema: s.Out.Arrow()}
	var opts expr.Options
	if clock != nil {
		opts.Now = clock.Now // CURRENT_TIMESTAMP & co. read the job's clock
	}
	var err error
	if s.Filter != nil {
		if c.filter, err = expr.CompileWith(s.Filter, opts); err != nil {
			return nil, err
		}
	}
	for _, p := range s.Projs {
		ev, err := expr.CompileWith(p, opts)
		if err != nil {
			return nil, err
		}
		c.projs = append(c.projs, ev)
	}
	c.projectFirst = s.Filter != nil && s.Projs != nil
	for _, p := range s.Projs {
		c.projectFirst = c.projectFirst && picksOnly(p)
	}
	if s.Filter != nil && s.Projs != nil && !c.projectFirst {
		if err := c.narrowInput(opts); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// narrowInput prepares the filter of a Calc with computed projections to
// copy only what they read: the columns and ROW fields they use are
// picked (no copy) into a narrow record, the filter copies that, and the
// projections, rewritten over it, are evaluated on the rows kept (a
// query over a view of a wide table filters a few leaves, not every
// ROW; picking costs no copy, so it is never worse).
func (c *calc) narrowInput(opts expr.Options) error {
	sharedIdx, shift, err := c.shareWithFilter(opts)
	if err != nil {
		return err
	}
	var leaves []planner.Expr
	index := map[string]int{}
	var rewrite func(e planner.Expr) planner.Expr
	rewrite = func(e planner.Expr) planner.Expr {
		switch x := e.(type) {
		case *planner.ColRef:
		case *planner.Call:
			if _, ok := sharedIdx[expr.Digest(x)]; ok {
				break // the filter computes it: a leaf
			}
			if !(x.Fn == "field" && len(x.Args) == 2 && isColRef(x.Args[0])) {
				y := *x
				y.Args = make([]planner.Expr, len(x.Args))
				for i, a := range x.Args {
					y.Args[i] = rewrite(a)
				}
				return &y
			}
		default:
			return e
		}
		key := e.String()
		i, ok := index[key]
		if !ok {
			i = len(leaves)
			index[key] = i
			leaves = append(leaves, e)
		}
		return &planner.ColRef{Index: i, Name: key, T: e.Type()}
	}
	projs := make([]planner.Expr, len(c.spec.Projs))
	for i, p := range c.spec.Projs {
		projs[i] = rewrite(p)
	}
	fields := make([]arrow.Field, len(leaves))
	for i, l := range leaves {
		ev, err := expr.CompileWith(shift(l), opts)
		if err != nil {
			return err
		}
		c.leafEvs = append(c.leafEvs, ev)
		fields[i] = arrow.Field{Name: fmt.Sprintf("$%d", i), Type: l.Type().ArrowType(), Nullable: true}
	}
	c.leafSchema = arrow.NewSchema(fields, nil)
	c.projs = c.projs[:0]
	for _, p := range projs {
		ev, err := expr.CompileWith(p, opts)
		if err != nil {
			return err
		}
		c.projs = append(c.projs, ev)
	}
	return nil
}

// shareWithFilter finds the calls that the filter and the projections
// both compute (Calcite's RexProgram computes them once: q21's
// REGEXP_EXTRACT(url, ...) in its WHERE and its CASE): they are evaluated
// on the input once (c.shared) and the filter is compiled over a record of
// their columns followed by the input's. It returns their digests (index
// in c.shared) and the rewrite of an expression over the input to one
// over that record (the identity when nothing is shared).
func (c *calc) shareWithFilter(opts expr.Options) (map[string]int, func(planner.Expr) planner.Expr, error) {
	same := func(e planner.Expr) planner.Expr { return e }
	inFilter := map[string]bool{}
	var mark func(e planner.Expr)
	mark = func(e planner.Expr) {
		if x, ok := e.(*planner.Call); ok {
			inFilter[expr.Digest(x)] = true
			for _, a := range x.Args {
				mark(a)
			}
		}
	}
	mark(c.spec.Filter)
	idx := map[string]int{}
	var exprs []*planner.Call
	var find func(e planner.Expr)
	find = func(e planner.Expr) {
		x, ok := e.(*planner.Call)
		if !ok {
			return
		}
		if d := expr.Digest(x); inFilter[d] && expr.Hoistable(x) {
			if _, seen := idx[d]; !seen {
				idx[d] = len(exprs)
				exprs = append(exprs, x)
			}
			return
		}
		for _, a := range x.Args {
			find(a)
		}
	}
	for _, p := range c.spec.Projs {
		find(p)
	}
	if len(exprs) == 0 {
		return nil, same, nil
	}
	ns := len(exprs)
	var shift func(e planner.Expr) planner.Expr
	shift = func(e planner.Expr) planner.Expr {
		switch x := e.(type) {
		case *planner.ColRef:
			return &planner.ColRef{Index: x.Index + ns, Name: x.Name, T: x.T}
		case *planner.Call:
			if k, ok := idx[expr.Digest(x)]; ok {
				return &planner.ColRef{Index: k, Name: fmt.Sprintf("$shared%d", k), T: x.T}
			}
			y := *x
			y.Args = make([]planner.Expr, len(x.Args))
			for i, a := range x.Args {
				y.Args[i] = shift(a)
			}
			return &y
		}
		return e
	}
	for _, x := range exprs {
		ev, err := expr.CompileWith(x, opts)
		if err != nil {
			return nil, nil, err
		}
		c.shared = append(c.shared, ev)
		c.sharedTs = append(c.sharedTs, x.T.ArrowType())
	}
	f, err := expr.CompileWith(shift(c.spec.Filter), opts)
	if err != nil {
		return nil, nil, err
	}
	c.filter = f
	return idx, shift, nil
}

// extend returns the record of the shared calls' values on in followed by
// in's columns (see shareWithFilter); in stays the caller's.
func (c *calc) extend(in arrow.Record) (arrow.Record, error) {
	if c.extFor != in.Schema() {
		fields := make([]arrow.Field, 0, len(c.shared)+int(in.NumCols()))
		for k, t := range c.sharedTs {
			fields = append(fields, arrow.Field{Name: fmt.Sprintf("$shared%d", k), Type: t, Nullable: true})
		}
		fields = append(fields, in.Schema().Fields()...)
		c.extSchema, c.extFor = arrow.NewSchema(fields, nil), in.Schema()
	}
	cols := c.extCols[:0]
	for _, ev := range c.shared {
		a, err := ev.Eval(in, c.mem)
		if err != nil {
			for _, x := range cols {
				x.Release()
			}
			return nil, err
		}
		cols = append(cols, a)
	}
	n := len(cols)
	cols = append(cols, in.Columns()...)
	ext := expr.NewRecord(c.extSchema, cols, in.NumRows()) // copies cols
	for _, x := range cols[:n] {
		x.Release()
	}
	clear(cols)
	c.extCols = cols
	return ext, nil
}

func isColRef(e planner.Expr) bool {
	_, ok := e.(*planner.ColRef)
	return ok
}

// picksOnly reports whether e is a column, or a field of a ROW it picks.
func picksOnly(e planner.Expr) bool {
	switch x := e.(type) {
	case *planner.ColRef:
		return true
	case *planner.Call:
		return x.Fn == "field" && len(x.Args) == 2 && picksOnly(x.Args[0])
	}
	return false
}

func (c *calc) ProcessBatch(_ int, b Batch, out Collector) error {
	if c.projectFirst {
		return c.projectThenFilter(b, out)
	}
	if c.leafEvs != nil {
		return c.narrowThenFilter(b, out)
	}
	if c.filter != nil {
		fb, err := c.applyFilter(b)
		if err != nil {
			return err
		}
		b = fb
		if b.Rows() == 0 {
			b.Rec.Release()
			return nil
		}
	}
	if c.projs == nil {
		return out.Collect(b)
	}
	rec, err := c.project(b.Rec)
	if err != nil {
		return err
	}
	return out.Collect(Batch{Rec: rec, Ops: b.Ops})
}

// project evaluates the projections over in (taking ownership of it) into
// a record of the output schema.
func (c *calc) project(in arrow.Record) (arrow.Record, error) {
	cols := c.cols[:0]
	for _, p := range c.projs {
		a, err := p.Eval(in, c.mem)
		if err != nil {
			for _, x := range cols {
				x.Release()
			}
			in.Release()
			return nil, err
		}
		cols = append(cols, a)
	}
	rec := expr.NewRecord(c.schema, cols, in.NumRows()) // copies cols
	for i, x := range cols {
		x.Release()
		cols[i] = nil
	}
	c.cols = cols
	in.Release()
	return rec, nil
}

// projectThenFilter evaluates the filter's mask on the input, picks the
// projected columns (references, no copy) and filters only those.
func (c *calc) projectThenFilter(b Batch, out Collector) error {
	m, err := c.filter.Eval(b.Rec, c.mem)
	if err != nil {
		b.Rec.Release()
		return err
	}
	defer m.Release()
	rec, err := c.project(b.Rec)
	if err != nil {
		return err
	}
	fb, err := c.filterWith(Batch{Rec: rec, Ops: b.Ops}, m.(*array.Boolean))
	if err != nil {
		return err
	}
	if fb.Rows() == 0 {
		fb.Rec.Release()
		return nil
	}
	return out.Collect(fb)
}

// narrowThenFilter evaluates the filter's mask on the input, picks the
// leaves the projections read (references), filters only those and
// evaluates the projections over them.
func (c *calc) narrowThenFilter(b Batch, out Collector) error {
	if c.shared != nil {
		ext, err := c.extend(b.Rec)
		b.Rec.Release()
		if err != nil {
			return err
		}
		b.Rec = ext
	}
	m, err := c.filter.Eval(b.Rec, c.mem)
	if err != nil {
		b.Rec.Release()
		return err
	}
	defer m.Release()
	cols := make([]arrow.Array, 0, len(c.leafEvs))
	for _, ev := range c.leafEvs {
		a, err := ev.Eval(b.Rec, c.mem)
		if err != nil {
			for _, x := range cols {
				x.Release()
			}
			b.Rec.Release()
			return err
		}
		cols = append(cols, a)
	}
	narrow := expr.NewRecord(c.leafSchema, cols, b.Rec.NumRows())
	for _, x := range cols {
		x.Release()
	}
	b.Rec.Release()
	fb, err := c.filterWith(Batch{Rec: narrow, Ops: b.Ops}, m.(*array.Boolean))
	if err != nil {
		return err
	}
	if fb.Rows() == 0 {
		fb.Rec.Release()
		return nil
	}
	rec, err := c.project(fb.Rec)
	if err != nil {
		return err
	}
	return out.Collect(Batch{Rec: rec, Ops: fb.Ops})
}

// applyFilter keeps the rows passing the filter. On a changelog, an adjacent
// -U/+U pair of which only one side passes becomes a -D or a +I, so the
// filtered stream still folds into the filtered table.
func (c *calc) applyFilter(b Batch) (Batch, error) {
	m, err := c.filter.Eval(b.Rec, c.mem)
	if err != nil {
		b.Rec.Release()
		return Batch{}, err
	}
	defer m.Release()
	return c.filterWith(b, m.(*array.Boolean))
}

// filterWith keeps the rows of b where mask is true (see applyFilter); it
// takes ownership of b.Rec.
func (c *calc) filterWith(b Batch, mask *array.Boolean) (Batch, error) {
	pass := func(i int) bool { return mask.IsValid(i) && mask.Value(i) }
	var ops []RowKind
	if b.Ops != nil {
		ops = make([]RowKind, 0, len(b.Ops))
		for i := 0; i < len(b.Ops); i++ {
			if b.Ops[i] == UpdateBefore && i+1 < len(b.Ops) && b.Ops[i+1] == UpdateAfter {
				pb, pa := pass(i), pass(i+1)
				switch {
				case pb && pa:
					ops = append(ops, UpdateBefore, UpdateAfter)
				case pb:
					ops = append(ops, Delete)
				case pa:
					ops = append(ops, Insert)
				}
				i++
				continue
			}
			if pass(i) {
				ops = append(ops, b.Ops[i])
			}
		}
	}
	rec, err := expr.FilterRecord(b.Rec, mask, c.mem)
	b.Rec.Release()
	if err != nil {
		return Batch{}, err
	}
	return Batch{Rec: rec, Ops: ops}, nil
}

// tableFunc implements the built-in SPLIT table function: each input row is
// repeated once per non-empty token of its string argument, with the token
// appended as a new column.
type tableFunc struct {
	Stateless
	spec   *planner.TableFuncOp
	mem    memory.Allocator
	str    expr.Evaluator
	delim  expr.Evaluator
	schema *arrow.Schema
	idx    []int32
}

func newTableFunc(s *planner.TableFuncOp, mem memory.Allocator) (*tableFunc, error) {
	if s.Fn != "split" {
		return nil, fmt.Errorf("unknown table function %s", s.Fn)
	}
	t := &tableFunc{spec: s, mem: mem, schema: s.Out.Arrow()}
	var err error
	if t.str, err = expr.Compile(s.Args[0]); err != nil {
		return nil, err
	}
	if len(s.Args) > 1 {
		if t.delim, err = expr.Compile(s.Args[1]); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *tableFunc) ProcessBatch(_ int, b Batch, out Collector) error {
	defer b.Rec.Release()
	sa, err := t.str.Eval(b.Rec, t.mem)
	if err != nil {
		return err
	}
	defer sa.Release()
	strs := sa.(*array.String)
	var delims *array.String
	if t.delim != nil {
		da, err := t.delim.Eval(b.Rec, t.mem)
		if err != nil {
			return err
		}
		defer da.Release()
		delims = da.(*array.String)
	}
	words := array.NewStringBuilder(t.mem)
	defer words.Release()
	t.idx = t.idx[:0]
	var ops []RowKind
	for i := 0; i < strs.Len(); i++ {
		if strs.IsNull(i) {
			continue
		}
		s := strs.Value(i)
		d := " "
		if delims != nil {
			if delims.IsNull(i) {
				continue
			}
			d = delims.Value(i)
		}
		emit := func(w string) {
			if w == "" {
				return
			}
			words.Append(w)
			t.idx = append(t.idx, int32(i))
			if b.Ops != nil {
				ops = append(ops, b.Ops[i])
			}
		}
		if d == "" {
			emit(s)
			continue
		}
		for {
			j := strings.Index(s, d)
			if j < 0 {
				emit(s)
				break
			}
			emit(s[:j])
			s = s[j+len(d):]
		}
	}
	if len(t.idx) == 0 {
		return nil
	}
	taken := expr.TakeRecord(b.Rec, t.idx, t.mem)
	defer taken.Release()
	w := words.NewArray()
	defer w.Release()
	cols := append(append([]arrow.Array{}, taken.Columns()...), w)
	rec := expr.NewRecord(t.schema, cols, int64(len(t.idx)))
	return out.Collect(Batch{Rec: rec, Ops: ops})
}
