package format

import (
	"fmt"
	"github.com/streamsql/streamsql/internal/memtest"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
)

// TestJSONFastPaths: keys matched in place (in column order, out of
// order, by case, escaped), integers parsed in place (at their bounds,
// past them, followed by what may end a value) and strings referenced in
// place (plain, escaped, non-ASCII, ill-formed) decode as the general path
// does, in both kinds of decoder.
func TestJSONFastPaths(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	schema := catalog.Schema{
		{Name: "a", Type: catalog.BigInt}, {Name: "Name", Type: catalog.String},
		{Name: "i", Type: catalog.Int}, {Name: "t", Type: catalog.TinyInt}, {Name: "s", Type: catalog.String},
	}
	lines := []string{
		`{"a":1,"Name":"x","i":2,"t":3,"s":"y"}`,
		`{"a":-5,"i":-7,"t":-9}`,
		`{"s":"y","t":-128,"i":-2147483648,"Name":"x","a":-9223372036854775808}`,
		`{"a":9223372036854775807,"i":2147483647,"t":127}`,
		`{"A":5,"name":"case","zz":"skip","S":"up"}`,
		`{"\u0061":6,"N\u0061me":"esc","s":"tab\there \"q\" \u00e9"}`,
		`{"a":7 , "s":"caf` + "\xc3\xa9" + `", "Name":"bad` + "\xff" + `"}`,
		`{"a":8,"a":9,"s":"first","s":"second"}`,
		`{"a":0012,"t":-0}`,
		`{"a":1,"i":2147483648}`,
		`{"t":128}`,
		`{"a":9223372036854775808}`,
		`{"a":-9223372036854775809}`,
		`{"a":12x}`,
		`{"a":1.0}`,
		`{"a":1e2}`,
		`{"a":-}`,
		`{"a":1]`,
		`{"a":"12","i":"7"}`,
		`{"Name":null,"s":""}`,
	}
	want := []string{
		"1|x|2|3|y",
		"-5|NULL|-7|-9|NULL",
		"-9223372036854775808|x|-2147483648|-128|y",
		"9223372036854775807|NULL|2147483647|127|NULL",
		"5|case|NULL|NULL|up",
		"6|esc|NULL|NULL|tab\there \"q\" \u00e9",
		"7|bad\uFFFD|NULL|NULL|caf\u00e9",
		"9|NULL|NULL|NULL|second",
		"12|NULL|NULL|0|NULL",
		"12|NULL|7|NULL|NULL",
		"NULL|NULL|NULL|NULL|",
	}
	wantErrs := []string{
		`INT out of range in column "i" (value "2147483648")`,
		`TINYINT out of range in column "t" (value "128")`,
		`BIGINT out of range in column "a" (value "9223372036854775808")`,
		`BIGINT out of range in column "a" (value "-9223372036854775809")`,
		`invalid JSON: invalid value at character 6 (value "{\"a\":12x}")`,
		`invalid BIGINT in column "a" (value "1.0")`,
		`invalid BIGINT in column "a" (value "1e2")`,
		`invalid JSON: invalid value at character 6 (value "{\"a\":-}")`,
		`invalid JSON: expected ',' or '}' at character 7 (value "{\"a\":1]")`,
	}
	rb := array.NewRecordBuilder(mem, schema.Arrow())
	defer rb.Release()
	got, errs := decodeAll(t, mem, schema, func(rb *array.RecordBuilder) Decoder {
		d, err := NewJSONDecoder(schema, JSONOptions{}, rb)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}, lines)
	check := func(what string, got, errs []string) {
		t.Helper()
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: rows:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if strings.Join(errs, "\n") != strings.Join(wantErrs, "\n") {
			t.Errorf("%s: errors:\n%s\nwant:\n%s", what, strings.Join(errs, "\n"), strings.Join(wantErrs, "\n"))
		}
	}
	check("builder decoder", got, errs)
	for _, batch := range []int{1, 3, 1024} {
		got, errs = decodeBatches(t, func() batchDecoder {
			d, err := NewJSONBatchDecoder(schema, JSONOptions{}, mem, mem)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}, lines, batch)
		check(fmt.Sprintf("batch decoder, batches of %d", batch), got, errs)
	}
}

// TestBatchDecoderStrings: a batch decoder's STRING columns (written
// directly, not by a builder) hold every value and NULL across batches
// that outgrow what they reserved (more rows, longer values), with NULLs
// first, last, only and never; nothing leaks.
func TestBatchDecoderStrings(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	schema := catalog.Schema{{Name: "n", Type: catalog.BigInt}, {Name: "s", Type: catalog.String}, {Name: "u", Type: catalog.String}}
	var lines, want []string
	for i := 0; i < 3000; i++ {
		s, sv := fmt.Sprintf(`"v%d"`, i), fmt.Sprintf("v%d", i)
		if i%7 == 3 || i >= 2000 && i < 2100 {
			s, sv = "null", "NULL"
		}
		if i > 2500 { // longer values than the average so far
			s, sv = `"`+strings.Repeat("x", i%300)+`"`, strings.Repeat("x", i%300)
		}
		lines = append(lines, fmt.Sprintf(`{"n":%d,"s":%s,"u":null}`, i, s))
		want = append(want, fmt.Sprintf("%d|%s|NULL", i, sv))
	}
	for _, batch := range []int{1, 100, 1000, 5000} {
		got, errs := decodeBatches(t, func() batchDecoder {
			d, err := NewJSONBatchDecoder(schema, JSONOptions{}, mem, mem)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}, lines, batch)
		if len(errs) > 0 {
			t.Fatalf("batches of %d: %v", batch, errs)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			for i := range want {
				if i >= len(got) || got[i] != want[i] {
					t.Fatalf("batches of %d: row %d is %q, want %q (%d rows)", batch, i, got[min(i, len(got)-1)], want[i], len(got))
				}
			}
			t.Fatalf("batches of %d: %d rows, want %d", batch, len(got), len(want))
		}
	}
}
