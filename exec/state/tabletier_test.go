package state

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func bkey(i int) tbKey { return tbKey{b: []byte(fmt.Sprintf("key-%06d", i))} }

// snapshotOps takes snapshot id of o and returns its log.
func snapshotOps(t *testing.T, o *tOp, id int64) *opLog {
	t.Helper()
	l := &opLog{failAt: -1}
	if err := o.t.Snapshot(id, l); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestTableTierLookupsNeverEvict: a batch's lookups and inserts never
// evict (the operator holds slot ids until the end of the batch);
// MaybeEvict then brings the hot slots under the budget, writing the new
// ones back.
func TestTableTierLookupsNeverEvict(t *testing.T) {
	o := newTOp(t, Options{OpID: "agg", MaxParallelism: 4}, 4<<10)
	defer o.t.Close()
	for i := 0; i < 1000; i++ {
		o.put(bkey(i), i%4, []byte("some value"), false)
	}
	if st := o.t.TierStats(); st.Evictions != 0 || st.Hot != 1000 {
		t.Fatalf("evicted during the batch: %+v", st)
	}
	if err := o.t.MaybeEvict(); err != nil {
		t.Fatal(err)
	}
	st := o.t.TierStats()
	if st.Evictions < 900 || st.WriteBacks != st.Evictions || st.HotBytes > st.Budget || o.clears != int(st.Evictions) {
		t.Fatalf("after MaybeEvict: %+v (%d clears)", st, o.clears)
	}
	// every key reads back from the cold tier
	for i := 0; i < 1000; i++ {
		if got := o.get(bkey(i), i%4); got != fmt.Sprintf("%x", "some value") {
			t.Fatalf("key %d: %s", i, got)
		}
		if i%50 == 0 {
			if err := o.t.MaybeEvict(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if st := o.t.TierStats(); st.ColdReads < 900 {
		t.Fatalf("cold keys were not read back: %+v", st)
	}
}

// TestTableTierRestoreLargerThanBudget: a state 100 times the hot budget
// restores straight into Pebble (no slot in memory), every key reads back
// with its value, memory stays within the budget, and the next
// checkpoint writes only the keys that changed (cold state is not
// rewritten), int-keyed and bytes-keyed.
func TestTableTierRestoreLargerThanBudget(t *testing.T) {
	for _, ints := range []bool{false, true} {
		t.Run(fmt.Sprintf("ints=%v", ints), func(t *testing.T) {
			const n = 5000
			opts := Options{OpID: "agg", MaxParallelism: 8, Checkpointing: true, IntKeys: ints}
			key := func(i int) tbKey {
				if ints {
					return tbKey{i: int64(i*7 - n)}
				}
				return bkey(i)
			}
			val := func(i, gen int) []byte { return []byte(fmt.Sprintf("v%d-%d-%s", i, gen, strings.Repeat("x", 40))) }
			src := newTOp(t, opts, 0)
			for i := 0; i < n; i++ {
				src.put(key(i), i%8, val(i, 0), false)
			}
			committed := store{}
			applyLog(committed, snapshotOps(t, src, 1).ops)
			src.t.Complete(1)

			o := newTOp(t, opts, 4<<10)
			defer o.t.Close()
			for _, r := range [][2]int{{0, 3}, {3, 8}} {
				if err := o.t.Restore(scanStore(committed), r[0], r[1], o.decode); err != nil {
					t.Fatal(err)
				}
			}
			if st := o.t.TierStats(); st.Hot != 0 || o.t.Slots() > slotStep(0) { // one step: the scratch slot's
				t.Fatalf("restore held slots in memory: %+v, %d slots", st, o.t.Slots())
			}
			for i := 0; i < n; i++ {
				if got, want := o.get(key(i), i%8), fmt.Sprintf("%x", val(i, 0)); got != want {
					t.Fatalf("key %d: %s, want %s", i, got, want)
				}
				if i%100 == 99 {
					if err := o.t.MaybeEvict(); err != nil {
						t.Fatal(err)
					}
					if st := o.t.TierStats(); st.HotBytes > st.Budget {
						t.Fatalf("over budget after MaybeEvict: %+v", st)
					}
				}
			}
			if st := o.t.TierStats(); st.ColdReads != n || st.WriteBacks != 0 {
				t.Fatalf("want every key read once from Pebble, none written back (clean): %+v", st)
			}
			// change 3 cold keys, remove 2: the next checkpoint writes 5
			for _, i := range []int{10, 2000, 4999} {
				o.put(key(i), i%8, val(i, 1), false)
				src.put(key(i), i%8, val(i, 1), false)
			}
			for _, i := range []int{11, 3000} {
				o.del(key(i), i%8)
				src.del(key(i), i%8)
			}
			if err := o.t.MaybeEvict(); err != nil {
				t.Fatal(err)
			}
			l := snapshotOps(t, o, 2)
			if want := snapshotOps(t, src, 2); strings.Join(l.ops, "\n") != strings.Join(want.ops, "\n") {
				t.Fatalf("checkpoint 2:\n%s\nin memory:\n%s", strings.Join(l.ops, "\n"), strings.Join(want.ops, "\n"))
			}
			if p, d := puts(l); p != 3 || d != 2 {
				t.Fatalf("checkpoint 2 wrote %d puts, %d deletes; want 3 and 2", p, d)
			}
		})
	}
}

// TestTableTierSweepsColdKeys: keys expired while cold, never looked up
// again, are removed by Sweep's incremental walk over Pebble (n keys per
// call) and deleted from the next checkpoint.
func TestTableTierSweepsColdKeys(t *testing.T) {
	opts := Options{OpID: "agg", MaxParallelism: 4, Checkpointing: true, TTL: time.Second}
	o := newTOp(t, opts, 4<<10)
	defer o.t.Close()
	o.t.SetNow(1000)
	const n = 600
	for i := 0; i < n; i++ {
		o.put(bkey(i), i%4, []byte("v"), false)
	}
	if err := o.t.MaybeEvict(); err != nil {
		t.Fatal(err)
	}
	if p, _ := puts(snapshotOps(t, o, 1)); p != n {
		t.Fatalf("checkpoint 1 wrote %d keys", p)
	}
	o.t.Complete(1)
	hot := o.t.TierStats().Hot
	if hot > n/4 {
		t.Fatalf("%d keys still hot", hot)
	}
	o.t.SetNow(1500)
	o.t.Sweep(1000, o.remove) // nothing expired yet
	o.t.SetNow(2500)
	calls, swept := 0, 0
	for o.t.Len() > 0 || calls < (n+49)/50 {
		o.t.Sweep(50, func(g int32) { swept++; o.remove(g) })
		calls++
		if calls > 100 {
			t.Fatal("the sweep does not finish")
		}
		if calls == 1 {
			if d := countDeletes(o); d > 100 {
				t.Fatalf("one sweep of 50 removed %d keys", d)
			}
		}
	}
	l := snapshotOps(t, o, 2)
	if p, d := puts(l); p != 0 || d != n {
		t.Fatalf("checkpoint 2 after the sweeps: %d puts, %d deletes; want %d deletes", p, d, n)
	}
	if swept != hot {
		t.Fatalf("expire was called for %d hot keys, want %d (cold keys are removed by the table)", swept, hot)
	}
	for i := 0; i < n; i += 37 {
		if got := o.get(bkey(i), i%4); got != "absent" {
			t.Fatalf("swept key %d reads %s", i, got)
		}
	}
}

// countDeletes is the number of tombstones the next snapshot would write.
func countDeletes(o *tOp) int { return len(o.t.tombs.ents) }

// TestTableTierDecodeFailure: a cold key the operator cannot decode fails
// the batch (MaybeEvict returns the error) instead of being taken for an
// absent key silently.
func TestTableTierDecodeFailure(t *testing.T) {
	o := newTOp(t, Options{OpID: "agg", MaxParallelism: 2}, 2<<10)
	defer o.t.Close()
	for i := 0; i < 200; i++ {
		o.put(bkey(i), i%2, []byte("v"), false)
	}
	if err := o.t.MaybeEvict(); err != nil {
		t.Fatal(err)
	}
	bad := errors.New("undecodable")
	calls := 0
	o.t.tier.hooks.Decode = func(g int32, key, val []byte) (int64, bool, error) { calls++; return 0, false, bad }
	o.get(bkey(0), 0)
	err := o.t.MaybeEvict()
	if calls != 1 || !errors.Is(err, bad) {
		t.Fatalf("decode called %d times, MaybeEvict: %v", calls, err)
	}
}

// TestEnableTierBackend: the in-memory backend keeps the table in memory;
// an unknown backend is an error naming the option.
func TestEnableTierBackend(t *testing.T) {
	hooks := TierHooks{Decode: func(int32, []byte, []byte) (int64, bool, error) { return 0, false, nil },
		Clear: func(int32) {}, Bytes: func(int32) int { return 0 }}
	for _, b := range []string{"", "hashmap"} {
		tbl, _ := NewTable(Options{OpID: "x", MaxParallelism: 1, Backend: b}, intCodec{})
		if err := tbl.EnableTier(hooks); err != nil || tbl.Tiered() {
			t.Fatalf("backend %q: %v, tiered %v", b, err, tbl.Tiered())
		}
		if err := tbl.MaybeEvict(); err != nil {
			t.Fatal(err)
		}
		if err := tbl.Close(); err != nil {
			t.Fatal(err)
		}
	}
	tbl, _ := NewTable(Options{OpID: "x", MaxParallelism: 1, Backend: "rocks"}, intCodec{})
	if err := tbl.EnableTier(hooks); err == nil || !strings.Contains(err.Error(), OptBackendType) {
		t.Fatalf("unknown backend: %v", err)
	}
}

// TestTableTierKeepsAGiantSlotInUse: a slot larger than a quarter of the
// hot budget (and giantSlot) that every batch uses stays in memory (evicting it only read
// it back whole in the next batch), while small slots are still evicted;
// once a batch does not use it, it is evicted like any other.
func TestTableTierKeepsAGiantSlotInUse(t *testing.T) {
	const budget = 8 << 20
	o := newTOp(t, Options{OpID: "agg", MaxParallelism: 4}, budget)
	defer o.t.Close()
	giant := bytes.Repeat([]byte("g"), budget) // the budget itself
	o.put(bkey(0), 0, giant, false)
	for batch := 1; batch <= 20; batch++ {
		o.put(bkey(0), 0, []byte("+"), true) // grows a little every batch
		for i := 0; i < 50; i++ {
			o.put(bkey(batch*100+i), i%4, []byte("a small value"), false)
		}
		if err := o.t.MaybeEvict(); err != nil {
			t.Fatal(err)
		}
	}
	st := o.t.TierStats()
	if st.ColdReads != 0 || o.clears == 0 || st.Hot > 60 {
		t.Fatalf("the giant slot was evicted (%d cold reads) or the small ones were not (%d clears, %d hot)", st.ColdReads, o.clears, st.Hot)
	}
	if got, want := o.get(bkey(0), 0), fmt.Sprintf("%x", append(giant, bytes.Repeat([]byte("+"), 20)...)); got != want {
		t.Fatal("the giant slot's value changed")
	}
	// a batch that does not use it: it goes
	if err := o.t.MaybeEvict(); err != nil { // (the get above was a use)
		t.Fatal(err)
	}
	if err := o.t.MaybeEvict(); err != nil {
		t.Fatal(err)
	}
	if st := o.t.TierStats(); st.HotBytes > budget {
		t.Fatalf("an unused giant slot stayed: %+v", st)
	}
}

// TestKeyListKeepsArenaInUse: a key list's large arena stays through its
// two resets of an interval that used it (pending, then complete) and goes
// after two resets that found it mostly empty.
func TestKeyListKeepsArenaInUse(t *testing.T) {
	var l keyList
	key := bytes.Repeat([]byte("k"), 1000)
	fill := func(n int) {
		for i := 0; i < n; i++ {
			l.add(key, nil)
		}
	}
	fill(6000) // ~6 MB
	big := cap(l.buf)
	if big <= 4<<20 {
		t.Fatalf("arena %d bytes: too small for the test", big)
	}
	l.reset()
	l.reset()
	if cap(l.buf) != big {
		t.Fatalf("arena in use dropped: cap %d, was %d", cap(l.buf), big)
	}
	fill(6000)
	if cap(l.buf) != big {
		t.Fatalf("arena grown again: cap %d, was %d", cap(l.buf), big)
	}
	l.reset()
	fill(10)
	l.reset()
	if cap(l.buf) != big {
		t.Fatal("arena dropped after one small interval (the reset before it saw it full)")
	}
	l.reset()
	if cap(l.buf) != 0 {
		t.Fatalf("arena of %d bytes kept after two small resets", cap(l.buf))
	}
}
