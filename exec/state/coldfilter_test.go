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

// TestColdFilterFalsePositives: a filter filled to its size, and a chain
// of filters grown to a million keys, let few absent keys through (each
// costs a Pebble Get) and never miss a key added.
func TestColdFilterFalsePositives(t *testing.T) {
	key := func(i int) []byte { return []byte(fmt.Sprintf("key-%d", i)) }
	var f coldFilter
	f.size(1 << 20)
	n := int((f.mask + 1) / coldFilterBitsPerKey)
	for i := 0; i < n; i++ {
		f.add(key(i))
	}
	if f.full() {
		t.Fatalf("full after %d keys of %d bits", n, f.mask+1)
	}
	var g growFilter
	const m = 1 << 20
	for i := 0; i < m; i++ {
		g.add(key(i))
	}
	for i := 0; i < m; i++ {
		if (i < n && !f.mayHold(key(i))) || !g.mayHold(key(i)) {
			t.Fatalf("key %d was added but is not held", i)
		}
	}
	fp, gfp := 0, 0
	const probes = 1 << 20
	for i := m; i < m+probes; i++ {
		if f.mayHold(key(i)) {
			fp++
		}
		if g.mayHold(key(i)) {
			gfp++
		}
	}
	t.Logf("false positives: one full filter %.3f%%, a chain of %d filters %.3f%%", 100*float64(fp)/probes, len(g.fs), 100*float64(gfp)/probes)
	if fp > probes/1000 { // 0.1%
		t.Fatalf("%d of %d absent keys passed a full filter", fp, probes)
	}
	if gfp > probes/300 { // 0.33%
		t.Fatalf("%d of %d absent keys passed the chain", gfp, probes)
	}
}
