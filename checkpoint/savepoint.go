package checkpoint

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// Savepoint format, version 1 (see doc.go for the overview).
//
// A savepoint is one directory, savepoint-<first 6 hex of the job id>-<12
// random hex>, holding:
//
//	op-<hex of operator id>/kg-<key group>.state      keyed state of one key group
//	op-<hex of operator id>/subtask-<index>.state     per-subtask state (SubtaskKey)
//	_metadata                                         written last
//
// A state file is:
//
//	magic    8 bytes  "SSQLSAVE"
//	version  2 bytes  big endian, 1
//	scope    1 byte   'K' (key group) or 'S' (subtask)
//	operator uvarint length, then the operator id's bytes
//	index    4 bytes  big endian: the key group or the subtask index
//	records  each: 'R', uvarint len(key), key, uvarint len(value), value;
//	         keys strictly ascending; a key is relative to KeyedPrefix(op,
//	         kg) or SubtaskKey(op, i) (usually empty for subtask state)
//	footer   'E', 8 bytes big endian: the number of records; then EOF
//
// _metadata uses the checkpoint envelope (format_version, checksum of the
// body) with "type": "savepoint"; its body is savepointBody. Paths in it
// are relative to the savepoint directory with "/" separators, so the
// directory can be moved or copied anywhere.
const (
	savepointPrefix        = "savepoint-"
	savepointType          = "savepoint"
	savepointFormatVersion = 1
	stateFileMagic         = "SSQLSAVE"
	stateFileSuffix        = ".state"
	scopeKeyGroup          = "key_group"
	scopeSubtask           = "subtask"
	maxOpIDFileBytes       = 100 // hex doubles it; file names stay below 255 bytes
	loadBatchBytes         = 4 << 20
)

// savepointBody is the checksummed body of a savepoint's _metadata.
type savepointBody struct {
	FormatVersion int               `json:"savepoint_format_version"`
	EngineVersion string            `json:"engine_version"`
	Kind          Kind              `json:"kind"`
	JobID         string            `json:"job_id"`
	CheckpointID  int64             `json:"checkpoint_id"`
	CreatedMS     int64             `json:"created_ms"`
	Created       string            `json:"created"` // RFC 3339, for people
	SyncMS        int64             `json:"sync_ms"`
	AsyncMS       int64             `json:"async_ms"`
	Size          int64             `json:"size"` // bytes of all state files
	Meta          map[string]string `json:"meta"`
	State         []savepointOp     `json:"state"` // summary per operator
	Files         []savepointFile   `json:"files"`
}

// savepointOp summarises one operator's state in a savepoint.
type savepointOp struct {
	Operator  string `json:"operator"`
	KeyGroups string `json:"key_groups,omitempty"` // ranges with state, e.g. "0-5,9"
	Subtasks  []int  `json:"subtasks,omitempty"`
	Records   int64  `json:"records"`
	Bytes     int64  `json:"bytes"`
}

// savepointFile is one state file of a savepoint.
type savepointFile struct {
	Path     string `json:"path"` // relative to the savepoint directory
	Operator string `json:"operator"`
	Scope    string `json:"scope"` // key_group | subtask
	Index    int    `json:"index"` // the key group or the subtask
	Records  int64  `json:"records"`
	Size     int64  `json:"size"`
	CRC32C   string `json:"crc32c"`
}

func (b *savepointBody) info(dir string) Info {
	return Info{
		ID: b.CheckpointID, JobID: b.JobID, Kind: KindSavepoint, Path: dir,
		TimeMS: b.CreatedMS, Size: b.Size, Written: b.Size,
		SyncMS: b.SyncMS, AsyncMS: b.AsyncMS, Files: len(b.Files), Meta: b.Meta,
	}
}

// PersistSavepoint writes the committed state of checkpoint id, which must
// be the last committed one, as a self-contained savepoint in a new
// directory dir/savepoint-<first 6 hex of the job id>-<12 random hex>/ (dir:
// a path or file:// URI, created when missing; not inside the job's
// checkpoint directory). The state is read from a Pebble snapshot, so
// commits of later checkpoints may proceed meanwhile. Every state file is
// synced before _metadata is written LAST (temp file, fsync, rename, fsync
// of the directory). It is serialised with Persist, Abort and
// RestoreLatest. meta is recorded verbatim; meta["engine_version"]
// names the engine version. The engine never deletes a savepoint: a failed
// attempt removes its directory, a crash leaves one without _metadata,
// which is never restored and is listed as incomplete.
func (s *Store) PersistSavepoint(id int64, dir string, meta map[string]string) (Info, error) {
	start := time.Now()
	s.noteID(id)
	fail := func(format string, args ...any) (Info, error) {
		return Info{}, fmt.Errorf("savepoint of checkpoint %d: "+format, append([]any{id}, args...)...)
	}
	root, err := LocalPath(dir)
	if err != nil {
		return fail("%w", err)
	}
	root = cleanPath(root)
	if jd := cleanPath(s.jobDir); root == jd || strings.HasPrefix(root, jd+"/") {
		return fail("target %s is inside the job's checkpoint directory %s, which the engine deletes; choose another directory (state.savepoints.dir)", root, jd)
	}
	s.pmu.Lock()
	defer s.pmu.Unlock()

	s.mu.RLock()
	if err := s.usable(); err != nil {
		s.mu.RUnlock()
		return fail("%w", err)
	}
	if s.lastID != id {
		last := s.lastID
		s.mu.RUnlock()
		return fail("the last committed checkpoint is %d", last)
	}
	syncMS := s.lastSyncMS
	db := s.db
	snap := db.NewSnapshot()
	s.mu.RUnlock()
	defer snap.Close()

	fs := s.fs
	if err := mkdirAllSynced(fs, root); err != nil {
		return fail("creating %s: %w", root, err)
	}
	var spDir string
	for attempt := 0; ; attempt++ {
		spDir = fs.PathJoin(root, savepointPrefix+s.o.JobID[:6]+"-"+randomHex(6))
		if _, err := fs.Stat(spDir); isNotExist(err) {
			break
		} else if err != nil {
			return fail("%w", err)
		}
		if attempt == 10 {
			return fail("cannot find a free directory name in %s", root)
		}
	}
	if err := fs.MkdirAll(spDir, 0o755); err != nil {
		return fail("creating %s: %w", spDir, err)
	}
	ok := false
	defer func() {
		if !ok {
			if err := fs.RemoveAll(spDir); err != nil {
				s.o.logf("savepoint: cleanup of %s: %v", spDir, err)
			}
		}
	}()
	if err := syncDir(fs, root); err != nil {
		return fail("syncing %s: %w", root, err)
	}

	files, err := writeSavepointFiles(fs, spDir, snap)
	if err != nil {
		return fail("%w", err)
	}
	if err := syncDir(fs, spDir); err != nil {
		return fail("syncing %s: %w", spDir, err)
	}
	now := time.Now()
	body := &savepointBody{
		FormatVersion: savepointFormatVersion,
		EngineVersion: meta["engine_version"],
		Kind:          KindSavepoint,
		JobID:         s.o.JobID,
		CheckpointID:  id,
		CreatedMS:     now.UnixMilli(),
		Created:       now.UTC().Format(time.RFC3339Nano),
		SyncMS:        syncMS,
		Meta:          meta,
		Files:         files,
	}
	if body.EngineVersion == "" {
		body.EngineVersion = "unknown"
	}
	if body.Meta == nil {
		body.Meta = map[string]string{}
	}
	body.State = summarise(files)
	for _, f := range files {
		body.Size += f.Size
	}
	body.AsyncMS = time.Since(start).Milliseconds()
	data, err := encodeWrapped(savepointType, body)
	if err != nil {
		return fail("encoding _metadata: %w", err)
	}
	if err := writeFileSynced(fs, spDir, metadataTmpName, metadataName, data); err != nil {
		return fail("writing %s: %w", fs.PathJoin(spDir, metadataName), err)
	}
	ok = true
	return body.info(spDir), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand does not fail on supported platforms; fall back to time.
		t := binary.BigEndian.AppendUint64(nil, uint64(time.Now().UnixNano()))
		copy(b, t[len(t)-min(n, len(t)):])
	}
	return hex.EncodeToString(b)
}

// stateKey is a state-store key split into the parts a savepoint file is
// organised by.
type stateKey struct {
	scope  string // scopeKeyGroup | scopeSubtask
	op     []byte
	index  uint32
	suffix []byte
	prefix []byte // the key up to suffix
}

// splitKey parses a key written under KeyedPrefix or SubtaskKey.
func splitKey(k []byte) (stateKey, error) {
	var sk stateKey
	if len(k) == 0 {
		return sk, errors.New("empty state key")
	}
	switch k[0] {
	case tagKeyed:
		sk.scope = scopeKeyGroup
	case tagSubtask:
		sk.scope = scopeSubtask
	default:
		return sk, fmt.Errorf("state key %x is neither keyed (KeyedPrefix) nor per-subtask (SubtaskKey) state", k)
	}
	n, w := binary.Uvarint(k[1:])
	if w <= 0 || w != uvarintLen(n) || uint64(len(k)-1-w) < n+4 {
		return sk, fmt.Errorf("state key %x has no valid operator id and index", k)
	}
	end := 1 + w + int(n)
	sk.op = k[1+w : end]
	sk.index = binary.BigEndian.Uint32(k[end : end+4])
	sk.prefix = k[:end+4]
	sk.suffix = k[end+4:]
	return sk, nil
}

func uvarintLen(n uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], n)
}

func stateFileName(scope string, index uint32) string {
	if scope == scopeKeyGroup {
		return "kg-" + strconv.FormatUint(uint64(index), 10) + stateFileSuffix
	}
	return "subtask-" + strconv.FormatUint(uint64(index), 10) + stateFileSuffix
}

func opDirName(op []byte) string { return "op-" + hex.EncodeToString(op) }

// writeSavepointFiles writes one state file per (operator, key group) and
// per (operator, subtask) of the snapshot, each synced, and syncs every
// operator directory.
func writeSavepointFiles(fs vfs.FS, spDir string, snap *pebble.Snapshot) ([]savepointFile, error) {
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: minUserKey})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var (
		files  []savepointFile
		w      *stateFileWriter // the open file; closed by finish
		curKey []byte           // prefix of the open file
		opDirs []string
	)
	defer func() {
		if w != nil { // an error left it open
			w.f.Close()
		}
	}()
	finish := func() error {
		if w == nil {
			return nil
		}
		open := w
		w = nil
		f, err := open.finish()
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	}
	for valid := it.First(); valid; valid = it.Next() {
		k := it.Key()
		sk, err := splitKey(k)
		if err != nil {
			return nil, err
		}
		if w == nil || !bytes.Equal(curKey, sk.prefix) {
			if err := finish(); err != nil {
				return nil, err
			}
			if len(sk.op) > maxOpIDFileBytes {
				return nil, fmt.Errorf("operator id %q is longer than %d bytes", sk.op, maxOpIDFileBytes)
			}
			curKey = append(curKey[:0], sk.prefix...)
			od := opDirName(sk.op)
			if len(opDirs) == 0 || opDirs[len(opDirs)-1] != od {
				if err := fs.MkdirAll(fs.PathJoin(spDir, od), 0o755); err != nil {
					return nil, fmt.Errorf("creating %s: %w", fs.PathJoin(spDir, od), err)
				}
				opDirs = append(opDirs, od)
			}
			rel := od + "/" + stateFileName(sk.scope, sk.index)
			if w, err = newStateFileWriter(fs, spDir, rel, sk); err != nil {
				return nil, err
			}
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, err
		}
		if err := w.add(sk.suffix, v); err != nil {
			return nil, err
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("reading the state store: %w", err)
	}
	if err := finish(); err != nil {
		return nil, err
	}
	for _, od := range opDirs {
		if err := syncDir(fs, fs.PathJoin(spDir, od)); err != nil {
			return nil, fmt.Errorf("syncing %s: %w", fs.PathJoin(spDir, od), err)
		}
	}
	return files, nil
}

// crcCounter passes writes through, counting bytes and the CRC-32C.
type crcCounter struct {
	w   io.Writer
	crc uint32
	n   int64
}

func (c *crcCounter) Write(p []byte) (int, error) {
	// Checksum first: a writer may scribble on p once it returns (Pebble's
	// MemFS does under invariants builds). A short write is an error.
	c.crc = crc32.Update(c.crc, castagnoli, p)
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

type stateFileWriter struct {
	path  string
	f     vfs.File
	cc    *crcCounter
	bw    *bufio.Writer
	ref   savepointFile
	count int64
	tmp   [binary.MaxVarintLen64]byte
}

func newStateFileWriter(fs vfs.FS, spDir, rel string, sk stateKey) (*stateFileWriter, error) {
	p := fs.PathJoin(spDir, rel)
	f, err := fs.Create(p)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", p, err)
	}
	cc := &crcCounter{w: f}
	w := &stateFileWriter{path: p, f: f, cc: cc, bw: bufio.NewWriterSize(cc, 256<<10),
		ref: savepointFile{Path: rel, Operator: string(sk.op), Scope: sk.scope, Index: int(sk.index)}}
	var h []byte
	h = append(h, stateFileMagic...)
	h = binary.BigEndian.AppendUint16(h, savepointFormatVersion)
	if sk.scope == scopeKeyGroup {
		h = append(h, 'K')
	} else {
		h = append(h, 'S')
	}
	h = binary.AppendUvarint(h, uint64(len(sk.op)))
	h = append(h, sk.op...)
	h = binary.BigEndian.AppendUint32(h, sk.index)
	if _, err := w.bw.Write(h); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing %s: %w", p, err)
	}
	return w, nil
}

func (w *stateFileWriter) add(k, v []byte) error {
	_ = w.bw.WriteByte('R')
	w.bw.Write(w.tmp[:binary.PutUvarint(w.tmp[:], uint64(len(k)))])
	w.bw.Write(k)
	w.bw.Write(w.tmp[:binary.PutUvarint(w.tmp[:], uint64(len(v)))])
	if _, err := w.bw.Write(v); err != nil { // bufio errors are sticky
		return fmt.Errorf("writing %s: %w", w.path, err)
	}
	w.count++
	return nil
}

func (w *stateFileWriter) finish() (savepointFile, error) {
	_ = w.bw.WriteByte('E')
	w.bw.Write(binary.BigEndian.AppendUint64(w.tmp[:0], uint64(w.count)))
	err := w.bw.Flush()
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return savepointFile{}, fmt.Errorf("writing %s: %w", w.path, err)
	}
	w.ref.Records = w.count
	w.ref.Size = w.cc.n
	w.ref.CRC32C = crcHex(w.cc.crc)
	return w.ref, nil
}

// summarise builds the per-operator summary of files (already in key
// order: operators by encoded id, key groups ascending).
func summarise(files []savepointFile) []savepointOp {
	var out []savepointOp
	var kgs []int
	flush := func() {
		if len(out) > 0 {
			out[len(out)-1].KeyGroups = ranges(kgs)
		}
		kgs = kgs[:0]
	}
	for _, f := range files {
		if len(out) == 0 || out[len(out)-1].Operator != f.Operator {
			flush()
			out = append(out, savepointOp{Operator: f.Operator})
		}
		o := &out[len(out)-1]
		if f.Scope == scopeKeyGroup {
			kgs = append(kgs, f.Index)
		} else {
			o.Subtasks = append(o.Subtasks, f.Index)
		}
		o.Records += f.Records
		o.Bytes += f.Size
	}
	flush()
	return out
}

// ranges formats ascending ints as "0-3,7".
func ranges(xs []int) string {
	var b strings.Builder
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(xs[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(xs[j]))
		}
		i = j + 1
	}
	return b.String()
}

var (
	// errNotSavepoint marks a _metadata that belongs to a checkpoint.
	errNotSavepoint = errors.New("not a savepoint (its _metadata is a checkpoint's)")
	// errIncompleteSavepoint marks a savepoint directory without _metadata.
	errIncompleteSavepoint = errors.New("incomplete savepoint: no _metadata (interrupted; never restored)")
)

// readSavepointBody reads and checks dir/_metadata of a savepoint.
func readSavepointBody(fs vfs.FS, dir string) (*savepointBody, error) {
	mf, err := readWrapped(fs, dir)
	if err != nil {
		if errors.Is(err, errNoMetadata) {
			return nil, fmt.Errorf("%s: %w", dir, errIncompleteSavepoint)
		}
		return nil, err
	}
	p := fs.PathJoin(dir, metadataName)
	if mf.Type != savepointType {
		return nil, fmt.Errorf("%s: %w", p, errNotSavepoint)
	}
	var b savepointBody
	if err := json.Unmarshal(mf.Body, &b); err != nil {
		return nil, &corruptError{p, "corrupted body: " + err.Error()}
	}
	if b.FormatVersion != savepointFormatVersion {
		return nil, &corruptError{p, fmt.Sprintf("unsupported savepoint_format_version %d (this build reads %d)", b.FormatVersion, savepointFormatVersion)}
	}
	if b.Kind != KindSavepoint || b.CheckpointID <= 0 {
		return nil, &corruptError{p, "corrupted: not a savepoint or no checkpoint id"}
	}
	seen := map[string]bool{}
	for _, f := range b.Files {
		if err := checkRelPath(f.Path); err != nil {
			return nil, &corruptError{p, fmt.Sprintf("file %q: %v", f.Path, err)}
		}
		if f.Scope != scopeKeyGroup && f.Scope != scopeSubtask || f.Index < 0 || f.Index > 1<<31 {
			return nil, &corruptError{p, fmt.Sprintf("file %q: bad scope %q or index %d", f.Path, f.Scope, f.Index)}
		}
		id := f.Scope + "\x00" + strconv.Itoa(f.Index) + "\x00" + f.Operator
		if seen[f.Path] || seen[id] {
			return nil, &corruptError{p, fmt.Sprintf("file %q listed twice", f.Path)}
		}
		seen[f.Path], seen[id] = true, true
	}
	return &b, nil
}

// checkRelPath refuses paths that leave the savepoint directory.
func checkRelPath(rel string) error {
	if rel == "" || strings.HasPrefix(rel, "/") || strings.Contains(rel, "\\") {
		return errors.New("not a relative path")
	}
	for _, part := range strings.Split(rel, "/") {
		if part == "" || part == "." || part == ".." {
			return errors.New("not a clean relative path")
		}
	}
	return nil
}

func relJoin(fs vfs.FS, dir, rel string) string {
	return fs.PathJoin(append([]string{dir}, strings.Split(rel, "/")...)...)
}

// verifySavepoint checks every file of b (exists, size, CRC-32C); the
// error names the first bad file.
func verifySavepoint(fs vfs.FS, dir string, b *savepointBody) error {
	for _, r := range b.Files {
		p := relJoin(fs, dir, r.Path)
		st, err := fs.Stat(p)
		if err != nil {
			if isNotExist(err) {
				return fmt.Errorf("savepoint %s: file %s is missing", dir, p)
			}
			return fmt.Errorf("savepoint %s: file %s: %w", dir, p, err)
		}
		if st.Size() != r.Size {
			return fmt.Errorf("savepoint %s: file %s has %d bytes, _metadata says %d (truncated or replaced)", dir, p, st.Size(), r.Size)
		}
		n, c, err := checksumFile(fs, p)
		if err != nil {
			return fmt.Errorf("savepoint %s: file %s: %w", dir, p, err)
		}
		if n != r.Size {
			return fmt.Errorf("savepoint %s: file %s has %d bytes, _metadata says %d (truncated or replaced)", dir, p, n, r.Size)
		}
		if crcHex(c) != r.CRC32C {
			return fmt.Errorf("savepoint %s: file %s is corrupted: crc32c %s, _metadata says %s", dir, p, crcHex(c), r.CRC32C)
		}
	}
	return nil
}

// readStateFile parses one state file, checking its header against ref,
// key order and the record count, and calls fn for every record (key and
// value are valid during the call only).
func readStateFile(fs vfs.FS, p string, ref savepointFile, fn func(k, v []byte) error) error {
	f, err := fs.Open(p, vfs.SequentialReadsOption)
	if err != nil {
		return fmt.Errorf("opening %s: %w", p, err)
	}
	defer f.Close()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("state file %s is malformed: "+format, append([]any{p}, args...)...)
	}
	r := bufio.NewReaderSize(f, 256<<10)
	var hdr [11]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return bad("short header: %v", err)
	}
	if string(hdr[:8]) != stateFileMagic {
		return bad("wrong magic %q", hdr[:8])
	}
	if v := binary.BigEndian.Uint16(hdr[8:10]); v != savepointFormatVersion {
		return bad("unsupported version %d (this build reads %d)", v, savepointFormatVersion)
	}
	scope := map[byte]string{'K': scopeKeyGroup, 'S': scopeSubtask}[hdr[10]]
	if scope != ref.Scope {
		return bad("scope %q, _metadata says %s", hdr[10], ref.Scope)
	}
	limit := uint64(ref.Size)
	readBytes := func(dst []byte, what string) ([]byte, error) {
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, bad("reading the length of a %s: %v", what, err)
		}
		if n > limit {
			return nil, bad("%s length %d exceeds the file size", what, n)
		}
		if uint64(cap(dst)) < n {
			dst = make([]byte, n)
		}
		dst = dst[:n]
		if _, err := io.ReadFull(r, dst); err != nil {
			return nil, bad("reading a %s: %v", what, err)
		}
		return dst, nil
	}
	op, err := readBytes(nil, "operator id")
	if err != nil {
		return err
	}
	if string(op) != ref.Operator {
		return bad("operator %q, _metadata says %q", op, ref.Operator)
	}
	var ib [4]byte
	if _, err := io.ReadFull(r, ib[:]); err != nil {
		return bad("short header: %v", err)
	}
	if idx := binary.BigEndian.Uint32(ib[:]); uint64(idx) != uint64(ref.Index) {
		return bad("index %d, _metadata says %d", idx, ref.Index)
	}
	var key, prev, val []byte
	var count uint64
	for first := true; ; first = false {
		tag, err := r.ReadByte()
		if err != nil {
			return bad("no footer: %v", err)
		}
		if tag == 'E' {
			var cb [8]byte
			if _, err := io.ReadFull(r, cb[:]); err != nil {
				return bad("short footer: %v", err)
			}
			if n := binary.BigEndian.Uint64(cb[:]); n != count || int64(n) != ref.Records {
				return bad("footer says %d records, read %d, _metadata says %d", n, count, ref.Records)
			}
			if _, err := r.ReadByte(); err != io.EOF {
				return bad("data after the footer")
			}
			return nil
		}
		if tag != 'R' {
			return bad("unexpected record tag %q", tag)
		}
		if key, err = readBytes(key, "key"); err != nil {
			return err
		}
		if !first && bytes.Compare(prev, key) >= 0 {
			return bad("keys out of order (%x after %x)", key, prev)
		}
		if val, err = readBytes(val, "value"); err != nil {
			return err
		}
		if err := fn(key, val); err != nil {
			return err
		}
		prev = append(prev[:0], key...)
		count++
	}
}

// installSavepoint replaces the working DB with one loaded from the
// (verified) savepoint b in dir. Callers hold pmu and mu.
func (s *Store) installSavepoint(dir string, b *savepointBody) error {
	if err := s.installWorking("", nil); err != nil {
		return err
	}
	err := s.guard(true, func() error { return s.loadSavepoint(dir, b) })
	if err != nil {
		if s.db != nil {
			s.db.Close()
			s.setDB(nil)
		}
		s.setLastID(0)
		s.broken = fmt.Errorf("loading savepoint %s: %w", dir, err)
		return s.broken
	}
	s.setLastID(b.CheckpointID)
	return nil
}

// loadSavepoint writes every record of b into the (empty) working DB in
// batches, then the checkpoint id in a synced batch.
func (s *Store) loadSavepoint(dir string, b *savepointBody) error {
	db, fs := s.db, s.fs
	batch := db.NewBatch()
	defer func() { batch.Close() }()
	var key []byte
	for _, ref := range b.Files {
		var prefix []byte
		if ref.Scope == scopeKeyGroup {
			prefix = KeyedPrefix(ref.Operator, ref.Index)
		} else {
			prefix = SubtaskKey(ref.Operator, ref.Index)
		}
		p := relJoin(fs, dir, ref.Path)
		err := readStateFile(fs, p, ref, func(k, v []byte) error {
			key = append(append(key[:0], prefix...), k...)
			if err := batch.Set(key, v, nil); err != nil {
				return err
			}
			if batch.Len() >= loadBatchBytes {
				if err := batch.Commit(pebble.NoSync); err != nil {
					return err
				}
				batch.Close()
				batch = db.NewBatch()
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	var idb [8]byte
	binary.BigEndian.PutUint64(idb[:], uint64(b.CheckpointID))
	if err := batch.Set(keyCheckpointID, idb[:], nil); err != nil {
		return err
	}
	return batch.Commit(pebble.NoSync) // no WAL: the working DB is rebuilt on restore, never reopened
}

// restoreSavepoint is Restore from a savepoint directory.
func restoreSavepoint(o Options, dir string, b *savepointBody) (*Store, Info, error) {
	fs := o.FS
	if err := verifySavepoint(fs, dir, b); err != nil {
		return nil, Info{}, fmt.Errorf("restore from %s: %w", dir, err)
	}
	s, err := newStore(o)
	if err != nil {
		return nil, Info{}, err
	}
	s.pmu.Lock()
	defer s.pmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.installSavepoint(dir, b); err != nil {
		return nil, Info{}, fmt.Errorf("restore from %s: %w", dir, err)
	}
	s.spDir, s.sp = dir, b
	s.noteID(b.CheckpointID)
	return s, b.info(dir), nil
}

// SavepointInfo describes one savepoint directory.
type SavepointInfo struct {
	Name     string // savepoint-<job>-<random>
	Path     string
	Complete bool   // it has a valid _metadata (files are not verified here)
	Reason   string // why it is incomplete
	Info     Info   // when complete
}

// ListSavepoints lists every savepoint-* directory under dir
// (state.savepoints.dir, a path or file:// URI) on the local file system,
// oldest first. A missing dir has none.
func ListSavepoints(dir string) ([]SavepointInfo, error) { return ListSavepointsFS(vfs.Default, dir) }

// ListSavepointsFS is ListSavepoints on a given file system.
func ListSavepointsFS(fs vfs.FS, dir string) ([]SavepointInfo, error) {
	dir, err := LocalPath(dir)
	if err != nil {
		return nil, err
	}
	names, err := fs.List(dir)
	if err != nil {
		if isNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing savepoints in %s: %w", dir, err)
	}
	var out []SavepointInfo
	var when []int64
	for _, n := range names {
		p := fs.PathJoin(dir, n)
		if !strings.HasPrefix(n, savepointPrefix) {
			continue
		}
		st, err := fs.Stat(p)
		if err != nil || !st.IsDir() {
			continue
		}
		si := SavepointInfo{Name: n, Path: p}
		t := st.ModTime().UnixMilli()
		b, err := readSavepointBody(fs, p)
		var ce *corruptError
		switch {
		case err == nil:
			si.Complete, si.Info = true, b.info(p)
			t = b.CreatedMS
		case errors.Is(err, errIncompleteSavepoint):
			si.Reason = "no _metadata (interrupted; never restored)"
		case errors.As(err, &ce), errors.Is(err, errNotSavepoint):
			si.Reason = err.Error()
		default:
			return nil, fmt.Errorf("listing savepoints in %s: %w", dir, err)
		}
		out = append(out, si)
		when = append(when, t)
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		if when[idx[a]] != when[idx[b]] {
			return when[idx[a]] < when[idx[b]]
		}
		return out[idx[a]].Name < out[idx[b]].Name
	})
	sorted := make([]SavepointInfo, len(out))
	for i, j := range idx {
		sorted[i] = out[j]
	}
	return sorted, nil
}

// ReadSavepointMeta reads a savepoint's _metadata (path: the savepoint
// directory, a path or file:// URI) without verifying its files: Info.Meta
// holds what the runtime recorded (parallelism, max_parallelism,
// operators...).
func ReadSavepointMeta(path string) (Info, error) { return ReadSavepointMetaFS(vfs.Default, path) }

// ReadSavepointMetaFS is ReadSavepointMeta on a given file system.
func ReadSavepointMetaFS(fs vfs.FS, path string) (Info, error) {
	p, err := LocalPath(path)
	if err != nil {
		return Info{}, err
	}
	p = cleanPath(p)
	b, err := readSavepointBody(fs, p)
	if err != nil {
		return Info{}, err
	}
	return b.info(p), nil
}
