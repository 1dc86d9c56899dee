package expr

import (
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/internal/memtest"
)

// TestNewRecordAsArrays: NewRecord's record owns its columns as
// array.NewRecord's does (released with it, no leak), slices, replaces a
// column and marshals as array's, and in a test binary rejects a column of
// another type or too few rows.
func TestNewRecordAsArrays(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := 0; i < 5; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		sb := b.Field(1).(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.StringBuilder).Append(string(rune('a' + i)))
	}
	want := b.NewRecord()
	defer want.Release()

	got := NewRecord(schema, want.Columns(), want.NumRows())
	if !array.RecordEqual(got, want) {
		t.Fatalf("record %v, want %v", got, want)
	}
	gj, err := got.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	wj, _ := want.MarshalJSON()
	if string(gj) != string(wj) {
		t.Fatalf("JSON %s, want %s", gj, wj)
	}
	gs, ws := got.NewSlice(1, 4), want.NewSlice(1, 4)
	if !array.RecordEqual(gs, ws) || gs.NumRows() != 3 {
		t.Fatalf("slice %v, want %v", gs, ws)
	}
	gs.Release()
	ws.Release()
	repl, err := got.SetColumn(0, want.Column(0))
	if err != nil || !array.RecordEqual(repl, want) {
		t.Fatalf("SetColumn: %v, %v", repl, err)
	}
	repl.Release()
	if _, err := got.SetColumn(0, want.Column(1)); err == nil {
		t.Fatal("SetColumn took a column of another type")
	}
	got.Retain()
	got.Release()
	got.Release()

	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Fatalf("%s: no panic", what)
			}
		}()
		f()
	}
	mustPanic("a column of another type", func() {
		NewRecord(schema, []arrow.Array{want.Column(1), want.Column(1)}, 5)
	})
	mustPanic("too few rows", func() { NewRecord(schema, want.Columns(), 6) })
	mustPanic("a column missing", func() { NewRecord(schema, want.Columns()[:1], 5) })
}
