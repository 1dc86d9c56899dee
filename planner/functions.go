package planner

// Scalar function catalogue and type inference.
//
// ResolveCall types one call of a built-in function, inserting implicit casts
// (Call{Fn: "cast"}) so that every argument already has the type the kernel
// in exec/expr expects. The rules follow Flink (which follows Calcite):
//
//   - Arithmetic: INT op INT is INT, with BIGINT it is BIGINT, with DOUBLE it
//     is DOUBLE. With a DECIMAL operand, INT and BIGINT become DECIMAL(10, 0)
//     and DECIMAL(19, 0) and the result precision/scale follow Flink's
//     LogicalTypeMerging (see decimalResult); a precision above 38 is capped
//     the Hive/Spark way (keep the integer digits, keep at least 6 scale
//     digits). INT / INT is integer division. MOD's result has the type of
//     its second argument (MOD(BIGINT, INT) is INT: the kernel computes in the
//     arguments' common type and narrows, which is exact because the
//     remainder is smaller than the divisor).
//   - Integer overflow wraps as in Java; integer division or modulo by zero
//     is the runtime error "division by zero"; DOUBLE follows IEEE-754
//     (x / 0.0 is Infinity). A DECIMAL result that does not fit its precision
//     is NULL (as in Flink), so such results are nullable when the precision
//     had to be capped.
//   - Comparisons coerce numbers to their common type; STRING, BOOLEAN and
//     TIMESTAMP compare only with themselves, except that a STRING compared
//     with a TIMESTAMP is cast to TIMESTAMP(3). STRING against a number is an
//     error, as in Flink.
//   - CAST of a string that is not a valid number, boolean or timestamp fails
//     the job at run time (Flink's behaviour since 1.15); TRY_CAST yields NULL
//     instead. BOOLEAN casts to STRING as 'TRUE'/'FALSE' (Flink 1.15+); STRING
//     to BOOLEAN accepts true/t/yes/y/1 and false/f/no/n/0, any case.
//   - TRIM convention: trim(s) removes spaces on both sides; trim(s, chars)
//     removes any of the characters of chars on both sides; trim(s, chars,
//     mode) with mode a string literal 'BOTH', 'LEADING' or 'TRAILING' (''
//     is BOTH; an untyped NULL chars argument means a space, which is what
//     the parser passes for TRIM(LEADING FROM s));
//     ltrim(s[, chars]) and rtrim(s[, chars]) are LEADING and TRAILING.
//   - IF(c, a, b) and NULLIF(a, b) are rewritten to "case"; "||" is "concat";
//     "mod" is "%"; "ceiling" is "ceil"; "character_length" is
//     "char_length"; "substr" is "substring".

import (
	"fmt"
	"sort"
	"strings"

	"github.com/streamsql/streamsql/catalog"
)

// FunctionNames lists the SQL names of the built-in scalar functions and
// operators (upper-case, sorted), for SHOW FUNCTIONS and completion.
var FunctionNames = func() []string {
	names := []string{
		"+", "-", "*", "/", "%", "=", "<>", "<", ">", "<=", ">=", "||",
		"ABS", "AND", "CASE", "CAST", "CEIL", "CEILING", "CHAR_LENGTH", "CHARACTER_LENGTH",
		"COALESCE", "CONCAT", "CONCAT_WS", "EXP", "FLOOR", "IF", "IN", "IS FALSE",
		"IS NOT FALSE", "IS NOT NULL", "IS NOT TRUE", "IS NULL", "IS TRUE", "LIKE", "LN",
		"LOG10", "LOWER", "LTRIM", "MOD", "NOT", "NOT IN", "NOT LIKE", "NULLIF", "OR",
		"POSITION", "POWER", "REPLACE", "ROUND", "RTRIM", "SQRT", "SUBSTR", "SUBSTRING",
		"TRIM", "TRY_CAST", "UPPER",
	}
	names = append(names, TimeFunctionNames...)
	sort.Strings(names)
	return names
}()

// aliases maps accepted spellings to canonical Fn names.
var aliases = map[string]string{
	"mod": "%", "||": "concat", "ceiling": "ceil", "character_length": "char_length",
	"substr": "substring", "!=": "<>", "is not null": "is_not_null", "is null": "is_null",
	"not like": "not_like", "not in": "not_in", "is true": "is_true", "is false": "is_false",
	"is not true": "is_not_true", "is not false": "is_not_false", "pow": "power",
	"char length": "char_length",
}

// ResolveCall types a call of the built-in function or operator name
// (case-insensitive) over already typed args. It returns a *Call whose Fn is
// the canonical lower-case name, whose T is the result type, and whose
// arguments carry the implicit casts the kernel needs.
func ResolveCall(name string, args []Expr) (Expr, error) {
	fn := strings.ToLower(strings.TrimSpace(name))
	if a, ok := aliases[fn]; ok {
		fn = a
	}
	for i, a := range args {
		if a == nil {
			return nil, fmt.Errorf("function %s: argument %d is missing", displayName(fn), i+1)
		}
	}
	switch fn {
	case "+", "-", "*", "/":
		if err := arity(fn, args, 2, 2); err != nil {
			return nil, err
		}
		return resolveArith(fn, args)
	case "%":
		if err := arity(fn, args, 2, 2); err != nil {
			return nil, err
		}
		return resolveMod(args)
	case "neg":
		if err := arity(fn, args, 1, 1); err != nil {
			return nil, err
		}
		if e, ok, err := narrowResult("-", args, func(w []Expr) (Expr, error) { return ResolveCall("neg", w) }); ok {
			return e, err
		}
		t := args[0].Type()
		if t.Kind == catalog.KindNull {
			t = catalog.Int
		}
		if !t.IsNumeric() {
			return nil, typeErr("-", args)
		}
		return &Call{Fn: fn, Args: []Expr{coerce(args[0], t)}, T: t.WithNotNull(args[0].Type().NotNull)}, nil
	case "=", "<>", "<", ">", "<=", ">=":
		if err := arity(fn, args, 2, 2); err != nil {
			return nil, err
		}
		return resolveCompare(fn, args)
	case "and", "or":
		if err := arity(fn, args, 2, -1); err != nil {
			return nil, err
		}
		return resolveBoolFn(fn, args)
	case "not":
		if err := arity(fn, args, 1, 1); err != nil {
			return nil, err
		}
		return resolveBoolFn(fn, args)
	case "is_null", "is_not_null":
		if err := arity(fn, args, 1, 1); err != nil {
			return nil, err
		}
		return &Call{Fn: fn, Args: args, T: catalog.Boolean.WithNotNull(true)}, nil
	case "is_true", "is_false", "is_not_true", "is_not_false":
		if err := arity(fn, args, 1, 1); err != nil {
			return nil, err
		}
		c, err := resolveBoolFn(fn, args)
		if err != nil {
			return nil, err
		}
		c.T.NotNull = true
		return c, nil
	case "like", "not_like":
		if err := arity(fn, args, 2, 3); err != nil {
			return nil, err
		}
		return resolveStrings(fn, args, catalog.Boolean)
	case "in", "not_in":
		if err := arity(fn, args, 2, -1); err != nil {
			return nil, err
		}
		return resolveIn(fn, args)
	case "case":
		return resolveCase(args)
	case "if":
		if err := arity(fn, args, 3, 3); err != nil {
			return nil, err
		}
		return resolveCase(args)
	case "nullif":
		if err := arity(fn, args, 2, 2); err != nil {
			return nil, err
		}
		eq, err := resolveCompare("=", args)
		if err != nil {
			return nil, fmt.Errorf("cannot apply 'NULLIF' to arguments of type %s", typeList(args))
		}
		c, err := resolveCase([]Expr{eq, &Literal{T: catalog.Null}, args[0]})
		if err != nil {
			return nil, err
		}
		c.T.NotNull = false
		return c, nil
	case "coalesce":
		if err := arity(fn, args, 1, -1); err != nil {
			return nil, err
		}
		return resolveCoalesce(args)
	case "upper", "lower":
		if err := arity(fn, args, 1, 1); err != nil {
			return nil, err
		}
		return resolveStrings(fn, args, stringResult(args[0].Type()))
	case "concat":
		if err := arity(fn, args, 1, -1); err != nil {
			return nil, err
		}
		length := 0
		for _, a := range args {
			if a.Type().Kind == catalog.KindString && a.Type().Length > 0 && length >= 0 {
				length += a.Type().Length
			} else {
				length = -1
			}
		}
		rt := catalog.String
		if length > 0 {
			rt.Length = length
		}
		return resolveStrings(fn, args, rt)
	case "concat_ws":
		if err := arity(fn, args, 2, -1); err != nil {
			return nil, err
		}
		c, err := resolveStrings(fn, args, catalog.String)
		if err != nil {
			return nil, err
		}
		c.T.NotNull = args[0].Type().NotNull
		return c, nil
	case "replace":
		if err := arity(fn, args, 3, 3); err != nil {
			return nil, err
		}
		return resolveStrings(fn, args, catalog.String)
	case "trim", "ltrim", "rtrim":
		max := 2
		if fn == "trim" {
			max = 3
		}
		if err := arity(fn, args, 1, max); err != nil {
			return nil, err
		}
		if len(args) == 3 {
			l, ok := args[2].(*Literal)
			m, _ := func() (string, bool) {
				if !ok {
					return "", false
				}
				s, ok := l.Value.(string)
				return strings.ToUpper(s), ok
			}()
			if m == "" {
				m = "BOTH"
			}
			if m != "BOTH" && m != "LEADING" && m != "TRAILING" {
				return nil, fmt.Errorf("function TRIM: the mode must be the literal 'BOTH', 'LEADING' or 'TRAILING', got %s", args[2])
			}
			chars := args[1]
			if l, ok := chars.(*Literal); ok && l.Value == nil && l.T.Kind == catalog.KindNull {
				// TRIM(LEADING FROM s): the parser passes no characters
				chars = &Literal{Value: " ", T: catalog.String.WithNotNull(true)}
			}
			args = []Expr{args[0], chars, &Literal{Value: m, T: catalog.String.WithNotNull(true)}}
		}
		return resolveStrings(fn, args, stringResult(args[0].Type()))
	case "char_length":
		if err := arity(fn, args, 1, 1); err != nil {
			return nil, err
		}
		return resolveStrings(fn, args, catalog.Int)
	case "position":
		if err := arity(fn, args, 2, 2); err != nil {
			return nil, err
		}
		return resolveStrings(fn, args, catalog.Int)
	case "substring":
		if err := arity(fn, args, 2, 3); err != nil {
			return nil, err
		}
		return resolveSubstring(args)
	case "abs":
		if err := arity(fn, args, 1, 1); err != nil {
			return nil, err
		}
		return resolveNumeric1(fn, args, func(t catalog.Type) catalog.Type { return t })
	case "floor", "ceil":
		if err := arity(fn, args, 1, 1); err != nil {
			return nil, err
		}
		return resolveNumeric1(fn, args, func(t catalog.Type) catalog.Type {
			if t.Kind == catalog.KindDecimal {
				return roundDecimalType(t, 0)
			}
			return t
		})
	case "round":
		if err := arity(fn, args, 1, 2); err != nil {
			return nil, err
		}
		return resolveRound(args)
	case "power":
		if err := arity(fn, args, 2, 2); err != nil {
			return nil, err
		}
		return resolveDoubleFn(fn, args)
	case "sqrt", "exp", "ln", "log10":
		if err := arity(fn, args, 1, 1); err != nil {
			return nil, err
		}
		return resolveDoubleFn(fn, args)
	case "cast":
		return nil, fmt.Errorf("CAST must be resolved with ResolveCast")
	}
	return nil, fmt.Errorf("no such function: %s", strings.ToUpper(name))
}

// ResolveCast types an explicit CAST(arg AS to). Casting a NULL literal gives
// a typed NULL literal. Unsupported pairs are an error naming both types.
func ResolveCast(arg Expr, to catalog.Type) (Expr, error) {
	return resolveCastFn("cast", arg, to)
}

// ResolveTryCast types TRY_CAST(arg AS to): like CAST, but a value that cannot
// be converted yields NULL instead of failing the job.
func ResolveTryCast(arg Expr, to catalog.Type) (Expr, error) {
	return resolveCastFn("try_cast", arg, to)
}

func resolveCastFn(fn string, arg Expr, to catalog.Type) (Expr, error) {
	from := arg.Type()
	if !CanCast(from, to) {
		return nil, fmt.Errorf("cannot cast %s to %s", from.Nullable(), to.Nullable())
	}
	to.NotNull = false
	if l, ok := arg.(*Literal); ok && l.Value == nil {
		return &Literal{T: to}, nil
	}
	if fn == "try_cast" {
		return &Call{Fn: fn, Args: []Expr{arg}, T: to}, nil
	}
	to.NotNull = from.NotNull && !castCanBeNull(from, to)
	return &Call{Fn: fn, Args: []Expr{arg}, T: to}, nil
}

// CanCast reports whether CAST from one type to another is supported.
func CanCast(from, to catalog.Type) bool {
	if from.Kind == catalog.KindRow || to.Kind == catalog.KindRow {
		return from.Kind == catalog.KindNull || from.Equal(to) || (from.Kind == catalog.KindRow && to.Kind == catalog.KindString)
	}
	if from.Kind == catalog.KindNull || from.Kind == to.Kind {
		return to.Kind != catalog.KindNull || from.Kind == catalog.KindNull
	}
	if from.IsInterval() || to.IsInterval() {
		return to.Kind == catalog.KindString && from.IsInterval()
	}
	if from.Kind == catalog.KindString || to.Kind == catalog.KindString {
		return to.Kind != catalog.KindNull
	}
	if from.IsDatetime() && to.IsDatetime() {
		switch {
		case from.Kind == catalog.KindDate:
			return to.IsTimestamp()
		case from.Kind == catalog.KindTime:
			return to.Kind == catalog.KindTimestamp
		}
		return true // TIMESTAMP and TIMESTAMP_LTZ to any
	}
	numOrBool := func(t catalog.Type) bool { return t.IsNumeric() || t.Kind == catalog.KindBoolean }
	return numOrBool(from) && numOrBool(to)
}

// castCanBeNull reports whether a non-NULL value can become NULL in a CAST:
// only DECIMAL targets, whose overflow yields NULL as in Flink.
func castCanBeNull(from, to catalog.Type) bool {
	if to.Kind != catalog.KindDecimal {
		return false
	}
	switch from.Kind {
	case catalog.KindBoolean:
		return to.Precision-to.Scale < 1
	case catalog.KindTinyInt, catalog.KindSmallInt, catalog.KindInt, catalog.KindBigInt, catalog.KindDecimal:
		return intDigits(from) > to.Precision-to.Scale
	}
	return true
}

// intDigits is the number of integer digits a numeric type can hold.
func intDigits(t catalog.Type) int {
	switch t.Kind {
	case catalog.KindTinyInt:
		return 3
	case catalog.KindSmallInt:
		return 5
	case catalog.KindInt:
		return 10
	case catalog.KindBigInt:
		return 19
	case catalog.KindDecimal:
		return t.Precision - t.Scale
	}
	return 0
}

// CommonType returns the least restrictive type of ts (for CASE, COALESCE,
// IN, UNION): numbers widen (INT < BIGINT < DECIMAL < DOUBLE, with INT and
// BIGINT as DECIMAL(10, 0) and DECIMAL(19, 0) next to decimals), strings
// merge lengths, NULL adopts the other types. The result is NOT NULL only when
// every input is.
func CommonType(ts ...catalog.Type) (catalog.Type, error) {
	if len(ts) == 0 {
		return catalog.Type{}, fmt.Errorf("no types to merge")
	}
	notNull := true
	var res catalog.Type
	have := false
	for _, t := range ts {
		notNull = notNull && t.NotNull
		if t.Kind == catalog.KindNull {
			continue
		}
		if !have {
			res, have = t, true
			continue
		}
		m, ok := merge2(res, t)
		if !ok {
			return catalog.Type{}, fmt.Errorf("no common type for %s", typeNames(ts))
		}
		res = m
	}
	if !have {
		return catalog.Null, nil
	}
	return res.WithNotNull(notNull), nil
}

func merge2(a, b catalog.Type) (catalog.Type, bool) {
	a.NotNull, b.NotNull = false, false
	switch {
	case a.Kind == catalog.KindString && b.Kind == catalog.KindString:
		if a.Length == 0 || b.Length == 0 {
			return catalog.String, true
		}
		if b.Length > a.Length {
			a.Length = b.Length
		}
		return a, true
	case a.IsNumeric() && b.IsNumeric():
		if a.Kind == catalog.KindDouble || b.Kind == catalog.KindDouble {
			return catalog.Double, true
		}
		if a.Kind == catalog.KindFloat || b.Kind == catalog.KindFloat {
			if a.Kind == catalog.KindDecimal || b.Kind == catalog.KindDecimal {
				return catalog.Double, true
			}
			return catalog.Float, true
		}
		if a.Kind == catalog.KindDecimal || b.Kind == catalog.KindDecimal {
			da, db := asDecimal(a), asDecimal(b)
			s := max(da.Scale, db.Scale)
			p := max(da.Precision-da.Scale, db.Precision-db.Scale) + s
			if p > 38 {
				p = 38
				s = min(s, 38-max(da.Precision-da.Scale, db.Precision-db.Scale))
				if s < 0 {
					s = 0
				}
			}
			return catalog.Decimal(p, s), true
		}
		if a.Kind == catalog.KindBigInt || b.Kind == catalog.KindBigInt {
			return catalog.BigInt, true
		}
		if a.Kind == catalog.KindInt || b.Kind == catalog.KindInt {
			return catalog.Int, true
		}
		if a.Kind == catalog.KindSmallInt || b.Kind == catalog.KindSmallInt {
			return catalog.SmallInt, true
		}
		return catalog.TinyInt, true
	case a.IsTimestamp() && b.IsTimestamp() && a.Kind == b.Kind:
		a.Precision = max(a.Precision, b.Precision)
		return a, true
	case a.Kind == catalog.KindTimestamp && b.Kind == catalog.KindDate, a.Kind == catalog.KindDate && b.Kind == catalog.KindTimestamp:
		return catalog.TimestampP(max(a.Precision, b.Precision)), true
	case a.Kind == catalog.KindTime && b.Kind == catalog.KindTime:
		return catalog.Type{Kind: catalog.KindTime, Precision: max(a.Precision, b.Precision)}, true
	case a.Kind == catalog.KindRow && b.Kind == catalog.KindRow:
		return a, a.Equal(b)
	case a.Kind == b.Kind:
		return a, true
	}
	return catalog.Type{}, false
}

// asDecimal returns the DECIMAL type that holds every value of an exact type.
func asDecimal(t catalog.Type) catalog.Type {
	switch t.Kind {
	case catalog.KindTinyInt:
		return catalog.Decimal(3, 0).WithNotNull(t.NotNull)
	case catalog.KindSmallInt:
		return catalog.Decimal(5, 0).WithNotNull(t.NotNull)
	case catalog.KindInt:
		return catalog.Decimal(10, 0).WithNotNull(t.NotNull)
	case catalog.KindBigInt:
		return catalog.Decimal(19, 0).WithNotNull(t.NotNull)
	}
	return t
}

// adjustDecimal caps a derived precision at 38 as Flink does; capped reports
// whether the result can overflow (and hence be NULL).
func adjustDecimal(p, s int) (t catalog.Type, capped bool) {
	if p <= 38 {
		return catalog.Decimal(p, s), false
	}
	intPart := p - s
	s = max(38-intPart, min(s, 6))
	return catalog.Decimal(38, s), true
}

// decimalResult derives the DECIMAL result type of an arithmetic operator.
func decimalResult(op string, a, b catalog.Type) (catalog.Type, bool) {
	p1, s1, p2, s2 := a.Precision, a.Scale, b.Precision, b.Scale
	switch op {
	case "+", "-":
		s := max(s1, s2)
		return adjustDecimal(max(p1-s1, p2-s2)+s+1, s)
	case "*":
		return adjustDecimal(p1+p2, s1+s2)
	case "/":
		s := max(6, s1+p2+1)
		return adjustDecimal(p1-s1+s2+s, s)
	default: // "%"
		s := max(s1, s2)
		return adjustDecimal(min(p1-s1, p2-s2)+s, s)
	}
}

// roundDecimalType is Flink's result of ROUND(DECIMAL(p, s), r) (and of
// FLOOR/CEIL with r = 0).
func roundDecimalType(t catalog.Type, r int) catalog.Type {
	p, s := t.Precision, t.Scale
	switch {
	case r >= s:
		return catalog.Decimal(p, s)
	case r < 0:
		return catalog.Decimal(min(38, 1+p-s), 0)
	}
	return catalog.Decimal(min(38, 1+p-s+r), r)
}

// narrowResult computes fn over TINYINT, SMALLINT and FLOAT operands in
// INT or DOUBLE and casts the result back (exact: Java's arithmetic on
// byte/short wraps like the narrowing cast, and float32 results are the
// rounding of the float64 ones). ok is false when no operand is narrow.
func narrowResult(fn string, args []Expr, resolve func([]Expr) (Expr, error)) (Expr, bool, error) {
	narrowT, anyNarrow := catalog.Type{}, false
	for _, a := range args {
		switch a.Type().Kind {
		case catalog.KindTinyInt, catalog.KindSmallInt, catalog.KindFloat:
			anyNarrow = true
		}
	}
	if !anyNarrow {
		return nil, false, nil
	}
	ts := make([]catalog.Type, len(args))
	for i, a := range args {
		ts[i] = a.Type().Nullable()
	}
	ct, err := CommonType(ts...)
	if err != nil {
		return nil, true, typeErr(fn, args)
	}
	narrowT = ct
	if fn == "%" && len(args) == 2 && args[1].Type().IsInteger() && args[0].Type().IsInteger() {
		narrowT = args[1].Type().Nullable() // MOD has the second argument's type
	}
	var wide catalog.Type
	switch narrowT.Kind {
	case catalog.KindTinyInt, catalog.KindSmallInt:
		wide = catalog.Int
	case catalog.KindFloat:
		wide = catalog.Double
	default:
		return nil, false, nil // a wider operand decides (INT, DOUBLE, DECIMAL)
	}
	wargs := make([]Expr, len(args))
	for i, a := range args {
		wargs[i] = a
		if k := a.Type().Kind; k == catalog.KindTinyInt || k == catalog.KindSmallInt || k == catalog.KindFloat {
			wargs[i] = coerce(a, wide)
		}
	}
	e, err := resolve(wargs)
	if err != nil {
		return nil, true, typeErr(fn, args)
	}
	nn := e.Type().NotNull
	return &Call{Fn: "cast", Args: []Expr{e}, T: narrowT.WithNotNull(nn)}, true, nil
}

func resolveArith(fn string, args []Expr) (Expr, error) {
	if e, ok, err := narrowResult(fn, args, func(w []Expr) (Expr, error) { return resolveArith(fn, w) }); ok {
		return e, err
	}
	a, b := nullAs(args[0].Type(), args[1].Type()), nullAs(args[1].Type(), args[0].Type())
	if !a.IsNumeric() || !b.IsNumeric() {
		return nil, typeErr(fn, args)
	}
	nn := args[0].Type().NotNull && args[1].Type().NotNull
	var at, rt catalog.Type
	switch {
	case a.Kind == catalog.KindDouble || b.Kind == catalog.KindDouble:
		at, rt = catalog.Double, catalog.Double
	case a.Kind == catalog.KindDecimal || b.Kind == catalog.KindDecimal:
		da, db := asDecimal(a), asDecimal(b)
		t, capped := decimalResult(fn, da, db)
		args = []Expr{coerce(args[0], da), coerce(args[1], db)}
		return &Call{Fn: fn, Args: args, T: t.WithNotNull(nn && !capped)}, nil
	case a.Kind == catalog.KindBigInt || b.Kind == catalog.KindBigInt:
		at, rt = catalog.BigInt, catalog.BigInt
	default:
		at, rt = catalog.Int, catalog.Int
	}
	return &Call{Fn: fn, Args: []Expr{coerce(args[0], at), coerce(args[1], at)}, T: rt.WithNotNull(nn)}, nil
}

func resolveMod(args []Expr) (Expr, error) {
	if e, ok, err := narrowResult("%", args, resolveMod); ok {
		return e, err
	}
	a, b := nullAs(args[0].Type(), args[1].Type()), nullAs(args[1].Type(), args[0].Type())
	if !a.IsNumeric() || !b.IsNumeric() {
		return nil, typeErr("%", args)
	}
	nn := args[0].Type().NotNull && args[1].Type().NotNull
	switch {
	case a.Kind == catalog.KindDouble || b.Kind == catalog.KindDouble:
		return &Call{Fn: "%", Args: []Expr{coerce(args[0], catalog.Double), coerce(args[1], catalog.Double)}, T: catalog.Double.WithNotNull(nn)}, nil
	case a.Kind == catalog.KindDecimal || b.Kind == catalog.KindDecimal:
		da, db := asDecimal(a), asDecimal(b)
		t, capped := decimalResult("%", da, db)
		return &Call{Fn: "%", Args: []Expr{coerce(args[0], da), coerce(args[1], db)}, T: t.WithNotNull(nn && !capped)}, nil
	}
	ct := catalog.Int
	if a.Kind == catalog.KindBigInt || b.Kind == catalog.KindBigInt {
		ct = catalog.BigInt
	}
	// The result has the second argument's type; the kernel narrows.
	rt := catalog.Type{Kind: b.Kind}
	return &Call{Fn: "%", Args: []Expr{coerce(args[0], ct), coerce(args[1], ct)}, T: rt.WithNotNull(nn)}, nil
}

func resolveCompare(fn string, args []Expr) (*Call, error) {
	a, b := nullAs(args[0].Type(), args[1].Type()), nullAs(args[1].Type(), args[0].Type())
	nn := args[0].Type().NotNull && args[1].Type().NotNull
	var ct catalog.Type
	switch {
	case a.IsNumeric() && b.IsNumeric():
		ct, _ = CommonType(a.Nullable(), b.Nullable())
	case a.Kind == catalog.KindTimestamp && b.Kind == catalog.KindString:
		ct = a.Nullable()
	case a.Kind == catalog.KindString && b.Kind == catalog.KindTimestamp:
		ct = b.Nullable()
	case (a.Kind == catalog.KindDate || a.Kind == catalog.KindTime || a.Kind == catalog.KindTimestampLTZ) && b.Kind == catalog.KindString:
		ct = a.Nullable()
	case a.Kind == catalog.KindString && (b.Kind == catalog.KindDate || b.Kind == catalog.KindTime || b.Kind == catalog.KindTimestampLTZ):
		ct = b.Nullable()
	case a.IsDatetime() && b.IsDatetime():
		var err error
		if ct, err = CommonType(a.Nullable(), b.Nullable()); err != nil {
			return nil, typeErr(fn, args)
		}
	case a.Kind == catalog.KindRow || b.Kind == catalog.KindRow:
		return nil, typeErr(fn, args)
	case a.Kind == b.Kind && a.Kind != catalog.KindNull:
		ct = a
		if a.Kind == catalog.KindString {
			ct = catalog.String
		}
	default:
		return nil, typeErr(fn, args)
	}
	return &Call{Fn: fn, Args: []Expr{coerce(args[0], ct), coerce(args[1], ct)}, T: catalog.Boolean.WithNotNull(nn)}, nil
}

func resolveBoolFn(fn string, args []Expr) (*Call, error) {
	nn := true
	out := make([]Expr, len(args))
	for i, a := range args {
		t := a.Type()
		if t.Kind != catalog.KindBoolean && t.Kind != catalog.KindNull {
			return nil, typeErr(fn, args)
		}
		nn = nn && t.NotNull
		out[i] = coerce(a, catalog.Boolean)
	}
	return &Call{Fn: fn, Args: out, T: catalog.Boolean.WithNotNull(nn)}, nil
}

// resolveStrings checks that every argument is a string (or NULL) and types
// the call with result type rt (nullable unless every argument is NOT NULL).
func resolveStrings(fn string, args []Expr, rt catalog.Type) (*Call, error) {
	nn := true
	out := make([]Expr, len(args))
	for i, a := range args {
		t := a.Type()
		if t.Kind != catalog.KindString && t.Kind != catalog.KindNull {
			return nil, typeErr(fn, args)
		}
		nn = nn && t.NotNull
		out[i] = coerce(a, catalog.String)
	}
	return &Call{Fn: fn, Args: out, T: rt.WithNotNull(nn)}, nil
}

func stringResult(t catalog.Type) catalog.Type {
	if t.Kind == catalog.KindString {
		return catalog.Type{Kind: catalog.KindString, Length: t.Length}
	}
	return catalog.String
}

func resolveSubstring(args []Expr) (Expr, error) {
	st := args[0].Type()
	if st.Kind != catalog.KindString && st.Kind != catalog.KindNull {
		return nil, typeErr("substring", args)
	}
	nn := st.NotNull
	out := []Expr{coerce(args[0], catalog.String)}
	for _, a := range args[1:] {
		t := a.Type()
		if !t.IsInteger() && t.Kind != catalog.KindNull {
			return nil, typeErr("substring", args)
		}
		nn = nn && t.NotNull
		out = append(out, coerce(a, catalog.Int))
	}
	if len(args) == 3 {
		// a negative length gives NULL (Flink)
		if v, ok := constInt(args[2]); !ok || v < 0 {
			nn = false
		}
	}
	return &Call{Fn: "substring", Args: out, T: stringResult(st).WithNotNull(nn)}, nil
}

func resolveIn(fn string, args []Expr) (Expr, error) {
	ts := make([]catalog.Type, len(args))
	for i, a := range args {
		ts[i] = a.Type()
	}
	ct, err := CommonType(ts...)
	if err != nil || ct.Kind == catalog.KindNull {
		name := "IN"
		if fn == "not_in" {
			name = "NOT IN"
		}
		return nil, fmt.Errorf("cannot apply '%s' to arguments of type %s", name, typeList(args))
	}
	out := make([]Expr, len(args))
	for i, a := range args {
		out[i] = coerce(a, ct)
	}
	return &Call{Fn: fn, Args: out, T: catalog.Boolean.WithNotNull(ct.NotNull)}, nil
}

func resolveCase(args []Expr) (*Call, error) {
	if len(args) < 3 || len(args)%2 == 0 {
		return nil, fmt.Errorf("function CASE expects pairs of condition and value followed by an ELSE value, got %d arguments", len(args))
	}
	var vts []catalog.Type
	for i := 0; i+1 < len(args); i += 2 {
		ct := args[i].Type()
		if ct.Kind != catalog.KindBoolean && ct.Kind != catalog.KindNull {
			return nil, fmt.Errorf("CASE condition %d must be BOOLEAN, got %s", i/2+1, ct.Nullable())
		}
		vts = append(vts, args[i+1].Type())
	}
	vts = append(vts, args[len(args)-1].Type())
	rt, err := CommonType(vts...)
	if err != nil {
		return nil, fmt.Errorf("CASE values have no common type: %s", typeNames(vts))
	}
	if rt.Kind == catalog.KindNull {
		return nil, fmt.Errorf("CASE needs at least one value that is not an untyped NULL")
	}
	out := make([]Expr, len(args))
	for i := 0; i+1 < len(args); i += 2 {
		out[i] = coerce(args[i], catalog.Boolean)
		out[i+1] = coerce(args[i+1], rt)
	}
	out[len(args)-1] = coerce(args[len(args)-1], rt)
	return &Call{Fn: "case", Args: out, T: rt}, nil
}

func resolveCoalesce(args []Expr) (Expr, error) {
	ts := make([]catalog.Type, len(args))
	anyNN := false
	for i, a := range args {
		ts[i] = a.Type()
		anyNN = anyNN || ts[i].NotNull
	}
	ct, err := CommonType(ts...)
	if err != nil {
		return nil, fmt.Errorf("cannot apply 'COALESCE' to arguments of type %s", typeList(args))
	}
	if ct.Kind == catalog.KindNull {
		return nil, fmt.Errorf("COALESCE needs at least one argument that is not an untyped NULL")
	}
	out := make([]Expr, len(args))
	for i, a := range args {
		out[i] = coerce(a, ct)
	}
	return &Call{Fn: "coalesce", Args: out, T: ct.WithNotNull(anyNN)}, nil
}

func resolveNumeric1(fn string, args []Expr, rt func(catalog.Type) catalog.Type) (Expr, error) {
	if e, ok, err := narrowResult(fn, args, func(w []Expr) (Expr, error) { return resolveNumeric1(fn, w, rt) }); ok {
		return e, err
	}
	t := args[0].Type()
	if t.Kind == catalog.KindNull {
		t = catalog.Int
	}
	if !t.IsNumeric() {
		return nil, typeErr(fn, args)
	}
	return &Call{Fn: fn, Args: []Expr{coerce(args[0], t)}, T: rt(t.Nullable()).WithNotNull(args[0].Type().NotNull)}, nil
}

// constInt returns the value of an integer literal (possibly negated).
func constInt(e Expr) (int, bool) {
	switch x := e.(type) {
	case *Literal:
		switch v := x.Value.(type) {
		case int32:
			return int(v), true
		case int64:
			return int(v), true
		}
	case *Call:
		if x.Fn == "neg" && len(x.Args) == 1 {
			v, ok := constInt(x.Args[0])
			return -v, ok
		}
		if x.Fn == "cast" && len(x.Args) == 1 && x.T.IsInteger() {
			return constInt(x.Args[0])
		}
	}
	return 0, false
}

func resolveRound(args []Expr) (Expr, error) {
	if e, ok, err := narrowResult("round", args[:1], func(w []Expr) (Expr, error) { return resolveRound(append(w, args[1:]...)) }); ok {
		return e, err
	}
	t := args[0].Type()
	if t.Kind == catalog.KindNull {
		t = catalog.Int
	}
	if !t.IsNumeric() {
		return nil, typeErr("round", args)
	}
	nn := args[0].Type().NotNull
	out := []Expr{coerce(args[0], t)}
	rt := t.Nullable()
	if len(args) == 2 {
		dt := args[1].Type()
		if !dt.IsInteger() && dt.Kind != catalog.KindNull {
			return nil, typeErr("round", args)
		}
		nn = nn && dt.NotNull
		if t.Kind == catalog.KindDecimal {
			d, ok := constInt(args[1])
			if !ok {
				return nil, fmt.Errorf("function ROUND: the number of decimal places must be an integer literal for a DECIMAL argument, got %s", args[1])
			}
			rt = roundDecimalType(t, d)
			out = append(out, &Literal{Value: int32(d), T: catalog.Int.WithNotNull(true)})
		} else {
			out = append(out, coerce(args[1], catalog.Int))
		}
	} else if t.Kind == catalog.KindDecimal {
		rt = roundDecimalType(t, 0)
	}
	return &Call{Fn: "round", Args: out, T: rt.WithNotNull(nn)}, nil
}

func resolveDoubleFn(fn string, args []Expr) (Expr, error) {
	nn := true
	out := make([]Expr, len(args))
	for i, a := range args {
		t := a.Type()
		if !t.IsNumeric() && t.Kind != catalog.KindNull {
			return nil, typeErr(fn, args)
		}
		nn = nn && t.NotNull
		out[i] = coerce(a, catalog.Double)
	}
	return &Call{Fn: fn, Args: out, T: catalog.Double.WithNotNull(nn)}, nil
}

// nullAs returns t, or other when t is the NULL type.
func nullAs(t, other catalog.Type) catalog.Type {
	if t.Kind == catalog.KindNull {
		return other.Nullable()
	}
	return t
}

// coerce inserts an implicit cast of e to the kind and parameters of to,
// keeping e's nullability. A NULL literal becomes a typed NULL literal.
func coerce(e Expr, to catalog.Type) Expr {
	from := e.Type()
	if from.Equal(to) || to.Kind == catalog.KindNull {
		return e
	}
	if l, ok := e.(*Literal); ok && l.Value == nil {
		return &Literal{T: to.Nullable()}
	}
	t := to.WithNotNull(from.NotNull && !castCanBeNull(from, to))
	if t.Kind == catalog.KindString {
		t.Length = 0
	}
	return &Call{Fn: "cast", Args: []Expr{e}, T: t}
}

func arity(fn string, args []Expr, min, max int) error {
	n := len(args)
	if n >= min && (max < 0 || n <= max) {
		return nil
	}
	var want string
	switch {
	case max < 0:
		want = fmt.Sprintf("at least %d", min)
	case min == max:
		want = fmt.Sprint(min)
	default:
		want = fmt.Sprintf("%d to %d", min, max)
	}
	s := "s"
	if want == "1" {
		s = ""
	}
	return fmt.Errorf("function %s expects %s argument%s, got %d", displayName(fn), want, s, n)
}

func displayName(fn string) string {
	switch fn {
	case "+", "-", "*", "/", "%", "=", "<>", "<", ">", "<=", ">=":
		return "'" + fn + "'"
	case "neg":
		return "'-'"
	}
	return strings.ToUpper(strings.ReplaceAll(fn, "_", " "))
}

func typeErr(fn string, args []Expr) error {
	name := displayName(fn)
	if !strings.HasPrefix(name, "'") {
		name = "'" + name + "'"
	}
	return fmt.Errorf("cannot apply %s to arguments of type %s", name, typeList(args))
}

func typeList(args []Expr) string {
	ts := make([]catalog.Type, len(args))
	for i, a := range args {
		ts[i] = a.Type()
	}
	return typeNames(ts)
}

func typeNames(ts []catalog.Type) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.Nullable().String()
	}
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
