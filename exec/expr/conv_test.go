package expr

import "testing"

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
