package checkpoint

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/vfs"
)

// Persist is the asynchronous part of checkpoint id, which must be the last
// committed one: it makes a durable copy of the committed state as
// <job>/chk-<id>. Steps: flush the memtable and take a Pebble checkpoint
// (hard links) into taskowned/snap-<id> while commits wait (short); move new
// sstables into shared/ (files already there are referenced), the small
// per-checkpoint files into chk-<id>/; sync; write _metadata LAST (temp file,
// fsync, rename, fsync of the directory). Then prune to NumRetained complete
// checkpoints and delete unreferenced shared files (best effort; a failed
// prune is retried by the next Persist and does not fail this checkpoint).
//
// On error everything this attempt wrote is removed and older complete
// checkpoints are untouched.
func (s *Store) Persist(id int64, kind Kind, meta map[string]string) (Info, error) {
	start := time.Now()
	s.noteID(id)
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if kind == "" {
		kind = KindCheckpoint
	}
	fs := s.fs
	name := chkName(id)
	chkDir := fs.PathJoin(s.jobDir, name)
	snapDir := fs.PathJoin(s.ownedDir, snapPrefix+strconv.FormatInt(id, 10))

	if _, err := fs.Stat(chkDir); err == nil {
		_, merr := readMetadata(fs, chkDir)
		var ce *corruptError
		switch {
		case merr == nil:
			return Info{}, fmt.Errorf("checkpoint %d: %s already holds a complete checkpoint", id, chkDir)
		case errors.Is(merr, errNoMetadata), errors.As(merr, &ce):
			// Leftovers of an earlier attempt (crash): garbage.
			if err := s.removeChk(chkDir); err != nil {
				return Info{}, fmt.Errorf("checkpoint %d: removing leftover %s: %w", id, chkDir, err)
			}
		default:
			return Info{}, fmt.Errorf("checkpoint %d: %w", id, merr)
		}
	}
	if err := fs.RemoveAll(snapDir); err != nil {
		return Info{}, fmt.Errorf("checkpoint %d: removing leftover %s: %w", id, snapDir, err)
	}

	// Phase 1 (commits wait): flush and link a Pebble checkpoint.
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return Info{}, err
	}
	if s.lastID != id {
		last := s.lastID
		s.mu.Unlock()
		return Info{}, fmt.Errorf("checkpoint %d: cannot persist, the last committed checkpoint is %d", id, last)
	}
	syncMS := s.lastSyncMS
	err := s.guard(true, s.db.Flush)
	if err == nil {
		err = s.guard(false, func() error { return s.db.Checkpoint(snapDir) })
	}
	s.mu.Unlock()
	if err != nil {
		_ = fs.RemoveAll(snapDir)
		return Info{}, fmt.Errorf("checkpoint %d: snapshot of the state store: %w", id, err)
	}

	// Phase 2 (commits proceed): build chk-<id>.
	var added []string // index keys added by this attempt
	ok := false
	defer func() {
		if ok {
			return
		}
		if err := s.removeChk(chkDir); err != nil {
			s.o.logf("checkpoint %d: cleanup of %s: %v", id, chkDir, err)
		}
		for _, local := range added {
			p := fs.PathJoin(s.jobDir, s.index[local].Path)
			if err := fs.Remove(p); err != nil && !isNotExist(err) {
				s.o.logf("checkpoint %d: cleanup of %s: %v", id, p, err)
			}
			delete(s.index, local)
		}
		_ = fs.RemoveAll(snapDir)
	}()
	fail := func(format string, args ...any) (Info, error) {
		return Info{}, fmt.Errorf("checkpoint %d: "+format, append([]any{id}, args...)...)
	}

	names, err := fs.List(snapDir)
	if err != nil {
		return fail("listing %s: %w", snapDir, err)
	}
	sort.Strings(names)
	if err := fs.MkdirAll(chkDir, 0o755); err != nil {
		return fail("creating %s: %w", chkDir, err)
	}
	if err := syncDir(fs, s.jobDir); err != nil {
		return fail("syncing %s: %w", s.jobDir, err)
	}
	var refs []fileRef
	var size, written int64
	for _, n := range names {
		src := fs.PathJoin(snapDir, n)
		if strings.HasSuffix(n, ".log") {
			// The memtable was flushed while commits waited: the WAL holds no
			// state (a recycled WAL file only holds stale bytes). Pebble
			// opens the checkpoint without it.
			continue
		}
		if strings.HasSuffix(n, ".sst") {
			if r, ok := s.index[n]; ok {
				refs = append(refs, r)
				size += r.Size
				continue
			}
			// Commit's ingested tables are not synced when written
			// (ingest.go): a table enters shared/ durable.
			if err := syncFile(fs, src); err != nil {
				return fail("syncing %s: %w", src, err)
			}
			sz, crc, err := s.tableSum(src, n)
			if err != nil {
				return fail("%w", err)
			}
			shared := s.gen + "-" + n
			dst := fs.PathJoin(s.sharedDir, shared)
			r := fileRef{Path: sharedDirName + "/" + shared, Local: n, Size: sz, CRC32C: crcHex(crc)}
			s.index[n] = r
			added = append(added, n)
			if err := fs.Rename(src, dst); err != nil {
				return fail("moving %s to %s: %w", src, dst, err)
			}
			refs = append(refs, r)
			size += sz
			written += sz
			continue
		}
		// Small per-checkpoint file: make sure it is durable, then move it.
		if err := syncFile(fs, src); err != nil {
			return fail("syncing %s: %w", src, err)
		}
		sz, crc, err := checksumFile(fs, src)
		if err != nil {
			return fail("%w", err)
		}
		dst := fs.PathJoin(chkDir, n)
		if err := fs.Rename(src, dst); err != nil {
			return fail("moving %s to %s: %w", src, dst, err)
		}
		refs = append(refs, fileRef{Path: name + "/" + n, Local: n, Size: sz, CRC32C: crcHex(crc)})
		size += sz
		written += sz
	}
	if len(added) > 0 {
		if err := syncDir(fs, s.sharedDir); err != nil {
			return fail("syncing %s: %w", s.sharedDir, err)
		}
	}
	s.sums.prune(id)
	if err := syncDir(fs, chkDir); err != nil {
		return fail("syncing %s: %w", chkDir, err)
	}
	if s.isAborted(id) {
		return fail("aborted")
	}
	info := Info{
		ID: id, JobID: s.o.JobID, Kind: kind, Path: chkDir,
		TimeMS: time.Now().UnixMilli(), Size: size, Written: written,
		SyncMS: syncMS, AsyncMS: time.Since(start).Milliseconds(),
		Files: len(refs), Meta: meta,
	}
	data, err := encodeMetadata(&metaBody{Info: info, Files: refs})
	if err != nil {
		return fail("encoding _metadata: %w", err)
	}
	if err := writeFileSynced(fs, chkDir, metadataTmpName, metadataName, data); err != nil {
		return fail("writing %s: %w", fs.PathJoin(chkDir, metadataName), err)
	}
	ok = true
	if err := fs.RemoveAll(snapDir); err != nil {
		s.o.logf("checkpoint %d: removing %s: %v", id, snapDir, err)
	}
	if err := s.prune(); err != nil {
		s.o.logf("checkpoint %d: pruning old checkpoints (retried next time): %v", id, err)
	}
	return info, nil
}

// removeChk removes a chk directory, _metadata first, so that an
// interrupted removal never leaves a _metadata whose files are gone.
func (s *Store) removeChk(chkDir string) error {
	fs := s.fs
	if err := fs.Remove(fs.PathJoin(chkDir, metadataName)); err != nil && !isNotExist(err) {
		return err
	}
	return fs.RemoveAll(chkDir)
}

func (s *Store) isAborted(id int64) bool {
	s.abortMu.Lock()
	defer s.abortMu.Unlock()
	return s.aborted[id]
}

// Abort removes everything checkpoint id wrote (timeout or failure),
// including its _metadata if it had completed meanwhile: the runtime
// declared it failed. A Persist of id that is still running fails before it
// writes _metadata.
func (s *Store) Abort(id int64) error {
	s.noteID(id)
	s.abortMu.Lock()
	s.aborted[id] = true
	s.abortMu.Unlock()
	s.pmu.Lock()
	defer s.pmu.Unlock()
	defer func() {
		s.abortMu.Lock()
		delete(s.aborted, id)
		s.abortMu.Unlock()
	}()
	fs := s.fs
	chkDir := fs.PathJoin(s.jobDir, chkName(id))
	err := s.removeChk(chkDir)
	if rerr := fs.RemoveAll(fs.PathJoin(s.ownedDir, snapPrefix+strconv.FormatInt(id, 10))); err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("checkpoint %d: abort: %w", id, err)
	}
	if perr := s.prune(); perr != nil {
		s.o.logf("checkpoint %d: abort: pruning: %v", id, perr)
	}
	return nil
}

type chkEntry struct {
	id   int64
	name string
	body *metaBody
}

// scanJob reads the chk directories of jobDir: complete ones (valid
// _metadata) in descending id order, and the names of the others with the
// reason. An I/O error reading a _metadata is returned: nothing is guessed.
func scanJob(fs vfs.FS, jobDir string) (complete []chkEntry, broken map[string]error, err error) {
	names, err := fs.List(jobDir)
	if err != nil {
		return nil, nil, err
	}
	broken = map[string]error{}
	for _, n := range names {
		id, ok := chkID(n)
		if !ok {
			continue
		}
		dir := fs.PathJoin(jobDir, n)
		b, err := readMetadata(fs, dir)
		var ce *corruptError
		switch {
		case err == nil:
			b.Path = dir
			complete = append(complete, chkEntry{id, n, b})
		case errors.Is(err, errNoMetadata), errors.As(err, &ce):
			broken[n] = err
		default:
			return nil, nil, err
		}
	}
	sort.Slice(complete, func(i, j int) bool { return complete[i].id > complete[j].id })
	return complete, broken, nil
}

// prune keeps the NumRetained newest complete checkpoints, removes older
// ones and every chk directory without a valid _metadata, and deletes the
// shared files no retained checkpoint references. Caller holds pmu.
func (s *Store) prune() error {
	fs := s.fs
	complete, broken, err := scanJob(fs, s.jobDir)
	if err != nil {
		return err
	}
	var firstErr error
	note := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	keep := complete
	if len(keep) > s.o.NumRetained {
		for _, c := range keep[s.o.NumRetained:] {
			note(s.removeChk(fs.PathJoin(s.jobDir, c.name)))
		}
		keep = keep[:s.o.NumRetained]
	}
	for n, why := range broken {
		var ce *corruptError
		if errors.As(why, &ce) {
			s.o.logf("checkpoint: removing %s: %v", n, why)
		}
		note(fs.RemoveAll(fs.PathJoin(s.jobDir, n)))
	}
	if firstErr != nil {
		return firstErr
	}
	referenced := map[string]bool{}
	for _, c := range keep {
		for _, r := range c.body.Files {
			referenced[r.Path] = true
		}
	}
	shared, err := fs.List(s.sharedDir)
	if err != nil {
		return err
	}
	gone := map[string]bool{}
	for _, n := range shared {
		p := sharedDirName + "/" + n
		if referenced[p] {
			continue
		}
		if err := fs.Remove(fs.PathJoin(s.sharedDir, n)); err != nil && !isNotExist(err) {
			note(err)
			continue
		}
		gone[p] = true
	}
	for local, r := range s.index {
		if gone[r.Path] || !referenced[r.Path] {
			delete(s.index, local)
		}
	}
	s.removeTemps(false) // temporary Pebble checkpoints a failed cleanup left
	return firstErr
}

// tableSum returns the size and CRC-32C of new table file src (named
// name in the working DB): as Commit wrote it when it is one of its
// deltas (deltasum.go) and still of that size, else read from the file.
func (s *Store) tableSum(src, name string) (int64, uint32, error) {
	if d, ok := s.sums.take(name); ok {
		if st, err := s.fs.Stat(src); err == nil && st.Size() == d.size {
			s.summed.Add(1)
			return d.size, d.crc, nil
		}
	}
	return checksumFile(s.fs, src)
}
