package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/streamsql/streamsql/checkpoint"
)

// intCodec keeps one int64 value per slot.
type intCodec struct{ keys, vals *[]int64 }

func (c intCodec) AppendKey(dst []byte, g int32) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64((*c.keys)[g]))
}
func (c intCodec) AppendValue(dst []byte, g int32) []byte {
	return binary.AppendVarint(dst, (*c.vals)[g])
}

type model struct {
	t          *Table
	keys, vals []int64
}

func newModel(t *testing.T, ckpt bool) *model { return newModelOpts(t, ckpt, false) }

func newModelOpts(t *testing.T, ckpt, elide bool) *model {
	m := &model{}
	tbl, err := NewTable(Options{OpID: "op", MaxParallelism: 4, Checkpointing: ckpt, IntKeys: true, ElideTransient: elide}, intCodec{&m.keys, &m.vals})
	if err != nil {
		t.Fatal(err)
	}
	tbl.OnGrow = func(n int) {
		m.keys = Grow(m.keys, n, 0)
		m.vals = Grow(m.vals, n, 0)
	}
	m.t = tbl
	return m
}

func (m *model) set(k, v int64) {
	g, ok := m.t.LookupInt(k)
	if !ok {
		g = m.t.InsertInt(k, int(k%4))
		m.keys[g] = k
	}
	m.vals[g] = v
	m.t.Touch(g)
}

func (m *model) del(k int64) {
	g, ok := m.t.LookupInt(k)
	if ok {
		m.t.Remove(g, k, false)
	}
}

// store is a committed state: key -> value.
type store map[string]string

// recorder is a StateWriter applying to a store, recording the order.
type recorder struct {
	s   store
	ops []string
}

func (r *recorder) Put(k, v []byte) error {
	r.s[string(k)] = string(v)
	r.ops = append(r.ops, "put "+fmt.Sprintf("%x", k))
	return nil
}
func (r *recorder) Delete(k []byte) error {
	delete(r.s, string(k))
	r.ops = append(r.ops, "del "+fmt.Sprintf("%x", k))
	return nil
}

func (m *model) want() store {
	s := store{}
	for g := int32(0); int(g) < m.t.Slots(); g++ {
		if m.t.Alive(g) {
			k := append(checkpoint.KeyedPrefix("op", m.t.KeyGroup(g)), binary.BigEndian.AppendUint64(nil, uint64(m.keys[g]))...)
			s[string(k)] = string(binary.AppendVarint(nil, m.vals[g]))
		}
	}
	return s
}

func same(a, b store) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestAbortMergesBackAndCompleteDrops: the committed store, built only
// from the snapshots of completed checkpoints, always equals the table's
// state at the last completed checkpoint, whatever mix of completes and
// aborts (also notified late, after the next snapshot, and some after their
// delta reached the working DB), with and without ElideTransient (slots
// added and removed between two snapshots write nothing).
func TestAbortMergesBackAndCompleteDrops(t *testing.T) {
	for _, elide := range []bool{false, true} {
		testAbortMergesBack(t, elide)
	}
}

func testAbortMergesBack(t *testing.T, elide bool) {
	elided := 0
	for seed := int64(0); seed < 40; seed++ {
		m := newModelOpts(t, true, elide)
		committed := store{}
		var pend []struct {
			id  int64
			rec *recorder
			at  store
		}
		r := uint64(seed*7919 + 1)
		rnd := func(n int) int64 {
			r = r*6364136223846793005 + 1442695040888963407
			return int64((r >> 33) % uint64(n))
		}
		for id := int64(1); id <= 60; id++ {
			for i := 0; i < 20; i++ {
				k := rnd(50)
				if rnd(4) == 0 {
					if g, ok := m.t.LookupInt(k); ok && m.t.born[g] == m.t.epoch {
						elided++
					}
					m.del(k)
				} else {
					m.set(k, rnd(1000))
				}
			}
			rec := &recorder{s: store{}}
			if err := m.t.Snapshot(id, rec); err != nil {
				t.Fatal(err)
			}
			pend = append(pend, struct {
				id  int64
				rec *recorder
				at  store
			}{id, rec, m.want()})
			// Decide outcomes of some pending checkpoints, oldest first.
			for len(pend) > 0 && rnd(3) != 0 {
				p := pend[0]
				pend = pend[1:]
				if rnd(3) == 0 {
					if rnd(2) == 0 { // aborted after its commit step
						replay(committed, p.rec)
					}
					m.t.Abort(p.id)
					continue
				}
				// Commit: apply the writes in order to the committed store.
				replay(committed, p.rec)
				m.t.Complete(p.id)
				if !same(committed, p.at) {
					t.Fatalf("elide %v seed %d: after completing checkpoint %d the committed state differs from the table's at that checkpoint", elide, seed, p.id)
				}
			}
		}
	}
	if elided == 0 {
		t.Fatal("no slot was added and removed between two snapshots: the schedule does not exercise ElideTransient")
	}
}

// replay applies a snapshot's writes (recorded in a store of their own,
// with deletions in the op log) to the committed store.
func replay(dst store, rec *recorder) {
	for _, op := range rec.ops {
		kind, hexKey, _ := strings.Cut(op, " ")
		var k []byte
		fmt.Sscanf(hexKey, "%x", &k)
		if kind == "del" {
			delete(dst, string(k))
		} else {
			dst[string(k)] = rec.s[string(k)]
		}
	}
}

// TestNoTrackingWithoutCheckpointing: without checkpointing no change set
// or tombstone is kept.
func TestNoTrackingWithoutCheckpointing(t *testing.T) {
	m := newModel(t, false)
	for k := int64(0); k < 10000; k++ {
		m.set(k, k)
	}
	for k := int64(0); k < 10000; k += 2 {
		m.del(k)
	}
	if n := m.t.Changed(); n != 0 {
		t.Fatalf("%d changes tracked without checkpointing", n)
	}
	if m.t.Len() != 5000 {
		t.Fatalf("%d live keys, want 5000", m.t.Len())
	}
}

// TestSnapshotIsSortedAndStable: writes come sorted by key, and the same
// state gives the same bytes whatever the order of the changes.
func TestSnapshotIsSortedAndStable(t *testing.T) {
	var outs []string
	for _, order := range [][]int64{{5, 1, 9, 3}, {9, 3, 1, 5}} {
		m := newModel(t, true)
		for _, k := range order {
			m.set(k, k*10)
		}
		m.del(3)
		rec := &recorder{s: store{}}
		if err := m.t.Snapshot(1, rec); err != nil {
			t.Fatal(err)
		}
		if !sort.StringsAreSorted(keysOf(rec.ops)) {
			t.Fatalf("writes not sorted: %v", rec.ops)
		}
		outs = append(outs, strings.Join(rec.ops, ","))
	}
	if outs[0] != outs[1] {
		t.Fatalf("same state, different writes:\n%s\n%s", outs[0], outs[1])
	}
}

func keysOf(ops []string) []string {
	var ks []string
	for _, op := range ops {
		_, k, _ := strings.Cut(op, " ")
		ks = append(ks, k)
	}
	return ks
}

// BenchmarkRemoveManyInOneEpoch: deleting n groups in one epoch is linear
// (it was quadratic: 50k groups 0.1 s, 200k groups 1.0 s).
func BenchmarkRemoveManyInOneEpoch(b *testing.B) {
	for _, n := range []int{50000, 200000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				m := &model{}
				tbl, _ := NewTable(Options{OpID: "op", MaxParallelism: 128, Checkpointing: true, IntKeys: true}, intCodec{&m.keys, &m.vals})
				tbl.OnGrow = func(n int) { m.keys = Grow(m.keys, n, 0); m.vals = Grow(m.vals, n, 0) }
				m.t = tbl
				for k := int64(0); k < int64(n); k++ {
					m.set(k, k)
				}
				for k := int64(0); k < int64(n); k++ {
					m.del(k)
				}
				if err := tbl.Snapshot(1, &recorder{s: store{}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestTTLExpiresAndSweeps: a key not updated for longer than the TTL is
// expired (never returned) and swept out of the state; its removal reaches
// the checkpoint; update times survive a snapshot and restore.
func TestTTLExpiresAndSweeps(t *testing.T) {
	m := &model{}
	tbl, err := NewTable(Options{OpID: "op", MaxParallelism: 4, Checkpointing: true, IntKeys: true, TTL: 100 * time.Millisecond}, intCodec{&m.keys, &m.vals})
	if err != nil {
		t.Fatal(err)
	}
	tbl.OnGrow = func(n int) { m.keys = Grow(m.keys, n, 0); m.vals = Grow(m.vals, n, 0) }
	m.t = tbl
	tbl.SetNow(1000)
	m.set(1, 10)
	m.set(2, 20)
	tbl.SetNow(1080)
	m.set(2, 21) // 2 updated at 1080
	tbl.SetNow(1150)
	g1, _ := tbl.LookupInt(1)
	g2, _ := tbl.LookupInt(2)
	if !tbl.Expired(g1) || tbl.Expired(g2) {
		t.Fatalf("at 1150: expired(1) = %v (want true), expired(2) = %v (want false)", tbl.Expired(g1), tbl.Expired(g2))
	}
	rec := &recorder{s: store{}}
	if err := tbl.Snapshot(1, rec); err != nil {
		t.Fatal(err)
	}
	tbl.Complete(1)
	swept := 0
	tbl.Sweep(10, func(g int32) { swept++; m.t.Remove(g, m.keys[g], false) })
	if swept != 1 || tbl.Len() != 1 {
		t.Fatalf("swept %d, %d keys left", swept, tbl.Len())
	}
	rec2 := &recorder{s: store{}}
	if err := tbl.Snapshot(2, rec2); err != nil {
		t.Fatal(err)
	}
	if len(rec2.ops) != 1 || !strings.HasPrefix(rec2.ops[0], "del ") {
		t.Fatalf("the expired key's removal is not in the next checkpoint: %v", rec2.ops)
	}
	// Restore: key 2 comes back with its update time 1080.
	m2 := &model{}
	tbl2, _ := NewTable(Options{OpID: "op", MaxParallelism: 4, Checkpointing: true, IntKeys: true, TTL: 100 * time.Millisecond}, intCodec{&m2.keys, &m2.vals})
	tbl2.OnGrow = func(n int) { m2.keys = Grow(m2.keys, n, 0); m2.vals = Grow(m2.vals, n, 0) }
	committed := store{}
	replay(committed, rec)
	replay(committed, rec2)
	tbl2.SetNow(1170)
	if err := tbl2.Restore(scanStore(committed), 0, 4, func(g int32, key, val []byte) (int64, bool, error) {
		m2.keys[g] = int64(binary.BigEndian.Uint64(key))
		v, _ := binary.Varint(val)
		m2.vals[g] = v
		return m2.keys[g], false, nil
	}); err != nil {
		t.Fatal(err)
	}
	g, ok := tbl2.LookupInt(2)
	if !ok || tbl2.Len() != 1 || m2.vals[g] != 21 || tbl2.Expired(g) {
		t.Fatalf("restored: ok %v len %d val %d", ok, tbl2.Len(), m2.vals[g])
	}
	tbl2.SetNow(1181)
	if !tbl2.Expired(g) {
		t.Fatal("the restored key lost its update time (1080): not expired at 1181")
	}
}

// scanStore is a StateReader over a store.
type scanStore store

func (s scanStore) Scan(prefix []byte, fn func(k, v []byte) error) error {
	var ks []string
	for k := range s {
		if strings.HasPrefix(k, string(prefix)) {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	for _, k := range ks {
		if err := fn([]byte(k), []byte(s[k])); err != nil {
			return err
		}
	}
	return nil
}

// benchModel is a checkpointing int-keyed model over 128 key groups.
func benchModel() *model {
	m := &model{}
	m.t, _ = NewTable(Options{OpID: "op", MaxParallelism: 128, Checkpointing: true, IntKeys: true}, intCodec{&m.keys, &m.vals})
	m.t.OnGrow = func(n int) { m.keys = Grow(m.keys, n, 0); m.vals = Grow(m.vals, n, 0) }
	return m
}

// BenchmarkTableSnapshot: a snapshot of 200 K changed groups and 100 K
// removed ones (random int keys over 128 key groups) into a checkpoint
// buffer, as at a barrier.
func BenchmarkTableSnapshot(b *testing.B) {
	m := benchModel()
	tbl := m.t
	buf := checkpoint.NewBuffer()
	rng := rand.New(rand.NewSource(1))
	keys := make([]int64, 300_000)
	for i := range keys {
		keys[i] = rng.Int63()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for _, k := range keys {
			m.set(k, k)
		}
		for _, k := range keys[:100_000] {
			m.del(k)
		}
		snapshotTimed(b, tbl, int64(i+1), buf)
		for _, k := range keys[100_000:] {
			m.del(k)
		}
		b.StartTimer()
	}
}

// snapshotTimed times snapshot id of tbl into buf (the timer stopped
// before and after), then completes it and empties buf.
func snapshotTimed(b *testing.B, tbl *Table, id int64, buf *checkpoint.Buffer) {
	b.StartTimer()
	if err := tbl.Snapshot(id, buf); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	tbl.Complete(id)
	buf.Reset()
}

// BenchmarkTableSnapshotSpread: a snapshot of 300 K changed groups of a
// table of a million, their keys spread over all 128 key groups as the
// operators' hashed keys are (BenchmarkTableSnapshot's keys take 4).
func BenchmarkTableSnapshotSpread(b *testing.B) {
	m := benchModel()
	tbl := m.t
	buf := checkpoint.NewBuffer()
	rng := rand.New(rand.NewSource(1))
	keys := make([]int64, 1_000_000)
	set := func(k, v int64) {
		g, ok := tbl.LookupInt(k)
		if !ok {
			g = tbl.InsertInt(k, int(uint64(k)%128))
			m.keys[g] = k
		}
		m.vals[g] = v
		tbl.Touch(g)
	}
	for i := range keys {
		keys[i] = rng.Int63()
		set(keys[i], 1)
	}
	if err := tbl.Snapshot(1, buf); err != nil {
		b.Fatal(err)
	}
	tbl.Complete(1)
	buf.Reset()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for j := 0; j < 300_000; j++ {
			k := keys[rng.Intn(len(keys))]
			set(k, k+int64(i))
		}
		snapshotTimed(b, tbl, int64(i+2), buf)
		b.StartTimer()
	}
}

// TestSnapshotPreEncodedSameWrites: a snapshot that encodes small values
// before its sort (in slot order) writes exactly what one that encodes
// them as it writes does, across seeded puts, growing values, removals,
// reinsertions, aborts and completions, with and without a TTL.
func TestSnapshotPreEncodedSameWrites(t *testing.T) {
	for _, ttl := range []time.Duration{0, time.Hour} {
		for seed := int64(1); seed <= 4; seed++ {
			opts := Options{OpID: "agg", MaxParallelism: 8, Checkpointing: true, TTL: ttl}
			if seed > 2 {
				opts.MaxParallelism = 512 // more snapshot buckets than key groups used
			}
			a, b := newTOp(t, opts, 0), newTOp(t, opts, 0)
			b.t.smallMax = 0
			a.t.bucketBytes = 512 // many buckets
			if seed%2 == 0 {
				a.valueSize = 64 // a bound (some values are larger): the first snapshot encodes before its sort
			}
			keys := 300
			if seed > 2 {
				keys = 5000
			}
			rng := rand.New(rand.NewSource(seed))
			for id := int64(1); id <= 30; id++ {
				n := rng.Intn(400)
				if id%3 == 0 {
					// few changes of many slots, among them keys put
					// and removed again since the last snapshot
					n = rng.Intn(40)
					for i := 0; i < 5; i++ {
						k := bkey(keys + rng.Intn(50))
						kg := int(k.b[len(k.b)-1]) % 8
						a.put(k, kg, []byte("gone"), false)
						b.put(k, kg, []byte("gone"), false)
						a.del(k, kg)
						b.del(k, kg)
					}
				}
				for i := 0; i < n; i++ {
					k := bkey(rng.Intn(keys))
					kg := int(k.b[len(k.b)-1]) % 8
					switch r := rng.Intn(10); {
					case r < 2:
						a.del(k, kg)
						b.del(k, kg)
					default:
						v := []byte(fmt.Sprintf("v%d", rng.Intn(1000)))
						if rng.Intn(30) == 0 {
							v = bytes.Repeat(v, 200) // some large values
						}
						appendTo := r == 9
						a.put(k, kg, v, appendTo)
						b.put(k, kg, v, appendTo)
					}
				}
				la, lb := snapshotOps(t, a, id), snapshotOps(t, b, id)
				if !slices.Equal(la.ops, lb.ops) {
					t.Fatalf("ttl %v seed %d checkpoint %d: the pre-encoded snapshot wrote\n%v\nthe other\n%v", ttl, seed, id, la.ops, lb.ops)
				}
				var last []byte
				for _, op := range la.ops {
					var k []byte
					fmt.Sscanf(strings.SplitN(op[2:], "=", 2)[0], "%x", &k)
					if last != nil && bytes.Compare(k, last) <= 0 {
						t.Fatalf("ttl %v seed %d checkpoint %d: %x written after %x", ttl, seed, id, k, last)
					}
					last = k
				}
				switch rng.Intn(3) {
				case 0:
					a.t.Abort(id)
					b.t.Abort(id)
				default:
					a.t.Complete(id)
					b.t.Complete(id)
				}
			}
			if p := a.t.snapPaths; p[0]+p[1] < 10 || (seed > 2 && p[1] == 0) || b.t.snapPaths[2] != 30 {
				t.Fatalf("ttl %v seed %d: snapshots by path %v (the other table's %v)", ttl, seed, p, b.t.snapPaths)
			}
			if a.t.snapBuckets < 8 {
				t.Fatalf("ttl %v seed %d: at most %d snapshot buckets", ttl, seed, a.t.snapBuckets)
			}
			if seed%2 == 0 && a.t.snapPaths[2] != 0 {
				t.Fatalf("ttl %v seed %d: a sized codec's snapshots by path %v", ttl, seed, a.t.snapPaths)
			}
		}
	}
}

// TestSlotsInOrder checks that slots are handed out in the order they
// were before tables grew in steps: ascending, a removed slot first.
func TestSlotsInOrder(t *testing.T) {
	m := newModel(t, true)
	for i := 0; i < 300; i++ {
		g := m.t.InsertInt(int64(i), 0)
		if int(g) != i {
			t.Fatalf("key %d got slot %d", i, g)
		}
		if len(m.keys) < int(g)+1 {
			t.Fatalf("slot %d beyond the operator's columns (%d)", g, len(m.keys))
		}
	}
	m.t.Remove(17, 17, false)
	if g := m.t.InsertInt(1000, 0); g != 17 {
		t.Fatalf("after removing slot 17 a new key got slot %d", g)
	}
	if g := m.t.InsertInt(1001, 0); g != 300 {
		t.Fatalf("the next new key got slot %d, want 300", g)
	}
}

func TestGrow(t *testing.T) {
	s := Grow([]int64{1, 2}, 5, -1)
	if fmt.Sprint(s) != "[1 2 -1 -1 -1]" {
		t.Fatalf("Grow: %v", s)
	}
	s = s[:1]
	s = Grow(s, 3, 7) // within capacity: the old tail is overwritten
	if fmt.Sprint(s) != "[1 7 7]" {
		t.Fatalf("Grow within capacity: %v", s)
	}
	c := cap(Grow(make([]int64, 1000), 1001, 0))
	if c < 2000 {
		t.Fatalf("Grow from 1000 to 1001: capacity %d, want at least doubled", c)
	}
}

// TestRadixSortMatchesStableSort: radixSort orders items as a stable sort
// by (p0, p1) does, whichever bytes vary (p1 is the less significant
// word; bytes every item shares are skipped).
func TestRadixSortMatchesStableSort(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for round := 0; round < 200; round++ {
		n := 1 + rng.Intn(3000)
		m0, m1 := rng.Uint64(), rng.Uint64() // the bytes that vary
		if round%4 == 0 {
			m0 = 0
		}
		if round%5 == 0 {
			m1 = 0xff << (8 * uint(rng.Intn(8)))
		}
		a := make([]radixItem, n)
		for i := range a {
			a[i] = radixItem{p0: rng.Uint64()&m0 | 0x0102030405060708&^m0, p1: rng.Uint64() & m1, i: int32(i)}
			if i > 0 && rng.Intn(10) == 0 {
				a[i].p0, a[i].p1 = a[i-1].p0, a[i-1].p1 // ties keep their order
			}
		}
		want := slices.Clone(a)
		slices.SortStableFunc(want, func(x, y radixItem) int {
			if x.p0 != y.p0 {
				return cmpU64(x.p0, y.p0)
			}
			return cmpU64(x.p1, y.p1)
		})
		got, _ := radixSort(slices.Clone(a), make([]radixItem, n))
		if !slices.Equal(got, want) {
			t.Fatalf("round %d (n %d, masks %x %x): radixSort differs from a stable sort", round, n, m0, m1)
		}
	}
}
