package state

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble"
)

// Committed is the keyed state of the last committed checkpoint as the
// checkpoint store holds it (its working DB): keys are
// checkpoint.KeyedPrefix(operator id, key group) followed by the KV's
// framed key, values are what KV.Snapshot wrote. *checkpoint.Store
// implements it.
//
// A tiered KV given one (Options.Committed, checkpointing on, no TTL)
// keeps one LSM for its cold state instead of two, as Flink's RocksDB
// backend does: an entry whose current value a committed checkpoint holds
// (clean) leaves memory without a write, and a key missing from memory
// and from the spill DB is read from the committed state. Dirty entries
// (changed since) stay in memory until committed, unless the hot entries
// take about the whole budget; the spill DB then only takes those and
// deletions of keys the committed state may still hold (an empty value: a
// tombstone that masks it). A restore writes nothing: the restored keys
// are already in the committed state.
//
// The invariants that make this one consistent view:
//   - an entry is clean when its mark (the epoch of its last change) is
//     below cleanBelow, which is raised to just past the pending
//     snapshot's epoch once the store has committed it (noteCommitted):
//     every change up to it is in the committed state;
//   - only a clean entry is dropped without a write (and only when the
//     spill DB holds no older copy of it, which would shadow the committed
//     one);
//   - lookup order is memory, then the spill DB (a tombstone ends it),
//     then the committed state;
//   - a removed entry that a snapshot may have written (every one but a
//     PutNew entry no snapshot has seen: fresh) leaves a tombstone in the
//     spill DB;
//   - a kept committed iterator is replaced when cleanBelow rises, before
//     any entry that rise made clean can be dropped;
//   - a snapshot reads a changed key without a live entry from the spill
//     DB, then from the committed state (an entry merged back by an abort
//     may have been dropped clean).
type Committed interface {
	// NewCommittedIter opens an iterator over the committed state. The
	// caller closes it before the store changes its working DB (a restore
	// between job attempts).
	NewCommittedIter() (*pebble.Iterator, error)
	// CommittedID is the id of the last checkpoint committed to it (0:
	// none). Once it reaches a KV's pending snapshot, that snapshot's
	// writes are readable, whatever the checkpoint's outcome.
	CommittedID() int64
	// CommittedGet reads one key (pebble.ErrNotFound: absent) of the
	// current committed state; the value is valid until closer is closed.
	CommittedGet(key []byte) (value []byte, closer io.Closer, err error)
}

// noteCommitted makes the pending snapshot's entries clean once the
// committed state holds them: when the store has committed its checkpoint
// (before the checkpoint completes: the working DB keeps a commit even if
// the checkpoint is then aborted, and an abort merges the entries back
// into the change set, whose snapshot reads a dropped one back from the
// committed state: fetchCold).
func (s *KV) noteCommitted() {
	if s.com != nil && s.pendingID != 0 && s.com.CommittedID() >= s.pendingID {
		s.pendingCommitted()
	}
}

// pendingCommitted records that the committed state holds the pending
// snapshot's writes (a commit seen by noteCommitted, or Complete): every
// change up to its epoch is clean, and reads of the committed state must
// see them (kept iterators are replaced).
func (s *KV) pendingCommitted() {
	if s.cleanBelow <= s.pendEpoch {
		s.cleanBelow = s.pendEpoch + 1
		s.comGen++
	}
}

// growFilter is a Bloom filter that grows without the keys being read
// again: a chain of coldFilters, each four times the size of the one
// before. A key added is never removed.
type growFilter struct {
	fs []coldFilter
}

func (p *growFilter) add(k []byte) { p.addHash(xxhash.Sum64(k)) }

// addHash adds a key by its hash (xxhash.Sum64 of the key, as add).
func (p *growFilter) addHash(h uint64) {
	if len(p.fs) == 0 || p.fs[len(p.fs)-1].full() {
		bits := uint64(coldFilterMinBits)
		if len(p.fs) > 0 {
			bits = 4 * (p.fs[len(p.fs)-1].mask + 1)
		}
		var f coldFilter
		f.size(bits)
		p.fs = append(p.fs, f)
	}
	p.fs[len(p.fs)-1].addHash(h)
}

// prefetch starts loading the blocks that mayHoldHash(h) reads from
// filters larger than a cache's share (the smaller ones stay cached).
func (p *growFilter) prefetch(h uint64) {
	for i := range p.fs {
		if f := &p.fs[i]; len(f.bits) >= 1<<15 { // 256 KiB
			b, _ := f.probes(h)
			prefetch(uintptr(unsafe.Pointer(&f.bits[b])))
		}
	}
}

// mayHold reports whether k may have been added (false: certainly not).
func (p *growFilter) mayHold(k []byte) bool {
	if len(p.fs) == 0 {
		return false
	}
	return p.mayHoldHash(xxhash.Sum64(k)) // hashed once for every filter of the chain
}

// mayHoldHash is mayHold of a key by its hash.
func (p *growFilter) mayHoldHash(h uint64) bool {
	for i := range p.fs {
		if p.fs[i].mayHoldHash(h) {
			return true
		}
	}
	return false
}

// prefixFilter is a growFilter over the framed prefixes (namespace and
// key frames, framedPrefix; a key that does not parse is its own prefix)
// of every key that may be in a KV's cold tier: written to the spill DB,
// dropped from memory while clean (then in the committed state) or
// restored. A lookup or prefix scan whose prefix it does not hold never
// reads Pebble: a join probe for a key whose rows are all in memory (or
// that has none, as a new auction in Nexmark q20) costs no seek. mayHold
// takes the filter key (filterKey).
type prefixFilter struct {
	growFilter
}

// filterKey is the part of k the filter is keyed by.
func filterKey(k []byte) []byte {
	if n, ok := framedPrefix(k); ok {
		return k[:n]
	}
	return k
}

// add adds framed key k's prefix.
func (p *prefixFilter) add(k []byte) { p.growFilter.add(filterKey(k)) }

// scanMayBeCold reports whether a key with the given prefix may be cold:
// a prefix of whole namespace and key frames (or longer) is looked up in
// the filter; a shorter one may match anything.
func (p *prefixFilter) scanMayBeCold(prefix []byte) bool {
	if n, ok := framedPrefix(prefix); ok {
		return p.mayHold(prefix[:n])
	}
	return true
}

// keptIter returns *it, a committed iterator kept across reads, first
// replacing it when the reader's generation moved from the one it was
// opened at (*gen) to cur: a rise of what counts as clean, after which the
// iterator must see the commits that made entries clean before any of them
// is dropped.
func keptIter(com Committed, it **pebble.Iterator, gen *uint64, cur uint64) (*pebble.Iterator, error) {
	if *it != nil && *gen != cur {
		err := (*it).Close()
		*it = nil
		if err != nil {
			return nil, err
		}
	}
	if *it == nil {
		n, err := com.NewCommittedIter()
		if err != nil {
			return nil, err
		}
		*it, *gen = n, cur
	}
	return *it, nil
}

// keptComIter is keptIter at the KV's generation.
func (s *KV) keptComIter(it **pebble.Iterator, gen *uint64) (*pebble.Iterator, error) {
	return keptIter(s.com, it, gen, s.comGen)
}

// comPoint reads single keys of the committed state (a KV's or a tiered
// Table's point reads) with CommittedGet: the working DB's Bloom filters
// skip the tables without the key, and a read always sees the last
// commit (no iterator to keep or replace).
type comPoint struct {
	key []byte // the key read
	val []byte // its value, copied
}

// get reads the committed value of full state key prefix+k; the value is
// valid until the next read.
func (p *comPoint) get(com Committed, prefix, k []byte) ([]byte, bool, error) {
	p.key = append(append(p.key[:0], prefix...), k...)
	v, closer, err := com.CommittedGet(p.key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	p.val = append(p.val[:0], v...)
	err = closer.Close()
	return p.val, true, err
}

// comGet reads framed key k of key group kg from the committed state; the
// value is valid until the next read.
func (s *KV) comGet(kg int, k []byte) ([]byte, bool, error) {
	return s.comPt.get(s.com, s.keyPrefix(kg), k)
}

// loadCold brings framed key k of key group kg into memory from the cold
// tier (nil: not there, or deleted): the spill DB first, then the
// committed state. It never evicts: the caller is about to use the entry.
func (s *KV) loadCold(kg int, k []byte) *kvEnt {
	if s.cold == nil || !s.filter.mayHold(filterKey(k)) {
		return nil
	}
	if s.cold.used {
		skg, last, val, ok, tomb, err := s.cold.get(k)
		if err != nil {
			panic(err) // local scratch DB failure: nothing to recover
		}
		if tomb {
			return nil
		}
		if ok {
			return s.cold.loaded(s, k, skg, last, val, true)
		}
	}
	if s.com == nil {
		return nil
	}
	val, ok, err := s.comGet(kg, k)
	if err != nil {
		panic(fmt.Errorf("state: reading the committed state: %w", err))
	}
	if !ok {
		return nil
	}
	return s.cold.loaded(s, k, kg, s.now, val, false)
}

// comEnt is a committed entry of a slow scan (comSlow).
type comEnt struct{ k, v []byte }

// comSlow collects the committed entries of every key group of the
// instance whose framed key has prefix lo (from: is >= lo), sorted by
// framed key: the committed state is ordered by key group first, so a
// scan across key groups (tests, Len) cannot stream it.
func (s *KV) comSlow(lo []byte, from bool) ([]comEnt, error) {
	var out []comEnt
	it, err := s.com.NewCommittedIter()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	for kg := s.o.KeyGroupStart; kg < s.kgEnd(); kg++ {
		p := s.keyPrefix(kg)
		lower := append(append([]byte(nil), p...), lo...)
		upper := prefixEnd(append([]byte(nil), p...))
		if !from {
			upper = prefixEnd(append([]byte(nil), lower...))
		}
		it.SetBounds(lower, upper)
		for ok := it.First(); ok; ok = it.Next() {
			out = append(out, comEnt{k: bytes.Clone(it.Key()[len(p):]), v: bytes.Clone(it.Value())})
		}
		if err := it.Error(); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b comEnt) int { return bytes.Compare(a.k, b.k) })
	return out, nil
}

// kgEnd is the end of the instance's key-group range.
func (s *KV) kgEnd() int {
	if s.o.KeyGroupEnd > 0 {
		return s.o.KeyGroupEnd
	}
	return s.o.MaxParallelism
}
