package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble"
	"github.com/streamsql/streamsql/checkpoint"
)

// Rows is the state of an insert-only join side without a unique key (the
// bids of Nexmark q7, q9 and q20): rows added under fresh sequence numbers
// and never changed, read by join key. It keeps the keys and values a KV
// would (framed namespace, join key and sequence number), and its
// snapshots write the same bytes, so checkpoints do not depend on which of
// the two held a side.
//
// What the KV spends per row, Rows does not: no object, no ordered index,
// no change-set item, no clock slot. Rows are appended in arrival order to
// chunks of records (rowsPerChunk rows each); a row's index is its arrival
// number. A join key's rows are a chain through the chunks, newest first,
// from a map of the hash of its framed prefix (namespace and join key) to
// its newest row. The change set of a checkpoint is a range of indexes:
//
//	[base, cleanTo)     in memory and in the committed state (clean)
//	[cleanTo, snapFrom) written by the pending snapshot (pendID), or, once
//	                    it completed, by one before it
//	[snapFrom, n)       in no snapshot yet
//
// A snapshot sorts its range by state key and writes it; Complete makes the
// pending range clean, Abort puts it back into the next snapshot's range.
//
// With a committed state (Options.Committed, checkpointing on), memory is
// bounded: once the chunks take more than the budget, the oldest chunks
// whose rows are all clean are dropped (no write: the committed state has
// them). Rows no completed checkpoint holds may not be dropped; while
// checkpoints lag the task holds its input (HoldsInput), and when they
// keep failing (nothing pending to wait for) the oldest such chunks past
// four budgets are moved to files and mapped read-only (mapOut): they
// stay chunks at their indexes, read by scans and snapshots as before,
// and are unmapped when dropped clean. A restore loads nothing: its rows
// are in the committed state. A scan walks the join key's chain in memory
// and, when the chain runs into dropped rows or the key may have restored
// rows (a Bloom filter of the prefix hashes that left the map), reads the
// committed state's entries of the prefix too, skipping those still in
// memory: rows in memory are the ones added since the restore, whose
// sequence numbers grow with their index, so a committed entry with a
// sequence number at or above that of the oldest row in memory is in
// memory. Without a committed state every
// row stays in memory and a restore loads the rows.
//
// Not safe for concurrent use.
type Rows struct {
	o   Options
	com Committed // the committed state, where dropped rows are
	// spill: without a committed state, a tiered Rows writes the rows of
	// the chunks it drops here (framed key -> key group, value)
	spill  *coldTier
	budget int64    // bytes of chunks memory may hold (tiered)
	shift  uint     // log2 of the rows of a chunk
	prefix [][]byte // KeyedPrefix per key group, built lazily

	chunks    []*rowChunk // chunks[i]: rows from (chunkBase+i) << shift
	chunkBase int64
	n         int64 // rows added (indexes 0..n-1)
	base      int64 // rows below base are dropped (in the committed state or the spill DB)
	bytes     int64 // accounted size of the chunks in the Go heap (mapped ones take none)

	// nmapped: chunks[:nmapped] are mapped from files (mapOut), taking
	// mappedBytes; the others are in the Go heap
	nmapped     int
	mappedBytes int64
	segs        []*rowSeg // sorted ranges of the mapped chunks, in order

	// heads: the hash of a framed prefix -> its newest row; coldKeys
	// holds (by hash) the prefixes whose rows may be cold without a chain
	// leading there (restored, or swept out of heads)
	heads    headIndex
	coldKeys growFilter
	sweptAt  int64 // base at the last sweep of heads

	snapFrom, cleanTo        int64
	pendID, pendFrom, pendTo int64

	// cold scans: a kept iterator, replaced once rows became clean or
	// were spilled (comGen) since it was opened (itGen)
	comIt         *pebble.Iterator
	itGen, comGen uint64
	lo, hi        []byte

	sorted [2][]radixItem // a snapshot's sort buffers, reused
	// the sort buffers a snapshot's run (rowsRun) held, handed back by
	// its Release (on the committing goroutine)
	runRefs, runSpare atomic.Pointer[[]radixItem]
	prefixesBuilt     bool // every key group's prefix is in prefix
	scratch           []byte
	st                TierStats
	err               error
}

// rowChunk holds the records of 1 << shift consecutive rows: kg (2
// bytes), prefix, key and value lengths (4 bytes each), the key, the
// value. off and prev are per row: the record's offset, and the index of
// the previous row of the row's chain (-1: none).
type rowChunk struct {
	data []byte
	off  []uint32
	prev []int64
	m    *rowMap // non-nil: data, off and prev are views of a mapped file
}

// memBytes is what the chunk takes in the Go heap (nothing once mapped).
func (c *rowChunk) memBytes() int64 {
	if c.m != nil {
		return 0
	}
	return int64(cap(c.data) + len(c.off)*12)
}

// rowMap is a chunk's mapped file. A snapshot's run reads the chunk on
// the committing goroutine (refs counts the runs holding views of it), so
// it is unmapped once dropped (or the rows closed) and no run holds it,
// by whichever side sees both last.
type rowMap struct {
	mem      []byte
	refs     atomic.Int32
	dropped  atomic.Bool
	unmapped atomic.Bool
}

func (m *rowMap) release() {
	if m.dropped.Load() && m.refs.Load() == 0 && m.unmapped.CompareAndSwap(false, true) {
		unmapRows(m.mem)
		liveRowMaps.Add(-1)
	}
}

// liveRowMaps counts the chunks mapped and not yet unmapped (tests).
var liveRowMaps atomic.Int64

const rowHeader = 14

// rowsChunkShift: 4096 rows a chunk; rowsSmallShift: 16, with a test's
// tiny hot budget (Options.TierHotBytes), so that few rows fill chunks
// that are then dropped.
const (
	rowsChunkShift = 12
	rowsSmallShift = 4
)

// RowsFit reports whether Rows can keep a side's state under o: without a
// TTL (its rows have no update time).
func RowsFit(o Options) bool {
	_, err := ParseBackend(o.Backend)
	return err == nil && o.TTL == 0
}

// NewRows returns empty Rows state (RowsFit(o) must hold).
func NewRows(o Options) (*Rows, error) {
	if o.MaxParallelism <= 0 || o.MaxParallelism > MaxKeyGroups {
		return nil, fmt.Errorf("state: max parallelism %d out of range 1..%d", o.MaxParallelism, MaxKeyGroups)
	}
	if !RowsFit(o) {
		return nil, fmt.Errorf("state: insert-only rows take no TTL")
	}
	r := &Rows{o: o, shift: rowsChunkShift, prefix: make([][]byte, o.MaxParallelism)}
	if backend, _ := ParseBackend(o.Backend); backend == BackendPebble {
		total := o.MemoryBudget
		if total <= 0 {
			total = DefaultMemoryBudget
		}
		// Go's collector lets the heap grow to about twice the live
		// data; the other side's KV has the budget too
		r.budget = total / 4
		if o.Checkpointing && o.Committed != nil {
			r.com = o.Committed
		} else {
			c, err := openCold(o, true, false)
			if err != nil {
				return nil, err
			}
			r.spill, r.budget = c, c.budget // (its hot share: what Pebble leaves, a third)
		}
		if o.TierHotBytes > 0 {
			r.budget = o.TierHotBytes
			if o.TierHotBytes < 1<<20 {
				r.shift = rowsSmallShift
			}
		}
	}
	return r, nil
}

func (r *Rows) keyPrefix(kg int) []byte {
	if r.prefix[kg] == nil {
		r.prefix[kg] = checkpoint.KeyedPrefix(r.o.OpID, kg)
	}
	return r.prefix[kg]
}

// Err is the first error of a committed read (Scan); the state is not
// usable after one.
func (r *Rows) Err() error { return r.err }

// Len is the number of rows in memory.
func (r *Rows) Len() int { return int(r.n - r.base) }

// Stats returns the counters: Evictions and CleanDrops count dropped
// rows, WriteBacks those spilled, ColdReads the cold rows scans read
// (ComReads: from the committed state).
func (r *Rows) Stats() TierStats {
	st := r.st
	st.Hot, st.HotBytes, st.Budget, st.MappedBytes = r.Len(), r.bytes, r.budget, r.mappedBytes
	return st
}

// Close releases the committed iterator and adds the counters to
// KVTierTotals (the join state's tier). Idempotent.
func (r *Rows) Close() error {
	var err error
	if r.comIt != nil {
		err = r.comIt.Close()
		r.comIt = nil
	}
	if r.spill != nil {
		if cerr := r.spill.close(); err == nil {
			err = cerr
		}
		r.spill = nil
	}
	kvTotals.add(r.st)
	r.st = TierStats{}
	for _, c := range r.chunks[:r.nmapped] {
		c.m.dropped.Store(true)
		c.m.release()
	}
	for _, sg := range r.segs {
		r.releaseSeg(sg)
	}
	r.segs = nil
	// (a read after Close fails in Go, not in a mapping)
	r.chunks, r.nmapped, r.mappedBytes = nil, 0, 0
	return err
}

// chunk returns row i's chunk and its slot in it (i must be in memory).
func (r *Rows) chunk(i int64) (*rowChunk, int) {
	return r.chunks[i>>r.shift-r.chunkBase], int(i & (1<<r.shift - 1))
}

// record returns row i's key group, framed key, prefix length and value.
func (r *Rows) record(i int64) (kg int, key []byte, plen int, val []byte) {
	c, s := r.chunk(i)
	return decodeRow(c.data[c.off[s]:])
}

// decodeRow splits the record at the start of d.
func decodeRow(d []byte) (kg int, key []byte, plen int, val []byte) {
	kg = int(binary.LittleEndian.Uint16(d))
	plen = int(binary.LittleEndian.Uint32(d[2:]))
	kl := int(binary.LittleEndian.Uint32(d[6:]))
	vl := int(binary.LittleEndian.Uint32(d[10:]))
	key = d[rowHeader : rowHeader+kl : rowHeader+kl]
	val = d[rowHeader+kl : rowHeader+kl+vl : rowHeader+kl+vl]
	return
}

// Add appends a row: framed key (its first plen bytes the framed namespace
// and join key, then the sequence number's frame) in key group kg with
// value val (both copied). The key must be new: its sequence number above
// every one added or restored before.
func (r *Rows) Add(kg int, key []byte, plen int, val []byte) {
	r.AddHashed(PrefixHash(key[:plen]), kg, key, plen, val)
}

// PrefixHash is the hash Rows keeps a row's framed prefix (namespace and
// join key: key[:plen] of Add) under.
func PrefixHash(prefix []byte) uint64 { return xxhash.Sum64(prefix) }

// Prefetch starts loading what adding a row of prefix hash h touches
// first (its slot of the index of newest rows), without waiting: a caller
// that knows the rows it adds next prefetches a few rows ahead.
func (r *Rows) Prefetch(h uint64) { r.heads.prefetch(h) }

// AddHashed is Add of a row whose prefix hash h the caller computed
// (PrefixHash(key[:plen])).
func (r *Rows) AddHashed(h uint64, kg int, key []byte, plen int, val []byte) {
	if r.n>>r.shift-r.chunkBase == int64(len(r.chunks)) {
		size := 64 << 10
		if len(r.chunks) > 0 {
			// the size the last chunk reached, and a little more
			last := r.chunks[len(r.chunks)-1]
			size = len(last.data) + len(last.data)/8
		}
		rows := 1 << r.shift
		c := &rowChunk{data: make([]byte, 0, size), off: make([]uint32, rows), prev: make([]int64, rows)}
		r.chunks = append(r.chunks, c)
		r.bytes += int64(cap(c.data) + rows*12)
	}
	c, s := r.chunk(r.n)
	if uint64(len(c.data))+uint64(rowHeader+len(key)+len(val)) > math.MaxUint32 {
		// (offsets are 32 bits: rows of a megabyte on average)
		if r.err == nil {
			r.err = fmt.Errorf("state: join rows of %d bytes: a chunk of %d rows would exceed 4 GiB", len(key)+len(val), 1<<r.shift)
		}
		return
	}
	oldCap := cap(c.data)
	c.off[s] = uint32(len(c.data))
	var hdr [rowHeader]byte
	binary.LittleEndian.PutUint16(hdr[:], uint16(kg))
	binary.LittleEndian.PutUint32(hdr[2:], uint32(plen))
	binary.LittleEndian.PutUint32(hdr[6:], uint32(len(key)))
	binary.LittleEndian.PutUint32(hdr[10:], uint32(len(val)))
	c.data = append(append(append(c.data, hdr[:]...), key...), val...)
	r.bytes += int64(cap(c.data) - oldCap)
	c.prev[s] = r.heads.set(h, r.n)
	r.n++
	if r.tiered() && r.bytes > r.budget {
		r.drop()
		if r.com != nil && r.bytes > (holdFactor+1)*r.budget {
			r.mapOut()
		}
	}
}

// mapOut moves the oldest chunks in the heap (bar the one being filled)
// to mapped files until the heap's chunks take three budgets again. It
// runs past four budgets, after drop: those chunks hold rows no completed
// checkpoint holds (checkpoints keep failing, or a lagging one's hold is
// not honoured), which cannot leave the chunks, but can leave the heap.
func (r *Rows) mapOut() {
	if !canMapRows {
		return
	}
	dir := spillParent(r.o)
	from := (r.chunkBase + int64(r.nmapped)) << r.shift
	var err error
	for err == nil && r.nmapped < len(r.chunks)-1 && r.bytes > holdFactor*r.budget {
		c := r.chunks[r.nmapped]
		rows := len(c.off)
		var mem []byte
		mem, err = mapRows(dir, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(c.off))), rows*4),
			unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(c.prev))), rows*8), c.data)
		if err != nil {
			break
		}
		liveRowMaps.Add(1)
		r.bytes -= c.memBytes()
		// off at 0, prev at rows*4 (a multiple of 8: rows is a power of
		// two of at least 16), then the records
		c.off = unsafe.Slice((*uint32)(unsafe.Pointer(&mem[0])), rows)
		c.prev = unsafe.Slice((*int64)(unsafe.Pointer(&mem[rows*4])), rows)
		end := rows*12 + len(c.data)
		c.data = mem[rows*12 : end : end]
		c.m = &rowMap{mem: mem}
		r.mappedBytes += int64(len(mem))
		r.nmapped++
		r.st.Mapped += int64(rows)
	}
	// the rows just mapped that no checkpoint holds, sorted once
	if a, b := max(from, r.cleanTo), (r.chunkBase+int64(r.nmapped))<<r.shift; err == nil && a < b {
		err = r.addSeg(dir, a, b)
	}
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("state: moving join rows to a file: %w", err)
	}
}

// tiered: rows leave memory (for the committed state or the spill DB).
func (r *Rows) tiered() bool { return r.com != nil || r.spill != nil }

// HoldsInput returns the pending snapshot's checkpoint id while the rows in
// memory take more than three times the budget (0 otherwise): with
// checkpoints on only rows a completed checkpoint holds may leave memory,
// so when commits outlast the interval the rows that arrived since the
// last completed one pile up. The operator's task then stops taking input
// until that checkpoint completes or aborts (Complete, Abort; see
// exec.InputHolder for when the runtime honours it): memory stays within
// three budgets, or what the rows took when the hold began, plus the
// message that crossed the line. (The KV writes such entries back
// instead. Rows no checkpoint holds yet stay chunks; past four budgets,
// when no hold keeps them in check, they are mapped from files: mapOut.)
func (r *Rows) HoldsInput() int64 {
	if r.pendID != 0 && r.o.Checkpointing && r.tiered() && r.bytes > holdFactor*r.budget {
		return r.pendID
	}
	return 0
}

// holdFactor: HoldsInput's multiple of the budget (the KV's write-back
// threshold for changed entries is the same).
const holdFactor = 3

// cold is where dropped rows are read from.
func (r *Rows) cold() Committed {
	if r.com != nil {
		return r.com
	}
	return spillSource{r.spill.db}
}

// spillSource reads a spill DB as Committed does the committed state.
type spillSource struct{ db *pebble.DB }

func (s spillSource) NewCommittedIter() (*pebble.Iterator, error) { return s.db.NewIter(nil) }
func (s spillSource) CommittedID() int64                          { return 0 }
func (s spillSource) CommittedGet(k []byte) ([]byte, io.Closer, error) {
	return s.db.Get(k)
}

// drop drops the oldest chunks whose rows are all clean while the chunks
// take more than 7/8 of the budget (the chunk being filled stays). Without
// a committed state their rows are written to the spill DB first (with
// checkpoints on, only rows no snapshot will write again are dropped:
// clean ones; without, any).
func (r *Rows) drop() {
	limit := r.cleanTo
	if !r.o.Checkpointing {
		limit = r.n
	}
	// the oldest chunks that go: clean ones (or any without checkpoints)
	// until the chunks take 7/8 of the budget, and clean mapped ones; the
	// one being filled stays
	n, left := 0, r.bytes
	for len(r.chunks)-n > 1 && (left > r.budget*7/8 || n < r.nmapped) {
		if (r.chunkBase+int64(n)+1)<<r.shift > limit {
			break // the rest is not committed yet
		}
		c := r.chunks[n]
		left -= c.memBytes()
		n++
	}
	if n > 0 {
		end := (r.chunkBase + int64(n)) << r.shift
		if r.spill != nil {
			if err := r.spillRows(r.base, end); err != nil {
				if r.err == nil {
					r.err = fmt.Errorf("state: spilling rows: %w", err)
				}
				return
			}
		}
		for i := 0; i < n; i++ {
			if m := r.chunks[i].m; m != nil {
				r.mappedBytes -= int64(len(m.mem))
				m.dropped.Store(true)
				m.release()
			}
			r.chunks[i] = nil
		}
		r.nmapped = max(0, r.nmapped-n)
		r.chunks = r.chunks[n:]
		r.chunkBase += int64(n)
		r.bytes = left
		r.st.Evictions += end - r.base
		r.st.CleanDrops += end - r.base
		r.base = end
	}
	if r.base-r.sweptAt > int64(r.heads.Len()) {
		// heads of prefixes whose rows all left memory go into the
		// filter: the index does not grow with every key ever seen
		r.heads.keepIf(func(h uint64, i int64) bool {
			if i < r.base {
				r.coldKeys.addHash(h)
				return false
			}
			return true
		})
		r.sweptAt = r.base
	}
}

// prefetchRow starts loading row i's record (its first two lines).
func (r *Rows) prefetchRow(i int64) {
	c, s := r.chunk(i)
	if o := c.off[s]; int(o) < len(c.data) {
		p := uintptr(unsafe.Pointer(&c.data[o]))
		prefetch(p)
		prefetch(p + 64)
	}
}

// takeSortBuffers takes back the sort buffers the last snapshot's run
// handed back at its Release (when larger than the ones held).
func (r *Rows) takeSortBuffers() {
	if p := r.runRefs.Swap(nil); p != nil && cap(*p) > cap(r.sorted[0]) {
		r.sorted[0] = *p
	}
	if p := r.runSpare.Swap(nil); p != nil && cap(*p) > cap(r.sorted[1]) {
		r.sorted[1] = *p
	}
}

// trimSortBuffers drops sort buffers of more than 2 M rows (48 MiB each)
// rather than keep them between snapshots.
func (r *Rows) trimSortBuffers() {
	for i := range r.sorted {
		if cap(r.sorted[i]) > 1<<21 {
			r.sorted[i] = nil
		}
	}
}

// spillRows writes rows [from, end) to the spill DB as one table file it
// ingests: the rows sorted by key (a radix sort of their first 16 bytes,
// then the whole keys where those tie), written straight into an sstable.
// Inserting them into the memtable (a skiplist search a row), flushing it
// and compacting took half of a join's CPU without checkpoints (q7).
func (r *Rows) spillRows(from, end int64) error {
	n := int(end - from)
	r.takeSortBuffers()
	refs := slices.Grow(r.sorted[0][:0], n)[:n]
	refs, r.sorted[1] = sortRowRefs(refs, r.sorted[1], false, func(j int32) (int, []byte) {
		kg, key, _, _ := r.record(from + int64(j))
		return kg, key
	})
	r.sorted[0] = refs
	defer r.trimSortBuffers()
	err := r.spill.ingest(func(set func(k, v []byte) error) error {
		for j, it := range refs {
			// the rows are read in key order, scattered over the chunks:
			// prefetch the record runAhead rows on and its offset twice
			// as far (as rowsRun.At)
			if k := j + runAhead; k < len(refs) {
				r.prefetchRow(from + int64(refs[k].i))
				if k += runAhead; k < len(refs) {
					c, s := r.chunk(from + int64(refs[k].i))
					prefetch(uintptr(unsafe.Pointer(&c.off[s])))
				}
			}
			kg, key, _, val := r.record(from + int64(it.i))
			r.scratch = append(binary.BigEndian.AppendUint16(r.scratch[:0], uint16(kg)), val...)
			if err := set(key, r.scratch); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.st.WriteBacks += end - from
	r.comGen++ // a kept iterator must see them
	return nil
}

// Scan calls fn with the framed key and value of every row whose framed
// key starts with prefix (a framed namespace and join key) in key group
// kg: rows in memory newest first, then the cold ones (dropped or
// restored), in key order. Keys and values are valid during the call.
func (r *Rows) Scan(kg int, prefix []byte, fn func(key, val []byte) error) error {
	if r.err != nil {
		return r.err
	}
	h := xxhash.Sum64(prefix)
	i, ok := r.heads.get(h)
	if !ok {
		i = -1
	}
	for ; i >= r.base; i = r.chunkPrev(i) {
		rkg, key, plen, val := r.record(i)
		if rkg == kg && plen == len(prefix) && bytes.Equal(key[:plen], prefix) {
			if err := fn(key, val); err != nil {
				return err
			}
		}
	}
	if !r.tiered() || (i < 0 && !r.coldKeys.mayHoldHash(h)) {
		return nil
	}
	if err := r.scanCold(kg, prefix, func(_ int, k, v []byte) error { return fn(k, v) }); err != nil {
		if r.err == nil {
			r.err = fmt.Errorf("state: reading the committed state: %w", err)
		}
		return r.err
	}
	return nil
}

func (r *Rows) chunkPrev(i int64) int64 {
	c, s := r.chunk(i)
	return c.prev[s]
}

// scanCold calls fn with the cold rows (dropped or restored: not in
// memory) whose framed key starts with prefix, in key group kg (-1: every
// one; spill DB only, whose values carry the key group).
func (r *Rows) scanCold(kg int, prefix []byte, fn func(kg int, key, val []byte) error) error {
	it, err := keptIter(r.cold(), &r.comIt, &r.itGen, r.comGen)
	if err != nil {
		return err
	}
	var kp []byte // the state key's prefix before the framed key
	if r.spill == nil {
		kp = r.keyPrefix(kg)
	}
	// with a committed state, entries numbered at or above floor are in
	// memory too (the spill DB holds exactly the dropped rows)
	floor, inMem := r.memFloor()
	inMem = inMem && r.spill == nil
	r.lo = append(append(r.lo[:0], kp...), prefix...)
	r.hi = prefixEnd(append(r.hi[:0], r.lo...))
	it.SetBounds(r.lo, r.hi)
	for ok := it.First(); ok; ok = it.Next() {
		key := it.Key()[len(kp):]
		if plen, ok := framedPrefix(key); ok && inMem {
			if q, ok := rowSeq(key[plen:]); ok && q >= floor {
				continue
			}
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		ekg := kg
		if r.spill != nil {
			if len(v) < 2 {
				return fmt.Errorf("state: a spilled row without its key group")
			}
			if ekg, v = int(binary.BigEndian.Uint16(v)), v[2:]; kg >= 0 && ekg != kg {
				continue
			}
		} else {
			r.st.ComReads++
		}
		r.st.ColdReads++
		if err := fn(ekg, key, v); err != nil {
			return err
		}
	}
	return it.Error()
}

// Each calls fn with every row of namespace ns (the side's, as Restore
// takes it): those in memory, oldest first, then the cold ones. A join
// whose insert-only side receives a retraction after all (never from the
// planner) moves the side's rows into a KV with it.
func (r *Rows) Each(ns []byte, fn func(kg int, key, val []byte) error) error {
	for i := r.base; i < r.n; i++ {
		kg, key, _, val := r.record(i)
		if err := fn(kg, key, val); err != nil {
			return err
		}
	}
	switch {
	case !r.tiered():
		return r.err
	case r.spill != nil:
		return r.scanCold(-1, NamespaceFrame(ns), fn)
	}
	start, end := r.o.KeyGroupStart, r.o.KeyGroupEnd
	if end <= start {
		start, end = 0, r.o.MaxParallelism
	}
	for kg := start; kg < end; kg++ {
		if err := r.scanCold(kg, NamespaceFrame(ns), fn); err != nil {
			return err
		}
	}
	return nil
}

// NamespaceFrame is the framed namespace ns that every state key of it
// starts with (Key).
func NamespaceFrame(ns []byte) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(ns))), ns...)
}

// memFloor is the sequence number of the oldest row in memory (inMem
// false: none is): with a committed state, a committed entry numbered at
// or above it is in memory too.
func (r *Rows) memFloor() (floor uint64, inMem bool) {
	if r.base == r.n {
		return 0, false
	}
	_, key, plen, _ := r.record(r.base)
	floor, _ = rowSeq(key[plen:])
	return floor, true
}

// rowSeq parses the sequence number frame that follows a row key's prefix
// (false: the rest is not exactly one such frame, e.g. a multiset entry).
func rowSeq(rest []byte) (uint64, bool) {
	n, w := binary.Uvarint(rest)
	if w <= 0 || n != uint64(len(rest)-w) {
		return 0, false
	}
	q, qw := binary.Uvarint(rest[w:])
	if qw <= 0 || qw != int(n) {
		return 0, false
	}
	return q, true
}

// Snapshot writes the rows of no snapshot (with a pending snapshot's rows
// merged back first) to w, sorted by state key, as KV.Snapshot writes
// them; they are then pending until Complete or Abort. The order is a
// radix sort of (key group, the key's first 14 bytes), then where those
// tie a comparison of its next 4 bytes (radixItem.p2) and, where those
// tie too, of the whole keys.
func (r *Rows) Snapshot(id int64, w checkpoint.StateWriter) error {
	if !r.o.Checkpointing {
		return nil
	}
	if r.pendID != 0 {
		r.snapFrom, r.pendID = r.pendFrom, 0
	}
	if r.snapFrom < r.base {
		// cannot happen: only clean rows are dropped
		return fmt.Errorf("state: rows %d..%d of a snapshot left memory", r.snapFrom, r.base)
	}
	if r.n-r.snapFrom > 1<<31-1 {
		return fmt.Errorf("state: %d rows in one snapshot", r.n-r.snapFrom)
	}
	n := int(r.n - r.snapFrom)
	if n == 0 {
		r.pendID, r.pendFrom, r.pendTo = id, r.snapFrom, r.n
		return nil
	}
	r.takeSortBuffers()
	if !r.prefixesBuilt {
		// the run reads them on the committing goroutine
		end := r.o.KeyGroupEnd
		if end == 0 {
			end = r.o.MaxParallelism
		}
		for kg := r.o.KeyGroupStart; kg < end; kg++ {
			r.keyPrefix(kg)
		}
		r.prefixesBuilt = true
	}
	rw, byRef := w.(interface {
		PutRun(checkpoint.SortedRun) error
	})
	if byRef {
		// sorted by the commit (Prepare), off this subtask's goroutine;
		// mapped rows sorted when mapped (rowSeg) are runs of their own
		runs := r.snapshotRuns()
		for i, run := range runs {
			if err := rw.PutRun(run); err != nil {
				for _, rest := range runs[i+1:] {
					rest.Release()
				}
				return err
			}
		}
	} else {
		run := r.newRun(r.snapFrom, r.n, true)
		run.Prepare()
		for j := range run.refs {
			k, v := run.At(j, r.scratch[:0])
			r.scratch = k
			if err := w.Put(k, v); err != nil {
				r.sorted[0], r.sorted[1] = run.refs, run.spare
				run.releaseMaps()
				return err
			}
		}
		r.sorted[0], r.sorted[1] = run.refs, run.spare
		run.releaseMaps()
		r.trimSortBuffers()
	}
	r.pendID, r.pendFrom, r.pendTo = id, r.snapFrom, r.n
	r.snapFrom = r.n
	return nil
}

// newRun returns the unsorted run of rows [from, to) (from < to): pooled,
// it takes the sort buffers kept for reuse (until its Release).
func (r *Rows) newRun(from, to int64, pooled bool) *rowsRun {
	n := int(to - from)
	run := &rowsRun{from: from, shift: r.shift, prefix: r.prefix}
	if pooled {
		run.refs, run.spare = slices.Grow(r.sorted[0][:0], n)[:n], r.sorted[1][:0]
		run.back, run.backSpare = &r.runRefs, &r.runSpare
		r.sorted[0], r.sorted[1] = nil, nil // the run's until its Release
	} else {
		run.refs = make([]radixItem, n)
	}
	r.viewChunks(run, from, to)
	return run
}

// viewChunks gives run views of the chunks holding rows [from, to) as
// they are now, and its size: the run reads them while this subtask goes
// on appending (to bytes past these views, or to new arrays) and never
// drops them (the rows are not clean before the checkpoint completes,
// after its commit); a mapped chunk stays mapped until the run's Release.
func (r *Rows) viewChunks(run *rowsRun, from, to int64) {
	run.first = from >> r.shift
	size := 0
	for ci := run.first; ci <= (to-1)>>r.shift; ci++ {
		c := r.chunks[ci-r.chunkBase]
		run.chunks = append(run.chunks, rowView{data: c.data, off: c.off})
		size += len(c.data)
		if c.m != nil {
			c.m.refs.Add(1)
			run.maps = append(run.maps, c.m)
		}
	}
	// the size of the rows' keys and values, about (the records' bytes
	// and a key group prefix a row, less the records' headers)
	size += int(to-from)*(len(r.prefix[r.o.KeyGroupStart])-rowHeader) - int(run.chunks[0].off[from&(1<<r.shift-1)])
	run.bytes = size
}

// snapshotRuns returns the runs of rows [snapFrom, n): a sorted segment's
// own (rowSeg) and, between and after them, runs the commit sorts.
func (r *Rows) snapshotRuns() []*rowsRun {
	var runs []*rowsRun
	pooled := true
	cur := r.snapFrom
	kept := r.segs[:0]
	for _, sg := range r.segs {
		if sg.a < cur {
			// (not expected: segments start at or after the clean rows,
			// and snapFrom is cleanTo once pending rows are merged back)
			r.releaseSeg(sg)
			continue
		}
		kept = append(kept, sg)
		if sg.a > cur {
			runs = append(runs, r.newRun(cur, sg.a, pooled))
			pooled = false
		}
		run := &rowsRun{refs: sg.refs, from: sg.a, shift: r.shift, prefix: r.prefix}
		run.once.Do(func() {}) // sorted already
		r.viewChunks(run, sg.a, sg.b)
		sg.m.refs.Add(1)
		run.maps = append(run.maps, sg.m)
		runs = append(runs, run)
		cur = sg.b
	}
	clear(r.segs[len(kept):])
	r.segs = kept
	if cur < r.n {
		runs = append(runs, r.newRun(cur, r.n, pooled))
	}
	return runs
}

// rowSeg is rows [a, b) of mapped chunks, sorted once as they were mapped
// (mapOut): while checkpoints keep failing every snapshot holds them, and
// hands them to the commit as a run of its own instead of sorting them
// again. Its sorted items (i from a) are mapped from a file too.
type rowSeg struct {
	a, b int64
	refs []radixItem
	m    *rowMap
}

// addSeg sorts rows [a, b) (in mapped chunks) into a segment.
func (r *Rows) addSeg(dir string, a, b int64) error {
	refs, _ := sortRowRefs(make([]radixItem, b-a), nil, true, func(j int32) (int, []byte) {
		kg, key, _, _ := r.record(a + int64(j))
		return kg, key
	})
	size := len(refs) * int(unsafe.Sizeof(radixItem{}))
	mem, err := mapRows(dir, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(refs))), size))
	if err != nil {
		return err
	}
	liveRowMaps.Add(1)
	r.mappedBytes += int64(len(mem))
	r.segs = append(r.segs, &rowSeg{a: a, b: b, refs: unsafe.Slice((*radixItem)(unsafe.Pointer(&mem[0])), len(refs)), m: &rowMap{mem: mem}})
	return nil
}

// releaseSeg lets segment sg go (unmapped once no run reads it).
func (r *Rows) releaseSeg(sg *rowSeg) {
	r.mappedBytes -= int64(len(sg.m.mem))
	sg.m.dropped.Store(true)
	sg.m.release()
}

// rowsRun is a snapshot's rows in state key order, handed to the
// checkpoint buffer by reference (checkpoint.SortedRun): the commit reads
// each row once, from the chunks, instead of the snapshot copying every
// row into the buffer and the commit reading the copy. It reads views of
// the chunks taken at the snapshot and the key groups' prefixes (built by
// the snapshot; entries never change once built), nothing the subtask
// changes meanwhile.
type rowsRun struct {
	refs   []radixItem // the rows, sorted (Prepare): refs[j].i is a row from from
	spare  []radixItem // the sort's scratch
	once   sync.Once
	from   int64
	shift  uint
	first  int64     // chunks[0] holds rows from first << shift
	chunks []rowView // the chunks holding rows from..to
	maps   []*rowMap // the mapped ones among them (held until Release)
	prefix [][]byte
	bytes  int
	// where Release hands refs and spare back
	back, backSpare *atomic.Pointer[[]radixItem]
}

// rowView is a chunk's records and offsets as of a snapshot.
type rowView struct {
	data []byte
	off  []uint32
}

func (run *rowsRun) row(i int64) []byte {
	c := &run.chunks[i>>run.shift-run.first]
	return c.data[c.off[i&(1<<run.shift-1)]:]
}

func (run *rowsRun) Len() int   { return len(run.refs) }
func (run *rowsRun) Bytes() int { return run.bytes }

// runAhead: At loads the record this many rows on, so that its cache
// misses (the rows are read in key order, scattered over the chunks)
// overlap the work on the rows before it.
const runAhead = 8

// Prepare sorts the run by state key, once: the commit calls it (on
// goroutines of its own, several runs at once) before it reads the run,
// so that a subtask's checkpoint barrier does not wait for the sort. The
// row keys are read through the chunk views only.
func (run *rowsRun) Prepare() { run.once.Do(run.sort) }

func (run *rowsRun) sort() {
	run.refs, run.spare = sortRowRefs(run.refs, run.spare, true, func(j int32) (int, []byte) {
		kg, key, _, _ := decodeRow(run.row(run.from + int64(j)))
		return kg, key
	})
}

// sortRowRefs sorts rows 0..len(refs)-1 (row j: its key group and framed
// key) by key, or withKG by (key group, key) as their state keys order: a
// radix sort of the first 16 bytes (withKG: the key group's 2 and the
// key's first 14), then the next 4 (p2: a join key's rows differ in their
// sequence numbers there), then the whole keys where those tie. spare is
// the sort's scratch; both come back for reuse.
func sortRowRefs(refs, spare []radixItem, withKG bool, row func(j int32) (kg int, key []byte)) ([]radixItem, []radixItem) {
	for j := range refs {
		kg, key := row(int32(j))
		var it radixItem
		if withKG {
			var b [18]byte
			copy(b[:], key)
			it = radixItem{
				p0: uint64(kg)<<48 | uint64(binary.BigEndian.Uint16(b[:]))<<32 | uint64(binary.BigEndian.Uint32(b[2:])),
				p1: binary.BigEndian.Uint64(b[6:]), p2: binary.BigEndian.Uint32(b[14:])}
		} else {
			it.p0, it.p1, it.p2 = prefix20(key)
		}
		it.i = int32(j)
		refs[j] = it
	}
	return sortRadix(refs, spare, func(a, b radixItem) int {
		if a.p2 != b.p2 {
			return cmpU32(a.p2, b.p2)
		}
		_, ka := row(a.i)
		_, kb := row(b.i)
		return bytes.Compare(ka, kb)
	})
}

func (run *rowsRun) At(j int, dst []byte) (key, value []byte) {
	run.Prepare()
	if k := j + runAhead; k < len(run.refs) {
		// the record's first two lines (rows of ~100 bytes), and the
		// offset of the row after as many more
		i := run.from + int64(run.refs[k].i)
		c := &run.chunks[i>>run.shift-run.first]
		if o := c.off[i&(1<<run.shift-1)]; int(o) < len(c.data) {
			p := uintptr(unsafe.Pointer(&c.data[o]))
			prefetch(p)
			prefetch(p + 64)
		}
		if k += runAhead; k < len(run.refs) {
			i := run.from + int64(run.refs[k].i)
			c := &run.chunks[i>>run.shift-run.first]
			prefetch(uintptr(unsafe.Pointer(&c.off[i&(1<<run.shift-1)])))
		}
	}
	kg, k, _, val := decodeRow(run.row(run.from + int64(run.refs[j].i)))
	return append(append(dst, run.prefix[kg]...), k...), val
}

func (run *rowsRun) Release() {
	if run.back != nil && cap(run.refs) <= 1<<21 {
		refs := run.refs[:0]
		run.back.Store(&refs)
	}
	if run.backSpare != nil && cap(run.spare) <= 1<<21 {
		spare := run.spare[:0]
		run.backSpare.Store(&spare)
	}
	run.releaseMaps()
	run.refs, run.spare, run.chunks, run.prefix, run.back, run.backSpare = nil, nil, nil, nil, nil, nil
}

// releaseMaps lets go of the mapped chunks the run read.
func (run *rowsRun) releaseMaps() {
	for _, m := range run.maps {
		m.refs.Add(-1)
		m.release()
	}
	run.maps = nil
}

// Complete is called when checkpoint id is committed: the pending rows are
// clean if id covers them.
func (r *Rows) Complete(id int64) {
	if r.pendID == 0 || id < r.pendID {
		return
	}
	r.cleanTo, r.pendID = r.pendTo, 0
	r.comGen++ // a committed iterator must see them before any is dropped
	// segments holding clean rows go (the rows left of one that straddles
	// the line are sorted by the snapshots again)
	kept := r.segs[:0]
	for _, sg := range r.segs {
		if sg.a < r.cleanTo {
			r.releaseSeg(sg)
		} else {
			kept = append(kept, sg)
		}
	}
	clear(r.segs[len(kept):])
	r.segs = kept
	if r.tiered() && (r.bytes > r.budget || r.nmapped > 0) {
		r.drop()
	}
}

// Abort is called when checkpoint id failed: its rows go into the next
// snapshot again.
func (r *Rows) Abort(id int64) {
	if r.pendID != 0 && id == r.pendID {
		r.snapFrom, r.pendID = r.pendFrom, 0
	}
}

// Restore loads the rows of namespace ns (a side) of key groups
// [start, end) from rd: with a committed state it only notes their
// prefixes (the rows stay there), otherwise it adds them, clean (to
// memory, and tiered, from there to the spill DB as they overflow it).
func (r *Rows) Restore(rd checkpoint.StateReader, ns []byte, start, end int) error {
	var last []byte
	for kg := start; kg < end; kg++ {
		kp := r.keyPrefix(kg)
		scan := append(append([]byte(nil), kp...), NamespaceFrame(ns)...)
		err := rd.Scan(scan, func(key, val []byte) error {
			k := key[len(kp):]
			plen, ok := framedPrefix(k)
			if !ok {
				return fmt.Errorf("state: a row key that does not parse: %x", k)
			}
			if r.com == nil {
				r.Add(kg, k, plen, val)
				r.snapFrom, r.cleanTo = r.n, r.n
				return nil
			}
			if !bytes.Equal(last, k[:plen]) {
				last = append(last[:0], k[:plen]...)
				r.coldKeys.addHash(xxhash.Sum64(last))
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("restoring key group %d: %w", kg, err)
		}
	}
	r.snapFrom, r.cleanTo = r.n, r.n
	return nil
}

// headIndex maps a prefix hash to the index of its newest row: open
// addressing with linear probing, at most half full, one probe sequence
// per row added (a Go map took a lookup and an assignment, a third of
// Add's time).
type headIndex struct {
	slots []headSlot
	n     int
}

// headSlot: row is the index + 1 (0: empty).
type headSlot struct {
	h   uint64
	row int64
}

func (x *headIndex) Len() int { return x.n }

// set makes row the newest of hash h and returns the one before it (-1:
// none).
func (x *headIndex) set(h uint64, row int64) int64 {
	if 2*(x.n+1) > len(x.slots) {
		x.grow()
	}
	mask := uint64(len(x.slots) - 1)
	for p := mix(h) & mask; ; p = (p + 1) & mask {
		s := &x.slots[p]
		if s.row == 0 {
			s.h, s.row = h, row+1
			x.n++
			return -1
		}
		if s.h == h {
			prev := s.row - 1
			s.row = row + 1
			return prev
		}
	}
}

// prefetch starts loading the slot where set(h, ..) begins its probe.
func (x *headIndex) prefetch(h uint64) {
	if len(x.slots) > 0 {
		prefetch(uintptr(unsafe.Pointer(&x.slots[mix(h)&uint64(len(x.slots)-1)])))
	}
}

// get returns the newest row of hash h (false: none).
func (x *headIndex) get(h uint64) (int64, bool) {
	if x.n == 0 {
		return 0, false
	}
	mask := uint64(len(x.slots) - 1)
	for p := mix(h) & mask; ; p = (p + 1) & mask {
		s := &x.slots[p]
		if s.row == 0 {
			return 0, false
		}
		if s.h == h {
			return s.row - 1, true
		}
	}
}

// keepIf rebuilds the index with the entries keep accepts.
func (x *headIndex) keepIf(keep func(h uint64, row int64) bool) {
	old := x.slots
	x.slots, x.n = nil, 0
	for _, s := range old {
		if s.row != 0 && keep(s.h, s.row-1) {
			x.set(s.h, s.row-1)
		}
	}
}

func (x *headIndex) grow() {
	old := x.slots
	size := max(2*len(old), 64)
	for 2*x.n > size/2 { // after keepIf: sized for what is left
		size *= 2
	}
	x.slots, x.n = writtenSlice[headSlot](size), 0
	for _, s := range old {
		if s.row != 0 {
			x.set(s.h, s.row-1)
		}
	}
}

// mix spreads a hash's bits over the low ones the slots are picked by
// (xxhash's low bits are good already; keys handed in by tests may not be).
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return h
}
