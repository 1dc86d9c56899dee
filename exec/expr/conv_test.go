package expr

import (
	"math"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/decimal128"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec/format"
	"github.com/streamsql/streamsql/planner"
)

// TestLiteralValidUTF8: a string literal holding ill-formed UTF-8 (a script
// in another encoding) is repaired like decoded input.
func TestLiteralValidUTF8(t *testing.T) {
	got, err := evalExpr(t, lit("caf\xE9"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "'caf\uFFFD','caf\uFFFD','caf\uFFFD','caf\uFFFD'"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestDecToFloat64: DECIMAL to DOUBLE gives the nearest double, as Java's
// BigDecimal.doubleValue(): the reference is strconv.ParseFloat of the
// decimal's text, which is correctly rounded.
func TestDecToFloat64(t *testing.T) {
	check := func(n decimal128.Num, scale int32) {
		t.Helper()
		text := string(format.AppendDecimal(nil, n, scale))
		want, _ := strconv.ParseFloat(text, 64)
		if got := decToFloat64(n, scale); got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("%s: got %v, want %v", text, got, want)
		}
	}
	// Every DECIMAL(5, 2), DECIMAL(6, 4) and a range of DECIMAL(10, 2)
	// (about 10% of these were off in the last digit).
	for v := int64(-99999); v <= 99999; v++ {
		check(decimal128.FromI64(v), 2)
		check(decimal128.FromI64(v), 4)
		check(decimal128.FromI64(v*10007+12345), 2)
	}
	rng := rand.New(rand.NewSource(8))
	for i := 0; i < 200000; i++ {
		var n decimal128.Num
		switch i % 3 {
		case 0: // up to 53 bits: the fast path
			n = decimal128.FromI64(rng.Int63n(1<<53) - 1<<52)
		case 1: // up to 64 bits
			n = decimal128.FromU64(rng.Uint64())
		default: // up to 38 digits
			digits := make([]byte, 1+rng.Intn(38))
			for k := range digits {
				digits[k] = byte('0' + rng.Intn(10))
			}
			n = dec(string(digits), 38, 0)
		}
		if rng.Intn(2) == 0 {
			n = n.Negate()
		}
		check(n, int32(rng.Intn(39)))
	}
	for _, c := range []struct {
		text  string
		p, sc int
		want  float64
	}{
		{"0.3", 1, 1, 0.3}, {"0.7", 1, 1, 0.7}, {"-0.1", 1, 1, -0.1}, {"12.34", 4, 2, 12.34},
		{"0", 1, 0, 0}, {"99999999999999999999999999999999999999", 38, 0, 1e38},
		{"0.00000000000000000000000000000000000001", 38, 38, 1e-38},
		{"9007199254740993", 16, 0, 9007199254740992}, // 2^53 + 1: a tie, to even
	} {
		if got := decToFloat64(dec(c.text, c.p, c.sc), int32(c.sc)); got != c.want {
			t.Errorf("%s: got %v, want %v", c.text, got, c.want)
		}
	}
	// No allocation for the values of ordinary DECIMAL columns.
	big := dec("1234567890123456.78", 20, 2)
	if n := testing.AllocsPerRun(100, func() { decToFloat64(big, 2) }); n != 0 {
		t.Errorf("decToFloat64 allocates %v times per value", n)
	}
}

// TestDecimalDoubleComparison: the cases the issue reported, through CAST.
func TestDecimalDoubleComparison(t *testing.T) {
	for _, c := range []struct {
		e    func(t testing.TB) planner.Expr
		want string
	}{
		{func(t testing.TB) planner.Expr { return cast(t, lit("dec:0.3"), catalog.Double) }, "0.3,0.3,0.3,0.3"},
		{func(t testing.TB) planner.Expr { return call(t, "=", lit("dec:0.3"), lit(0.3)) }, "TRUE,TRUE,TRUE,TRUE"},
		{func(t testing.TB) planner.Expr { return call(t, "in", lit("dec:0.7"), lit(0.3), lit(0.7)) }, "TRUE,TRUE,TRUE,TRUE"},
		{func(t testing.TB) planner.Expr { return cast(t, col("m"), catalog.Double) }, "12.34,-0.05,9.999999999E7,NULL"},
	} {
		e := c.e(t)
		got, err := evalExpr(t, e)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s: got %s, want %s", e, got, c.want)
		}
	}
}

// TestCaseMappingFull: UPPER and LOWER use Unicode's full case mappings, as
// Java (and so Flink) does, not one rune for one rune.
func TestCaseMappingFull(t *testing.T) {
	for _, c := range []struct{ fn, in, want string }{
		{"upper", "straße", "STRASSE"},
		{"upper", "ﬁne", "FINE"},
		{"upper", "ŉ", "ʼN"},
		{"upper", "ǆ", "Ǆ"},
		{"upper", "wörld", "WÖRLD"},
		{"lower", "ΟΔΟΣ ΟΔΟΣ.", "οδος οδος."}, // final sigma
		{"lower", "İ", "i̇"},                  // i and a combining dot, as Java's root locale
		{"lower", "STRASSE", "strasse"},
	} {
		e := call(t, c.fn, lit(c.in))
		got, err := evalExpr(t, e)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Repeat(",'"+c.want+"'", 4)[1:]
		if got != want {
			t.Errorf("%s(%q) = %s, want %s", c.fn, c.in, got, want)
		}
	}
}

// TestCastHugeDouble: CAST(STRING AS DOUBLE) of a number beyond the range
// is infinite, as Java's Double.parseDouble gives (it was an error).
func TestCastHugeDouble(t *testing.T) {
	for in, want := range map[string]string{"1e999": "Infinity", "-1e999": "-Infinity", "1e-999": "0.0", "2.5d": "2.5"} {
		got, err := evalExpr(t, cast(t, lit(in), catalog.Double))
		if err != nil {
			t.Fatalf("CAST('%s' AS DOUBLE): %v", in, err)
		}
		if w := strings.Repeat(","+want, 4)[1:]; got != w {
			t.Errorf("CAST('%s' AS DOUBLE) = %s, want %s", in, got, w)
		}
	}
}
