package state

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/streamsql/streamsql/checkpoint"
)

// TestRowsMetamorphic replays random sequences of row inserts, scans by
// join key, snapshots (some failing), commits, completions, aborts and
// failovers (restores by key-group ranges, some at another split) against
// an in-memory KV given the same rows with PutNew (the reference), Rows in
// memory and Rows with a committed state and a hot budget of a few rows.
// Every scan must give the reference's rows, every snapshot its exact
// bytes, Each the side's whole state; the committed state must equal what
// the completed snapshots wrote. It asserts that the tiered Rows dropped
// rows and read them back from the committed state, and that some restored
// rows were read back too; over the seeds, that it mapped chunks of rows no
// checkpoint held yet (past four budgets), all unmapped once closed.
func TestRowsMetamorphic(t *testing.T) {
	rowsMetaMapped = 0
	for seed := int64(1); seed <= 16; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { rowsMetaSeed(t, seed) })
	}
	if canMapRows && rowsMetaMapped == 0 && !t.Failed() {
		t.Fatal("no seed moved a chunk of uncommitted rows to a mapped file")
	}
}

// rowsMetaMapped: rows the tiered Rows of every seed mapped (mapOut).
var rowsMetaMapped int64

func rowsMetaSeed(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	maxP := 1 + rng.Intn(8)
	o := Options{OpID: "join", MaxParallelism: maxP, Checkpointing: true}
	ns := []byte("L")
	nkeys := 3 + rng.Intn(60)
	cdb := newTestCommitted(t, store{})
	var ref *KV
	// mem: in memory; com: reads the committed state; spill: tiered
	// without a committed state (a spill DB of its own)
	var mem, com, spill *Rows
	var st, sst TierStats
	open := func() {
		var err error
		if ref, err = NewKV(o); err != nil {
			t.Fatal(err)
		}
		if mem, err = NewRows(o); err != nil {
			t.Fatal(err)
		}
		to := o
		to.Backend, to.TierHotBytes, to.SpillDir = "rocksdb", 2<<10, t.TempDir()
		if spill, err = NewRows(to); err != nil {
			t.Fatal(err)
		}
		to.Committed = cdb
		if com, err = NewRows(to); err != nil {
			t.Fatal(err)
		}
	}
	closeRows := func() {
		s := com.Stats()
		st.CleanDrops += s.CleanDrops
		st.ComReads += s.ComReads
		st.Mapped += s.Mapped
		s = spill.Stats()
		sst.CleanDrops += s.CleanDrops
		sst.WriteBacks += s.WriteBacks
		sst.ColdReads += s.ColdReads
		for _, r := range []*Rows{mem, com, spill} {
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	open()
	prefixOf := func(jk int) ([]byte, int) {
		k := []byte(fmt.Sprintf("k%03d", jk))
		if jk%2 == 0 {
			// longer than the 14 bytes the radix sort orders by: the
			// rows of the key tie there
			k = []byte(fmt.Sprintf("a-long-join-key-%03d", jk))
		}
		return Key(nil, ns, k), int(xxhash.Sum64(k) % uint64(maxP))
	}
	sortedScan := func(scan func(fn func(k, v []byte) error) error) string {
		var out []string
		if err := scan(func(k, v []byte) error {
			out = append(out, fmt.Sprintf("%x=%x", k, v))
			return nil
		}); err != nil {
			return "error " + err.Error()
		}
		sort.Strings(out)
		return strings.Join(out, ";")
	}
	seq := uint64(1)
	nextID := int64(1)
	snaps := map[int64][]string{}
	type laterRun struct {
		l    *runLog
		want string
		step int
		id   int64
		i    int
	}
	var laterRuns []laterRun
	refRuns := 0
	refRng := rand.New(rand.NewSource(seed)) // (the schedule's rng stays as it was)
	committed := store{}
	var uncommitted []int64
	commitUpTo := func(id int64) {
		for len(uncommitted) > 0 && uncommitted[0] <= id {
			if ops, ok := snaps[uncommitted[0]]; ok {
				cdb.commit(t, uncommitted[0], ops)
			}
			uncommitted = uncommitted[1:]
		}
	}
	restoredReads := 0
	restoredSeq := uint64(0) // sequence numbers up to it were restored
	for step := 0; step < 2500; step++ {
		switch p := rng.Intn(100); {
		case p < 45:
			prefix, kg := prefixOf(rng.Intn(nkeys))
			sb := binary.AppendUvarint(nil, seq)
			seq++
			key := append(append(append([]byte(nil), prefix...), byte(len(sb))), sb...)
			val := make([]byte, 1+rng.Intn(40))
			rng.Read(val)
			ref.PutNew(kg, key, val)
			mem.Add(kg, key, len(prefix), val)
			com.Add(kg, key, len(prefix), val)
			spill.Add(kg, key, len(prefix), val)
		case p < 65:
			prefix, kg := prefixOf(rng.Intn(nkeys))
			want := sortedScan(func(fn func(k, v []byte) error) error { return ref.Scan(kg, prefix, fn) })
			for i, r := range []*Rows{mem, com, spill} {
				got := sortedScan(func(fn func(k, v []byte) error) error { return r.Scan(kg, prefix, fn) })
				if got != want {
					t.Fatalf("step %d: scan of %x: rows %d gives\n%s\nthe KV gives\n%s", step, prefix, i, got, want)
				}
			}
			if restoredSeq > 0 {
				_ = com.Scan(kg, prefix, func(k, v []byte) error {
					if q, ok := rowSeq(k[len(prefix):]); ok && q <= restoredSeq {
						restoredReads++
					}
					return nil
				})
			}
		case p < 67:
			want := sortedScan(func(fn func(k, v []byte) error) error { return ref.Scan(-1, nil, fn) })
			for i, r := range []*Rows{mem, com, spill} {
				got := sortedScan(func(fn func(k, v []byte) error) error {
					return r.Each(ns, func(_ int, k, v []byte) error { return fn(k, v) })
				})
				if got != want {
					t.Fatalf("step %d: Each of rows %d gives\n%s\nthe KV's scan gives\n%s", step, i, got, want)
				}
			}
		case p < 80:
			id := nextID
			nextID++
			failAt := -1
			if rng.Intn(6) == 0 {
				failAt = rng.Intn(10)
			}
			l := &opLog{failAt: failAt}
			err := ref.Snapshot(id, l)
			want := fmt.Sprint(strings.Join(l.ops, "\n"), err)
			// Half the time the rows take their snapshot's rows by
			// reference, as the checkpoint buffer does (PutRun), and the
			// runs are read after the next step changed the rows.
			byRef := failAt < 0 && refRng.Intn(2) == 0
			for i, r := range []*Rows{mem, com, spill} {
				if byRef {
					rl := &runLog{opLog: opLog{failAt: -1}}
					if err := r.Snapshot(id, rl); err != nil {
						t.Fatal(err)
					}
					laterRuns = append(laterRuns, laterRun{rl, want, step, id, i})
					continue
				}
				rl := &opLog{failAt: failAt}
				err := r.Snapshot(id, rl)
				if got := fmt.Sprint(strings.Join(rl.ops, "\n"), err); got != want {
					t.Fatalf("step %d: snapshot %d of rows %d wrote\n%s\nthe KV wrote\n%s", step, id, i, got, want)
				}
			}
			if err == nil {
				snaps[id] = l.ops
				uncommitted = append(uncommitted, id)
				if rng.Intn(2) == 0 {
					commitUpTo(id)
				}
			}
		case p < 92:
			if len(snaps) == 0 {
				continue
			}
			var id int64
			for i := range snaps {
				id = max(id, i)
			}
			if rng.Intn(3) == 0 {
				if rng.Intn(2) == 0 {
					commitUpTo(id)
				} else {
					commitUpTo(id - 1)
					uncommitted = slices.DeleteFunc(uncommitted, func(i int64) bool { return i == id })
				}
				ref.Abort(id)
				mem.Abort(id)
				com.Abort(id)
				spill.Abort(id)
				delete(snaps, id)
			} else {
				commitUpTo(id)
				ref.Complete(id)
				mem.Complete(id)
				com.Complete(id)
				spill.Complete(id)
				var ids []int64
				for i := range snaps {
					if i <= id {
						ids = append(ids, i)
					}
				}
				slices.Sort(ids)
				for _, i := range ids {
					applyLog(committed, snaps[i])
					delete(snaps, i)
				}
			}
		default:
			// failover: restore the last completed state, in two key-group
			// ranges
			closeRows()
			if err := cdb.db.Close(); err != nil {
				t.Fatal(err)
			}
			cdb = newTestCommitted(t, committed)
			uncommitted = nil
			snaps = map[int64][]string{}
			open()
			split := rng.Intn(maxP + 1)
			for _, rg := range [][2]int{{0, split}, {split, maxP}} {
				if err := ref.Restore(scanStore(committed), rg[0], rg[1]); err != nil {
					t.Fatal(err)
				}
				for _, r := range []*Rows{mem, com, spill} {
					if err := r.Restore(scanStore(committed), ns, rg[0], rg[1]); err != nil {
						t.Fatal(err)
					}
				}
			}
			if com.Len() != 0 || mem.Len() != len(committed) {
				t.Fatalf("step %d: restored %d rows in memory (tiered: %d), committed %d", step, mem.Len(), com.Len(), len(committed))
			}
			restoredSeq = seq - 1
		}
		// The runs taken by reference, read a step later (rows added,
		// chunks grown, dropped or spilled, checkpoints completed or
		// aborted, the rows closed and restored since): what the KV wrote.
		kept := laterRuns[:0]
		for _, lr := range laterRuns {
			if lr.step == step {
				kept = append(kept, lr)
				continue
			}
			if got := fmt.Sprint(strings.Join(lr.l.expand(), "\n"), error(nil)); got != lr.want {
				t.Fatalf("step %d: snapshot %d of rows %d, read later by reference, wrote\n%s\nthe KV wrote\n%s", lr.step, lr.id, lr.i, got, lr.want)
			}
			refRuns++
		}
		laterRuns = kept
	}
	if refRuns == 0 {
		t.Fatal("no snapshot was taken by reference")
	}
	for _, lr := range laterRuns {
		lr.l.expand() // (releases the runs' mapped chunks)
	}
	closeRows()
	if n := liveRowMaps.Load(); n != 0 {
		t.Fatalf("%d chunks of rows still mapped after every Rows was closed", n)
	}
	if err := cdb.db.Close(); err != nil {
		t.Fatal(err)
	}
	if st.CleanDrops == 0 || st.ComReads == 0 || restoredReads == 0 {
		t.Fatalf("the tiered rows never dropped a row, never read one back or never read a restored one: %+v, %d restored reads", st, restoredReads)
	}
	if sst.WriteBacks == 0 || sst.ColdReads == 0 {
		t.Fatalf("the rows with a spill DB never spilled or never read back: %+v", sst)
	}
	rowsMetaMapped += st.Mapped
	t.Logf("seed %d: tiered rows %+v, %d restored rows read; with a spill DB %+v", seed, st, restoredReads, sst)
}

// BenchmarkRowsSnapshot: a snapshot of 500 K new rows of q7's shape (a
// BIGINT join key of 100 K or 1 K values, 80-byte values), and the
// commit's read of them: the writer takes the sorted run by reference, as
// the checkpoint buffer does, and reads every row of it. With 1 K keys a
// key's rows tie on the sort's first 14 bytes (radixItem.p2 breaks those
// ties without reading the rows).
func BenchmarkRowsSnapshot(b *testing.B) {
	for _, keys := range []int{100_000, 1_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) { benchRowsSnapshot(b, keys) })
	}
}

func benchRowsSnapshot(b *testing.B, keys int) {
	const n, maxP = 500_000, 128
	r, err := NewRows(Options{OpID: "join", MaxParallelism: maxP, Checkpointing: true})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	val := make([]byte, 80)
	var jk [9]byte
	jk[0] = 1
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint64(jk[1:], uint64(rng.Intn(keys)))
		sb := binary.AppendUvarint(nil, uint64(i+1))
		key := append(Key(nil, []byte("L"), jk[:]), byte(len(sb)))
		plen := len(key) - 1
		key = append(key, sb...)
		rng.Read(val)
		r.Add(int(xxhash.Sum64(jk[:])%maxP), key, plen, val)
	}
	buf := &runReader{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := r.Snapshot(int64(i+1), buf); err != nil {
			b.Fatal(err)
		}
		if buf.rows != n {
			b.Fatalf("%d rows read, want %d", buf.rows, n)
		}
		r.Abort(int64(i + 1)) // the same rows again next time
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/row")
}

// TestRowsSpillWithoutCheckpoints: tiered Rows in a job without
// checkpoints spill any chunk they drop to a spill DB of their own; scans
// and Each give the rows an in-memory KV holds, and the spill directory
// is gone after Close.
func TestRowsSpillWithoutCheckpoints(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewSource(seed))
		maxP := 1 + rng.Intn(8)
		o := Options{OpID: "join", MaxParallelism: maxP}
		ref, err := NewKV(o)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		o.Backend, o.TierHotBytes, o.SpillDir = "rocksdb", 2<<10, dir
		r, err := NewRows(o)
		if err != nil {
			t.Fatal(err)
		}
		ns := []byte("R")
		collect := func(scan func(fn func(k, v []byte) error) error) string {
			var out []string
			if err := scan(func(k, v []byte) error { out = append(out, fmt.Sprintf("%x=%x", k, v)); return nil }); err != nil {
				return "error " + err.Error()
			}
			sort.Strings(out)
			return strings.Join(out, ";")
		}
		for i := 1; i <= 3000; i++ {
			jk := []byte(fmt.Sprintf("key-%d", rng.Intn(40)))
			kg := int(xxhash.Sum64(jk) % uint64(maxP))
			prefix := Key(nil, ns, jk)
			if rng.Intn(3) > 0 {
				sb := binary.AppendUvarint(nil, uint64(i))
				key := append(append(append([]byte(nil), prefix...), byte(len(sb))), sb...)
				val := []byte(fmt.Sprintf("row %d", i))
				ref.PutNew(kg, key, val)
				r.Add(kg, key, len(prefix), val)
				continue
			}
			want := collect(func(fn func(k, v []byte) error) error { return ref.Scan(kg, prefix, fn) })
			if got := collect(func(fn func(k, v []byte) error) error { return r.Scan(kg, prefix, fn) }); got != want {
				t.Fatalf("seed %d step %d: scan of %s gives\n%s\nwant\n%s", seed, i, jk, got, want)
			}
		}
		want := collect(func(fn func(k, v []byte) error) error { return ref.Scan(-1, nil, fn) })
		got := collect(func(fn func(k, v []byte) error) error {
			return r.Each(ns, func(_ int, k, v []byte) error { return fn(k, v) })
		})
		if got != want {
			t.Fatalf("seed %d: Each gives another state than the KV's", seed)
		}
		st := r.Stats()
		if st.WriteBacks == 0 || st.ColdReads == 0 || r.Len() >= ref.Len()/2 {
			t.Fatalf("seed %d: the rows never spilled or never read back: %+v, %d of %d rows in memory", seed, st, r.Len(), ref.Len())
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
			t.Fatalf("spill directory not cleaned up: %v %v", ents, err)
		}
	}
}

// runLog is an opLog that takes sorted runs by reference, as the
// checkpoint buffer does, to read them later (expand).
type runLog struct {
	opLog
	runs []checkpoint.SortedRun
	at   []int // the run's place among ops
}

func (l *runLog) PutRun(r checkpoint.SortedRun) error {
	l.runs = append(l.runs, r)
	l.at = append(l.at, len(l.ops))
	return nil
}

// expand returns the ops with the runs' Puts in their places (the Puts
// of runs with no op between them merged in key order, as the commit
// merges runs), and releases the runs.
func (l *runLog) expand() []string {
	var out []string
	next := 0
	merged := 0 // out[merged:] holds the Puts of runs since the last op
	for i, r := range l.runs {
		if l.at[i] > next {
			out = append(out, l.ops[next:l.at[i]]...)
			merged = len(out)
		}
		next = l.at[i]
		var k []byte
		for j := 0; j < r.Len(); j++ {
			var v []byte
			k, v = r.At(j, k[:0])
			out = append(out, fmt.Sprintf("P %x=%x", k, v))
		}
		r.Release()
		if merged < len(out) {
			slices.SortStableFunc(out[merged:], func(a, b string) int {
				return strings.Compare(putKey(a), putKey(b))
			})
		}
	}
	return append(out, l.ops[next:]...)
}

// putKey is the key of a "P key=value" op, as bytes (hex decoded) in a
// string, so that ops compare as their keys.
func putKey(op string) string {
	k, _, _ := strings.Cut(op[2:], "=")
	b, err := hex.DecodeString(k)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// runReader takes a sorted run by reference and reads it at once (a
// checkpoint buffer's commit, without the table file).
type runReader struct {
	k    []byte
	rows int
	sum  int
}

func (w *runReader) Put(k, v []byte) error { return fmt.Errorf("a Put, not a run") }
func (w *runReader) Delete(k []byte) error { return fmt.Errorf("a Delete, not a run") }
func (w *runReader) PutRun(r checkpoint.SortedRun) error {
	w.rows = r.Len()
	for j := 0; j < r.Len(); j++ {
		var v []byte
		w.k, v = r.At(j, w.k[:0])
		w.sum += len(w.k) + len(v)
	}
	r.Release()
	return nil
}

// BenchmarkRowsAdd adds rows of 1 M distinct join keys in batches of 1024
// (the index of newest rows outgrows the caches), each row's index slot
// prefetched 8 rows ahead (prefetch) or not.
func BenchmarkRowsAdd(b *testing.B) {
	const batch, keys, ahead = 1024, 1 << 20, 8
	for _, pf := range []bool{false, true} {
		b.Run(fmt.Sprintf("prefetch=%v", pf), func(b *testing.B) {
			r, err := NewRows(Options{OpID: "join", MaxParallelism: 128})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			rng := rand.New(rand.NewSource(1))
			val := make([]byte, 80)
			keysOf := make([][]byte, batch)
			plens := make([]int, batch)
			hs := make([]uint64, batch)
			seq := 0
			b.ResetTimer()
			for done := 0; done < b.N; done += batch {
				b.StopTimer()
				for i := range keysOf {
					var jk [9]byte
					jk[0] = 1
					binary.LittleEndian.PutUint64(jk[1:], uint64(rng.Intn(keys)))
					seq++
					sb := binary.AppendUvarint(nil, uint64(seq))
					key := append(Key(nil, []byte("L"), jk[:]), byte(len(sb)))
					plens[i] = len(key) - 1
					keysOf[i] = append(key, sb...)
				}
				b.StartTimer()
				for i, k := range keysOf {
					hs[i] = PrefixHash(k[:plens[i]])
				}
				for i, k := range keysOf {
					if pf && i+ahead < batch {
						r.Prefetch(hs[i+ahead])
					}
					r.AddHashed(hs[i], 0, k, plens[i], val)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/row")
		})
	}
}

// TestRowsRunSortsOnAnotherGoroutine: a snapshot's run is sorted (Prepare)
// and read by the commit's goroutine while the subtask goes on adding rows
// (new chunks among them, and key groups no row had before); it yields
// the rows of the snapshot in key order, as a snapshot written at once
// does. Run it with -race.
func TestRowsRunSortsOnAnotherGoroutine(t *testing.T) {
	const maxP = 16
	type kv struct{ k, v []byte }
	var added []kv // the rows of the snapshot, as state keys and values
	add := func(r *Rows, rng *rand.Rand, n int, kgs int, record bool) {
		val := make([]byte, 40)
		var jk [9]byte
		jk[0] = 1
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint64(jk[1:], uint64(rng.Intn(5000)))
			sb := binary.AppendUvarint(nil, uint64(r.n+1))
			key := append(Key(nil, []byte("L"), jk[:]), byte(len(sb)))
			plen := len(key) - 1
			key = append(key, sb...)
			rng.Read(val)
			kg := int(xxhash.Sum64(jk[:]) % uint64(kgs))
			r.Add(kg, key, plen, val)
			if record {
				added = append(added, kv{append(checkpoint.KeyedPrefix("join", kg), key...), slices.Clone(val)})
			}
		}
	}
	o := Options{OpID: "join", MaxParallelism: maxP, Checkpointing: true}
	a, err := NewRows(o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewRows(o)
	if err != nil {
		t.Fatal(err)
	}
	ra, rb := rand.New(rand.NewSource(3)), rand.New(rand.NewSource(3))
	add(a, ra, 30000, maxP/2, true) // half the key groups only
	add(b, rb, 30000, maxP/2, false)
	slices.SortFunc(added, func(x, y kv) int { return bytes.Compare(x.k, y.k) })
	var want []string
	for _, e := range added {
		want = append(want, fmt.Sprintf("P %x=%x", e.k, e.v))
	}
	at := &opLog{failAt: -1}
	if err := a.Snapshot(1, at); err != nil { // sorted at once
		t.Fatal(err)
	}
	if !slices.Equal(at.ops, want) {
		t.Fatalf("a snapshot written at once differs from the rows added")
	}
	rl := &runLog{opLog: opLog{failAt: -1}}
	if err := b.Snapshot(1, rl); err != nil {
		t.Fatal(err)
	}
	if len(rl.runs) != 1 {
		t.Fatalf("%d runs, want 1", len(rl.runs))
	}
	done := make(chan []string)
	go func() {
		rl.runs[0].(checkpoint.Preparer).Prepare()
		done <- rl.expand()
	}()
	add(b, rb, 70000, maxP, false) // meanwhile: more chunks, every key group
	if got := <-done; !slices.Equal(got, want) {
		t.Fatalf("the run read on another goroutine differs from the rows added: %d writes, want %d", len(got), len(want))
	}
}

// TestRowsHoldsInput: a tiered, checkpointing Rows asks its task to hold
// the input only while a snapshot is pending and its rows take more than
// three budgets; a completion (its rows then leave memory) or an abort
// ends the hold, and a Rows that keeps everything in memory or takes no
// checkpoints never holds.
func TestRowsHoldsInput(t *testing.T) {
	const budget = 1 << 20 // chunks of 4096 rows (the first 64 KiB): steps far below a budget
	base := Options{OpID: "join", MaxParallelism: 4, Checkpointing: true}
	tiered := base
	tiered.Backend, tiered.TierHotBytes, tiered.SpillDir = "rocksdb", budget, t.TempDir()
	tiered.Committed = newTestCommitted(t, store{})
	noCk := tiered
	noCk.Checkpointing, noCk.Committed = false, nil
	noCk.SpillDir = t.TempDir()
	ns := []byte("L")
	n := 0
	add := func(r *Rows, rows int) {
		for i := 0; i < rows; i++ {
			n++
			prefix := Key(nil, ns, []byte(fmt.Sprintf("key-%d", n%7)))
			sb := binary.AppendUvarint(nil, uint64(n))
			key := append(append(append([]byte(nil), prefix...), byte(len(sb))), sb...)
			r.Add(n%4, key, len(prefix), []byte(fmt.Sprintf("row %d with some bytes", n)))
		}
	}
	over := func(r *Rows) bool { return r.Stats().HotBytes > 3*budget }

	r, err := NewRows(tiered)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.Stats().HotBytes <= 5*budget/2 {
		add(r, 1)
	}
	if err := r.Snapshot(1, &runLog{}); err != nil {
		t.Fatal(err)
	}
	if r.HoldsInput() != 0 {
		t.Fatalf("snapshot 1 pending, %d bytes (budget %d): want no hold below three budgets", r.Stats().HotBytes, budget)
	}
	for !over(r) {
		add(r, 1)
	}
	if id := r.HoldsInput(); id != 1 {
		t.Fatalf("snapshot 1 pending, %d bytes: holding for %d, want a hold for checkpoint 1 past three budgets", r.Stats().HotBytes, id)
	}
	r.Abort(1)
	if r.HoldsInput() != 0 {
		t.Fatal("snapshot 1 aborted: still holding")
	}
	if err := r.Snapshot(2, &runLog{}); err != nil {
		t.Fatal(err)
	}
	add(r, 1000) // the rows of the next interval, not in snapshot 2
	if id := r.HoldsInput(); id != 2 {
		t.Fatalf("snapshot 2 pending: holding for %d, want a hold for checkpoint 2", id)
	}
	before := r.Stats().HotBytes
	r.Complete(2)
	if after := r.Stats().HotBytes; r.HoldsInput() != 0 || 2*after > before {
		t.Fatalf("snapshot 2 complete: %d of %d bytes left in memory, holding %v; want its rows gone (the next interval's stay) and no hold", after, before, r.HoldsInput())
	}

	for name, o := range map[string]Options{"in memory": base, "without checkpoints": noCk} {
		r, err := NewRows(o)
		if err != nil {
			t.Fatal(err)
		}
		add(r, 120000) // past three budgets (in memory) or spilled (without checkpoints)
		if o.Checkpointing {
			if err := r.Snapshot(3, &runLog{}); err != nil {
				t.Fatal(err)
			}
		}
		if r.HoldsInput() != 0 {
			t.Errorf("%s: holding", name)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
