package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/sstable"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/tidwall/btree"

	"github.com/streamsql/streamsql/checkpoint"
)

// Backend is the kind of keyed-state backend (Flink's state.backend.type).
type Backend int

const (
	// BackendHashMap keeps all state in memory ('hashmap', the default).
	BackendHashMap Backend = iota
	// BackendPebble keeps hot state in memory within a budget and cold
	// state in a local Pebble DB ('rocksdb' or 'pebble').
	BackendPebble
)

// OptBackendType and OptMemoryBudget are the option keys of the backend.
const (
	OptBackendType  = "state.backend.type"
	OptMemoryBudget = "state.backend.rocksdb.memory.fixed-per-slot"
)

// DefaultMemoryBudget is the budget of a Pebble-backed KV when none is set.
const DefaultMemoryBudget = 512 << 20

// ParseBackend parses a value of state.backend.type ("" is the default,
// hashmap).
func ParseBackend(s string) (Backend, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "hashmap":
		return BackendHashMap, nil
	case "rocksdb", "pebble":
		return BackendPebble, nil
	}
	return 0, fmt.Errorf("%s: unknown state backend %q (want 'hashmap', 'rocksdb' or 'pebble')", OptBackendType, s)
}

// TierStats are counters of a KV's cold tier (all zero in memory).
type TierStats struct {
	Hot        int   // entries in memory
	HotBytes   int64 // their accounted size
	Budget     int64 // bytes the hot entries may take
	Evictions  int64 // entries dropped from memory
	WriteBacks int64 // evicted entries written to the cold tier
	ColdReads  int64 // entries loaded from the cold tier
	// CleanDrops counts evicted entries that needed no write: the
	// committed state holds them (see Committed)
	CleanDrops int64
	ComReads   int64 // of ColdReads, those from the committed state
	// PebbleMem is the spill DB's block cache and memtables (bytes).
	PebbleMem int64
	// Mapped counts the rows of a join side moved out of the heap to
	// mapped files while no completed checkpoint held them (Rows.mapOut);
	// MappedBytes is the size of those files still mapped.
	Mapped, MappedBytes int64
}

// Stats returns the cold tier's counters.
func (s *KV) Stats() TierStats {
	if s.cold == nil {
		return TierStats{Hot: s.hot.Len()}
	}
	st := s.cold.st
	st.Hot, st.HotBytes, st.Budget = s.hot.Len(), s.cold.hotBytes, s.cold.budget
	m := s.cold.db.Metrics()
	st.PebbleMem = m.BlockCache.Size + int64(m.MemTable.Size)
	return st
}

// entOverhead is the accounted size of a hot entry beyond its key and
// value: the struct, its B-tree and clock slots, allocation rounding.
const entOverhead = 152

// chgOverhead is the accounted size of a change-set key beyond its bytes.
const chgOverhead = 32

// coldTier is the Pebble half of a tiered KV. Pebble holds framed key ->
// key group (2 bytes), last update (8 bytes), value. A hot entry is
// authoritative; a key absent from memory is read from Pebble. Deletes go
// to Pebble at once; updates when the entry is evicted (write-back).
type coldTier struct {
	db     *pebble.DB
	opts   *pebble.Options
	dir    string
	nfiles int   // table files ingest wrote
	budget int64 // hot entries and change sets
	// hotBytes: accounted size of the hot entries; chgBytes: of the change
	// sets (they are kept in memory: keys only, for one checkpoint interval)
	hotBytes int64
	clock    []*kvEnt // CLOCK eviction ring of the hot entries
	hand     int
	batch    *pebble.Batch // restore writes
	used     bool          // anything was written to Pebble
	// gen counts writes to Pebble: a kept iterator (Iter.keep) older than
	// the last write no longer sees the DB and is replaced
	gen    uint64
	seekIt *pebble.Iterator
	evb    *pebble.Batch // write-backs, reused
	// stuck: with a committed state, the last eviction pass found no clean
	// entry (at cleanBelow stuckClean, hotBytes stuckBytes): eviction
	// waits until either changes
	stuck      bool
	stuckClean uint64
	stuckBytes int64
	enc, val   []byte
	st         TierStats
}

// spillParent is the directory spill files go under: Options.SpillDir, or
// the system's temporary directory.
func spillParent(o Options) string {
	if o.SpillDir != "" {
		return o.SpillDir
	}
	return os.TempDir()
}

// openCold opens a spill DB; framed: its keys are the KV's framed keys
// (bloom filters on their namespace and key, framedSplit), otherwise
// opaque (a Table's codec keys: whole-key bloom filters); committed: the
// tier reads a committed state too (its spill DB is then small).
func openCold(o Options, framed, committed bool) (*coldTier, error) {
	total := o.MemoryBudget
	if total <= 0 {
		total = DefaultMemoryBudget
	}
	memtable := clamp(total/16, 4<<20, 64<<20)
	cacheSize := SpillCacheSize(total)
	if committed {
		// the spill DB only takes entries evicted while dirty and
		// tombstones (Committed): its reads are rare, so the hot entries
		// get most of the memory
		cacheSize = clamp(total/16, 512<<10, 4<<30)
	}
	// Go's collector lets the heap grow to about twice the live data, and
	// the change sets of a checkpoint interval live beside the entries: the
	// hot entries get a third of what Pebble leaves.
	hot := (total - cacheSize - 2*memtable) / 3
	if hot < 64<<10 {
		hot = 64 << 10
	}
	if o.TierHotBytes > 0 {
		hot = o.TierHotBytes
	}
	parent := spillParent(o)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("state: spill directory: %w", err)
	}
	dir, err := os.MkdirTemp(parent, "state-"+sanitize(o.OpID)+"-")
	if err != nil {
		return nil, fmt.Errorf("state: spill directory: %w", err)
	}
	cache := pebble.NewCache(cacheSize)
	defer cache.Unref()
	po := &pebble.Options{
		Cache:        cache,
		MemTableSize: uint64(memtable),
		DisableWAL:   true, // scratch data: the checkpoint is the durable copy
		// Values are checkpoint-bound state: spend no CPU compressing
		// what is read back soon.
		Logger: quietLogger{},
		Levels: make([]pebble.LevelOptions, 7),
	}
	if framed {
		po.Comparer = framedComparer
	}
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		po.Levels[i].Compression = pebble.NoCompression
	}
	db, err := pebble.Open(dir, po)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("state: opening spill DB in %s: %w", dir, err)
	}
	return &coldTier{db: db, opts: po, dir: dir, budget: hot}, nil
}

// ingest writes the entries fill sets (in strictly increasing key order)
// as one table file and ingests it into the DB: no memtable insert, no
// flush. The file is written in the DB's directory, unsynced (the DB is
// scratch), and Pebble moves it in.
func (c *coldTier) ingest(fill func(set func(k, v []byte) error) error) error {
	c.nfiles++
	path := filepath.Join(c.dir, fmt.Sprintf("ingest-%d.sst", c.nfiles))
	f, err := vfs.Default.Create(path)
	if err != nil {
		return err
	}
	w := sstable.NewWriter(checkpoint.TableWritable(checkpoint.NoSync{File: f}), c.opts.MakeWriterOptions(0, c.db.FormatMajorVersion().MaxTableFormat()))
	if err := fill(w.Set); err != nil {
		_ = w.Close()
		_ = os.Remove(path)
		return err
	}
	if err := w.Close(); err != nil {
		_ = os.Remove(path)
		return err
	}
	if err := c.db.Ingest([]string{path}); err != nil {
		_ = os.Remove(path)
		return err
	}
	c.used = true
	c.gen++
	return nil
}

// framedSplit is the prefix of a framed key (Key) that bloom filters are
// built on: its namespace and key frames, without the map key. Prefix
// scans of a key's map state (a join key's rows) then skip every table
// without the key, and so does a point read of a map entry. Length-prefixed
// frames are prefix-free, so prefixes order as their keys do (Pebble's
// Split contract). Keys that do not parse are their own prefix.
func framedSplit(k []byte) int {
	n, ok := framedPrefix(k)
	if !ok {
		return len(k)
	}
	return n
}

// framedPrefix is the length of k's namespace and key frames (false: k
// does not start with two whole frames).
func framedPrefix(k []byte) (int, bool) {
	off := 0
	for f := 0; f < 2; f++ {
		n, w := binary.Uvarint(k[off:])
		if w <= 0 || n > uint64(len(k)-off-w) {
			return 0, false
		}
		off += w + int(n)
	}
	return off, true
}

// framedComparer is bytewise order with framedSplit. The spill DB is
// scratch (created empty at every open), so the name only has to differ
// from the default.
var framedComparer = func() *pebble.Comparer {
	c := *pebble.DefaultComparer
	c.Split = framedSplit
	c.ImmediateSuccessor = func(dst, a []byte) []byte {
		// the smallest key after every key with prefix a (only Pebble's
		// NextPrefix and range keys use it; the KV uses neither)
		if end := prefixEnd(append(dst, a...)); end != nil {
			return end
		}
		return append(append(dst[:0], a...), 0)
	}
	c.Name = "streamsql.framed.v1"
	return &c
}()

func clamp(v, lo, hi int64) int64 { return max(lo, min(hi, v)) }

// SpillCacheSize is the block cache of a spill DB for a memory budget
// (0: DefaultMemoryBudget): a third of it. A job with the Pebble backend
// gives its checkpoint store's working DB the same (committed.go: a KV
// reads its clean cold keys there).
func SpillCacheSize(budget int64) int64 {
	if budget <= 0 {
		budget = DefaultMemoryBudget
	}
	return clamp(budget/3, 512<<10, 4<<30)
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == os.PathSeparator || r < ' ' {
			return '_'
		}
		return r
	}, s)
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("state spill DB: "+format, args...))
}

func (c *coldTier) close() error {
	var err error
	c.endSeeks()
	if c.evb != nil {
		c.evb.Close()
		c.evb = nil
	}
	if c.batch != nil {
		c.batch.Close()
		c.batch = nil
	}
	if c.db != nil {
		err = c.db.Close()
		c.db = nil
	}
	if rerr := os.RemoveAll(c.dir); err == nil {
		err = rerr
	}
	return err
}

func entCost(e *kvEnt) int64 { return int64(entOverhead + len(e.key) + cap(e.val)) }

// add puts a new hot entry on the clock.
func (c *coldTier) add(e *kvEnt) {
	e.pos = int32(len(c.clock))
	c.clock = append(c.clock, e)
	c.hotBytes += entCost(e)
}

// unclock takes hot entry e off the clock.
func (c *coldTier) unclock(e *kvEnt) {
	i := int(e.pos)
	last := len(c.clock) - 1
	c.clock[i] = c.clock[last]
	c.clock[i].pos = int32(i)
	c.clock[last] = nil
	c.clock = c.clock[:last]
	e.pos = -1
	c.hotBytes -= entCost(e)
}

// drop forgets a deleted entry (already out of the B-tree). With a
// committed state that may hold the key, the spill DB gets a tombstone
// that masks it (see Committed).
func (c *coldTier) drop(s *KV, e *kvEnt) {
	if e.pos >= 0 {
		c.unclock(e)
	}
	if s.com != nil && !e.fresh {
		c.gen++
		s.filter.add(e.key)
		if err := c.db.Set(e.key, nil, pebble.NoSync); err != nil {
			panic(fmt.Sprintf("state spill DB: tombstone: %v", err))
		}
		c.used = true
		return
	}
	if e.inCold {
		c.gen++
		if err := c.db.Delete(e.key, pebble.NoSync); err != nil {
			panic(fmt.Sprintf("state spill DB: delete: %v", err))
		}
	}
}

// resized accounts for a value that grew or shrank, and evicts if over.
func (c *coldTier) resized(s *KV, e *kvEnt, oldCap int) {
	c.hotBytes += int64(cap(e.val) - oldCap)
	c.maybeEvict(s)
}

func (c *coldTier) encode(kg uint16, last int64, val []byte) []byte {
	c.enc = binary.BigEndian.AppendUint16(c.enc[:0], kg)
	c.enc = binary.BigEndian.AppendUint64(c.enc, uint64(last))
	c.enc = append(c.enc, val...)
	return c.enc
}

var errColdValue = errors.New("state: corrupt value in the spill DB")

// decodeCold decodes a spill DB value (an empty one is a tombstone: see
// isTomb).
func decodeCold(v []byte) (kg int, last int64, val []byte, err error) {
	if len(v) < 10 {
		return 0, 0, nil, errColdValue
	}
	return int(binary.BigEndian.Uint16(v)), int64(binary.BigEndian.Uint64(v[2:10])), v[10:], nil
}

// isTomb reports whether a spill DB value is a tombstone: the key was
// deleted and the committed state may still hold it.
func isTomb(v []byte) bool { return len(v) == 0 }

// get reads framed key k from Pebble; val is valid until the next get.
// tomb: the key is deleted (a tombstone).
func (c *coldTier) get(k []byte) (kg int, last int64, val []byte, ok, tomb bool, err error) {
	v, closer, err := c.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, 0, nil, false, false, nil
	}
	if err != nil {
		return 0, 0, nil, false, false, fmt.Errorf("state spill DB: %w", err)
	}
	defer closer.Close()
	if isTomb(v) {
		return 0, 0, nil, false, true, nil
	}
	kg, last, val, err = decodeCold(v)
	c.val = append(c.val[:0], val...)
	return kg, last, c.val, err == nil, false, err
}

// seek reads framed key k like get, through one iterator kept open across
// calls with growing keys (a snapshot's sorted change set: neighbouring
// keys share blocks); endSeeks closes it.
func (c *coldTier) seek(k []byte) (kg int, last int64, val []byte, ok, tomb bool, err error) {
	if c.seekIt == nil {
		if c.seekIt, err = c.db.NewIter(nil); err != nil {
			return 0, 0, nil, false, false, err
		}
	}
	if !c.seekIt.SeekGE(k) || !bytes.Equal(c.seekIt.Key(), k) {
		return 0, 0, nil, false, false, c.seekIt.Error()
	}
	if isTomb(c.seekIt.Value()) {
		return 0, 0, nil, false, true, nil
	}
	kg, last, val, err = decodeCold(c.seekIt.Value())
	return kg, last, val, err == nil, false, err
}

func (c *coldTier) endSeeks() {
	if c.seekIt != nil {
		c.seekIt.Close()
		c.seekIt = nil
	}
}

// count is the number of live keys, hot and cold (expired ones included).
func (c *coldTier) count(s *KV) (int, error) {
	it := s.NewIter()
	it.noTTL = true
	it.Seek(-1, nil)
	n := 0
	for it.Next() {
		n++
	}
	return n, it.Close()
}

// loaded makes a hot entry of a key read from the cold tier (clean);
// inSpill: read from the spill DB (whose copy is current), else from the
// committed state (no spill copy).
func (c *coldTier) loaded(s *KV, k []byte, kg int, last int64, val []byte, inSpill bool) *kvEnt {
	c.st.ColdReads++
	if !inSpill {
		c.st.ComReads++
	}
	e := newEnt(kg, k, val)
	e.last, e.inCold, e.stale = last, inSpill, !inSpill
	s.hot.Set(hotOrd(e))
	c.add(e)
	return e
}

// maybeEvict evicts hot entries (CLOCK: second chance) while memory is
// over budget, down to 7/8 of it, writing back the stale ones in one batch.
func (c *coldTier) maybeEvict(s *KV) {
	chgBytes := int64(s.chg.len()+s.pend.len()) * int64(chgOverhead+s.plen+16)
	if c.hotBytes+chgBytes <= c.budget || len(c.clock) == 0 {
		return
	}
	target := c.budget*7/8 - chgBytes
	s.noteCommitted()
	// dirty entries stay (see below) unless the hot entries take three
	// times their share: about the whole budget
	keepDirty := s.com != nil && c.hotBytes <= 3*c.budget
	if keepDirty && c.stuck && c.stuckClean == s.cleanBelow && c.hotBytes < c.stuckBytes+c.budget/8 {
		return // a pass found nothing clean: wait for a commit (or growth)
	}
	c.stuck = false
	if c.evb == nil {
		c.evb = c.db.NewBatch()
	}
	b := c.evb
	visited := 0
	for c.hotBytes > target && len(c.clock) > 0 {
		if c.hand >= len(c.clock) {
			c.hand = 0
		}
		if visited++; visited > 2*len(c.clock)+1 {
			// every entry seen twice, none clean: the rest is the
			// changes not yet committed
			c.stuck, c.stuckClean, c.stuckBytes = true, s.cleanBelow, c.hotBytes
			break
		}
		e := c.clock[c.hand]
		if e.ref {
			e.ref = false
			c.hand++
			continue
		}
		// clean: the committed state holds the entry's current value
		clean := s.com != nil && e.mark < s.cleanBelow
		if keepDirty && !clean {
			// a dirty entry stays: the change set holds it (and its
			// value) until its checkpoint is committed anyway, so
			// evicting it frees only its index slots, for a write to the
			// spill DB
			c.hand++
			continue
		}
		switch {
		case e.stale && (e.inCold || !clean):
			// the spill DB has no copy or an older one (which would
			// shadow the committed value): write it back
			if err := b.Set(e.key, c.encode(e.kg, e.last, e.val), nil); err != nil {
				panic(fmt.Sprintf("state spill DB: %v", err))
			}
			s.filter.add(e.key)
			e.stale, e.inCold, c.used = false, true, true
			c.st.WriteBacks++
			if b.Len() >= evictBatch {
				c.commitEvictions()
			}
		case !e.inCold && clean:
			s.filter.add(e.key) // read back from the committed state
			c.st.CleanDrops++
		}
		s.hot.Delete(hotOrd(e))
		e.dead, e.evicted = true, true
		c.unclock(e)
		c.st.Evictions++
	}
	c.commitEvictions()
}

// evictBatch bounds a write-back batch: small batches go through the
// memtable (a large one would be kept whole as a flushable batch).
const evictBatch = 1 << 20

func (c *coldTier) commitEvictions() {
	if c.evb.Empty() {
		return
	}
	c.gen++
	if err := c.evb.Commit(pebble.NoSync); err != nil {
		panic(fmt.Sprintf("state spill DB: %v", err))
	}
	c.evb.Reset()
}

// restore writes one restored key straight into Pebble.
func (c *coldTier) restore(s *KV, kg int, k []byte, last int64, val []byte) error {
	if c.batch == nil {
		c.batch = c.db.NewBatch()
	}
	if err := c.batch.Set(k, c.encode(uint16(kg), last, val), nil); err != nil {
		return err
	}
	s.filter.add(k)
	c.used = true
	if c.batch.Len() >= 4<<20 {
		return c.flush()
	}
	return nil
}

func (c *coldTier) flush() error {
	if c.batch == nil {
		return nil
	}
	c.gen++
	err := c.batch.Commit(pebble.NoSync)
	c.batch.Close()
	c.batch = nil
	return err
}

// Iter iterates the live keys with a prefix, in key order, over the hot
// entries and the cold tier merged: a hot entry shadows a spill DB copy,
// which shadows the committed state's (a spill tombstone hides the key).
// The KV must not change while an Iter is open. An Iter is reusable: Seek
// again (no allocation in memory; Pebble iterators are kept while the cold
// tier does not change).
type Iter struct {
	kv       *KV
	lo, hi   []byte
	ht       btree.IterG[ord]
	probe    kvEnt // Seek's item (probeOrd)
	htOpen   bool
	hOK      bool
	ci       *pebble.Iterator
	cOK      bool
	advH     bool
	advC     bool
	key, val []byte
	err      error
	noTTL    bool  // expired keys too
	from     bool  // seekFrom: every key from lo on, not a prefix
	last     int64 // the current entry's last update
	// keep: Close keeps the Pebble iterators for the next Seek while the
	// cold tier is not written (ciGen, miGen: the generations they were
	// opened at); the KV's own iterator (Scan, Sweep) does, so a probe per
	// join key costs no Pebble iterator construction. release closes them.
	keep  bool
	ciGen uint64

	// the committed state (Committed): mi with bounds mlo, mhi, whose keys
	// start with the key group's prefix (mplen bytes); or, for a scan
	// across key groups, the collected entries slow[si:]
	mi         *pebble.Iterator
	miGen      uint64
	mlo, mhi   []byte
	mplen      int
	mOK, advM  bool
	slow       []comEnt
	si         int
	slowActive bool
}

// release closes the iterator and any kept Pebble iterator.
func (it *Iter) release() error {
	return it.closePebble(it.Close())
}

// closePebble closes the Pebble iterators and returns err, else their
// first error.
func (it *Iter) closePebble(err error) error {
	for _, p := range []**pebble.Iterator{&it.ci, &it.mi} {
		if *p != nil {
			if cerr := (*p).Close(); err == nil {
				err = cerr
			}
			*p = nil
		}
	}
	return err
}

// NewIter returns an iterator over s (call Seek, then Next until false,
// then Close).
func (s *KV) NewIter() *Iter { return &Iter{kv: s} }

// Seek positions the iterator before the first live key with prefix; kg
// is the key group of every such key, or -1 when they span key groups.
func (it *Iter) Seek(kg int, prefix []byte) {
	it.seek(kg, prefix, false)
}

// seekFrom positions the iterator before the first live key >= k (any key
// group).
func (it *Iter) seekFrom(k []byte) {
	it.seek(-1, k, true)
}

func (it *Iter) seek(kg int, prefix []byte, from bool) {
	it.Close()
	s := it.kv
	it.from = from
	it.lo = append(it.lo[:0], prefix...)
	var hi []byte // nil: no upper bound
	if !from {
		it.hi = prefixEnd(append(it.hi[:0], prefix...))
		hi = it.hi
	}
	it.ht.Init(s.hot, false)
	it.htOpen = true
	it.hOK = it.ht.Seek(probeOrd(&it.probe, it.lo))
	it.probe.key = nil
	it.hOK = it.hOK && it.inRange(it.ht.Item().e.key)
	it.advH, it.advC, it.advM = false, false, false
	it.cOK, it.mOK = false, false
	if it.ci != nil && (!s.spillUsed() || it.ciGen != s.cold.gen) {
		if err := it.ci.Close(); err != nil {
			it.ci = nil
			it.err = err
			return
		}
		it.ci = nil
	}
	if s.cold == nil || (!from && !s.filter.scanMayBeCold(it.lo)) {
		return // no key with the prefix can be cold
	}
	if s.spillUsed() {
		if it.ci != nil {
			it.ci.SetBounds(it.lo, hi) // a kept iterator: the DB did not change
		} else {
			o := pebble.IterOptions{LowerBound: it.lo}
			if hi != nil {
				o.UpperBound = hi
			}
			ci, err := s.cold.db.NewIter(&o)
			if err != nil {
				it.err = err
				return
			}
			it.ci, it.ciGen = ci, s.cold.gen
		}
		ci := it.ci
		if n, ok := framedPrefix(it.lo); ok && n == len(it.lo) && !from {
			// a key's map state: the bloom filters skip tables without it
			it.cOK = ci.SeekPrefixGE(it.lo)
		} else {
			it.cOK = ci.First()
		}
	}
	if s.com != nil {
		it.seekCommitted(kg, from)
	}
}

// seekCommitted positions the committed source at it.lo.
func (it *Iter) seekCommitted(kg int, from bool) {
	s := it.kv
	if kg < 0 || from {
		slow, err := s.comSlow(it.lo, from)
		if err != nil {
			it.err = err
			return
		}
		it.slow, it.si, it.slowActive = slow, 0, true
		it.mOK = len(slow) > 0
		return
	}
	if _, err := s.keptComIter(&it.mi, &it.miGen); err != nil {
		it.err = err
		return
	}
	p := s.keyPrefix(kg)
	it.mplen = len(p)
	it.mlo = append(append(it.mlo[:0], p...), it.lo...)
	it.mhi = prefixEnd(append(it.mhi[:0], it.mlo...))
	it.mi.SetBounds(it.mlo, it.mhi)
	it.mOK = it.mi.First()
}

// mKey and mVal are the committed source's current entry.
func (it *Iter) mKey() []byte {
	if it.slowActive {
		return it.slow[it.si].k
	}
	return it.mi.Key()[it.mplen:]
}

func (it *Iter) mVal() []byte {
	if it.slowActive {
		return it.slow[it.si].v
	}
	return it.mi.Value()
}

func (it *Iter) mNext() bool {
	if it.slowActive {
		it.si++
		return it.si < len(it.slow)
	}
	return it.mi.Next()
}

func (it *Iter) inRange(k []byte) bool {
	return it.from || bytes.HasPrefix(k, it.lo)
}

// prefixEnd turns p into the smallest key greater than every key with
// prefix p (nil: none).
func prefixEnd(p []byte) []byte {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0xff {
			p[i]++
			return p[:i+1]
		}
	}
	return nil
}

// Next moves to the next live key; false at the end (or on error: Close
// returns it).
func (it *Iter) Next() bool {
	s := it.kv
	for {
		if it.advH {
			it.hOK = it.ht.Next() && it.inRange(it.ht.Item().e.key)
			it.advH = false
		}
		if it.advC {
			it.cOK = it.ci.Next()
			it.advC = false
		}
		if it.advM {
			it.mOK = it.mNext()
			it.advM = false
		}
		if !it.hOK && !it.cOK && !it.mOK {
			if it.mi != nil && !it.slowActive {
				if err := it.mi.Error(); err != nil {
					it.err = err
				}
			}
			return false
		}
		// the smallest key of the three sources; on a tie the first
		// source (hot, spill, committed) wins and the others move on too
		var k []byte
		src := -1
		for i, ok := range [3]bool{it.hOK, it.cOK, it.mOK} {
			if !ok {
				continue
			}
			var ki []byte
			switch i {
			case 0:
				ki = it.ht.Item().e.key
			case 1:
				ki = it.ci.Key()
			default:
				ki = it.mKey()
			}
			if src < 0 || bytes.Compare(ki, k) < 0 {
				k, src = ki, i
			}
		}
		it.advH = it.hOK && (src == 0 || bytes.Equal(it.ht.Item().e.key, k))
		it.advC = it.cOK && (src == 1 || bytes.Equal(it.ci.Key(), k))
		it.advM = it.mOK && (src == 2 || bytes.Equal(it.mKey(), k))
		switch src {
		case 0:
			e := it.ht.Item().e
			if !it.noTTL && s.expired(e.last) {
				continue
			}
			it.key, it.val, it.last = e.key, e.val, e.last
			return true
		case 1:
			v := it.ci.Value()
			if isTomb(v) {
				continue // deleted: the committed copy is hidden too
			}
			_, last, val, err := decodeCold(v)
			if err != nil {
				it.err = err
				return false
			}
			if !it.noTTL && s.expired(last) {
				continue
			}
			it.key, it.val, it.last = it.ci.Key(), val, last
			return true
		default:
			// (no TTL with a committed state: nothing expires)
			it.key, it.val, it.last = it.mKey(), it.mVal(), s.now
			return true
		}
	}
}

// Key and Value are the current entry's, valid until Next or Close.
func (it *Iter) Key() []byte   { return it.key }
func (it *Iter) Value() []byte { return it.val }

// Close releases the iterator and returns its error, if any.
func (it *Iter) Close() error {
	if it.htOpen {
		it.ht.Release()
		it.htOpen = false
	}
	it.hOK, it.cOK, it.mOK = false, false, false
	it.slow, it.slowActive = nil, false
	err := it.err
	it.err = nil
	it.key, it.val = nil, nil
	if it.keep && err == nil {
		return nil // the Pebble iterators stay for the next Seek
	}
	return it.closePebble(err)
}
