package expr

import (
	"fmt"
	"github.com/streamsql/streamsql/internal/memtest"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec/format"
	"github.com/streamsql/streamsql/planner"
)

// The test batch: 4 rows, with NULLs in row 3 of every nullable column.
var testSchema = catalog.Schema{
	{Name: "i", Type: catalog.Int},
	{Name: "b", Type: catalog.BigInt},
	{Name: "d", Type: catalog.Double},
	{Name: "m", Type: catalog.Decimal(10, 2)},
	{Name: "s", Type: catalog.String},
	{Name: "t", Type: catalog.Timestamp},
	{Name: "f", Type: catalog.Boolean},
	{Name: "z", Type: catalog.Int}, // 0, 2, 0, NULL: divisors
	{Name: "u", Type: catalog.String},
}

func dec(s string, p, sc int) decimal128.Num {
	n, err := format.CastDecimal(s, int32(p), int32(sc))
	if err != nil {
		panic(err)
	}
	return n
}

func testRecord(mem memory.Allocator) arrow.Record {
	b := array.NewRecordBuilder(mem, testSchema.Arrow())
	defer b.Release()
	ib := b.Field(0).(*array.Int32Builder)
	ib.AppendValues([]int32{7, -7, 2147483647}, nil)
	ib.AppendNull()
	bb := b.Field(1).(*array.Int64Builder)
	bb.AppendValues([]int64{10, -3, 9223372036854775807}, nil)
	bb.AppendNull()
	db := b.Field(2).(*array.Float64Builder)
	db.AppendValues([]float64{1.5, -2.675, 1e20}, nil)
	db.AppendNull()
	mb := b.Field(3).(*array.Decimal128Builder)
	mb.AppendValues([]decimal128.Num{dec("12.34", 10, 2), dec("-0.05", 10, 2), dec("99999999.99", 10, 2)}, nil)
	mb.AppendNull()
	sb := b.Field(4).(*array.StringBuilder)
	sb.AppendValues([]string{"Hello", "  wörld  ", "a_b%c"}, nil)
	sb.AppendNull()
	tb := b.Field(5).(*array.TimestampBuilder)
	ts, _ := format.CastTimestamp("2024-02-29 13:45:01.250")
	tb.AppendValues([]arrow.Timestamp{arrow.Timestamp(ts), 0, -1}, nil)
	tb.AppendNull()
	fb := b.Field(6).(*array.BooleanBuilder)
	fb.AppendValues([]bool{true, false, true}, nil)
	fb.AppendNull()
	zb := b.Field(7).(*array.Int32Builder)
	zb.AppendValues([]int32{0, 2, 0}, nil)
	zb.AppendNull()
	ub := b.Field(8).(*array.StringBuilder)
	ub.AppendValues([]string{"12", " 3.9 ", "x", "true"}, nil)
	return b.NewRecord()
}

// Expression helpers for tests.
func col(name string) planner.Expr {
	i := testSchema.Index(name)
	return &planner.ColRef{Index: i, Name: name, T: testSchema[i].Type}
}

func lit(v any) planner.Expr {
	switch x := v.(type) {
	case nil:
		return &planner.Literal{T: catalog.Null}
	case int:
		return &planner.Literal{Value: int32(x), T: catalog.Int.WithNotNull(true)}
	case int64:
		return &planner.Literal{Value: x, T: catalog.BigInt.WithNotNull(true)}
	case float64:
		return &planner.Literal{Value: x, T: catalog.Double.WithNotNull(true)}
	case string:
		// decimals are written "dec:1.25"
		if d, ok := strings.CutPrefix(x, "dec:"); ok {
			sc := 0
			if dot := strings.IndexByte(d, '.'); dot >= 0 {
				sc = len(d) - dot - 1
			}
			p := len(strings.TrimLeft(strings.NewReplacer(".", "", "-", "").Replace(d), "0"))
			p = max(p, sc, 1)
			return &planner.Literal{Value: dec(d, p, sc), T: catalog.Decimal(p, sc).WithNotNull(true)}
		}
		return &planner.Literal{Value: x, T: catalog.String.WithNotNull(true)}
	case bool:
		return &planner.Literal{Value: x, T: catalog.Boolean.WithNotNull(true)}
	}
	panic(fmt.Sprintf("lit %T", v))
}

func call(t testing.TB, fn string, args ...planner.Expr) planner.Expr {
	t.Helper()
	e, err := planner.ResolveCall(fn, args)
	if err != nil {
		t.Fatalf("ResolveCall(%s): %v", fn, err)
	}
	return e
}

func cast(t testing.TB, e planner.Expr, to catalog.Type) planner.Expr {
	t.Helper()
	c, err := planner.ResolveCast(e, to)
	if err != nil {
		t.Fatalf("ResolveCast: %v", err)
	}
	return c
}

// render prints an array's values as "v1,v2,...", NULL for nulls.
func render(a arrow.Array) string {
	parts := make([]string, a.Len())
	for i := range parts {
		if a.IsNull(i) {
			parts[i] = "NULL"
			continue
		}
		switch x := a.(type) {
		case *array.String:
			parts[i] = "'" + x.Value(i) + "'"
		case *array.Boolean:
			parts[i] = strings.ToUpper(strconv.FormatBool(x.Value(i)))
		default: // CAST's text form (format.FormatValue); "?" for other types
			parts[i] = format.FormatValue(a, i)
		}
	}
	return strings.Join(parts, ",")
}

func evalExpr(t *testing.T, e planner.Expr) (string, error) {
	t.Helper()
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	rec := testRecord(mem)
	defer rec.Release()
	ev, err := Compile(e)
	if err != nil {
		return "", err
	}
	a, err := ev.Eval(rec, mem)
	if err != nil {
		return "", err
	}
	defer a.Release()
	if a.Len() != int(rec.NumRows()) {
		t.Fatalf("%s: %d rows, want %d", e, a.Len(), rec.NumRows())
	}
	if !arrow.TypeEqual(a.DataType(), e.Type().ArrowType()) {
		t.Fatalf("%s: Arrow type %s, want %s", e, a.DataType(), e.Type().ArrowType())
	}
	if e.Type().NotNull && a.NullN() > 0 {
		t.Fatalf("%s: NOT NULL result has nulls", e)
	}
	return render(a), nil
}

func TestFunctions(t *testing.T) {
	tests := []struct {
		name     string
		e        func(t testing.TB) planner.Expr
		wantType string
		want     string
	}{
		// arithmetic
		{"int+int", func(t testing.TB) planner.Expr { return call(t, "+", col("i"), lit(1)) }, "INT", "8,-6,-2147483648,NULL"},
		{"int+bigint", func(t testing.TB) planner.Expr { return call(t, "+", col("i"), col("b")) }, "BIGINT", "17,-10,-9223372034707292162,NULL"},
		{"int*double", func(t testing.TB) planner.Expr { return call(t, "*", col("i"), col("d")) }, "DOUBLE", "10.5,18.724999999999998,2.147483647E29,NULL"},
		{"int/int", func(t testing.TB) planner.Expr { return call(t, "/", col("i"), lit(2)) }, "INT", "3,-3,1073741823,NULL"},
		{"lit/col", func(t testing.TB) planner.Expr { return call(t, "/", lit(100), col("i")) }, "INT", "14,-14,0,NULL"},
		{"mod", func(t testing.TB) planner.Expr { return call(t, "mod", col("b"), lit(3)) }, "INT", "1,0,1,NULL"},
		{"mod neg", func(t testing.TB) planner.Expr { return call(t, "%", col("i"), lit(-4)) }, "INT", "3,-3,3,NULL"},
		{"neg", func(t testing.TB) planner.Expr { return call(t, "neg", col("d")) }, "DOUBLE", "-1.5,2.675,-1.0E20,NULL"},
		{"null+int", func(t testing.TB) planner.Expr { return call(t, "+", lit(nil), col("i")) }, "INT", "NULL,NULL,NULL,NULL"},
		{"double/0", func(t testing.TB) planner.Expr { return call(t, "/", col("d"), lit(0.0)) }, "DOUBLE", "Infinity,-Infinity,Infinity,NULL"},
		{"dec+dec", func(t testing.TB) planner.Expr { return call(t, "+", col("m"), lit("dec:0.005")) }, "DECIMAL(12, 3)", "12.345,-0.045,99999999.995,NULL"},
		{"dec*dec", func(t testing.TB) planner.Expr { return call(t, "*", col("m"), lit("dec:0.908")) }, "DECIMAL(13, 5)", "11.20472,-0.04540,90799999.99092,NULL"},
		{"dec+int", func(t testing.TB) planner.Expr { return call(t, "+", col("m"), col("i")) }, "DECIMAL(13, 2)", "19.34,-7.05,2247483646.99,NULL"},
		{"dec/dec", func(t testing.TB) planner.Expr { return call(t, "/", col("m"), lit("dec:3")) }, "DECIMAL(14, 6)", "4.113333,-0.016667,33333333.330000,NULL"},
		{"dec%int", func(t testing.TB) planner.Expr { return call(t, "%", col("m"), lit(5)) }, "DECIMAL(10, 2)", "2.34,-0.05,4.99,NULL"},
		{"dec*double", func(t testing.TB) planner.Expr { return call(t, "*", col("m"), lit(2.0)) }, "DOUBLE", "24.68,-0.1,1.9999999998E8,NULL"},
		{"dec neg", func(t testing.TB) planner.Expr { return call(t, "neg", col("m")) }, "DECIMAL(10, 2)", "-12.34,0.05,-99999999.99,NULL"},
		// comparison and logic
		{"int<lit", func(t testing.TB) planner.Expr { return call(t, "<", col("i"), lit(0)) }, "BOOLEAN", "FALSE,TRUE,FALSE,NULL"},
		{"lit<int", func(t testing.TB) planner.Expr { return call(t, "<", lit(0), col("i")) }, "BOOLEAN", "TRUE,FALSE,TRUE,NULL"},
		{"int=bigint", func(t testing.TB) planner.Expr { return call(t, "=", col("i"), col("b")) }, "BOOLEAN", "FALSE,FALSE,FALSE,NULL"},
		{"dec>=int", func(t testing.TB) planner.Expr { return call(t, ">=", col("m"), lit(12)) }, "BOOLEAN", "TRUE,FALSE,TRUE,NULL"},
		{"str<>", func(t testing.TB) planner.Expr { return call(t, "<>", col("s"), lit("Hello")) }, "BOOLEAN", "FALSE,TRUE,TRUE,NULL"},
		{"ts>str", func(t testing.TB) planner.Expr { return call(t, ">", col("t"), lit("1970-01-01")) }, "BOOLEAN", "TRUE,FALSE,FALSE,NULL"},
		{"bool=", func(t testing.TB) planner.Expr { return call(t, "=", col("f"), lit(true)) }, "BOOLEAN", "TRUE,FALSE,TRUE,NULL"},
		{"and3vl", func(t testing.TB) planner.Expr { return call(t, "and", col("f"), lit(nil)) }, "BOOLEAN", "NULL,FALSE,NULL,NULL"},
		{"or3vl", func(t testing.TB) planner.Expr { return call(t, "or", col("f"), lit(nil)) }, "BOOLEAN", "TRUE,NULL,TRUE,NULL"},
		{"not", func(t testing.TB) planner.Expr { return call(t, "not", col("f")) }, "BOOLEAN", "FALSE,TRUE,FALSE,NULL"},
		{"is_null", func(t testing.TB) planner.Expr { return call(t, "is_null", col("s")) }, "BOOLEAN NOT NULL", "FALSE,FALSE,FALSE,TRUE"},
		{"is_not_null", func(t testing.TB) planner.Expr { return call(t, "is_not_null", col("m")) }, "BOOLEAN NOT NULL", "TRUE,TRUE,TRUE,FALSE"},
		{"is_true", func(t testing.TB) planner.Expr { return call(t, "is_true", col("f")) }, "BOOLEAN NOT NULL", "TRUE,FALSE,TRUE,FALSE"},
		{"is_not_false", func(t testing.TB) planner.Expr { return call(t, "is_not_false", col("f")) }, "BOOLEAN NOT NULL", "TRUE,FALSE,TRUE,TRUE"},
		{"guarded div and", func(t testing.TB) planner.Expr {
			return call(t, "and", call(t, "<>", col("z"), lit(0)), call(t, ">", call(t, "/", col("i"), col("z")), lit(0)))
		}, "BOOLEAN", "FALSE,FALSE,FALSE,NULL"},
		{"in consts", func(t testing.TB) planner.Expr { return call(t, "in", col("i"), lit(7), lit(1)) }, "BOOLEAN", "TRUE,FALSE,FALSE,NULL"},
		{"in with null", func(t testing.TB) planner.Expr { return call(t, "in", col("i"), lit(7), lit(nil)) }, "BOOLEAN", "TRUE,NULL,NULL,NULL"},
		{"not in", func(t testing.TB) planner.Expr { return call(t, "not_in", col("s"), lit("Hello"), lit("x")) }, "BOOLEAN", "FALSE,TRUE,TRUE,NULL"},
		{"in columns", func(t testing.TB) planner.Expr { return call(t, "in", col("i"), col("z"), lit(-7)) }, "BOOLEAN", "FALSE,TRUE,FALSE,NULL"},
		{"in mixed numeric", func(t testing.TB) planner.Expr { return call(t, "in", col("b"), lit(10), lit("dec:-3.0")) }, "BOOLEAN", "TRUE,TRUE,FALSE,NULL"},
		{"like prefix", func(t testing.TB) planner.Expr { return call(t, "like", col("s"), lit("He%")) }, "BOOLEAN", "TRUE,FALSE,FALSE,NULL"},
		{"like general", func(t testing.TB) planner.Expr { return call(t, "like", col("s"), lit("%w_rld%")) }, "BOOLEAN", "FALSE,TRUE,FALSE,NULL"},
		{"like escape", func(t testing.TB) planner.Expr { return call(t, "like", col("s"), lit("a!_b!%_"), lit("!")) }, "BOOLEAN", "FALSE,FALSE,TRUE,NULL"},
		{"not like", func(t testing.TB) planner.Expr { return call(t, "not_like", col("s"), lit("%l%")) }, "BOOLEAN", "FALSE,FALSE,TRUE,NULL"},
		{"like column pattern", func(t testing.TB) planner.Expr { return call(t, "like", lit("12"), col("u")) }, "BOOLEAN", "TRUE,FALSE,FALSE,FALSE"},
		// conditional
		{"case", func(t testing.TB) planner.Expr {
			return call(t, "case", call(t, ">", col("i"), lit(0)), lit("pos"), call(t, "<", col("i"), lit(0)), lit("neg"), lit(nil))
		}, "STRING", "'pos','neg','pos',NULL"},
		{"case guarded division", func(t testing.TB) planner.Expr {
			return call(t, "case", call(t, "=", col("z"), lit(0)), lit(-1), call(t, "/", col("i"), col("z")))
		}, "INT", "-1,-3,-1,NULL"},
		{"case mixed numeric", func(t testing.TB) planner.Expr {
			return call(t, "case", col("f"), col("i"), col("m"))
		}, "DECIMAL(12, 2)", "7.00,-0.05,2147483647.00,NULL"},
		{"if", func(t testing.TB) planner.Expr { return call(t, "if", col("f"), lit(1), lit(2)) }, "INT NOT NULL", "1,2,1,2"},
		{"nullif", func(t testing.TB) planner.Expr { return call(t, "nullif", col("z"), lit(0)) }, "INT", "NULL,2,NULL,NULL"},
		{"coalesce", func(t testing.TB) planner.Expr { return call(t, "coalesce", col("s"), lit("none")) }, "STRING NOT NULL", "'Hello','  wörld  ','a_b%c','none'"},
		{"coalesce nulls", func(t testing.TB) planner.Expr { return call(t, "coalesce", lit(nil), col("i"), col("b")) }, "BIGINT", "7,-7,2147483647,NULL"},
		// strings
		{"upper", func(t testing.TB) planner.Expr { return call(t, "upper", col("s")) }, "STRING", "'HELLO','  WÖRLD  ','A_B%C',NULL"},
		{"lower", func(t testing.TB) planner.Expr { return call(t, "lower", col("s")) }, "STRING", "'hello','  wörld  ','a_b%c',NULL"},
		{"concat", func(t testing.TB) planner.Expr { return call(t, "||", col("s"), lit("!")) }, "STRING", "'Hello!','  wörld  !','a_b%c!',NULL"},
		{"concat null", func(t testing.TB) planner.Expr { return call(t, "concat", lit("a"), col("s"), lit("b")) }, "STRING", "'aHellob','a  wörld  b','aa_b%cb',NULL"},
		{"concat_ws", func(t testing.TB) planner.Expr { return call(t, "concat_ws", lit("-"), lit("a"), col("s")) }, "STRING NOT NULL", "'a-Hello','a-  wörld  ','a-a_b%c','a'"},
		{"substring", func(t testing.TB) planner.Expr { return call(t, "substring", col("s"), lit(2), lit(3)) }, "STRING", "'ell',' wö','_b%',NULL"},
		{"substring neg", func(t testing.TB) planner.Expr { return call(t, "substring", col("s"), lit(-3)) }, "STRING", "'llo','d  ','b%c',NULL"},
		{"substring bad len", func(t testing.TB) planner.Expr { return call(t, "substring", col("s"), lit(1), lit(-1)) }, "STRING", "NULL,NULL,NULL,NULL"},
		{"char_length", func(t testing.TB) planner.Expr { return call(t, "character_length", col("s")) }, "INT", "5,9,5,NULL"},
		{"trim", func(t testing.TB) planner.Expr { return call(t, "trim", col("s")) }, "STRING", "'Hello','wörld','a_b%c',NULL"},
		{"ltrim", func(t testing.TB) planner.Expr { return call(t, "ltrim", col("s")) }, "STRING", "'Hello','wörld  ','a_b%c',NULL"},
		{"trim chars", func(t testing.TB) planner.Expr { return call(t, "trim", col("s"), lit("Hoa"), lit("leading")) }, "STRING", "'ello','  wörld  ','_b%c',NULL"},
		{"replace", func(t testing.TB) planner.Expr { return call(t, "replace", col("s"), lit("l"), lit("L")) }, "STRING", "'HeLLo','  wörLd  ','a_b%c',NULL"},
		{"position", func(t testing.TB) planner.Expr { return call(t, "position", lit("r"), col("s")) }, "INT", "0,5,0,NULL"},
		// math
		{"abs", func(t testing.TB) planner.Expr { return call(t, "abs", col("m")) }, "DECIMAL(10, 2)", "12.34,0.05,99999999.99,NULL"},
		{"abs int", func(t testing.TB) planner.Expr { return call(t, "abs", col("i")) }, "INT", "7,7,2147483647,NULL"},
		{"round double", func(t testing.TB) planner.Expr { return call(t, "round", col("d"), lit(2)) }, "DOUBLE", "1.5,-2.68,1.0E20,NULL"},
		{"round double 0", func(t testing.TB) planner.Expr { return call(t, "round", col("d")) }, "DOUBLE", "2.0,-3.0,1.0E20,NULL"},
		{"round dec", func(t testing.TB) planner.Expr { return call(t, "round", col("m"), lit(1)) }, "DECIMAL(10, 1)", "12.3,-0.1,100000000.0,NULL"},
		{"round dec neg", func(t testing.TB) planner.Expr { return call(t, "round", col("m"), lit(-1)) }, "DECIMAL(9, 0)", "10,0,100000000,NULL"},
		{"round int", func(t testing.TB) planner.Expr { return call(t, "round", col("i"), call(t, "neg", lit(1))) }, "INT", "10,-10,-2147483646,NULL"},
		{"floor dec", func(t testing.TB) planner.Expr { return call(t, "floor", col("m")) }, "DECIMAL(9, 0)", "12,-1,99999999,NULL"},
		{"ceil dec", func(t testing.TB) planner.Expr { return call(t, "ceiling", col("m")) }, "DECIMAL(9, 0)", "13,0,100000000,NULL"},
		{"floor double", func(t testing.TB) planner.Expr { return call(t, "floor", col("d")) }, "DOUBLE", "1.0,-3.0,1.0E20,NULL"},
		{"ceil int", func(t testing.TB) planner.Expr { return call(t, "ceil", col("i")) }, "INT", "7,-7,2147483647,NULL"},
		{"power", func(t testing.TB) planner.Expr { return call(t, "power", col("i"), lit(2)) }, "DOUBLE", "49.0,49.0,4.6116860141324206E18,NULL"},
		{"sqrt", func(t testing.TB) planner.Expr { return call(t, "sqrt", col("b")) }, "DOUBLE", "3.1622776601683795,NaN,3.03700049997605E9,NULL"},
		// casts
		{"cast int->string", func(t testing.TB) planner.Expr { return cast(t, col("i"), catalog.String) }, "STRING", "'7','-7','2147483647',NULL"},
		{"cast double->int", func(t testing.TB) planner.Expr { return cast(t, col("d"), catalog.Int) }, "INT", "1,-2,2147483647,NULL"},
		{"cast bigint->int", func(t testing.TB) planner.Expr { return cast(t, col("b"), catalog.Int) }, "INT", "10,-3,-1,NULL"},
		{"cast dec->int", func(t testing.TB) planner.Expr { return cast(t, col("m"), catalog.Int) }, "INT", "12,0,99999999,NULL"},
		{"cast dec->dec", func(t testing.TB) planner.Expr { return cast(t, col("m"), catalog.Decimal(5, 1)) }, "DECIMAL(5, 1)", "12.3,-0.1,NULL,NULL"},
		{"cast double->dec", func(t testing.TB) planner.Expr { return cast(t, col("d"), catalog.Decimal(6, 2)) }, "DECIMAL(6, 2)", "1.50,-2.68,NULL,NULL"},
		{"cast dec->string", func(t testing.TB) planner.Expr { return cast(t, col("m"), catalog.String) }, "STRING", "'12.34','-0.05','99999999.99',NULL"},
		{"cast double->string", func(t testing.TB) planner.Expr { return cast(t, col("d"), catalog.String) }, "STRING", "'1.5','-2.675','1.0E20',NULL"},
		{"cast bool->string", func(t testing.TB) planner.Expr { return cast(t, col("f"), catalog.String) }, "STRING", "'TRUE','FALSE','TRUE',NULL"},
		{"cast ts->string", func(t testing.TB) planner.Expr { return cast(t, col("t"), catalog.String) }, "STRING", "'2024-02-29 13:45:01.250','1970-01-01 00:00:00.000','1969-12-31 23:59:59.999',NULL"},
		{"cast string->varchar(3)", func(t testing.TB) planner.Expr {
			return cast(t, col("s"), catalog.Type{Kind: catalog.KindString, Length: 3})
		}, "VARCHAR(3)", "'Hel','  w','a_b',NULL"},
		{"try_cast string->int", func(t testing.TB) planner.Expr {
			c, _ := planner.ResolveTryCast(col("u"), catalog.Int)
			return c
		}, "INT", "12,3,NULL,NULL"},
		{"try_cast string->bool", func(t testing.TB) planner.Expr {
			c, _ := planner.ResolveTryCast(col("u"), catalog.Boolean)
			return c
		}, "BOOLEAN", "NULL,NULL,NULL,TRUE"},
		{"cast string->ts", func(t testing.TB) planner.Expr { return cast(t, lit("2024-01-02 03:04"), catalog.Timestamp) }, "TIMESTAMP(3) NOT NULL", "2024-01-02 03:04:00.000,2024-01-02 03:04:00.000,2024-01-02 03:04:00.000,2024-01-02 03:04:00.000"},
		{"cast string->dec", func(t testing.TB) planner.Expr { return cast(t, lit("-1.255"), catalog.Decimal(4, 2)) }, "DECIMAL(4, 2)", "-1.26,-1.26,-1.26,-1.26"},
		{"cast string->double", func(t testing.TB) planner.Expr { return cast(t, lit(" 1e3 "), catalog.Double) }, "DOUBLE NOT NULL", "1000.0,1000.0,1000.0,1000.0"},
		{"cast bool->int", func(t testing.TB) planner.Expr { return cast(t, col("f"), catalog.Int) }, "INT", "1,0,1,NULL"},
		// the exact kernels (no row can fail) and the unchecked casts
		{"dec-dec", func(t testing.TB) planner.Expr { return call(t, "-", lit("dec:0.005"), col("m")) }, "DECIMAL(12, 3)", "-12.335,0.055,-99999999.985,NULL"},
		{"dec*bigint", func(t testing.TB) planner.Expr { return call(t, "*", lit("dec:-0.908"), col("b")) }, "DECIMAL(22, 3)", "-9.080,2.724,-8374821809464136432.756,NULL"},
		{"dec*dec cols", func(t testing.TB) planner.Expr { return call(t, "*", col("m"), col("m")) }, "DECIMAL(20, 4)", "152.2756,0.0025,9999999998000000.0001,NULL"},
		{"cast bigint->dec", func(t testing.TB) planner.Expr { return cast(t, col("b"), catalog.Decimal(21, 2)) }, "DECIMAL(21, 2)", "10.00,-3.00,9223372036854775807.00,NULL"},
		{"cast int->dec wide", func(t testing.TB) planner.Expr { return cast(t, col("i"), catalog.Decimal(12, 2)) }, "DECIMAL(12, 2)", "7.00,-7.00,2147483647.00,NULL"},
		{"cast dec->wider dec", func(t testing.TB) planner.Expr { return cast(t, col("m"), catalog.Decimal(23, 2)) }, "DECIMAL(23, 2)", "12.34,-0.05,99999999.99,NULL"},
		{"cast int->bigint", func(t testing.TB) planner.Expr { return cast(t, col("i"), catalog.BigInt) }, "BIGINT", "7,-7,2147483647,NULL"},
		{"cast bigint->int", func(t testing.TB) planner.Expr { return cast(t, col("b"), catalog.Int) }, "INT", "10,-3,-1,NULL"},
		{"cast int->double", func(t testing.TB) planner.Expr { return cast(t, col("i"), catalog.Double) }, "DOUBLE", "7.0,-7.0,2.147483647E9,NULL"},
		{"cast bigint->double", func(t testing.TB) planner.Expr { return cast(t, col("b"), catalog.Double) }, "DOUBLE", "10.0,-3.0,9.223372036854776E18,NULL"},
		{"cast int->dec", func(t testing.TB) planner.Expr { return cast(t, col("i"), catalog.Decimal(5, 2)) }, "DECIMAL(5, 2)", "7.00,-7.00,NULL,NULL"},
		{"cast null", func(t testing.TB) planner.Expr { return cast(t, lit(nil), catalog.Int) }, "INT", "NULL,NULL,NULL,NULL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.e(t)
			if got := e.Type().String(); got != tc.wantType {
				t.Errorf("type of %s = %s, want %s", e, got, tc.wantType)
			}
			got, err := evalExpr(t, e)
			if err != nil {
				t.Fatalf("eval %s: %v", e, err)
			}
			if got != tc.want {
				t.Errorf("eval %s\n got %s\nwant %s", e, got, tc.want)
			}
		})
	}
}

func TestRuntimeErrors(t *testing.T) {
	tests := []struct {
		name string
		e    func(t testing.TB) planner.Expr
		want string
	}{
		{"int div zero", func(t testing.TB) planner.Expr { return call(t, "/", col("i"), col("z")) }, "division by zero"},
		{"int mod zero lit", func(t testing.TB) planner.Expr { return call(t, "%", col("b"), lit(0)) }, "division by zero"},
		{"dec div zero", func(t testing.TB) planner.Expr { return call(t, "/", col("m"), lit("dec:0")) }, "division by zero"},
		{"bad cast", func(t testing.TB) planner.Expr { return cast(t, col("u"), catalog.Int) }, "cannot cast 'x' to INT"},
		{"bad const cast", func(t testing.TB) planner.Expr { return cast(t, lit("abc"), catalog.BigInt) }, "cannot cast 'abc' to BIGINT"},
		{"bad escape", func(t testing.TB) planner.Expr { return call(t, "like", col("s"), col("u"), lit("ab")) }, "single character"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.e(t)
			_, err := evalExpr(t, e)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("eval %s: error %v, want %q", e, err, tc.want)
			}
		})
	}
}
