package format

import (
	"github.com/streamsql/streamsql/internal/memtest"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow/array"
)

func TestAppendValidUTF8(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"plain ascii", "plain ascii"},
		{"straße €𝄞", "straße €𝄞"},
		{"caf\xE9", "caf\uFFFD"},
		// The example of the Unicode standard (table 3-8): one U+FFFD per
		// maximal subpart.
		{"\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64", "a\uFFFD\uFFFD\uFFFDb\uFFFDc\uFFFD\uFFFDd"},
		{"\xE2\x82", "\uFFFD"},                           // truncated at the end
		{"\xE2\x82x", "\uFFFDx"},                         // truncated before ASCII
		{"\xC0\x80", "\uFFFD\uFFFD"},                     // overlong: C0 never starts a sequence
		{"\xE0\x80\x80", "\uFFFD\uFFFD\uFFFD"},           // overlong: E0 needs A0..BF next
		{"\xED\xA0\x80", "\uFFFD\uFFFD\uFFFD"},           // a surrogate
		{"\xF4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"}, // above U+10FFFF
		{"\xF0\x9F\x98", "\uFFFD"},                       // 3 of 4 bytes
		{"\xFF\xFE", "\uFFFD\uFFFD"},
	} {
		got := string(AppendValidUTF8([]byte("<"), []byte(c.in)))
		if got != "<"+c.want {
			t.Errorf("AppendValidUTF8(%q) = %q, want %q", c.in, got[1:], c.want)
		}
		if v := ValidUTF8(c.in); v != c.want {
			t.Errorf("ValidUTF8(%q) = %q, want %q", c.in, v, c.want)
		}
		// JSON output stays valid whatever a string holds.
		q := appendJSONQuoted(nil, c.in)
		if !utf8.Valid(q) || string(q) != `"`+c.want+`"` {
			t.Errorf("appendJSONQuoted(%q) = %q", c.in, q)
		}
		// A JSON string is decoded with the same rule.
		dec, _, je := appendJSONString(nil, []byte(`"`+c.in+`"`), 0)
		if je != nil || string(dec) != c.want {
			t.Errorf("appendJSONString(%q) = %q, %v", c.in, dec, je)
		}
	}
	// A \u escape of a lone surrogate is U+FFFD too.
	if dec, _, _ := appendJSONString(nil, []byte(`"\ud800x"`), 0); string(dec) != "\uFFFDx" {
		t.Errorf("lone surrogate escape: %q", dec)
	}
}

// TestDecodersValidUTF8: a STRING column read by either decoder holds valid
// UTF-8 whatever the line holds, including an object's JSON text.
func TestDecodersValidUTF8(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	rb := array.NewRecordBuilder(mem, testSchema.Arrow())
	defer rb.Release()
	c, _ := NewCSVDecoder(testSchema, CSVOptions{FieldDelimiter: ',', Quote: '"', Escape: '\\', HasEscape: true}, rb)
	j, _ := NewJSONDecoder(testSchema, JSONOptions{}, rb)
	for _, l := range []string{
		"true,1,2,1.5,3.25,caf\xE9,2024-01-01 10:00:00",
		"true,1,2,1.5,3.25,\"q\xC0\\\xFF\",2024-01-01 10:00:00",
	} {
		if _, err := c.Decode([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{`{"s":"caf` + "\xE9" + `"}`, `{"s":{"k":"` + "\xED\xA0\x80" + `"}}`, `{"S":["` + "\xF0\x9F" + `"]}`} {
		if _, err := j.Decode([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	rec := rb.NewRecord()
	defer rec.Release()
	s := rec.Column(5).(*array.String)
	want := []string{"caf\uFFFD", "q\uFFFD\uFFFD", "caf\uFFFD", `{"k":"` + "\uFFFD\uFFFD\uFFFD" + `"}`, `["` + "\uFFFD" + `"]`}
	for i := 0; i < s.Len(); i++ {
		if s.Value(i) != want[i] {
			t.Errorf("row %d: %q, want %q", i, s.Value(i), want[i])
		}
	}
}

// TestSeqLenAgreesWithDecodeRune: seqLen calls a sequence well-formed
// exactly when utf8.DecodeRune decodes it, with the same length, for every
// lead byte >= 0x80 followed by every pair of next bytes (and a fixed
// fourth).
func TestSeqLenAgreesWithDecodeRune(t *testing.T) {
	for c := 0x80; c <= 0xFF; c++ {
		for x := 0; x <= 0xFF; x++ {
			for y := 0; y <= 0xFF; y += 3 {
				for _, b := range [][]byte{{byte(c), byte(x), byte(y), 0x80}, {byte(c), byte(x)}, {byte(c)}} {
					n, ok := seqLen(b)
					r, size := utf8.DecodeRune(b)
					valid := r != utf8.RuneError || size > 1
					if ok != valid || (ok && n != size) || n < 1 || n > len(b) {
						t.Fatalf("% x: seqLen %d %v, DecodeRune %U %d", b, n, ok, r, size)
					}
				}
			}
		}
	}
}
