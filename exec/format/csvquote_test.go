package format

import (
	"math/rand/v2"
	"testing"
)

// TestNeedsQuoteWords: the word-at-a-time scan for the bytes that make a
// CSV field quoted agrees with a byte-by-byte check, for every position
// of a special byte in strings of every length up to 40, with and without
// an escape, and other delimiters.
func TestNeedsQuoteWords(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, o := range []CSVOptions{
		{FieldDelimiter: ',', Quote: '"'},
		{FieldDelimiter: ';', Quote: '\'', HasEscape: true, Escape: '\\'},
		{FieldDelimiter: '\t', Quote: '"', HasEscape: true, Escape: '"'},
		{FieldDelimiter: 0x80, Quote: 0xff}, // high bytes: no carry into the next byte
	} {
		e := NewCSVEncoder(o)
		byByte := func(s string) bool {
			for k := 0; k < len(s); k++ {
				c := s[k]
				if c == o.FieldDelimiter || c == o.Quote || c == '\n' || c == '\r' || o.HasEscape && c == o.Escape {
					return true
				}
			}
			return false
		}
		for n := 1; n <= 40; n++ {
			for trial := 0; trial < 30; trial++ {
				b := make([]byte, n)
				for i := range b {
					b[i] = byte('a' + r.IntN(26)) // never special, never ' ' or '#'
					if r.IntN(9) == 0 {
						b[i] = byte(r.IntN(256)) // anything, high bytes too
					}
				}
				// keep the ends off the other rules (a space at the ends)
				if b[0] == ' ' || b[0] == '#' {
					b[0] = 'x'
				}
				if b[n-1] == ' ' {
					b[n-1] = 'x'
				}
				s := string(b)
				if got, want := e.needsQuote(s), byByte(s); got != want {
					t.Fatalf("%+v: needsQuote(%q) = %v, want %v", o, s, got, want)
				}
			}
		}
	}
}

// BenchmarkNeedsQuote: a 64-byte field of letters (nexmark's extra), no
// special byte: the whole scan.
func BenchmarkNeedsQuote(b *testing.B) {
	e := NewCSVEncoder(CSVOptions{FieldDelimiter: ',', Quote: '"'})
	s := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijkl"
	for i := 0; i < b.N; i++ {
		if e.needsQuote(s) {
			b.Fatal("quoted")
		}
	}
}
