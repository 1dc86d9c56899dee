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
	ctx    *parser.QueryContext
	in     *rel
	clause string
	// hook, when set, is tried first on every node (aggregate resolution).
	hook func(ast.ExprNode) (Expr, bool, error)
}

func (b *exprBuilder) errf(word, format string, args ...any) error {
	return b.ctx.Errorf(word, format, args...)
}

func (b *exprBuilder) call(word, fn string, args ...Expr) (Expr, error) {
	e, err := ResolveCall(fn, args)
	if err != nil {
		if word == "" {
			word = fn
		}
		return nil, b.errf(word, "%v", err)
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
		return b.column(x.Name)
	case *test_driver.ValueExpr:
		return b.literal(x)
	case *ast.BinaryOperationExpr:
		l, err := b.build(x.L)
		if err != nil {
			return nil, err
		}
		r, err := b.build(x.R)
		if err != nil {
			return nil, err
		}
		fn, ok := binaryOps[x.Op]
		if !ok {
			return nil, b.errf(x.Op.String(), "unsupported operator %s", x.Op)
		}
		word := opWord(x.Op)
		if w := firstWord(x.L); w != "" && word == "" {
			word = w
		}
		return b.call(word, fn, l, r)
	case *ast.UnaryOperationExpr:
		v, err := b.build(x.V)
		if err != nil {
			return nil, err
		}
		switch x.Op {
		case opcode.Not, opcode.Not2:
			return b.call("NOT", "not", v)
		case opcode.Minus:
			if l, ok := v.(*Literal); ok {
				if neg, ok := negateLiteral(l); ok {
					return neg, nil
				}
			}
			return b.call("-", "neg", v)
		case opcode.Plus:
			return v, nil
		}
		return nil, b.errf("", "unsupported unary operator %s", x.Op)
	case *ast.IsNullExpr:
		v, err := b.build(x.Expr)
		if err != nil {
			return nil, err
		}
		if v.Type().Kind == catalog.KindNull {
			return &Literal{Value: !x.Not, T: catalog.Boolean.WithNotNull(true)}, nil
		}
		if x.Not {
			return b.call("NULL", "is_not_null", v)
		}
		return b.call("NULL", "is_null", v)
	case *ast.IsTruthExpr:
		v, err := b.build(x.Expr)
		if err != nil {
			return nil, err
		}
		// x IS [NOT] TRUE|FALSE never yields NULL.
		want := x.True != 0
		cmp, err := b.call("IS", "=", v, &Literal{Value: want, T: catalog.Boolean.WithNotNull(true)})
		if err != nil {
			return nil, err
		}
		isNull, err := b.call("IS", "is_null", v)
		if err != nil {
			return nil, err
		}
		res, err := b.call("IS", "case", isNull, &Literal{Value: false, T: catalog.Boolean.WithNotNull(true)}, cmp)
		if err != nil || !x.Not {
			return res, err
		}
		return b.call("IS", "not", res)
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
		ge, err := b.call("BETWEEN", ">=", v, lo)
		if err != nil {
			return nil, err
		}
		le, err := b.call("BETWEEN", "<=", v, hi)
		if err != nil {
			return nil, err
		}
		res, err := b.call("BETWEEN", "and", ge, le)
		if err != nil || !x.Not {
			return res, err
		}
		return b.call("BETWEEN", "not", res)
	case *ast.PatternInExpr:
		if x.Sel != nil {
			return nil, b.errf("IN", "IN (subquery) is not supported yet")
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
		return b.call("IN", fn, append([]Expr{v}, list...)...)
	case *ast.PatternLikeOrIlikeExpr:
		if !x.IsLike {
			return nil, b.errf("ILIKE", "ILIKE is not supported; use LOWER(x) LIKE LOWER(pattern)")
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
		return b.call("LIKE", fn, args...)
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
				if c, err = b.call("CASE", "=", base, c); err != nil {
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
		return b.call("CASE", "case", args...)
	case *ast.FuncCastExpr:
		v, err := b.build(x.Expr)
		if err != nil {
			return nil, err
		}
		tn, ok := b.ctx.CastType(x)
		if !ok {
			return nil, b.errf("CAST", "unsupported CAST target type")
		}
		t, err := catalog.ParseTypeName(tn.Name, tn.Args)
		if err != nil {
			return nil, &parser.Error{Pos: tn.Pos, Msg: err.Error()}
		}
		resolve, word := ResolveCast, "CAST"
		if b.ctx.IsTryCast(x) {
			resolve, word = ResolveTryCast, "TRY_CAST"
		}
		e, err := resolve(v, t)
		if err != nil {
			return nil, b.errf(word, "%v", err)
		}
		return e, nil
	case *ast.FuncCallExpr:
		return b.funcCall(x)
	case *ast.AggregateFuncExpr:
		return nil, b.errf(x.F, "aggregate function %s is not allowed in %s", strings.ToUpper(x.F), b.clauseName())
	case *ast.TrimDirectionExpr:
		return &Literal{Value: x.Direction.String(), T: catalog.String.WithNotNull(true)}, nil
	case *ast.TimeUnitExpr:
		return &Literal{Value: x.Unit.String(), T: catalog.String.WithNotNull(true)}, nil
	case *ast.WindowFuncExpr:
		return nil, b.errf(x.Name, "OVER windows (%s) are not supported yet", strings.ToUpper(x.Name))
	case *ast.PositionExpr:
		return nil, b.errf("", "positions (GROUP BY 1, ORDER BY 1) are not supported; name the column or expression")
	case *ast.RowExpr:
		return nil, b.errf("ROW", "row values are not supported")
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.CompareSubqueryExpr:
		return nil, b.errf("SELECT", "subqueries in expressions are not supported yet")
	}
	return nil, b.errf("", "unsupported expression %T", n)
}

func (b *exprBuilder) clauseName() string {
	if b.clause == "" {
		return "this clause"
	}
	return b.clause
}

func (b *exprBuilder) funcCall(x *ast.FuncCallExpr) (Expr, error) {
	name := x.FnName.L
	switch name {
	case ast.TimestampLiteral:
		return b.timestampLiteral(x)
	case ast.DateLiteral:
		return nil, b.errf("DATE", "the DATE type is not supported yet; use TIMESTAMP '2024-01-01 00:00:00'")
	case ast.TimeLiteral:
		return nil, b.errf("TIME", "the TIME type is not supported yet")
	case parser.IntervalFunc:
		return nil, b.errf("INTERVAL", "INTERVAL values are supported only in WATERMARK FOR ... AS ts - INTERVAL '...' unit (interval arithmetic is not supported yet)")
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
		return nil, b.errf(x.FnName.O, "INTERVAL arithmetic is not supported yet")
	}
	e, err := ResolveCall(name, args)
	if err != nil {
		return nil, b.errf(x.FnName.O, "%v", err)
	}
	return e, nil
}

func (b *exprBuilder) column(cn *ast.ColumnName) (Expr, error) {
	if cn.Schema.O != "" {
		return nil, b.errf(cn.Schema.O, "catalog/database qualifiers are not supported")
	}
	q := cn.Table.L
	name := cn.Name.O
	found := -1
	for i, c := range b.in.schema {
		if !strings.EqualFold(c.Name, name) {
			continue
		}
		if q != "" && b.in.quals[i] != q {
			continue
		}
		if found >= 0 {
			return nil, b.errf(name, "column '%s' is ambiguous", name)
		}
		found = i
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
		return nil, b.errf(name, "%s", msg)
	}
	c := b.in.schema[found]
	return &ColRef{Index: found, Name: c.Name, T: c.Type}, nil
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
		return nil, b.errf(strconv.FormatUint(u, 10), "integer literal %d is out of the BIGINT range", u)
	case test_driver.KindFloat64, test_driver.KindFloat32:
		return &Literal{Value: v.GetFloat64(), T: nn(catalog.Double)}, nil
	case test_driver.KindMysqlDecimal:
		s := v.GetMysqlDecimal().String()
		return decimalLiteral(s, b)
	case test_driver.KindString, test_driver.KindBytes:
		return &Literal{Value: v.GetString(), T: nn(catalog.String)}, nil
	}
	return nil, b.errf("", "unsupported literal %v", v.GetValue())
}

func decimalLiteral(s string, b *exprBuilder) (Expr, error) {
	digits := strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(digits, ".")
	intPart = strings.TrimLeft(intPart, "0")
	p := len(intPart) + len(frac)
	if p == 0 {
		p = 1
	}
	if p > 38 {
		return nil, b.errf(s, "decimal literal %s has more than 38 digits", s)
	}
	n, err := decimal128.FromString(s, int32(p), int32(len(frac)))
	if err != nil {
		return nil, b.errf(s, "bad decimal literal %s: %v", s, err)
	}
	return &Literal{Value: n, T: catalog.Decimal(max(p, len(frac)), len(frac)).WithNotNull(true)}, nil
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

func opWord(op opcode.Op) string {
	switch op {
	case opcode.LogicAnd:
		return "AND"
	case opcode.LogicOr:
		return "OR"
	}
	return ""
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

// timestampLiteral turns TIMESTAMP 'yyyy-MM-dd HH:mm:ss[.SSS]' into a
// TIMESTAMP(3) literal (milliseconds since the epoch, no time zone).
func (b *exprBuilder) timestampLiteral(x *ast.FuncCallExpr) (Expr, error) {
	v, ok := x.Args[0].(ast.ValueExpr)
	if !ok {
		return nil, b.errf("TIMESTAMP", "bad TIMESTAMP literal")
	}
	text := v.GetString()
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, text); err == nil {
			return &Literal{Value: t.UnixMilli(), T: catalog.Timestamp.WithNotNull(true)}, nil
		}
	}
	return nil, b.errf("TIMESTAMP", "bad TIMESTAMP literal '%s' (expected 'yyyy-MM-dd HH:mm:ss[.SSS]')", text)
}
