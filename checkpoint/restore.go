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
// checkpoint; when that one
// fails verification the next older complete one is used and Info.Skipped
// says why (also sent to Options.Logf). Every file the _metadata references
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
		chosen, skipped, err = pickVerified(fs, from, o.logf)
		if err != nil {
			return nil, Info{}, fmt.Errorf("restore from %s: %w", from, err)
		}
		if chosen == nil {
			return nil, Info{}, fmt.Errorf("restore from %s: no complete checkpoint (no chk-<n> with a _metadata)", from)
		}
	}
	s, err := newStore(o)
	if err != nil {
		return nil, Info{}, err
	}
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

// pickVerified returns the newest complete checkpoint of jobDir whose files
// verify, with the newer ones that did not (and why). nil when the job has no
// complete checkpoint; an error when it has some but none verifies.
func pickVerified(fs vfs.FS, jobDir string, logf func(string, ...any)) (*metaBody, []string, error) {
	complete, broken, err := scanJob(fs, jobDir)
	if err != nil {
		return nil, nil, err
	}
	var skipped []string
	// A chk dir with a damaged _metadata counts as a failed candidate.
	var names []string
	for n, why := range broken {
		if !errors.Is(why, errNoMetadata) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		skipped = append(skipped, broken[n].Error())
	}
	for _, c := range complete {
		if err := verifyFiles(fs, jobDir, c.body); err != nil {
			skipped = append(skipped, err.Error())
			logf("checkpoint: skipping %s: %v", c.body.Path, err)
			continue
		}
		if len(skipped) > 0 {
			logf("checkpoint: falling back to %s", c.body.Path)
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
// state is then empty. A checkpoint that fails verification is skipped in
// favour of an older retained one (Info.Skipped); when none verifies the
// error names the files and the working state is left as it was.
func (s *Store) RestoreLatest() (info Info, ok bool, err error) {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Info{}, false, ErrClosed
	}
	b, skipped, err := pickVerified(s.fs, s.jobDir, s.o.logf)
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
