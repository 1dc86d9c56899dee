package checkpoint

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"strings"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// Options configure a Store.
type Options struct {
	Dir         string // state.checkpoints.dir: a path or a file:// URI
	JobID       string // 32 lower-case hex digits
	NumRetained int    // state.checkpoints.num-retained, >= 1
	FS          vfs.FS // nil means vfs.Default; tests pass errorfs / vfs.NewStrictMem()
	// Logf, when set, receives notable events (fallbacks to older
	// checkpoints, cleanup failures, Pebble background errors).
	Logf func(format string, args ...any)
	// AllowFallback (execution.checkpointing.restore-fallback) lets a
	// restore of a job directory (Restore, RestoreLatest) use an older
	// complete checkpoint when newer complete ones fail verification. Off
	// (the default), such a restore fails with an *UnverifiedError: a
	// checkpoint with a _metadata was complete, so sinks may already have
	// committed its output, and restoring an older one would write that
	// output a second time.
	AllowFallback bool
	// CacheSize is the working DB's block cache in bytes (0: Pebble's
	// default, 8 MiB). Tiered keyed state reads its cold keys from the
	// working DB (exec/state's Committed), so a job with the Pebble state
	// backend gives it a share of the state budget.
	CacheSize int64
	// CompressionPerLevel is state.backend.rocksdb.compression.per.level
	// (ParseCompressionPerLevel): the compression of each level's table
	// files, level 0's for every delta Commit writes. nil: Snappy for
	// compactions and, for each delta, Snappy where a sample of it
	// shrinks at least adaptiveMinRatio times (compress.go).
	CompressionPerLevel []pebble.Compression

	// disableCompactions turns off Pebble's automatic compactions (tests
	// that count file operations need a deterministic sequence).
	disableCompactions bool
}

// LocalPath turns a state.checkpoints.dir / savepoint value (a path or a
// file:// URI) into a local path.
func LocalPath(dir string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("state.checkpoints.dir: empty path")
	}
	if i := strings.Index(dir, "://"); i >= 0 {
		scheme := dir[:i]
		if !strings.EqualFold(scheme, "file") {
			return "", fmt.Errorf("state.checkpoints.dir %q: unsupported scheme %q (only file:// or a plain path)", dir, scheme)
		}
		p := dir[i+3:]
		if p == "" {
			return "", fmt.Errorf("state.checkpoints.dir %q: empty path", dir)
		}
		return p, nil
	}
	if strings.HasPrefix(dir, "file:") {
		return dir[len("file:"):], nil
	}
	return dir, nil
}

// ValidJobID reports whether id is 32 lower-case hex digits.
func ValidJobID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func (o Options) validate() (Options, error) {
	dir, err := LocalPath(o.Dir)
	if err != nil {
		return o, err
	}
	o.Dir = dir
	if !ValidJobID(o.JobID) {
		return o, fmt.Errorf("checkpoint: job id %q is not 32 lower-case hex digits", o.JobID)
	}
	if o.NumRetained < 1 {
		return o, fmt.Errorf("state.checkpoints.num-retained: %d, must be at least 1", o.NumRetained)
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	return o, nil
}

func (o Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// isNotExist reports a missing file, from the OS or a vfs implementation.
func isNotExist(err error) bool { return errors.Is(err, iofs.ErrNotExist) }
