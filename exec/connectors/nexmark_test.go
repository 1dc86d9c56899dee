package connectors

import (
	"context"
	"errors"
	"fmt"
	"github.com/streamsql/streamsql/internal/memtest"
	"math"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
)

// nexSchema is the schema of Flink's Nexmark DDL (ddl_gen.sql).
func nexSchema() catalog.Schema {
	c := func(n string, t catalog.Type) catalog.Column { return catalog.Column{Name: n, Type: t} }
	s, b, ts := catalog.String, catalog.BigInt, catalog.Timestamp
	return catalog.Schema{
		c("event_type", catalog.Int),
		c("person", catalog.Row(c("id", b), c("name", s), c("emailAddress", s), c("creditCard", s), c("city", s), c("state", s), c("dateTime", ts), c("extra", s))),
		c("auction", catalog.Row(c("id", b), c("itemName", s), c("description", s), c("initialBid", b), c("reserve", b), c("dateTime", ts), c("expires", ts), c("seller", b), c("category", b), c("extra", s))),
		c("bid", catalog.Row(c("auction", b), c("bidder", b), c("price", b), c("channel", s), c("url", s), c("dateTime", ts), c("extra", s))),
	}
}

func nexTable(kv ...string) *catalog.Table {
	return table("datagen", nexSchema(), append([]string{"connector", "nexmark"}, kv...)...)
}

// nexEvents runs subtask i of p of tb with the given batch size and
// returns its events rendered one per line, keyed by event time and kind.
func nexEvents(t *testing.T, mem memory.Allocator, tb *catalog.Table, p, batch int) []string {
	t.Helper()
	var all []string
	for i := 0; i < p; i++ {
		sc := &exec.SourceContext{Subtask: i, Parallelism: p, Mem: mem, BatchSize: batch, Schema: tb.Schema, SkippedRecords: new(atomic.Int64)}
		src, err := NewSource(tb, sc)
		if err != nil {
			t.Fatal(err)
		}
		err = src.Run(context.Background(), func(r arrow.Record) error {
			if r != nil {
				all = append(all, nexRender(r)...)
				r.Release()
			}
			return nil
		})
		src.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return sortedCopy(all)
}

// nexRender renders each event: event_type then the fields of its ROW.
func nexRender(r arrow.Record) []string {
	out := make([]string, r.NumRows())
	kinds := r.Column(0).(*array.Int32)
	for i := range out {
		k := int(kinds.Value(i))
		st := r.Column(1 + k).(*array.Struct)
		parts := []string{fmt.Sprint(k)}
		for f := 0; f < st.NumField(); f++ {
			parts = append(parts, st.Field(f).ValueStr(i))
		}
		for o := 1; o <= 3; o++ {
			if o != 1+k && r.Column(o).IsValid(i) {
				parts = append(parts, "OTHER ROW SET")
			}
		}
		out[i] = strings.Join(parts, "|")
	}
	return out
}

// TestNexmarkDeterministic: the same events at every parallelism and batch
// size, and for a given seed only; no leak.
func TestNexmarkDeterministic(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	tb := nexTable("events.num", "3000")
	ref := nexEvents(t, mem, tb, 1, 1024)
	if len(ref) != 3000 {
		t.Fatalf("%d events", len(ref))
	}
	for _, c := range []struct{ p, batch int }{{1, 1}, {3, 7}, {4, 1000}} {
		if got := nexEvents(t, mem, tb, c.p, c.batch); strings.Join(got, "\n") != strings.Join(ref, "\n") {
			t.Fatalf("p%d batch %d: the events differ", c.p, c.batch)
		}
	}
	other := nexEvents(t, mem, nexTable("events.num", "3000", "seed", "1"), 1, 1024)
	same := 0
	for i := range other {
		if other[i] == ref[i] {
			same++
		}
	}
	if same > 100 {
		t.Fatalf("seed 1 gives %d of 3000 events identical to seed 0", same)
	}
}

// TestNexmarkDistributions: the reference generator's shape, over 100,000
// events at the default options: kinds 1/3/46 of 50; ids, times and the
// hot auction, bidder and channel shares; prices as round(10^(6u) * 100).
func TestNexmarkDistributions(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	const events = 100_000
	tb := nexTable("events.num", fmt.Sprint(events))
	sc := &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: 4096, Schema: tb.Schema, SkippedRecords: new(atomic.Int64)}
	src, err := NewSource(tb, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var kinds [3]int
	var n, hotBids, hotChannels, persons int
	lastPerson, lastAuction := int64(999), int64(999)
	minPrice, maxPrice := int64(math.MaxInt64), int64(0)
	var logPriceSum float64
	var bidSize, categories int
	prevTime := int64(0)
	err = src.Run(context.Background(), func(r arrow.Record) error {
		defer r.Release()
		kind := r.Column(0).(*array.Int32)
		person, auction, bid := r.Column(1).(*array.Struct), r.Column(2).(*array.Struct), r.Column(3).(*array.Struct)
		for i := 0; i < int(r.NumRows()); i++ {
			k := kind.Value(i)
			kinds[k]++
			if want := []int32{0, 1, 1, 1}; n%50 < 4 && k != want[n%50] || n%50 >= 4 && k != 2 {
				return fmt.Errorf("event %d is of kind %d", n, k)
			}
			var ts int64
			switch k {
			case 0:
				id := person.Field(0).(*array.Int64).Value(i)
				if id != lastPerson+1 {
					return fmt.Errorf("person id %d after %d", id, lastPerson)
				}
				lastPerson = id
				persons++
				ts = int64(person.Field(6).(*array.Timestamp).Value(i))
				if st := person.Field(5).(*array.String).Value(i); !strings.Contains("AZ,CA,ID,OR,WA,WY", st) {
					return fmt.Errorf("state %q", st)
				}
			case 1:
				id := auction.Field(0).(*array.Int64).Value(i)
				if id != lastAuction+1 {
					return fmt.Errorf("auction id %d after %d", id, lastAuction)
				}
				lastAuction = id
				ts = int64(auction.Field(5).(*array.Timestamp).Value(i))
				if exp := int64(auction.Field(6).(*array.Timestamp).Value(i)); exp <= ts {
					return fmt.Errorf("auction %d expires at %d, created %d", id, exp, ts)
				}
				if c := auction.Field(8).(*array.Int64).Value(i); c < 10 || c > 14 {
					return fmt.Errorf("category %d", c)
				}
				categories++
			case 2:
				a := bid.Field(0).(*array.Int64).Value(i)
				if a > lastAuction+10 || a < 1000 {
					return fmt.Errorf("bid %d for auction %d (last %d)", n, a, lastAuction)
				}
				if (a-1000)%100 == 0 {
					hotBids++
				}
				p := bid.Field(2).(*array.Int64).Value(i)
				minPrice, maxPrice = min(minPrice, p), max(maxPrice, p)
				logPriceSum += math.Log10(float64(p) / 100)
				switch bid.Field(3).(*array.String).Value(i) {
				case "Google", "Facebook", "Baidu", "Apple":
					hotChannels++
				}
				ts = int64(bid.Field(5).(*array.Timestamp).Value(i))
				bidSize += 32 + bid.Field(6).(*array.String).ValueLen(i)
			}
			if want := DatagenBaseTime + int64(n)/10; ts != want || ts < prevTime {
				return fmt.Errorf("event %d at %d, want %d (10,000 events per second of event time)", n, ts, want)
			}
			prevTime = ts
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	bids := float64(kinds[2])
	if kinds[0] != events/50 || kinds[1] != 3*events/50 || n != events {
		t.Fatalf("kinds %v of %d", kinds, n)
	}
	// hot auctions: half the bids (hot-ratio 2) plus the random ones that
	// happen to hit a multiple of 100
	if f := float64(hotBids) / bids; f < 0.48 || f > 0.56 {
		t.Errorf("%.3f of the bids go to a hot auction, want about 0.5", f)
	}
	if f := float64(hotChannels) / bids; f < 0.48 || f > 0.52 {
		t.Errorf("%.3f of the bids use a hot channel, want 0.5", f)
	}
	if mean := logPriceSum / bids; minPrice < 100 || maxPrice > 100_000_000 || mean < 2.95 || mean > 3.05 {
		t.Errorf("prices %d..%d, mean log10(price/100) %.3f, want 100..1e8 and about 3", minPrice, maxPrice, mean)
	}
	if avg := float64(bidSize) / bids; avg < 95 || avg > 105 {
		t.Errorf("bids average %.1f bytes, want about 100 (bid.avg-size)", avg)
	}
}

// TestNexmarkRestoreAndRescale: snapshots taken after each batch at p2
// restore at p2 and at p3 and p1 to exactly the rest of the stream.
func TestNexmarkRestoreAndRescale(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	tb := nexTable("events.num", "2000")
	ref := nexEvents(t, mem, tb, 1, 1024)
	run := func(p int, prev [][]byte, stop func(j int) int) (rows []string, states [][]byte) {
		for j := 0; j < p; j++ {
			sc := &exec.SourceContext{Subtask: j, Parallelism: p, Mem: mem, BatchSize: 50, Schema: tb.Schema, SkippedRecords: new(atomic.Int64)}
			src := newCkSource(t, tb, sc)
			if prev != nil {
				if err := src.(exec.SplitSource).RestoreSplits(prev, owners(len(prev), j, p)); err != nil {
					t.Fatal(err)
				}
			}
			batches := 0
			err := src.Run(context.Background(), func(r arrow.Record) error {
				rows = append(rows, nexRender(r)...)
				r.Release()
				if batches++; batches == stop(j) {
					return errStopRun
				}
				return nil
			})
			if err != nil && err != errStopRun {
				t.Fatal(err)
			}
			st, err := src.SnapshotState()
			if err != nil {
				t.Fatal(err)
			}
			states = append(states, st)
			src.Close()
		}
		return rows, states
	}
	r1, s1 := run(2, nil, func(j int) int { return 3 + 4*j })
	r2, s2 := run(3, s1, func(j int) int { return 2 + j })
	r3, _ := run(1, s2, func(int) int { return -1 })
	all := sortedCopy(append(append(r1, r2...), r3...))
	if strings.Join(all, "\n") != strings.Join(ref, "\n") {
		t.Fatalf("%d events over the runs (%d+%d+%d), want the %d of one run", len(all), len(r1), len(r2), len(r3), len(ref))
	}
	// same parallelism: RestoreState continues each split
	sc := &exec.SourceContext{Subtask: 1, Parallelism: 2, Mem: mem, BatchSize: 50, Schema: tb.Schema, SkippedRecords: new(atomic.Int64)}
	src := newCkSource(t, tb, sc)
	defer src.Close()
	if err := src.RestoreState(s1[1]); err != nil {
		t.Fatal(err)
	}
	if err := src.RestoreState(s1[0]); err == nil || !strings.Contains(err.Error(), "nexmark source: cannot restore the state of subtask 0 of 2 into subtask 1 of 2") {
		t.Fatalf("a state of another subtask: %v", err)
	}
}

// TestNexmarkProjection: a table may declare a subset of the columns and
// of the ROW fields, in any order (as an older DDL without channel/url);
// unknown columns, fields and wrong types are refused, naming them.
func TestNexmarkProjection(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	c := func(n string, t catalog.Type) catalog.Column { return catalog.Column{Name: n, Type: t} }
	sub := catalog.Schema{
		c("bid", catalog.Row(c("price", catalog.BigInt), c("auction", catalog.BigInt))),
		c("event_type", catalog.Int),
	}
	tb := table("b", sub, "connector", "nexmark", "events.num", "100")
	full := nexEvents(t, mem, nexTable("events.num", "100"), 1, 100)
	sc := &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: 100, Schema: tb.Schema, SkippedRecords: new(atomic.Int64)}
	src, err := NewSource(tb, sc)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = src.Run(context.Background(), func(r arrow.Record) error {
		defer r.Release()
		bid := r.Column(0).(*array.Struct)
		kind := r.Column(1).(*array.Int32)
		for i := 0; i < int(r.NumRows()); i++ {
			if kind.Value(i) == 2 {
				got = append(got, fmt.Sprintf("2|%d|%d", bid.Field(1).(*array.Int64).Value(i), bid.Field(0).(*array.Int64).Value(i)))
			} else if bid.IsValid(i) {
				t.Errorf("row %d: bid set for event type %d", i, kind.Value(i))
			}
		}
		return nil
	})
	src.Close()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range full {
		if f := strings.Split(e, "|"); f[0] == "2" {
			want = append(want, strings.Join(f[:2], "|")+"|"+f[3])
		}
	}
	want = sortedCopy(want)
	if strings.Join(sortedCopy(got), "\n") != strings.Join(want, "\n") {
		t.Fatalf("projected bids differ:\n%v\nwant\n%v", sortedCopy(got)[:3], want[:3])
	}
	for _, bad := range []struct {
		s    catalog.Schema
		want string
	}{
		{catalog.Schema{c("events", catalog.Int)}, "the table has column 'events'"},
		{catalog.Schema{c("bid", catalog.Row(c("cost", catalog.BigInt)))}, "bid has no field 'cost'"},
		{catalog.Schema{c("bid", catalog.Row(c("price", catalog.String)))}, "field bid.price must be BIGINT"},
		{catalog.Schema{c("event_type", catalog.BigInt)}, "column 'event_type' must be INT"},
	} {
		tb := table("x", bad.s, "connector", "nexmark")
		_, err := NewSource(tb, &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: 10, Schema: tb.Schema})
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: error %v, want %q", bad.s, err, bad.want)
		}
	}
}

// TestNexmarkKeepAlive: with keep-alive the source stays up after its last
// event, heartbeating, until cancelled.
func TestNexmarkKeepAlive(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	tb := nexTable("events.num", "10", "keep-alive", "true")
	sc := &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: 100, Linger: time.Millisecond, Schema: tb.Schema, SkippedRecords: new(atomic.Int64)}
	src, err := NewSource(tb, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx, cancel := context.WithCancel(context.Background())
	rows, beats := 0, 0
	err = src.Run(ctx, func(r arrow.Record) error {
		if r == nil {
			if beats++; beats == 3 {
				cancel()
			}
			return nil
		}
		rows += int(r.NumRows())
		r.Release()
		return nil
	})
	if err != context.Canceled || rows != 10 || beats < 3 {
		t.Fatalf("err %v, %d rows, %d heartbeats", err, rows, beats)
	}
}

// BenchmarkNexmarkSource: events per second of one subtask of the nexmark
// source into a blackhole (the generator's share of every Nexmark query):
// "all" generates every column of the DDL, "tumble" only what the TUMBLE
// benchmark (bench.BenchmarkNexmarkTumble) reads after projection
// push-down: event_type, the three dateTime fields and bid.price.
func BenchmarkNexmarkSource(b *testing.B) {
	field := func(fs ...int) []bool {
		v := make([]bool, 10)
		for _, f := range fs {
			v[f] = true
		}
		return v
	}
	for _, c := range []struct {
		name string
		use  []exec.ColumnUse
	}{
		{"all", nil},
		{"tumble", []exec.ColumnUse{{Used: true}, {Used: true, Fields: field(pTime)}, {Used: true, Fields: field(aTime)}, {Used: true, Fields: field(bPrice, bTime)}}},
		// Nexmark q0 and q1: every bid field but channel and url
		{"q1", []exec.ColumnUse{{Used: true}, {}, {}, {Used: true, Fields: field(bAuction, bBidder, bPrice, bTime, bExtra)}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			mem := memory.NewGoAllocator()
			const events = 2_000_000
			tb := nexTable("events.num", fmt.Sprint(events))
			start, cpu0 := time.Now(), processCPU()
			for i := 0; i < b.N; i++ {
				sc := &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: 1024, Schema: tb.Schema, Columns: c.use, SkippedRecords: new(atomic.Int64)}
				src, err := NewSource(tb, sc)
				if err != nil {
					b.Fatal(err)
				}
				if err := src.Run(context.Background(), func(r arrow.Record) error { r.Release(); return nil }); err != nil {
					b.Fatal(err)
				}
				src.Close()
			}
			el, cpu := time.Since(start), processCPU()-cpu0
			b.ReportMetric(float64(events)*float64(b.N)/el.Seconds(), "events/s")
			// per CPU-second of the process (GC included): less disturbed
			// by other work on the machine than wall time
			b.ReportMetric(float64(events)*float64(b.N)/cpu.Seconds(), "events/cpu-s")
			b.ReportMetric(float64(el.Nanoseconds())/float64(events)/float64(b.N), "ns/event")
		})
	}
}

// processCPU is the user+system CPU time of the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestNexmarkOptionErrors: options the source cannot honour are refused at
// CREATE TABLE, naming the option.
func TestNexmarkOptionErrors(t *testing.T) {
	for _, c := range []struct {
		kv        []string
		key, want string
	}{
		{[]string{"rate.limited", "true"}, "rate.limited", "is not supported"},
		{[]string{"max-emit-speed", "false"}, "max-emit-speed", "is not supported"},
		{[]string{"person.proportion", "0", "auction.proportion", "0", "bid.proportion", "0"}, "bid.proportion", "no event to generate"},
		{[]string{"first-event.rate", "0"}, "first-event.rate", ""},
		{[]string{"events.nums", "10"}, "events.nums", "did you mean 'events.num'"},
	} {
		err := catalog.ValidateTable(nexTable(c.kv...))
		var oe *catalog.OptionError
		if !errors.As(err, &oe) || oe.Key != c.key || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one at option %s containing %q", c.kv, err, c.key, c.want)
		}
	}
	if err := catalog.ValidateTable(nexTable("events.num", "10", "rate.limited", "false")); err != nil {
		t.Errorf("valid options: %v", err)
	}
}

// TestNexmarkColumnPushDown: told which columns and ROW fields a job reads
// (SourceContext.Columns), the source generates exactly those, with the
// values of the full generator, and leaves the rest NULL; a ROW not read
// is NULL throughout; at batch sizes that leave a partial last batch; no
// leak.
func TestNexmarkColumnPushDown(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	const events = 2000
	tb := nexTable("events.num", fmt.Sprint(events))
	field := func(fs ...int) []bool {
		b := make([]bool, 10)
		for _, f := range fs {
			b[f] = true
		}
		return b
	}
	for _, c := range []struct {
		name string
		use  []exec.ColumnUse
	}{
		{"tumble", []exec.ColumnUse{{Used: true}, {Used: true, Fields: field(pTime)}, {Used: true, Fields: field(aTime)}, {Used: true, Fields: field(bPrice, bTime)}}},
		{"strings", []exec.ColumnUse{{Used: true}, {Used: true, Fields: field(pName, pCity, pExtra)}, {}, {Used: true, Fields: field(bURL, bExtra)}}},
		{"auction", []exec.ColumnUse{{Used: true}, {}, {Used: true, Fields: field(aReserve, aSeller, aXt)}, {}}},
		// a bid's auction alone (Nexmark q5's GROUP BY auction): it is
		// drawn, not derived from the event number like the ids
		{"bid auction", []exec.ColumnUse{{Used: true}, {}, {}, {Used: true, Fields: field(bAuction, bTime)}}},
		{"no kind", []exec.ColumnUse{{}, {}, {}, {Used: true}}},
	} {
		for _, batch := range []int{7, 1024} {
			t.Run(fmt.Sprintf("%s/batch%d", c.name, batch), func(t *testing.T) {
				sc := &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: batch, Schema: tb.Schema, Columns: c.use, SkippedRecords: new(atomic.Int64)}
				src, err := NewSource(tb, sc)
				if err != nil {
					t.Fatal(err)
				}
				// The full generator's events in order, to compare with.
				ref := nexEventsInOrder(t, mem, tb, batch)
				n := 0
				err = src.Run(context.Background(), func(r arrow.Record) error {
					defer r.Release()
					for i := 0; i < int(r.NumRows()); i++ {
						want := ref[n]
						n++
						for col := 0; col < 4; col++ {
							got := r.Column(col)
							u := c.use[col]
							if !u.Used {
								if got.IsValid(i) {
									t.Fatalf("event %d: column %d not read but set", n-1, col)
								}
								continue
							}
							if col == 0 {
								if got.ValueStr(i) != want[0] {
									t.Fatalf("event %d: event_type %s, want %s", n-1, got.ValueStr(i), want[0])
								}
								continue
							}
							st := got.(*array.Struct)
							if st.IsValid(i) != (want[col] != nil) {
								t.Fatalf("event %d: ROW %d valid %v", n-1, col, st.IsValid(i))
							}
							for f := 0; f < st.NumField(); f++ {
								v := st.Field(f)
								switch {
								case !u.FieldUsed(f) || want[col] == nil:
									if v.IsValid(i) {
										t.Fatalf("event %d: field %d.%d set (not read, or another kind)", n-1, col, f)
									}
								case v.ValueStr(i) != want[col].([]string)[f]:
									t.Fatalf("event %d: field %d.%d = %q, want %q", n-1, col, f, v.ValueStr(i), want[col].([]string)[f])
								}
							}
						}
					}
					return nil
				})
				src.Close()
				if err != nil {
					t.Fatal(err)
				}
				if n != events {
					t.Fatalf("%d events", n)
				}
			})
		}
	}
}

// nexEventsInOrder returns the full generator's events in order: per
// event, event_type then for each ROW its fields' values (nil: NULL).
func nexEventsInOrder(t *testing.T, mem memory.Allocator, tb *catalog.Table, batch int) [][4]any {
	t.Helper()
	sc := &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: batch, Schema: tb.Schema, SkippedRecords: new(atomic.Int64)}
	src, err := NewSource(tb, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var out [][4]any
	err = src.Run(context.Background(), func(r arrow.Record) error {
		defer r.Release()
		for i := 0; i < int(r.NumRows()); i++ {
			var e [4]any
			e[0] = strings.Clone(r.Column(0).ValueStr(i)) // ValueStr of a string is a view of the batch
			for col := 1; col < 4; col++ {
				st := r.Column(col).(*array.Struct)
				if !st.IsValid(i) {
					continue
				}
				vals := make([]string, st.NumField())
				for f := range vals {
					vals[f] = strings.Clone(st.Field(f).ValueStr(i))
				}
				e[col] = vals
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNexmarkPriceFormula: nexPrice (exp(6u ln 10)) gives the prices of
// the reference formula round(10^(6u) * 100) for 2,000,000 draws of the
// events' generator.
func TestNexmarkPriceFormula(t *testing.T) {
	diff := 0
	for n := int64(0); n < 2_000_000; n++ {
		r := newNexRand(7, n)
		ref := r
		got := nexPrice(&r)
		if want := int64(math.Round(math.Pow(10, ref.float()*6) * 100)); got != want {
			diff++
			if diff < 5 {
				t.Errorf("draw %d: price %d, the reference formula gives %d", n, got, want)
			}
		}
	}
	if diff > 0 {
		t.Fatalf("%d of 2,000,000 prices differ", diff)
	}
}

// TestNexmarkFastPrice: nexPriceOf (a table and a polynomial, math.Exp
// near a rounding boundary) is round(math.Exp(x) * 100) exactly: on the
// events' draws, and on draws placed next to the half-integers where
// the two could part (each price's boundary, the grid points of u around
// it), where the slow path must be taken.
func TestNexmarkFastPrice(t *testing.T) {
	exact := func(x float64) int64 { return int64(math.Round(math.Exp(x) * 100)) }
	diff := 0
	check := func(x float64) {
		if got, want := nexPriceOf(x), exact(x); got != want {
			diff++
			if diff < 5 {
				t.Errorf("x %v: price %d, math.Exp gives %d", x, got, want)
			}
		}
	}
	draws := 5_000_000
	if testing.Short() {
		draws = 500_000
	}
	for n := 0; n < draws; n++ {
		r := newNexRand(11, int64(n))
		check(r.float() * (6 * math.Ln10))
	}
	// u = k / 2^53 next to the u whose price is exactly m + 0.5
	r := newNexRand(3, 0)
	slow := 0
	for i := 0; i < 200_000; i++ {
		m := 100 + r.intn(99_999_900)
		if i%4 == 0 {
			m = 100 + r.intn(10_000) // dense at the low end, where u's grid is coarse against the prices
		}
		u := math.Log((float64(m)+0.5)/100) / (6 * math.Ln10)
		k := int64(u * (1 << 53))
		for d := int64(-60); d <= 60; d += 4 {
			x := float64(k+d) / (1 << 53) * (6 * math.Ln10)
			if x < 0 {
				continue
			}
			check(x)
			z := nexExp100(x)
			if math.Abs(z-math.Floor(z)-0.5) <= z*nexExpTol {
				slow++
			}
		}
	}
	if diff > 0 {
		t.Fatalf("%d prices differ", diff)
	}
	if slow == 0 {
		t.Fatal("no input took math.Exp's path: the boundary cases were not reached")
	}
	t.Logf("%d boundary inputs took math.Exp's path", slow)
}

func BenchmarkNexmarkPrice(b *testing.B) {
	for _, c := range []struct {
		name string
		f    func(float64) int64
	}{
		{"exp", func(x float64) int64 { return int64(math.Round(math.Exp(x) * 100)) }},
		{"fast", nexPriceOf},
		{"draw only", func(x float64) int64 { return int64(x) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := newNexRand(1, 0)
			var s int64
			cpu0 := processCPU()
			for i := 0; i < b.N; i++ {
				s += c.f(r.float() * (6 * math.Ln10))
			}
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			if s == 42 {
				b.Log(s)
			}
		})
	}
}
