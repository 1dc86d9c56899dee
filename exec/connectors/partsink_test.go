package connectors

import (
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/exec/format"
	"github.com/streamsql/streamsql/internal/memtest"
)

var partSchema = catalog.Schema{
	{Name: "v", Type: catalog.Type{Kind: catalog.KindString}},
	{Name: "dt", Type: catalog.Type{Kind: catalog.KindString}},
	{Name: "hm", Type: catalog.Type{Kind: catalog.KindString}},
}

type fixedClock struct{ t time.Time }

func (c *fixedClock) Now() time.Time { return c.t }

// partDir is a partitioned sink's directory and the job-attempt scope its
// subtasks share (a new attempt: newAttempt).
type partDir struct {
	t     *testing.T
	dir   string
	tb    *catalog.Table
	mu    sync.Mutex
	scope map[string]any
	clock *fixedClock
}

func newPartDir(t *testing.T, kv2 ...string) *partDir {
	dir := filepath.Join(t.TempDir(), "out")
	tb := table("sink", partSchema, append([]string{"connector", "filesystem", "path", "file://" + dir, "format", "csv",
		"sink.partition-commit.policy.kind", "success-file"}, kv2...)...)
	tb.PartitionKeys = []string{"dt", "hm"}
	if _, err := catalog.PartitionCommitFromTable(tb); err != nil {
		t.Fatal(err)
	}
	return &partDir{t: t, dir: dir, tb: tb, scope: map[string]any{},
		clock: &fixedClock{time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}}
}

func (d *partDir) newAttempt() { d.scope = map[string]any{} }

func (d *partDir) sink(mem memory.Allocator, subtask, par int, checkpointing bool) *PartitionedSink {
	d.t.Helper()
	s, err := NewSink(d.tb, &exec.SinkContext{Subtask: subtask, Parallelism: par, Mem: mem, Checkpointing: checkpointing,
		Schema: partSchema, Clock: d.clock, Shared: func(key string, mk func() any) any {
			d.mu.Lock()
			defer d.mu.Unlock()
			if v, ok := d.scope[key]; ok {
				return v
			}
			v := mk()
			d.scope[key] = v
			return v
		}})
	if err != nil {
		d.t.Fatal(err)
	}
	return s.(*PartitionedSink)
}

// write writes rows "v|dt|hm" ("" dt: NULL).
func (d *partDir) write(s *PartitionedSink, mem memory.Allocator, rows ...string) {
	d.t.Helper()
	b := array.NewRecordBuilder(mem, partSchema.Arrow())
	defer b.Release()
	for _, r := range rows {
		f := strings.Split(r, "|")
		for i, v := range f {
			sb := b.Field(i).(*array.StringBuilder)
			if v == "" {
				sb.AppendNull()
			} else {
				sb.Append(v)
			}
		}
	}
	rec := b.NewRecord()
	defer rec.Release()
	if err := s.Write(exec.Batch{Rec: rec}); err != nil {
		d.t.Fatal(err)
	}
}

// tree lists every partition directory as "rel: committed rows (sorted)
// [+SUCCESS] [+hidden N]".
func (d *partDir) tree() string {
	d.t.Helper()
	dirs, err := partitionDirs(d.dir, 2)
	if err != nil {
		d.t.Fatal(err)
	}
	var out []string
	for _, rel := range dirs {
		ents, _ := os.ReadDir(filepath.Join(d.dir, rel))
		var rows []string
		success, hidden := false, 0
		for _, e := range ents {
			switch n := e.Name(); {
			case n == "_SUCCESS":
				success = true
			case strings.HasPrefix(n, "."):
				hidden++
			default:
				b, _ := os.ReadFile(filepath.Join(d.dir, rel, n))
				rows = append(rows, strings.Fields(string(b))...)
			}
		}
		sort.Strings(rows)
		line := []string{rel + ":"}
		if len(rows) > 0 {
			line = append(line, strings.Join(rows, ","))
		}
		if success {
			line = append(line, "+SUCCESS")
		}
		if hidden > 0 {
			line = append(line, "+hidden")
		}
		out = append(out, strings.Join(line, " "))
	}
	return strings.Join(out, "\n")
}

func ms(s string) int64 {
	t, err := time.Parse("2006-01-02 15:04:05", s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

func expectTree(t *testing.T, d *partDir, step, want string) {
	t.Helper()
	if got := d.tree(); got != strings.TrimSpace(want) {
		t.Fatalf("%s:\n%s\nwant\n%s", step, got, strings.TrimSpace(want))
	}
}

// Rows go to escaped k=v directories without their partition columns;
// NULL is the default partition; without checkpointing everything commits
// at the end of the input.
func TestPartitionedSinkRoutesRows(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	d := newPartDir(t)
	s := d.sink(mem, 0, 1, false)
	d.write(s, mem, "a|2024-01-01|00:00", "b|2024-01-01|00:01", "c||x/y=1", "d|2024-01-01|00:00")
	d.write(s, mem, "e|2024-01-01|00:00")
	expectTree(t, d, "before the end", `
dt=2024-01-01/hm=00%3A00: +hidden
dt=2024-01-01/hm=00%3A01: +hidden
dt=__DEFAULT_PARTITION__/hm=x%2Fy%3D1: +hidden`)
	if err := s.OnWatermark(exec.MaxWatermark); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	expectTree(t, d, "after the end", `
dt=2024-01-01/hm=00%3A00: a,d,e +SUCCESS
dt=2024-01-01/hm=00%3A01: b +SUCCESS
dt=__DEFAULT_PARTITION__/hm=x%2Fy%3D1: c +SUCCESS`)
	if got := unescapePartition("x%2Fy%3D1%zz%4"); got != "x/y=1%zz%4" {
		t.Errorf("unescape: %q", got)
	}
}

// Partition-time commit: a partition is committed once the lowest
// watermark of all subtasks passes its time plus the delay, and only after
// a checkpoint committed its files.
func TestPartitionCommitPartitionTime(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	d := newPartDir(t, "sink.partition-commit.trigger", "partition-time", "sink.partition-commit.delay", "1 min",
		"partition.time-extractor.timestamp-pattern", "$dt $hm:00")
	s0, s1 := d.sink(mem, 0, 2, true), d.sink(mem, 1, 2, true)
	defer s0.Close()
	defer s1.Close()
	step := func(id int64, wm0, wm1 string) {
		t.Helper()
		for i, s := range []*PartitionedSink{s0, s1} {
			wm := []string{wm0, wm1}[i]
			if wm != "" {
				w := exec.MaxWatermark
				if wm != "max" {
					w = ms(wm)
				}
				if err := s.OnWatermark(w); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.PreCommit(id); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range []*PartitionedSink{s0, s1} {
			if err := s.Commit(id); err != nil {
				t.Fatal(err)
			}
		}
	}
	d.write(s0, mem, "a|2024-01-01|00:00")
	d.write(s1, mem, "b|2024-01-01|00:00", "c|2024-01-01|00:01")
	step(1, "2024-01-01 00:01:30", "2024-01-01 00:00:30")
	expectTree(t, d, "checkpoint 1 (watermark 00:00:30)", `
dt=2024-01-01/hm=00%3A00: a,b
dt=2024-01-01/hm=00%3A01: c`)
	step(2, "", "2024-01-01 00:02:00")
	expectTree(t, d, "checkpoint 2 (watermark 00:01:30)", `
dt=2024-01-01/hm=00%3A00: a,b +SUCCESS
dt=2024-01-01/hm=00%3A01: c`)
	step(3, "2024-01-01 00:02:00", "2024-01-01 00:02:01")
	expectTree(t, d, "checkpoint 3 (watermark 00:02:00, not past 00:01 + 1 min)", `
dt=2024-01-01/hm=00%3A00: a,b +SUCCESS
dt=2024-01-01/hm=00%3A01: c`)
	d.write(s0, mem, "d|2024-01-01|00:05")
	step(4, "max", "max")
	expectTree(t, d, "the end", `
dt=2024-01-01/hm=00%3A00: a,b +SUCCESS
dt=2024-01-01/hm=00%3A01: c +SUCCESS
dt=2024-01-01/hm=00%3A05: d +SUCCESS`)
	if n := s0.committer.count; n != 3 {
		t.Errorf("%d partition commits, want 3 (each once)", n)
	}
	if len(s0.toCommit)+len(s1.toCommit) != 0 {
		step(5, "", "")
		if len(s0.toCommit)+len(s1.toCommit) != 0 {
			t.Errorf("committed partitions still tracked: %v %v", s0.toCommit, s1.toCommit)
		}
	}
}

// Process-time commit: the clock passes the partition's first write plus
// the delay (an injected clock).
func TestPartitionCommitProcessTime(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	d := newPartDir(t, "sink.partition-commit.delay", "10 min")
	s := d.sink(mem, 0, 1, true)
	defer s.Close()
	d.write(s, mem, "a|x|1")
	for i, advance := range []time.Duration{5 * time.Minute, 4 * time.Minute, 2 * time.Minute} {
		d.clock.t = d.clock.t.Add(advance)
		if _, err := s.PreCommit(int64(i + 1)); err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(int64(i + 1)); err != nil {
			t.Fatal(err)
		}
		want := "dt=x/hm=1: a"
		if i == 2 {
			want += " +SUCCESS"
		}
		expectTree(t, d, "after "+d.clock.t.Format("15:04"), want)
	}
}

// A crash after a checkpoint's pre-commit and before its commit: the
// restored attempt commits the checkpoint's files and its partitions
// (the restored watermark passed them), and removes what was written after
// the checkpoint, also in partitions the checkpoint never saw.
func TestPartitionedSinkRestore(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	d := newPartDir(t, "sink.partition-commit.trigger", "partition-time",
		"partition.time-extractor.timestamp-pattern", "$dt $hm:00")
	s := d.sink(mem, 0, 1, true)
	d.write(s, mem, "a|2024-01-01|00:00", "b|2024-01-01|00:09")
	s.OnWatermark(ms("2024-01-01 00:05:00"))
	state, err := s.PreCommit(1)
	if err != nil {
		t.Fatal(err)
	}
	d.write(s, mem, "late|2024-01-01|00:07", "c|2024-01-01|00:09")
	for _, p := range s.parts {
		p.files.Flush()
	}
	crashPart(s)
	expectTree(t, d, "crashed", `
dt=2024-01-01/hm=00%3A00: +hidden
dt=2024-01-01/hm=00%3A07: +hidden
dt=2024-01-01/hm=00%3A09: +hidden`)
	d.newAttempt()
	r := d.sink(mem, 0, 1, true)
	defer r.Close()
	if err := r.RestoreState(state); err != nil {
		t.Fatal(err)
	}
	expectTree(t, d, "restored", `
dt=2024-01-01/hm=00%3A00: a +SUCCESS
dt=2024-01-01/hm=00%3A07:
dt=2024-01-01/hm=00%3A09: b`)
	// 00:09 is still awaiting its commit in the restored state.
	r.OnWatermark(exec.MaxWatermark)
	if _, err := r.PreCommit(2); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(2); err != nil {
		t.Fatal(err)
	}
	expectTree(t, d, "restored, end", `
dt=2024-01-01/hm=00%3A00: a +SUCCESS
dt=2024-01-01/hm=00%3A07:
dt=2024-01-01/hm=00%3A09: b +SUCCESS`)
}

// Downscale 2 -> 1: the new subtask completes both old subtasks' commits
// and discards what they wrote after the checkpoint.
func TestPartitionedSinkRescale(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	d := newPartDir(t)
	s0, s1 := d.sink(mem, 0, 2, true), d.sink(mem, 1, 2, true)
	d.write(s0, mem, "a|1|1")
	d.write(s1, mem, "b|1|1", "c|2|2")
	var states [][]byte
	for _, s := range []*PartitionedSink{s0, s1} {
		st, err := s.PreCommit(1)
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, st)
	}
	d.write(s0, mem, "x|1|1")
	d.write(s1, mem, "y|3|3")
	for _, s := range []*PartitionedSink{s0, s1} {
		for _, p := range s.parts {
			p.files.Flush()
		}
		crashPart(s)
	}
	d.newAttempt()
	r := d.sink(mem, 0, 1, true)
	defer r.Close()
	if err := r.RestoreStates(states); err != nil {
		t.Fatal(err)
	}
	expectTree(t, d, "restored at parallelism 1", `
dt=1/hm=1: a,b +SUCCESS
dt=2/hm=2: c +SUCCESS
dt=3/hm=3:`)
	if err := r.RestoreStates([][]byte{states[0][:len(states[0])-3]}); err == nil {
		t.Error("a truncated state restored")
	}
}

func crashPart(s *PartitionedSink) {
	for _, p := range s.parts {
		if c := p.files.cur; c != nil {
			c.f.Close()
		}
	}
}

// TestSameAsPrevRows: a row counted as its predecessor's partition holds
// the same formatted value in every partition column (strings, BIGINT,
// DATE, NULLs, a sliced batch), and runs of equal values are found, so
// the sink skips their formatting; a boolean column turns it off.
func TestSameAsPrevRows(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	schema := catalog.Schema{{Name: "s", Type: catalog.String}, {Name: "n", Type: catalog.BigInt},
		{Name: "d", Type: catalog.Date}, {Name: "b", Type: catalog.Boolean}}
	rb := array.NewRecordBuilder(mem, schema.Arrow())
	defer rb.Release()
	const rows = 2000
	run := 0
	for i := 0; i < rows; i++ {
		if rng.Intn(8) == 0 {
			run++ // runs of about 8 rows
		}
		if rng.Intn(25) == 0 {
			rb.Field(0).AppendNull()
		} else {
			rb.Field(0).(*array.StringBuilder).Append([]string{"", "2024-01-01", "2024-01-02", "a/b"}[run%4])
		}
		if rng.Intn(25) == 0 {
			rb.Field(1).AppendNull()
		} else {
			rb.Field(1).(*array.Int64Builder).Append(int64(run % 3))
		}
		rb.Field(2).(*array.Date32Builder).Append(arrow.Date32(run % 2))
		rb.Field(3).(*array.BooleanBuilder).Append(run%2 == 0)
	}
	full := rb.NewRecord()
	defer full.Release()
	rec := full.NewSlice(7, rows-3)
	defer rec.Release()
	text := func(c, i int) string {
		col := rec.Column(c)
		if col.IsNull(i) {
			return "NULL"
		}
		return format.FormatValue(col, i)
	}
	for _, cols := range [][]int{{0}, {1}, {2}, {0, 1, 2}, {0, 3}} {
		same := sameAsPrevRows(nil, rec, cols)
		if len(same) != int(rec.NumRows()) || same[0] {
			t.Fatalf("cols %v: %d flags, first %v", cols, len(same), same[0])
		}
		found := 0
		for i := 1; i < len(same); i++ {
			if !same[i] {
				continue
			}
			found++
			for _, c := range cols {
				if text(c, i) != text(c, i-1) {
					t.Fatalf("cols %v row %d: column %d %q after %q counted as the same", cols, i, c, text(c, i), text(c, i-1))
				}
			}
		}
		hasBool := cols[len(cols)-1] == 3
		if hasBool && found != 0 || !hasBool && found < len(same)/3 {
			t.Fatalf("cols %v: %d of %d rows found the same as their predecessor", cols, found, len(same))
		}
	}
}
