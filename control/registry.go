package control

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Entry is a process's registration: <runtime dir>/<pid>.json.
type Entry struct {
	PID int `json:"pid"`
	// ProcStart is the process's start time in clock ticks since boot
	// (field 22 of /proc/<pid>/stat); 0 where /proc is not available. It
	// tells a live process from a new one that reuses a dead one's pid.
	ProcStart uint64 `json:"proc_start,omitempty"`
	// URL is where the REST API answers, e.g. http://127.0.0.1:41234.
	URL string `json:"url"`
	// TokenSHA256 is the hex SHA-256 of the REST token; empty when the API
	// needs none. The token itself is never written.
	TokenSHA256 string `json:"token_sha256,omitempty"`
	Command     string `json:"command,omitempty"` // e.g. "run jobs/wc.sql" or "shell"
	Started     int64  `json:"started"`           // ms since the epoch
	Version     string `json:"version,omitempty"`
}

// NeedsToken reports whether the process's API requires a token.
func (e Entry) NeedsToken() bool { return e.TokenSHA256 != "" }

// TokenMatches reports whether token is the one the process requires.
func (e Entry) TokenMatches(token string) bool {
	return subtle.ConstantTimeCompare([]byte(HashToken(token)), []byte(e.TokenSHA256)) == 1
}

// HashToken returns the hex SHA-256 of a token ("" for no token).
func HashToken(token string) string {
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Mask shows a secret without revealing it: its first four characters at
// most, and only when it is long enough that they say little.
func Mask(token string) string {
	if len(token) >= 16 {
		return token[:4] + "…"
	}
	return "****"
}

// RuntimeDir returns the registry directory: $XDG_RUNTIME_DIR/streamsql when
// XDG_RUNTIME_DIR is an absolute path, else <os.TempDir()>/streamsql-<uid>.
func RuntimeDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "streamsql")
	}
	return filepath.Join(os.TempDir(), "streamsql-"+strconv.Itoa(os.Getuid()))
}

// Registry is the directory of process entries.
type Registry struct {
	Dir string
}

// DefaultRegistry is the registry at RuntimeDir.
func DefaultRegistry() *Registry { return &Registry{Dir: RuntimeDir()} }

// ensure creates the directory (mode 0700) and checks that it is private.
func (r *Registry) ensure(create bool) error {
	if create {
		if err := os.MkdirAll(r.Dir, 0o700); err != nil {
			return fmt.Errorf("job registry: %w", err)
		}
	}
	return checkPrivate(r.Dir)
}

// checkPrivate fails unless dir is a real directory owned by this user
// without group or other permissions: another user must not be able to
// plant entries (which would point the verbs at their server) or read ours.
func checkPrivate(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("job registry: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("job registry %s is not a directory (remove it)", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("job registry %s belongs to user %d, not to you (%d): remove it or set XDG_RUNTIME_DIR", dir, st.Uid, os.Getuid())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("job registry %s has mode %04o: it must be private (chmod 700 %s)", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

func (r *Registry) path(pid int) string { return filepath.Join(r.Dir, strconv.Itoa(pid)+".json") }

// Registration is a written entry; Remove deletes it.
type Registration struct {
	path string
}

// Remove deletes the entry; idempotent.
func (g *Registration) Remove() error {
	if g == nil || g.path == "" {
		return nil
	}
	err := os.Remove(g.path)
	g.path = ""
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// Register writes e (PID, ProcStart and Started default to this process's)
// as <pid>.json, mode 0600, atomically.
func (r *Registry) Register(e Entry) (*Registration, error) {
	if e.PID == 0 {
		e.PID = os.Getpid()
	}
	if e.ProcStart == 0 && e.PID == os.Getpid() {
		e.ProcStart, _ = procStart(e.PID)
	}
	if e.Started == 0 {
		e.Started = time.Now().UnixMilli()
	}
	if err := r.ensure(true); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(r.Dir, ".entry-*")
	if err != nil {
		return nil, fmt.Errorf("job registry: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(append(data, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o600)
	}
	if err == nil {
		err = os.Rename(tmp, r.path(e.PID))
	}
	if err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("job registry: %w", err)
	}
	return &Registration{path: r.path(e.PID)}, nil
}

// List returns the entries of live processes, ordered by pid. Entries of
// dead processes, and unreadable ones, are deleted. A missing directory is
// an empty registry.
func (r *Registry) List() ([]Entry, error) {
	if _, err := os.Lstat(r.Dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err := r.ensure(false); err != nil {
		return nil, err
	}
	names, err := os.ReadDir(r.Dir)
	if err != nil {
		return nil, fmt.Errorf("job registry: %w", err)
	}
	var out []Entry
	for _, d := range names {
		name := d.Name()
		pidText, ok := strings.CutSuffix(name, ".json")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 {
			continue
		}
		p := filepath.Join(r.Dir, name)
		data, err := os.ReadFile(p)
		if err != nil {
			continue // removed meanwhile
		}
		var e Entry
		if json.Unmarshal(data, &e) != nil || e.PID != pid || !alive(e) {
			os.Remove(p)
			continue
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, nil
}

// alive reports whether the entry's process still runs.
func alive(e Entry) bool {
	err := syscall.Kill(e.PID, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false // ESRCH: no such process
	}
	if e.ProcStart != 0 {
		if now, ok := procStart(e.PID); ok && now != e.ProcStart {
			return false // the pid was reused by another process
		}
	}
	return true
}

// procStart returns the start time of a process in clock ticks since boot,
// from /proc (Linux only).
func procStart(pid int) (uint64, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may contain spaces.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(f[19], 10, 64)
	return v, err == nil
}
