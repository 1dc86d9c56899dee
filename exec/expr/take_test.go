package expr

import (
	"fmt"
	"github.com/streamsql/streamsql/internal/memtest"
	"math/rand"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

func renderRecord(rec arrow.Record) string {
	var b strings.Builder
	for i := 0; i < int(rec.NumCols()); i++ {
		fmt.Fprintf(&b, "%s=[%s] ", rec.ColumnName(i), render(rec.Column(i)))
	}
	return strings.TrimSpace(b.String())
}

func TestTakeAndFilter(t *testing.T) {
	tests := []struct {
		name string
		mask []string // "T", "F", "N" per row
		idx  []int32
		want string
	}{
		{
			name: "some rows",
			mask: []string{"T", "N", "F", "T"},
			idx:  []int32{0, 3},
			want: "i=[7,NULL] b=[10,NULL] d=[1.5,NULL] m=[12.34,NULL] s=['Hello',NULL] t=[2024-02-29 13:45:01.250,NULL] f=[TRUE,NULL] z=[0,NULL] u=['12','true']",
		},
		{
			name: "none",
			mask: []string{"F", "F", "N", "N"},
			idx:  []int32{},
			want: "i=[] b=[] d=[] m=[] s=[] t=[] f=[] z=[] u=[]",
		},
		{
			name: "reordered with repeats",
			mask: nil,
			idx:  []int32{2, 1, 2},
			want: "i=[2147483647,-7,2147483647] b=[9223372036854775807,-3,9223372036854775807] d=[1.0E20,-2.675,1.0E20] m=[99999999.99,-0.05,99999999.99] s=['a_b%c','  wörld  ','a_b%c'] t=[1969-12-31 23:59:59.999,1970-01-01 00:00:00.000,1969-12-31 23:59:59.999] f=[TRUE,FALSE,TRUE] z=[0,2,0] u=['x',' 3.9 ','x']",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := memtest.NewChecked()
			defer mem.AssertSize(t, 0)
			rec := testRecord(mem)
			defer rec.Release()
			got := TakeRecord(rec, tc.idx, mem)
			if s := renderRecord(got); s != tc.want {
				t.Errorf("TakeRecord\n got %s\nwant %s", s, tc.want)
			}
			got.Release()
			if tc.mask == nil {
				return
			}
			mb := array.NewBooleanBuilder(mem)
			for _, m := range tc.mask {
				if m == "N" {
					mb.AppendNull()
				} else {
					mb.Append(m == "T")
				}
			}
			mask := mb.NewBooleanArray()
			mb.Release()
			defer mask.Release()
			f, err := FilterRecord(rec, mask, mem)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Release()
			if s := renderRecord(f); s != tc.want {
				t.Errorf("FilterRecord\n got %s\nwant %s", s, tc.want)
			}
		})
	}
}

func TestFilterAllPass(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	rec := testRecord(mem)
	defer rec.Release()
	ev, err := Compile(&planner.Literal{Value: true, T: catalog.Boolean})
	if err != nil {
		t.Fatal(err)
	}
	m, err := ev.Eval(rec, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	out, err := FilterRecord(rec, m.(*array.Boolean), mem)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if out != rec {
		t.Fatalf("all-pass filter should return the input record")
	}
	short := array.NewBooleanBuilder(mem)
	short.Append(true)
	sm := short.NewBooleanArray()
	short.Release()
	defer sm.Release()
	if _, err := FilterRecord(rec, sm, mem); err == nil {
		t.Fatalf("mask of the wrong length accepted")
	}
}

// Kernels must honour array offsets (sliced batches).
func TestSlicedInput(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	full := testRecord(mem)
	defer full.Release()
	rec := full.NewSlice(1, 4)
	defer rec.Release()
	tests := []struct {
		e    planner.Expr
		want string
	}{
		{call(t, "+", col("i"), col("b")), "-10,-9223372034707292162,NULL"},
		{call(t, "and", col("f"), call(t, ">", col("m"), lit(0))), "FALSE,TRUE,NULL"},
		{call(t, "upper", col("s")), "'  WÖRLD  ','A_B%C',NULL"},
		{call(t, "coalesce", col("s"), col("u")), "'  wörld  ','a_b%c','true'"},
		{call(t, "is_null", col("t")), "FALSE,FALSE,TRUE"},
		{call(t, "case", col("f"), col("m"), lit("dec:1")), "1.00,99999999.99,1.00"},
	}
	for _, tc := range tests {
		ev, err := Compile(tc.e)
		if err != nil {
			t.Fatal(err)
		}
		a, err := ev.Eval(rec, mem)
		if err != nil {
			t.Fatal(err)
		}
		if got := render(a); got != tc.want {
			t.Errorf("%s: got %s want %s", tc.e, got, tc.want)
		}
		a.Release()
	}
	sub := TakeRecord(rec, []int32{2, 0}, mem)
	defer sub.Release()
	if got := render(sub.Column(0)); got != "NULL,-7" {
		t.Errorf("take on slice: %s", got)
	}
}

func TestColumnRefRetains(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	rec := testRecord(mem)
	ev, err := Compile(col("s"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := ev.Eval(rec, mem)
	if err != nil {
		t.Fatal(err)
	}
	if a != rec.Column(4) {
		t.Fatalf("column reference copied the column")
	}
	rec.Release()
	if got := render(a); !strings.HasPrefix(got, "'Hello'") {
		t.Fatalf("column not kept alive: %s", got)
	}
	a.Release()
}

// Text conversion (DOUBLE, DECIMAL, TIMESTAMP) is tested in exec/format.

func TestRoundDouble(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		d    int32
		want float64
	}{{2.675, 2, 2.68}, {-2.5, 0, -3}, {1.005, 2, 1.01}, {123.456, -1, 120}, {0.4, 0, 0}, {9.99, 1, 10}} {
		if got := roundDouble(tc.v, tc.d); got != tc.want {
			t.Errorf("roundDouble(%v, %d) = %v, want %v", tc.v, tc.d, got, tc.want)
		}
	}
}

func TestLikePatterns(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		want bool
	}{
		{"", "", true}, {"", "a", false}, {"%", "", true}, {"a%", "abc", true}, {"%c", "abc", true},
		{"%b%", "abc", true}, {"a_c", "abc", true}, {"a_c", "ac", false}, {"_", "é", true},
		{"%a%b%c", "xaybzc", true}, {"%a%b%c", "xaybzcd", false}, {"a%a", "a", false},
		{"%_%_%", "ab", true}, {"%_%_%", "a", false}, {"ABC", "abc", false},
	} {
		lp, err := compilePattern(tc.p, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := lp.match(tc.s); got != tc.want {
			t.Errorf("%q LIKE %q = %v, want %v", tc.s, tc.p, got, tc.want)
		}
	}
}

// BenchmarkFilterProject runs WHERE a % 123 = 0 then SELECT price * 0.908 on
// 1024-row batches (DECIMAL and DOUBLE prices).
func BenchmarkFilterProject(b *testing.B) {
	for _, priceType := range []catalog.Type{catalog.Decimal(10, 2), catalog.Double} {
		b.Run(priceType.String(), func(b *testing.B) {
			const rows = 1024
			schema := catalog.Schema{{Name: "a", Type: catalog.BigInt}, {Name: "price", Type: priceType}}
			mem := memory.NewGoAllocator()
			rb := array.NewRecordBuilder(mem, schema.Arrow())
			for i := 0; i < rows; i++ {
				rb.Field(0).(*array.Int64Builder).Append(int64(i * 41))
				if priceType.Kind == catalog.KindDouble {
					rb.Field(1).(*array.Float64Builder).Append(float64(i) * 1.25)
				} else {
					rb.Field(1).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i * 125)))
				}
			}
			rec := rb.NewRecord()
			rb.Release()
			defer rec.Release()
			a := &planner.ColRef{Index: 0, Name: "a", T: catalog.BigInt}
			price := &planner.ColRef{Index: 1, Name: "price", T: priceType}
			filter := call(b, "=", call(b, "%", a, lit(int64(123))), lit(0))
			proj := call(b, "*", price, lit("dec:0.908"))
			fe, err := Compile(filter)
			if err != nil {
				b.Fatal(err)
			}
			pe, err := Compile(proj)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				m, err := fe.Eval(rec, mem)
				if err != nil {
					b.Fatal(err)
				}
				f, err := FilterRecord(rec, m.(*array.Boolean), mem)
				m.Release()
				if err != nil {
					b.Fatal(err)
				}
				p, err := pe.Eval(f, mem)
				if err != nil {
					b.Fatal(err)
				}
				p.Release()
				f.Release()
			}
			b.ReportMetric(float64(b.N)*rows/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// TestTakeRunsAgainstRows: TakeRecord copies runs of neighbouring rows a
// run at a time (fixed-width values, strings, validity); on seeded random
// row lists (long runs, short runs, repeats, reversed) over sliced inputs
// with NULLs it gives what a row-at-a-time copy gives.
func TestTakeRunsAgainstRows(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(7))
	withRuns := 0
	for round := 0; round < 200; round++ {
		n := 1 + rng.Intn(300)
		ib := array.NewInt64Builder(mem)
		sb := array.NewStringBuilder(mem)
		tb := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Millisecond})
		for i := 0; i < n; i++ {
			if round%4 != 0 && rng.Intn(5) == 0 { // every fourth round: no NULLs
				ib.AppendNull()
				sb.AppendNull()
				tb.AppendNull()
				continue
			}
			ib.Append(rng.Int63())
			sb.Append(strings.Repeat(string(rune('a'+rng.Intn(26))), rng.Intn(12)))
			tb.Append(arrow.Timestamp(rng.Int63n(1 << 40)))
		}
		full := []arrow.Array{ib.NewArray(), sb.NewArray(), tb.NewArray()}
		ib.Release()
		sb.Release()
		tb.Release()
		// a slice of the arrays: offsets into their buffers
		lo := rng.Intn(n)
		hi := lo + 1 + rng.Intn(n-lo)
		cols := make([]arrow.Array, len(full))
		for i, a := range full {
			cols[i] = array.NewSlice(a, int64(lo), int64(hi))
			a.Release()
		}
		m := hi - lo
		var rows []int32
		for len(rows) < 2*m {
			r := rng.Intn(m)
			k := 1 + rng.Intn(3)
			if round%2 == 0 {
				k = 1 + rng.Intn(40) // long runs: copied a run at a time
			}
			for x := 0; x < k && r+x < m; x++ {
				rows = append(rows, int32(r+x))
			}
			if rng.Intn(8) == 0 {
				rows = append(rows, int32(r)) // a repeat, then a run backwards
			}
		}
		if runsOf(rows, nil) != nil {
			withRuns++
		}
		for _, c := range cols {
			got := gather(c.DataType(), []arrow.Array{c}, nil, rows, mem)
			var want, have []string
			for i, r := range rows {
				want = append(want, c.ValueStr(int(r)))
				have = append(have, got.ValueStr(i))
			}
			if strings.Join(have, ",") != strings.Join(want, ",") {
				t.Fatalf("round %d, %s: gathered\n%v\nwant\n%v", round, c.DataType(), have, want)
			}
			if got.NullN() != countNulls(want) {
				t.Fatalf("round %d, %s: %d NULLs, want %d", round, c.DataType(), got.NullN(), countNulls(want))
			}
			got.Release()
			c.Release()
		}
	}
	if withRuns < 20 {
		t.Fatalf("only %d of 200 row lists were copied by runs", withRuns)
	}
}

func countNulls(vals []string) int {
	n := 0
	for _, v := range vals {
		if v == array.NullValueStr {
			n++
		}
	}
	return n
}

// TestCaseRunsAgainstRows: CASE finds each condition's rows a word at a
// time and copies its branches' values by runs of rows from one branch
// (runsOfWhich); on seeded records (sliced at odd offsets, NULL conditions
// and values, branch kinds in long runs and in short ones) every row is
// the branch its own condition picks, as a row-at-a-time evaluation gives.
func TestCaseRunsAgainstRows(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	schema := catalog.Schema{
		{Name: "k", Type: catalog.Int},
		{Name: "a", Type: catalog.BigInt},
		{Name: "b", Type: catalog.BigInt},
		{Name: "s", Type: catalog.String},
		{Name: "u", Type: catalog.String},
	}
	ref := func(name string) planner.Expr {
		i := schema.Index(name)
		return &planner.ColRef{Index: i, Name: name, T: schema[i].Type}
	}
	k := ref("k")
	caseOf := func(x, y planner.Expr) planner.Expr {
		// CASE WHEN k = 0 THEN x WHEN k = 1 THEN y ELSE x END, as the
		// nexmark source's dateTime (ELSE: the bid's)
		return call(t, "case", call(t, "=", k, lit(0)), y, call(t, "=", k, lit(1)), lit(nil), x)
	}
	exprs := []planner.Expr{caseOf(ref("a"), ref("b")), caseOf(ref("s"), ref("u")),
		caseOf(lit(5), lit(1)), // constants only (pickConsts)
		call(t, "case", call(t, "=", k, lit(0)), lit(1), lit(nil))} // COUNT(*) FILTER (WHERE k = 0)
	evs := make([]Evaluator, len(exprs))
	for i, e := range exprs {
		ev, err := Compile(e)
		if err != nil {
			t.Fatal(err)
		}
		evs[i] = ev
	}
	rng := rand.New(rand.NewSource(11))
	withRuns := 0
	for round := 0; round < 150; round++ {
		n := 1 + rng.Intn(400)
		b := array.NewRecordBuilder(mem, schema.Arrow())
		for i := 0; i < n; {
			kind := int32(2) // long runs of the ELSE branch between short ones
			run := 1 + rng.Intn(3)
			if rng.Intn(3) == 0 {
				kind = int32(rng.Intn(2))
			} else if round%2 == 0 {
				run = 1 + rng.Intn(60)
			}
			for x := 0; x < run && i < n; x, i = x+1, i+1 {
				if round%3 == 0 && rng.Intn(9) == 0 {
					b.Field(0).(*array.Int32Builder).AppendNull()
				} else {
					b.Field(0).(*array.Int32Builder).Append(kind)
				}
				for f := 1; f <= 2; f++ {
					if rng.Intn(7) == 0 && round%4 != 0 {
						b.Field(f).AppendNull()
					} else {
						b.Field(f).(*array.Int64Builder).Append(rng.Int63())
					}
				}
				for f := 3; f <= 4; f++ {
					if rng.Intn(7) == 0 && round%4 != 0 {
						b.Field(f).AppendNull()
					} else {
						b.Field(f).(*array.StringBuilder).Append(strings.Repeat(string(rune('a'+rng.Intn(26))), rng.Intn(9)))
					}
				}
			}
		}
		rec, _, _ := randomSlice(rng, b, n)
		kc := rec.Column(0).(*array.Int32)
		for e, ev := range evs {
			got, err := ev.Eval(rec, mem)
			if err != nil {
				t.Fatal(err)
			}
			which := make([]uint16, kc.Len())
			for i := 0; i < kc.Len(); i++ {
				var x, y string
				switch e {
				case 0:
					x, y = rec.Column(1).ValueStr(i), rec.Column(2).ValueStr(i)
				case 1:
					x, y = rec.Column(3).ValueStr(i), rec.Column(4).ValueStr(i)
				case 2:
					x, y = "5", "1"
				case 3:
					x, y = array.NullValueStr, "1"
				}
				want := x
				switch {
				case kc.IsValid(i) && kc.Value(i) == 0:
					want, which[i] = y, 0
				case kc.IsValid(i) && kc.Value(i) == 1 && e != 3:
					want, which[i] = array.NullValueStr, 1
				default:
					which[i] = 2
				}
				if have := got.ValueStr(i); have != want {
					t.Fatalf("round %d, expression %d, row %d: %s, want %s", round, e, i, have, want)
				}
			}
			rows := make([]int32, len(which))
			for i := range rows {
				rows[i] = int32(i)
			}
			if e == 0 && runsOf(rows, which) != nil {
				withRuns++
			}
			got.Release()
		}
		rec.Release()
	}
	if withRuns < 20 {
		t.Fatalf("only %d of 150 records were gathered by runs", withRuns)
	}
}

// TestLogicWordsAgainstRows: AND and OR combine their sides a word at a
// time; on seeded boolean columns (NULLs, all-valid stretches, records
// sliced at odd offsets, lengths that are not a multiple of 64) every row
// is Kleene's three-valued result.
func TestLogicWordsAgainstRows(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	schema := catalog.Schema{{Name: "x", Type: catalog.Boolean}, {Name: "y", Type: catalog.Boolean}}
	x := &planner.ColRef{Index: 0, Name: "x", T: catalog.Boolean}
	y := &planner.ColRef{Index: 1, Name: "y", T: catalog.Boolean}
	and, err := Compile(call(t, "and", x, y))
	if err != nil {
		t.Fatal(err)
	}
	or, err := Compile(call(t, "or", x, y))
	if err != nil {
		t.Fatal(err)
	}
	// Kleene: 0 false, 1 true, 2 NULL
	kAnd := func(a, b int) int {
		switch {
		case a == 0 || b == 0:
			return 0
		case a == 1 && b == 1:
			return 1
		}
		return 2
	}
	kOr := func(a, b int) int {
		switch {
		case a == 1 || b == 1:
			return 1
		case a == 0 && b == 0:
			return 0
		}
		return 2
	}
	str := func(v int) string { return [...]string{"false", "true", array.NullValueStr}[v] }
	rng := rand.New(rand.NewSource(3))
	for round := 0; round < 200; round++ {
		n := 1 + rng.Intn(300)
		b := array.NewRecordBuilder(mem, schema.Arrow())
		vals := make([][2]int, n)
		for i := range vals {
			for f := 0; f < 2; f++ {
				v := rng.Intn(2)
				if round%3 != 0 && rng.Intn(4) == 0 {
					v = 2
				}
				vals[i][f] = v
				if v == 2 {
					b.Field(f).AppendNull()
				} else {
					b.Field(f).(*array.BooleanBuilder).Append(v == 1)
				}
			}
		}
		rec, lo, hi := randomSlice(rng, b, n)
		for _, c := range []struct {
			ev Evaluator
			f  func(a, b int) int
		}{{and, kAnd}, {or, kOr}} {
			got, err := c.ev.Eval(rec, mem)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < hi-lo; i++ {
				v := vals[lo+i]
				if want := str(c.f(v[0], v[1])); got.ValueStr(i) != want {
					t.Fatalf("round %d row %d: %s, %s gave %s, want %s", round, i, str(v[0]), str(v[1]), got.ValueStr(i), want)
				}
			}
			got.Release()
		}
		rec.Release()
	}
}

// TestFilterWordsAgainstRows: FilterRecord finds the rows to keep a word
// at a time; on seeded masks (NULLs, all-TRUE and all-FALSE stretches,
// sliced at odd offsets, lengths not a multiple of 64) it keeps exactly the
// rows whose mask is a valid TRUE, in order.
func TestFilterWordsAgainstRows(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	schema := catalog.Schema{{Name: "m", Type: catalog.Boolean}, {Name: "v", Type: catalog.BigInt}}
	rng := rand.New(rand.NewSource(9))
	for round := 0; round < 200; round++ {
		n := 1 + rng.Intn(500)
		b := array.NewRecordBuilder(mem, schema.Arrow())
		mb, vb := b.Field(0).(*array.BooleanBuilder), b.Field(1).(*array.Int64Builder)
		state := 0 // 0 random, 1 all TRUE, 2 all FALSE
		for i := 0; i < n; i++ {
			if rng.Intn(40) == 0 {
				state = rng.Intn(3)
			}
			switch {
			case state == 0 && round%3 != 0 && rng.Intn(5) == 0:
				mb.AppendNull()
			case state == 0:
				mb.Append(rng.Intn(2) == 0)
			default:
				mb.Append(state == 1)
			}
			vb.Append(int64(i))
		}
		rec, _, _ := randomSlice(rng, b, n)
		mask := rec.Column(0).(*array.Boolean)
		var want []string
		for i := 0; i < mask.Len(); i++ {
			if mask.IsValid(i) && mask.Value(i) {
				want = append(want, rec.Column(1).ValueStr(i))
			}
		}
		got, err := FilterRecord(rec, mask, mem)
		if err != nil {
			t.Fatal(err)
		}
		var have []string
		for i := 0; i < int(got.NumRows()); i++ {
			have = append(have, got.Column(1).ValueStr(i))
		}
		if strings.Join(have, ",") != strings.Join(want, ",") {
			t.Fatalf("round %d: kept %v, want %v", round, have, want)
		}
		got.Release()
		rec.Release()
	}
}

// randomSlice builds b's record of n rows (releasing b) and returns a
// random non-empty slice of it, rows [lo, hi): offsets into its buffers.
func randomSlice(rng *rand.Rand, b *array.RecordBuilder, n int) (rec arrow.Record, lo, hi int) {
	full := b.NewRecord()
	b.Release()
	lo = rng.Intn(n)
	hi = lo + 1 + rng.Intn(n-lo)
	rec = full.NewSlice(int64(lo), int64(hi))
	full.Release()
	return rec, lo, hi
}

// TestGatherBitsMatchesBitByBit: gatherBits (a word of rows at a time)
// sets the bits of the rows whose source bit is set, at any bit offset,
// with rows -1 (NULL) among them and a source without a bitmap.
func TestGatherBitsMatchesBitByBit(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for round := 0; round < 300; round++ {
		src := make([]byte, 40)
		rng.Read(src)
		off := rng.Intn(20)
		n := rng.Intn(200)
		rows := make([]int32, n)
		for i := range rows {
			rows[i] = int32(rng.Intn(8*len(src) - off))
			if rng.Intn(8) == 0 {
				rows[i] = -1
			}
		}
		noBits := round%5 == 0
		s := srcBits{bits: src, off: off}
		if noBits {
			s.bits = nil
		}
		got := make([]byte, (n+7)/8)
		gatherBits(got, s, rows)
		for i, r := range rows {
			want := r >= 0 && (noBits || src[(off+int(r))>>3]>>((off+int(r))&7)&1 == 1)
			if have := got[i>>3]>>(i&7)&1 == 1; have != want {
				t.Fatalf("round %d row %d (source row %d, offset %d): bit %v, want %v", round, i, r, off, have, want)
			}
		}
	}
}

// TestSameStrings: SameStrings tells a column of one value in every row
// from columns that differ in a value, in the split of equal bytes
// between rows, or in a periodic pattern, at an offset too.
func TestSameStrings(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	for _, c := range []struct {
		vals []string
		want bool
	}{
		{[]string{"2026-12-06", "2026-12-06", "2026-12-06"}, true},
		{[]string{"2026-12-06", "2026-12-07", "2026-12-06"}, false},
		{[]string{"ab", "ab", "ab", "ab"}, true},
		{[]string{"ab", "ba", "ab"}, false},
		{[]string{"aa", "a", "aaa"}, false},
		{[]string{"", "", ""}, true},
		{[]string{"x"}, true},
		{[]string{"abab", "abab", "ab"}, false},
	} {
		b := array.NewStringBuilder(mem)
		b.Append("zz") // sliced off below
		b.AppendValues(c.vals, nil)
		a := b.NewArray()
		b.Release()
		s := array.NewSlice(a, 1, int64(a.Len())).(*array.String)
		if got := SameStrings(s); got != c.want {
			t.Fatalf("%q: SameStrings %v, want %v", c.vals, got, c.want)
		}
		s.Release()
		a.Release()
	}
}

// TestGatherOneString: a string column of one value in every row (sliced;
// also the empty string) gathers to that value at every taken row and
// NULL at every negative one, as the general gather does.
func TestGatherOneString(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewSource(3))
	for _, v := range []string{"2026-12-06", "", "x"} {
		b := array.NewStringBuilder(mem)
		b.Append("other") // sliced off below
		for i := 0; i < 300; i++ {
			b.Append(v)
		}
		whole := b.NewArray()
		b.Release()
		src := array.NewSlice(whole, 1, int64(whole.Len())).(*array.String)
		for _, n := range []int{1, 2, 70, 500} {
			rows := make([]int32, n)
			for i := range rows {
				rows[i] = int32(rng.Intn(src.Len()+40)) - 40 // some negative: NULL
			}
			got := gatherWith(arrow.BinaryTypes.String, []arrow.Array{src}, nil, rows, nil, mem).(*array.String)
			if got.Len() != n {
				t.Fatalf("%q: %d rows, want %d", v, got.Len(), n)
			}
			for i, r := range rows {
				switch {
				case r < 0 && !got.IsNull(i):
					t.Fatalf("%q, row %d (source %d): %q, want NULL", v, i, r, got.Value(i))
				case r >= 0 && (got.IsNull(i) || got.Value(i) != v):
					t.Fatalf("%q, row %d (source %d): %q (null %v), want %q", v, i, r, got.Value(i), got.IsNull(i), v)
				}
			}
			got.Release()
		}
		src.Release()
		whole.Release()
	}
	// no source rows: every row taken is NULL (an outer join's side)
	b := array.NewStringBuilder(mem)
	empty := b.NewArray()
	b.Release()
	got := gatherWith(arrow.BinaryTypes.String, []arrow.Array{empty}, nil, []int32{-1, -1, -1}, nil, mem)
	if got.Len() != 3 || got.NullN() != 3 {
		t.Fatalf("from no rows: %d rows, %d NULL, want 3 NULL", got.Len(), got.NullN())
	}
	got.Release()
	empty.Release()
}
