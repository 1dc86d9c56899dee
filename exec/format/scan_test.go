package format

import (
	"math/rand"
	"testing"
)

// TestCSVScanIncremental: Scan over a record grown line by line agrees with
// Complete of each prefix, for random records with quotes, doubled quotes,
// escapes and delimiters, with and without an escape character.
func TestCSVScanIncremental(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	alphabet := []byte{'a', ',', '"', '\\', 'x', ' '}
	for _, opts := range []CSVOptions{DefaultCSVOptions(), {FieldDelimiter: ',', Quote: '"', Escape: '\\', HasEscape: true}} {
		d := &CSVDecoder{opts: opts}
		for n := 0; n < 20000; n++ {
			var lines [][]byte
			for k := rng.Intn(4) + 1; k > 0; k-- {
				l := make([]byte, rng.Intn(8))
				for i := range l {
					l[i] = alphabet[rng.Intn(len(alphabet))]
				}
				lines = append(lines, l)
			}
			var s CSVScan
			var rec []byte
			for k, l := range lines {
				if k > 0 {
					rec = append(rec, '\n')
				}
				rec = append(rec, l...)
				got, want := d.Scan(rec, &s), d.Complete(rec)
				if got != want {
					t.Fatalf("escape=%v: Scan(%q) = %v after the lines before, Complete = %v", opts.HasEscape, rec, got, want)
				}
				if got {
					if s != (CSVScan{}) {
						t.Fatalf("Scan(%q) completed but left %+v", rec, s)
					}
					break
				}
			}
		}
	}
	d := &CSVDecoder{opts: DefaultCSVOptions()}
	for _, c := range []struct {
		rec  string
		want bool
	}{
		{`a,b`, true}, {`"a`, false}, {`"a"`, true}, {`"a""`, false}, {`"a"""`, true},
		{`x,"a,b`, false}, {`x,"a` + "\n" + `b",c`, true}, {`"a"x,"b`, false}, {`a,`, true}, {`a"b,c`, true},
	} {
		if got := d.Complete([]byte(c.rec)); got != c.want {
			t.Errorf("Complete(%q) = %v, want %v", c.rec, got, c.want)
		}
	}
}
