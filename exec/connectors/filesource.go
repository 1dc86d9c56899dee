package connectors

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/planner"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

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

func newRecordDecoder(t *catalog.Table, schema catalog.Schema, bs []array.Builder) (recordDecoder, error) {
	f := strings.ToLower(t.OptionOr("format", ""))
	switch f {
	case "csv":
		o, err := format.CSVOptionsFromTable(t)
		if err != nil {
			return recordDecoder{}, err
		}
		d, err := format.NewCSVDecoderOn(schema, o, bs)
		return recordDecoder{csv: d, ignore: o.IgnoreParseErrors, name: "csv"}, err
	case "json":
		o, err := format.JSONOptionsFromTable(t)
		if err != nil {
			return recordDecoder{}, err
		}
		d, err := format.NewJSONDecoderOn(schema, o, bs)
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

// newBatchDecoder returns the decoder of table t's format building its
// own batches (see format.NewCSVBatchDecoder): fixed-width buffers from
// fixed, STRING bytes from mem.
func newBatchDecoder(t *catalog.Table, schema catalog.Schema, fixed, mem memory.Allocator) (recordDecoder, error) {
	f := strings.ToLower(t.OptionOr("format", ""))
	switch f {
	case "csv":
		o, err := format.CSVOptionsFromTable(t)
		if err != nil {
			return recordDecoder{}, err
		}
		d, err := format.NewCSVBatchDecoder(schema, o, fixed, mem)
		return recordDecoder{csv: d, ignore: o.IgnoreParseErrors, name: "csv"}, err
	case "json":
		o, err := format.JSONOptionsFromTable(t)
		if err != nil {
			return recordDecoder{}, err
		}
		d, err := format.NewJSONBatchDecoder(schema, o, fixed, mem)
		return recordDecoder{json: d, ignore: o.IgnoreParseErrors, name: "json"}, err
	}
	return recordDecoder{}, fmt.Errorf("unsupported format '%s' (supported: csv, json)", f)
}

// newRecord returns the batch built (batch decoders).
func (d *recordDecoder) newRecord() arrow.Record {
	if d.csv != nil {
		return d.csv.NewRecord()
	}
	return d.json.NewRecord()
}

// release frees the batch being built (batch decoders).
func (d *recordDecoder) release() {
	if d.csv != nil {
		d.csv.Release()
	} else if d.json != nil {
		d.json.Release()
	}
}

// reserve makes room for a batch of rows records.
func (d *recordDecoder) reserve(rows int) {
	if d.csv != nil {
		d.csv.Reserve(rows)
		return
	}
	d.json.Reserve(rows)
}

// complete reports whether rec is a whole record (CSV quoted fields may span
// lines). rec grows by lines until it is: scan carries what was read of it,
// so each byte is read once (see format.CSVDecoder.Scan).
func (d *recordDecoder) complete(rec []byte, scan *format.CSVScan) bool {
	if d.csv != nil {
		return d.csv.Scan(rec, scan)
	}
	return true
}

// FileSource is the filesystem source: it reads the CSV or JSON files of
// 'path' assigned to its subtask (a directory's visible files sorted by name,
// round-robin), line by line. It is bounded. Each file is a split: after a
// restore at another parallelism a subtask reads the remaining files of the
// old subtasks given to it, each from where that subtask stopped. A UTF-8
// byte order mark at the start of a file is skipped. Reading is linear in
// the input, and every pollBytes read it looks at its context and calls
// emit(nil), whatever it is in the middle of.
type FileSource struct {
	sc     *exec.SourceContext
	parts  *sourcePartitions // a partitioned table (nil: not partitioned)
	files  []string
	starts []filePos // where reading of each file begins (restored offsets)
	dec    recordDecoder
	pool   *recyclingAllocator // the batches' fixed-width buffers
	rows   int                 // records in the batch being built

	fi   int   // index of the current file
	off  int64 // byte offset of the next record in files[fi]
	line int64 // 1-based line number of the next record
	f    *os.File
	r    *bufio.Reader
	acc  []byte
	scan format.CSVScan // of the record being assembled in acc

	unpolled int  // bytes read since the last poll (see pollBytes)
	reserved bool // the batch being built has reserved its buffers

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

// filePos is a position in a file: the byte offset of a record and its
// 1-based line number (0: unknown, counted when the file is opened).
type filePos struct{ off, line int64 }

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
	mem := sc.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	s := &FileSource{sc: sc, line: 1, emLine: 1}
	var all []string
	var err error
	dataSchema := sc.Schema
	if len(t.PartitionKeys) > 0 {
		if s.parts, dataSchema, err = newSourcePartitions(t, sc.Schema, mem); err != nil {
			return nil, err
		}
		all, err = s.parts.listFiles(fsPath(t), sc.PartitionFilter)
	} else {
		all, err = ListFiles(fsPath(t))
	}
	if err != nil {
		if s.parts != nil {
			s.parts.release()
		}
		return nil, err
	}
	for i, f := range all {
		if i%sc.Parallelism == sc.Subtask {
			s.files = append(s.files, f)
			s.starts = append(s.starts, filePos{0, 1})
		}
	}
	s.pool = newRecyclingAllocator(mem)
	s.dec, err = newBatchDecoder(t, dataSchema, s.pool, mem)
	if err != nil {
		s.pool.close()
		if s.parts != nil {
			s.parts.release()
		}
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

// SnapshotState implements exec.CheckpointedSource. The state (version 2)
// is the header (see state.go), the uvarint count of bad records this
// subtask skipped so far, then the uvarint number of files left to read
// and per file its name, the uvarint byte offset and the uvarint line
// number (0: unknown, counted again on restore) where reading continues:
// the first record not yet emitted for the current file, the start of the
// others (0 and 1, or where a restored split had stopped). None once the
// source is done. Storing the remaining files, rather than re-listing the
// directory on restore, keeps files added later from shifting the
// assignment.
//
// Version 1 held offset, line, skipped, then the file names, all but the
// first read from their start; it is still read.
func (s *FileSource) SnapshotState() ([]byte, error) {
	b := stateHeader(kindFileSource, s.sc.Subtask, s.sc.Parallelism)
	b = binary.AppendUvarint(b, uint64(s.emSkipped))
	if s.done || s.emFi >= len(s.files) {
		return binary.AppendUvarint(b, 0), nil
	}
	b = binary.AppendUvarint(b, uint64(len(s.files)-s.emFi))
	for i := s.emFi; i < len(s.files); i++ {
		pos := s.starts[i]
		if i == s.emFi {
			pos = filePos{s.emOff, s.emLine}
		}
		b = appendString(b, s.files[i])
		b = binary.AppendUvarint(b, uint64(pos.off))
		b = binary.AppendUvarint(b, uint64(pos.line))
	}
	return b, nil
}

// readFileState decodes a state after its header: the files left with
// their positions, appended to files and starts, and the skipped count.
func readFileState(r *stateReader, files []string, starts []filePos) ([]string, []filePos, int64, error) {
	var skipped int64
	if r.version == 1 {
		off, line := r.int(), r.int()
		skipped = r.int()
		n := r.count(1)
		for i := 0; i < n; i++ {
			files = append(files, r.str())
			if i == 0 {
				starts = append(starts, filePos{off, line})
			} else {
				starts = append(starts, filePos{0, 1})
			}
		}
	} else {
		skipped = r.int()
		n := r.count(3)
		for i := 0; i < n; i++ {
			files = append(files, r.str())
			starts = append(starts, filePos{r.int(), r.int()})
		}
	}
	if err := r.end(); err != nil {
		return nil, nil, 0, err
	}
	return files, starts, skipped, nil
}

// RestoreState implements exec.CheckpointedSource: the source continues
// with the first record not emitted at the snapshot. It fails, naming the
// file, when a file left to read is missing or shorter than its offset; it
// never rewinds or skips. The skipped-records count of the snapshot is
// added to SourceContext.SkippedRecords (the runtime resets that counter
// before each attempt), so each bad record is counted once.
func (s *FileSource) RestoreState(state []byte) error {
	r, err := openState(state, kindFileSource, s.sc.Subtask, s.sc.Parallelism)
	if err != nil {
		return err
	}
	files, starts, skipped, err := readFileState(r, nil, nil)
	if err != nil {
		return err
	}
	return s.install(files, starts, skipped)
}

// RestoreSplits implements exec.SplitSource: every subtask lists the
// remaining files of all old subtasks in order, each with its restored
// position, and reads file j when j mod Parallelism == Subtask; with none
// it reads nothing. The skipped counts of the states it owns are summed
// (each old state has one owner, so every bad record stays counted once).
// A file listed by two states is refused.
func (s *FileSource) RestoreSplits(states [][]byte, owned []bool) error {
	rs, err := openAllStates(states, kindFileSource)
	if err != nil {
		return err
	}
	var files []string
	var starts []filePos
	var skipped int64
	for i, r := range rs {
		var n int64
		if files, starts, n, err = readFileState(r, files, starts); err != nil {
			return err
		}
		if owned[i] {
			skipped += n
		}
	}
	seen := make(map[string]bool, len(files))
	var myFiles []string
	var myStarts []filePos
	for j, f := range files {
		if seen[f] {
			return fmt.Errorf("filesystem source: cannot restore: the checkpoint lists '%s' for two subtasks", f)
		}
		seen[f] = true
		if j%s.sc.Parallelism == s.sc.Subtask {
			myFiles, myStarts = append(myFiles, f), append(myStarts, starts[j])
		}
	}
	return s.install(myFiles, myStarts, skipped)
}

// install makes files (with their start positions) the rest of the input
// after checking that each still exists and is long enough.
func (s *FileSource) install(files []string, starts []filePos, skipped int64) error {
	for i, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return fmt.Errorf("filesystem source: cannot resume from the checkpoint: %w", err)
		}
		if st.IsDir() {
			return fmt.Errorf("filesystem source: cannot resume from the checkpoint: '%s' is now a directory", f)
		}
		if off := starts[i].off; st.Size() < off {
			return fmt.Errorf("filesystem source: cannot resume from '%s' at byte offset %d: the file has only %d bytes", f, off, st.Size())
		}
	}
	s.closeFile()
	s.files, s.starts = files, starts
	s.fi = 0
	s.skipped = skipped
	s.emFi, s.emSkipped = 0, skipped
	s.emFile, s.emOff, s.emLine = "", 0, 1
	s.off, s.line, s.seekLine = 0, 1, 0
	if len(files) > 0 {
		s.startFile()
		s.emFile, s.emOff, s.emLine = files[0], starts[0].off, starts[0].line
	}
	s.done = len(files) == 0
	s.sc.SkippedRecords.Add(skipped)
	return nil
}

// startFile prepares reading files[fi] from its start position.
func (s *FileSource) startFile() {
	p := s.starts[s.fi]
	s.off, s.line, s.seekLine = p.off, max(p.line, 1), p.line
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
	if s.off == 0 {
		// A UTF-8 byte order mark (editors on Windows write one) is not
		// part of the first record. Offsets count it, so a restore seeks
		// past it.
		if b, _ := s.r.Peek(len(utf8BOM)); bytes.Equal(b, utf8BOM) {
			s.r.Discard(len(utf8BOM))
			s.off = int64(len(utf8BOM))
		}
	}
	return nil
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// pollBytes is how much the file source reads between two polls: a look at
// its context and a heartbeat (emit(nil)) through which the runtime injects
// barriers and stop requests. Polls happen inside a record too, so a job
// reading one huge record (a stray quote makes the rest of a file one
// quoted field) still stops within milliseconds; reading 1 MiB takes about
// one.
const pollBytes = 1 << 20

// poll counts n bytes read and, every pollBytes, returns ctx's error or
// what a heartbeat returns.
func (s *FileSource) poll(ctx context.Context, emit func(arrow.Record) error, n int) error {
	s.unpolled += n
	if s.unpolled < pollBytes {
		return nil
	}
	s.unpolled = 0
	if err := ctx.Err(); err != nil {
		return err
	}
	return emit(nil)
}

// readRecord returns the next record (without its line break), the bytes it
// took and the lines it spans; io.EOF at the end of the file. The record is
// valid until the next call. It polls (see poll) as it reads, and returns
// the poll's error.
func (s *FileSource) readRecord(ctx context.Context, emit func(arrow.Record) error) ([]byte, int64, int64, error) {
	s.acc = s.acc[:0]
	s.scan = format.CSVScan{}
	multi := false // the record is being assembled in s.acc
	var consumed, lines int64
	for {
		b, err := s.r.ReadSlice('\n')
		for err == bufio.ErrBufferFull {
			s.acc = append(s.acc, b...)
			consumed += int64(len(b))
			multi = true
			if perr := s.poll(ctx, emit, len(b)); perr != nil {
				return nil, 0, 0, perr
			}
			b, err = s.r.ReadSlice('\n')
		}
		consumed += int64(len(b))
		if perr := s.poll(ctx, emit, len(b)); perr != nil {
			return nil, 0, 0, perr
		}
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
		if err == io.EOF || s.dec.complete(rec, &s.scan) {
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
			rec, n, lines, err := s.readRecord(ctx, emit)
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if s.rows == 0 && !s.reserved {
				// size the batch's buffers once, not row by row
				s.dec.reserve(min(s.sc.BatchSize, maxReserveRows))
				s.reserved = true
			}
			appended, derr := s.dec.decode(rec)
			if appended {
				s.rows++
			}
			if derr != nil {
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
			if s.rows >= s.sc.BatchSize {
				if err := s.flush(emit); err != nil {
					return err
				}
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
		s.closeFile()
		if s.parts != nil {
			// a batch holds the rows of one partition
			if err := s.flush(emit); err != nil {
				return err
			}
		}
		if s.fi+1 < len(s.files) {
			s.fi++
			s.startFile()
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
	if s.rows == 0 {
		return nil
	}
	s.rows, s.reserved = 0, false
	if s.parts != nil {
		rec, err := s.parts.complete(s.dec.newRecord(), s.files[min(s.fi, len(s.files)-1)])
		if err != nil {
			return err
		}
		return emit(rec)
	}
	return emit(s.dec.newRecord())
}

// Close implements exec.Source.
func (s *FileSource) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.closeFile()
	s.dec.release()
	s.pool.close()
	if s.parts != nil {
		s.parts.release()
	}
	return nil
}

// maxReserveRows caps what a batch reserves up front (a huge batch size
// grows its buffers past it as rows come).
const maxReserveRows = 1 << 16

// recyclingAllocator hands out the file source's batch buffers and takes
// them back when the last reference to a batch is released (on any
// goroutine), for the next batches: reading a file allocates no fresh
// memory per batch (fresh memory costs page faults and garbage
// collections). Sizes are rounded up to powers of two, so a buffer fits
// the next batch's of about the same size; memory handed out again is
// zeroed first, as fresh memory from the Go allocator is. At most
// recycleKeep buffers of each size are kept; after close every buffer goes
// back to the parent.
type recyclingAllocator struct {
	parent memory.Allocator
	mu     sync.Mutex
	free   [64][][]byte // by log2 of the size
	closed bool
}

const recycleKeep = 64

func newRecyclingAllocator(parent memory.Allocator) *recyclingAllocator {
	return &recyclingAllocator{parent: parent}
}

// sizeClass returns the log2 of the power of two (at least 64) that holds size.
func sizeClass(size int) int {
	if size <= 64 {
		return 6
	}
	return bits.Len(uint(size - 1))
}

func (a *recyclingAllocator) Allocate(size int) []byte {
	if size == 0 {
		return a.parent.Allocate(0)
	}
	c := sizeClass(size)
	a.mu.Lock()
	if l := a.free[c]; len(l) > 0 {
		buf := l[len(l)-1]
		a.free[c] = l[:len(l)-1]
		a.mu.Unlock()
		clear(buf)
		return buf[:size:len(buf)]
	}
	a.mu.Unlock()
	return a.parent.Allocate(1 << c)[: size : 1<<c]
}

func (a *recyclingAllocator) Reallocate(size int, b []byte) []byte {
	if cap(b) == 0 {
		return a.Allocate(size)
	}
	if size <= cap(b) && (size > cap(b)/2 || cap(b) <= 64) {
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

func (a *recyclingAllocator) Free(b []byte) {
	if cap(b) == 0 {
		a.parent.Free(b)
		return
	}
	b = b[:cap(b)]
	c := sizeClass(len(b))
	a.mu.Lock()
	if l := a.free[c]; !a.closed && len(l) < recycleKeep && len(b) == 1<<c {
		a.free[c] = append(l, b)
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	a.parent.Free(b)
}

// close returns the kept buffers to the parent; buffers still in use go
// back to it when released.
func (a *recyclingAllocator) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	for c, l := range a.free {
		for _, buf := range l {
			a.parent.Free(buf)
		}
		a.free[c] = nil
	}
}

// sourcePartitions completes the batches of a partitioned table: the files
// hold the other columns, the partition columns come from the directory
// names (<path>/k1=v1/k2=v2/file), decoded as CSV fields are (NULL for the
// default partition name).
type sourcePartitions struct {
	keys    []string      // partition columns, in PARTITIONED BY order
	cols    []int         // their positions in the table's schema (ascending)
	full    *arrow.Schema // the table's schema
	defName string        // partition.default-name
	rb      *array.RecordBuilder
	dec     *format.CSVDecoder
	file    string       // of line
	line    []byte       // the partition values of file as one CSV record
	vals    arrow.Record // ... decoded (one row); nil until the first batch
	mem     memory.Allocator
}

func newSourcePartitions(t *catalog.Table, schema catalog.Schema, mem memory.Allocator) (*sourcePartitions, catalog.Schema, error) {
	p := &sourcePartitions{keys: t.PartitionKeys, full: schema.Arrow(), mem: mem,
		defName: t.OptionOr("partition.default-name", "__DEFAULT_PARTITION__")}
	var data, keys catalog.Schema
	for _, k := range t.PartitionKeys {
		if i := schema.Index(k); i >= 0 {
			keys = append(keys, schema[i])
		}
	}
	for i, c := range schema {
		if slices.ContainsFunc(t.PartitionKeys, func(k string) bool { return strings.EqualFold(k, c.Name) }) {
			p.cols = append(p.cols, i)
			continue
		}
		data = append(data, c)
	}
	if len(data) == 0 {
		return nil, nil, fmt.Errorf("filesystem source: table '%s' has only partition columns", t.Name)
	}
	if len(keys) != len(t.PartitionKeys) {
		return nil, nil, fmt.Errorf("filesystem source: table '%s': a partition column is not in the source's schema", t.Name)
	}
	// the decoder's columns in schema order (cols ascending), keys by name
	ordered := make(catalog.Schema, len(p.cols))
	for j, i := range p.cols {
		ordered[j] = schema[i]
	}
	p.rb = array.NewRecordBuilder(mem, ordered.Arrow())
	opts := format.DefaultCSVOptions()
	opts.HasNullLiteral, opts.NullLiteral = true, "NULL" // unquoted; values are quoted
	dec, err := format.NewCSVDecoder(ordered, opts, p.rb)
	if err != nil {
		p.rb.Release()
		return nil, nil, err
	}
	p.dec = dec
	return p, data, nil
}

func (p *sourcePartitions) release() {
	if p.vals != nil {
		p.vals.Release()
	}
	p.rb.Release()
}

// complete returns data (rows of file) with the partition columns added;
// it takes over data's reference.
func (p *sourcePartitions) complete(data arrow.Record, file string) (arrow.Record, error) {
	defer data.Release()
	if file != p.file || p.vals == nil {
		if err := p.decodeFile(file); err != nil {
			return nil, err
		}
	}
	n := int(data.NumRows())
	cols := make([]arrow.Array, 0, p.full.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	di, pi := 0, 0
	for i := 0; i < p.full.NumFields(); i++ {
		if pi < len(p.cols) && p.cols[pi] == i {
			cols = append(cols, expr.Broadcast(p.vals.Column(pi), n, p.mem))
			pi++
			continue
		}
		c := data.Column(di)
		c.Retain()
		cols = append(cols, c)
		di++
	}
	return expr.NewRecord(p.full, cols, int64(n)), nil
}

// decodeFile decodes file's partition values once, into the 1-row p.vals.
func (p *sourcePartitions) decodeFile(file string) error {
	if err := p.setFile(file); err != nil {
		return err
	}
	if p.vals != nil {
		p.vals.Release()
		p.vals = nil
	}
	if _, err := p.dec.Decode(p.line); err != nil {
		p.rb.NewRecord().Release()
		p.file = ""
		return fmt.Errorf("filesystem source: partition directory %s: %v", filepath.Dir(file), err)
	}
	p.vals = p.rb.NewRecord()
	return nil
}

// setFile builds the CSV record of file's partition values (from the k=v
// directories above it, in schema order).
func (p *sourcePartitions) setFile(file string) error {
	segs := strings.Split(filepath.ToSlash(filepath.Dir(file)), "/")
	if len(segs) < len(p.keys) {
		return fmt.Errorf("filesystem source: %s is not in a partition directory", file)
	}
	segs = segs[len(segs)-len(p.keys):]
	byName := map[string]*string{}
	for i, seg := range segs {
		k, v, ok := strings.Cut(seg, "=")
		if !ok || !strings.EqualFold(k, p.keys[i]) {
			return fmt.Errorf("filesystem source: %s: expected the directory of partition column '%s' (%s=...), found '%s'", file, p.keys[i], p.keys[i], seg)
		}
		if v == p.defName {
			byName[strings.ToLower(k)] = nil
			continue
		}
		u := unescapePartition(v)
		byName[strings.ToLower(k)] = &u
	}
	p.line = p.line[:0]
	for j, i := range p.cols {
		if j > 0 {
			p.line = append(p.line, ',')
		}
		if v := byName[strings.ToLower(p.full.Field(i).Name)]; v != nil {
			p.line = append(p.line, '"')
			p.line = append(p.line, strings.ReplaceAll(*v, `"`, `""`)...)
			p.line = append(p.line, '"')
		} else {
			p.line = append(p.line, "NULL"...)
		}
	}
	p.file = file
	return nil
}

// listFiles returns the files of a partitioned table's directory root:
// those of every partition directory (depth levels of k=v) where filter
// (nil: none) is true, sorted; names starting with '.' or '_' are skipped.
func (p *sourcePartitions) listFiles(root string, filter planner.Expr) ([]string, error) {
	if _, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("filesystem source: %w", err)
	}
	dirs, err := partitionDirs(root, len(p.keys))
	if err != nil {
		return nil, err
	}
	if filter != nil && len(dirs) > 0 {
		if dirs, err = p.prune(root, dirs, filter); err != nil {
			return nil, err
		}
	}
	var out []string
	for _, rel := range dirs {
		files, err := ListFiles(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		out = append(out, files...)
	}
	return out, nil
}

// prune returns the directories whose partition values pass filter: it is
// evaluated over one row per directory (the partition columns decoded from
// the names, the other columns NULL; the filter reads partition columns
// only).
func (p *sourcePartitions) prune(root string, dirs []string, filter planner.Expr) ([]string, error) {
	ev, err := expr.Compile(filter)
	if err != nil {
		return nil, fmt.Errorf("filesystem source: partition filter: %w", err)
	}
	for _, rel := range dirs {
		if err := p.setFile(filepath.Join(root, filepath.FromSlash(rel), "x")); err != nil {
			return nil, err
		}
		if _, err := p.dec.Decode(p.line); err != nil {
			p.rb.NewRecord().Release()
			return nil, fmt.Errorf("filesystem source: partition directory %s: %v", filepath.Join(root, rel), err)
		}
	}
	p.file = ""
	keys := p.rb.NewRecord()
	defer keys.Release()
	n := len(dirs)
	cols := make([]arrow.Array, p.full.NumFields())
	pi := 0
	for i := range cols {
		if pi < len(p.cols) && p.cols[pi] == i {
			cols[i] = keys.Column(pi)
			cols[i].Retain()
			pi++
			continue
		}
		cols[i] = array.MakeArrayOfNull(p.mem, p.full.Field(i).Type, n)
	}
	rec := expr.NewRecord(p.full, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	defer rec.Release()
	res, err := ev.Eval(rec, p.mem)
	if err != nil {
		return nil, fmt.Errorf("filesystem source: partition filter: %w", err)
	}
	defer res.Release()
	b, ok := res.(*array.Boolean)
	if !ok {
		return nil, fmt.Errorf("filesystem source: partition filter is not a condition (%s)", res.DataType())
	}
	var keep []string
	for i, rel := range dirs {
		if b.IsValid(i) && b.Value(i) {
			keep = append(keep, rel)
		}
	}
	return keep, nil
}
