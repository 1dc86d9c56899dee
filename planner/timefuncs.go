package planner

// Time, regular-expression and string functions of Flink (see
// docs/sql.md), typed here; exec/expr/timefn.go and regexfn.go implement
// them. Datetime arguments are normalized before the kernels see them:
// the field functions (EXTRACT, YEAR, ..., DATE_FORMAT) read a TIMESTAMP(3)
// (a DATE, a TIMESTAMP(p) or a TIMESTAMP_LTZ in the session zone is cast
// first), so the kernels handle one representation: milliseconds.

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

func (b *exprBuilder) zone() string {
	if b.p != nil && b.p.TimeZone != "" {
		return b.p.TimeZone
	}
	return "UTC"
}

func (b *exprBuilder) zoneLit() *Literal {
	return &Literal{Value: b.zone(), T: catalog.String.WithNotNull(true)}
}

func strLit(s string) *Literal { return &Literal{Value: s, T: catalog.String.WithNotNull(true)} }

// withZone appends the session zone to a cast that involves TIMESTAMP_LTZ.
func (b *exprBuilder) withZone(e Expr) Expr {
	c, ok := e.(*Call)
	if !ok || (c.Fn != "cast" && c.Fn != "try_cast") || len(c.Args) != 1 {
		return e
	}
	if c.T.Kind == catalog.KindTimestampLTZ || c.Args[0].Type().Kind == catalog.KindTimestampLTZ {
		c.Args = append(c.Args, b.zoneLit())
	}
	return c
}

// castTo casts e to t (with the session zone when needed).
func (b *exprBuilder) castTo(e Expr, t catalog.Type) (Expr, error) {
	if e.Type().Equal(t) {
		return e, nil
	}
	c, err := ResolveCast(e, t)
	if err != nil {
		return nil, err
	}
	return b.withZone(c), nil
}

// asTimestamp3 normalizes a datetime (or a STRING, parsed as Flink's CAST
// does) to TIMESTAMP(3) wall-clock time.
func (b *exprBuilder) asTimestamp3(e Expr, fn string) (Expr, error) {
	t := e.Type()
	switch {
	case t.Kind == catalog.KindNull:
		return &Literal{T: catalog.Timestamp}, nil
	case t.Kind == catalog.KindTimestamp && t.Precision == 3:
		return e, nil
	case t.IsDatetime() && t.Kind != catalog.KindTime, t.Kind == catalog.KindString:
		return b.castTo(e, catalog.Timestamp)
	case t.Kind == catalog.KindTime:
		return b.castTo(e, catalog.Timestamp)
	}
	return nil, fmt.Errorf("function %s expects a DATE, TIME or TIMESTAMP argument, got %s", strings.ToUpper(fn), t.Nullable())
}

// timeUnits are the units of EXTRACT, FLOOR/CEIL TO, TIMESTAMPADD and
// TIMESTAMPDIFF (TiDB's spellings mapped to Flink's).
var timeUnitNames = map[string]string{
	"MICROSECOND": "MICROSECOND", "SECOND": "SECOND", "MINUTE": "MINUTE", "HOUR": "HOUR", "DAY": "DAY",
	"WEEK": "WEEK", "MONTH": "MONTH", "QUARTER": "QUARTER", "YEAR": "YEAR", "MILLISECOND": "MILLISECOND",
	"NANOSECOND": "NANOSECOND", "DOW": "DOW", "DOY": "DOY", "ISODOW": "ISODOW", "ISOYEAR": "ISOYEAR",
	"EPOCH": "EPOCH", "DECADE": "DECADE", "CENTURY": "CENTURY", "MILLENNIUM": "MILLENNIUM",
	"SQL_TSI_SECOND": "SECOND", "SQL_TSI_MINUTE": "MINUTE", "SQL_TSI_HOUR": "HOUR", "SQL_TSI_DAY": "DAY",
	"SQL_TSI_WEEK": "WEEK", "SQL_TSI_MONTH": "MONTH", "SQL_TSI_QUARTER": "QUARTER", "SQL_TSI_YEAR": "YEAR",
	"DAYOFWEEK": "DOW", "DAYOFYEAR": "DOY",
}

func unitArg(n ast.ExprNode) (string, bool) {
	switch x := n.(type) {
	case *ast.TimeUnitExpr:
		u, ok := timeUnitNames[strings.ToUpper(x.Unit.String())]
		return u, ok
	case ast.ValueExpr:
		u, ok := timeUnitNames[strings.ToUpper(x.GetString())]
		return u, ok
	case *ast.ColumnNameExpr:
		u, ok := timeUnitNames[strings.ToUpper(x.Name.Name.O)]
		return u, ok
	}
	return "", false
}

var fieldFuncs = map[string]string{
	"year": "YEAR", "quarter": "QUARTER", "month": "MONTH", "week": "WEEK", "dayofyear": "DOY",
	"dayofmonth": "DAY", "dayofweek": "DOW", "hour": "HOUR", "minute": "MINUTE", "second": "SECOND",
}

// TimeFunctionNames are the SQL names this file adds to FunctionNames.
var TimeFunctionNames = []string{
	"CURRENT_DATE", "CURRENT_TIME", "CURRENT_TIMESTAMP", "DATE_FORMAT", "DAYOFMONTH", "DAYOFWEEK",
	"DAYOFYEAR", "EXTRACT", "FROM_UNIXTIME", "HOUR", "LOCALTIME", "LOCALTIMESTAMP", "MINUTE",
	"MONTH", "NOW", "PROCTIME", "QUARTER", "REGEXP", "REGEXP_EXTRACT", "REGEXP_REPLACE", "SECOND", "SPLIT_INDEX",
	"TIMESTAMPADD", "TIMESTAMPDIFF", "TO_DATE", "TO_TIMESTAMP", "TO_TIMESTAMP_LTZ", "UNIX_TIMESTAMP", "WEEK", "YEAR",
}

// timeCall types the functions of this file; ok is false for other names.
func (b *exprBuilder) timeCall(x *ast.FuncCallExpr) (Expr, bool, error) {
	name := x.FnName.L
	errf := func(format string, args ...any) (Expr, bool, error) {
		return nil, true, b.errAt(x, x.FnName.O, format, args...)
	}
	wrap := func(e Expr, err error) (Expr, bool, error) {
		if err != nil {
			if _, isPE := err.(*parser.Error); isPE {
				return nil, true, err
			}
			return nil, true, b.errAt(x, x.FnName.O, "%v", err)
		}
		return e, true, nil
	}
	nn := func(t catalog.Type, args ...Expr) catalog.Type {
		ok := true
		for _, a := range args {
			ok = ok && a.Type().NotNull
		}
		return t.WithNotNull(ok)
	}
	arity := func(min, max int) error {
		if len(x.Args) < min || len(x.Args) > max {
			want := fmt.Sprint(min)
			if max > min {
				want = fmt.Sprintf("%d to %d", min, max)
			}
			return b.errAt(x, x.FnName.O, "function %s expects %s arguments, got %d", strings.ToUpper(name), want, len(x.Args))
		}
		return nil
	}
	switch name {
	case parser.IntervalFunc:
		iv, ok := parser.IntervalOf(x)
		if !ok {
			return errf("bad INTERVAL literal")
		}
		if iv.YearMonth {
			return &Literal{Value: int32(iv.Months), T: catalog.IntervalYM.WithNotNull(true)}, true, nil
		}
		return &Literal{Value: iv.Millis, T: catalog.IntervalDT.WithNotNull(true)}, true, nil
	case ast.DateLiteral, ast.TimeLiteral:
		v, ok := x.Args[0].(ast.ValueExpr)
		if !ok {
			return errf("bad literal")
		}
		t := catalog.Date
		if name == ast.TimeLiteral {
			t = catalog.Type{Kind: catalog.KindTime}
			text := v.GetString()
			if i := strings.IndexByte(text, '.'); i >= 0 {
				t.Precision = min(len(text)-i-1, 9)
			}
		}
		e, err := b.castTo(strLit(v.GetString()), t)
		if err != nil {
			return wrap(nil, err)
		}
		lit, err := foldLiteral(e)
		if err != nil {
			word := "DATE"
			if name == ast.TimeLiteral {
				word = "TIME"
			}
			return nil, true, b.errAt(x, word, "bad %s literal '%s'", word, v.GetString())
		}
		return lit, true, nil
	case parser.ExtractFunc:
		if len(x.Args) != 2 {
			return errf("EXTRACT takes (unit FROM value)")
		}
		unit, ok := unitArg(x.Args[0])
		if !ok {
			return errf("unsupported EXTRACT unit %s", strings.ToUpper(x.Args[0].(ast.ValueExpr).GetString()))
		}
		v, err := b.build(x.Args[1])
		if err != nil {
			return nil, true, err
		}
		return wrap(b.field(unit, v, "EXTRACT"))
	case parser.FloorToFunc, parser.CeilToFunc:
		if len(x.Args) != 2 {
			return errf("FLOOR/CEIL takes (value TO unit)")
		}
		unit, ok := unitArg(x.Args[1])
		fn := "FLOOR"
		if name == parser.CeilToFunc {
			fn = "CEIL"
		}
		if !ok || unit == "DOW" || unit == "DOY" || unit == "EPOCH" || unit == "ISODOW" || unit == "ISOYEAR" {
			return errf("unsupported %s unit %s", fn, x.Args[1].(ast.ValueExpr).GetString())
		}
		v, err := b.build(x.Args[0])
		if err != nil {
			return nil, true, err
		}
		return wrap(b.floorTo(strings.ToLower(fn), unit, v))
	case "timestampadd":
		if err := arity(3, 3); err != nil {
			return nil, true, err
		}
		unit, ok := unitArg(x.Args[0])
		if !ok {
			return errf("unsupported TIMESTAMPADD unit")
		}
		args, err := b.buildAll(x.Args[1:])
		if err != nil {
			return nil, true, err
		}
		return wrap(b.timestampAdd(unit, args[0], args[1]))
	case "timestampdiff":
		if err := arity(3, 3); err != nil {
			return nil, true, err
		}
		unit, ok := unitArg(x.Args[0])
		if !ok {
			return errf("unsupported TIMESTAMPDIFF unit")
		}
		args, err := b.buildAll(x.Args[1:])
		if err != nil {
			return nil, true, err
		}
		return wrap(b.timestampDiff(unit, args[0], args[1]))
	case "current_timestamp", "now", "localtimestamp", "current_date", "curdate", "current_time", "localtime", "curtime":
		if name == "now" && len(x.Args) > 0 {
			return errf("NOW() takes no arguments")
		}
		var t catalog.Type
		fn := "current_timestamp"
		switch name {
		case "current_timestamp", "now":
			t = catalog.TimestampLTZ
		case "localtimestamp":
			t, fn = catalog.Timestamp, "localtimestamp"
		case "current_date", "curdate":
			t, fn = catalog.Date, "current_date"
		default:
			t, fn = catalog.Type{Kind: catalog.KindTime}, "current_time"
		}
		return &Call{Fn: fn, Args: []Expr{b.zoneLit()}, T: t.WithNotNull(true)}, true, nil
	case "proctime":
		// PROCTIME(): a processing-time attribute (Flink's TIMESTAMP_LTZ(3)
		// *PROCTIME*), the job clock's time when the Calc evaluates it; a
		// processing-time window assigns rows by its own clock (window.go).
		if len(x.Args) > 0 {
			return errf("PROCTIME() takes no arguments")
		}
		return ProctimeCall(b.zoneLit()), true, nil
	case "unix_timestamp":
		if err := arity(0, 2); err != nil {
			return nil, true, err
		}
		if len(x.Args) == 0 {
			return &Call{Fn: "unix_timestamp", Args: []Expr{b.zoneLit()}, T: catalog.BigInt.WithNotNull(true)}, true, nil
		}
		args, err := b.buildAll(x.Args)
		if err != nil {
			return nil, true, err
		}
		if len(args) == 1 {
			args = append(args, strLit("yyyy-MM-dd HH:mm:ss"))
		}
		if err := b.checkFormat(x, args[1]); err != nil {
			return nil, true, err
		}
		c, err := resolveStrings("unix_timestamp_str", args, catalog.BigInt)
		if err != nil {
			return wrap(nil, err)
		}
		c.T.NotNull = false // unparsable text is NULL
		c.Args = append(c.Args, b.zoneLit())
		return c, true, nil
	case "from_unixtime":
		if err := arity(1, 2); err != nil {
			return nil, true, err
		}
		args, err := b.buildAll(x.Args)
		if err != nil {
			return nil, true, err
		}
		if !args[0].Type().IsInteger() && args[0].Type().Kind != catalog.KindNull {
			return errf("FROM_UNIXTIME expects a BIGINT number of seconds, got %s", args[0].Type().Nullable())
		}
		f := Expr(strLit("yyyy-MM-dd HH:mm:ss"))
		if len(args) == 2 {
			f = args[1]
		}
		if err := b.checkFormat(x, f); err != nil {
			return nil, true, err
		}
		sec := coerce(args[0], catalog.BigInt)
		return &Call{Fn: "from_unixtime", Args: []Expr{sec, coerce(f, catalog.String), b.zoneLit()}, T: nn(catalog.String, args[0], f)}, true, nil
	case "to_timestamp", "to_date":
		if err := arity(1, 2); err != nil {
			return nil, true, err
		}
		args, err := b.buildAll(x.Args)
		if err != nil {
			return nil, true, err
		}
		def, t := "yyyy-MM-dd HH:mm:ss", catalog.Timestamp
		if name == "to_date" {
			def, t = "yyyy-MM-dd", catalog.Date
		}
		if len(args) == 1 {
			args = append(args, strLit(def))
		}
		if err := b.checkFormat(x, args[1]); err != nil {
			return nil, true, err
		}
		c, err := resolveStrings(name, args, t)
		if err != nil {
			return wrap(nil, err)
		}
		c.T.NotNull = false // unparsable text is NULL, as in Flink
		return c, true, nil
	case "to_timestamp_ltz":
		if err := arity(1, 2); err != nil {
			return nil, true, err
		}
		args, err := b.buildAll(x.Args)
		if err != nil {
			return nil, true, err
		}
		p := 3
		if len(args) == 2 {
			v, ok := constInt(args[1])
			if !ok || (v != 0 && v != 3) {
				return errf("TO_TIMESTAMP_LTZ precision must be the literal 0 (seconds) or 3 (milliseconds), got %s", args[1])
			}
			p = v
		}
		t := args[0].Type()
		if !t.IsNumeric() && t.Kind != catalog.KindNull {
			return errf("TO_TIMESTAMP_LTZ expects a number of seconds or milliseconds since the epoch, got %s", t.Nullable())
		}
		return &Call{Fn: "to_timestamp_ltz", Args: []Expr{coerce(args[0], catalog.BigInt), &Literal{Value: int32(p), T: catalog.Int.WithNotNull(true)}},
			T: catalog.TimestampLTZ.WithNotNull(args[0].Type().NotNull)}, true, nil
	case "date_format":
		if err := arity(2, 2); err != nil {
			return nil, true, err
		}
		args, err := b.buildAll(x.Args)
		if err != nil {
			return nil, true, err
		}
		ts, err := b.asTimestamp3(args[0], name)
		if err != nil {
			return wrap(nil, err)
		}
		if err := b.checkFormat(x, args[1]); err != nil {
			return nil, true, err
		}
		if args[1].Type().Kind != catalog.KindString && args[1].Type().Kind != catalog.KindNull {
			return errf("DATE_FORMAT expects a format STRING, got %s", args[1].Type().Nullable())
		}
		nnOK := args[0].Type().NotNull && args[1].Type().NotNull && args[0].Type().Kind != catalog.KindString
		return &Call{Fn: "date_format", Args: []Expr{ts, coerce(args[1], catalog.String)}, T: catalog.String.WithNotNull(nnOK)}, true, nil
	case "regexp", "regexp_extract", "regexp_replace":
		min, max := 2, 2
		switch name {
		case "regexp_extract":
			max = 3
		case "regexp_replace":
			min, max = 3, 3
		}
		if err := arity(min, max); err != nil {
			return nil, true, err
		}
		args, err := b.buildAll(x.Args)
		if err != nil {
			return nil, true, err
		}
		if name == "regexp_extract" && len(args) == 3 {
			if !args[2].Type().IsInteger() && args[2].Type().Kind != catalog.KindNull {
				return errf("REGEXP_EXTRACT expects an INT group index, got %s", args[2].Type().Nullable())
			}
			idx := coerce(args[2], catalog.Int)
			c, err := resolveStrings(name, args[:2], catalog.String)
			if err != nil {
				return wrap(nil, err)
			}
			c.Args = append(c.Args, idx)
			c.T.NotNull = false
			if err := b.checkRegexp(x, 1, c.Args[1]); err != nil {
				return nil, true, err
			}
			return c, true, nil
		}
		rt := catalog.String
		if name == "regexp" {
			rt = catalog.Boolean
		}
		c, err := resolveStrings(name, args, rt)
		if err != nil {
			return wrap(nil, err)
		}
		if name == "regexp_extract" {
			c.T.NotNull = false
		}
		if err := b.checkRegexp(x, 1, c.Args[1]); err != nil {
			return nil, true, err
		}
		return c, true, nil
	case "split_index":
		if err := arity(3, 3); err != nil {
			return nil, true, err
		}
		args, err := b.buildAll(x.Args)
		if err != nil {
			return nil, true, err
		}
		if !args[2].Type().IsInteger() && args[2].Type().Kind != catalog.KindNull {
			return errf("SPLIT_INDEX expects an INT index, got %s", args[2].Type().Nullable())
		}
		c, err := resolveStrings(name, args[:2], catalog.String)
		if err != nil {
			return wrap(nil, err)
		}
		c.Args = append(c.Args, coerce(args[2], catalog.Int))
		c.T.NotNull = false
		return c, true, nil
	}
	if unit, ok := fieldFuncs[name]; ok {
		if err := arity(1, 1); err != nil {
			return nil, true, err
		}
		v, err := b.build(x.Args[0])
		if err != nil {
			return nil, true, err
		}
		return wrap(b.field(unit, v, strings.ToUpper(name)))
	}
	return nil, false, nil
}

// checkFormat validates a constant date-time format pattern at plan time.
func (b *exprBuilder) checkFormat(x *ast.FuncCallExpr, f Expr) error {
	l, ok := f.(*Literal)
	if !ok || l.Value == nil {
		return nil
	}
	s, _ := l.Value.(string)
	if err := CheckDateFormat(s); err != nil {
		at := x.Args[len(x.Args)-1]
		if len(x.Args) > 1 {
			at = x.Args[1]
		}
		return b.errAt(at, x.FnName.O, "bad format '%s' in %s: %v", s, strings.ToUpper(x.FnName.O), err)
	}
	return nil
}

// checkRegexp compiles a constant pattern at plan time, so that a bad
// one is an error at its position.
func (b *exprBuilder) checkRegexp(x *ast.FuncCallExpr, i int, p Expr) error {
	l, ok := p.(*Literal)
	if !ok || l.Value == nil {
		return nil
	}
	s, _ := l.Value.(string)
	if _, err := regexp.Compile(s); err != nil {
		msg := err.Error()
		if e, ok := err.(*syntax.Error); ok {
			msg = fmt.Sprintf("%s: %s", e.Code, e.Expr)
		}
		return b.errAt(x.Args[i], x.FnName.O, "invalid regular expression '%s' in %s: %s", s, strings.ToUpper(x.FnName.O), msg)
	}
	return nil
}

// field is EXTRACT(unit FROM v) and the YEAR(v), ... functions: BIGINT.
func (b *exprBuilder) field(unit string, v Expr, fn string) (Expr, error) {
	if v.Type().IsInterval() {
		return nil, fmt.Errorf("%s of an INTERVAL is not supported", fn)
	}
	ts, err := b.asTimestamp3(v, fn)
	if err != nil {
		return nil, err
	}
	return &Call{Fn: "extract", Args: []Expr{strLit(unit), ts}, T: catalog.BigInt.WithNotNull(v.Type().NotNull)}, nil
}

// floorTo is FLOOR(v TO unit) / CEIL(v TO unit): the type of v.
func (b *exprBuilder) floorTo(fn, unit string, v Expr) (Expr, error) {
	t := v.Type()
	if !t.IsDatetime() || t.Kind == catalog.KindTime && (unit == "DAY" || unit == "WEEK" || unit == "MONTH" || unit == "QUARTER" || unit == "YEAR") {
		if t.Kind != catalog.KindTime {
			return nil, fmt.Errorf("%s(x TO %s) expects a DATE, TIME or TIMESTAMP, got %s", strings.ToUpper(fn), unit, t.Nullable())
		}
	}
	ts, err := b.asTimestamp3(v, fn)
	if err != nil {
		return nil, err
	}
	c := Expr(&Call{Fn: fn + "_to", Args: []Expr{ts, strLit(unit)}, T: catalog.Timestamp.WithNotNull(t.NotNull)})
	return b.castTo(c, t.Nullable().WithNotNull(t.NotNull))
}

// unitMillis are the fixed-length units of TIMESTAMPADD.
var unitMillis = map[string]int64{"MILLISECOND": 1, "SECOND": 1000, "MINUTE": 60_000, "HOUR": 3_600_000, "DAY": 86_400_000, "WEEK": 7 * 86_400_000}

var unitMonths = map[string]int64{"MONTH": 1, "QUARTER": 3, "YEAR": 12}

// timestampAdd is TIMESTAMPADD(unit, n, v): the type of v.
func (b *exprBuilder) timestampAdd(unit string, n, v Expr) (Expr, error) {
	if !n.Type().IsInteger() && n.Type().Kind != catalog.KindNull {
		return nil, fmt.Errorf("TIMESTAMPADD expects an integer count, got %s", n.Type().Nullable())
	}
	if !v.Type().IsDatetime() && v.Type().Kind != catalog.KindNull {
		return nil, fmt.Errorf("TIMESTAMPADD expects a DATE, TIME or TIMESTAMP, got %s", v.Type().Nullable())
	}
	var amount Expr
	var fn string
	switch {
	case unitMillis[unit] > 0:
		fn = "dt_add_ms"
		amount = &Call{Fn: "*", Args: []Expr{coerce(n, catalog.BigInt), &Literal{Value: unitMillis[unit], T: catalog.BigInt.WithNotNull(true)}}, T: catalog.BigInt.WithNotNull(n.Type().NotNull)}
	case unitMonths[unit] > 0:
		fn = "dt_add_months"
		amount = &Call{Fn: "*", Args: []Expr{coerce(n, catalog.Int), &Literal{Value: int32(unitMonths[unit]), T: catalog.Int.WithNotNull(true)}}, T: catalog.Int.WithNotNull(n.Type().NotNull)}
	default:
		return nil, fmt.Errorf("unsupported TIMESTAMPADD unit %s", unit)
	}
	return b.dtAdd(fn, v, amount, 1)
}

// dtAdd adds sign * amount (BIGINT milliseconds or INT months) to a
// datetime: the result has v's type. TIMESTAMP_LTZ adds months in the
// session zone's calendar.
func (b *exprBuilder) dtAdd(fn string, v, amount Expr, sign int32) (Expr, error) {
	t := v.Type()
	if t.Kind == catalog.KindNull {
		t = catalog.Timestamp
	}
	args := []Expr{v, amount, &Literal{Value: sign, T: catalog.Int.WithNotNull(true)}, b.zoneLit()}
	return &Call{Fn: fn, Args: args, T: t.WithNotNull(v.Type().NotNull && amount.Type().NotNull)}, nil
}

// timestampDiff is TIMESTAMPDIFF(unit, a, b): INT, b - a in whole units.
func (b *exprBuilder) timestampDiff(unit string, x, y Expr) (Expr, error) {
	if unitMillis[unit] == 0 && unitMonths[unit] == 0 {
		return nil, fmt.Errorf("unsupported TIMESTAMPDIFF unit %s", unit)
	}
	var args []Expr
	for _, e := range []Expr{x, y} {
		t := e.Type()
		if !t.IsDatetime() && t.Kind != catalog.KindNull {
			return nil, fmt.Errorf("TIMESTAMPDIFF expects DATE, TIME or TIMESTAMP arguments, got %s", typeList([]Expr{x, y}))
		}
		var ts Expr
		var err error
		if t.Kind == catalog.KindTimestampLTZ {
			// instants: the difference does not depend on the zone
			ts, err = ResolveCast(e, catalog.TimestampLTZ)
			if err == nil {
				ts = b.withZone(ts)
				ts, err = b.castTo(ts, catalog.Timestamp)
				if c, ok := ts.(*Call); ok {
					c.Args[len(c.Args)-1] = strLit("UTC")
				}
			}
		} else {
			ts, err = b.asTimestamp3(e, "TIMESTAMPDIFF")
		}
		if err != nil {
			return nil, err
		}
		args = append(args, ts)
	}
	return &Call{Fn: "ts_diff", Args: []Expr{args[0], args[1], strLit(unit)}, T: catalog.Int.WithNotNull(x.Type().NotNull && y.Type().NotNull)}, nil
}

// resolveTimeArith is + and - with a datetime or an interval operand.
func (b *exprBuilder) resolveTimeArith(fn string, l, r Expr) (Expr, error) {
	lt, rt := l.Type(), r.Type()
	if fn == "+" && lt.IsInterval() && rt.IsDatetime() {
		l, r, lt, rt = r, l, rt, lt
	}
	sign := int32(1)
	if fn == "-" {
		sign = -1
	}
	switch {
	case lt.IsDatetime() && rt.Kind == catalog.KindIntervalDT:
		return b.dtAdd("dt_add_ms", l, r, sign)
	case lt.IsDatetime() && rt.Kind == catalog.KindIntervalYM:
		if lt.Kind == catalog.KindTime {
			return nil, fmt.Errorf("cannot add a YEAR TO MONTH interval to a TIME")
		}
		return b.dtAdd("dt_add_months", l, r, sign)
	case lt.Kind == rt.Kind && lt.IsInterval():
		return &Call{Fn: "iv_" + map[string]string{"+": "add", "-": "sub"}[fn], Args: []Expr{l, r}, T: lt.Nullable().WithNotNull(lt.NotNull && rt.NotNull)}, nil
	case lt.IsDatetime() && rt.IsDatetime() && fn == "-":
		return nil, fmt.Errorf("cannot subtract %s from %s: use TIMESTAMPDIFF(unit, a, b)", rt.Nullable(), lt.Nullable())
	}
	return nil, typeErr(fn, []Expr{l, r})
}

// foldLiteral evaluates a constant cast of a literal at plan time (DATE
// and TIME literals); the planner cannot run kernels, so only the text
// forms it knows are folded.
func foldLiteral(e Expr) (*Literal, error) {
	c, ok := e.(*Call)
	if !ok || len(c.Args) < 1 {
		return nil, fmt.Errorf("not a literal")
	}
	l, ok := c.Args[0].(*Literal)
	if !ok {
		return nil, fmt.Errorf("not a literal")
	}
	s, _ := l.Value.(string)
	switch c.T.Kind {
	case catalog.KindDate:
		d, err := parseDateLit(s)
		if err != nil {
			return nil, err
		}
		return &Literal{Value: int32(d), T: catalog.Date.WithNotNull(true)}, nil
	case catalog.KindTime:
		ms, err := parseTimeLit(s)
		if err != nil {
			return nil, err
		}
		return &Literal{Value: int32(ms), T: c.T.WithNotNull(true)}, nil
	}
	return nil, fmt.Errorf("not a literal")
}

// CheckDateFormat reports whether p is a valid date-time format pattern.
func CheckDateFormat(p string) error {
	_, err := catalog.CompileDateFormat(p)
	return err
}

func parseDateLit(s string) (int64, error) {
	t, err := time.Parse("2006-1-2", strings.TrimSpace(s))
	if err != nil {
		return 0, err
	}
	return t.Unix() / 86400, nil
}

func parseTimeLit(s string) (int64, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"15:04:05.999999999", "15:04:05", "15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return int64(t.Hour())*3_600_000 + int64(t.Minute())*60_000 + int64(t.Second())*1000 + int64(t.Nanosecond()/1e6), nil
		}
	}
	return 0, fmt.Errorf("bad TIME literal")
}

// ProctimeCall is the expression of PROCTIME() (zone: the session time
// zone literal, as for CURRENT_TIMESTAMP).
func ProctimeCall(zone Expr) *Call {
	return &Call{Fn: "proctime", Args: []Expr{zone}, T: catalog.TimestampLTZ.WithNotNull(true)}
}

// IsProctimeCall reports whether e is PROCTIME().
func IsProctimeCall(e Expr) bool {
	c, ok := e.(*Call)
	return ok && c.Fn == "proctime"
}
