package checkpoint

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
)

const (
	sharedDirName    = "shared"
	taskownedDirName = "taskowned"
	workingDBName    = "db"
	snapPrefix       = "snap-"
)

// ErrClosed is returned by operations on a closed Store.
var ErrClosed = errors.New("checkpoint: store is closed")

// Store is one job's state store: a working Pebble DB holding the state of
// the last committed checkpoint, plus the job's checkpoint directory.
//
// Commit and Reader may run concurrently with Persist; Persist, Abort and
// RestoreLatest are serialised.
type Store struct {
	o                                  Options
	fs                                 vfs.FS
	jobDir, sharedDir, ownedDir, dbDir string

	// pmu serialises Persist, Abort, RestoreLatest and Close; it guards gen
	// and index. Lock order: pmu, then mu.
	pmu sync.Mutex
	// gen names this working DB's files in shared/: Pebble file numbers are
	// unique only within one DB, and every Open/Restore starts a new one.
	gen string
	// index maps a working-DB sstable name to its copy in shared/ with the
	// size and checksum computed once, when it entered shared/.
	index map[string]fileRef

	// mu guards the working DB, lastID and closed.
	mu sync.RWMutex
	db *pebble.DB
	// rdb is db for NewCommittedIter, read without mu: a reader must not
	// wait for a Commit's ingest
	rdb atomic.Pointer[pebble.DB]
	// cache is the working DB's block cache (Options.CacheSize; nil:
	// Pebble's default), kept across the DBs a restore installs
	cache *pebble.Cache
	// committedID is lastID for CommittedID, read without mu
	committedID atomic.Int64
	popts       *pebble.Options // db's options (sstable writer options for Commit)
	sums        deltaSums       // CRCs of deltas as written (deltasum.go)
	summed      atomic.Int64    // new table files Persist took a written sum of (tests)
	// rawDeltas counts the delta files written uncompressed (compress.go).
	rawDeltas  atomic.Int64
	merge      deltaMerge    // Commit's merge of the buffers' runs, reused
	parts      []*deltaMerge // Commit's merges of further key ranges, reused
	lastFiles  int           // table files the last Commit ingested
	lastID     int64         // last committed checkpoint id (0: none)
	lastSyncMS int64         // duration of that commit
	closed     bool
	broken     error // why the working DB was abandoned (see guard)

	abortMu sync.Mutex
	aborted map[int64]bool

	// maxID is the highest checkpoint id this job has used (see MaxID).
	maxID atomic.Int64

	// baseDir and base are the checkpoint a Restore started from (in
	// another job's directory): RestoreLatest returns to it while the job
	// has no complete checkpoint of its own. Guarded by pmu.
	baseDir string
	base    *metaBody
	// spDir and sp are the savepoint a Restore started from, the same role
	// as base for a savepoint. At most one of base and sp is set. Guarded
	// by pmu.
	spDir string
	sp    *savepointBody
}

// Open creates <Dir>/<JobID>/{shared,taskowned}/ and an empty working
// Pebble DB under taskowned/. Checkpoints already in the job directory are
// left alone (Persist refuses to overwrite a complete one).
func Open(o Options) (*Store, error) {
	s, err := newStore(o)
	if err != nil {
		return nil, err
	}
	s.pmu.Lock()
	defer s.pmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.installWorking("", nil); err != nil {
		return nil, err
	}
	return s, nil
}

// newStore validates o and creates the job's directories (synced).
func newStore(o Options) (*Store, error) {
	o, err := o.validate()
	if err != nil {
		return nil, err
	}
	fs := o.FS
	s := &Store{o: o, fs: fs, aborted: map[int64]bool{}}
	s.jobDir = fs.PathJoin(o.Dir, o.JobID)
	s.sharedDir = fs.PathJoin(s.jobDir, sharedDirName)
	s.ownedDir = fs.PathJoin(s.jobDir, taskownedDirName)
	s.dbDir = fs.PathJoin(s.ownedDir, workingDBName)
	for _, d := range []string{s.sharedDir, s.ownedDir} {
		if err := mkdirAllSynced(fs, d); err != nil {
			return nil, fmt.Errorf("checkpoint: creating %s: %w", d, err)
		}
	}
	for _, d := range []struct{ dir, prefix string }{{s.jobDir, "chk-"}, {s.ownedDir, snapPrefix}} {
		id, err := maxIDIn(fs, d.dir, d.prefix)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: listing %s: %w", d.dir, err)
		}
		s.noteID(id)
	}
	return s, nil
}

// maxIDIn returns the largest n of the entries <prefix><n> of dir (0: none).
func maxIDIn(fs vfs.FS, dir, prefix string) (int64, error) {
	names, err := fs.List(dir)
	if err != nil {
		return 0, err
	}
	var max int64
	for _, n := range names {
		if !strings.HasPrefix(n, prefix) {
			continue
		}
		id, err := strconv.ParseInt(n[len(prefix):], 10, 64)
		if err == nil && id > max {
			max = id
		}
	}
	return max, nil
}

// noteID raises the high-water mark of MaxID to id.
func (s *Store) noteID(id int64) {
	for {
		cur := s.maxID.Load()
		if id <= cur || s.maxID.CompareAndSwap(cur, id) {
			return
		}
	}
}

// MaxID is the highest checkpoint id this job has used, complete or not:
// the largest n of any chk-<n> directory (with or without _metadata) and
// taskowned/snap-<n> in the job directory when the store was opened; every
// id given since to Commit, Persist, PersistSavepoint or Abort, whether it
// succeeded or not; and, for a restored store, the id of the checkpoint or
// savepoint it was restored from and of every chk-<n> directory in that
// checkpoint's job directory. 0 when there is none. A runtime that numbers
// its next checkpoint MaxID()+1 never reuses an id, as Flink's checkpoint id
// counter (ids of savepoints an earlier process wrote elsewhere are not
// known). Safe for concurrent use, also after Close.
func (s *Store) MaxID() int64 { return s.maxID.Load() }

// mkdirAllSynced creates dir and its missing parents and syncs the parent of
// every directory it created, so the new entries survive a crash.
func mkdirAllSynced(fs vfs.FS, dir string) error {
	var missing []string
	for p := dir; ; {
		if _, err := fs.Stat(p); err == nil {
			break
		} else if !isNotExist(err) {
			return err
		}
		missing = append(missing, p)
		parent := fs.PathDir(p)
		if parent == p || parent == "" || parent == "." {
			break
		}
		p = parent
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		parent := fs.PathDir(missing[i])
		if parent == missing[i] || parent == "" {
			continue
		}
		if err := syncDir(fs, parent); err != nil {
			return err
		}
	}
	return nil
}

func newGen() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; fall back to time.
		binary.BigEndian.PutUint64(b[:], uint64(time.Now().UnixNano()))
	}
	return hex.EncodeToString(b[:])
}

type pebbleLogger struct{ o Options }

func (l pebbleLogger) Infof(string, ...any) {}
func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.o.logf("pebble fatal: "+format, args...)
	panic(fmt.Sprintf("pebble: "+format, args...))
}

func (s *Store) pebbleOptions() *pebble.Options {
	o := s.o
	var cache *pebble.Cache
	if o.CacheSize > 0 {
		if s.cache == nil {
			s.cache = pebble.NewCache(o.CacheSize)
		}
		cache = s.cache
	}
	return &pebble.Options{
		Cache:        cache,
		FS:           s.fs,
		MemTableSize: 32 << 20,
		// No WAL: the working DB is never reopened (Open installs an empty
		// one, a restore rebuilds it from a persisted checkpoint) and
		// Persist flushes the memtable before it links the files, so a
		// WAL would only write every checkpoint's delta a second time and
		// fsync it.
		DisableWAL: true,
		// The working DB is written (one flush a checkpoint) and read only
		// by restores; most of a checkpoint's keys overwrite keys of the
		// last ones (changed groups), so every L0 flush overlaps the whole
		// state and a compaction rewrites it. Compacting after 16 flushes
		// instead of Pebble's 4 cuts that work to a quarter; the cost is
		// up to 16 checkpoints' deltas of superseded versions in the
		// incremental checkpoints' shared files.
		L0CompactionThreshold: 16,
		L0StopWritesThreshold: 64,
		// The level base is large (Pebble's default is 64 MiB) so that
		// the above holds: with dynamic level sizes Pebble puts an
		// ingested delta into the level above the bottom one whenever
		// the bottom level is larger than LBaseMaxBytes, and a delta of
		// an append-mostly state (a join side's rows) is then far larger
		// than that level's target, so every checkpoint compacted the
		// whole state (q7 over 3 M events: 29% of the CPU). Up to this
		// size the LSM is L0 plus L6: deltas stay in L0 until 16 of them
		// are merged into L6 at once; beyond it Pebble levels as usual.
		LBaseMaxBytes: 1 << 30,
		// Every checkpoint copies the MANIFEST: rotate it early so that it
		// stays small and checkpoints stay incremental.
		MaxManifestFileSize:         64 << 10,
		FormatMajorVersion:          pebble.FormatNewest,
		Logger:                      pebbleLogger{o},
		DisableAutomaticCompactions: o.disableCompactions,
		// Whole-key Bloom filters: operators read single cold keys of the
		// committed state (CommittedGet), and without filters such a read
		// seeks every L0 file and level.
		Levels: filteredLevels(o.CompressionPerLevel),
		EventListener: &pebble.EventListener{
			BackgroundError: func(err error) { o.logf("checkpoint: state store background error: %v", err) },
			TableIngested:   s.sums.ingested,
		},
	}
}

// installWorking replaces the working DB with a fresh one: empty when b is
// nil, else a copy of checkpoint b whose files are under srcJobDir (already
// verified). Callers hold pmu and mu.
func (s *Store) installWorking(srcJobDir string, b *metaBody) error {
	fs := s.fs
	if s.db != nil {
		if err := s.guard(true, s.db.Close); err != nil {
			s.o.logf("checkpoint: closing working state: %v", err)
		}
		s.setDB(nil)
	}
	s.setLastID(0)
	s.lastSyncMS = 0
	s.removeSnaps()
	if err := fs.RemoveAll(s.dbDir); err != nil {
		return fmt.Errorf("checkpoint: clearing %s: %w", s.dbDir, err)
	}
	if err := fs.MkdirAll(s.dbDir, 0o755); err != nil {
		return fmt.Errorf("checkpoint: creating %s: %w", s.dbDir, err)
	}
	if b != nil {
		for _, r := range b.Files {
			src := fs.PathJoin(srcJobDir, r.Path)
			dst := fs.PathJoin(s.dbDir, r.Local)
			var err error
			if strings.HasSuffix(r.Local, ".sst") {
				err = vfs.LinkOrCopy(fs, src, dst) // immutable: a link is safe
			} else {
				err = vfs.Copy(fs, src, dst) // Pebble may reuse or append: copy
			}
			if err != nil {
				return fmt.Errorf("checkpoint %d: copying %s: %w", b.ID, src, err)
			}
		}
	}
	s.sums.reset()
	popts := s.pebbleOptions().EnsureDefaults()
	db, err := pebble.Open(s.dbDir, popts)
	if err != nil {
		if b != nil {
			return fmt.Errorf("checkpoint %d: opening restored state: %w", b.ID, err)
		}
		return fmt.Errorf("checkpoint: opening state store %s: %w", s.dbDir, err)
	}
	s.gen = newGen()
	s.index = map[string]fileRef{}
	if b != nil {
		id, err := readLastID(db)
		if err == nil && id != b.ID {
			err = fmt.Errorf("state holds checkpoint %d", id)
		}
		if err != nil {
			db.Close()
			return fmt.Errorf("checkpoint %d (%s): inconsistent state: %w", b.ID, b.Path, err)
		}
		s.setLastID(id)
		if cleanPath(srcJobDir) == cleanPath(s.jobDir) {
			// Our own checkpoint: its shared files stay shared.
			for _, r := range b.Files {
				if strings.HasSuffix(r.Local, ".sst") {
					s.index[r.Local] = r
				}
			}
		}
	}
	s.setDB(db)
	s.popts = popts
	s.broken = nil
	return nil
}

func cleanPath(p string) string {
	for len(p) > 1 && strings.HasSuffix(p, "/") {
		p = p[:len(p)-1]
	}
	return p
}

func readLastID(db *pebble.DB) (int64, error) {
	v, closer, err := db.Get(keyCheckpointID)
	if err != nil {
		if errors.Is(err, pebble.ErrNotFound) {
			return 0, nil
		}
		return 0, err
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("bad checkpoint id record (%d bytes)", len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// removeSnaps removes leftover temporary Pebble checkpoints and Commit's
// table files in taskowned/ (no Commit may be running: callers hold mu).
func (s *Store) removeSnaps() { s.removeTemps(true) }

// removeTemps removes leftover temporary Pebble checkpoints, and with
// ingests Commit's table files, in taskowned/. Persist's cleanup leaves
// the table files alone: a Commit may be writing one concurrently (a
// removed file failed that Commit, TestPersistConcurrentWithCommit).
func (s *Store) removeTemps(ingests bool) {
	names, err := s.fs.List(s.ownedDir)
	if err != nil {
		return
	}
	for _, n := range names {
		if strings.HasPrefix(n, snapPrefix) || (ingests && strings.HasPrefix(n, ingestPrefix)) {
			if err := s.fs.RemoveAll(s.fs.PathJoin(s.ownedDir, n)); err != nil {
				s.o.logf("checkpoint: removing %s: %v", n, err)
			}
		}
	}
}

// Commit is the synchronous part of checkpoint id: it applies all buffers
// (for a key written more than once, the last write in buffer order, then
// write order, wins) together with the checkpoint id itself, as one
// sstable ingested into the working DB (ingest.go), not synced (the working
// DB is scratch: Persist makes the state durable). After it returns, the
// working DB holds the state of id. ids must grow. The buffers are reset on
// success. Keys must not be empty or start with 0x00 (reserved). A failed
// Commit applies nothing: the working DB still holds the previous id, the
// operators keep the checkpoint's changes pending (as for a checkpoint
// aborted after StepCommitted) and the next checkpoint writes those keys
// again with their current values.
func (s *Store) Commit(id int64, bufs []*Buffer) error {
	start := time.Now()
	s.noteID(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	if id <= s.lastID {
		return fmt.Errorf("checkpoint %d: ids must grow (last committed is %d)", id, s.lastID)
	}
	if err := s.ingestDelta(id, bufs); err != nil {
		return err
	}
	s.setLastID(id)
	s.lastSyncMS = time.Since(start).Milliseconds()
	for _, b := range bufs {
		if b != nil {
			b.Reset()
		}
	}
	return nil
}

// guard runs fn on the working DB and turns a Pebble panic into an error.
// Pebble panics (or calls Fatalf) when an fsync or a write of its own WAL,
// MANIFEST or marker fails, e.g. disk full. When fatal, the working DB is
// abandoned (its internal locks may be held): Commit and Persist fail until
// RestoreLatest builds a new one from the latest complete checkpoint. A panic
// inside DB.Checkpoint is not fatal: it only touches the temporary copy and
// its deferred cleanup restores the DB. Caller holds mu.
func (s *Store) guard(fatal bool, fn func() error) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		cause, ok := r.(error)
		if !ok {
			cause = fmt.Errorf("%v", r)
		}
		if !fatal {
			err = fmt.Errorf("state store: %w", cause)
			return
		}
		s.setDB(nil)
		s.setLastID(0)
		err = fmt.Errorf("checkpoint: state store failed (restore from the latest checkpoint): %w", cause)
		s.broken = err
		s.o.logf("%v", err)
	}()
	return fn()
}

// usable reports why the working DB cannot be used. Caller holds mu.
func (s *Store) usable() error {
	switch {
	case s.closed:
		return ErrClosed
	case s.db == nil && s.broken != nil:
		return s.broken
	case s.db == nil:
		return ErrClosed
	}
	return nil
}

// LastCommitted is the id of the last committed checkpoint (0: none).
func (s *Store) LastCommitted() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.lastID
}

// Reader reads the committed state. It follows the store across
// RestoreLatest.
func (s *Store) Reader() StateReader { return reader{s} }

// setDB sets the working DB, for callers holding mu and for
// NewCommittedIter (caller holds mu).
func (s *Store) setDB(db *pebble.DB) {
	s.db = db
	s.rdb.Store(db)
}

// setLastID sets lastID (caller holds mu).
func (s *Store) setLastID(id int64) {
	s.lastID = id
	s.committedID.Store(id)
}

// CommittedID is the id of the last checkpoint committed to the working
// DB (0: none since it was installed).
func (s *Store) CommittedID() int64 { return s.committedID.Load() }

// NewCommittedIter opens an iterator over the working DB: the state of the
// last committed checkpoint, full keys (KeyedPrefix and the operator's
// key). Tiered keyed state reads its cold keys through it (exec/state's
// Committed). The caller closes it before the job attempt ends: a restore
// replaces the working DB.
func (s *Store) NewCommittedIter() (*pebble.Iterator, error) {
	db := s.rdb.Load()
	if db == nil {
		s.mu.RLock()
		err := s.usable()
		s.mu.RUnlock()
		if err == nil {
			err = errors.New("checkpoint: no working state")
		}
		return nil, err
	}
	return db.NewIter(&pebble.IterOptions{LowerBound: minUserKey})
}

// CommittedGet reads one key of the committed state (state.Committed): a
// point read that the working DB's Bloom filters keep off the tables
// without the key. The value is valid until closer is closed.
func (s *Store) CommittedGet(key []byte) ([]byte, io.Closer, error) {
	db := s.rdb.Load()
	if db == nil {
		return nil, nil, errors.New("checkpoint: no working state")
	}
	return db.Get(key)
}

type reader struct{ s *Store }

var minUserKey = []byte{tagKeyed}

func (r reader) Scan(prefix []byte, fn func(key, value []byte) error) error {
	s := r.s
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.usable(); err != nil {
		return err
	}
	lower := prefix
	if bytes.Compare(lower, minUserKey) < 0 {
		lower = minUserKey
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}

// JobDir is <Dir>/<JobID>.
func (s *Store) JobDir() string { return s.jobDir }

// Close closes the working DB. It is idempotent and leaves everything on
// disk, as a killed process would.
func (s *Store) Close() error {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.db == nil {
		s.releaseCache()
		return nil
	}
	err := s.db.Close()
	s.setDB(nil)
	s.releaseCache()
	return err
}

// releaseCache drops the store's reference to its block cache.
func (s *Store) releaseCache() {
	if s.cache != nil {
		s.cache.Unref()
		s.cache = nil
	}
}

// Discard cancels without retention: closes the store and removes
// <Dir>/<JobID> entirely.
func (s *Store) Discard() error {
	err := s.Close()
	if rerr := s.fs.RemoveAll(s.jobDir); rerr != nil {
		return fmt.Errorf("checkpoint: removing %s: %w", s.jobDir, rerr)
	}
	return err
}

// DiscardWorking ends a job whose checkpoints stay (a cancel with
// RETAIN_ON_CANCELLATION, a job that FAILED): it closes the store and
// empties taskowned/ (the working DB and leftover snapshots). taskowned/
// itself, the chk-<n> directories (complete or not) and shared/ stay: the
// job directory keeps Flink's layout and a restore from it works as before.
func (s *Store) DiscardWorking() error {
	err := s.Close()
	names, lerr := s.fs.List(s.ownedDir)
	if lerr != nil && !isNotExist(lerr) {
		return fmt.Errorf("checkpoint: listing %s: %w", s.ownedDir, lerr)
	}
	for _, n := range names {
		p := s.fs.PathJoin(s.ownedDir, n)
		if rerr := s.fs.RemoveAll(p); rerr != nil {
			return fmt.Errorf("checkpoint: removing %s: %w", p, rerr)
		}
	}
	if isNotExist(lerr) {
		if merr := mkdirAllSynced(s.fs, s.ownedDir); merr != nil {
			return fmt.Errorf("checkpoint: creating %s: %w", s.ownedDir, merr)
		}
	}
	return err
}

// filteredLevels are the working DB's level options: Pebble's defaults,
// the compression of each level (levelCompression: Snappy unless
// state.backend.rocksdb.compression.per.level says otherwise; a delta's
// own is chosen by Commit, compress.go) and a whole-key Bloom filter (10
// bits a key) at every level.
func filteredLevels(comp []pebble.Compression) []pebble.LevelOptions {
	l := make([]pebble.LevelOptions, 7)
	for i := range l {
		l[i].FilterPolicy = bloom.FilterPolicy(10)
		l[i].Compression = levelCompression(comp, i)
	}
	return l
}
