package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/streamsql/streamsql/checkpoint"
)

// kvAPI is what the metamorphic test drives: the reference (map-based)
// KV and the new one, in memory and tiered.
type kvAPI interface {
	Get(kg int, k []byte) ([]byte, bool)
	Put(kg int, k, v []byte)
	PutNew(kg int, k, v []byte)
	Delete(kg int, k []byte)
	Append(kg int, k, elem []byte)
	List(kg int, k []byte, fn func(elem []byte) error) error
	Scan(kg int, prefix []byte, fn func(k, v []byte) error) error
	Len() int
	SetNow(ms int64)
	Sweep(n int) error
	Snapshot(id int64, w checkpoint.StateWriter) error
	Complete(id int64)
	Abort(id int64)
	Restore(r checkpoint.StateReader, start, end int) error
}

// opLog is a StateWriter recording every write as bytes, optionally
// failing after a number of writes.
type opLog struct {
	ops    []string
	failAt int // fail the write with this index (-1: never)
}

var errInjected = errors.New("injected write failure")

func (l *opLog) write(op string) error {
	if l.failAt >= 0 && len(l.ops) == l.failAt {
		return errInjected
	}
	l.ops = append(l.ops, op)
	return nil
}
func (l *opLog) Put(k, v []byte) error { return l.write(fmt.Sprintf("P %x=%x", k, v)) }
func (l *opLog) Delete(k []byte) error { return l.write(fmt.Sprintf("D %x", k)) }

// applyLog applies a recorded snapshot to a committed store.
func applyLog(s store, ops []string) {
	for _, op := range ops {
		var k, v []byte
		if op[0] == 'P' {
			kv := strings.SplitN(op[2:], "=", 2)
			fmt.Sscanf(kv[0], "%x", &k)
			fmt.Sscanf(kv[1], "%x", &v)
			s[string(k)] = string(v)
		} else {
			fmt.Sscanf(op[2:], "%x", &k)
			delete(s, string(k))
		}
	}
}

type metaRun struct {
	t    *testing.T
	rng  *rand.Rand
	opts Options
	ref  *refKV
	mem  *KV
	tier *KV
	// com is tiered too and reads its cold keys from the committed state
	// as well (Committed): cdb, the checkpoint store's working DB
	com    *KV
	cdb    *testCommitted
	maxP   int
	spills []string
	// evictions etc. summed over every tier instance of the run (st: the
	// spill-only tier, cst: the one with a committed state)
	st, cst TierStats
	// snapshots that scanned the hot index (sortChanges), every instance
	scanSorts int
}

func (r *metaRun) all() []kvAPI { return []kvAPI{r.ref, r.mem, r.tier, r.com} }

// testCommitted is a checkpoint store's working DB (Committed): the
// snapshots the test commits, in checkpoint order, applied to a Pebble DB
// in memory.
type testCommitted struct {
	db   *pebble.DB
	last int64 // the last id committed
}

func newTestCommitted(t *testing.T, s store) *testCommitted {
	t.Helper()
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), DisableWAL: true, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	for k, v := range s {
		b.Set([]byte(k), []byte(v), nil)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	return &testCommitted{db: db}
}

func (c *testCommitted) NewCommittedIter() (*pebble.Iterator, error) { return c.db.NewIter(nil) }
func (c *testCommitted) CommittedID() int64                          { return c.last }
func (c *testCommitted) CommittedGet(k []byte) ([]byte, io.Closer, error) {
	return c.db.Get(k)
}

// commit applies a snapshot's writes, as Store.Commit does.
func (c *testCommitted) commit(t *testing.T, id int64, ops []string) {
	t.Helper()
	defer func() { c.last = id }()
	s := store{}
	applyLog(s, ops) // (a snapshot writes each key once)
	b := c.db.NewBatch()
	for _, op := range ops {
		var k []byte
		if op[0] == 'P' {
			fmt.Sscanf(strings.SplitN(op[2:], "=", 2)[0], "%x", &k)
			b.Set(k, []byte(s[string(k)]), nil)
		} else {
			fmt.Sscanf(op[2:], "%x", &k)
			b.Delete(k, nil)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
}

func (r *metaRun) open() {
	r.t.Helper()
	var err error
	if r.ref, err = newRefKV(r.opts); err != nil {
		r.t.Fatal(err)
	}
	if r.mem, err = NewKV(r.opts); err != nil {
		r.t.Fatal(err)
	}
	to := r.opts
	to.Backend = "rocksdb"
	to.TierHotBytes = 4 << 10 // a few dozen entries: eviction all the time
	to.SpillDir = r.t.TempDir()
	r.spills = append(r.spills, to.SpillDir)
	if r.tier, err = NewKV(to); err != nil {
		r.t.Fatal(err)
	}
	to.SpillDir = r.t.TempDir()
	r.spills = append(r.spills, to.SpillDir)
	to.Committed = r.cdb
	if r.com, err = NewKV(to); err != nil {
		r.t.Fatal(err)
	}
}

func (r *metaRun) closeTier() {
	r.scanSorts += r.mem.scanSorts + r.tier.scanSorts + r.com.scanSorts
	for _, p := range []struct {
		kv *KV
		st *TierStats
	}{{r.tier, &r.st}, {r.com, &r.cst}} {
		st := p.kv.Stats()
		p.st.Evictions += st.Evictions
		p.st.WriteBacks += st.WriteBacks
		p.st.ColdReads += st.ColdReads
		p.st.CleanDrops += st.CleanDrops
		p.st.ComReads += st.ComReads
		if err := p.kv.Close(); err != nil {
			r.t.Fatal(err)
		}
	}
}

// same requires every KV to give the same answer.
func (r *metaRun) same(step int, what string, f func(kv kvAPI) string) {
	r.t.Helper()
	kvs := r.all()
	want := f(kvs[0])
	for i, kv := range kvs[1:] {
		if got := f(kv); got != want {
			r.t.Fatalf("step %d %s: kv %d gives\n%s\nreference gives\n%s", step, what, i+1, got, want)
		}
	}
}

func scanString(kv kvAPI, prefix []byte) string {
	var b strings.Builder
	err := kv.Scan(kgOf(prefix), prefix, func(k, v []byte) error {
		fmt.Fprintf(&b, "%x=%x;", k, v)
		return nil
	})
	if err != nil {
		fmt.Fprintf(&b, "error %v", err)
	}
	return b.String()
}

// TestKVMetamorphic replays random sequences of Put, Delete, Append, Get,
// List, Scan, Snapshot (some failing), Complete, Abort and Restore (by
// key-group ranges) against the reference KV, the new in-memory KV and
// the tiered KV with a tiny budget, and requires identical results and
// identical snapshot bytes; the committed state (the snapshots replayed)
// must equal the restored state. It asserts that the tier evicted dirty
// entries, wrote them back and read them again.
func TestKVMetamorphic(t *testing.T) {
	for seed := int64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { metaSeed(t, seed) })
	}
}

// TestKVMetamorphicScanSortedChanges is TestKVMetamorphic with every
// snapshot allowed to put its change set in order by scanning the hot
// index (sortChanges) rather than sorting it; it requires that some did.
func TestKVMetamorphicScanSortedChanges(t *testing.T) {
	defer func(n int) { chgScanMin = n }(chgScanMin)
	chgScanMin = 0
	for seed := int64(201); seed <= 208; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			if n := metaSeed(t, seed); n == 0 {
				t.Fatal("no snapshot scanned the hot index")
			}
		})
	}
}

// TestKVMetamorphicCompactingChanges is TestKVMetamorphic with change sets
// compacted (sorted, deduplicated, a live entry kept) as they grow past 4
// keys, not only at the barrier.
func TestKVMetamorphicCompactingChanges(t *testing.T) {
	defer func(n int) { chgCompactMin = n }(chgCompactMin)
	chgCompactMin = 4
	for seed := int64(101); seed <= 108; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { metaSeed(t, seed) })
	}
}

// metaKG maps a framed key (or a scan prefix) of the metamorphic test to
// its key group: the hash of its key frame (-1: the prefix has none).
var metaKG func(k []byte) int

func kgOf(k []byte) int {
	if metaKG == nil {
		return -1
	}
	return metaKG(k)
}

func metaSeed(t *testing.T, seed int64) (scanSorts int) {
	rng := rand.New(rand.NewSource(seed))
	maxP := 1 + rng.Intn(8)
	o := Options{OpID: "join", MaxParallelism: maxP, Checkpointing: true}
	if seed%3 == 0 {
		o.TTL = 50 * time.Millisecond
	}
	metaKG = func(k []byte) int {
		n, ok := framedPrefix(k)
		if !ok {
			return -1
		}
		// the key frame follows the namespace frame
		l, w := binary.Uvarint(k)
		kf := k[w+int(l) : n]
		kl, kw := binary.Uvarint(kf)
		return int(xxhash.Sum64(kf[kw:kw+int(kl)]) % uint64(maxP))
	}
	defer func() { metaKG = nil }()
	r := &metaRun{t: t, rng: rng, opts: o, maxP: maxP}
	r.cdb = newTestCommitted(t, store{})
	r.open()
	nss := [][]byte{[]byte("l"), []byte("r"), []byte("win")}
	nkeys := 20 + rng.Intn(200)
	key := func() ([]byte, int) {
		ns := nss[rng.Intn(len(nss))]
		k := []byte(fmt.Sprintf("u%03d", rng.Intn(nkeys)))
		var fk []byte
		if rng.Intn(2) == 0 {
			fk = Key(nil, ns, k, []byte(fmt.Sprintf("m%d", rng.Intn(5))))
		} else {
			fk = Key(nil, ns, k)
		}
		return fk, int(xxhash.Sum64(k) % uint64(maxP))
	}
	val := func() []byte {
		v := make([]byte, rng.Intn(60))
		rng.Read(v)
		return v
	}
	var now int64 = 1000
	nextID := int64(1)
	snaps := map[int64][]string{} // snapshots whose outcome is unknown
	committed := store{}
	// uncommitted: snapshots (ids, in order) not yet applied to the
	// working DB; commitUpTo applies those up to id, in order
	var uncommitted []int64
	commitUpTo := func(id int64) {
		for len(uncommitted) > 0 && uncommitted[0] <= id {
			if ops, ok := snaps[uncommitted[0]]; ok {
				r.cdb.commit(t, uncommitted[0], ops)
			}
			uncommitted = uncommitted[1:]
		}
	}
	var completed []int64
	swept := 0 // keys Sweep removed
	fresh := 0 // keys PutNew used
	var freshKeys [][]byte
	for step := 0; step < 3000; step++ {
		switch p := rng.Intn(100); {
		case p < 30:
			k, kg := key()
			v := val()
			if rng.Intn(3) == 0 {
				// a blind insert of a key never used before (the join's
				// sequence-numbered rows)
				fresh++
				ns := nss[rng.Intn(len(nss))]
				uk := []byte(fmt.Sprintf("u%03d", rng.Intn(nkeys)))
				k = Key(nil, ns, uk, []byte(fmt.Sprintf("n%d", fresh)))
				kg = int(xxhash.Sum64(uk) % uint64(maxP))
				for _, kv := range r.all() {
					kv.PutNew(kg, k, v)
				}
				freshKeys = append(freshKeys, k)
				break
			}
			for _, kv := range r.all() {
				kv.Put(kg, k, v)
			}
		case p < 40:
			k, kg := key()
			v := val()
			for _, kv := range r.all() {
				kv.Append(kg, k, v)
			}
		case p < 50:
			k, kg := key()
			if len(freshKeys) > 0 && rng.Intn(3) == 0 {
				// a PutNew row retracted (before or after a snapshot
				// wrote it: with a committed state, a tombstone or none)
				k = freshKeys[rng.Intn(len(freshKeys))]
				kg = metaKG(k)
			}
			for _, kv := range r.all() {
				kv.Delete(kg, k)
			}
		case p < 62:
			k, kg := key()
			r.same(step, "get", func(kv kvAPI) string {
				v, ok := kv.Get(kg, k)
				return fmt.Sprintf("%x %v", v, ok)
			})
		case p < 66:
			k, kg := key()
			r.same(step, "list", func(kv kvAPI) string {
				var b strings.Builder
				err := kv.List(kg, k, func(e []byte) error { fmt.Fprintf(&b, "%x,", e); return nil })
				return fmt.Sprint(b.String(), err)
			})
		case p < 74:
			var prefix []byte
			switch rng.Intn(3) {
			case 0:
				prefix = Key(nil, nss[rng.Intn(len(nss))], []byte(fmt.Sprintf("u%03d", rng.Intn(nkeys))))
			case 1:
				prefix = []byte{1, nss[rng.Intn(len(nss))][0]}
			}
			r.same(step, "scan", func(kv kvAPI) string { return scanString(kv, prefix) })
		case p < 76:
			if o.TTL > 0 {
				now += int64(rng.Intn(30))
				for _, kv := range r.all() {
					kv.SetNow(now)
				}
			}
		case p < 84:
			id := nextID
			nextID++
			failAt := -1
			if rng.Intn(6) == 0 {
				failAt = rng.Intn(10)
			}
			var logs [4]*opLog
			r.same(step, "snapshot", func(kv kvAPI) string {
				l := &opLog{failAt: failAt}
				err := kv.Snapshot(id, l)
				for i, k := range r.all() {
					if k == kv {
						logs[i] = l
					}
				}
				return fmt.Sprint(strings.Join(l.ops, "\n"), err)
			})
			if failAt < 0 || len(logs[0].ops) < failAt {
				snaps[id] = logs[0].ops
				uncommitted = append(uncommitted, id)
				if rng.Intn(2) == 0 {
					commitUpTo(id) // the store commits before the KV goes on
				}
			}
		case p < 90:
			// outcome of the newest pending snapshot
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
				for _, kv := range r.all() {
					kv.Abort(id)
				}
				delete(snaps, id)
			} else {
				commitUpTo(id) // a checkpoint completes after its commit
				for _, kv := range r.all() {
					kv.Complete(id)
				}
				ids := []int64{}
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
				completed = append(completed, id)
			}
		case p < 92:
			// failover: every KV restarts from the committed state, in two
			// key-group ranges
			r.closeTier()
			// the store restores the latest complete checkpoint into a
			// new working DB
			if err := r.cdb.db.Close(); err != nil {
				t.Fatal(err)
			}
			r.cdb = newTestCommitted(t, committed)
			uncommitted = nil
			r.open()
			split := rng.Intn(maxP + 1)
			for _, kv := range r.all() {
				kv.SetNow(now)
				for _, rg := range [][2]int{{0, split}, {split, maxP}} {
					if err := kv.Restore(scanStore(committed), rg[0], rg[1]); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, kv := range []*KV{r.tier, r.com} {
				if st := kv.Stats(); st.Hot != 0 {
					t.Fatalf("restore held %d entries in memory; want them all in the cold tier", st.Hot)
				}
			}
			snaps = map[int64][]string{}
			// the restored state is the committed state
			got := scanString(r.tier, nil)
			n := strings.Count(got, ";")
			if o.TTL > 0 {
				n = len(committed) // Scan skips expired keys; Len counts them
			}
			if n != len(committed) || r.tier.Len() != len(committed) {
				t.Fatalf("step %d: restored %d keys (Len %d), committed %d", step, n, r.tier.Len(), len(committed))
			}
		case p < 95:
			// TTL cleanup of a few keys (no-op without a TTL); Len
			// then shows the same keys left
			n := 1 + rng.Intn(40)
			before := r.ref.Len()
			r.same(step, "sweep", func(kv kvAPI) string { return fmt.Sprint(kv.Sweep(n), kv.Len()) })
			swept += before - r.ref.Len()
		default:
			r.same(step, "len", func(kv kvAPI) string { return fmt.Sprint(kv.Len()) })
		}
	}
	r.same(-1, "final scan", func(kv kvAPI) string { return scanString(kv, nil) })
	r.closeTier()
	if err := r.cdb.db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range r.spills {
		if ents, err := os.ReadDir(d); err != nil || len(ents) != 0 {
			t.Fatalf("spill directory %s not cleaned up: %v %v", d, ents, err)
		}
	}
	if r.st.Evictions == 0 || r.st.WriteBacks == 0 || r.st.ColdReads == 0 {
		t.Fatalf("the tier never paged: %+v", r.st)
	}
	if o.TTL == 0 && (r.cst.CleanDrops == 0 || r.cst.ComReads == 0) {
		t.Fatalf("the tier with a committed state never dropped a clean entry or never read one back: %+v", r.cst)
	}
	if o.TTL > 0 && swept == 0 {
		t.Fatal("Sweep never removed an expired key")
	}
	t.Logf("seed %d: %d checkpoints completed, %d keys swept, %d snapshots scanned the hot index, tier %+v, with a committed state %+v", seed, len(completed), swept, r.scanSorts, r.st, r.cst)
	return r.scanSorts
}
