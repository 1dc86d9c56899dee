package connectors

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/streamsql/streamsql/internal/memtest"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
)

// assign distributes the states of an earlier run over p new subtasks as
// the runtime does for sinks: old subtask i goes to new subtask i mod p.
func assign(states [][]byte, p int) [][][]byte {
	out := make([][][]byte, p)
	for i, st := range states {
		out[i%p] = append(out[i%p], st)
	}
	return out
}

// owners returns, as the runtime passes them to a SplitSource, which of n
// old states new subtask j of p owns.
func owners(n, j, p int) []bool {
	o := make([]bool, n)
	for i := range o {
		o[i] = i%p == j
	}
	return o
}

var errStopRun = errors.New("stop")

// rescalePhase runs one run of tb at parallelism p. Each subtask j takes
// over the states assigned to it (none when prev is nil: a fresh start),
// emits stop(j) batches (-1: to the end) and takes a snapshot there. It
// returns the rows emitted up to the snapshots, the new states, the rows
// per subtask and the skipped-records counter of the run.
func rescalePhase(t *testing.T, mem memory.Allocator, tb *catalog.Table, p, batch int, prev [][]byte, stop func(j int) int) (rows []string, states [][]byte, per []int, skipped int64) {
	t.Helper()
	counter := new(atomic.Int64) // shared by the run's subtasks, as in the runtime
	for j := 0; j < p; j++ {
		sc := &exec.SourceContext{Subtask: j, Parallelism: p, Mem: mem, BatchSize: batch, SkippedRecords: counter}
		src := newCkSource(t, tb, sc)
		if prev != nil {
			if err := src.(exec.SplitSource).RestoreSplits(prev, owners(len(prev), j, p)); err != nil {
				t.Fatalf("subtask %d of %d: %v", j, p, err)
			}
		}
		n, batches := 0, 0
		var err error
		if limit := stop(j); limit != 0 {
			err = src.Run(context.Background(), func(r arrow.Record) error {
				if r == nil {
					return nil
				}
				rows = append(rows, recRows(r)...)
				n += int(r.NumRows())
				r.Release()
				if batches++; batches == limit {
					return errStopRun
				}
				return nil
			})
		}
		if err != nil && err != errStopRun {
			t.Fatal(err)
		}
		st, err := src.SnapshotState()
		if err != nil {
			t.Fatal(err)
		}
		src.Close()
		states = append(states, st)
		per = append(per, n)
	}
	return rows, states, per, counter.Load()
}

// stopsFrom returns deterministic, varied stop points (0 = snapshot before
// running, -1 = run to the end) from a seed.
func stopsFrom(seed uint64, maxBatches int) func(j int) int {
	return func(j int) int {
		x := mix(seed*golden + uint64(j))
		switch x % 5 {
		case 0:
			return 0
		case 1:
			return -1
		}
		return 1 + int(x>>8)%maxBatches
	}
}

func sortedCopy(rows []string) []string {
	out := append([]string(nil), rows...)
	sort.Strings(out)
	return out
}

// TestDatagenRescale: a datagen job snapshotted at parallelism 2, restored
// at 5 (its splits cut so that every subtask gets one), snapshotted again
// and restored at 1 produces, over all runs, exactly the rows of an
// uninterrupted run: no loss, no duplicate.
func TestDatagenRescale(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	tb := dgTable()
	for _, batch := range []int{1, 7} {
		ref, _ := runSource(t, mem, tb, 1, batch)
		for seed := uint64(0); seed < 8; seed++ {
			t.Run(fmt.Sprintf("batch %d seed %d", batch, seed), func(t *testing.T) {
				maxB := 300 / batch
				rows1, st1, _, _ := rescalePhase(t, mem, tb, 2, batch, nil, stopsFrom(seed, maxB))
				rows2, st2, _, _ := rescalePhase(t, mem, tb, 5, batch, st1, stopsFrom(seed+100, maxB/3+1))
				rows3, st3, _, _ := rescalePhase(t, mem, tb, 1, batch, st2, func(int) int { return -1 })
				all := sortedCopy(append(append(rows1, rows2...), rows3...))
				if strings.Join(all, "\n") != strings.Join(ref, "\n") {
					t.Fatalf("%d rows over the runs (%d+%d+%d), want %d", len(all), len(rows1), len(rows2), len(rows3), len(ref))
				}
				// a finished job restored again produces nothing
				rows4, _, _, _ := rescalePhase(t, mem, tb, 3, batch, st3, func(int) int { return -1 })
				if len(rows4) != 0 {
					t.Fatalf("a finished job restored again emitted %d rows", len(rows4))
				}
			})
		}
	}
}

// TestDatagenRescaleUnbounded: a subtask owning several unbounded splits
// serves them in turn, so none is starved.
func TestDatagenRescaleUnbounded(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	s := catalog.Schema{{Name: "id", Type: catalog.BigInt}}
	tb := table("u", s, "connector", "datagen", "rows-per-second", "0", "fields.id.kind", "sequence", "fields.id.start", "0", "fields.id.end", "1000000000000")
	_, st, _, _ := rescalePhase(t, mem, tb, 3, 2, nil, func(j int) int { return j + 1 })
	rows, _, _, _ := rescalePhase(t, mem, tb, 1, 2, st, func(int) int { return 6 })
	// old subtask 0 emitted rows 0,3; 1: 1,4,7,10; 2: 2,5,8,11,14,17
	if got := strings.Join(rows, ","); got != "6,9,13,16,20,23,12,15,19,22,26,29" {
		t.Fatal(got)
	}
}

// TestDatagenStateV1: states of format version 1 (one split, the table's
// bound) are still restored, at the same and at another parallelism.
func TestDatagenStateV1(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	s := catalog.Schema{{Name: "id", Type: catalog.BigInt}}
	tb := table("v", s, "connector", "datagen", "rows-per-second", "0", "fields.id.kind", "sequence", "fields.id.start", "0", "fields.id.end", "9")
	v1 := func(sub, p, k uint64) []byte {
		b := []byte{1, kindDatagen}
		b = binary.AppendUvarint(b, sub)
		b = binary.AppendUvarint(b, p)
		return binary.AppendUvarint(b, k)
	}
	src := newCkSource(t, tb, &exec.SourceContext{Subtask: 1, Parallelism: 2, Mem: mem, BatchSize: 10})
	if err := src.RestoreState(v1(1, 2, 2)); err != nil {
		t.Fatal(err)
	}
	rows, _, _ := snapRun(t, src)
	src.Close()
	if strings.Join(rows, ",") != "5,7,9" {
		t.Fatal(rows)
	}
	// rescaled 2 -> 1: subtask 0 had emitted 0,2; subtask 1 had emitted 1
	got, _, _, _ := rescalePhase(t, mem, tb, 1, 10, [][]byte{v1(0, 2, 2), v1(1, 2, 1)}, func(int) int { return -1 })
	if strings.Join(sortedCopy(got), ",") != "3,4,5,6,7,8,9" {
		t.Fatal(got)
	}
}

// TestFileSourceRescale: three files read at parallelism 2, restored at 3,
// then at 1: every record is emitted exactly once over all runs and every
// bad record is counted once.
func TestFileSourceRescale(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "1.csv"), "a,1\nb,x\n\"multi\nline\",2\nc,3\nd,y\ne,4\n")
	writeFile(t, filepath.Join(dir, "2.csv"), "f,5\ng,z\nh,6\ni,7")
	writeFile(t, filepath.Join(dir, "3.csv"), "j,8\nk,9\nl,w\nm,10\nn,11\n")
	tb := fileSourceTable(dir, "csv.ignore-parse-errors", "true")
	for _, batch := range []int{1, 2} {
		ref, _ := runSource(t, mem, tb, 1, batch)
		if len(ref) != 11 {
			t.Fatalf("reference %v", ref)
		}
		for seed := uint64(0); seed < 12; seed++ {
			t.Run(fmt.Sprintf("batch %d seed %d", batch, seed), func(t *testing.T) {
				rows1, st1, _, _ := rescalePhase(t, mem, tb, 2, batch, nil, stopsFrom(seed, 6/batch))
				rows2, st2, _, _ := rescalePhase(t, mem, tb, 3, batch, st1, stopsFrom(seed+50, 6/batch))
				rows3, st3, _, skipped := rescalePhase(t, mem, tb, 1, batch, st2, func(int) int { return -1 })
				all := sortedCopy(append(append(rows1, rows2...), rows3...))
				if strings.Join(all, ",") != strings.Join(ref, ",") {
					t.Fatalf("rows over the runs %q\nwant %q", all, ref)
				}
				if skipped != 4 {
					t.Fatalf("skipped %d at the end, want 4", skipped)
				}
				// a finished job restored again reads nothing, counts the same
				rows4, _, _, skipped4 := rescalePhase(t, mem, tb, 2, batch, st3, func(int) int { return -1 })
				if len(rows4) != 0 || skipped4 != 4 {
					t.Fatalf("restored after the end: %v, skipped %d", rows4, skipped4)
				}
			})
		}
	}
}

// TestFileSourceRescaleState: the taken-over files keep their positions in
// the next snapshot; version 1 states are read; bad sets are refused.
func TestFileSourceRescaleState(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	f1, f2, f3 := filepath.Join(dir, "1.csv"), filepath.Join(dir, "2.csv"), filepath.Join(dir, "3.csv")
	writeFile(t, f1, "a,1\nb,2\n")
	writeFile(t, f2, "c,3\nd,4\n")
	writeFile(t, f3, "e,5\n")
	tb := fileSourceTable(dir)
	v1 := func(sub, p, off, line, skipped uint64, files ...string) []byte {
		b := []byte{1, kindFileSource}
		for _, v := range []uint64{sub, p, off, line, skipped, uint64(len(files))} {
			b = binary.AppendUvarint(b, v)
		}
		for _, f := range files {
			b = appendString(b, f)
		}
		return b
	}
	// old subtask 0 of 2 was in 1.csv at "b", with 3.csv left; old 1 at "d"
	states := [][]byte{v1(0, 2, 4, 2, 1, f1, f3), v1(1, 2, 4, 2, 2, f2)}
	sc := &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: 10, SkippedRecords: new(atomic.Int64)}
	src := newCkSource(t, tb, sc)
	if err := src.(exec.SplitSource).RestoreSplits(states, owners(2, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if sc.SkippedRecords.Load() != 3 {
		t.Fatalf("skipped %d", sc.SkippedRecords.Load())
	}
	// snapshot before Run: all three files with their positions
	st, _ := src.SnapshotState()
	src2 := newCkSource(t, tb, &exec.SourceContext{Parallelism: 1, Mem: mem, BatchSize: 10, SkippedRecords: new(atomic.Int64)})
	if err := src2.RestoreState(st); err != nil {
		t.Fatal(err)
	}
	for _, s := range []exec.CheckpointedSource{src, src2} {
		rows, _, _ := snapRun(t, s)
		s.Close()
		if strings.Join(rows, ",") != "b|2,e|5,d|4" {
			t.Fatal(rows)
		}
	}
	cases := []struct {
		name   string
		p, sub int
		states [][]byte
		want   string
	}{
		{"twice", 1, 0, [][]byte{states[0], states[0]}, "the state of subtask 0 of 2 is stored as subtask 1's"},
		{"mixed parallelism", 1, 0, [][]byte{states[0], v1(1, 3, 0, 1, 0, f2)}, "the checkpoint has 2 subtask states of a run at parallelism 3"},
		{"missing subtask", 1, 0, [][]byte{states[0]}, "the checkpoint has 1 subtask states of a run at parallelism 2"},
		{"file twice", 1, 0, [][]byte{states[0], v1(1, 2, 0, 1, 0, f3)}, "lists '" + f3 + "' for two subtasks"},
		{"missing file", 1, 0, [][]byte{v1(0, 1, 0, 1, 0, filepath.Join(dir, "gone.csv"))}, "gone.csv: no such file"},
		{"short file", 1, 0, [][]byte{v1(0, 1, 100, 1, 0, f3)}, "cannot resume from '" + f3 + "' at byte offset 100: the file has only 4 bytes"},
		{"kind", 1, 0, [][]byte{{2, kindDatagen, 0, 1, 0}}, "filesystem source: cannot restore the state of a datagen source"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newCkSource(t, tb, &exec.SourceContext{Subtask: c.sub, Parallelism: c.p, Mem: mem})
			defer src.Close()
			err := src.(exec.SplitSource).RestoreSplits(c.states, owners(len(c.states), c.sub, c.p))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v\nwant %s", err, c.want)
			}
		})
	}
}

// TestSocketSourceRescale: the skipped counts of the states are summed.
func TestSocketSourceRescale(t *testing.T) {
	st := func(sub, p, n uint64) []byte {
		b := []byte{1, kindSocket}
		b = binary.AppendUvarint(b, sub)
		b = binary.AppendUvarint(b, p)
		return binary.AppendUvarint(b, n)
	}
	sc := &exec.SourceContext{Parallelism: 1, SkippedRecords: new(atomic.Int64)}
	s := &SocketSource{sc: sc}
	if err := s.RestoreStates([][]byte{st(0, 2, 3), nil, st(1, 2, 4)}); err != nil {
		t.Fatal(err)
	}
	if sc.SkippedRecords.Load() != 7 {
		t.Fatalf("skipped %d", sc.SkippedRecords.Load())
	}
	if b, _ := s.SnapshotState(); string(b) != string(st(0, 1, 7)) {
		t.Fatalf("state % x", b)
	}
}

// TestFileSinkRescale: the pending commits of three old sink subtasks are
// completed by two new ones (old i -> new i mod 2), each exactly once; the
// old subtasks' later output is deleted; new output never collides.
func TestFileSinkRescale(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	d := newSinkDir(t)
	sink := func(sub, p int) *FileSink {
		t.Helper()
		s, err := NewSink(d.tb, &exec.SinkContext{Subtask: sub, Parallelism: p, Mem: mem, Checkpointing: true})
		if err != nil {
			t.Fatal(err)
		}
		return s.(*FileSink)
	}
	// old run at parallelism 3: checkpoint 1 completes (subtask 0 also
	// commits it before the crash); checkpoint 2 is pre-committed only;
	// then more is written and the job dies
	var states [][]byte
	for i := 0; i < 3; i++ {
		s := sink(i, 3)
		d.write(s, mem, fmt.Sprintf("o%d", i))
		st, err := s.PreCommit(1)
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, st)
		if i == 0 {
			if err := s.Commit(1); err != nil {
				t.Fatal(err)
			}
		}
		d.write(s, mem, fmt.Sprintf("late%d", i))
		if _, err := s.PreCommit(2); err != nil {
			t.Fatal(err)
		}
		d.write(s, mem, fmt.Sprintf("lost%d", i))
		crash(s)
	}
	before := ".part-ID-0-0000000001.pending .part-ID-0-0000000002.inprogress .part-ID-1-0000000000.pending .part-ID-1-0000000001.pending .part-ID-1-0000000002.inprogress " +
		".part-ID-2-0000000000.pending .part-ID-2-0000000001.pending .part-ID-2-0000000002.inprogress part-ID-0-0000000000=o0,1;"
	if got := d.files(); got != before {
		t.Fatalf("before restore:\n%s\nwant\n%s", got, before)
	}
	restored := "part-ID-0-0000000000=o0,1; part-ID-1-0000000000=o1,1; part-ID-2-0000000000=o2,1;"
	restore := func() []*FileSink {
		parts := assign(states, 2)
		var out []*FileSink
		for j := 0; j < 2; j++ {
			s := sink(j, 2)
			if err := s.RestoreStates(parts[j]); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	// restored twice (a failure before the first new checkpoint): the
	// second restore finds everything committed and changes nothing
	for round := 0; round < 2; round++ {
		news := restore()
		if got := d.files(); got != restored {
			t.Fatalf("round %d after restore:\n%s\nwant\n%s", round, got, restored)
		}
		if round == 0 {
			for j, s := range news {
				d.write(s, mem, fmt.Sprintf("x%d", j))
				crash(s)
			}
			// numbered after the parts seen at the restore (0 to 2)
			if got := d.files(); got != ".part-ID-0-0000000003.inprogress .part-ID-1-0000000003.inprogress "+restored {
				t.Fatalf("after new writes: %s", got)
			}
		}
	}
	news := restore()
	for j, s := range news {
		d.write(s, mem, fmt.Sprintf("n%d", j))
		if _, err := s.PreCommit(3); err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(3); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	// numbering continues after every part present and after the state's
	// next part (numbers of deleted hidden parts may be used again)
	want := "part-ID-0-0000000000=o0,1; part-ID-0-0000000001=n0,1; part-ID-1-0000000000=o1,1; part-ID-1-0000000001=n1,1; part-ID-2-0000000000=o2,1;"
	if got := d.files(); got != want {
		t.Fatalf("after new output:\n%s\nwant\n%s", got, want)
	}
}

// TestFileSinkRescaleUp: a new subtask without state cleans only its own
// hidden files; the old subtasks' files are handled by their owners.
func TestFileSinkRescaleUp(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	d := newSinkDir(t)
	sink := func(sub, p int) *FileSink {
		t.Helper()
		s, err := NewSink(d.tb, &exec.SinkContext{Subtask: sub, Parallelism: p, Mem: mem, Checkpointing: true})
		if err != nil {
			t.Fatal(err)
		}
		return s.(*FileSink)
	}
	var states [][]byte
	for i := 0; i < 2; i++ {
		s := sink(i, 2)
		d.write(s, mem, fmt.Sprintf("o%d", i))
		st, err := s.PreCommit(1)
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, st)
		d.write(s, mem, fmt.Sprintf("lost%d", i))
		crash(s)
	}
	// leftover of an earlier failed attempt of new subtask 2
	writeFile(t, filepath.Join(d.dir, ".part-"+d.id+"-2-0000000000.inprogress"), "junk\n")
	parts := assign(states, 3)
	s2 := sink(2, 3)
	defer s2.Close()
	if err := s2.RestoreStates(parts[2]); err != nil {
		t.Fatal(err)
	}
	want := ".part-ID-0-0000000000.pending .part-ID-0-0000000001.inprogress .part-ID-1-0000000000.pending .part-ID-1-0000000001.inprogress"
	if got := d.files(); got != want {
		t.Fatalf("after subtask 2:\n%s\nwant\n%s", got, want)
	}
	for j := 0; j < 2; j++ {
		s := sink(j, 3)
		if err := s.RestoreStates(parts[j]); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if got := d.files(); got != "part-ID-0-0000000000=o0,1; part-ID-1-0000000000=o1,1;" {
		t.Fatalf("after all: %s", got)
	}
	// a state handed to the wrong subtask is refused
	s := sink(1, 3)
	defer s.Close()
	if err := s.RestoreStates(states[:1]); err == nil || !strings.Contains(err.Error(), "cannot take over the state of subtask 0 of 2 in subtask 1 of 3") {
		t.Fatal(err)
	}
}

// TestDatagenUpscaleBySplit: a job that ran at parallelism 1 and is
// restored at 4 has its one sequence cut into four, so every new subtask
// produces a quarter of the rest; restored again at 2 and then at 3 (after
// an uneven stop), every subtask still works and, over all runs, every row
// comes exactly once.
func TestDatagenUpscaleBySplit(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	tb := dgTable() // 500 rows
	ref, _ := runSource(t, mem, tb, 1, 10)
	rows1, st1, _, _ := rescalePhase(t, mem, tb, 1, 10, nil, func(int) int { return 20 })
	if len(rows1) != 200 {
		t.Fatalf("first run emitted %d rows", len(rows1))
	}
	rows2, st2, per2, _ := rescalePhase(t, mem, tb, 4, 10, st1, func(j int) int {
		if j == 3 {
			return -1 // to the end of its split
		}
		return 3 + j
	})
	for j, n := range per2 {
		if want := []int{30, 40, 50, 75}[j]; n != want {
			t.Fatalf("subtask %d of 4 emitted %d rows, want %d (each owns a quarter of the 300 left)", j, n, want)
		}
	}
	rows3, st3, per3, _ := rescalePhase(t, mem, tb, 3, 10, st2, func(j int) int { return 3 })
	for j, n := range per3 {
		if n == 0 {
			t.Fatalf("subtask %d of 3 owns no split", j)
		}
	}
	rows4, _, per4, _ := rescalePhase(t, mem, tb, 2, 10, st3, func(int) int { return -1 })
	if per4[0] == 0 || per4[1] == 0 {
		t.Fatalf("rows per subtask at the end: %v", per4)
	}
	all := sortedCopy(append(append(append(rows1, rows2...), rows3...), rows4...))
	if strings.Join(all, "\n") != strings.Join(ref, "\n") {
		t.Fatalf("%d rows over the runs, want %d", len(all), len(ref))
	}
}

// TestFileSourceRebalanceBySplit: four files read at parallelism 2, then
// at 1, then at 4: at 4 each subtask gets one of the files left (by split,
// not by old subtask, which would leave three idle).
func TestFileSourceRebalanceBySplit(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	for i := 0; i < 4; i++ {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("%d.csv", i)), fmt.Sprintf("a%d,1\nb%d,2\nc%d,3\n", i, i, i))
	}
	tb := fileSourceTable(dir)
	ref, _ := runSource(t, mem, tb, 1, 1)
	rows1, st1, _, _ := rescalePhase(t, mem, tb, 2, 1, nil, func(int) int { return 1 })
	rows2, st2, _, _ := rescalePhase(t, mem, tb, 1, 1, st1, func(int) int { return 0 })
	rows3, _, per3, _ := rescalePhase(t, mem, tb, 4, 1, st2, func(int) int { return -1 })
	for j, n := range per3 {
		if want := []int{2, 3, 2, 3}[j]; n != want {
			t.Fatalf("subtask %d of 4 read %d rows, want %d (rows per subtask %v)", j, n, want, per3)
		}
	}
	all := sortedCopy(append(append(rows1, rows2...), rows3...))
	if strings.Join(all, ",") != strings.Join(ref, ",") {
		t.Fatalf("rows over the runs %q\nwant %q", all, ref)
	}
}
