package checkpoint

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cockroachdb/pebble/vfs"
)

// Restore opens a Store for job o.JobID whose state is a copy of a complete
// checkpoint or savepoint. from (a path or file:// URI) is a savepoint
// directory (Info.Kind SAVEPOINT, Info.Meta its recorded meta; RestoreLatest
// returns to it until the job completes a checkpoint of its own), a
// chk-<n> directory, or a job directory, meaning its latest complete
// checkpoint. When that one fails verification and an older one verifies,
// the restore fails with an *UnverifiedError, unless Options.AllowFallback:
// then the older one is used, Info.Skipped says why the newer ones were
// passed over, and Options.Logf is told of the fallback. Every file the _metadata references
// is verified (exists, size, CRC-32C) before use; a missing, truncated or
// corrupted file is an error naming the file. A directory without _metadata
// is never restored. o.JobID may be the job of from (a file already in its
// shared/ stays shared) or a new one.
func Restore(o Options, from string) (*Store, Info, error) {
	o, err := o.validate()
	if err != nil {
		return nil, Info{}, err
	}
	from, err = LocalPath(from)
	if err != nil {
		return nil, Info{}, fmt.Errorf("restore: %w", err)
	}
	fs := o.FS
	from = cleanPath(from)
	st, err := fs.Stat(from)
	if err != nil {
		if isNotExist(err) {
			return nil, Info{}, fmt.Errorf("restore from %s: no such directory", from)
		}
		return nil, Info{}, fmt.Errorf("restore from %s: %w", from, err)
	}
	if !st.IsDir() {
		return nil, Info{}, fmt.Errorf("restore from %s: not a directory (want a chk-<n> or a job directory)", from)
	}
	var (
		srcJobDir string
		chosen    *metaBody
		skipped   []string
	)
	_, metaErr := fs.Stat(fs.PathJoin(from, metadataName))
	if strings.HasPrefix(fs.PathBase(from), savepointPrefix) || metaErr == nil && isSavepointMeta(fs, from) {
		b, err := readSavepointBody(fs, from)
		if err != nil {
			return nil, Info{}, fmt.Errorf("restore from %s: %w", from, err)
		}
		return restoreSavepoint(o, from, b)
	}
	_, isChk := chkID(fs.PathBase(from))
	switch {
	case metaErr == nil || isChk:
		// One checkpoint: no fallback.
		srcJobDir = fs.PathDir(from)
		b, err := readMetadata(fs, from)
		if err != nil {
			return nil, Info{}, fmt.Errorf("restore from %s: %w", from, err)
		}
		b.Path = from
		if err := verifyFiles(fs, srcJobDir, b); err != nil {
			return nil, Info{}, fmt.Errorf("restore from %s: %w", from, err)
		}
		chosen = b
	default:
		srcJobDir = from
		chosen, skipped, err = pickVerified(fs, from, o.AllowFallback, o.logf)
		if err != nil {
			return nil, Info{}, fmt.Errorf("restore from %s: %w", from, err)
		}
		if chosen == nil {
			return nil, Info{}, fmt.Errorf("restore from %s: no complete checkpoint (no chk-<n> with a _metadata)", from)
		}
	}
	srcMax, err := maxIDIn(fs, srcJobDir, "chk-")
	if err != nil {
		return nil, Info{}, fmt.Errorf("restore from %s: listing %s: %w", from, srcJobDir, err)
	}
	s, err := newStore(o)
	if err != nil {
		return nil, Info{}, err
	}
	s.noteID(chosen.ID)
	s.noteID(srcMax)
	s.pmu.Lock()
	defer s.pmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.installWorking(srcJobDir, chosen); err != nil {
		if s.db != nil {
			s.db.Close()
		}
		return nil, Info{}, fmt.Errorf("restore from %s: %w", chosen.Path, err)
	}
	s.baseDir, s.base = srcJobDir, chosen
	info := chosen.Info
	info.Skipped = skipped
	return s, info, nil
}

// isSavepointMeta reports whether dir/_metadata is a savepoint's (a
// savepoint directory may be renamed when copied).
func isSavepointMeta(fs vfs.FS, dir string) bool {
	mf, err := readWrapped(fs, dir)
	return err == nil && mf.Type == savepointType
}

// UnverifiedError is the error of a restore of a job directory (Restore,
// RestoreLatest) whose newest complete checkpoint fails verification while
// an older one verifies and Options.AllowFallback is off. Such a restore
// uses no checkpoint: a chk-<n> with a _metadata was complete, so its sinks
// may already have committed its output, and restoring the older checkpoint
// would make them write that output again.
type UnverifiedError struct {
	// Checkpoint is the newest complete chk-<n> directory.
	Checkpoint string
	// Reasons says why it, and every other complete checkpoint newer than
	// Older, failed verification; newest first.
	Reasons []string
	// Older is the newest checkpoint that verifies: what a fallback
	// restores.
	Older string
}

// FallbackOption is the session option that sets Options.AllowFallback.
const FallbackOption = "execution.checkpointing.restore-fallback"

func (e *UnverifiedError) Error() string {
	return fmt.Sprintf("the newest complete checkpoint %s failed verification: %s; "+
		"its sinks may already have committed its output, so restoring the older %s would write that output again: restore refused. "+
		"To restore %s anyway (duplicates are possible), SET '%s' = 'true'",
		e.Checkpoint, strings.Join(e.Reasons, "; "), e.Older, e.Older, FallbackOption)
}

// pickVerified returns the newest complete checkpoint of jobDir whose files
// verify, with the newer complete ones that did not (and why, newest
// first). A chk dir whose _metadata is damaged counts as a complete
// checkpoint that failed verification; one without _metadata never
// completed and is ignored. When newer ones failed and allowFallback is
// off, the result is an *UnverifiedError instead. nil when the job has no
// complete checkpoint; an error when it has some but none verifies.
func pickVerified(fs vfs.FS, jobDir string, allowFallback bool, logf func(string, ...any)) (*metaBody, []string, error) {
	complete, broken, err := scanJob(fs, jobDir)
	if err != nil {
		return nil, nil, err
	}
	type candidate struct {
		id   int64
		path string
		body *metaBody // nil: bad says why its _metadata is damaged
		bad  error
	}
	var cands []candidate
	for _, c := range complete {
		cands = append(cands, candidate{id: c.id, path: c.body.Path, body: c.body})
	}
	for n, why := range broken {
		if errors.Is(why, errNoMetadata) {
			continue
		}
		id, _ := chkID(n)
		cands = append(cands, candidate{id: id, path: fs.PathJoin(jobDir, n), bad: why})
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].id > cands[j].id })
	var skipped []string
	for _, c := range cands {
		why := c.bad
		if why == nil {
			why = verifyFiles(fs, jobDir, c.body)
		}
		if why != nil {
			skipped = append(skipped, why.Error())
			continue
		}
		if len(skipped) > 0 {
			if !allowFallback {
				return nil, skipped, &UnverifiedError{Checkpoint: cands[0].path, Reasons: skipped, Older: c.path}
			}
			logf("checkpoint: falling back to %s (%s is set)", c.path, FallbackOption)
		}
		return c.body, skipped, nil
	}
	if len(skipped) > 0 {
		return nil, skipped, fmt.Errorf("no checkpoint passed verification: %s", strings.Join(skipped, "; "))
	}
	return nil, nil, nil
}

// RestoreLatest resets the store to its own latest complete checkpoint
// (automatic recovery inside the process): commits of checkpoints that never
// completed are dropped. ok is false when no checkpoint completed yet; the
// state is then empty. When the newest complete checkpoint fails
// verification it is an *UnverifiedError, unless Options.AllowFallback:
// then an older retained one is restored and Info.Skipped says why. When
// none verifies the error names the files. On error the working state is
// left as it was.
func (s *Store) RestoreLatest() (info Info, ok bool, err error) {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Info{}, false, ErrClosed
	}
	b, skipped, err := pickVerified(s.fs, s.jobDir, s.o.AllowFallback, s.o.logf)
	if err != nil {
		return Info{}, false, fmt.Errorf("restoring job %s: %w", s.o.JobID, err)
	}
	dir := s.jobDir
	if b == nil && s.sp != nil {
		// No checkpoint of our own yet: back to the savepoint this job
		// started from, verified again.
		if err := verifySavepoint(s.fs, s.spDir, s.sp); err != nil {
			return Info{}, false, fmt.Errorf("restoring %s again: %w", s.spDir, err)
		}
		if err := s.installSavepoint(s.spDir, s.sp); err != nil {
			return Info{}, false, err
		}
		return s.sp.info(s.spDir), true, nil
	}
	if b == nil && s.base != nil {
		// No checkpoint of our own yet: back to the one this job started
		// from (execution.savepoint.path), verified again.
		if err := verifyFiles(s.fs, s.baseDir, s.base); err != nil {
			return Info{}, false, fmt.Errorf("restoring %s again: %w", s.base.Path, err)
		}
		b, dir = s.base, s.baseDir
	}
	if err := s.installWorking(dir, b); err != nil {
		return Info{}, false, err
	}
	if b == nil {
		return Info{}, false, nil
	}
	info = b.Info
	info.Skipped = skipped
	return info, true, nil
}

// JobCheckpoints lists one job directory.
type JobCheckpoints struct {
	JobID       string
	Dir         string
	Checkpoints []Info   // complete ones, ascending id
	Incomplete  []string // chk-<n> directories without a valid _metadata
}

// List reads a checkpoint root (state.checkpoints.dir, a path or file://
// URI) on the local file system: every job directory (32 hex digits) with
// its checkpoints.
func List(dir string) ([]JobCheckpoints, error) { return ListFS(vfs.Default, dir) }

// ListFS is List on a given file system.
func ListFS(fs vfs.FS, dir string) ([]JobCheckpoints, error) {
	dir, err := LocalPath(dir)
	if err != nil {
		return nil, err
	}
	names, err := fs.List(dir)
	if err != nil {
		return nil, fmt.Errorf("listing checkpoints in %s: %w", dir, err)
	}
	sort.Strings(names)
	var out []JobCheckpoints
	for _, n := range names {
		jd := fs.PathJoin(dir, n)
		if !ValidJobID(n) || !isDir(fs, jd) {
			continue
		}
		j := JobCheckpoints{JobID: n, Dir: jd}
		complete, broken, err := scanJob(fs, jd)
		if err != nil {
			return nil, fmt.Errorf("listing checkpoints in %s: %w", jd, err)
		}
		for i := len(complete) - 1; i >= 0; i-- {
			j.Checkpoints = append(j.Checkpoints, complete[i].body.Info)
		}
		for b := range broken {
			j.Incomplete = append(j.Incomplete, b)
		}
		sort.Slice(j.Incomplete, func(a, b int) bool {
			x, _ := chkID(j.Incomplete[a])
			y, _ := chkID(j.Incomplete[b])
			return x < y
		})
		out = append(out, j)
	}
	return out, nil
}
