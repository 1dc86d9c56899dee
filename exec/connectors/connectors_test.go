package connectors

import (
	"context"
	"errors"
	"fmt"
	"github.com/streamsql/streamsql/internal/memtest"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/exec/format"
)

func table(name string, schema catalog.Schema, kv ...string) *catalog.Table {
	t := &catalog.Table{Name: name, Schema: schema}
	for i := 0; i+1 < len(kv); i += 2 {
		t.Options = append(t.Options, catalog.Option{Key: kv[i], Value: kv[i+1]})
	}
	return t
}

// recRows renders rows as "v1|v2|..." with NULL for nulls.
func recRows(rec arrow.Record) []string {
	var out []string
	for i := 0; i < int(rec.NumRows()); i++ {
		var parts []string
		for _, c := range rec.Columns() {
			if format.IsNull(c, i) {
				parts = append(parts, "NULL")
			} else {
				parts = append(parts, format.FormatValue(c, i))
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out
}

// runSource runs every subtask of t at parallelism p and returns all rows
// (sorted) and the number of batches.
func runSource(t *testing.T, mem memory.Allocator, tbl *catalog.Table, p, batch int) ([]string, int) {
	t.Helper()
	var all []string
	batches := 0
	for i := 0; i < p; i++ {
		sc := &exec.SourceContext{Subtask: i, Parallelism: p, Mem: mem, BatchSize: batch, Linger: time.Second, Schema: tbl.Schema, SkippedRecords: new(atomic.Int64)}
		src, err := NewSource(tbl, sc)
		if err != nil {
			t.Fatal(err)
		}
		err = src.Run(context.Background(), func(r arrow.Record) error {
			if r == nil {
				return nil
			}
			batches++
			if int(r.NumRows()) > batch {
				t.Errorf("batch of %d rows > %d", r.NumRows(), batch)
			}
			all = append(all, recRows(r)...)
			r.Release()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		src.Close()
	}
	sort.Strings(all)
	return all, batches
}

var dgSchema = catalog.Schema{
	{Name: "a", Type: catalog.BigInt}, {Name: "b", Type: catalog.Int}, {Name: "s", Type: catalog.String},
	{Name: "d", Type: catalog.Double}, {Name: "m", Type: catalog.Decimal(6, 2)}, {Name: "t", Type: catalog.Timestamp},
	{Name: "ok", Type: catalog.Boolean}, {Name: "seq", Type: catalog.BigInt}, {Name: "ss", Type: catalog.String},
}

func dgTable(kv ...string) *catalog.Table {
	base := []string{"connector", "datagen", "rows-per-second", "0", "number-of-rows", "500",
		"fields.b.min", "-5", "fields.b.max", "5", "fields.s.length", "7", "fields.s.null-rate", "0.3",
		"fields.d.min", "0", "fields.d.max", "1", "fields.t.max-past", "1 h",
		"fields.seq.kind", "sequence", "fields.seq.start", "100", "fields.seq.end", "100000",
		"fields.ss.kind", "sequence", "fields.ss.start", "1", "fields.ss.end", "1000000"}
	return table("gen", dgSchema, append(base, kv...)...)
}

func TestDatagenDeterministic(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	ref, _ := runSource(t, mem, dgTable(), 1, 1024)
	if len(ref) != 500 {
		t.Fatalf("%d rows", len(ref))
	}
	for _, c := range []struct{ p, batch int }{{4, 7}, {3, 1}, {2, 1000}} {
		got, _ := runSource(t, mem, dgTable(), c.p, c.batch)
		if strings.Join(got, "\n") != strings.Join(ref, "\n") {
			t.Fatalf("p=%d batch=%d: rows differ", c.p, c.batch)
		}
	}
	other, _ := runSource(t, mem, dgTable("seed", "42"), 2, 64)
	if strings.Join(other, "\n") == strings.Join(ref, "\n") {
		t.Fatal("another seed gives the same rows")
	}
	// value checks
	nulls := 0
	seqs := map[string]bool{}
	for _, r := range ref {
		f := strings.Split(r, "|")
		var b int
		fmt.Sscan(f[1], &b)
		if b < -5 || b > 5 {
			t.Fatalf("b out of range: %s", r)
		}
		if f[2] == "NULL" {
			nulls++
		} else if len(f[2]) != 7 {
			t.Fatalf("string length: %s", r)
		}
		if !strings.HasPrefix(f[5], "2023-12-31 2") && !strings.HasPrefix(f[5], "2024-01-01 00:00:00.000") {
			t.Fatalf("timestamp not within 1 h before the base: %s", r)
		}
		seqs[f[7]] = true
		if f[7] != fmt.Sprint(99+mustInt(f[8])) {
			t.Fatalf("sequences out of step: %s", r)
		}
	}
	if nulls < 100 || nulls > 200 {
		t.Fatalf("null-rate 0.3 gave %d nulls of 500", nulls)
	}
	if len(seqs) != 500 || !seqs["100"] || !seqs["599"] {
		t.Fatal("sequence is not 100..599")
	}
}

func mustInt(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

func TestDatagenSequenceBoundsAndSeek(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	s := catalog.Schema{{Name: "id", Type: catalog.Int}}
	tb := table("seq", s, "connector", "datagen", "rows-per-second", "0", "fields.id.kind", "sequence", "fields.id.start", "1", "fields.id.end", "10")
	rows, _ := runSource(t, mem, tb, 3, 2)
	if strings.Join(rows, ",") != "1,10,2,3,4,5,6,7,8,9" {
		t.Fatal(rows)
	}
	// stop after one batch, then resume from the offset in a new instance
	sc := &exec.SourceContext{Subtask: 1, Parallelism: 2, Mem: mem, BatchSize: 2}
	src, _ := NewSource(tb, sc)
	stop := errors.New("stop")
	var first []string
	err := src.Run(context.Background(), func(r arrow.Record) error {
		first = append(first, recRows(r)...)
		r.Release()
		return stop
	})
	if err != stop {
		t.Fatal(err)
	}
	off := src.(*Datagen).Offset()
	src.Close()
	if off != 2 || strings.Join(first, ",") != "2,4" {
		t.Fatalf("offset %d first %v", off, first)
	}
	src2, _ := NewSource(tb, sc)
	src2.(*Datagen).SeekTo(off)
	var rest []string
	src2.Run(context.Background(), func(r arrow.Record) error { rest = append(rest, recRows(r)...); r.Release(); return nil })
	src2.Close()
	if strings.Join(rest, ",") != "6,8,10" {
		t.Fatal(rest)
	}
}

// TestDatagenRateLimit drives the token bucket with a fake clock.
func TestDatagenRateLimit(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	tb := table("r", catalog.Schema{{Name: "a", Type: catalog.BigInt}}, "connector", "datagen", "rows-per-second", "20")
	src, err := NewSource(tb, &exec.SourceContext{Subtask: 0, Parallelism: 2, Mem: mem, BatchSize: 4, Linger: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	g := src.(*Datagen)
	now := time.Unix(0, 0)
	g.now = func() time.Time { return now }
	g.sleep = func(ctx context.Context, d time.Duration) error { now = now.Add(d); return nil }
	rows, beats := 0, 0
	stop := errors.New("stop")
	err = g.Run(context.Background(), func(r arrow.Record) error {
		if r == nil {
			beats++
		} else {
			rows += int(r.NumRows())
			r.Release()
		}
		if now.Sub(time.Unix(0, 0)) >= 10*time.Second {
			return stop
		}
		return nil
	})
	if err != stop {
		t.Fatal(err)
	}
	// 10 rows/s for this subtask (half of 20) over 10 s, plus the initial token
	if rows < 95 || rows > 106 {
		t.Fatalf("%d rows in 10 s at 10 rows/s", rows)
	}
	if beats == 0 {
		t.Fatal("no heartbeats while waiting")
	}
}

func BenchmarkDatagen(b *testing.B) {
	tb := table("g", catalog.Schema{{Name: "a", Type: catalog.BigInt}, {Name: "b", Type: catalog.BigInt}},
		"connector", "datagen", "rows-per-second", "0")
	src, _ := NewSource(tb, &exec.SourceContext{Parallelism: 1, Mem: memory.NewGoAllocator(), BatchSize: 4096})
	g := src.(*Datagen)
	b.ResetTimer()
	rows := 0
	for rows < b.N {
		r := g.Generate(4096)
		g.splits[0].k += 4096
		rows += 4096
		r.Release()
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}
