package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"

	"github.com/cockroachdb/pebble/vfs"
)

const (
	metadataName    = "_metadata"
	metadataTmpName = "_metadata.tmp"
	formatVersion   = 1
	checksumAlgo    = "crc32c"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fileRef is one file a checkpoint needs.
type fileRef struct {
	Path   string `json:"path"`   // relative to the job directory: shared/x.sst or chk-<n>/MANIFEST-...
	Local  string `json:"local"`  // its name inside the Pebble directory
	Size   int64  `json:"size"`   // bytes
	CRC32C string `json:"crc32c"` // 8 hex digits
}

// metaBody is the checksummed content of _metadata.
type metaBody struct {
	Info
	Files []fileRef `json:"files"`
}

// metaFile is the JSON document stored in _metadata. Body holds the exact
// bytes whose CRC-32C is BodyChecksum, so any change to the body is caught.
type metaFile struct {
	FormatVersion int `json:"format_version"`
	// Type is "savepoint" for a savepoint's _metadata (see savepoint.go)
	// and absent for a checkpoint's.
	Type              string          `json:"type,omitempty"`
	ChecksumAlgorithm string          `json:"checksum_algorithm"`
	BodyChecksum      string          `json:"body_checksum"`
	Body              json.RawMessage `json:"body"`
}

func crcHex(c uint32) string { return fmt.Sprintf("%08x", c) }

func encodeMetadata(b *metaBody) ([]byte, error) { return encodeWrapped("", b) }

// encodeWrapped encodes body as the checksummed body of a _metadata
// document of the given type ("" for a checkpoint).
func encodeWrapped(typ string, body any) ([]byte, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	// Written by hand so that the body's bytes are exactly the checksummed
	// ones (an indenting encoder would reformat them).
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "{\n \"format_version\": %d,\n", formatVersion)
	if typ != "" {
		fmt.Fprintf(&buf, " \"type\": %q,\n", typ)
	}
	fmt.Fprintf(&buf, " \"checksum_algorithm\": %q,\n \"body_checksum\": %q,\n \"body\": ",
		checksumAlgo, crcHex(crc32.Checksum(raw, castagnoli)))
	buf.Write(raw)
	buf.WriteString("\n}\n")
	return buf.Bytes(), nil
}

// errNoMetadata marks a checkpoint directory without _metadata.
var errNoMetadata = errors.New("no _metadata (incomplete checkpoint, never restored)")

// corruptError is a _metadata that exists but cannot be trusted.
type corruptError struct {
	path string
	msg  string
}

func (e *corruptError) Error() string { return e.path + ": " + e.msg }

// readMetadata reads and checks chkDir/_metadata. A missing file gives an
// error wrapping errNoMetadata; a damaged one a *corruptError; an I/O
// failure is returned as is.
func readMetadata(fs vfs.FS, chkDir string) (*metaBody, error) {
	mf, err := readWrapped(fs, chkDir)
	if err != nil {
		return nil, err
	}
	p := fs.PathJoin(chkDir, metadataName)
	if mf.Type != "" {
		return nil, &corruptError{p, fmt.Sprintf("holds the _metadata of a %s, not of a checkpoint", mf.Type)}
	}
	var b metaBody
	if err := json.Unmarshal(mf.Body, &b); err != nil {
		return nil, &corruptError{p, "corrupted body: " + err.Error()}
	}
	if b.ID <= 0 || len(b.Files) == 0 {
		return nil, &corruptError{p, "corrupted: no checkpoint id or no files"}
	}
	return &b, nil
}

// readWrapped reads dir/_metadata and checks its envelope: format version,
// checksum algorithm and the body's checksum. A missing file gives an error
// wrapping errNoMetadata; a damaged one a *corruptError; an I/O failure is
// returned as is.
func readWrapped(fs vfs.FS, dir string) (*metaFile, error) {
	p := fs.PathJoin(dir, metadataName)
	data, err := readAll(fs, p)
	if err != nil {
		if isNotExist(err) {
			return nil, fmt.Errorf("%s: %w", dir, errNoMetadata)
		}
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	var mf metaFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&mf); err != nil {
		return nil, &corruptError{p, "corrupted: not valid JSON: " + err.Error()}
	}
	if mf.FormatVersion != formatVersion {
		return nil, &corruptError{p, fmt.Sprintf("unsupported format_version %d (this build reads %d)", mf.FormatVersion, formatVersion)}
	}
	if mf.ChecksumAlgorithm != checksumAlgo {
		return nil, &corruptError{p, fmt.Sprintf("unsupported checksum_algorithm %q", mf.ChecksumAlgorithm)}
	}
	if got := crcHex(crc32.Checksum(mf.Body, castagnoli)); got != mf.BodyChecksum {
		return nil, &corruptError{p, fmt.Sprintf("corrupted: checksum %s, expected %s", got, mf.BodyChecksum)}
	}
	return &mf, nil
}

func readAll(fs vfs.FS, p string) ([]byte, error) {
	f, err := fs.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// checksumFile returns the size and CRC-32C of a file.
func checksumFile(fs vfs.FS, p string) (int64, uint32, error) {
	f, err := fs.Open(p, vfs.SequentialReadsOption)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	h := crc32.New(castagnoli)
	n, err := io.CopyBuffer(h, f, make([]byte, 256<<10))
	if err != nil {
		return 0, 0, fmt.Errorf("reading %s: %w", p, err)
	}
	return n, h.Sum32(), nil
}

// verifyFiles checks that every file of b exists under jobDir with its
// recorded size and checksum. The error names the first bad file.
func verifyFiles(fs vfs.FS, jobDir string, b *metaBody) error {
	for _, r := range b.Files {
		p := fs.PathJoin(jobDir, r.Path)
		st, err := fs.Stat(p)
		if err != nil {
			if isNotExist(err) {
				return fmt.Errorf("checkpoint %d: file %s is missing", b.ID, p)
			}
			return fmt.Errorf("checkpoint %d: file %s: %w", b.ID, p, err)
		}
		if st.Size() != r.Size {
			return fmt.Errorf("checkpoint %d: file %s has %d bytes, _metadata says %d (truncated or replaced)", b.ID, p, st.Size(), r.Size)
		}
		n, c, err := checksumFile(fs, p)
		if err != nil {
			return fmt.Errorf("checkpoint %d: file %s: %w", b.ID, p, err)
		}
		if n != r.Size {
			return fmt.Errorf("checkpoint %d: file %s has %d bytes, _metadata says %d (truncated or replaced)", b.ID, p, n, r.Size)
		}
		if crcHex(c) != r.CRC32C {
			return fmt.Errorf("checkpoint %d: file %s is corrupted: crc32c %s, _metadata says %s", b.ID, p, crcHex(c), r.CRC32C)
		}
	}
	return nil
}

// writeFileSynced writes data to dir/tmpName, syncs it, renames it to
// dir/name and syncs dir: the file is durable and appears atomically.
func writeFileSynced(fs vfs.FS, dir, tmpName, name string, data []byte) (err error) {
	tmp := fs.PathJoin(dir, tmpName)
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = fs.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err = f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = fs.Rename(tmp, fs.PathJoin(dir, name)); err != nil {
		return err
	}
	return syncDir(fs, dir)
}

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

// syncFile fsyncs an existing file.
func syncFile(fs vfs.FS, p string) error {
	f, err := fs.Open(p)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// chkID parses "chk-<n>".
func chkID(name string) (int64, bool) {
	const p = "chk-"
	if len(name) <= len(p) || name[:len(p)] != p {
		return 0, false
	}
	n, err := strconv.ParseInt(name[len(p):], 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != name[len(p):] {
		return 0, false
	}
	return n, true
}

func chkName(id int64) string { return "chk-" + strconv.FormatInt(id, 10) }

func isDir(fs vfs.FS, p string) bool {
	st, err := fs.Stat(p)
	return err == nil && st.IsDir()
}
