package planner

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// exprBuilder translates TiDB expression nodes over the columns of in.
type exprBuilder struct {
	p      *Planner // for session settings (time zone); may be nil
	ctx    *parser.QueryContext
	in     *rel
	clause string
	// hook, when set, is tried first on every node (aggregate resolution).
	hook func(ast.ExprNode) (Expr, bool, error)
}

// errAt builds an error at expression n (TiDB records where every
// expression starts), or at the first occurrence of word when n has no
// position.
func (b *exprBuilder) errAt(n ast.Node, word, format string, args ...any) error {
	return &parser.Error{Pos: b.posOf(n, word), Msg: fmt.Sprintf(format, args...)}
}

func (b *exprBuilder) posOf(n ast.Node, word string) parser.Pos {
	if b.ctx.HasPos(n) {
		return b.ctx.PosOf(n)
	}
	if word == "" {
		return b.ctx.Start()
	}
	return b.ctx.Locate(word)
}

// opPos returns where the operator of binary expression x is written: the
// token before its right operand.
func (b *exprBuilder) opPos(x *ast.BinaryOperationExpr) parser.Pos {
	if _, p, ok := b.ctx.TokenBefore(x.R); ok {
		return p
	}
	return b.posOf(x, firstWord(x.L))
}

// call resolves fn over args; an error is placed at n.
func (b *exprBuilder) call(n ast.Node, fn string, args ...Expr) (Expr, error) {
	return b.callAt(b.posOf(n, ""), fn, args...)
}

func (b *exprBuilder) callAt(at parser.Pos, fn string, args ...Expr) (Expr, error) {
	e, err := ResolveCall(fn, args)
	if err != nil {
		return nil, &parser.Error{Pos: at, Msg: err.Error()}
	}
	return e, nil
}

func (b *exprBuilder) buildAll(ns []ast.ExprNode) ([]Expr, error) {
	out := make([]Expr, 0, len(ns))
	for _, n := range ns {
		e, err := b.build(n)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func (b *exprBuilder) build(n ast.ExprNode) (Expr, error) {
	if b.hook != nil {
		e, ok, err := b.hook(n)
		if err != nil {
			return nil, err
		}
		if ok {
			return e, nil
		}
	}
	switch x := n.(type) {
	case *ast.ParenthesesExpr:
		return b.build(x.Expr)
	case *ast.ColumnNameExpr:
		return b.column(x)
	case *test_driver.ValueExpr:
		return b.literal(x)
	case *ast.BinaryOperationExpr:
		fn, ok := binaryOps[x.Op]
		if !ok && x.Op != opcode.NullEQ {
			var sb strings.Builder
			x.Op.Format(&sb)
			return nil, &parser.Error{Pos: b.opPos(x), Msg: fmt.Sprintf("operator %s is not supported", strings.TrimSpace(sb.String()))}
		}
		l, err := b.build(x.L)
		if err != nil {
			return nil, err
		}
		r, err := b.build(x.R)
		if err != nil {
			return nil, err
		}
		if x.Op == opcode.NullEQ {
			return b.distinctFrom(x, l, r)
		}
		if (fn == "+" || fn == "-") && (l.Type().IsDatetime() || l.Type().IsInterval() || r.Type().IsDatetime() || r.Type().IsInterval()) {
			e, err := b.resolveTimeArith(fn, l, r)
			if err != nil {
				return nil, &parser.Error{Pos: b.opPos(x), Msg: err.Error()}
			}
			return e, nil
		}
		return b.callAt(b.opPos(x), fn, l, r)
	case *ast.UnaryOperationExpr:
		v, err := b.build(x.V)
		if err != nil {
			return nil, err
		}
		switch x.Op {
		case opcode.Not, opcode.Not2:
			return b.call(x, "not", v)
		case opcode.Minus:
			if l, ok := v.(*Literal); ok {
				if neg, ok := negateLiteral(l); ok {
					return neg, nil
				}
			}
			return b.call(x, "neg", v)
		case opcode.Plus:
			return v, nil
		}
		var sb strings.Builder
		x.Op.Format(&sb)
		return nil, b.errAt(x, "", "operator %s is not supported", strings.TrimSpace(sb.String()))
	case *ast.IsNullExpr:
		v, err := b.build(x.Expr)
		if err != nil {
			return nil, err
		}
		if v.Type().Kind == catalog.KindNull {
			return &Literal{Value: !x.Not, T: catalog.Boolean.WithNotNull(true)}, nil
		}
		if x.Not {
			return b.call(x, "is_not_null", v)
		}
		return b.call(x, "is_null", v)
	case *ast.IsTruthExpr:
		v, err := b.build(x.Expr)
		if err != nil {
			return nil, err
		}
		// x IS [NOT] TRUE|FALSE never yields NULL.
		want := x.True != 0
		cmp, err := b.call(x, "=", v, &Literal{Value: want, T: catalog.Boolean.WithNotNull(true)})
		if err != nil {
			return nil, err
		}
		isNull, err := b.call(x, "is_null", v)
		if err != nil {
			return nil, err
		}
		res, err := b.call(x, "case", isNull, &Literal{Value: false, T: catalog.Boolean.WithNotNull(true)}, cmp)
		if err != nil || !x.Not {
			return res, err
		}
		return b.call(x, "not", res)
	case *ast.BetweenExpr:
		v, err := b.build(x.Expr)
		if err != nil {
			return nil, err
		}
		lo, err := b.build(x.Left)
		if err != nil {
			return nil, err
		}
		hi, err := b.build(x.Right)
		if err != nil {
			return nil, err
		}
		ge, err := b.call(x, ">=", v, lo)
		if err != nil {
			return nil, err
		}
		le, err := b.call(x, "<=", v, hi)
		if err != nil {
			return nil, err
		}
		res, err := b.call(x, "and", ge, le)
		if err != nil || !x.Not {
			return res, err
		}
		return b.call(x, "not", res)
	case *ast.PatternInExpr:
		if x.Sel != nil {
			at := b.posOf(x, "IN")
			if _, p, ok := b.ctx.TokenBefore(x.Sel); ok {
				at = p
			}
			return nil, &parser.Error{Pos: at, Msg: "IN (subquery) is not supported yet"}
		}
		v, err := b.build(x.Expr)
		if err != nil {
			return nil, err
		}
		list, err := b.buildAll(x.List)
		if err != nil {
			return nil, err
		}
		fn := "in"
		if x.Not {
			fn = "not_in"
		}
		return b.call(x, fn, append([]Expr{v}, list...)...)
	case *ast.PatternLikeOrIlikeExpr:
		if !x.IsLike {
			return nil, b.errAt(x, "ILIKE", "ILIKE is not supported; use LOWER(x) LIKE LOWER(pattern)")
		}
		v, err := b.build(x.Expr)
		if err != nil {
			return nil, err
		}
		pat, err := b.build(x.Pattern)
		if err != nil {
			return nil, err
		}
		args := []Expr{v, pat}
		if x.EscapeExplicit {
			args = append(args, &Literal{Value: string([]byte{x.Escape}), T: catalog.String.WithNotNull(true)})
		}
		fn := "like"
		if x.Not {
			fn = "not_like"
		}
		return b.call(x, fn, args...)
	case *ast.CaseExpr:
		var base Expr
		if x.Value != nil {
			var err error
			if base, err = b.build(x.Value); err != nil {
				return nil, err
			}
		}
		var args []Expr
		for _, w := range x.WhenClauses {
			c, err := b.build(w.Expr)
			if err != nil {
				return nil, err
			}
			if base != nil {
				if c, err = b.call(w.Expr, "=", base, c); err != nil {
					return nil, err
				}
			}
			r, err := b.build(w.Result)
			if err != nil {
				return nil, err
			}
			args = append(args, c, r)
		}
		if x.ElseClause != nil {
			e, err := b.build(x.ElseClause)
			if err != nil {
				return nil, err
			}
			args = append(args, e)
		} else {
			args = append(args, &Literal{T: catalog.Null})
		}
		return b.call(x, "case", args...)
	case *ast.FuncCastExpr:
		v, err := b.build(x.Expr)
		if err != nil {
			return nil, err
		}
		tn, ok := b.ctx.CastType(x)
		if !ok {
			return nil, b.errAt(x, "CAST", "unsupported CAST target type")
		}
		t, err := ResolveTypeName(tn)
		if err != nil {
			return nil, err
		}
		resolve, word := ResolveCast, "CAST"
		if b.ctx.IsTryCast(x) {
			resolve, word = ResolveTryCast, "TRY_CAST"
		}
		e, err := resolve(v, t)
		if err != nil {
			return nil, b.errAt(x, word, "%v", err)
		}
		return b.withZone(e), nil
	case *ast.FuncCallExpr:
		return b.funcCall(x)
	case *ast.AggregateFuncExpr:
		return nil, b.errAt(x, x.F, "aggregate function %s is not allowed in %s", strings.ToUpper(x.F), b.clauseName())
	case *ast.TrimDirectionExpr:
		return &Literal{Value: x.Direction.String(), T: catalog.String.WithNotNull(true)}, nil
	case *ast.TimeUnitExpr:
		return &Literal{Value: x.Unit.String(), T: catalog.String.WithNotNull(true)}, nil
	case *ast.WindowFuncExpr:
		return nil, b.errAt(x, x.Name, "OVER windows (%s) are not supported yet", strings.ToUpper(x.Name))
	case *ast.PositionExpr:
		word := "" // TiDB gives a position no offset: point at its clause
		if b.clause == "GROUP BY" {
			word = "GROUP"
		}
		return nil, b.errAt(x, word, "positions (GROUP BY 1, ORDER BY 1) are not supported; name the column or expression")
	case *ast.RowExpr:
		return nil, b.errAt(x, "ROW", "row values are not supported")
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.CompareSubqueryExpr:
		return nil, b.errAt(x, "SELECT", "subqueries in expressions are not supported yet")
	}
	return nil, b.errAt(n, "", "unsupported expression %T", n)
}

func (b *exprBuilder) clauseName() string {
	if b.clause == "" {
		return "this clause"
	}
	return b.clause
}

// groupWindowFuncs are Flink's group window functions (GROUP BY
// TUMBLE(ts, INTERVAL ...)) and their auxiliary functions.
var groupWindowFuncs = map[string]bool{
	"tumble": true, "hop": true, "session": true, "cumulate": true,
	"tumble_start": true, "tumble_end": true, "tumble_rowtime": true, "tumble_proctime": true,
	"hop_start": true, "hop_end": true, "hop_rowtime": true, "hop_proctime": true,
	"session_start": true, "session_end": true, "session_rowtime": true, "session_proctime": true,
}

// flinkAggregates are Flink's aggregate functions that streamsql does not
// implement (TiDB parses some of them as plain calls).
var flinkAggregates = map[string]bool{
	"first_value": true, "last_value": true, "listagg": true, "collect": true, "array_agg": true,
	"stddev_pop": true, "stddev_samp": true, "var_pop": true, "var_samp": true, "stddev": true, "variance": true,
	"json_objectagg": true, "json_arrayagg": true, "sum0": true,
}

// rankingFuncs need OVER (...).
var rankingFuncs = map[string]bool{
	"row_number": true, "rank": true, "dense_rank": true, "cume_dist": true, "percent_rank": true,
	"ntile": true, "lead": true, "lag": true, "nth_value": true,
}

func (b *exprBuilder) funcCall(x *ast.FuncCallExpr) (Expr, error) {
	name := x.FnName.L
	up := strings.ToUpper(name)
	if name == ast.TimestampLiteral {
		return b.timestampLiteral(x)
	}
	if e, ok, err := b.timeCall(x); ok {
		return e, err
	}
	switch {
	case groupWindowFuncs[name]:
		return nil, b.errAt(x, x.FnName.O, "%s is a group window function: use it in GROUP BY TUMBLE(ts, ...)/HOP/SESSION and its _START/_END/_ROWTIME in the select list of that aggregation, or the window TVFs in FROM (docs/windows.md)", up)
	case name == "rollup" || name == "cube":
		return nil, b.errAt(x, x.FnName.O, "GROUP BY %s(...) is not supported yet", up)
	case name == "grouping" || name == "grouping_id":
		return nil, b.errAt(x, x.FnName.O, "%s() is not supported yet (there are no GROUPING SETS, ROLLUP or CUBE)", up)
	case flinkAggregates[name]:
		return nil, b.errAt(x, x.FnName.O, "unsupported aggregate function %s (supported: COUNT, SUM, MIN, MAX, AVG)", up)
	case rankingFuncs[name]:
		return nil, b.errAt(x, x.FnName.O, "%s needs an OVER (...) window; of OVER windows only the Window TopN is supported: SELECT * FROM (SELECT *, %s() OVER (PARTITION BY window_start, window_end ORDER BY ...) AS rownum FROM <window TVF or window aggregation>) WHERE rownum <= N", up, up)
	case name == "unnest" || name == "split" || name == "string_to_array" || name == "split_to_table" || name == "regexp_split_to_table":
		return nil, b.errAt(x, x.FnName.O, "%s is a table function: use it in FROM, e.g. FROM t CROSS JOIN UNNEST(SPLIT(s, ',')) AS T(word)", up)
	}
	args, err := b.buildAll(x.Args)
	if err != nil {
		return nil, err
	}
	switch name {
	case "substr":
		name = "substring"
	case "ucase":
		name = "upper"
	case "lcase":
		name = "lower"
	case "character_length", "length":
		name = "char_length"
	case "ceiling":
		name = "ceil"
	case "pow":
		name = "power"
	case "date_add", "date_sub", "adddate", "subdate":
		return nil, b.errAt(x, x.FnName.O, "%s is not a Flink function: write ts + INTERVAL '1' DAY or TIMESTAMPADD(DAY, 1, ts)", up)
	}
	e, err := ResolveCall(name, args)
	if err != nil {
		return nil, b.errAt(x, x.FnName.O, "%v", err)
	}
	return e, nil
}

// distinctFrom builds a IS [NOT] DISTINCT FROM b (given to TiDB as a <=> b):
// NULL-safe equality, never NULL,
//
//	CASE WHEN a IS NULL THEN b IS NULL WHEN b IS NULL THEN FALSE
//	     ELSE COALESCE(a = b, FALSE) END
//
// negated for IS DISTINCT FROM.
func (b *exprBuilder) distinctFrom(x *ast.BinaryOperationExpr, l, r Expr) (Expr, error) {
	distinct, at, ok := b.ctx.NullSafeEqual(x)
	if !ok {
		return nil, &parser.Error{Pos: b.opPos(x), Msg: "operator <=> is not supported; use IS NOT DISTINCT FROM"}
	}
	notNull := catalog.Boolean.WithNotNull(true)
	isNull := func(e Expr) (Expr, error) {
		if e.Type().Kind == catalog.KindNull {
			return &Literal{Value: true, T: notNull}, nil
		}
		return b.callAt(at, "is_null", e)
	}
	var same Expr
	switch {
	case l.Type().Kind == catalog.KindNull:
		v, err := isNull(r)
		if err != nil {
			return nil, err
		}
		same = v
	case r.Type().Kind == catalog.KindNull:
		v, err := isNull(l)
		if err != nil {
			return nil, err
		}
		same = v
	default:
		eq, err := b.callAt(at, "=", l, r)
		if err != nil {
			op := "IS NOT DISTINCT FROM"
			if distinct {
				op = "IS DISTINCT FROM"
			}
			return nil, &parser.Error{Pos: at, Msg: strings.Replace(err.(*parser.Error).Msg, "'='", "'"+op+"'", 1)}
		}
		if eq, err = b.callAt(at, "coalesce", eq, &Literal{Value: false, T: notNull}); err != nil {
			return nil, err
		}
		ln, err := isNull(l)
		if err != nil {
			return nil, err
		}
		rn, err := isNull(r)
		if err != nil {
			return nil, err
		}
		if same, err = b.callAt(at, "case", ln, rn, rn, &Literal{Value: false, T: notNull}, eq); err != nil {
			return nil, err
		}
	}
	if distinct {
		return b.callAt(at, "not", same)
	}
	return same, nil
}

func (b *exprBuilder) column(x *ast.ColumnNameExpr) (Expr, error) {
	cn := x.Name
	// person.id and t.person.id are fields of a ROW column when no table
	// of that name qualifies a column (TiDB parses them as table.column
	// and db.table.column).
	if cn.Schema.O == "" && cn.Table.O != "" {
		if !b.hasQualifier(cn.Table.L) {
			if e, ok, err := b.rowField(x, "", cn.Table.O, []string{cn.Name.O}); ok || err != nil {
				return e, err
			}
		}
	}
	if cn.Schema.O != "" {
		if b.hasQualifier(cn.Schema.L) {
			if e, ok, err := b.rowField(x, cn.Schema.L, cn.Table.O, []string{cn.Name.O}); ok || err != nil {
				return e, err
			}
		}
		if e, ok, err := b.rowField(x, "", cn.Schema.O, []string{cn.Table.O, cn.Name.O}); ok || err != nil {
			return e, err
		}
		return nil, b.errAt(x, cn.Schema.O, "catalog/database qualifiers are not supported")
	}
	q := cn.Table.L
	name := cn.Name.O
	found, err := b.findColumn(x, q, name)
	if err != nil {
		return nil, err
	}
	if found < 0 {
		full := name
		if q != "" {
			full = cn.Table.O + "." + name
		}
		msg := fmt.Sprintf("column '%s' not found", full)
		if len(b.in.schema) > 0 {
			msg += fmt.Sprintf(" in %s", strings.Join(b.in.schema.Names(), ", "))
			if s := catalog.Suggest(name, b.in.schema.Names()); s != "" {
				msg += fmt.Sprintf("; did you mean '%s'?", s)
			}
		}
		return nil, b.errAt(x, name, "%s", msg)
	}
	c := b.in.schema[found]
	return &ColRef{Index: found, Name: c.Name, T: c.Type}, nil
}

func (b *exprBuilder) hasQualifier(q string) bool {
	for _, x := range b.in.quals {
		if x == q {
			return true
		}
	}
	return false
}

// findColumn returns the index of column name (qualified by q when not
// ""), or -1; an ambiguous name is an error.
func (b *exprBuilder) findColumn(x ast.Node, q, name string) (int, error) {
	found := -1
	for i, c := range b.in.schema {
		if !strings.EqualFold(c.Name, name) {
			continue
		}
		if q != "" && b.in.quals[i] != q {
			continue
		}
		if found >= 0 {
			return -1, b.errAt(x, name, "column '%s' is ambiguous", name)
		}
		found = i
	}
	return found, nil
}

// rowField resolves col.f1.f2... where col is a ROW column (qualified by q
// when not ""). ok is false when col is not a ROW column.
func (b *exprBuilder) rowField(x *ast.ColumnNameExpr, q, col string, path []string) (Expr, bool, error) {
	i, err := b.findColumn(x, q, col)
	if err != nil {
		return nil, true, err
	}
	if i < 0 || b.in.schema[i].Type.Kind != catalog.KindRow {
		return nil, false, nil
	}
	c := b.in.schema[i]
	var e Expr = &ColRef{Index: i, Name: c.Name, T: c.Type}
	at := col
	for _, f := range path {
		t := e.Type()
		if t.Kind != catalog.KindRow {
			return nil, true, b.errAt(x, f, "'%s' is %s, not a ROW: it has no field '%s'", at, t.Nullable(), f)
		}
		k := t.Field(f)
		if k < 0 {
			names := make([]string, len(t.Fields))
			for j, fl := range t.Fields {
				names[j] = fl.Name
			}
			msg := fmt.Sprintf("ROW column '%s' has no field '%s' (fields: %s)", at, f, strings.Join(names, ", "))
			if s := catalog.Suggest(f, names); s != "" {
				msg += fmt.Sprintf("; did you mean '%s'?", s)
			}
			return nil, true, b.errAt(x, f, "%s", msg)
		}
		ft := t.Fields[k].Type
		ft.NotNull = ft.NotNull && t.NotNull
		e = &Call{Fn: "field", Args: []Expr{e, &Literal{Value: int32(k), T: catalog.Int.WithNotNull(true)}}, T: ft}
		at += "." + f
	}
	return e, true, nil
}

func (b *exprBuilder) literal(v *test_driver.ValueExpr) (Expr, error) {
	nn := func(t catalog.Type) catalog.Type { return t.WithNotNull(true) }
	switch v.Kind() {
	case test_driver.KindNull:
		return &Literal{T: catalog.Null}, nil
	case test_driver.KindInt64:
		i := v.GetInt64()
		if mysql.HasIsBooleanFlag(v.Type.GetFlag()) {
			return &Literal{Value: i != 0, T: nn(catalog.Boolean)}, nil
		}
		if i >= math.MinInt32 && i <= math.MaxInt32 {
			return &Literal{Value: int32(i), T: nn(catalog.Int)}, nil
		}
		return &Literal{Value: i, T: nn(catalog.BigInt)}, nil
	case test_driver.KindUint64:
		u := v.GetUint64()
		if u <= math.MaxInt64 {
			return &Literal{Value: int64(u), T: nn(catalog.BigInt)}, nil
		}
		// Beyond BIGINT an integer literal is a DECIMAL(p, 0), as in Flink.
		return decimalLiteral(strconv.FormatUint(u, 10), v, b)
	case test_driver.KindFloat64, test_driver.KindFloat32:
		return &Literal{Value: v.GetFloat64(), T: nn(catalog.Double)}, nil
	case test_driver.KindMysqlDecimal:
		s := v.GetMysqlDecimal().String()
		return decimalLiteral(s, v, b)
	case test_driver.KindString, test_driver.KindBytes:
		return &Literal{Value: v.GetString(), T: nn(catalog.String)}, nil
	}
	return nil, b.errAt(v, "", "unsupported literal %v", v.GetValue())
}

// decimalLiteral types the exact numeric literal s (written at n).
func decimalLiteral(s string, n ast.Node, b *exprBuilder) (Expr, error) {
	digits := strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(digits, ".")
	intPart = strings.TrimLeft(intPart, "0")
	p := len(intPart) + len(frac)
	if p == 0 {
		p = 1
	}
	if p > 38 {
		what := "decimal"
		if frac == "" {
			what = "integer"
		}
		return nil, b.errAt(n, "", "%s literal %s is out of range: it has more than 38 digits (the largest DECIMAL precision)", what, s)
	}
	num, err := decimal128.FromString(s, int32(p), int32(len(frac)))
	if err != nil {
		return nil, b.errAt(n, "", "bad decimal literal %s: %v", s, err)
	}
	return &Literal{Value: num, T: catalog.Decimal(max(p, len(frac)), len(frac)).WithNotNull(true)}, nil
}

func negateLiteral(l *Literal) (*Literal, bool) {
	switch v := l.Value.(type) {
	case int32:
		return &Literal{Value: -v, T: l.T}, true
	case int64:
		return &Literal{Value: -v, T: l.T}, true
	case float64:
		return &Literal{Value: -v, T: l.T}, true
	case decimal128.Num:
		return &Literal{Value: v.Negate(), T: l.T}, true
	}
	return nil, false
}

var binaryOps = map[opcode.Op]string{
	opcode.Plus:     "+",
	opcode.Minus:    "-",
	opcode.Mul:      "*",
	opcode.Div:      "/",
	opcode.Mod:      "%",
	opcode.IntDiv:   "/",
	opcode.EQ:       "=",
	opcode.NE:       "<>",
	opcode.LT:       "<",
	opcode.LE:       "<=",
	opcode.GT:       ">",
	opcode.GE:       ">=",
	opcode.LogicAnd: "and",
	opcode.LogicOr:  "or",
}

// firstWord returns the first column or function name in n, to place an
// error about n (TiDB's expression nodes carry no positions).
func firstWord(n ast.ExprNode) string {
	w := ""
	n.Accept(&wordFinder{w: &w})
	return w
}

type wordFinder struct{ w *string }

func (v *wordFinder) Enter(n ast.Node) (ast.Node, bool) {
	if *v.w != "" {
		return n, true
	}
	switch x := n.(type) {
	case *ast.ColumnNameExpr:
		*v.w = x.Name.Name.O
		return n, true
	case *ast.FuncCallExpr:
		*v.w = x.FnName.O
		return n, true
	case *ast.AggregateFuncExpr:
		*v.w = x.F
		return n, true
	}
	return n, false
}
func (v *wordFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// timestampLiteral turns TIMESTAMP 'yyyy-MM-dd HH:mm:ss[.fraction]' into a
// TIMESTAMP(p) literal, p the number of fraction digits (as Flink types
// it; TIMESTAMP '2024-01-01 10:00:00' is TIMESTAMP(0)).
func (b *exprBuilder) timestampLiteral(x *ast.FuncCallExpr) (Expr, error) {
	v, ok := x.Args[0].(ast.ValueExpr)
	if !ok {
		return nil, b.errAt(x, "TIMESTAMP", "bad TIMESTAMP literal")
	}
	text := strings.TrimSpace(v.GetString())
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		t, err := time.Parse(layout, text)
		if err != nil {
			continue
		}
		p := 0
		if i := strings.LastIndexByte(text, '.'); i >= 0 && strings.Contains(text[:i], ":") {
			p = min(len(text)-i-1, 9)
		}
		tt := catalog.TimestampP(p)
		units := t.Unix()*1000*tt.UnitsPerMilli() + int64(t.Nanosecond())/(1_000_000/tt.UnitsPerMilli())
		return &Literal{Value: units, T: tt.WithNotNull(true)}, nil
	}
	return nil, b.errAt(x, "TIMESTAMP", "bad TIMESTAMP literal '%s' (expected 'yyyy-MM-dd HH:mm:ss[.SSS]')", text)
}
