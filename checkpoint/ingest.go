package checkpoint

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/objstorage"
	"github.com/cockroachdb/pebble/sstable"
	"github.com/cockroachdb/pebble/vfs"
)

// Commit writes a checkpoint's delta as sstables (one per key range of a
// large delta, written in parallel) and ingests them into the working DB,
// rather than inserting every write into the memtable: an
// insert into Pebble's skiplist costs a search of it per key, and the
// memtable is then flushed as an sstable anyway (Persist flushes before it
// links a checkpoint). Writing the sorted delta straight into a table file
// does the flush's work once, without the skiplist, and the ingestion is
// atomic: either the whole checkpoint (with its id) is in the working DB or
// none of it.
//
// The buffers hold sorted runs (an operator writes its keys in order; a
// subtask's buffer holds the runs of its chained operators and sources one
// after another, and subtasks own disjoint key groups), so the delta is put
// in key order by merging the runs: O(n log runs), with a last write of a
// key (in buffer order, then write order) winning, as the batch did.

// deltaRun is a sorted run of one buffer's ops: ops[i:end] of buffer b,
// or Puts [i:end] of a SortedRun ext, whose current Put (k, v) is read
// when the run advances, its key into one of two scratch buffers in turn
// (the key next returned stays valid until the run advances again).
type deltaRun struct {
	b      *Buffer
	i, end int
	ext    SortedRun
	k, v   []byte
	scr    [2][]byte
	flip   int
}

func (r *deltaRun) key() []byte {
	if r.ext != nil {
		return r.k
	}
	k, _, _ := r.b.at(r.i)
	return k
}

// at returns the run's current write.
func (r *deltaRun) at() (key, value []byte, del, merge bool) {
	if r.ext != nil {
		return r.k, r.v, false, false
	}
	key, value, del = r.b.at(r.i)
	return key, value, del, r.b.merge(r.i)
}

// keyAt appends the key of write i of the run to dst.
func (r *deltaRun) keyAt(i int, dst []byte) []byte {
	if r.ext != nil {
		k, _ := r.ext.At(i, dst)
		return k
	}
	k, _, _ := r.b.at(i)
	return append(dst, k...)
}

// search returns the first index in [lo, r.end) whose key is not below
// key (r.end if none); *scr is scratch.
func (r *deltaRun) search(lo int, key []byte, scr *[]byte) int {
	hi := r.end
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		*scr = r.keyAt(mid, (*scr)[:0])
		if bytes.Compare(*scr, key) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// load reads an external run's current Put.
func (r *deltaRun) load() {
	if r.ext != nil && r.i < r.end {
		r.k, r.v = r.ext.At(r.i, r.scr[r.flip][:0])
		r.scr[r.flip] = r.k
		r.flip ^= 1
	}
}

// deltaMerge yields the writes of a list of runs in key order, one per
// key (the write of the latest run, and the latest in a run, wins).
type deltaMerge struct {
	runs []deltaRun
	heap []int // indexes into runs; ordered by (key, run index)
	// lo, hi bound the keys of the file the merge is written to (nil:
	// unbounded): its share of the delta's range deletions (splitDelta)
	lo, hi []byte
}

func (m *deltaMerge) less(a, b int) bool {
	c := bytes.Compare(m.runs[a].key(), m.runs[b].key())
	return c < 0 || (c == 0 && a < b)
}

func (m *deltaMerge) down(i int) {
	h := m.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		j := l
		if r := l + 1; r < len(h) && m.less(h[r], h[l]) {
			j = r
		}
		if !m.less(h[j], h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

// init splits the buffers into sorted runs (a key smaller than the one
// before it starts a new run; equal keys stay in one run, in write order;
// a SortedRun is a run of its own) and builds the heap.
func (m *deltaMerge) init(bufs []*Buffer) {
	m.runs = m.runs[:0]
	for _, b := range bufs {
		if b == nil || len(b.ops) == 0 {
			continue
		}
		start := 0
		var prev []byte
		for i := range b.ops {
			if op := b.ops[i]; op.vLen == runOp {
				if i > start {
					m.runs = append(m.runs, deltaRun{b: b, i: start, end: i})
				}
				ext := b.runs[op.chunk]
				m.runs = append(m.runs, deltaRun{ext: ext, end: ext.Len()})
				start = i + 1
				continue
			}
			k, _, _ := b.at(i)
			if i > start && bytes.Compare(k, prev) < 0 {
				m.runs = append(m.runs, deltaRun{b: b, i: start, end: i})
				start = i
			}
			prev = k
		}
		if start < len(b.ops) {
			m.runs = append(m.runs, deltaRun{b: b, i: start, end: len(b.ops)})
		}
	}
	m.start()
}

// start loads every run's first write and builds the heap.
func (m *deltaMerge) start() {
	for i := range m.runs {
		m.runs[i].load()
	}
	m.heap = m.heap[:0]
	for i := range m.runs {
		m.heap = append(m.heap, i)
	}
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
}

// reset drops the runs (no reference to a committed run's memory).
func (m *deltaMerge) reset() {
	clear(m.runs)
	m.runs, m.heap = m.runs[:0], m.heap[:0]
}

// next returns the next key in order and its last write (a Merge is
// never one of several writes of its key: errMergeTwice); ok is false at
// the end. key and value alias the buffers.
func (m *deltaMerge) next() (key, value []byte, del, merge, ok bool, err error) {
	if len(m.heap) == 0 {
		return nil, nil, false, false, false, nil
	}
	first := true
	for len(m.heap) > 0 {
		r := &m.runs[m.heap[0]]
		k := r.key()
		if !first && !bytes.Equal(k, key) {
			break
		}
		wasMerge := merge
		key, value, del, merge = r.at()
		if !first && (merge || wasMerge) {
			err = errMergeTwice
		}
		first = false
		r.i++
		r.load()
		if r.i == r.end {
			last := len(m.heap) - 1
			m.heap[0] = m.heap[last]
			m.heap = m.heap[:last]
		}
		if len(m.heap) > 0 {
			m.down(0)
		}
	}
	return key, value, del, merge, true, err
}

// ingestPrefix names Commit's table files in taskowned/ until the ingest
// moves them into the working DB (leftovers of a crash are removed with
// the snapshots, removeSnaps).
const ingestPrefix = "ingest-"

// NoSync is a file whose Sync does nothing: a table file of a scratch DB
// written for an ingest (ingestDelta; the state tier's spills), which
// Pebble's writer would otherwise fsync when it finishes.
type NoSync struct{ vfs.File }

func (NoSync) Sync() error { return nil }

// TableWritable is the writable of a table file written for an ingest
// (ingestDelta; the state tier's spills): f's writes in chunks of
// tableWriteBuffer bytes. Pebble's own (objstorageprovider.NewFileWritable)
// buffers 4 KiB, a write(2) per data block: 114 K calls in a q23 run of
// 1.5 M events, a share of the join queries' system time. Finish syncs
// (as f's Sync does) and closes f.
func TableWritable(f vfs.File) objstorage.Writable { return newTableWritable(f, false) }

// newTableWritable is TableWritable, summing what it writes when sum.
func newTableWritable(f vfs.File, sum bool) *tableWritable {
	return &tableWritable{f: f, buf: make([]byte, 0, tableWriteBuffer), sum: sum}
}

const tableWriteBuffer = 256 << 10

type tableWritable struct {
	f   vfs.File
	buf []byte
	// sum: crc is the CRC-32C of the n bytes written so far (deltasum.go)
	sum bool
	crc uint32
	n   int64
}

// write writes p to the file (and its sum).
func (w *tableWritable) write(p []byte) error {
	if w.sum {
		w.crc = crc32.Update(w.crc, castagnoli, p)
		w.n += int64(len(p))
	}
	_, err := w.f.Write(p)
	return err
}

func (w *tableWritable) Write(p []byte) error {
	if len(w.buf)+len(p) > cap(w.buf) {
		if err := w.flush(); err != nil {
			return err
		}
		if len(p) >= cap(w.buf) {
			return w.write(p)
		}
	}
	w.buf = append(w.buf, p...)
	return nil
}

func (w *tableWritable) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	err := w.write(w.buf)
	w.buf = w.buf[:0]
	return err
}

func (w *tableWritable) Finish() error {
	err := w.flush()
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.buf = nil
	return err
}

func (w *tableWritable) Abort() {
	_ = w.f.Close()
	w.buf = nil
}

// ingestDelta writes the merged buffers and the checkpoint id as
// sstables in taskowned/ and ingests them (Pebble links them into the
// working DB and removes the originals; one Ingest of several files is
// atomic too). A large delta is split into key ranges written by as many
// goroutines as there are cores (splitDelta): the commit of a join's
// appended rows (hundreds of MB a checkpoint) ran on one core while the
// job's other cores waited for the checkpoint to end. Caller holds mu.
func (s *Store) ingestDelta(id int64, bufs []*Buffer) error {
	fs := s.fs
	// the deltas' sums are noted by writeDelta and named by the Ingest
	// below (deltasum.go); none outlives this call (a failed attempt's
	// could match a retry's file of the same first key and size)
	defer s.sums.dropWritten()
	prepareRuns(bufs)
	m := &s.merge
	m.init(bufs)
	defer m.reset()
	ranges := mergeRanges(bufs)
	parts := s.splitDelta(m)
	paths := make([]string, len(parts))
	for p := range parts {
		name := ingestPrefix + strconv.FormatInt(id, 10)
		if len(parts) > 1 {
			name += "-" + strconv.Itoa(p)
		}
		paths[p] = fs.PathJoin(s.ownedDir, name+".sst")
	}
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for p := 1; p < len(parts); p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			errs[p] = s.writeDelta(id, paths[p], parts[p], ranges, false)
		}(p)
	}
	errs[0] = s.writeDelta(id, paths[0], parts[0], ranges, true)
	wg.Wait()
	for _, p := range s.parts {
		p.reset() // (m too, deferred: no reference to a committed run)
	}
	removeAll := func() {
		for _, path := range paths {
			_ = fs.Remove(path)
		}
	}
	for _, err := range errs {
		if err != nil {
			removeAll()
			return err
		}
	}
	if err := s.guard(true, func() error { return s.db.Ingest(paths) }); err != nil {
		removeAll()
		return fmt.Errorf("checkpoint %d: committing state: %w", id, err)
	}
	s.lastFiles = len(paths)
	return nil
}

// Preparer is a SortedRun with work to do before it is read (a join
// side's rows sort themselves): Commit prepares the runs of a checkpoint
// on goroutines of its own, up to commitWays at once, before it merges
// them.
type Preparer interface{ Prepare() }

func prepareRuns(bufs []*Buffer) {
	var preps []Preparer
	for _, b := range bufs {
		if b == nil {
			continue
		}
		for _, r := range b.runs {
			if p, ok := r.(Preparer); ok {
				preps = append(preps, p)
			}
		}
	}
	if len(preps) == 0 {
		return
	}
	ways := min(commitWays(), len(preps))
	next := make(chan Preparer, len(preps))
	for _, p := range preps {
		next <- p
	}
	close(next)
	var wg sync.WaitGroup
	for w := 1; w < ways; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				p.Prepare()
			}
		}()
	}
	for p := range next {
		p.Prepare()
	}
	wg.Wait()
}

// mergeRanges returns the range deletions of the buffers as disjoint
// ranges in key order (overlapping and touching ones joined).
func mergeRanges(bufs []*Buffer) []keyRange {
	var rs []keyRange
	for _, b := range bufs {
		if b != nil {
			rs = append(rs, b.ranges...)
		}
	}
	if len(rs) == 0 {
		return nil
	}
	slices.SortFunc(rs, func(a, b keyRange) int { return bytes.Compare(a.start, b.start) })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if bytes.Compare(r.start, last.end) <= 0 {
			if bytes.Compare(r.end, last.end) > 0 {
				last.end = r.end
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// clip returns r within [lo, hi) (nil: unbounded); ok is false when
// nothing of it is.
func (r keyRange) clip(lo, hi []byte) (keyRange, bool) {
	if lo != nil && bytes.Compare(r.start, lo) < 0 {
		r.start = lo
	}
	if hi != nil && bytes.Compare(r.end, hi) > 0 {
		r.end = hi
	}
	return r, bytes.Compare(r.start, r.end) < 0
}

// writeDelta writes the writes of merge m, the part of the range
// deletions ranges within its bounds and, withID, the checkpoint id first
// as the sstable path. Not synced here: Commit is the synchronous part of
// a checkpoint and the working DB is scratch; Persist syncs every new
// table file before it moves it into shared/.
func (s *Store) writeDelta(id int64, path string, m *deltaMerge, ranges []keyRange, withID bool) error {
	fs := s.fs
	f, err := fs.Create(path)
	if err != nil {
		return fmt.Errorf("checkpoint %d: creating %s: %w", id, path, err)
	}
	wo := s.popts.MakeWriterOptions(0, s.db.FormatMajorVersion().MaxTableFormat())
	if s.o.CompressionPerLevel == nil {
		var d deltaSample
		raw, c := d.measure(m)
		if c > 0 && float64(raw) < adaptiveMinRatio*float64(c) {
			wo.Compression = pebble.NoCompression
			s.rawDeltas.Add(1)
		}
	}
	// The file is fsynced by Persist; meanwhile its written bytes go to
	// the disk every deltaBytesPerSync (sync_file_range, not waiting for
	// it), so that the fsync finds little left to write.
	sf := vfs.NewSyncingFile(f, vfs.SyncingFileOptions{BytesPerSync: deltaBytesPerSync, NoSyncOnClose: true})
	tw := newTableWritable(NoSync{sf}, true)
	w := sstable.NewWriter(tw, wo)
	var first []byte
	closed := false
	fail := func(err error) error {
		if !closed {
			_ = w.Close()
		}
		_ = fs.Remove(path)
		return err
	}
	if withID {
		var idb [8]byte
		binary.BigEndian.PutUint64(idb[:], uint64(id))
		first = keyCheckpointID
		if err := w.Set(keyCheckpointID, idb[:]); err != nil {
			return fail(fmt.Errorf("checkpoint %d: writing %s: %w", id, path, err))
		}
	}
	for {
		k, v, del, merge, ok, err := m.next()
		if err != nil {
			return fail(fmt.Errorf("checkpoint %d: %q: %w", id, k, err))
		}
		if !ok {
			break
		}
		if len(k) == 0 || k[0] == tagInternal {
			return fail(fmt.Errorf("checkpoint %d: state key %q is empty or in the reserved subspace 0x00", id, k))
		}
		if first == nil {
			first = bytes.Clone(k)
		}
		switch {
		case del:
			err = w.Delete(k)
		case merge:
			err = w.Merge(k, v)
		default:
			err = w.Set(k, v)
		}
		if err != nil {
			return fail(fmt.Errorf("checkpoint %d: writing %s: %w", id, path, err))
		}
	}
	for _, r := range ranges {
		r, ok := r.clip(m.lo, m.hi)
		if !ok {
			continue
		}
		if first == nil || bytes.Compare(r.start, first) < 0 {
			first = bytes.Clone(r.start) // the file's smallest key (deltasum.go)
		}
		if err := w.DeleteRange(r.start, r.end); err != nil {
			return fail(fmt.Errorf("checkpoint %d: writing %s: %w", id, path, err))
		}
	}
	closed = true
	if err := w.Close(); err != nil {
		return fail(fmt.Errorf("checkpoint %d: writing %s: %w", id, path, err))
	}
	if first != nil {
		s.sums.wrote(id, first, tw.n, tw.crc)
	}
	return nil
}

// deltaBytesPerSync is how often a delta's table file starts the
// writeback of what was written (see writeDelta).
const deltaBytesPerSync = 1 << 20

// commitWays is the most key ranges a Commit writes at once.
var commitWays = func() int { return min(runtime.GOMAXPROCS(0), 8) }

// splitMin is the fewest writes a delta has before Commit writes it in
// parallel key ranges; splitSamples the keys sampled to choose them.
const (
	splitMin     = 1 << 16
	splitSamples = 1024
)

// splitDelta returns the merges Commit writes, one per key range: m
// itself for a small delta or one core; otherwise up to GOMAXPROCS merges
// over the runs of m cut at split keys chosen from a sample of the runs'
// keys (each run gives samples in proportion to its length). Equal keys
// stay in one range (each run is cut at the first key not below a
// split), so the last write of a key wins within its range as in one
// merge.
func (s *Store) splitDelta(m *deltaMerge) []*deltaMerge {
	n := 0
	for i := range m.runs {
		n += m.runs[i].end - m.runs[i].i
	}
	m.lo, m.hi = nil, nil
	k := commitWays()
	if k < 2 || n < splitMin {
		return []*deltaMerge{m}
	}
	var samples [][]byte
	var scr []byte
	for i := range m.runs {
		r := &m.runs[i]
		c := (r.end - r.i) * splitSamples / n
		for j := 1; j <= c; j++ {
			scr = r.keyAt(r.i+(r.end-r.i)*j/(c+1), scr[:0])
			samples = append(samples, append([]byte(nil), scr...))
		}
	}
	if len(samples) < k {
		return []*deltaMerge{m}
	}
	slices.SortFunc(samples, bytes.Compare)
	var splits [][]byte
	for p := 1; p < k; p++ {
		c := samples[len(samples)*p/k]
		if len(splits) == 0 || bytes.Compare(c, splits[len(splits)-1]) > 0 {
			splits = append(splits, c)
		}
	}
	if len(splits) == 0 {
		return []*deltaMerge{m}
	}
	for len(s.parts) < len(splits) {
		s.parts = append(s.parts, &deltaMerge{})
	}
	parts := append([]*deltaMerge{m}, s.parts[:len(splits)]...)
	for p := 1; p < len(parts); p++ {
		parts[p].runs = parts[p].runs[:0]
	}
	all := m.runs
	m.runs = nil
	for i := range all {
		r := all[i]
		lo := r.i
		for p := range parts {
			hi := r.end
			if p < len(splits) {
				hi = r.search(lo, splits[p], &scr)
			}
			if hi > lo {
				sub := deltaRun{b: r.b, ext: r.ext, i: lo, end: hi}
				parts[p].runs = append(parts[p].runs, sub)
			}
			lo = hi
		}
	}
	// Each merge's file covers the keys from its split on up to the next
	// merge's (an empty range's keys go to the merge before it), so the
	// files' shares of the range deletions are disjoint and cover them.
	out := parts[:0]
	for p, part := range parts {
		if len(part.runs) == 0 {
			continue
		}
		part.start()
		part.lo, part.hi = nil, nil
		if len(out) > 0 {
			part.lo = splits[p-1]
			out[len(out)-1].hi = part.lo
		}
		out = append(out, part)
	}
	return out
}
