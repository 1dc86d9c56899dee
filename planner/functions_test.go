package planner

import (
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/decimal128"

	"github.com/streamsql/streamsql/catalog"
)

func fcol(name string, t catalog.Type) Expr { return &ColRef{Name: name, T: t} }

var (
	cInt    = fcol("i", catalog.Int)
	cIntNN  = fcol("inn", catalog.Int.WithNotNull(true))
	cBig    = fcol("b", catalog.BigInt)
	cBigNN  = fcol("bnn", catalog.BigInt.WithNotNull(true))
	cDbl    = fcol("d", catalog.Double)
	cDec    = fcol("m", catalog.Decimal(10, 2))
	cDec2   = fcol("m2", catalog.Decimal(5, 4))
	cDec38  = fcol("m38", catalog.Decimal(38, 10))
	cStr    = fcol("s", catalog.String)
	cVar    = fcol("v", catalog.Type{Kind: catalog.KindString, Length: 10})
	cTs     = fcol("t", catalog.Timestamp)
	cBool   = fcol("f", catalog.Boolean)
	cBoolNN = fcol("fnn", catalog.Boolean.WithNotNull(true))
	lNull   = &Literal{T: catalog.Null}
	lTwo    = &Literal{Value: int32(2), T: catalog.Int.WithNotNull(true)}
	lStr    = &Literal{Value: "x", T: catalog.String.WithNotNull(true)}
	lDec    = &Literal{Value: decimal128.FromI64(908), T: catalog.Decimal(3, 3).WithNotNull(true)}
)

func TestResolveCallTypes(t *testing.T) {
	tests := []struct {
		fn   string
		args []Expr
		want string // result type, then the resolved call
	}{
		{"+", []Expr{cInt, cInt}, "INT +($0:i, $0:i)"},
		{"+", []Expr{cIntNN, cBigNN}, "BIGINT NOT NULL +(CAST($0:inn AS BIGINT), $0:bnn)"},
		{"-", []Expr{cInt, cDbl}, "DOUBLE -(CAST($0:i AS DOUBLE), $0:d)"},
		{"*", []Expr{cDec, lDec}, "DECIMAL(13, 5) *($0:m, {908 0})"},
		{"+", []Expr{cDec, cDec2}, "DECIMAL(13, 4) +($0:m, $0:m2)"},
		{"+", []Expr{cDec, cInt}, "DECIMAL(13, 2) +($0:m, CAST($0:i AS DECIMAL(10, 0)))"},
		{"/", []Expr{cDec, cDec2}, "DECIMAL(20, 8) /($0:m, $0:m2)"},
		{"/", []Expr{cInt, cInt}, "INT /($0:i, $0:i)"},
		{"*", []Expr{cDec38, cDec38}, "DECIMAL(38, 6) *($0:m38, $0:m38)"},
		{"+", []Expr{cDec38, cDec38}, "DECIMAL(38, 9) +($0:m38, $0:m38)"},
		{"MOD", []Expr{cBig, cInt}, "INT %($0:b, CAST($0:i AS BIGINT))"},
		{"%", []Expr{cInt, cBig}, "BIGINT %(CAST($0:i AS BIGINT), $0:b)"},
		{"%", []Expr{cDec, cDec2}, "DECIMAL(5, 4) %($0:m, $0:m2)"},
		{"neg", []Expr{cDec}, "DECIMAL(10, 2) neg($0:m)"},
		{"+", []Expr{lNull, cInt}, "INT +(NULL, $0:i)"},
		{"=", []Expr{cInt, cDec}, "BOOLEAN =(CAST($0:i AS DECIMAL(12, 2)), CAST($0:m AS DECIMAL(12, 2)))"},
		{"<", []Expr{cTs, lStr}, "BOOLEAN <($0:t, CAST('x' AS TIMESTAMP(3)))"},
		{"<>", []Expr{cVar, cStr}, "BOOLEAN <>($0:v, $0:s)"},
		{"AND", []Expr{cBoolNN, cBoolNN}, "BOOLEAN NOT NULL and($0:fnn, $0:fnn)"},
		{"and", []Expr{cBool, lNull}, "BOOLEAN and($0:f, NULL)"},
		{"is_null", []Expr{cInt}, "BOOLEAN NOT NULL is_null($0:i)"},
		{"like", []Expr{cStr, lStr}, "BOOLEAN like($0:s, 'x')"},
		{"in", []Expr{cInt, lTwo, cBig}, "BOOLEAN in(CAST($0:i AS BIGINT), CAST(2 AS BIGINT), $0:b)"},
		{"case", []Expr{cBool, cInt, cDbl}, "DOUBLE case($0:f, CAST($0:i AS DOUBLE), $0:d)"},
		{"case", []Expr{cBool, lTwo, lNull}, "INT case($0:f, 2, NULL)"},
		{"if", []Expr{cBool, lTwo, lTwo}, "INT NOT NULL case($0:f, 2, 2)"},
		{"coalesce", []Expr{cInt, lTwo}, "INT NOT NULL coalesce($0:i, 2)"},
		{"coalesce", []Expr{cInt, cBig}, "BIGINT coalesce(CAST($0:i AS BIGINT), $0:b)"},
		{"upper", []Expr{cVar}, "VARCHAR(10) upper($0:v)"},
		{"||", []Expr{cVar, cVar}, "VARCHAR(20) concat($0:v, $0:v)"},
		{"concat", []Expr{cStr, lStr}, "STRING concat($0:s, 'x')"},
		{"substr", []Expr{cStr, lTwo}, "STRING substring($0:s, 2)"},
		{"substring", []Expr{cStr, cBig, lTwo}, "STRING substring($0:s, CAST($0:b AS INT), 2)"},
		{"char_length", []Expr{cStr}, "INT char_length($0:s)"},
		{"trim", []Expr{cStr, lStr, &Literal{Value: "leading", T: catalog.String}}, "STRING trim($0:s, 'x', 'LEADING')"},
		{"round", []Expr{cDec, lTwo}, "DECIMAL(10, 2) round($0:m, 2)"},
		{"round", []Expr{cDec}, "DECIMAL(9, 0) round($0:m)"},
		{"round", []Expr{cDec2, &Call{Fn: "neg", Args: []Expr{lTwo}, T: catalog.Int}}, "DECIMAL(2, 0) round($0:m2, -2)"},
		{"round", []Expr{cDbl, lTwo}, "DOUBLE round($0:d, 2)"},
		{"floor", []Expr{cDec2}, "DECIMAL(2, 0) floor($0:m2)"},
		{"ceiling", []Expr{cBig}, "BIGINT ceil($0:b)"},
		{"abs", []Expr{cIntNN}, "INT NOT NULL abs($0:inn)"},
		{"power", []Expr{cInt, lTwo}, "DOUBLE power(CAST($0:i AS DOUBLE), CAST(2 AS DOUBLE))"},
	}
	for _, tc := range tests {
		e, err := ResolveCall(tc.fn, tc.args)
		if err != nil {
			t.Errorf("%s%v: %v", tc.fn, tc.args, err)
			continue
		}
		if got := e.Type().String() + " " + e.String(); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.fn, got, tc.want)
		}
	}
}

func TestResolveCallErrors(t *testing.T) {
	tests := []struct {
		fn   string
		args []Expr
		want string
	}{
		{"+", []Expr{cStr, cInt}, "cannot apply '+' to arguments of type STRING and INT"},
		{"=", []Expr{cStr, cInt}, "cannot apply '=' to arguments of type STRING and INT"},
		{"and", []Expr{cBool, cInt}, "cannot apply 'AND' to arguments of type BOOLEAN and INT"},
		{"upper", []Expr{cInt}, "cannot apply 'UPPER' to arguments of type INT"},
		{"substring", []Expr{cStr}, "function SUBSTRING expects 2 to 3 arguments, got 1"},
		{"coalesce", []Expr{cInt, cStr}, "cannot apply 'COALESCE' to arguments of type INT and STRING"},
		{"case", []Expr{cInt, cInt, cInt}, "CASE condition 1 must be BOOLEAN, got INT"},
		{"case", []Expr{cBool, cInt, cStr}, "CASE values have no common type: INT and STRING"},
		{"round", []Expr{cDec, cInt}, "must be an integer literal"},
		{"trim", []Expr{cStr, lStr, lStr}, "the mode must be the literal"},
		{"nosuch", nil, "no such function: NOSUCH"},
		{"in", []Expr{cInt, lStr}, "cannot apply 'IN' to arguments of type INT and STRING"},
	}
	for _, tc := range tests {
		_, err := ResolveCall(tc.fn, tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.fn, err, tc.want)
		}
	}
}

func TestResolveCast(t *testing.T) {
	tests := []struct {
		arg  Expr
		to   catalog.Type
		want string
	}{
		{cIntNN, catalog.BigInt, "BIGINT NOT NULL"},
		{cIntNN, catalog.Decimal(5, 0), "DECIMAL(5, 0)"},
		{cIntNN, catalog.Decimal(12, 2), "DECIMAL(12, 2) NOT NULL"},
		{cStr, catalog.Timestamp, "TIMESTAMP(3)"},
		{cTs, catalog.String, "STRING"},
		{cBool, catalog.Int, "INT"},
		{lNull, catalog.Double, "DOUBLE"},
		{cTs, catalog.Int, "error: cannot cast TIMESTAMP(3) to INT"},
		{cBool, catalog.Timestamp, "error: cannot cast BOOLEAN to TIMESTAMP(3)"},
	}
	for _, tc := range tests {
		e, err := ResolveCast(tc.arg, tc.to)
		got := ""
		if err != nil {
			got = "error: " + err.Error()
		} else {
			got = e.Type().String()
		}
		if got != tc.want {
			t.Errorf("CAST(%s AS %s) = %s, want %s", tc.arg, tc.to, got, tc.want)
		}
	}
	if e, _ := ResolveTryCast(cIntNN, catalog.String); e.Type().NotNull || e.(*Call).Fn != "try_cast" {
		t.Errorf("TRY_CAST = %s %s", e, e.Type())
	}
}

func TestCommonType(t *testing.T) {
	tests := []struct {
		in   []catalog.Type
		want string
	}{
		{[]catalog.Type{catalog.Int, catalog.BigInt}, "BIGINT"},
		{[]catalog.Type{catalog.Int.WithNotNull(true), catalog.Int.WithNotNull(true)}, "INT NOT NULL"},
		{[]catalog.Type{catalog.Int, catalog.BigInt, catalog.Decimal(2, 2)}, "DECIMAL(21, 2)"},
		{[]catalog.Type{catalog.Decimal(10, 2), catalog.Double}, "DOUBLE"},
		{[]catalog.Type{catalog.Null, catalog.String.WithNotNull(true)}, "STRING"},
		{[]catalog.Type{{Kind: catalog.KindString, Length: 3}, {Kind: catalog.KindString, Length: 5}}, "VARCHAR(5)"},
		{[]catalog.Type{catalog.Timestamp, catalog.Timestamp}, "TIMESTAMP(3)"},
		{[]catalog.Type{catalog.Int, catalog.String}, "error"},
		{[]catalog.Type{catalog.Boolean, catalog.Int}, "error"},
	}
	for _, tc := range tests {
		ct, err := CommonType(tc.in...)
		got := "error"
		if err == nil {
			got = ct.String()
		}
		if got != tc.want {
			t.Errorf("CommonType(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestFunctionNames(t *testing.T) {
	if !sort.StringsAreSorted(FunctionNames) {
		t.Fatal("FunctionNames not sorted")
	}
	// every plain name resolves (with some arguments) or fails on arguments,
	// never as an unknown function
	builder := map[string]bool{} // typed by the expression builder (timefuncs.go)
	for _, n := range TimeFunctionNames {
		builder[n] = true
	}
	for _, n := range FunctionNames {
		if n == "CAST" || n == "TRY_CAST" || builder[n] {
			continue
		}
		_, err := ResolveCall(n, nil)
		if err != nil && strings.HasPrefix(err.Error(), "no such function") {
			t.Errorf("%s is listed but unknown", n)
		}
	}
}
