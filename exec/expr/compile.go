package expr

import (
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec/format"
	"github.com/streamsql/streamsql/planner"
)

// Evaluator computes one expression over a whole batch.
type Evaluator interface {
	// Eval returns a new array (the caller releases it) of the expression's
	// Arrow type with rec.NumRows() rows, allocated from mem.
	Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error)
}

// errDivZero is the run-time error of integer and DECIMAL division by zero.
var errDivZero = errors.New("division by zero")

// constMem holds compile-time constants; they live as long as the Evaluator.
var constMem = memory.DefaultAllocator

// Compile turns a resolved expression into an Evaluator. Types are dispatched
// here once; constant sub-expressions are evaluated here once.
func Compile(e planner.Expr) (Evaluator, error) { return CompileWith(e, Options{}) }

// Options are what an expression may read besides its input: the job's
// clock (CURRENT_TIMESTAMP, NOW(), LOCALTIMESTAMP, CURRENT_DATE,
// CURRENT_TIME, UNIX_TIMESTAMP(); nil: the wall clock).
type Options struct {
	Now func() time.Time
}

// CompileWith is Compile with options.
func CompileWith(e planner.Expr, opts Options) (Evaluator, error) {
	if e == nil {
		return nil, fmt.Errorf("expr: nil expression")
	}
	cp := &compiler{now: opts.Now, share: sharedCalls(e)}
	ev, err := cp.compile(e)
	if err != nil || len(cp.shared) == 0 {
		return ev, err
	}
	root := &cseRoot{body: ev}
	for _, n := range cp.shared {
		root.nodes = append(root.nodes, n)
	}
	return root, nil
}

// compiler carries the options through one Compile, and the common
// sub-expressions (cse.go): the digests to share and their nodes.
type compiler struct {
	now    func() time.Time
	share  map[string]bool
	shared map[string]*sharedNode
}

func (cp *compiler) compile(e planner.Expr) (Evaluator, error) {
	switch x := e.(type) {
	case *planner.ColRef:
		if x.Index < 0 {
			return nil, fmt.Errorf("column %s has a negative index", x)
		}
		return &colNode{idx: x.Index, name: x.Name, id: x.T.ArrowType().ID()}, nil
	case *planner.Literal:
		a, err := literalArray(x)
		if err != nil {
			return nil, err
		}
		return &constNode{arr: a}, nil
	case *planner.Call:
		var d string
		if cp.share != nil {
			if d = digest(x); cp.share[d] {
				if n := cp.shared[d]; n != nil {
					return n, nil
				}
			}
		}
		orig := x
		if in := orToIn(x); in != nil {
			x = in
		}
		ev, err := cp.compileCall(x)
		if err != nil {
			return nil, err
		}
		ev = foldConst(x, ev)
		if cp.share[d] && constArr(ev) == nil {
			n := &sharedNode{inner: ev}
			if cp.shared == nil {
				cp.shared = map[string]*sharedNode{}
			}
			cp.shared[digest(orig)] = n
			return n, nil
		}
		return ev, nil
	}
	return nil, fmt.Errorf("expr: unsupported expression %T", e)
}

// colNode reads one input column.
type colNode struct {
	idx  int
	name string
	id   arrow.Type
}

func (c *colNode) Eval(rec arrow.Record, _ memory.Allocator) (arrow.Array, error) {
	if c.idx >= int(rec.NumCols()) {
		return nil, fmt.Errorf("column $%d (%s) is out of range: the batch has %d columns", c.idx, c.name, rec.NumCols())
	}
	col := rec.Column(c.idx)
	if col.DataType().ID() != c.id {
		return nil, fmt.Errorf("column $%d (%s) has Arrow type %s, expected %s", c.idx, c.name, col.DataType(), c.id)
	}
	col.Retain()
	return col, nil
}

// constNode is a compile-time constant: a 1-row array broadcast per batch.
type constNode struct{ arr arrow.Array }

func (c *constNode) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	return Broadcast(c.arr, int(rec.NumRows()), mem), nil
}

// constArr returns the 1-row array of a constant evaluator, or nil.
func constArr(ev Evaluator) arrow.Array {
	if c, ok := ev.(*constNode); ok {
		return c.arr
	}
	return nil
}

// isNullConst reports whether ev is the constant NULL.
func isNullConst(ev Evaluator) bool {
	a := constArr(ev)
	return a != nil && a.IsNull(0)
}

var oneRow = NewRecord(arrow.NewSchema(nil, nil), nil, 1)

// foldConst evaluates a call whose arguments are all constants once. If that
// fails (e.g. CAST('x' AS INT)), the call is kept so the error surfaces when a
// batch is evaluated.
func foldConst(c *planner.Call, ev Evaluator) Evaluator {
	if _, ok := ev.(*constNode); ok {
		return ev
	}
	if !allConst(c) {
		return ev
	}
	a, err := ev.Eval(oneRow, constMem)
	if err != nil {
		return ev
	}
	return &constNode{arr: a}
}

func allConst(e planner.Expr) bool {
	switch x := e.(type) {
	case *planner.Literal:
		return true
	case *planner.Call:
		if volatileFns[x.Fn] {
			return false
		}
		for _, a := range x.Args {
			if !allConst(a) {
				return false
			}
		}
		return true
	}
	return false
}

// literalArray builds the 1-row array of a literal.
func literalArray(l *planner.Literal) (arrow.Array, error) {
	t := l.T
	if t.Kind == catalog.KindNull {
		return array.NewNull(1), nil
	}
	b := array.NewBuilder(constMem, t.ArrowType())
	defer b.Release()
	if l.Value == nil {
		b.AppendNull()
		return b.NewArray(), nil
	}
	bad := func() (arrow.Array, error) {
		return nil, fmt.Errorf("literal %v has Go type %T, which does not match its SQL type %s", l.Value, l.Value, t)
	}
	switch t.Kind {
	case catalog.KindBoolean:
		v, ok := l.Value.(bool)
		if !ok {
			return bad()
		}
		b.(*array.BooleanBuilder).Append(v)
	case catalog.KindInt:
		v, ok := l.Value.(int32)
		if !ok {
			return bad()
		}
		b.(*array.Int32Builder).Append(v)
	case catalog.KindBigInt:
		v, ok := l.Value.(int64)
		if !ok {
			return bad()
		}
		b.(*array.Int64Builder).Append(v)
	case catalog.KindDouble:
		v, ok := l.Value.(float64)
		if !ok {
			return bad()
		}
		b.(*array.Float64Builder).Append(v)
	case catalog.KindDecimal:
		v, ok := l.Value.(decimal128.Num)
		if !ok {
			return bad()
		}
		b.(*array.Decimal128Builder).Append(v)
	case catalog.KindString:
		v, ok := l.Value.(string)
		if !ok {
			return bad()
		}
		// Like every decoder, literals hold valid UTF-8 (a script file
		// in another encoding could carry any bytes).
		b.(*array.StringBuilder).Append(format.ValidUTF8(v))
	case catalog.KindTimestamp, catalog.KindTimestampLTZ:
		v, ok := l.Value.(int64)
		if !ok {
			return bad()
		}
		b.(*array.TimestampBuilder).Append(arrow.Timestamp(v))
	case catalog.KindTinyInt:
		v, ok := l.Value.(int8)
		if !ok {
			return bad()
		}
		b.(*array.Int8Builder).Append(v)
	case catalog.KindSmallInt:
		v, ok := l.Value.(int16)
		if !ok {
			return bad()
		}
		b.(*array.Int16Builder).Append(v)
	case catalog.KindFloat:
		v, ok := l.Value.(float32)
		if !ok {
			return bad()
		}
		b.(*array.Float32Builder).Append(v)
	case catalog.KindDate:
		v, ok := l.Value.(int32)
		if !ok {
			return bad()
		}
		b.(*array.Date32Builder).Append(arrow.Date32(v))
	case catalog.KindTime:
		v, ok := l.Value.(int32)
		if !ok {
			return bad()
		}
		b.(*array.Time32Builder).Append(arrow.Time32(v))
	case catalog.KindIntervalDT:
		v, ok := l.Value.(int64)
		if !ok {
			return bad()
		}
		b.(*array.DurationBuilder).Append(arrow.Duration(v))
	case catalog.KindIntervalYM:
		v, ok := l.Value.(int32)
		if !ok {
			return bad()
		}
		b.(*array.MonthIntervalBuilder).Append(arrow.MonthInterval(v))
	default:
		return bad()
	}
	return b.NewArray(), nil
}

// nullNode yields NULLs of one type (a strict function with a NULL constant
// argument).
type nullNode struct{ dt arrow.DataType }

func (n *nullNode) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	return allNull(n.dt, int(rec.NumRows()), mem), nil
}

// operand is a compiled argument: an evaluator, or a constant 1-row array.
type operand struct {
	ev Evaluator
	c  arrow.Array
}

func newOperand(ev Evaluator) operand { return operand{ev: ev, c: constArr(ev)} }

// evalArgs evaluates the non-constant operands; a constant operand yields nil.
// When every operand is constant, the first is broadcast so kernels always
// see at least one array. On error everything evaluated so far is released.
func evalArgs(ops []operand, rec arrow.Record, mem memory.Allocator) ([]arrow.Array, error) {
	out := make([]arrow.Array, len(ops))
	allC := true
	for _, o := range ops {
		if o.c == nil {
			allC = false
		}
	}
	for i, o := range ops {
		if o.c != nil && !(allC && i == 0) {
			continue
		}
		a, err := o.ev.Eval(rec, mem)
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

func releaseAll(as []arrow.Array) {
	for _, a := range as {
		if a != nil {
			a.Release()
		}
	}
}

// compileArgs compiles the arguments of a call.
func (cp *compiler) compileArgs(c *planner.Call) ([]Evaluator, error) {
	evs := make([]Evaluator, len(c.Args))
	for i, a := range c.Args {
		ev, err := cp.compile(a)
		if err != nil {
			return nil, err
		}
		evs[i] = ev
	}
	return evs, nil
}

func nargs(c *planner.Call, min, max int) error {
	if len(c.Args) < min || (max >= 0 && len(c.Args) > max) {
		return fmt.Errorf("function %s: unexpected number of arguments %d", c.Fn, len(c.Args))
	}
	return nil
}

// strictFns return NULL when any argument is NULL.
var strictFns = map[string]bool{
	"+": true, "-": true, "*": true, "/": true, "%": true, "neg": true,
	"=": true, "<>": true, "<": true, ">": true, "<=": true, ">=": true, "not": true,
	"like": true, "not_like": true, "upper": true, "lower": true, "concat": true,
	"substring": true, "char_length": true, "trim": true, "ltrim": true, "rtrim": true,
	"replace": true, "position": true, "abs": true, "floor": true, "ceil": true,
	"round": true, "power": true, "sqrt": true, "exp": true, "ln": true, "log10": true,
	"cast": true, "try_cast": true,
	"extract": true, "floor_to": true, "ceil_to": true, "dt_add_ms": true, "dt_add_months": true,
	"iv_add": true, "iv_sub": true, "ts_diff": true, "to_timestamp_ltz": true, "date_format": true,
	"from_unixtime": true, "to_timestamp": true, "to_date": true, "unix_timestamp_str": true,
	"regexp": true, "regexp_extract": true, "regexp_replace": true, "split_index": true,
}

// volatileFns read the clock: never folded into constants.
var volatileFns = map[string]bool{
	"current_timestamp": true, "proctime": true, "localtimestamp": true, "current_date": true, "current_time": true, "unix_timestamp": true,
}

func (cp *compiler) compileCall(c *planner.Call) (Evaluator, error) {
	if c.T.Kind == catalog.KindNull {
		return nil, fmt.Errorf("function %s has the untyped NULL result type", c.Fn)
	}
	args, err := cp.compileArgs(c)
	if err != nil {
		return nil, err
	}
	if strictFns[c.Fn] {
		for _, a := range args {
			if isNullConst(a) {
				return &nullNode{dt: c.T.ArrowType()}, nil
			}
		}
	}
	for i, a := range c.Args {
		if a.Type().Kind == catalog.KindNull && !isNullConst(args[i]) {
			return nil, fmt.Errorf("function %s: argument %d has the untyped NULL type", c.Fn, i+1)
		}
	}
	switch c.Fn {
	case "+", "-", "*", "/", "%":
		if err := nargs(c, 2, 2); err != nil {
			return nil, err
		}
		return compileArith(c, args)
	case "neg":
		if err := nargs(c, 1, 1); err != nil {
			return nil, err
		}
		return compileNeg(c, args[0])
	case "=", "<>", "<", ">", "<=", ">=":
		if err := nargs(c, 2, 2); err != nil {
			return nil, err
		}
		return compileCompare(c, args)
	case "and", "or":
		if err := nargs(c, 2, -1); err != nil {
			return nil, err
		}
		ev := args[0]
		for i := 1; i < len(args); i++ {
			ev = &logicNode{or: c.Fn == "or", l: ev, r: args[i], rFails: canFail(c.Args[i]), rCols: colsOf(c.Args[i])}
		}
		return ev, nil
	case "not", "is_null", "is_not_null", "is_true", "is_false", "is_not_true", "is_not_false":
		if err := nargs(c, 1, 1); err != nil {
			return nil, err
		}
		return &unaryBoolNode{fn: c.Fn, arg: args[0]}, nil
	case "like", "not_like":
		if err := nargs(c, 2, 3); err != nil {
			return nil, err
		}
		return compileLike(c, args)
	case "in", "not_in":
		if err := nargs(c, 2, -1); err != nil {
			return nil, err
		}
		return compileIn(c, args)
	case "case":
		if len(c.Args) < 1 || len(c.Args)%2 == 0 {
			return nil, fmt.Errorf("function case: unexpected number of arguments %d", len(c.Args))
		}
		return compileCase(c, args), nil
	case "coalesce":
		if err := nargs(c, 1, -1); err != nil {
			return nil, err
		}
		return compileCoalesce(c, args), nil
	case "upper", "lower", "concat", "concat_ws", "substring", "char_length", "trim", "ltrim",
		"rtrim", "replace", "position":
		return compileString(c, args)
	case "abs", "floor", "ceil", "round", "power", "sqrt", "exp", "ln", "log10":
		return compileMath(c, args)
	case "extract", "floor_to", "ceil_to", "dt_add_ms", "dt_add_months", "iv_add", "iv_sub", "ts_diff",
		"current_timestamp", "proctime", "localtimestamp", "current_date", "current_time", "unix_timestamp",
		"to_timestamp_ltz", "date_format", "from_unixtime", "to_timestamp", "to_date", "unix_timestamp_str",
		"regexp", "regexp_extract", "regexp_replace", "split_index", "field":
		return cp.compileTimeFn(c, args)
	case "cast", "try_cast":
		if err := nargs(c, 1, 2); err != nil {
			return nil, err
		}
		loc, err := zoneArg(c, 1)
		if err != nil {
			return nil, err
		}
		return compileCastIn(c.Args[0].Type(), c.T, args[0], c.Fn == "try_cast", loc)
	}
	return nil, fmt.Errorf("unknown function %q", c.Fn)
}

// zoneArg reads the session time zone that the planner passes as the
// constant STRING argument i of calls that depend on it (UTC when absent).
func zoneArg(c *planner.Call, i int) (*time.Location, error) {
	if len(c.Args) <= i {
		return time.UTC, nil
	}
	l, ok := c.Args[i].(*planner.Literal)
	if !ok {
		return nil, fmt.Errorf("function %s: the time zone argument must be a constant", c.Fn)
	}
	name, _ := l.Value.(string)
	return catalog.LoadZone(name)
}

// canFail reports whether evaluating e can raise a run-time error (so it must
// only be evaluated on the rows that need it).
func canFail(e planner.Expr) bool {
	c, ok := e.(*planner.Call)
	if !ok {
		return false
	}
	switch c.Fn {
	case "/", "%":
		// Integer division fails only by zero: by a non-zero constant
		// it cannot (DECIMAL may overflow; DOUBLE gives Inf/NaN).
		if c.Args[0].Type().Kind != catalog.KindDouble &&
			!(c.T.IsInteger() && c.Args[0].Type().IsInteger() && nonZeroIntLiteral(c.Args[1])) {
			return true
		}
	case "cast":
		if c.Args[0].Type().Kind == catalog.KindString && c.T.Kind != catalog.KindString {
			return true
		}
	case "like", "not_like":
		if len(c.Args) == 3 {
			return true // a bad escape is a run-time error
		}
	case "regexp", "regexp_extract", "regexp_replace", "date_format", "from_unixtime", "to_timestamp", "to_date", "unix_timestamp_str":
		if _, isLit := c.Args[1].(*planner.Literal); !isLit {
			return true // a pattern or format column may hold a bad one
		}
	}
	for _, a := range c.Args {
		if canFail(a) {
			return true
		}
	}
	return false
}

// nonZeroIntLiteral reports whether e is an integer constant other than 0
// (possibly under casts between integer types).
func nonZeroIntLiteral(e planner.Expr) bool {
	for {
		c, ok := e.(*planner.Call)
		if !ok || c.Fn != "cast" || len(c.Args) != 1 || !c.T.IsInteger() {
			break
		}
		e = c.Args[0]
	}
	l, ok := e.(*planner.Literal)
	if !ok || !l.T.IsInteger() {
		return false
	}
	switch v := l.Value.(type) {
	case int64:
		return v != 0
	case int32:
		return v != 0
	case int16:
		return v != 0
	case int8:
		return v != 0
	case int:
		return v != 0
	}
	return false
}

// colsOf marks the input columns e reads (a nil result reads none).
func colsOf(e planner.Expr) []bool {
	var cols []bool
	var walk func(planner.Expr)
	walk = func(e planner.Expr) {
		switch x := e.(type) {
		case *planner.ColRef:
			for len(cols) <= x.Index {
				cols = append(cols, false)
			}
			cols[x.Index] = true
		case *planner.Call:
			for _, a := range x.Args {
				walk(a)
			}
		}
	}
	walk(e)
	if cols == nil {
		cols = []bool{}
	}
	return cols
}

// evalRows evaluates ev on the rows of rec listed in rows (nil: all rows) and
// returns an array of rec.NumRows() rows that is NULL outside rows. cols
// (colsOf the expression; nil: every column) says which columns ev reads:
// only those are gathered, the others stand in as zero-copy slices of the
// right length that ev never looks at.
func evalRows(ev Evaluator, cols []bool, rec arrow.Record, rows []int32, mem memory.Allocator) (arrow.Array, error) {
	if rows == nil {
		return ev.Eval(rec, mem)
	}
	n := int(rec.NumRows())
	sub := takeColumns(rec, cols, rows, mem)
	a, err := ev.Eval(sub, mem)
	sub.Release()
	if err != nil {
		return nil, err
	}
	defer a.Release()
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = -1
	}
	for j, r := range rows {
		idx[r] = int32(j)
	}
	return takeArray(a, idx, mem), nil
}
