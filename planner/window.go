package planner

import (
	"fmt"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// Event time and windows in the plan.
//
// A table with WATERMARK FOR ts gets a WatermarkAssigner right after its
// scan (in the source's task, as Flink plans it for connectors without
// watermark push-down); ts is then a time attribute. Time attributes
// survive filters and plain column references; window_time of a window
// TVF or a window aggregation is one too (cascading windows).
//
// Window table functions (TUMBLE, HOP, CUMULATE, SESSION in FROM) and the
// legacy group windows (GROUP BY TUMBLE(ts, ...)) both plan, under an
// aggregation grouped by the window, to one WindowAggregate operator that
// assigns rows to slices itself: the TVF is then not run as an operator.
// A TVF not under such an aggregation runs as a stateless
// WindowTableFunction that appends window_start, window_end, window_time.

// WindowKind is the kind of a window.
type WindowKind uint8

const (
	Tumble WindowKind = iota
	Hop
	Cumulate
	Session
)

func (k WindowKind) String() string {
	return [...]string{"TUMBLE", "HOP", "CUMULATE", "SESSION"}[k]
}

// WindowSpec is a window's shape, in milliseconds. Tumble: Size. Hop: Size
// and Slide. Cumulate: Size (the max size) and Slide (the step). Session:
// Gap.
type WindowSpec struct {
	Kind  WindowKind
	Size  int64
	Slide int64
	Gap   int64
	// Offset shifts the windows (TUMBLE, HOP, CUMULATE): window starts are
	// Offset plus a multiple of the slide (Flink's OFFSET argument, ms,
	// positive or negative).
	Offset int64
}

// Slice is the size of the panes rows are accumulated in: windows are
// unions of consecutive slices (the window itself for tumbling windows,
// gcd(size, slide) for hopping windows, the step for cumulating ones).
func (w WindowSpec) Slice() int64 {
	switch w.Kind {
	case Hop:
		return gcd(w.Size, w.Slide)
	case Cumulate:
		return w.Slide
	}
	return w.Size
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func (w WindowSpec) String() string {
	off := ""
	if w.Offset != 0 {
		off = fmt.Sprintf(", offset=[%s]", fmtMillis(w.Offset))
	}
	switch w.Kind {
	case Hop:
		return fmt.Sprintf("HOP(slide=[%s], size=[%s]%s)", fmtMillis(w.Slide), fmtMillis(w.Size), off)
	case Cumulate:
		return fmt.Sprintf("CUMULATE(max_size=[%s], step=[%s]%s)", fmtMillis(w.Size), fmtMillis(w.Slide), off)
	case Session:
		return fmt.Sprintf("SESSION(gap=[%s])", fmtMillis(w.Gap))
	}
	return fmt.Sprintf("TUMBLE(size=[%s]%s)", fmtMillis(w.Size), off)
}

func fmtMillis(ms int64) string {
	switch {
	case ms%86_400_000 == 0:
		return fmt.Sprintf("%d d", ms/86_400_000)
	case ms%3_600_000 == 0:
		return fmt.Sprintf("%d h", ms/3_600_000)
	case ms%60_000 == 0:
		return fmt.Sprintf("%d min", ms/60_000)
	case ms%1000 == 0:
		return fmt.Sprintf("%d s", ms/1000)
	}
	return fmt.Sprintf("%d ms", ms)
}

// WatermarkAssignerOp generates watermarks from a source's rows: the
// largest TimeCol seen minus Delay minus 1 ms (Flink's bounded
// out-of-orderness), see exec/watermarkgen.go.
type WatermarkAssignerOp struct {
	ID       string
	TimeCol  int
	TimeName string
	Delay    int64 // ms
	// Interval is pipeline.auto-watermark-interval; IdleTimeout is
	// table.exec.source.idle-timeout (0: never idle).
	Interval    time.Duration
	IdleTimeout time.Duration
}

func (o *WatermarkAssignerOp) OpID() string { return o.ID }
func (o *WatermarkAssignerOp) Describe() string {
	wm := o.TimeName
	if o.Delay > 0 {
		wm = fmt.Sprintf("%s - %s", o.TimeName, fmtMillis(o.Delay))
	}
	if o.IdleTimeout > 0 {
		return fmt.Sprintf("WatermarkAssigner(rowtime=[%s], watermark=[%s], idle_timeout=[%s])", o.TimeName, wm, fmtMillis(o.IdleTimeout.Milliseconds()))
	}
	return fmt.Sprintf("WatermarkAssigner(rowtime=[%s], watermark=[%s])", o.TimeName, wm)
}

// WindowTVFOp appends window_start, window_end and window_time to every row
// (a hopping or cumulating window repeats a row once per window).
type WindowTVFOp struct {
	ID       string
	TimeCol  int
	TimeName string
	Window   WindowSpec
	Out      catalog.Schema
}

func (o *WindowTVFOp) OpID() string { return o.ID }
func (o *WindowTVFOp) Describe() string {
	return fmt.Sprintf("WindowTableFunction(window=[%s], time_col=[%s])", o.Window, o.TimeName)
}

// WindowAggOp is a window aggregation: rows are grouped by Keys and by
// window (assigned from TimeCol, a time attribute); a window's result is
// emitted once, as +I, when the watermark passes its end. Output: keys,
// window_start, window_end, window_time, then the aggregates.
type WindowAggOp struct {
	ID          string
	Keys        []int
	KeyNames    []string
	TimeCol     int
	TimeName    string
	Window      WindowSpec
	Aggs        []AggCall
	Out         catalog.Schema
	MaxParallel int
	// Proctime: TimeCol is a processing-time attribute (PROCTIME()): rows
	// are assigned to windows by the operator's clock when they arrive and
	// windows fire on processing-time timers (exec/windowproc.go).
	Proctime bool
	// Attached: the input already carries Window's windows (Flink's
	// WindowAttachedWindowingStrategy): the window of a row is given by
	// its WinStart and WinEnd columns (the input's window_start and
	// window_end, AttachedNames as the query names them), not assigned
	// from a time column; TimeCol is WinEnd. The rows are partitioned by
	// Keys, WinStart and WinEnd (HashCols).
	Attached         bool
	WinStart, WinEnd int
	AttachedNames    []string
}

// HashCols are the input columns the rows are partitioned and assigned to
// key groups by: Keys, and for an attached window its bounds.
func (o *WindowAggOp) HashCols() []int {
	if !o.Attached {
		return o.Keys
	}
	return append(append(make([]int, 0, len(o.Keys)+2), o.Keys...), o.WinStart, o.WinEnd)
}

func (o *WindowAggOp) OpID() string { return o.ID }
func (o *WindowAggOp) Describe() string {
	as := make([]string, len(o.Aggs))
	for i, a := range o.Aggs {
		as[i] = a.String() + " AS " + a.Name
	}
	timeCol, timeName := "time_col", o.TimeName
	switch {
	case o.Attached:
		timeCol, timeName = "attached", strings.Join(o.AttachedNames, ", ")
	case o.Proctime:
		timeCol = "proctime_col"
	}
	return fmt.Sprintf("WindowAggregate(groupBy=[%s], window=[%s], %s=[%s], select=[%s])",
		strings.Join(o.KeyNames, ", "), o.Window, timeCol, timeName, strings.Join(as, ", "))
}

// relKinds of windows (see rel.kind).
const (
	relWindowTVF relKind = 100 + iota
	relWindowAgg
)

// windowRel is what a window rel adds to rel.
type windowRel struct {
	spec     WindowSpec
	timeCol  int   // relWindowTVF: of the input
	partKeys []int // SESSION ... PARTITION BY: input columns
	tvf      *WindowTVFOp
	agg      *WindowAggOp
	pos      parser.Pos // where the TVF is written
}

// windowColumns are what a window TVF appends.
var windowColumns = []string{"window_start", "window_end", "window_time"}

// procTimeAttr reports whether column i of r is a processing-time
// attribute: PROCTIME() (a computed column or a projection), a plain
// reference to one, or the window_time of a processing-time window.
func procTimeAttr(r *rel, i int) bool {
	for r != nil && i >= 0 && i < len(r.schema) {
		switch r.kind {
		case relCalc:
			if r.projs != nil {
				if IsProctimeCall(r.projs[i]) {
					return true
				}
				c, ok := r.projs[i].(*ColRef)
				if !ok {
					return false
				}
				i = c.Index
			}
		case relTableFunc:
		case relWindowTVF:
			if i == len(r.schema)-1 {
				i = r.win.timeCol
			}
		case relWindowAgg:
			return r.win.agg.Proctime && i == len(r.win.agg.Keys)+2
		default:
			return false
		}
		r = r.input
	}
	return false
}

// procWindowBelow reports whether the window TVF or window aggregation
// that windowCols finds below r is over processing time.
func procWindowBelow(r *rel) bool {
	for r != nil {
		switch r.kind {
		case relWindowTVF:
			return procTimeAttr(r.input, r.win.timeCol)
		case relWindowAgg:
			return r.win.agg.Proctime
		case relCalc, relWindowRank:
			r = r.input
		default:
			return false
		}
	}
	return false
}

// timeAttrs reports which columns of r are time attributes (rowtime or
// processing time: procTimeAttr tells which).
func timeAttrs(r *rel) []bool {
	out := make([]bool, len(r.schema))
	switch r.kind {
	case relScan:
		if r.table != nil && r.table.Watermark != nil {
			if i := r.table.Schema.Index(r.table.Watermark.Column); i >= 0 && i < len(out) {
				out[i] = true
			}
		}
	case relCalc:
		in := timeAttrs(r.input)
		if r.projs == nil {
			copy(out, in)
			break
		}
		for i, e := range r.projs {
			if c, ok := e.(*ColRef); ok && c.Index < len(in) {
				out[i] = in[c.Index]
			} else if IsProctimeCall(e) {
				out[i] = true
			}
		}
		if t := r.computedOf; t != nil && t.Watermark != nil {
			if i := r.schema.Index(t.Watermark.Column); i >= 0 {
				out[i] = true
			}
		}
	case relTableFunc:
		copy(out, timeAttrs(r.input))
	case relWindowTVF:
		copy(out, timeAttrs(r.input))
		out[len(out)-1] = true
	case relWindowAgg:
		out[len(r.win.agg.Keys)+2] = true
	case relWindowRank:
		copy(out, timeAttrs(r.input))
	case relSort, relLimit:
		copy(out, timeAttrs(r.input))
	case relUnion: // a time attribute of every input
		for i := range out {
			out[i] = true
		}
		for _, in := range r.inputs {
			for i, t := range timeAttrs(in) {
				out[i] = out[i] && t
			}
		}
	case relLookupJoin: // the left side's (lookupjoin.go)
		copy(out, timeAttrs(r.input))
	case relTemporalJoin:
		temporalTimeAttrs(r, out)
	case relJoin: // interval and window joins keep both sides' (intervaljoin.go)
		if r.join.timed != nil {
			n := copy(out, timeAttrs(r.input))
			copy(out[n:], timeAttrs(r.right))
		}
	}
	return out
}

// watermarkOp returns the WatermarkAssigner of scan r (nil: no watermark).
func (p *Planner) watermarkOp(r *rel) *WatermarkAssignerOp {
	t := r.table
	if r.values || t == nil || t.Watermark == nil {
		return nil
	}
	i := t.Schema.Index(t.Watermark.Column)
	if i < 0 {
		return nil
	}
	return &WatermarkAssignerOp{TimeCol: i, TimeName: t.Schema[i].Name, Delay: t.Watermark.DelayMillis,
		Interval: p.WatermarkInterval, IdleTimeout: p.IdleTimeout}
}

// addComputedWatermark appends the WatermarkAssigner of a watermark on a
// computed column after the Calc r that computes it (the scan's
// addWatermark found no such physical column).
func (b *physBuilder) addComputedWatermark(t *Task, r *rel) {
	tb := r.computedOf
	if tb.Watermark == nil || tb.Schema.Index(tb.Watermark.Column) >= 0 {
		return
	}
	i := r.schema.Index(tb.Watermark.Column)
	if i < 0 {
		return
	}
	src := t
	if src.Source == nil && len(src.Inputs) == 1 { // a reader of a shared source
		src = src.Inputs[0].From
	}
	if src.Source == nil {
		return
	}
	op := &WatermarkAssignerOp{TimeCol: i, TimeName: r.schema[i].Name, Delay: tb.Watermark.DelayMillis,
		Interval: b.p.WatermarkInterval, IdleTimeout: b.p.IdleTimeout}
	op.ID = b.unique(hashID("watermark", src.Source.ID))
	t.Ops = append(t.Ops, op)
}

// addWatermark appends the WatermarkAssigner of scan r to its task t.
func (b *physBuilder) addWatermark(t *Task, r *rel) {
	op := b.p.watermarkOp(r)
	if op == nil {
		return
	}
	op.ID = b.unique(hashID("watermark", t.Source.ID))
	t.Ops = append(t.Ops, op)
}

// buildWindowTVF plans TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size)) and
// its siblings, positional or with named arguments.
func (p *Planner) buildWindowTVF(tf *parser.TableFunc, ctx *parser.QueryContext) (*rel, error) {
	name := strings.ToUpper(tf.Name)
	errf := func(format string, args ...any) error {
		return &parser.Error{Pos: tf.Pos, Msg: fmt.Sprintf(format, args...)}
	}
	var params []string
	switch name {
	case "TUMBLE":
		params = []string{"DATA", "TIMECOL", "SIZE", "OFFSET"}
	case "HOP":
		params = []string{"DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"}
	case "CUMULATE":
		params = []string{"DATA", "TIMECOL", "STEP", "SIZE", "OFFSET"}
	case "SESSION":
		params = []string{"DATA", "TIMECOL", "GAP"}
	}
	args := map[string]ast.ExprNode{}
	for i, a := range tf.Args {
		key := ""
		if i < len(tf.ArgNames) && tf.ArgNames[i] != "" {
			key = strings.ToUpper(tf.ArgNames[i])
			found := false
			for _, p := range params {
				found = found || p == key
			}
			if !found {
				return nil, errf("%s has no parameter %s (parameters: %s)", name, key, strings.Join(params, ", "))
			}
		} else if i < len(params) {
			key = params[i]
		} else {
			return nil, errf("%s takes at most %d arguments", name, len(params))
		}
		if _, dup := args[key]; dup {
			return nil, errf("%s: argument %s is given twice", name, key)
		}
		args[key] = a
	}
	for _, need := range params {
		if _, ok := args[need]; !ok && need != "OFFSET" {
			return nil, errf("%s needs the argument %s: %s(TABLE t, DESCRIPTOR(ts), ...)", name, need, name)
		}
	}
	tn, ok := unparen(args["DATA"]).(*ast.ColumnNameExpr)
	if !ok {
		return nil, errf("the first argument of %s must be TABLE <table or view>", name)
	}
	in, err := p.buildTableName(&ast.TableName{Name: ast.NewCIStr(tn.Name.Name.O)}, ctx)
	if err != nil {
		return nil, err
	}
	d, ok := unparen(args["TIMECOL"]).(*ast.FuncCallExpr)
	if !ok || d.FnName.L != "descriptor" || len(d.Args) != 1 {
		return nil, errf("the time column of %s must be written DESCRIPTOR(column)", name)
	}
	tc, ok := unparen(d.Args[0]).(*ast.ColumnNameExpr)
	if !ok {
		return nil, errf("DESCRIPTOR takes a column name")
	}
	timeCol, err := timeAttrColumn(in, tc.Name.Name.O, ctx, tc)
	if err != nil {
		return nil, err
	}
	iv := func(key string) (int64, error) {
		v, ok := parser.IntervalOf(unparen(args[key]))
		if !ok || v.YearMonth || v.Millis <= 0 {
			return 0, errf("the %s of %s must be a positive day-time INTERVAL, e.g. INTERVAL '10' MINUTES", strings.ToLower(key), name)
		}
		return v.Millis, nil
	}
	var spec WindowSpec
	switch name {
	case "TUMBLE":
		spec.Kind = Tumble
		if spec.Size, err = iv("SIZE"); err != nil {
			return nil, err
		}
	case "HOP", "CUMULATE":
		spec.Kind = Hop
		key := "SLIDE"
		if name == "CUMULATE" {
			spec.Kind, key = Cumulate, "STEP"
		}
		if spec.Slide, err = iv(key); err != nil {
			return nil, err
		}
		if spec.Size, err = iv("SIZE"); err != nil {
			return nil, err
		}
		if name == "CUMULATE" && spec.Size%spec.Slide != 0 {
			return nil, errf("CUMULATE: the max size must be a multiple of the step")
		}
		if name == "HOP" && spec.Size%spec.Slide != 0 {
			return nil, errf("HOP: the size must be a multiple of the slide (as in Flink's window TVFs)")
		}
	case "SESSION":
		spec.Kind = Session
		if spec.Gap, err = iv("GAP"); err != nil {
			return nil, err
		}
	}
	if a, ok := args["OFFSET"]; ok {
		v, ok := parser.IntervalOf(unparen(a))
		if !ok || v.YearMonth {
			return nil, errf("the offset of %s must be a day-time INTERVAL, e.g. INTERVAL '1' MINUTE (or negative: INTERVAL '-1' MINUTE)", name)
		}
		spec.Offset = v.Millis
	}
	wr := &windowRel{spec: spec, timeCol: timeCol, pos: tf.Pos}
	for _, k := range tf.PartitionBy {
		i := in.schema.Index(k)
		if i < 0 {
			return nil, errf("PARTITION BY column '%s' not found in %s", k, strings.Join(in.schema.Names(), ", "))
		}
		wr.partKeys = append(wr.partKeys, i)
	}
	if len(tf.PartitionBy) > 0 && spec.Kind != Session {
		return nil, errf("PARTITION BY is supported only in SESSION windows")
	}
	if in.mode != InsertOnly {
		return nil, errf("%s needs an append-only input, but its input is updating (because of %s)", name, in.updatingNode())
	}
	ts := catalog.Timestamp.WithNotNull(true)
	schema := append(catalog.Schema{}, in.schema...)
	quals := append([]string{}, in.quals...)
	for _, c := range windowColumns {
		schema = append(schema, catalog.Column{Name: c, Type: ts})
		quals = append(quals, strings.ToLower(tf.Alias))
	}
	wr.tvf = &WindowTVFOp{TimeCol: timeCol, TimeName: in.schema[timeCol].Name, Window: spec, Out: schema}
	r := &rel{kind: relWindowTVF, input: in, schema: schema, quals: quals, mode: InsertOnly, win: wr, describ: wr.tvf.Describe()}
	return r, nil
}

// timeAttrColumn finds column name of in and checks it is a time attribute.
func timeAttrColumn(in *rel, name string, ctx *parser.QueryContext, at ast.ExprNode) (int, error) {
	i := in.schema.Index(name)
	if i < 0 {
		return 0, exprErr(ctx, at, name, "column '%s' not found in %s", name, strings.Join(in.schema.Names(), ", "))
	}
	if !timeAttrs(in)[i] {
		return 0, exprErr(ctx, at, name, "column '%s' is not a time attribute: a window needs a column with a WATERMARK (WATERMARK FOR %s AS ...), a PROCTIME() column or the window_time of a window aggregation", name, name)
	}
	return i, nil
}

// windowGroup is what an aggregation grouped by a window knows about it.
type windowGroup struct {
	spec    WindowSpec
	input   *rel // the rows the window aggregation reads (the TVF's input, filters kept)
	timeCol int  // time attribute column of in (the aggregation's input)
	// props: group-by expressions that are window properties, by their
	// String(): 0 window_start, 1 window_end, 2 window_time.
	props    map[string]int
	legacy   string // "TUMBLE", "HOP" or "SESSION" for GROUP BY TUMBLE(...)
	legacyFn string // the legacy window call's String() (matches its auxiliaries)
	partKeys []int
	tvfWidth int // columns of the TVF's input (TVF only)
	// attached: the input carries the window (windowCols): startCol and
	// endCol of input are its window_start and window_end.
	attached         bool
	startCol, endCol int
}

// windowOfAggregate recognizes an aggregation grouped by a window: by
// window_start and window_end of a window TVF below it (through filters),
// or by a legacy group window call. nil: not windowed.
func (p *Planner) windowOfAggregate(sel *ast.SelectStmt, in *rel, ctx *parser.QueryContext) (*windowGroup, error) {
	if sel.GroupBy == nil {
		return nil, nil
	}
	// Legacy: GROUP BY TUMBLE(ts, INTERVAL ...), ...
	for _, item := range sel.GroupBy.Items {
		fc, ok := unparen(item.Expr).(*ast.FuncCallExpr)
		if !ok {
			continue
		}
		kind := strings.ToUpper(fc.FnName.L)
		if kind != "TUMBLE" && kind != "HOP" && kind != "SESSION" {
			continue
		}
		w, err := p.legacyWindow(fc, kind, in, ctx)
		if err != nil {
			return nil, err
		}
		return w, nil
	}
	// Window TVF: the input is the TVF, maybe below filters.
	var filters []*rel
	n := in
	for n.kind == relCalc && n.projs == nil {
		filters = append(filters, n)
		n = n.input
	}
	if n.kind != relWindowTVF {
		return p.attachedWindow(sel, in, ctx)
	}
	width := len(n.input.schema)
	w := &windowGroup{spec: n.win.spec, timeCol: n.win.timeCol, props: map[string]int{}, partKeys: n.win.partKeys, tvfWidth: width}
	pre := &exprBuilder{ctx: ctx, in: in, clause: "GROUP BY"}
	for _, item := range sel.GroupBy.Items {
		e, err := pre.build(item.Expr)
		if err != nil {
			return nil, err
		}
		if c, ok := e.(*ColRef); ok && c.Index >= width {
			w.props[e.String()] = c.Index - width
		}
	}
	hasStart, hasEnd := false, false
	for _, v := range w.props {
		hasStart = hasStart || v == 0
		hasEnd = hasEnd || v == 1
	}
	if !hasStart || !hasEnd {
		// Grouped by other columns of a TVF's output: a plain aggregation
		// over the TVF's rows (as in Flink, an updating one).
		return nil, nil
	}
	// Filters between the TVF and the aggregation run on the TVF's input.
	cur := n.input
	for i := len(filters) - 1; i >= 0; i-- {
		f := filters[i]
		if maxColRef(f.filter) >= width {
			return nil, ctx.Errorf("WHERE", "a WHERE on window_start, window_end or window_time before a window aggregation is not supported yet; filter the aggregation's result instead")
		}
		cur = &rel{kind: relCalc, input: cur, schema: cur.schema, quals: cur.quals, mode: cur.mode, filter: f.filter}
	}
	w.input = cur
	return w, nil
}

// attachedWindow recognizes GROUP BY window_start, window_end [, keys]
// (through renames) over a relation that carries window properties (a
// window aggregation's or window TVF's output, see windowCols): the
// aggregation is then a window aggregation of the same window, attached
// to the input's windows (Flink's WindowAttachedWindowingStrategy): it is
// append-only and keeps the window properties. nil: the input is not
// windowed, is updating, is a SESSION or processing-time window, or the
// keys lack window_start or window_end (a regular aggregation then).
func (p *Planner) attachedWindow(sel *ast.SelectStmt, in *rel, ctx *parser.QueryContext) (*windowGroup, error) {
	wcols, _, ok := windowCols(in)
	if !ok || in.mode != InsertOnly || procWindowBelow(in) {
		return nil, nil
	}
	spec, ok := windowSpecOf(in)
	if !ok || spec.Kind == Session {
		return nil, nil
	}
	w := &windowGroup{spec: spec, input: in, props: map[string]int{}, attached: true, startCol: -1, endCol: -1}
	pre := &exprBuilder{ctx: ctx, in: in, clause: "GROUP BY"}
	for _, item := range sel.GroupBy.Items {
		e, err := pre.build(item.Expr)
		if err != nil {
			return nil, err
		}
		c, ok := e.(*ColRef)
		if !ok || wcols[c.Index] < 0 {
			continue
		}
		j := wcols[c.Index]
		w.props[e.String()] = j
		switch {
		case j == 0 && w.startCol < 0:
			w.startCol = c.Index
		case j == 1 && w.endCol < 0:
			w.endCol = c.Index
		}
	}
	if w.startCol < 0 || w.endCol < 0 {
		return nil, nil
	}
	w.timeCol = w.endCol
	return w, nil
}

// windowSpecOf is the window that windowCols finds below r.
func windowSpecOf(r *rel) (WindowSpec, bool) {
	for r != nil {
		switch r.kind {
		case relWindowTVF, relWindowAgg:
			return r.win.spec, true
		case relCalc, relWindowRank:
			r = r.input
		default:
			return WindowSpec{}, false
		}
	}
	return WindowSpec{}, false
}

// legacyWindow reads GROUP BY TUMBLE(ts, size) / HOP(ts, slide, size) /
// SESSION(ts, gap).
func (p *Planner) legacyWindow(fc *ast.FuncCallExpr, kind string, in *rel, ctx *parser.QueryContext) (*windowGroup, error) {
	want := map[string]int{"TUMBLE": 2, "HOP": 3, "SESSION": 2}[kind]
	bad := func(format string, args ...any) error { return exprErr(ctx, fc, fc.FnName.O, format, args...) }
	if len(fc.Args) != want {
		return nil, bad("%s takes %d arguments in GROUP BY: %s", kind, want, map[string]string{
			"TUMBLE": "TUMBLE(ts, INTERVAL '1' MINUTE)", "HOP": "HOP(ts, slide, size)", "SESSION": "SESSION(ts, gap)"}[kind])
	}
	tc, ok := unparen(fc.Args[0]).(*ast.ColumnNameExpr)
	if !ok {
		return nil, bad("the first argument of %s must be a time attribute column", kind)
	}
	b := &exprBuilder{ctx: ctx, in: in, clause: "GROUP BY"}
	ce, err := b.build(tc)
	if err != nil {
		return nil, err
	}
	col := ce.(*ColRef).Index
	if !timeAttrs(in)[col] {
		return nil, exprErr(ctx, tc, tc.Name.Name.O, "column '%s' is not a time attribute: a window needs a column with a WATERMARK (WATERMARK FOR %s AS ...), a PROCTIME() column or the window_time of a window aggregation", tc.Name.Name.O, tc.Name.Name.O)
	}
	var ms []int64
	for _, a := range fc.Args[1:] {
		v, ok := parser.IntervalOf(unparen(a))
		if !ok || v.YearMonth || v.Millis <= 0 {
			return nil, bad("the arguments of %s after the time column must be positive day-time INTERVALs", kind)
		}
		ms = append(ms, v.Millis)
	}
	w := &windowGroup{timeCol: col, props: map[string]int{}, legacy: kind, input: in, legacyFn: legacyKey(fc)}
	switch kind {
	case "TUMBLE":
		w.spec = WindowSpec{Kind: Tumble, Size: ms[0]}
	case "HOP":
		w.spec = WindowSpec{Kind: Hop, Slide: ms[0], Size: ms[1]}
		if ms[1]%ms[0] != 0 {
			return nil, bad("HOP: the size must be a multiple of the slide")
		}
	case "SESSION":
		w.spec = WindowSpec{Kind: Session, Gap: ms[0]}
	}
	return w, nil
}

// legacyKey renders a group window call's arguments, so that
// TUMBLE_START(ts, INTERVAL '1' MINUTE) finds its TUMBLE(ts, ...).
func legacyKey(fc *ast.FuncCallExpr) string {
	var parts []string
	for _, a := range fc.Args {
		if c, ok := unparen(a).(*ast.ColumnNameExpr); ok {
			parts = append(parts, strings.ToLower(c.Name.Name.O))
		} else if v, ok := parser.IntervalOf(unparen(a)); ok {
			parts = append(parts, v.String())
		} else {
			parts = append(parts, "?")
		}
	}
	return strings.Join(parts, ",")
}

// groupItem reports whether a GROUP BY item is the window itself (legacy
// call) or a window property (TVF columns).
func (w *windowGroup) groupItem(n ast.ExprNode, e Expr) bool {
	if w.legacy != "" {
		fc, ok := unparen(n).(*ast.FuncCallExpr)
		return ok && strings.EqualFold(fc.FnName.L, w.legacy) && legacyKey(fc) == w.legacyFn
	}
	if e == nil {
		return false
	}
	_, ok := w.props[e.String()]
	return ok
}

// auxiliary resolves TUMBLE_START(ts, ...) and its siblings to the window
// aggregation's output column (base: index of window_start); ok false if
// n is none.
func (w *windowGroup) auxiliary(n ast.ExprNode, base int, ctx *parser.QueryContext) (Expr, bool, error) {
	fc, ok := n.(*ast.FuncCallExpr)
	if !ok {
		return nil, false, nil
	}
	name := strings.ToUpper(fc.FnName.L)
	i := strings.IndexByte(name, '_')
	if i < 0 {
		return nil, false, nil
	}
	kind, prop := name[:i], name[i+1:]
	idx := map[string]int{"START": 0, "END": 1, "ROWTIME": 2}
	if kind != "TUMBLE" && kind != "HOP" && kind != "SESSION" {
		return nil, false, nil
	}
	proc := w.input != nil && procTimeAttr(w.input, w.timeCol)
	switch {
	case prop == "PROCTIME" && !proc:
		return nil, true, exprErr(ctx, fc, fc.FnName.O, "%s needs a processing-time window (GROUP BY %s over a PROCTIME() column); use %s_ROWTIME for an event-time window", name, kind, kind)
	case prop == "ROWTIME" && proc:
		return nil, true, exprErr(ctx, fc, fc.FnName.O, "%s needs an event-time window, but the window's time column is a processing-time attribute (PROCTIME()); use %s_PROCTIME", name, kind)
	case prop == "PROCTIME":
		prop = "ROWTIME" // both are window_time
	}
	j, ok := idx[prop]
	if !ok {
		return nil, false, nil
	}
	if w.legacy == "" || kind != w.legacy || legacyKey(fc) != w.legacyFn {
		return nil, true, exprErr(ctx, fc, fc.FnName.O, "%s must repeat the arguments of the GROUP BY %s(...) window", name, kind)
	}
	return &ColRef{Index: base + j, Name: windowColumns[j], T: catalog.Timestamp.WithNotNull(true)}, true, nil
}

// maxColRef is the largest column index e reads (-1: none).
func maxColRef(e Expr) int {
	m := -1
	var walk func(Expr)
	walk = func(e Expr) {
		switch x := e.(type) {
		case *ColRef:
			m = max(m, x.Index)
		case *Call:
			for _, a := range x.Args {
				walk(a)
			}
		}
	}
	if e != nil {
		walk(e)
	}
	return m
}

// buildWindow builds the tasks of window rels (physBuilder.build).
func (b *physBuilder) buildWindow(r *rel) *Task {
	switch r.kind {
	case relWindowTVF:
		t := b.build(r.input)
		op := r.win.tvf
		if op.Window.Kind == Session && b.err == nil {
			b.err = &parser.Error{Pos: r.win.pos, Msg: "a SESSION window table function is supported only under a window aggregation (GROUP BY window_start, window_end, ...)"}
		}
		if procTimeAttr(r.input, r.win.timeCol) && b.err == nil {
			b.err = &parser.Error{Pos: r.win.pos, Msg: fmt.Sprintf("a %s window table function over the processing-time attribute %s is supported only under a window aggregation (GROUP BY window_start, window_end, ...)", op.Window.Kind, op.TimeName)}
		}
		t.Ops = append(t.Ops, op)
		op.ID = b.id(t, op.Describe())
		t.OutSchema, t.OutMode = r.schema, InsertOnly
		return t
	case relWindowAgg:
		in := b.build(r.input)
		a := r.win.agg
		par, kind := b.p.Parallelism, Hash
		if len(a.Keys) == 0 {
			par, kind = 1, Global
		}
		if a.Attached { // a window's rows are partitioned by the window too
			par, kind = b.p.Parallelism, Hash
		}
		t := b.newTask(par)
		b.connect(in, t, kind, a.HashCols())
		t.Ops = append(t.Ops, a)
		a.ID = b.windowAggID(r)
		t.OutSchema, t.OutMode = r.schema, InsertOnly
		return t
	}
	panic("unknown window rel")
}

// windowAggID is the stable id of a window aggregation: as a group
// aggregation's (ids.go), plus the window.
func (b *physBuilder) windowAggID(r *rel) string {
	a := r.win.agg
	if r.uid != "" {
		return b.aggID(r)
	}
	b.ids.ordinal++
	keys := make([]string, len(a.Keys))
	for i, k := range a.Keys {
		keys[i] = lineage(r.input, k)
	}
	calls := make([]string, len(a.Aggs))
	for i, c := range a.Aggs {
		arg := "*"
		if c.Arg >= 0 {
			arg = lineage(r.input, c.Arg)
		}
		calls[i] = c.Fn + "(" + arg + ")"
	}
	return b.unique(hashID("WindowAggregate",
		"sources="+strings.Join(sourceTables(r.input), ","),
		"window="+a.Window.String(), "time="+lineage(r.input, a.TimeCol),
		"keys="+strings.Join(keys, ","),
		"aggs="+strings.Join(calls, ","),
		fmt.Sprintf("attached=%t", a.Attached),
		fmt.Sprintf("ordinal=%d", b.ids.ordinal-1)))
}

// prop returns the window property (0 start, 1 end, 2 time) a group-by
// expression's String() names; w may be nil.
func (w *windowGroup) prop(s string) (int, bool) {
	if w == nil {
		return 0, false
	}
	j, ok := w.props[s]
	return j, ok
}

// windowAggRel is the window aggregation of buildAggregate: preProjs (keys,
// the time column, aggregate arguments, over the aggregation's input) run
// on the window's input rows.
func (p *Planner) windowAggRel(w *windowGroup, preProjs []Expr, preSchema catalog.Schema, nKeys int, keyNames []string, calls []AggCall, ctx *parser.QueryContext) (*rel, error) {
	if w.tvfWidth > 0 {
		for _, e := range preProjs {
			if maxColRef(e) >= w.tvfWidth {
				return nil, ctx.Errorf("window_start", "window_start, window_end and window_time can be used in a window aggregation only as GROUP BY columns")
			}
		}
	}
	if w.input.mode != InsertOnly {
		return nil, ctx.Errorf("GROUP", "a window aggregation needs an append-only input, but its input is updating (because of %s)", w.input.updatingNode())
	}
	if w.spec.Kind == Session && w.legacy == "" {
		same := len(w.partKeys) == nKeys
		for _, pk := range w.partKeys {
			found := false
			for _, e := range preProjs[:nKeys] {
				if c, ok := e.(*ColRef); ok && c.Index == pk {
					found = true
				}
			}
			same = same && found
		}
		if !same {
			return nil, ctx.Errorf("GROUP", "a SESSION window aggregation must group by window_start, window_end and exactly the PARTITION BY columns of the SESSION")
		}
	}
	preRel := &rel{kind: relCalc, input: w.input, schema: preSchema, quals: make([]string, len(preSchema)), mode: InsertOnly, projs: preProjs}
	keys := make([]int, nKeys)
	for i := range keys {
		keys[i] = i
	}
	out := append(catalog.Schema{}, preSchema[:nKeys]...)
	for _, c := range windowColumns {
		out = append(out, catalog.Column{Name: c, Type: catalog.Timestamp.WithNotNull(true)})
	}
	for _, c := range calls {
		out = append(out, catalog.Column{Name: c.Name, Type: c.T})
	}
	op := &WindowAggOp{Keys: keys, KeyNames: keyNames, TimeCol: nKeys, TimeName: preSchema[nKeys].Name, Window: w.spec,
		Aggs: calls, Out: out, MaxParallel: p.MaxParallelism, Proctime: procTimeAttr(w.input, w.timeCol)}
	if w.attached { // preProjs: keys, window_start, window_end, arguments
		op.Attached, op.WinStart, op.WinEnd, op.TimeCol = true, nKeys, nKeys+1, nKeys+1
		op.TimeName = preSchema[nKeys+1].Name
		op.AttachedNames = []string{preSchema[nKeys].Name, preSchema[nKeys+1].Name}
	}
	return &rel{kind: relWindowAgg, input: preRel, schema: out, quals: make([]string, len(out)), mode: InsertOnly,
		win: &windowRel{spec: w.spec, agg: op}, describ: op.Describe()}, nil
}
