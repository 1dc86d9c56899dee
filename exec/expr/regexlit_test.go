package expr

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

// TestRequiredLiterals: the literals found for some patterns, and none
// where a match need not contain one.
func TestRequiredLiterals(t *testing.T) {
	for p, want := range map[string][]string{
		"(&|^)channel_id=([^&]*)": {"channel_id="},
		"ERROR.*time(out)?":       {"ERROR", "time"},
		"a(bc)+d":                 {"a", "bc", "d"},
		"x{2,3}y":                 {"xx", "y"},
		"(?i)error":               nil,
		"abc|abd":                 {"ab"}, // the parser factors the prefix: ab[cd]
		"abc|xyz":                 nil,
		"(abc)?":                  nil,
		"[ab]c*":                  nil,
	} {
		c, err := compileRe(p)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.req, want) {
			t.Errorf("%q: required %q, want %q", p, c.req, want)
		}
	}
	for p, want := range map[string]string{
		"(&|^)channel_id=([^&]*)": "channel_id= 1",
		"x{1,3}[ab]?key=(.*)":     "key= 4",
		"ERROR.*timeout":          "ERROR 0",
		".*ERROR":                 "", // unbounded before the literal
		"\\bkey=(.*)":             "", // \b reads the byte before the window
		"(?m)^key=(.*)":           "",
		"(?i)key=(.*)":            "",
	} {
		c, err := compileRe(p)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if c.tail != nil {
			got = fmt.Sprintf("%s %d", c.lit, c.before)
		}
		if got != want {
			t.Errorf("%q: window %q, want %q", p, got, want)
		}
	}
}

// TestRegexpPrefilterNeverMisses: on seeded random patterns (literals,
// classes, alternations, repetitions, groups, anchors, case folding) and
// random strings, a string the pattern matches always passes mayMatch,
// and never starts before the window's start; REGEXP, REGEXP_EXTRACT
// (group 0) and REGEXP_REPLACE through the compiled
// evaluator give what Go's regexp gives on every row.
func TestRegexpPrefilterNeverMisses(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	alpha := "abc=&"
	var gen func(depth int) string
	gen = func(depth int) string {
		switch k := rng.Intn(12); {
		case depth > 3 || k < 4:
			n := 1 + rng.Intn(3)
			b := make([]byte, n)
			for i := range b {
				b[i] = alpha[rng.Intn(len(alpha))]
			}
			return string(b)
		case k == 4:
			return "[ab]"
		case k == 5:
			return "(" + gen(depth+1) + "|" + gen(depth+1) + ")"
		case k == 6:
			return "(" + gen(depth+1) + ")" + []string{"*", "+", "?", "{2}", "{1,3}", "{0,2}"}[rng.Intn(6)]
		case k == 7:
			return []string{"^", "$", "\\b", "."}[rng.Intn(4)] + gen(depth+1)
		case k == 8:
			return "(?i:" + gen(depth+1) + ")"
		default:
			return gen(depth+1) + gen(depth+1)
		}
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	const rows = 200
	strs := make([]string, rows)
	sb := array.NewStringBuilder(mem)
	for i := range strs {
		b := make([]byte, rng.Intn(14))
		for j := range b {
			b[j] = (alpha + "AB ")[rng.Intn(len(alpha)+3)]
		}
		strs[i] = string(b)
		sb.Append(strs[i])
	}
	// long strings with the literals at many places
	var long []string
	for i := 0; i < 6; i++ {
		b := make([]byte, 300)
		for j := range b {
			b[j] = (alpha + "a=")[rng.Intn(len(alpha)+2)]
		}
		long = append(long, string(b))
	}
	col := sb.NewStringArray()
	sb.Release()
	defer col.Release()
	rec := array.NewRecord(catalog.Schema{{Name: "s", Type: catalog.String}}.Arrow(), []arrow.Array{col}, rows)
	defer rec.Release()
	sCol := &planner.ColRef{Index: 0, Name: "s", T: catalog.String}
	lit := func(v any, t catalog.Type) planner.Expr { return &planner.Literal{Value: v, T: t.WithNotNull(true)} }
	withReq, withWindow, matched := 0, 0, 0
	for iter := 0; iter < 400; iter++ {
		p := gen(0)
		if rng.Intn(3) == 0 { // q21's shape: a short prefix, a literal, a tail
			p = "(" + gen(2) + "|^)" + gen(3) + "=" + []string{"([^&]*)", "(" + gen(2) + ")*$", gen(1)}[rng.Intn(3)]
		}
		c, err := compileRe(p)
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		if len(c.req) > 0 {
			withReq++
		}
		if c.tail != nil {
			withWindow++
		}
		for _, s := range append(long, strs...) {
			var got []int
			if r, sub, off, ok := c.search(s); ok {
				got = r.FindStringSubmatchIndex(sub)
				for k, v := range got {
					if v >= 0 {
						got[k] = v + off
					}
				}
			}
			if want := c.re.FindStringSubmatchIndex(s); !slices.Equal(got, want) {
				t.Fatalf("%q on %q: found %v, want %v", p, s, got, want)
			}
		}
		for _, s := range strs {
			if m := c.re.FindStringIndex(s); m != nil {
				matched++
				_, _, off, ok := c.search(s)
				if !ok || off > m[0] {
					t.Fatalf("%q matches %q at %d but the prefilter (%q, window %q-%d) says ok %v from %d", p, s, m[0], c.req, c.lit, c.before, ok, off)
				}
			}
		}
		group := int32(0)
		if c.re.NumSubexp() > 0 && rng.Intn(2) == 0 {
			group = 1
		}
		calls := []*planner.Call{
			{Fn: "regexp", Args: []planner.Expr{sCol, lit(p, catalog.String)}, T: catalog.Boolean},
			{Fn: "regexp_extract", Args: []planner.Expr{sCol, lit(p, catalog.String), lit(group, catalog.Int)}, T: catalog.String},
			{Fn: "regexp_replace", Args: []planner.Expr{sCol, lit(p, catalog.String), lit("<$0>", catalog.String)}, T: catalog.String},
		}
		for _, call := range calls {
			ev, err := Compile(call)
			if err != nil {
				t.Fatalf("%s %q: %v", call.Fn, p, err)
			}
			got, err := ev.Eval(rec, mem)
			if err != nil {
				t.Fatalf("%s %q: %v", call.Fn, p, err)
			}
			for i, s := range strs {
				var want string
				null := false
				switch call.Fn {
				case "regexp":
					want = map[bool]string{true: "T", false: "F"}[c.re.MatchString(s)]
				case "regexp_extract":
					m := c.re.FindStringSubmatchIndex(s)
					null = m == nil || m[2*group] < 0
					if !null {
						want = s[m[2*group]:m[2*group+1]]
					}
				default:
					want = c.re.ReplaceAllString(s, "<${0}>")
				}
				var have string
				switch a := got.(type) {
				case *array.Boolean:
					have = map[bool]string{true: "T", false: "F"}[a.Value(i)]
				case *array.String:
					have = a.Value(i)
				}
				if got.IsNull(i) != null || (!null && have != want) {
					t.Fatalf("%s(%q, %q): %q (null %v), want %q (null %v)", call.Fn, s, p, have, got.IsNull(i), want, null)
				}
			}
			got.Release()
		}
	}
	if withReq < 150 || withWindow < 100 || matched < 1000 {
		t.Fatalf("%d of 400 patterns had required literals, %d a window, %d matches: the test does not exercise the prefilter",
			withReq, withWindow, matched)
	}
}
