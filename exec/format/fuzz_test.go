package format

import (
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// checkDecoder feeds line to a decoder and checks its contract: no panic; a
// record is appended exactly when Decode reports it, and never on error;
// nothing leaks; every STRING value is valid UTF-8.
func checkDecoder(t *testing.T, line []byte, newDec func(rb *array.RecordBuilder) (Decoder, error)) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
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
