package format

import (
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/decimal128"
)

func TestCastBoolAndInt(t *testing.T) {
	for in, want := range map[string]bool{
		"true": true, " T ": true, "YES": true, "y": true, "1": true,
		"false": false, "f": false, "No": false, "n": false, "0\t": false,
	} {
		if got, err := CastBool(in); err != nil || got != want {
			t.Errorf("CastBool(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "tru", "yess", "2", "truth"} {
		if _, err := CastBool(bad); err == nil || err.Error() != "not a boolean" {
			t.Errorf("CastBool(%q) error = %v", bad, err)
		}
	}
	ints := []struct {
		in   string
		bits int
		want int64
		err  string
	}{
		{"12", 32, 12, ""}, {" -7 ", 32, -7, ""}, {"+5", 64, 5, ""}, {"12.7", 32, 12, ""}, {"-12.7", 32, -12, ""},
		{"12.", 32, 12, ""}, {".5", 32, 0, ""}, {"-.5", 64, 0, ""}, {"2147483647", 32, 2147483647, ""},
		{"9223372036854775807", 64, math.MaxInt64, ""}, {"-9223372036854775808", 64, math.MinInt64, ""},
		{"2147483648", 32, 0, "out of range"}, {"9223372036854775808", 64, 0, "out of range"},
		{"2147483648.5", 32, 0, "out of range"},
		{"", 32, 0, "not an integer"}, {"apple", 32, 0, "not an integer"}, {".", 32, 0, "not an integer"},
		{"-", 32, 0, "not an integer"}, {"1.2.3", 32, 0, "not an integer"}, {"1e3", 32, 0, "not an integer"},
		{"12 .5", 32, 0, "not an integer"},
	}
	for _, c := range ints {
		got, err := CastInt(c.in, c.bits)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("CastInt(%q, %d) = %d, %v; want error %q", c.in, c.bits, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("CastInt(%q, %d) = %d, %v; want %d", c.in, c.bits, got, err, c.want)
		}
	}
}

func TestCastDouble(t *testing.T) {
	for in, want := range map[string]float64{
		" 1e3 ": 1000, "-2.5": -2.5, ".5": 0.5, "1.": 1, "Infinity": math.Inf(1), "-Infinity": math.Inf(-1),
		"+Infinity": math.Inf(1), "0x1.8p1": 3, "-0X10P-4": -1,
		// beyond DOUBLE's range: infinite or zero, as Java's parseDouble
		"1e999": math.Inf(1), "-1e999": math.Inf(-1), "0x1p99999": math.Inf(1), "1e-999": 0,
		// Java's type suffix
		"1.5d": 1.5, "2F": 2, "1e3D": 1000, "0x1p1f": 2, "0x1.8p1d": 3,
	} {
		if got, err := CastDouble(in); err != nil || got != want {
			t.Errorf("CastDouble(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if got, err := CastDouble("NaN"); err != nil || !math.IsNaN(got) {
		t.Errorf("CastDouble(NaN) = %v, %v", got, err)
	}
	// Java's Double.parseDouble rejects Go's inf/nan spellings and underscores.
	for _, bad := range []string{"", "inf", "nan", "infinity", "1_000", "0x_1p0", "0x10", "1e", "abc", "1..2", "d", "1dd", "NaNd", "Infinityf", "0x1f", "1.5x"} {
		if _, err := CastDouble(bad); err == nil || err.Error() != "not a number" {
			t.Errorf("CastDouble(%q) error = %v", bad, err)
		}
	}
}

func TestCastDecimal(t *testing.T) {
	cases := []struct {
		in          string
		prec, scale int32
		want        string // "" for overflow, "!" for malformed
	}{
		{"-1.255", 4, 2, "-1.26"}, {"12.34", 10, 2, "12.34"}, {" 1e3 ", 10, 2, "1000.00"}, {"1.5E-1", 5, 2, "0.15"},
		{".5", 3, 0, "1"}, {"-.5", 3, 0, "-1"}, {"0.4", 3, 0, "0"}, {"1.", 3, 1, "1.0"}, {"+7", 3, 0, "7"},
		{"99999999.99", 10, 2, "99999999.99"}, {"99999999.995", 10, 2, ""}, {"1000", 3, 0, ""},
		{"1e200000", 10, 2, ""}, {"0e999999999999", 10, 2, "0.00"}, {"1e-200000", 10, 2, "0.00"},
		{"12345678901234567890123456789012345678", 38, 0, "12345678901234567890123456789012345678"},
		{"123456789012345678901234567890.123456789", 38, 2, "123456789012345678901234567890.12"},
		{"5" + strings.Repeat("0", 85) + "e-85", 5, 0, "5"}, {"5" + strings.Repeat("0", 85) + "e-86", 5, 0, "1"},
		{"", 5, 2, "!"}, {".", 5, 2, "!"}, {"e5", 5, 2, "!"}, {"1e", 5, 2, "!"}, {"1e 5", 5, 2, "!"}, {"1.2.3", 5, 2, "!"},
		{"abc", 5, 2, "!"}, {"-", 5, 2, "!"}, {"1,5", 5, 2, "!"},
	}
	for _, c := range cases {
		n, err := CastDecimal(c.in, c.prec, c.scale)
		switch c.want {
		case "":
			if err != ErrDecimalOverflow {
				t.Errorf("CastDecimal(%q, %d, %d) = %v, %v; want overflow", c.in, c.prec, c.scale, n, err)
			}
		case "!":
			if err == nil || err.Error() != "not a decimal number" {
				t.Errorf("CastDecimal(%q) error = %v", c.in, err)
			}
		default:
			if err != nil {
				t.Errorf("CastDecimal(%q, %d, %d): %v", c.in, c.prec, c.scale, err)
			} else if got := string(AppendDecimal(nil, n, c.scale)); got != c.want {
				t.Errorf("CastDecimal(%q, %d, %d) = %s, want %s", c.in, c.prec, c.scale, got, c.want)
			}
		}
	}
	if n, _ := CastDecimal("-0.005", 5, 3); n != decimal128.FromI64(-5) {
		t.Errorf("unscaled -0.005 = %v", n)
	}
}

func TestCastTimestamp(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"2024-02-29 13:45:01.25", "2024-02-29 13:45:01.250"},
		{"2024-02-29T13:45", "2024-02-29 13:45:00.000"},
		{"1900-1-2", "1900-01-02 00:00:00.000"},
		{" 2024-1-2 3:4:5.6 ", "2024-01-02 03:04:05.600"},
		{"1969-12-31 23:59:59.999999", "1969-12-31 23:59:59.999"},
		{"0001-01-01 00:00:00", "0001-01-01 00:00:00.000"},
	} {
		ms, err := CastTimestamp(tc.in)
		if err != nil {
			t.Fatalf("CastTimestamp(%q): %v", tc.in, err)
		}
		if got := string(AppendTimestamp(nil, ms, StyleSQL)); got != tc.want {
			t.Errorf("round trip %q = %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"2023-02-29", "2024-13-01", "2024-01-01 24:00", "x", "2024-01-01 10", "2024-01-01 10:00:00.",
		"2024-01-01T10:00Z", "24-01-01", "2024-01-01 10:00:00.1234567891"} {
		if _, err := CastTimestamp(bad); err == nil || err.Error() != "not a timestamp (expected yyyy-MM-dd HH:mm:ss.SSS)" {
			t.Errorf("CastTimestamp(%q) error = %v", bad, err)
		}
	}
	// Years outside 0..9999 (beyond TIMESTAMP's range) keep four digits and a sign.
	for ms, want := range map[int64]string{
		-62198755200000: "-0001-01-01 00:00:00.000", 253402300800000: "10000-01-01 00:00:00.000",
	} {
		if got := string(AppendTimestamp(nil, ms, StyleSQL)); got != want {
			t.Errorf("AppendTimestamp(%d) = %s, want %s", ms, got, want)
		}
	}
}

// The decoders' (strict) rules on the shared parsers, with their reasons.
func TestDecoderParseReasons(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{" 12\r", ""}, {"", "invalid INT: empty value"}, {"12.5", "invalid INT"}, {"2147483648", "INT out of range"}, {"+", "invalid INT"},
	} {
		_, st := parseInt([]byte(c.in), math.MinInt32, math.MaxInt32)
		if got := intReason(st, "INT"); got != c.want {
			t.Errorf("parseInt(%q) reason %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"1.5", ""}, {"0x1p-2", ""}, {"-NaN", ""}, {"inf", "invalid DOUBLE"}, {" ", "invalid DOUBLE: empty value"},
	} {
		_, st := parseDouble([]byte(c.in))
		if got := doubleReason(st); got != c.want {
			t.Errorf("parseDouble(%q) reason %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"1e3", ""}, {"1e 3", "invalid DECIMAL(6, 2)"}, {"", "invalid DECIMAL(6, 2): empty value"},
		{"10000", "value out of range for DECIMAL(6, 2)"}, {"1e100001", "value out of range for DECIMAL(6, 2)"},
	} {
		_, st := parseDecimal([]byte(c.in), 6, 2)
		if got := decimalReason(st, 6, 2); got != c.want {
			t.Errorf("parseDecimal(%q) reason %q, want %q", c.in, got, c.want)
		}
	}
	if _, reason := parseTimestamp([]byte("2024-02-30 00:00"), false, false); reason != "invalid TIMESTAMP(3): date or time field out of range" {
		t.Errorf("range reason = %q", reason)
	}
	if _, reason := parseTimestamp([]byte("2024-01-01 00:00"), true, true); !strings.Contains(reason, "= 'SQL'") {
		t.Errorf("want an SQL hint, got %q", reason)
	}
}
