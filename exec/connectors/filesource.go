package connectors

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/exec/format"
)

// recordDecoder wraps the two concrete decoders so the read loop calls them
// without an interface dispatch per record.
type recordDecoder struct {
	csv    *format.CSVDecoder
	json   *format.JSONDecoder
	ignore bool // ignore-parse-errors
	name   string
}

func newRecordDecoder(t *catalog.Table, schema catalog.Schema, rb *array.RecordBuilder) (recordDecoder, error) {
	f := strings.ToLower(t.OptionOr("format", ""))
	switch f {
	case "csv":
		o, err := format.CSVOptionsFromTable(t)
		if err != nil {
			return recordDecoder{}, err
		}
		d, err := format.NewCSVDecoder(schema, o, rb)
		return recordDecoder{csv: d, ignore: o.IgnoreParseErrors, name: "csv"}, err
	case "json":
		o, err := format.JSONOptionsFromTable(t)
		if err != nil {
			return recordDecoder{}, err
		}
		d, err := format.NewJSONDecoder(schema, o, rb)
		return recordDecoder{json: d, ignore: o.IgnoreParseErrors, name: "json"}, err
	}
	return recordDecoder{}, fmt.Errorf("unsupported format '%s' (supported: csv, json)", f)
}

func (d *recordDecoder) decode(line []byte) (bool, error) {
	if d.csv != nil {
		return d.csv.Decode(line)
	}
	return d.json.Decode(line)
}

// complete reports whether line is a whole record (CSV quoted fields may span
// lines).
func (d *recordDecoder) complete(line []byte) bool {
	if d.csv != nil {
		return d.csv.Complete(line)
	}
	return true
}

// FileSource is the filesystem source: it reads the CSV or JSON files of
// 'path' assigned to its subtask (a directory's visible files sorted by name,
// round-robin), line by line. It is bounded.
type FileSource struct {
	sc    *exec.SourceContext
	files []string
	dec   recordDecoder
	rb    *array.RecordBuilder

	fi   int   // index of the current file
	off  int64 // byte offset of the next record in files[fi]
	line int64 // 1-based line number of the next record
	f    *os.File
	r    *bufio.Reader
	acc  []byte

	skipped  int64 // bad records this subtask skipped (ignore-parse-errors)
	seekLine int64 // line number at off after RestoreState (0: count it)

	// position of the first record not yet emitted
	emFi      int // index in files
	emFile    string
	emOff     int64
	emLine    int64
	emSkipped int64
	done      bool // Run read every file and emitted everything
	closed    bool
}

// ListFiles returns the files of path: path itself when it is a file, else
// the directory's regular files whose names do not start with '.' or '_',
// sorted by name.
func ListFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("filesystem source: %w", err)
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("filesystem source: %w", err)
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || e.IsDir() {
			continue
		}
		out = append(out, filepath.Join(path, n))
	}
	sort.Strings(out)
	return out, nil
}

func newFileSource(t *catalog.Table, sc *exec.SourceContext) (*FileSource, error) {
	if len(sc.Schema) == 0 {
		return nil, fmt.Errorf("filesystem source: table '%s' has no columns", t.Name)
	}
	all, err := ListFiles(t.OptionOr("path", ""))
	if err != nil {
		return nil, err
	}
	s := &FileSource{sc: sc, line: 1, emLine: 1}
	for i, f := range all {
		if i%sc.Parallelism == sc.Subtask {
			s.files = append(s.files, f)
		}
	}
	mem := sc.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	s.rb = array.NewRecordBuilder(mem, sc.Schema.Arrow())
	s.dec, err = newRecordDecoder(t, sc.Schema, s.rb)
	if err != nil {
		s.rb.Release()
		return nil, err
	}
	if len(s.files) > 0 {
		s.emFile = s.files[0]
	}
	return s, nil
}

// Files returns the files assigned to this subtask, in reading order.
func (s *FileSource) Files() []string { return s.files }

// Offset returns the position of the first record not yet emitted: a file
// and the byte offset of the record in it. After the last file it is that
// file and its size. Like SeekTo, call it from Run's goroutine (e.g. inside
// emit) or while Run is not running.
func (s *FileSource) Offset() (file string, off int64) { return s.emFile, s.emOff }

// SeekTo positions the source at byte offset off of file (a file of this
// subtask). It fails if the file is missing or shorter than off.
func (s *FileSource) SeekTo(file string, off int64) error {
	idx := -1
	for i, f := range s.files {
		if f == file {
			idx = i
		}
	}
	if idx < 0 {
		return fmt.Errorf("filesystem source: cannot resume from '%s': it is not one of this subtask's files (%s)", file, strings.Join(s.files, ", "))
	}
	st, err := os.Stat(file)
	if err != nil {
		return fmt.Errorf("filesystem source: cannot resume: %w", err)
	}
	if st.Size() < off {
		return fmt.Errorf("filesystem source: cannot resume from '%s' at byte offset %d: the file has only %d bytes", file, off, st.Size())
	}
	s.closeFile()
	s.fi, s.off = idx, off
	s.emFi, s.emFile, s.emOff = idx, file, off
	s.seekLine, s.emLine = 0, 0
	s.done = false
	return nil
}

// SnapshotState implements exec.CheckpointedSource. After the header (see
// state.go) it holds, for the first record not yet emitted: uvarint byte
// offset, uvarint line number (0: unknown, counted again on restore; only
// right after SeekTo), uvarint count of bad records this subtask
// skipped so far, then the uvarint number of files left to read followed by
// their names (the current file first; none once the source is done).
// Storing the remaining files, rather than re-listing the directory on
// restore, keeps files added later from shifting the subtask's assignment.
func (s *FileSource) SnapshotState() ([]byte, error) {
	b := stateHeader(kindFileSource, s.sc.Subtask, s.sc.Parallelism)
	var rest []string
	if !s.done && s.emFi < len(s.files) {
		rest = s.files[s.emFi:]
	}
	b = binary.AppendUvarint(b, uint64(s.emOff))
	b = binary.AppendUvarint(b, uint64(s.emLine))
	b = binary.AppendUvarint(b, uint64(s.emSkipped))
	b = binary.AppendUvarint(b, uint64(len(rest)))
	for _, f := range rest {
		b = appendString(b, f)
	}
	return b, nil
}

// RestoreState implements exec.CheckpointedSource: the source continues
// with the first record not emitted at the snapshot. It fails, naming the
// file, when a file left to read is missing or the current one is shorter
// than the offset; it never rewinds or skips. The skipped-records count of
// the snapshot is added to SourceContext.SkippedRecords (the runtime resets
// that counter before each attempt), so each bad record is counted once.
func (s *FileSource) RestoreState(state []byte) error {
	r, err := openState(state, kindFileSource, s.sc.Subtask, s.sc.Parallelism)
	if err != nil {
		return err
	}
	off, line, skipped := r.int(), r.int(), r.int()
	n := r.count(1)
	files := make([]string, 0, n)
	for i := 0; i < n; i++ {
		files = append(files, r.str())
	}
	if err := r.end(); err != nil {
		return err
	}
	for i, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return fmt.Errorf("filesystem source: cannot resume from the checkpoint: %w", err)
		}
		if st.IsDir() {
			return fmt.Errorf("filesystem source: cannot resume from the checkpoint: '%s' is now a directory", f)
		}
		if i == 0 && st.Size() < off {
			return fmt.Errorf("filesystem source: cannot resume from '%s' at byte offset %d: the file has only %d bytes", f, off, st.Size())
		}
	}
	s.closeFile()
	s.files = files
	s.fi, s.off, s.line = 0, off, max(line, 1)
	s.seekLine = line
	s.skipped = skipped
	s.emFi, s.emOff, s.emLine, s.emSkipped = 0, off, line, skipped
	s.emFile = ""
	if len(files) > 0 {
		s.emFile = files[0]
	}
	s.done = len(files) == 0
	s.sc.SkippedRecords.Add(skipped)
	return nil
}

func (s *FileSource) closeFile() {
	if s.f != nil {
		s.f.Close()
		s.f, s.r = nil, nil
	}
}

func (s *FileSource) open() error {
	name := s.files[s.fi]
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("filesystem source: %w", err)
	}
	s.f = f
	s.line = 1
	if s.seekLine > 0 {
		s.line, s.seekLine = s.seekLine, 0
	} else if s.off > 0 {
		// count the lines before off, for error messages
		buf := make([]byte, 1<<16)
		lr := io.LimitReader(f, s.off)
		for {
			n, err := lr.Read(buf)
			s.line += int64(bytes.Count(buf[:n], []byte{'\n'}))
			if err != nil {
				break
			}
		}
	}
	if s.off > 0 {
		if _, err := f.Seek(s.off, io.SeekStart); err != nil {
			f.Close()
			s.f = nil
			return fmt.Errorf("filesystem source: %w", err)
		}
	}
	if s.r == nil {
		s.r = bufio.NewReaderSize(f, 1<<20)
	} else {
		s.r.Reset(f)
	}
	return nil
}

// readRecord returns the next record (without its line break), the bytes it
// took and the lines it spans; io.EOF at the end of the file. The record is
// valid until the next call.
func (s *FileSource) readRecord() ([]byte, int64, int64, error) {
	s.acc = s.acc[:0]
	multi := false // the record is being assembled in s.acc
	var consumed, lines int64
	for {
		b, err := s.r.ReadSlice('\n')
		for err == bufio.ErrBufferFull {
			s.acc = append(s.acc, b...)
			consumed += int64(len(b))
			multi = true
			b, err = s.r.ReadSlice('\n')
		}
		consumed += int64(len(b))
		if err != nil && err != io.EOF {
			return nil, 0, 0, fmt.Errorf("filesystem source: reading %s: %w", s.files[s.fi], err)
		}
		if len(b) == 0 && err == io.EOF {
			if !multi {
				return nil, 0, 0, io.EOF
			}
			return s.acc, consumed, lines, nil
		}
		if multi {
			s.acc = append(s.acc, b...)
			b = s.acc
		}
		lines++
		rec := b
		if n := len(rec); n > 0 && rec[n-1] == '\n' {
			rec = rec[:n-1]
		}
		if err == io.EOF || s.dec.complete(rec) {
			return rec, consumed, lines, nil
		}
		// a quoted field continues on the next line: keep what we have
		if !multi {
			s.acc = append(s.acc[:0], b...)
			multi = true
		}
	}
}

// Run reads every assigned file and emits batches of BatchSize rows.
func (s *FileSource) Run(ctx context.Context, emit func(arrow.Record) error) error {
	for s.fi < len(s.files) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.f == nil {
			if err := s.open(); err != nil {
				return err
			}
		}
		for {
			rec, n, lines, err := s.readRecord()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if _, derr := s.dec.decode(rec); derr != nil {
				if !s.dec.ignore {
					bad := fmt.Errorf("%s:%d: byte offset %d: %w", s.files[s.fi], s.line, s.off, derr)
					// Hand on the good records before the bad one, then fail.
					if err := s.flush(emit); err != nil {
						return err
					}
					return bad
				}
				s.skipped++
				s.sc.SkippedRecords.Add(1)
			}
			s.off += n
			s.line += lines
			if s.rb.Field(0).Len() >= s.sc.BatchSize {
				if err := s.flush(emit); err != nil {
					return err
				}
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
		s.closeFile()
		if s.fi+1 < len(s.files) {
			s.fi++
			s.off, s.line = 0, 1
		} else {
			break
		}
	}
	if err := s.flush(emit); err != nil {
		return err
	}
	s.done = true
	return nil
}

func (s *FileSource) flush(emit func(arrow.Record) error) error {
	if s.fi < len(s.files) {
		s.emFi, s.emFile, s.emOff, s.emLine = s.fi, s.files[s.fi], s.off, s.line
	}
	s.emSkipped = s.skipped
	if s.rb.Field(0).Len() == 0 {
		return nil
	}
	return emit(s.rb.NewRecord())
}

// Close implements exec.Source.
func (s *FileSource) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.closeFile()
	s.rb.Release()
	return nil
}
