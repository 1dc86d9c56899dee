package expr

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// NewRecord is array.NewRecord for the engine's hot paths: it retains the
// columns and checks their count and lengths, but compares each column's
// type with its field's (arrow.TypeEqual) only in test binaries. For a
// struct type TypeEqual runs reflect.DeepEqual on the field indexes, which
// allocates: with the nexmark source's three struct columns passing
// through every calc, that was ~10% of Nexmark q1's CPU outside the
// generator. Every test of the engine still checks each record's types.
func NewRecord(schema *arrow.Schema, cols []arrow.Array, rows int64) arrow.Record {
	if len(cols) != schema.NumFields() {
		panic(fmt.Sprintf("arrow/array: number of columns/fields mismatch (%d columns, %d fields)", len(cols), schema.NumFields()))
	}
	checkTypes := testing.Testing()
	for i, c := range cols {
		if int64(c.Len()) < rows {
			panic(fmt.Sprintf("arrow/array: mismatch number of rows in column %q: got=%d, want=%d", schema.Field(i).Name, c.Len(), rows))
		}
		if checkTypes {
			if f := schema.Field(i); !arrow.TypeEqual(f.Type, c.DataType()) {
				panic(fmt.Sprintf("arrow/array: column %q type mismatch: got=%v, want=%v", f.Name, c.DataType(), f.Type))
			}
		}
	}
	r := &record{schema: schema, rows: rows, cols: make([]arrow.Array, len(cols))}
	copy(r.cols, cols)
	for _, c := range r.cols {
		c.Retain()
	}
	r.refs.Store(1)
	return r
}

// record is NewRecord's arrow.Record.
type record struct {
	refs   atomic.Int64
	schema *arrow.Schema
	rows   int64
	cols   []arrow.Array
}

func (r *record) Retain() { r.refs.Add(1) }

func (r *record) Release() {
	n := r.refs.Add(-1)
	if n < 0 {
		panic("arrow/array: record released too many times")
	}
	if n == 0 {
		for _, c := range r.cols {
			c.Release()
		}
		r.cols = nil
	}
}

func (r *record) Schema() *arrow.Schema    { return r.schema }
func (r *record) NumRows() int64           { return r.rows }
func (r *record) NumCols() int64           { return int64(len(r.cols)) }
func (r *record) Columns() []arrow.Array   { return r.cols }
func (r *record) Column(i int) arrow.Array { return r.cols[i] }
func (r *record) ColumnName(i int) string  { return r.schema.Field(i).Name }

// SetColumn is array's: a record with column i replaced (checked fully).
func (r *record) SetColumn(i int, col arrow.Array) (arrow.Record, error) {
	if i < 0 || i >= len(r.cols) {
		return nil, fmt.Errorf("arrow/array: column index out of range [0, %d): got=%d", len(r.cols), i)
	}
	if f := r.schema.Field(i); col.Len() != int(r.rows) || !arrow.TypeEqual(f.Type, col.DataType()) {
		return nil, fmt.Errorf("arrow/array: column %q: got %v of %d rows, want %v of %d", f.Name, col.DataType(), col.Len(), f.Type, r.rows)
	}
	cols := make([]arrow.Array, len(r.cols))
	copy(cols, r.cols)
	cols[i] = col
	return NewRecord(r.schema, cols, r.rows), nil
}

// NewSlice is a zero-copy slice of rows [i, j); it panics as array's.
func (r *record) NewSlice(i, j int64) arrow.Record {
	cols := make([]arrow.Array, len(r.cols))
	for k, c := range r.cols {
		cols[k] = array.NewSlice(c, i, j)
	}
	out := NewRecord(r.schema, cols, j-i)
	for _, c := range cols {
		c.Release()
	}
	return out
}

func (r *record) MarshalJSON() ([]byte, error) {
	a := array.RecordToStructArray(r)
	defer a.Release()
	return a.MarshalJSON()
}

func (r *record) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "record:\n  %v\n  rows: %d\n", r.schema, r.rows)
	for i, c := range r.cols {
		fmt.Fprintf(&b, "  col[%d][%s]: %v\n", i, r.schema.Field(i).Name, c)
	}
	return b.String()
}
