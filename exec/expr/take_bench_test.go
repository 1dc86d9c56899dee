package expr

import (
	"fmt"
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

// BenchmarkTakeScattered gathers the rows of one of two targets of a hash
// exchange (every other row, at random) from a batch shaped like Nexmark
// q17's aggregation input: two BIGINTs, a 10-byte string and three BIGINTs
// NULL in about a third of the rows each (COUNT ... FILTER's CASE
// columns). No runs: the row-at-a-time paths.
func BenchmarkTakeScattered(b *testing.B) {
	var mem memory.Allocator = bufpool.New(0)
	const n = 8192
	bl := []*array.Int64Builder{array.NewInt64Builder(mem), array.NewInt64Builder(mem),
		array.NewInt64Builder(mem), array.NewInt64Builder(mem), array.NewInt64Builder(mem)}
	sb := array.NewStringBuilder(mem)
	x := uint64(1)
	var idx []int32
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		bl[0].Append(int64(x % 100000))
		bl[1].Append(int64(x % 9999991))
		sb.Append("2026-12-06")
		for c := 2; c < 5; c++ {
			if (x>>(8*c))%3 == 0 {
				bl[c].AppendNull()
			} else {
				bl[c].Append(1)
			}
		}
		if x>>40&1 == 1 {
			idx = append(idx, int32(i))
		}
	}
	cols := []arrow.Array{bl[0].NewArray(), sb.NewArray(), bl[1].NewArray(), bl[2].NewArray(), bl[3].NewArray(), bl[4].NewArray()}
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: c.DataType(), Nullable: true}
	}
	rec := array.NewRecord(arrow.NewSchema(fields, nil), cols, n)
	for _, c := range cols {
		c.Release()
	}
	for _, b := range bl {
		b.Release()
	}
	sb.Release()
	defer rec.Release()
	if runsOf(idx, nil) != nil {
		b.Fatal("the rows come in runs")
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		TakeRecord(rec, idx, mem).Release()
	}
	b.ReportMetric(float64(b.N)*float64(len(idx))/b.Elapsed().Seconds(), "rows/s")
}
