package state

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestRowsMapWhileCheckpointsFail: with checkpoints on, a Rows side may
// drop only rows a completed checkpoint holds. While checkpoints keep
// failing (every snapshot aborted, so no pending checkpoint to hold the
// input for) the rows grow to eighteen budgets here; past four budgets the
// oldest chunks leave the Go heap for mapped files. After every row added
// the heap's chunks take at most four budgets and the chunk being filled;
// every scan gives the rows added under its key and every snapshot all of
// them in state key order (taken by reference, the mapped rows come as
// runs of their own, sorted once when they were mapped). A snapshot taken by reference before the
// completion that drops the mapped chunks is read after it: the mappings
// outlive the drop until the run is released. Then no mapping is left,
// the scans read the committed state, and the spill directory is empty
// (the files are removed once mapped).
func TestRowsMapWhileCheckpointsFail(t *testing.T) {
	if !canMapRows {
		t.Skip("no mapped rows on this platform")
	}
	const budget = 1 << 20
	dir := t.TempDir()
	cdb := newTestCommitted(t, store{})
	defer cdb.db.Close()
	o := Options{OpID: "join", MaxParallelism: 4, Checkpointing: true, Backend: "rocksdb", TierHotBytes: budget, SpillDir: dir, Committed: cdb}
	r, err := NewRows(o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	maps0 := liveRowMaps.Load()
	ns := []byte("L")
	rng := rand.New(rand.NewSource(7))
	type row struct {
		kg       int
		key, val []byte
	}
	var rows []row
	prefixOf := func(jk int) ([]byte, int) {
		return Key(nil, ns, []byte(fmt.Sprintf("join-key-%d", jk))), jk % 4
	}
	add := func(n int) {
		for i := 0; i < n; i++ {
			prefix, kg := prefixOf(rng.Intn(11))
			sb := binary.AppendUvarint(nil, uint64(len(rows)+1))
			key := append(append(append([]byte(nil), prefix...), byte(len(sb))), sb...)
			val := make([]byte, 150+rng.Intn(100))
			rng.Read(val)
			rows = append(rows, row{kg, key, val})
			r.Add(kg, key, len(prefix), val)
			bound := 4*budget + r.chunks[len(r.chunks)-1].memBytes()
			if hb := r.Stats().HotBytes; hb > bound {
				t.Fatalf("after %d rows the heap's chunks take %d bytes, more than four budgets and the chunk being filled (%d)", len(rows), hb, bound)
			}
		}
	}
	scans := func(when string) {
		for jk := 0; jk < 11; jk++ {
			prefix, kg := prefixOf(jk)
			var want, got []string
			for _, rw := range rows {
				if rw.kg == kg && strings.HasPrefix(string(rw.key), string(prefix)) {
					want = append(want, fmt.Sprintf("%x=%x", rw.key, rw.val))
				}
			}
			if err := r.Scan(kg, prefix, func(k, v []byte) error {
				got = append(got, fmt.Sprintf("%x=%x", k, v))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("%s: the scan of join key %d gives %d rows, want %d", when, jk, len(got), len(want))
			}
		}
	}
	snapshotWant := func() []string {
		var out []string
		for _, rw := range rows {
			out = append(out, fmt.Sprintf("P %x=%x", append(append([]byte(nil), r.keyPrefix(rw.kg)...), rw.key...), rw.val))
		}
		slices.Sort(out)
		return out
	}

	id := int64(1)
	segRuns := 0
	for round := 0; round < 90; round++ {
		add(800)
		if round%10 == 9 {
			scans(fmt.Sprintf("round %d", round))
		}
		// every other snapshot by reference, as the checkpoint buffer
		// takes them: the rows of mapped chunks in runs of their own,
		// sorted when mapped (rowSeg), the rest sorted by the run
		var ops []string
		if round%2 == 0 {
			l := &opLog{failAt: -1}
			if err := r.Snapshot(id, l); err != nil {
				t.Fatal(err)
			}
			ops = l.ops
		} else {
			l := &runLog{opLog: opLog{failAt: -1}}
			if err := r.Snapshot(id, l); err != nil {
				t.Fatal(err)
			}
			segRuns = max(segRuns, len(l.runs)-1)
			ops = l.expand()
		}
		if round%10 == 9 && !slices.Equal(ops, snapshotWant()) {
			t.Fatalf("round %d: the snapshot wrote %d rows, want all %d in key order", round, len(ops), len(rows))
		}
		r.Abort(id)
		id++
	}
	if segRuns < 3 {
		t.Fatalf("a snapshot by reference handed at most %d sorted runs of mapped rows", segRuns)
	}
	st := r.Stats()
	if st.Mapped == 0 || st.MappedBytes < 8*budget || st.CleanDrops != 0 {
		t.Fatalf("checkpoints failing: %+v; want most rows mapped, none dropped", st)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("the spill directory holds %d files while rows are mapped", len(ents))
	}

	// a snapshot by reference, then the checkpoint completes
	rl := &runLog{opLog: opLog{failAt: -1}}
	if err := r.Snapshot(id, rl); err != nil {
		t.Fatal(err)
	}
	want := snapshotWant()
	cdb.commit(t, id, want)
	r.Complete(id)
	if st := r.Stats(); st.MappedBytes != 0 {
		t.Fatalf("checkpoint %d complete: %d bytes still mapped", id, st.MappedBytes)
	}
	if liveRowMaps.Load() == maps0 {
		t.Fatal("the dropped chunks were unmapped while a snapshot's run still held them")
	}
	if got := rl.expand(); !slices.Equal(got, want) {
		t.Fatalf("the snapshot's run, read after the drop, wrote %d rows, want %d", len(got), len(want))
	}
	if n := liveRowMaps.Load() - maps0; n != 0 {
		t.Fatalf("%d mappings left after the run's release", n)
	}
	scans("after the completion")
	add(100)
	scans("after the completion and more rows")
	if st := r.Stats(); st.ComReads == 0 {
		t.Fatalf("no row read back from the committed state: %+v", st)
	}
	t.Logf("%d rows, up to %d sorted runs of mapped rows a snapshot: %+v", len(rows), segRuns, r.Stats())
}
