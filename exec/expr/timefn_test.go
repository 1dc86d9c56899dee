package expr

import (
	"github.com/streamsql/streamsql/internal/memtest"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec/format"
	"github.com/streamsql/streamsql/planner"
)

// rowRecord builds a batch with a ROW<id BIGINT, name STRING> column p
// (row 1 NULL, row 2's name NULL), a TIMESTAMP(3) column ts and a DATE d.
var rowType = catalog.Row(catalog.Column{Name: "id", Type: catalog.BigInt}, catalog.Column{Name: "name", Type: catalog.String})

var rowSchema = catalog.Schema{{Name: "p", Type: rowType}, {Name: "ts", Type: catalog.Timestamp}, {Name: "d", Type: catalog.Date}}

func rowRecord(t *testing.T, mem memory.Allocator) arrow.Record {
	t.Helper()
	b := array.NewRecordBuilder(mem, rowSchema.Arrow())
	defer b.Release()
	sb := b.Field(0).(*array.StructBuilder)
	ids := sb.FieldBuilder(0).(*array.Int64Builder)
	names := sb.FieldBuilder(1).(*array.StringBuilder)
	sb.Append(true)
	ids.Append(1)
	names.Append("ann")
	sb.AppendNull()
	sb.Append(true)
	ids.Append(3)
	names.AppendNull()
	tb := b.Field(1).(*array.TimestampBuilder)
	for _, s := range []string{"2024-02-29 13:45:01.250", "1969-12-31 23:59:59.999", "2024-12-30 00:00:00"} {
		ms, err := format.CastTimestamp(s)
		if err != nil {
			t.Fatal(err)
		}
		tb.Append(arrow.Timestamp(ms))
	}
	db := b.Field(2).(*array.Date32Builder)
	db.AppendValues([]arrow.Date32{19782, -1, 0}, nil)
	return b.NewRecord()
}

func evalText(t *testing.T, e planner.Expr, rec arrow.Record, mem memory.Allocator) []string {
	t.Helper()
	ev, err := CompileWith(e, Options{Now: func() time.Time { return time.UnixMilli(1704103200123) }})
	if err != nil {
		t.Fatalf("%s: %v", e, err)
	}
	a, err := ev.Eval(rec, mem)
	if err != nil {
		t.Fatalf("%s: %v", e, err)
	}
	defer a.Release()
	if a.Len() != int(rec.NumRows()) {
		t.Fatalf("%s: %d rows", e, a.Len())
	}
	out := make([]string, a.Len())
	for i := range out {
		out[i] = format.FormatValue(a, i)
	}
	return out
}

func TestRowFieldsAndGather(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	rec := rowRecord(t, mem)
	defer rec.Release()
	p := &planner.ColRef{Index: 0, Name: "p", T: rowType}
	field := func(k int32, ft catalog.Type) planner.Expr {
		return &planner.Call{Fn: "field", Args: []planner.Expr{p, &planner.Literal{Value: k, T: catalog.Int.WithNotNull(true)}}, T: ft}
	}
	if got := strings.Join(evalText(t, field(0, catalog.BigInt), rec, mem), ","); got != "1,NULL,3" {
		t.Errorf("p.id = %s", got)
	}
	if got := strings.Join(evalText(t, field(1, catalog.String), rec, mem), ","); got != "ann,NULL,NULL" {
		t.Errorf("p.name = %s", got)
	}
	if got := strings.Join(evalText(t, p, rec, mem), ","); got != "(1, ann),NULL,(3, NULL)" {
		t.Errorf("p = %s", got)
	}
	// gathering struct rows (filters, exchanges) keeps fields and NULLs
	sub := TakeRecord(rec, []int32{2, 1, 0, 2}, mem)
	defer sub.Release()
	if got := strings.Join(evalText(t, p, sub, mem), ","); got != "(3, NULL),NULL,(1, ann),(3, NULL)" {
		t.Errorf("gathered p = %s", got)
	}
	// a constant NULL ROW broadcast
	if got := strings.Join(evalText(t, &planner.Literal{T: rowType}, rec, mem), ","); got != "NULL,NULL,NULL" {
		t.Errorf("NULL row = %s", got)
	}
}

func TestTimeKernels(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	rec := rowRecord(t, mem)
	defer rec.Release()
	ts := &planner.ColRef{Index: 1, Name: "ts", T: catalog.Timestamp}
	d := &planner.ColRef{Index: 2, Name: "d", T: catalog.Date}
	str := func(s string) planner.Expr { return &planner.Literal{Value: s, T: catalog.String.WithNotNull(true)} }
	i32 := func(v int32) planner.Expr { return &planner.Literal{Value: v, T: catalog.Int.WithNotNull(true)} }
	call := func(fn string, tt catalog.Type, args ...planner.Expr) planner.Expr {
		return &planner.Call{Fn: fn, Args: args, T: tt}
	}
	tests := []struct {
		e    planner.Expr
		want string
	}{
		// 1969-12-31 23:59:59.999 is before the epoch: floor semantics
		{call("extract", catalog.BigInt, str("HOUR"), ts), "13,23,0"},
		{call("extract", catalog.BigInt, str("SECOND"), ts), "1,59,0"},
		{call("extract", catalog.BigInt, str("YEAR"), ts), "2024,1969,2024"},
		{call("extract", catalog.BigInt, str("WEEK"), ts), "9,1,1"}, // 2024-12-30 is in ISO week 1 of 2025
		{call("extract", catalog.BigInt, str("ISOYEAR"), ts), "2024,1970,2025"},
		{call("extract", catalog.BigInt, str("DOW"), ts), "5,4,2"},
		{call("extract", catalog.BigInt, str("EPOCH"), ts), "1709214301,-1,1735516800"},
		{call("floor_to", catalog.Timestamp, ts, str("SECOND")), "2024-02-29 13:45:01.000,1969-12-31 23:59:59.000,2024-12-30 00:00:00.000"},
		{call("ceil_to", catalog.Timestamp, ts, str("DAY")), "2024-03-01 00:00:00.000,1970-01-01 00:00:00.000,2024-12-30 00:00:00.000"},
		{call("floor_to", catalog.Timestamp, ts, str("WEEK")), "2024-02-25 00:00:00.000,1969-12-28 00:00:00.000,2024-12-29 00:00:00.000"},
		{call("dt_add_months", catalog.Date, d, i32(1), i32(-1), str("UTC")), "2024-01-29,1969-11-30,1969-12-01"},
		{call("ts_diff", catalog.Int, ts, call("dt_add_months", catalog.Timestamp, ts, i32(1), i32(1), str("UTC")), str("MONTH")), "1,1,1"},
		{call("date_format", catalog.String, ts, str("yyyy-MM-dd'T'HH:mm:ss.SSS EEEE")), "2024-02-29T13:45:01.250 Thursday,1969-12-31T23:59:59.999 Wednesday,2024-12-30T00:00:00.000 Monday"},
		{call("current_timestamp", catalog.TimestampLTZ, str("UTC")), "2024-01-01 10:00:00.123,2024-01-01 10:00:00.123,2024-01-01 10:00:00.123"},
		{call("current_date", catalog.Date, str("Asia/Tokyo")), "2024-01-01,2024-01-01,2024-01-01"},
		{call("current_time", catalog.Type{Kind: catalog.KindTime}, str("GMT-11:00")), "23:00:00,23:00:00,23:00:00"},
	}
	for _, tc := range tests {
		if got := strings.Join(evalText(t, tc.e, rec, mem), ","); got != tc.want {
			t.Errorf("%s = %s, want %s", tc.e, got, tc.want)
		}
	}
}

func TestCalendarHelpers(t *testing.T) {
	ms := func(s string) int64 {
		v, err := format.CastTimestamp(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		a, b string
		want int64
	}{
		{"2024-01-31 00:00:00", "2024-02-29 00:00:00", 1}, // Jan 31 + 1 month = Feb 29 (clamped), as Calcite's subtractMonths
		{"2024-01-31 10:00:00", "2024-02-29 09:00:00", 0},
		{"2024-01-15 00:00:00", "2024-03-14 23:59:59", 1},
		{"2024-03-14 00:00:00", "2024-01-15 00:00:00", -1},
		{"2020-02-29 00:00:00", "2021-02-28 00:00:00", 12},
	} {
		if got := monthsBetween(ms(tc.a), ms(tc.b)); got != tc.want {
			t.Errorf("monthsBetween(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	if got := format.AppendTimestamp(nil, addMonths(ms("2023-03-31 12:00:00"), -1), format.StyleSQL); string(got) != "2023-02-28 12:00:00.000" {
		t.Errorf("addMonths = %s", got)
	}
	for in, want := range map[string]string{"$1-$2": "${1}-${2}", `\$1`: "$$1", "a$": "a$$", `\\x`: `\x`, "$12": "${12}"} {
		if got := javaReplacement(in); got != want {
			t.Errorf("javaReplacement(%q) = %q, want %q", in, got, want)
		}
	}
	// a wall-clock time in a gap moves forward, as java.time does
	berlin, _ := catalog.LoadZone("Europe/Berlin")
	gap := ms("2024-03-31 02:30:00")
	if got := format.AppendTimestamp(nil, localToUTCMillis(gap, berlin), format.StyleSQL); string(got) != "2024-03-31 01:30:00.000" {
		t.Errorf("gap = %s", got)
	}
}

func TestRegexpConstantPatternCompiledOnce(t *testing.T) {
	c := &planner.Call{Fn: "regexp", Args: []planner.Expr{
		&planner.ColRef{Index: 0, Name: "s", T: catalog.String},
		&planner.Literal{Value: "(", T: catalog.String.WithNotNull(true)},
	}, T: catalog.Boolean}
	if _, err := Compile(c); err == nil || !strings.Contains(err.Error(), "invalid regular expression '('") {
		t.Fatalf("bad constant pattern: %v", err)
	}
}

// TestDateFormatDayMemo: DATE_FORMAT with a constant pattern of date fields
// formats each day once and reuses the text for the next rows of that day;
// on seeded timestamps (runs within a day, jumps across days and years,
// midnights and the millisecond before,
// times before 1970, NULLs) every row matches Go's own formatting, for
// date-only patterns and for one with the time of day (no memo).
func TestDateFormatDayMemo(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	schema := catalog.Schema{{Name: "t", Type: catalog.Timestamp}}
	col := &planner.ColRef{Index: 0, Name: "t", T: catalog.Timestamp}
	patterns := []struct{ java, goLayout string }{
		{"yyyy-MM-dd", "2006-01-02"},
		{"EEE, d MMM yyyy", "Mon, 2 Jan 2006"},
		{"yyyy-MM-dd HH:mm", "2006-01-02 15:04"},
	}
	rng := rand.New(rand.NewSource(5))
	b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Millisecond})
	ms := int64(-3 * 86_400_000 * 365)
	var want []*int64
	for i := 0; i < 5000; i++ {
		switch rng.Intn(10) {
		case 0:
			ms += rng.Int63n(3 * 86_400_000 * 365) // days or years ahead
		case 1:
			ms -= rng.Int63n(2 * 86_400_000) // back across midnight
		case 2:
			// the next midnight or the last millisecond before it
			d := ms / 86_400_000
			if ms < 0 && ms%86_400_000 != 0 {
				d--
			}
			ms = (d+1)*86_400_000 - rng.Int63n(2)
		default:
			ms += rng.Int63n(600_000) // minutes later: mostly the same day
		}
		if rng.Intn(20) == 0 {
			b.AppendNull()
			want = append(want, nil)
			continue
		}
		b.Append(arrow.Timestamp(ms))
		v := ms
		want = append(want, &v)
	}
	arr := b.NewArray()
	b.Release()
	rec := array.NewRecord(schema.Arrow(), []arrow.Array{arr}, int64(arr.Len()))
	arr.Release()
	defer rec.Release()
	for _, p := range patterns {
		e := &planner.Call{Fn: "date_format", Args: []planner.Expr{col, &planner.Literal{Value: p.java, T: catalog.String.WithNotNull(true)}}, T: catalog.String}
		ev, err := Compile(e)
		if err != nil {
			t.Fatal(err)
		}
		// the whole batch, and a slice of it (offset values and bitmap)
		for _, lo := range []int{0, 17} {
			r := rec.NewSlice(int64(lo), rec.NumRows()-3)
			got, err := ev.Eval(r, mem)
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			s := got.(*array.String)
			for i, w := range want[lo : len(want)-3] {
				if w == nil {
					if s.IsValid(i) {
						t.Fatalf("%s row %d: %q, want NULL", p.java, i, s.Value(i))
					}
					continue
				}
				if exp := time.UnixMilli(*w).UTC().Format(p.goLayout); !s.IsValid(i) || s.Value(i) != exp {
					t.Fatalf("%s row %d (%d ms): %q, want %q", p.java, i, *w, s.Value(i), exp)
				}
			}
			got.Release()
		}
	}
}

// BenchmarkDateFormatDays: DATE_FORMAT(ts, 'yyyy-MM-dd') of a batch of
// 1024 timestamps a few milliseconds apart (Nexmark q17's day column).
func BenchmarkDateFormatDays(b *testing.B) {
	mem := memory.NewGoAllocator()
	schema := catalog.Schema{{Name: "t", Type: catalog.Timestamp}}
	col := &planner.ColRef{Index: 0, Name: "t", T: catalog.Timestamp}
	tb := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Millisecond})
	for i := 0; i < 1024; i++ {
		tb.Append(arrow.Timestamp(1_700_000_000_000 + int64(i)*3))
	}
	arr := tb.NewArray()
	rec := array.NewRecord(schema.Arrow(), []arrow.Array{arr}, int64(arr.Len()))
	arr.Release()
	tb.Release()
	defer rec.Release()
	ev, err := Compile(&planner.Call{Fn: "date_format", Args: []planner.Expr{col, &planner.Literal{Value: "yyyy-MM-dd", T: catalog.String.WithNotNull(true)}}, T: catalog.String})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := ev.Eval(rec, mem)
		if err != nil {
			b.Fatal(err)
		}
		out.Release()
	}
}

// TestSplitFieldMatchesIndexSplit: the field split gives what
// strings.Split gives, for one-byte and longer delimiters, on seeded
// strings with empty fields and delimiters at the ends, for fields past
// the last; an empty delimiter leaves the string as field 0.
func TestSplitFieldMatchesIndexSplit(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	for _, delim := range []string{"/", "//", "ab"} {
		for n := 0; n < 3000; n++ {
			b := make([]byte, rng.Intn(12))
			for i := range b {
				b[i] = "a/b"[rng.Intn(3)]
			}
			str := string(b)
			parts := strings.Split(str, delim)
			for k := 0; k < 8; k++ {
				want, wok := "", k < len(parts)
				if wok {
					want = parts[k]
				}
				if got, ok := splitField(str, delim, k); got != want || ok != wok {
					t.Fatalf("field %d of %q by %q: %q %v, want %q %v", k, str, delim, got, ok, want, wok)
				}
			}
		}
	}
	if got, ok := splitField("a/b", "", 0); got != "a/b" || !ok {
		t.Fatalf("empty delimiter, field 0: %q %v", got, ok)
	}
	if _, ok := splitField("a/b", "", 1); ok {
		t.Fatal("empty delimiter, field 1 found")
	}
}
