package expr

import (
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/exec/bufpool"
)

// BenchmarkFilterRuns filters a batch shaped like the nexmark source's:
// 8192 rows of which 46 in every 50 are bids (runs of 46 rows), the bid
// fields NULL in the other rows: two BIGINTs, a timestamp and a string of
// about 100 bytes. The output comes from the recycling allocator jobs run
// with (with Go's, fresh zeroed memory per batch was most of the time).
func BenchmarkFilterRuns(b *testing.B) {
	var mem memory.Allocator = bufpool.New(0)
	const n = 8192
	ib := array.NewInt64Builder(mem)
	jb := array.NewInt64Builder(mem)
	tb := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Millisecond})
	sb := array.NewStringBuilder(mem)
	mb := array.NewBooleanBuilder(mem)
	extra := strings.Repeat("x", 100)
	for i := 0; i < n; i++ {
		bid := i%50 >= 4
		mb.Append(bid)
		if !bid {
			ib.AppendNull()
			jb.AppendNull()
			tb.AppendNull()
			sb.AppendNull()
			continue
		}
		ib.Append(int64(i))
		jb.Append(int64(7 * i))
		tb.Append(arrow.Timestamp(i))
		sb.Append(extra[:90+i%11])
	}
	cols := []arrow.Array{ib.NewArray(), jb.NewArray(), tb.NewArray(), sb.NewArray()}
	for _, bl := range []array.Builder{ib, jb, tb, sb} {
		bl.Release()
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	rec := array.NewRecord(schema, cols, n)
	for _, c := range cols {
		c.Release()
	}
	defer rec.Release()
	mask := mb.NewBooleanArray()
	mb.Release()
	defer mask.Release()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := FilterRecord(rec, mask, mem)
		if err != nil {
			b.Fatal(err)
		}
		out.Release()
	}
	b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "rows/s")
}
