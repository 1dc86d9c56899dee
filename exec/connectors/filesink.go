package connectors

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/exec/format"
)

// PartFiles is the part-file state machine of one file sink subtask:
//
//	(none) --open--> in-progress ".part-<id>-<subtask>-<n>.inprogress"
//	in-progress --PreCommit(epoch)--> pending(epoch): flushed, synced, closed
//	pending(e) --Commit(epoch >= e)--> visible "part-<id>-<subtask>-<n>"
//	in-progress, pending --Abort--> removed
//
// Without checkpointing the sink pre-commits and commits at once (on
// rollover and at Finish). With checkpointing, PreCommit runs on barrier n
// and Commit when checkpoint n completes (two-phase commit).
type PartFiles struct {
	dir     string
	base    string // "part-<id>-<subtask>-"
	next    int
	cur     *partFile
	pending []pendingPart
}

type partFile struct {
	tmp, final string
	f          *os.File
	w          *bufio.Writer
	size       int64
	opened     time.Time
}

type pendingPart struct {
	epoch      int64
	tmp, final string
}

// NewPartFiles prepares part files of subtask in dir (created if missing).
// Numbering continues after any part files of the same id and subtask that
// already exist, so a rerun never overwrites earlier output.
func NewPartFiles(dir, id string, subtask int) (*PartFiles, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("filesystem sink: %w", err)
	}
	p := &PartFiles{dir: dir, base: fmt.Sprintf("part-%s-%d-", id, subtask)}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("filesystem sink: %w", err)
	}
	for _, e := range ents {
		n := strings.TrimSuffix(strings.TrimPrefix(e.Name(), "."), ".inprogress")
		if rest, ok := strings.CutPrefix(n, p.base); ok {
			if k, err := strconv.Atoi(rest); err == nil && k >= p.next {
				p.next = k + 1
			}
		}
	}
	return p, nil
}

// Writer returns the writer of the in-progress file, opening one if needed.
func (p *PartFiles) Writer() (*bufio.Writer, error) {
	if p.cur != nil {
		return p.cur.w, nil
	}
	name := p.base + strconv.Itoa(p.next)
	p.next++
	tmp := filepath.Join(p.dir, "."+name+".inprogress")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("filesystem sink: %w", err)
	}
	p.cur = &partFile{tmp: tmp, final: filepath.Join(p.dir, name), f: f, w: bufio.NewWriterSize(f, 256<<10), opened: time.Now()}
	return p.cur.w, nil
}

// Written records n bytes written to the current file (for the size policy).
func (p *PartFiles) Written(n int) {
	if p.cur != nil {
		p.cur.size += int64(n)
	}
}

// ShouldRoll reports whether the in-progress file reached size bytes or age.
func (p *PartFiles) ShouldRoll(size int64, age time.Duration, now time.Time) bool {
	if p.cur == nil {
		return false
	}
	return size > 0 && p.cur.size >= size || age > 0 && now.Sub(p.cur.opened) >= age
}

// PreCommit flushes, syncs and closes the in-progress file; it becomes
// pending for epoch (still hidden). No-op when no file is open.
func (p *PartFiles) PreCommit(epoch int64) error {
	c := p.cur
	if c == nil {
		return nil
	}
	p.cur = nil
	err := c.w.Flush()
	if err == nil {
		err = c.f.Sync()
	}
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(c.tmp)
		return fmt.Errorf("filesystem sink: %w", err)
	}
	p.pending = append(p.pending, pendingPart{epoch: epoch, tmp: c.tmp, final: c.final})
	return nil
}

// Commit makes the pending files of epochs <= epoch visible (rename, then
// sync the directory). Committing again is harmless: a file already renamed
// is skipped.
func (p *PartFiles) Commit(epoch int64) error {
	keep := p.pending[:0]
	renamed := false
	var err error
	for _, pp := range p.pending {
		if pp.epoch > epoch {
			keep = append(keep, pp)
			continue
		}
		if rerr := os.Rename(pp.tmp, pp.final); rerr != nil && !alreadyCommitted(pp) {
			if err == nil {
				err = fmt.Errorf("filesystem sink: commit: %w", rerr)
			}
			keep = append(keep, pp) // retry on the next commit
			continue
		}
		renamed = true
	}
	p.pending = keep
	if renamed && err == nil {
		if d, derr := os.Open(p.dir); derr == nil {
			d.Sync()
			d.Close()
		}
	}
	return err
}

func alreadyCommitted(pp pendingPart) bool {
	_, e1 := os.Stat(pp.tmp)
	_, e2 := os.Stat(pp.final)
	return os.IsNotExist(e1) && e2 == nil
}

// Abort discards the in-progress and pending files.
func (p *PartFiles) Abort() error {
	if p.cur != nil {
		p.cur.f.Close()
		os.Remove(p.cur.tmp)
		p.cur = nil
	}
	for _, pp := range p.pending {
		os.Remove(pp.tmp)
	}
	p.pending = nil
	return nil
}

// FileSink is the filesystem sink: CSV or JSON lines into part files of the
// 'path' directory.
type FileSink struct {
	parts      *PartFiles
	csv        *format.CSVEncoder
	json       *format.JSONEncoder
	updating   bool
	fileSize   int64
	rollover   time.Duration
	autoCommit bool  // no checkpointing: commit on every roll
	epoch      int64 // auto-commit epoch counter
	buf        []byte
	closed     bool
	now        func() time.Time
}

// PartID returns the deterministic "uuid-ish" id in part file names of a
// table: derived from the table name and path.
func PartID(t *catalog.Table) string {
	h1 := fnv.New64a()
	h1.Write([]byte(t.Name + "\x00" + t.OptionOr("path", "")))
	a := h1.Sum64()
	h2 := fnv.New64()
	h2.Write([]byte(t.OptionOr("path", "") + "\x00" + t.Name))
	b := h2.Sum64()
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", a>>32, (a>>16)&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
}

func newFileSink(t *catalog.Table, sc *exec.SinkContext) (*FileSink, error) {
	s := &FileSink{
		updating:   sc.Updating,
		rollover:   optDuration(t, "sink.rolling-policy.rollover-interval", 30*time.Minute),
		fileSize:   128 << 20,
		autoCommit: true,
		now:        time.Now,
	}
	if v, ok := t.Option("sink.rolling-policy.file-size"); ok {
		s.fileSize, _ = catalog.ParseMemorySize(v)
	}
	switch strings.ToLower(t.OptionOr("format", "")) {
	case "csv":
		if sc.Updating {
			return nil, fmt.Errorf("filesystem sink with 'format' = 'csv' cannot write updating input (-U/+U/-D); use 'format' = 'json'")
		}
		o, err := format.CSVOptionsFromTable(t)
		if err != nil {
			return nil, err
		}
		s.csv = format.NewCSVEncoder(o)
	case "json":
		o, err := format.JSONOptionsFromTable(t)
		if err != nil {
			return nil, err
		}
		s.json = format.NewJSONEncoder(sc.Schema.Names(), o)
	default:
		return nil, fmt.Errorf("filesystem sink: unsupported format '%s'", t.OptionOr("format", ""))
	}
	parts, err := NewPartFiles(t.OptionOr("path", ""), PartID(t), sc.Subtask)
	if err != nil {
		return nil, err
	}
	s.parts = parts
	return s, nil
}

// Parts returns the sink's part-file state machine (for checkpointing).
func (s *FileSink) Parts() *PartFiles { return s.parts }

// Write encodes the batch into the in-progress part file.
func (s *FileSink) Write(b exec.Batch) error {
	if b.Rec == nil || b.Rows() == 0 {
		return nil
	}
	w, err := s.parts.Writer()
	if err != nil {
		return err
	}
	n := b.Rows()
	s.buf = s.buf[:0]
	if s.csv != nil {
		s.csv.Reset(b.Rec)
		for i := 0; i < n; i++ {
			s.buf = s.csv.AppendRow(s.buf, i)
		}
	} else {
		s.json.Reset(b.Rec)
		for i := 0; i < n; i++ {
			op := ""
			if s.updating {
				op = b.Op(i).String()
			}
			s.buf = s.json.AppendRow(s.buf, i, op)
		}
	}
	if _, err := w.Write(s.buf); err != nil {
		return fmt.Errorf("filesystem sink: %w", err)
	}
	s.parts.Written(len(s.buf))
	if cap(s.buf) > 4<<20 {
		s.buf = nil
	}
	if s.autoCommit && s.parts.ShouldRoll(s.fileSize, s.rollover, s.now()) {
		return s.commitAll()
	}
	return nil
}

// Tick rolls the in-progress file when it is older than the rollover
// interval, so an idle unbounded job still commits what it wrote.
func (s *FileSink) Tick(now time.Time) error {
	if s.autoCommit && s.parts.ShouldRoll(s.fileSize, s.rollover, now) {
		return s.commitAll()
	}
	return nil
}

func (s *FileSink) commitAll() error {
	s.epoch++
	if err := s.parts.PreCommit(s.epoch); err != nil {
		return err
	}
	return s.parts.Commit(s.epoch)
}

// Finish commits everything written (end of a bounded input).
func (s *FileSink) Finish() error { return s.commitAll() }

// Close discards uncommitted files; idempotent.
func (s *FileSink) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.parts.Abort()
}
