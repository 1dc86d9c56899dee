package state

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/checkpoint"
)

func tierKV(t *testing.T, maxP int, hot int64) *KV {
	t.Helper()
	kv, err := NewKV(Options{OpID: "join", MaxParallelism: maxP, Checkpointing: true,
		Backend: "pebble", TierHotBytes: hot, SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kv.Close() })
	return kv
}

func tkey(i int) []byte { return Key(nil, []byte("l"), binary.BigEndian.AppendUint64(nil, uint64(i))) }

func tval(i, gen int) []byte { return []byte(fmt.Sprintf("value-%d-%d", i, gen)) }

// puts counts the Puts and Deletes of a snapshot log.
func puts(l *opLog) (p, d int) {
	for _, op := range l.ops {
		if op[0] == 'P' {
			p++
		} else {
			d++
		}
	}
	return
}

// TestTierSnapshotWritesEvictedDirtyKeys: keys changed and then evicted
// before the barrier are in the snapshot with their latest values; a
// later snapshot writes only what changed since (incremental: cold state
// is never rewritten).
func TestTierSnapshotWritesEvictedDirtyKeys(t *testing.T) {
	kv := tierKV(t, 4, 8<<10)
	const n = 2000
	for i := 0; i < n; i++ {
		kv.Put(i%4, tkey(i), tval(i, 0))
	}
	st := kv.Stats()
	if st.Evictions < n/2 || st.WriteBacks < n/2 || st.Hot > n/4 {
		t.Fatalf("want most dirty keys evicted before the barrier: %+v", st)
	}
	l := &opLog{failAt: -1}
	if err := kv.Snapshot(1, l); err != nil {
		t.Fatal(err)
	}
	if p, d := puts(l); p != n || d != 0 {
		t.Fatalf("snapshot 1 wrote %d puts %d deletes, want %d puts", p, d, n)
	}
	committed := store{}
	applyLog(committed, l.ops)
	for i := 0; i < n; i++ {
		k := string(append(checkpoint.KeyedPrefix("join", i%4), tkey(i)...))
		if committed[k] != string(tval(i, 0)) {
			t.Fatalf("key %d: committed %q", i, committed[k])
		}
	}
	kv.Complete(1)
	// change 3 cold keys, delete 2: the next snapshot writes 5 keys
	kv.Put(1, tkey(1), tval(1, 1))
	kv.Put(2, tkey(2), tval(2, 1))
	kv.Append(3, tkey(3), []byte("x"))
	kv.Delete(0, tkey(4))
	kv.Delete(1, tkey(5))
	kv.Delete((n+7)%4, tkey(n+7)) // absent: nothing to write
	l2 := &opLog{failAt: -1}
	if err := kv.Snapshot(2, l2); err != nil {
		t.Fatal(err)
	}
	if p, d := puts(l2); p != 3 || d != 2 {
		t.Fatalf("snapshot 2 wrote %d puts %d deletes, want 3 and 2:\n%s", p, d, strings.Join(l2.ops, "\n"))
	}
	if kv.Len() != n-2 {
		t.Fatalf("Len %d, want %d", kv.Len(), n-2)
	}
}

// TestTierAbortMergesEvictedKeys: an aborted checkpoint's keys, evicted
// since, are written again by the next checkpoint together with the new
// changes.
func TestTierAbortMergesEvictedKeys(t *testing.T) {
	kv := tierKV(t, 2, 4<<10)
	for i := 0; i < 300; i++ {
		kv.Put(i%2, tkey(i), tval(i, 0))
	}
	l1 := &opLog{failAt: -1}
	if err := kv.Snapshot(1, l1); err != nil {
		t.Fatal(err)
	}
	ev := kv.Stats().Evictions
	for i := 300; i < 600; i++ { // pushes checkpoint 1's keys out
		kv.Put(i%2, tkey(i), tval(i, 0))
	}
	kv.Delete(0, tkey(10))
	if kv.Stats().Evictions-ev < 200 {
		t.Fatalf("want checkpoint 1's keys evicted: %+v", kv.Stats())
	}
	kv.Abort(1)
	l2 := &opLog{failAt: -1}
	if err := kv.Snapshot(2, l2); err != nil {
		t.Fatal(err)
	}
	if p, d := puts(l2); p != 599 || d != 1 {
		t.Fatalf("after abort, snapshot 2 wrote %d puts %d deletes, want 599 and 1", p, d)
	}
	// a failed snapshot keeps the set: 3 writes then an error
	kv.Put(0, tkey(0), tval(0, 1))
	if err := kv.Snapshot(3, &opLog{failAt: 0}); err == nil {
		t.Fatal("injected failure not reported")
	}
	l4 := &opLog{failAt: -1}
	if err := kv.Snapshot(4, l4); err != nil {
		t.Fatal(err)
	}
	if p, d := puts(l4); p != 599 || d != 1 { // checkpoint 2's outcome is unknown: still covered
		t.Fatalf("snapshot 4 wrote %d puts %d deletes", p, d)
	}
}

// TestTierRestoreKeyGroupRange: a checkpoint restored into a tiered KV at
// another key-group range holds exactly that range's keys, loaded into the
// cold tier (not into memory), readable by Get and Scan.
func TestTierRestoreKeyGroupRange(t *testing.T) {
	const maxP, n = 8, 3000
	src := tierKV(t, maxP, 16<<10)
	for i := 0; i < n; i++ {
		src.Put(i%maxP, tkey(i), tval(i, 0))
	}
	l := &opLog{failAt: -1}
	if err := src.Snapshot(1, l); err != nil {
		t.Fatal(err)
	}
	committed := store{}
	applyLog(committed, l.ops)
	dst := tierKV(t, maxP, 16<<10)
	if err := dst.Restore(scanStore(committed), 2, 5); err != nil {
		t.Fatal(err)
	}
	if st := dst.Stats(); st.Hot != 0 {
		t.Fatalf("restore loaded %d entries into memory", st.Hot)
	}
	want := 0
	for i := 0; i < n; i++ {
		v, ok := dst.Get(-1, tkey(i))
		in := i%maxP >= 2 && i%maxP < 5
		if in {
			want++
		}
		if ok != in || (in && string(v) != string(tval(i, 0))) {
			t.Fatalf("key %d (group %d): %q %v", i, i%maxP, v, ok)
		}
	}
	if dst.Len() != want {
		t.Fatalf("Len %d want %d", dst.Len(), want)
	}
	if dst.Stats().ColdReads != int64(want) {
		t.Fatalf("Gets read %d keys from the cold tier, want %d", dst.Stats().ColdReads, want)
	}
	got := 0
	if err := dst.Scan(-1, Key(nil, []byte("l"), nil)[:2], func(k, v []byte) error { got++; return nil }); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("Scan saw %d keys, want %d", got, want)
	}
	// nothing restored is a change
	l2 := &opLog{failAt: -1}
	if err := dst.Snapshot(2, l2); err != nil || len(l2.ops) != 0 {
		t.Fatalf("snapshot after restore wrote %d ops (%v)", len(l2.ops), err)
	}
}

// TestTierCloseRemovesSpillDir: Close deletes the spill directory.
func TestTierCloseRemovesSpillDir(t *testing.T) {
	parent := t.TempDir()
	kv, err := NewKV(Options{OpID: "op/1", MaxParallelism: 1, Backend: "rocksdb", TierHotBytes: 1 << 10, SpillDir: parent})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ {
		kv.Put(0, tkey(i), tval(i, 0))
	}
	ents, _ := os.ReadDir(parent)
	if len(ents) != 1 || kv.Stats().WriteBacks == 0 {
		t.Fatalf("want one spill directory in use: %v %+v", ents, kv.Stats())
	}
	if err := kv.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Fatalf("spill directory left behind: %v", ents)
	}
	if _, err := NewKV(Options{OpID: "op", MaxParallelism: 1, Backend: "memory"}); err == nil || !strings.Contains(err.Error(), OptBackendType) {
		t.Fatalf("bad backend: %v", err)
	}
}

// TestKVScanNoAlloc: a prefix Scan of hot state allocates nothing, and
// visits only the keys of the prefix.
func TestKVScanNoAlloc(t *testing.T) {
	for _, backend := range []string{"hashmap", "pebble"} {
		kv, err := NewKV(Options{OpID: "j", MaxParallelism: 4, Checkpointing: true, Backend: backend, SpillDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		var k []byte
		for i := 0; i < 10000; i++ {
			id := binary.BigEndian.AppendUint32(nil, uint32(i/10))
			k = Key(k, []byte("r"), id, binary.BigEndian.AppendUint32(nil, uint32(i%10)))
			kv.Put(i%4, k, tval(i, 0))
		}
		probe := Key(nil, []byte("r"), binary.BigEndian.AppendUint32(nil, 77))
		n := 0
		fn := func(k, v []byte) error { n++; return nil }
		allocs := testing.AllocsPerRun(100, func() {
			n = 0
			if err := kv.Scan(-1, probe, fn); err != nil {
				t.Fatal(err)
			}
		})
		if n != 10 || allocs != 0 {
			t.Fatalf("%s: scan saw %d keys with %.1f allocations per run", backend, n, allocs)
		}
		kv.Close()
	}
}
