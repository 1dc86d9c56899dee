package state

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
)

// tOp is a test operator around a Table: a byte value per slot and, for
// an int-keyed table, the key of each slot. Its codec's key is the int's
// null flag and big-endian value (as the group aggregation's), or the
// table's byte key.
type tOp struct {
	t      *Table
	ints   bool
	ikeys  []int64
	nulls  []bool
	vals   [][]byte
	clears int
	// valueSize: ValueSize's bound (0: none)
	valueSize int
}

func (o *tOp) ValueSize() int { return o.valueSize }

func (o *tOp) AppendKey(dst []byte, g int32) []byte {
	if !o.ints {
		return append(dst, o.t.Key(g)...)
	}
	if o.nulls[g] {
		return append(dst, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	}
	return binary.BigEndian.AppendUint64(append(dst, 1), uint64(o.ikeys[g]))
}

func (o *tOp) AppendValue(dst []byte, g int32) []byte { return append(dst, o.vals[g]...) }

func (o *tOp) decode(g int32, key, val []byte) (int64, bool, error) {
	o.vals[g] = append(o.vals[g][:0], val...)
	if !o.ints {
		return 0, false, nil
	}
	if len(key) != 9 {
		return 0, false, fmt.Errorf("bad test key %x", key)
	}
	o.nulls[g] = key[0] == 0
	o.ikeys[g] = int64(binary.BigEndian.Uint64(key[1:]))
	return o.ikeys[g], o.nulls[g], nil
}

// intKey is the codec key of an int key (TierHooks.IntKey): AppendKey's.
func (o *tOp) intKey(dst []byte, v int64, null bool) []byte {
	if null {
		return append(dst, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	}
	return binary.BigEndian.AppendUint64(append(dst, 1), uint64(v))
}

// newTOp opens a test table; hot > 0 makes it tiered with that hot budget
// (reading o.Committed, if set, as well).
func newTOp(t *testing.T, o Options, hot int64) *tOp {
	t.Helper()
	op := &tOp{ints: o.IntKeys}
	if hot > 0 {
		o.Backend = "pebble"
		o.TierHotBytes = hot
		o.SpillDir = t.TempDir()
	}
	tbl, err := NewTable(o, op)
	if err != nil {
		t.Fatal(err)
	}
	tbl.OnGrow = func(n int) {
		op.ikeys = Grow(op.ikeys, n, 0)
		op.nulls = Grow(op.nulls, n, false)
		op.vals = Grow(op.vals, n, nil)
	}
	if hot > 0 {
		err := tbl.EnableTier(TierHooks{Decode: op.decode,
			Clear: func(g int32) { op.vals[g], op.ikeys[g], op.nulls[g] = nil, 0, false; op.clears++ },
			Bytes: func(g int32) int { return 24 + cap(op.vals[g]) }, IntKey: op.intKey})
		if err != nil {
			t.Fatal(err)
		}
		if !tbl.Tiered() {
			t.Fatal("EnableTier with the pebble backend left the table in memory")
		}
	}
	op.t = tbl
	return op
}

// tbKey is a key of the test: an int (null: NULL) or bytes.
type tbKey struct {
	i    int64
	null bool
	b    []byte
}

// find looks k (of key group kg) up as an operator does: an expired slot
// is removed and reported absent.
func (o *tOp) find(k tbKey, kg int) (int32, bool) {
	var g int32
	var ok bool
	switch {
	case !o.ints:
		g, ok = o.t.LookupBytesIn(kg, k.b)
	case k.null:
		g, ok = o.t.LookupNullIn(kg)
	default:
		g, ok = o.t.LookupIntIn(kg, k.i)
	}
	if ok && o.t.Expired(g) {
		o.remove(g)
		return -1, false
	}
	return g, ok
}

func (o *tOp) remove(g int32) {
	o.t.Remove(g, o.ikeys[g], o.ints && o.nulls[g])
	o.vals[g] = nil
}

func (o *tOp) put(k tbKey, kg int, v []byte, appendTo bool) {
	g, ok := o.find(k, kg)
	if !ok {
		switch {
		case !o.ints:
			g = o.t.InsertBytes(k.b, kg)
		case k.null:
			g = o.t.InsertNull(kg)
		default:
			g = o.t.InsertInt(k.i, kg)
		}
		o.ikeys[g], o.nulls[g] = k.i, k.null
		o.vals[g] = o.vals[g][:0]
	} else if !appendTo {
		o.vals[g] = o.vals[g][:0]
	}
	o.vals[g] = append(o.vals[g], v...)
	o.t.Touch(g)
}

func (o *tOp) del(k tbKey, kg int) {
	if g, ok := o.find(k, kg); ok {
		o.remove(g)
	}
}

func (o *tOp) get(k tbKey, kg int) string {
	g, ok := o.find(k, kg)
	if !ok {
		return "absent"
	}
	return fmt.Sprintf("%x", o.vals[g])
}

// tSub is one subtask: key groups [lo, hi), the table in memory, the
// tiered one and a tiered one reading the committed state (com).
type tSub struct {
	lo, hi         int
	mem, tier, com *tOp
}

func (s *tSub) tiered() []*tOp { return []*tOp{s.tier, s.com} }

// TestTableTierMetamorphic replays random sequences of inserts, updates,
// removes, lookups, end-of-batch evictions, snapshots (some failing),
// commits of snapshots to the checkpoint store's working DB, completes,
// aborts (also notified late, and after the commit), TTL expiry (manual
// processing time, full sweeps) and restores by key-group range (one
// subtask into two, two into one) on in-memory Tables and tiered Tables
// with a hot budget of a few slots, int-keyed (with NULL) and
// bytes-keyed; the second tiered Table reads the working DB as its
// committed state (One LSM; without a TTL). It requires identical lookups
// and byte-identical snapshots, that restoring holds nothing in memory,
// that the committed state (the completed snapshots replayed) is what a
// restore brings back, that the tier evicted, wrote back and read cold
// keys, and that the committed-state tier dropped clean slots and read
// them back.
func TestTableTierMetamorphic(t *testing.T) {
	var total, ctotal TierStats
	for seed := int64(1); seed <= 16; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			st, cst := tableMetaSeed(t, seed)
			total.Evictions += st.Evictions
			total.WriteBacks += st.WriteBacks
			total.ColdReads += st.ColdReads
			ctotal.Evictions += cst.Evictions
			ctotal.WriteBacks += cst.WriteBacks
			ctotal.CleanDrops += cst.CleanDrops
			ctotal.ComReads += cst.ComReads
		})
	}
	t.Logf("all seeds: spill-only %+v; committed %+v", total, ctotal)
	if ctotal.CleanDrops == 0 || ctotal.ComReads == 0 {
		t.Fatalf("the committed-state tier never dropped a clean slot or read one back: %+v", ctotal)
	}
}

func tableMetaSeed(t *testing.T, seed int64) (TierStats, TierStats) {
	rng := rand.New(rand.NewSource(seed))
	maxP := 2 + rng.Intn(7)
	o := Options{OpID: "agg", MaxParallelism: maxP, Checkpointing: true, IntKeys: seed%2 == 0}
	if seed%4 >= 2 {
		o.TTL = 60 * time.Millisecond
	}
	const hot = 2 << 10
	nkeys := 30 + rng.Intn(300)
	key := func() (tbKey, int) {
		n := rng.Intn(nkeys)
		if o.IntKeys {
			if n == 0 {
				return tbKey{null: true}, 0
			}
			v := int64(n - 40) // negative keys too
			return tbKey{i: v}, int(uint64(v*2654435761) % uint64(maxP))
		}
		b := []byte(fmt.Sprintf("k%04d", n))
		return tbKey{b: b}, int(xxhash.Sum64(b) % uint64(maxP))
	}
	val := func() []byte {
		v := make([]byte, rng.Intn(40))
		rng.Read(v)
		return v
	}
	var st, cst TierStats
	var subs []*tSub
	var spills []string
	// cdb: the checkpoint store's working DB (snapshots applied as the
	// store commits them, kv_meta_test.go)
	cdb := newTestCommitted(t, store{})
	open := func(ranges [][2]int) {
		subs = subs[:0]
		for _, r := range ranges {
			co := o
			co.Committed = cdb
			s := &tSub{lo: r[0], hi: r[1], mem: newTOp(t, o, 0), tier: newTOp(t, o, hot), com: newTOp(t, co, hot)}
			if s.com.t.tier.com == nil && o.TTL == 0 {
				t.Fatal("a tiered table with a committed state and no TTL does not read it")
			}
			spills = append(spills, s.tier.t.tier.cold.dir, s.com.t.tier.cold.dir)
			subs = append(subs, s)
		}
	}
	closeAll := func() {
		for _, s := range subs {
			ts, cs := s.tier.t.TierStats(), s.com.t.TierStats()
			st.Evictions += ts.Evictions
			st.WriteBacks += ts.WriteBacks
			st.ColdReads += ts.ColdReads
			cst.Evictions += cs.Evictions
			cst.WriteBacks += cs.WriteBacks
			cst.ColdReads += cs.ColdReads
			cst.CleanDrops += cs.CleanDrops
			cst.ComReads += cs.ComReads
			for _, tb := range s.tiered() {
				if err := tb.t.Close(); err != nil {
					t.Fatal(err)
				}
				if err := tb.t.Close(); err != nil { // idempotent
					t.Fatal(err)
				}
			}
		}
	}
	sub := func(kg int) *tSub {
		for _, s := range subs {
			if kg >= s.lo && kg < s.hi {
				return s
			}
		}
		t.Fatalf("no subtask owns key group %d", kg)
		return nil
	}
	eachTable := func(fn func(o *tOp)) {
		for _, s := range subs {
			fn(s.mem)
			fn(s.tier)
			fn(s.com)
		}
	}
	// lookup compares a lookup of k in every table of its subtask
	lookup := func(step int, k tbKey, kg int) {
		s := sub(kg)
		a := s.mem.get(k, kg)
		for _, tb := range s.tiered() {
			if b := tb.get(k, kg); a != b {
				t.Fatalf("step %d: lookup of %v: in memory %s, tiered (committed %v) %s", step, k, a, tb == s.com, b)
			}
		}
	}
	open([][2]int{{0, maxP}})
	var now int64 = 1000
	nextID := int64(1)
	snaps := map[int64][]string{}
	committed := store{}
	completed := 0
	// uncommitted: snapshots (ids, in order) not yet applied to cdb;
	// commitUpTo applies those up to id, in order
	var uncommitted []int64
	commitUpTo := func(id int64) {
		for len(uncommitted) > 0 && uncommitted[0] <= id {
			if ops, ok := snaps[uncommitted[0]]; ok {
				cdb.commit(t, uncommitted[0], ops)
			}
			uncommitted = uncommitted[1:]
		}
	}
	for step := 0; step < 3000; step++ {
		p := rng.Intn(100)
		if os.Getenv("TDEBUG") != "" {
			t.Logf("step %d op %d subs %d", step, p, len(subs))
		}
		switch {
		case p < 30:
			k, kg := key()
			v := val()
			app := rng.Intn(3) == 0
			s := sub(kg)
			s.mem.put(k, kg, v, app)
			s.tier.put(k, kg, v, app)
			s.com.put(k, kg, v, app)
			if os.Getenv("TDEBUG") != "" {
				t.Logf("put %s kg %d", k.b, kg)
			}
		case p < 40:
			k, kg := key()
			s := sub(kg)
			s.mem.del(k, kg)
			s.tier.del(k, kg)
			s.com.del(k, kg)
			if os.Getenv("TDEBUG") != "" {
				t.Logf("del %s kg %d", k.b, kg)
			}
		case p < 55:
			k, kg := key()
			lookup(step, k, kg)
		case p < 75:
			// end of a batch
			for _, s := range subs {
				if err := s.tier.t.MaybeEvict(); err != nil {
					t.Fatal(err)
				}
				if err := s.com.t.MaybeEvict(); err != nil {
					t.Fatal(err)
				}
				if err := s.mem.t.MaybeEvict(); err != nil {
					t.Fatal(err)
				}
			}
		case p < 78:
			if o.TTL > 0 {
				now += int64(rng.Intn(40))
				eachTable(func(o *tOp) { o.t.SetNow(now) })
			}
		case p < 79:
			if o.TTL > 0 {
				// a full sweep of both (a partial one visits different keys)
				eachTable(func(o *tOp) { o.t.Sweep(o.t.Slots()+4*nkeys, o.remove) })
			}
		case p < 87:
			id := nextID
			nextID++
			failAt := -1
			if rng.Intn(6) == 0 {
				failAt = rng.Intn(8)
			}
			var all []string
			failed := false
			for _, s := range subs {
				lm := &opLog{failAt: failAt}
				em := s.mem.t.Snapshot(id, lm)
				gm := strings.Join(lm.ops, "\n")
				for _, tb := range s.tiered() {
					lt := &opLog{failAt: failAt}
					et := tb.t.Snapshot(id, lt)
					gt := strings.Join(lt.ops, "\n")
					if gm != gt || fmt.Sprint(em) != fmt.Sprint(et) {
						t.Fatalf("step %d: snapshot %d of key groups [%d,%d):\nin memory (%v):\n%s\ntiered (committed %v, %v):\n%s", step, id, s.lo, s.hi, em, gm, tb == s.com, et, gt)
					}
				}
				if !sort.StringsAreSorted(keysOfLog(lm.ops)) {
					t.Fatalf("snapshot %d not sorted", id)
				}
				failed = failed || em != nil
				all = append(all, lm.ops...)
			}
			if failed {
				// the checkpoint failed: every subtask hears of it
				eachTable(func(o *tOp) { o.t.Abort(id) })
				continue
			}
			snaps[id] = all
			uncommitted = append(uncommitted, id)
			if rng.Intn(2) == 0 {
				commitUpTo(id) // the store commits before the tables go on
			}
		case p < 93:
			if len(snaps) == 0 {
				continue
			}
			var id int64
			for i := range snaps {
				id = max(id, i)
			}
			if rng.Intn(3) == 0 {
				// the checkpoint failed before its commit, or after it
				// (StepCommitted): the working DB has its writes or not
				if rng.Intn(2) == 0 {
					commitUpTo(id)
				} else {
					commitUpTo(id - 1)
					uncommitted = slices.DeleteFunc(uncommitted, func(i int64) bool { return i == id })
				}
				eachTable(func(o *tOp) { o.t.Abort(id) })
				delete(snaps, id)
				continue
			}
			commitUpTo(id) // a checkpoint completes after its commit
			eachTable(func(o *tOp) { o.t.Complete(id) })
			var ids []int64
			for i := range snaps {
				if i <= id {
					ids = append(ids, i)
				}
			}
			sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
			for _, i := range ids {
				applyLog(committed, snaps[i])
				delete(snaps, i)
			}
			completed++
		case p < 95:
			// failover to one or two subtasks (two ranges into one table,
			// or one range each)
			closeAll()
			// the store restores the latest complete checkpoint into a new
			// working DB
			if err := cdb.db.Close(); err != nil {
				t.Fatal(err)
			}
			cdb = newTestCommitted(t, committed)
			uncommitted = nil
			split := 1 + rng.Intn(maxP-1)
			ranges := [][2]int{{0, maxP}}
			if rng.Intn(2) == 0 {
				ranges = [][2]int{{0, split}, {split, maxP}}
			}
			open(ranges)
			for _, s := range subs {
				for _, tb := range []*tOp{s.mem, s.tier, s.com} {
					tb.t.SetNow(now)
					parts := [][2]int{{s.lo, s.hi}}
					if len(ranges) == 1 {
						parts = [][2]int{{0, split}, {split, maxP}}
					}
					for _, r := range parts {
						if err := tb.t.Restore(scanStore(committed), r[0], r[1], tb.decode); err != nil {
							t.Fatal(err)
						}
					}
				}
				for _, tb := range s.tiered() {
					if h := tb.t.TierStats().Hot; h != 0 {
						t.Fatalf("step %d: the tiered restore holds %d slots in memory, want 0", step, h)
					}
				}
			}
			n := 0
			for _, s := range subs {
				n += s.mem.t.Len()
			}
			if n != len(committed) {
				t.Fatalf("step %d: restored %d keys, committed %d", step, n, len(committed))
			}
			snaps = map[int64][]string{}
		default:
			// a run of lookups of every key: the cold ones are read back
			if rng.Intn(4) == 0 {
				for i := 0; i < nkeys; i++ {
					k, kg := key()
					lookup(step, k, kg)
				}
			}
		}
	}
	closeAll()
	for _, d := range spills {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Fatalf("spill directory %s not deleted at Close: %v", d, err)
		}
	}
	if err := cdb.db.Close(); err != nil {
		t.Fatal(err)
	}
	if st.Evictions == 0 || st.WriteBacks == 0 || st.ColdReads == 0 {
		t.Fatalf("the tier never paged: %+v", st)
	}
	if cst.Evictions == 0 {
		t.Fatalf("the committed-state tier never evicted: %+v", cst)
	}
	t.Logf("seed %d (int keys %v, TTL %v, %d key groups): %d checkpoints completed, tier %+v, committed tier %+v", seed, o.IntKeys, o.TTL, maxP, completed, st, cst)
	return st, cst
}

func keysOfLog(ops []string) []string {
	var ks []string
	for _, op := range ops {
		k := op[2:]
		if i := strings.IndexByte(k, '='); i >= 0 {
			k = k[:i]
		}
		ks = append(ks, k)
	}
	return ks
}
