package format

import (
	"github.com/streamsql/streamsql/internal/memtest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
)

// checkDecoder feeds line to a decoder and checks its contract: no panic; a
// record is appended exactly when Decode reports it, and never on error;
// nothing leaks; every STRING value is valid UTF-8.
func checkDecoder(t *testing.T, line []byte, newDec func(rb *array.RecordBuilder) (Decoder, error)) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	rb := array.NewRecordBuilder(mem, testSchema.Arrow())
	defer rb.Release()
	dec, err := newDec(rb)
	if err != nil {
		t.Fatal(err)
	}
	appended, err := dec.Decode(line)
	if err != nil && appended {
		t.Fatalf("Decode(%q) reported both a record and an error: %v", line, err)
	}
	rec := rb.NewRecord()
	defer rec.Release()
	want := int64(0)
	if appended {
		want = 1
	}
	if rec.NumRows() != want {
		t.Fatalf("Decode(%q) appended=%v but the builder holds %d rows", line, appended, rec.NumRows())
	}
	for i, c := range rec.Columns() {
		if int64(c.Len()) != want {
			t.Fatalf("Decode(%q): column %d has %d rows, want %d (partial row)", line, i, c.Len(), want)
		}
		if s, ok := c.(*array.String); ok && s.Len() > 0 && !utf8.ValidString(s.Value(0)) {
			t.Fatalf("Decode(%q): column %d holds invalid UTF-8 %q", line, i, s.Value(0))
		}
	}
}

func FuzzCSVDecode(f *testing.F) {
	for _, s := range []string{
		`true,1,2,1.5,3.25,hello,2024-01-01 10:00:00.000`,
		`false,-1,,NaN,0,"a,b",2024-01-01 10:00:00`,
		`,,,,,,`, `"unterminated`, "true,1,2,1.5,3.25,caf\xE9,2024-01-01 10:00:00", `1,2`, `true,1,2,1.5,3.255,"x""y",2024-13-01 00:00:00.000`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkDecoder(t, line, func(rb *array.RecordBuilder) (Decoder, error) {
			return NewCSVDecoder(testSchema, DefaultCSVOptions(), rb)
		})
	})
}

func FuzzJSONDecode(f *testing.F) {
	for _, s := range []string{
		`{"b":true,"i":1,"l":2,"d":1.5,"m":3.25,"s":"hello","t":"2024-01-01 10:00:00.000"}`,
		`{"i":null,"s":"\u00e9\n","extra":[1,{"a":2}]}`, `{"i":1e3}`, `{`, `[]`, `{"m":"1.005"}`, "{\"s\":\"\xED\xA0\x80\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkDecoder(t, line, func(rb *array.RecordBuilder) (Decoder, error) {
			return NewJSONDecoder(testSchema, JSONOptions{}, rb)
		})
	})
}

// decodeOne decodes line and returns whether it appended, the error and
// the row's text.
func decodeOne(t *testing.T, line []byte, schema catalog.Schema, newDec func(rb *array.RecordBuilder) Decoder) (bool, string, string) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	rb := array.NewRecordBuilder(mem, schema.Arrow())
	defer rb.Release()
	appended, err := newDec(rb).Decode(line)
	rec := rb.NewRecord()
	defer rec.Release()
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	return appended, msg, strings.Join(rows(rec), "\n")
}

// fastSchema has the column types the fast paths read (and a ROW, so that
// nested objects take the general path around them).
var fastSchema = catalog.Schema{
	{Name: "a", Type: catalog.BigInt}, {Name: "s", Type: catalog.String}, {Name: "i", Type: catalog.Int},
	{Name: "t", Type: catalog.TinyInt}, {Name: "Mixed", Type: catalog.String}, {Name: "sm", Type: catalog.SmallInt},
	{Name: "r", Type: catalog.Row(catalog.Column{Name: "x", Type: catalog.BigInt}, catalog.Column{Name: "y", Type: catalog.String})},
}

// FuzzJSONFastPaths: the in-place key, integer and string paths decode
// every line exactly as the general path does (the same record or the same
// error).
func FuzzJSONFastPaths(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"s":"x","i":-2,"t":3,"Mixed":"y","sm":4,"r":{"x":5,"y":"z"}}`,
		`{"MIXED":"c","A":-9223372036854775808,"i":2147483648,"t":-129}`, `{"a":12x,"s":"a\"b"}`, `{"a":0012,"s":"caf` + "\xc3\xa9" + `"}`,
		`{"a":1 ,"s" : "p" }`, `{"a":1]`, `{"s":"\u0041","\u0061":7}`, `{"a":99999999999999999999}`, `{"a":-}`, `{"a":1.5e3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		run := func(general bool) (bool, string, string) {
			return decodeOne(t, line, fastSchema, func(rb *array.RecordBuilder) Decoder {
				d, err := NewJSONDecoder(fastSchema, JSONOptions{}, rb)
				if err != nil {
					t.Fatal(err)
				}
				d.general = general
				return d
			})
		}
		fa, fe, fr := run(false)
		ga, ge, gr := run(true)
		if fa != ga || fe != ge || fr != gr {
			t.Fatalf("Decode(%q):\nfast:    %v %q %q\ngeneral: %v %q %q", line, fa, fe, fr, ga, ge, gr)
		}
	})
}

// FuzzCSVFastPaths is FuzzJSONFastPaths for CSV (with and without quotes).
func FuzzCSVFastPaths(f *testing.F) {
	schema := fastSchema[:6]
	for _, s := range []string{
		`1,x,-2,3,y,4`, `-9223372036854775808,caf` + "\xc3\xa9" + `,2147483648,-129,"q",5`, `1x,,,,,`, ` 1,a,+2,-0,b,6`,
		`1,"a,b",2,3,"c""d",4`, `1,a,2,3,b,4,`, `1,a`, `99999999999999999999,a,1,1,a,1`, "1,bad\xff,1,1,a,1",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		run := func(general bool) (bool, string, string) {
			return decodeOne(t, line, schema, func(rb *array.RecordBuilder) Decoder {
				d, err := NewCSVDecoder(schema, DefaultCSVOptions(), rb)
				if err != nil {
					t.Fatal(err)
				}
				d.general = general
				return d
			})
		}
		fa, fe, fr := run(false)
		ga, ge, gr := run(true)
		if fa != ga || fe != ge || fr != gr {
			t.Fatalf("Decode(%q):\nfast:    %v %q %q\ngeneral: %v %q %q", line, fa, fe, fr, ga, ge, gr)
		}
	})
}
