package exec

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/planner"
)

// valuesRecords evaluates the rows of a VALUES source (constant
// expressions) into records of at most batchSize rows.
func valuesRecords(src *planner.SourceSpec, mem memory.Allocator, batchSize int, opts expr.Options) ([]arrow.Record, error) {
	one := expr.NewRecord(arrow.NewSchema(nil, nil), nil, 1)
	defer one.Release()
	schema := src.Schema.Arrow()
	ncol := len(src.Schema)
	// cols[c][r]: the one-row array of row r, column c
	cols := make([][]arrow.Array, ncol)
	release := func() {
		for _, cs := range cols {
			for _, a := range cs {
				a.Release()
			}
		}
	}
	defer release()
	for _, row := range src.Rows {
		for c, e := range row {
			ev, err := expr.CompileWith(e, opts)
			if err != nil {
				return nil, err
			}
			a, err := ev.Eval(one, mem)
			if err != nil {
				return nil, err
			}
			cols[c] = append(cols[c], a)
		}
	}
	var out []arrow.Record
	for lo := 0; lo < len(src.Rows); lo += batchSize {
		hi := min(lo+batchSize, len(src.Rows))
		arrs := make([]arrow.Array, ncol)
		for c := range cols {
			a, err := array.Concatenate(cols[c][lo:hi], mem)
			if err != nil {
				for _, x := range arrs[:c] {
					x.Release()
				}
				for _, r := range out {
					r.Release()
				}
				return nil, err
			}
			arrs[c] = a
		}
		rec := expr.NewRecord(schema, arrs, int64(hi-lo))
		for _, a := range arrs {
			a.Release()
		}
		out = append(out, rec)
	}
	return out, nil
}
