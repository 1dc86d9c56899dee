package state

import (
	"fmt"
	"testing"
)

// TestTableTierColdFilter: a tiered table whose keys go cold in Pebble
// (written back, and restored straight into Pebble) finds every one of
// them again through the filter of written keys, across the filter's
// rebuilds (far more keys than its first size), while most keys never
// written are answered absent by the filter alone (no Pebble Get).
func TestTableTierColdFilter(t *testing.T) {
	for _, ints := range []bool{false, true} {
		t.Run(fmt.Sprintf("ints=%v", ints), func(t *testing.T) {
			const n = 30000
			opts := Options{OpID: "agg", MaxParallelism: 4, Checkpointing: true, IntKeys: ints}
			key := func(i int) tbKey {
				if ints {
					return tbKey{i: int64(i*7 - n)}
				}
				return bkey(i)
			}
			val := func(i int) []byte { return []byte(fmt.Sprintf("v%d", i)) }
			// the first half is restored into Pebble
			src := newTOp(t, opts, 0)
			for i := 0; i < n/2; i++ {
				src.put(key(i), i%4, val(i), false)
			}
			committed := store{}
			applyLog(committed, snapshotOps(t, src, 1).ops)

			o := newTOp(t, opts, 4<<10)
			defer o.t.Close()
			if err := o.t.Restore(scanStore(committed), 0, 4, o.decode); err != nil {
				t.Fatal(err)
			}
			// the second half is inserted and evicted batch by batch
			for i := n / 2; i < n; i++ {
				o.put(key(i), i%4, val(i), false)
				if i%100 == 99 {
					if err := o.t.MaybeEvict(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := o.t.MaybeEvict(); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				if got, want := o.get(key(i), i%4), fmt.Sprintf("%x", val(i)); got != want {
					t.Fatalf("key %d: %q, want %q", i, got, want)
				}
				if i%100 == 99 {
					if err := o.t.MaybeEvict(); err != nil {
						t.Fatal(err)
					}
				}
			}
			f := &o.t.tier.filter
			if f.mask+1 <= coldFilterMinBits {
				t.Fatalf("the filter was never rebuilt larger: %d bits for %d keys", f.mask+1, n)
			}
			// keys never written: the filter answers (almost) all of them
			maybe := 0
			for i := n; i < 2*n; i++ {
				k := key(i)
				pk := k.b
				if ints {
					pk = intPK(nil, k.i, false)
				}
				if f.mayHold(pk) {
					maybe++
				}
				if _, ok := o.find(k, i%4); ok {
					t.Fatalf("key %d was never written but was found", i)
				}
			}
			if maybe > n/20 {
				t.Fatalf("%d of %d absent keys passed the filter", maybe, n)
			}
		})
	}
}
