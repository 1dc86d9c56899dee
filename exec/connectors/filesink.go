package connectors

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/exec/format"
)

// PartFiles is the part-file state machine of one file sink subtask. Names
// tell the table (a stable id), the subtask and the part number n:
//
//	(none) --Writer--> in-progress ".part-<id>-<subtask>-<n>.inprogress"
//	in-progress --Roll--> rolled in-progress (flushed; fsync under way in the
//	  background, awaiting PreCommit)
//	in-progress --PreCommit(epoch)--> pending ".part-<id>-<subtask>-<n>.pending"
//	pending(e) --Commit(epoch >= e)--> visible "part-<id>-<subtask>-<n>"
//	in-progress --Discard, Abort--> removed; pending --Abort--> removed
//
// Every step is a rename within the directory followed by a sync of the
// directory, so a crash leaves each part in exactly one of its states.
// The fsyncs of a pre-commit (the rolled files', then the directory's) may
// run in the background (preCommit and syncJob.start): whoever pre-commits
// so must wait for them before the checkpoint that names the pending files
// completes; until then a crash loses the pending files with the
// checkpoint that named them, and the restore removes them.
// Without checkpointing the sink pre-commits and commits at once (on
// rollover and at Finish). With checkpointing, PreCommit runs on barrier n
// and Commit when checkpoint n completes (two-phase commit); Restore
// completes the commits of a restored checkpoint and removes the rest.
// Part numbers only grow, so names never collide, also across restores and
// reruns. n is zero-padded to partDigits digits, so names sort (ls, the
// filesystem source) in the order the parts were written and committed;
// unpadded names of earlier versions are still recognised.
type PartFiles struct {
	dir     string
	id      string
	base    string // "part-<id>-<subtask>-"
	next    int
	cur     *partFile
	rolled  []rolledPart // flushed in-progress parts not yet pre-committed
	pending []pendingPart
	// wg counts the background fsyncs of rolled files (the sink's Close
	// waits for them); shared by the part files of one sink.
	wg *sync.WaitGroup
}

// rolledPart is a rolled in-progress file: its visible name and the wait
// for its background fsync (which closes the file).
type rolledPart struct {
	name   string
	synced func() error
}

type partFile struct {
	name   string // visible name
	f      *os.File
	w      *bufio.Writer
	size   int64
	opened time.Time
}

type pendingPart struct {
	epoch int64
	name  string // visible name
}

const (
	inProgressSuffix = ".inprogress"
	pendingSuffix    = ".pending"
)

// partDigits is the width part numbers are zero-padded to: "-0-2" sorted
// after "-0-10". Ten digits outlast a subtask committing a part every
// second for three centuries.
const partDigits = 10

// partName returns the visible name of part n.
func (p *PartFiles) partName(n int) string { return fmt.Sprintf("%s%0*d", p.base, partDigits, n) }

func (p *PartFiles) inProgressPath(name string) string {
	return filepath.Join(p.dir, "."+name+inProgressSuffix)
}
func (p *PartFiles) pendingPath(name string) string {
	return filepath.Join(p.dir, "."+name+pendingSuffix)
}
func (p *PartFiles) finalPath(name string) string { return filepath.Join(p.dir, name) }

// partNumber returns n when file (a directory entry) is a part of this
// subtask in any state, and whether it is hidden (in-progress or pending).
func (p *PartFiles) partNumber(file string) (n int, hidden, ok bool) {
	rest := file
	if strings.HasPrefix(rest, ".") {
		hidden = true
		rest = rest[1:]
		switch {
		case strings.HasSuffix(rest, inProgressSuffix):
			rest = strings.TrimSuffix(rest, inProgressSuffix)
		case strings.HasSuffix(rest, pendingSuffix):
			rest = strings.TrimSuffix(rest, pendingSuffix)
		default:
			return 0, false, false
		}
	}
	rest, ok = strings.CutPrefix(rest, p.base)
	if !ok {
		return 0, false, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || rest != p.partName(n)[len(p.base):] && rest != strconv.Itoa(n) {
		return 0, false, false // not the padded form, nor an unpadded one (written before padding)
	}
	return n, hidden, true
}

// NewPartFiles prepares part files of subtask in dir (created if missing).
// Numbering continues after any part files of the same id and subtask that
// already exist, so a rerun never overwrites earlier output.
func NewPartFiles(dir, id string, subtask int) (*PartFiles, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("filesystem sink: %w", err)
	}
	p := partFilesView(dir, id, subtask)
	p.wg = new(sync.WaitGroup)
	if _, err := p.scan(false); err != nil {
		return nil, err
	}
	return p, nil
}

// scan moves next past every part of this subtask in the directory and,
// when remove is set, deletes the hidden ones; it returns how many it
// deleted.
func (p *PartFiles) scan(remove bool) (int, error) {
	ents, err := os.ReadDir(p.dir)
	if err != nil {
		return 0, fmt.Errorf("filesystem sink: %w", err)
	}
	removed := 0
	for _, e := range ents {
		n, hidden, ok := p.partNumber(e.Name())
		if !ok {
			continue
		}
		if n >= p.next {
			p.next = n + 1
		}
		if hidden && remove {
			if err := os.Remove(filepath.Join(p.dir, e.Name())); err != nil && !os.IsNotExist(err) {
				return removed, fmt.Errorf("filesystem sink: discarding uncommitted output: %w", err)
			}
			removed++
		}
	}
	return removed, nil
}

// Writer returns the writer of the in-progress file, opening one if needed.
func (p *PartFiles) Writer() (*bufio.Writer, error) {
	if p.cur != nil {
		return p.cur.w, nil
	}
	name := p.partName(p.next)
	p.next++
	f, err := os.OpenFile(p.inProgressPath(name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("filesystem sink: %w", err)
	}
	p.cur = &partFile{name: name, f: f, w: bufio.NewWriterSize(f, 256<<10), opened: time.Now()}
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

// Flush writes the in-progress file's buffer to the file (no sync).
func (p *PartFiles) Flush() error {
	if p.cur == nil {
		return nil
	}
	if err := p.cur.w.Flush(); err != nil {
		return fmt.Errorf("filesystem sink: writing %s: %w", p.inProgressPath(p.cur.name), err)
	}
	return nil
}

// Roll flushes the in-progress file and starts its fsync (which then
// closes it) in the background; it stays hidden until the next PreCommit.
// The next write opens a new part. No-op when no file is open.
func (p *PartFiles) Roll() error {
	c := p.cur
	if c == nil {
		return nil
	}
	p.cur = nil
	if err := c.w.Flush(); err != nil {
		c.f.Close()
		os.Remove(p.inProgressPath(c.name))
		return fmt.Errorf("filesystem sink: writing %s: %w", p.inProgressPath(c.name), err)
	}
	if p.wg == nil {
		p.wg = new(sync.WaitGroup)
	}
	p.rolled = append(p.rolled, rolledPart{name: c.name, synced: background(p.wg, func() error {
		err := syncFile(c.f)
		if cerr := c.f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("filesystem sink: syncing %s: %w", c.name, err)
		}
		return nil
	})})
	return nil
}

// syncFile is f.Sync (a variable for the tests' failing disks).
var syncFile = (*os.File).Sync

// background runs f on a goroutine counted by wg and returns the wait for
// its result (any number of calls).
func background(wg *sync.WaitGroup, f func() error) func() error {
	done := make(chan struct{})
	var err error
	wg.Add(1)
	go func() {
		defer wg.Done()
		err = f()
		close(done)
	}()
	return func() error {
		<-done
		return err
	}
}

// syncJob is what makes a pre-commit durable: the previous pre-commit's
// job (a checkpoint that names this pre-commit's pending files names the
// earlier ones too, whether or not an aborted checkpoint waited for them),
// the rolled files' fsyncs, then the syncs of the directories their
// renames changed.
type syncJob struct {
	prev  func() error
	waits []func() error
	dirs  []string
}

func (j *syncJob) run() error {
	var err error
	if j.prev != nil {
		err = j.prev()
	}
	for _, w := range j.waits {
		if werr := w(); err == nil {
			err = werr
		}
	}
	for _, d := range j.dirs {
		if derr := syncDir(d); err == nil {
			err = derr
		}
	}
	return err
}

// start runs j on a goroutine counted by wg and returns the wait for it
// (j.prev when there is nothing else to sync).
func (j *syncJob) start(wg *sync.WaitGroup) func() error {
	if len(j.waits) == 0 && len(j.dirs) == 0 {
		return j.prev
	}
	job := *j
	return background(wg, job.run)
}

// PreCommit rolls the in-progress file and renames every rolled file to a
// pending file of epoch (still hidden), then waits for the files' fsyncs
// and syncs the directory: the data is durable and a restored checkpoint
// can commit it. No-op when nothing was written since the last PreCommit.
func (p *PartFiles) PreCommit(epoch int64) error {
	var j syncJob
	err := p.preCommit(epoch, &j)
	if jerr := j.run(); err == nil {
		err = jerr
	}
	return err
}

// preCommit is PreCommit leaving the syncs to j: the rolled files are
// pending, but durable only once j has run. On an error j still holds the
// syncs of the files renamed before it: run it.
func (p *PartFiles) preCommit(epoch int64, j *syncJob) error {
	if err := p.Roll(); err != nil {
		return err
	}
	if len(p.rolled) == 0 {
		return nil
	}
	j.dirs = append(j.dirs, p.dir)
	for len(p.rolled) > 0 {
		r := p.rolled[0]
		if err := os.Rename(p.inProgressPath(r.name), p.pendingPath(r.name)); err != nil {
			return fmt.Errorf("filesystem sink: pre-commit: %w", err)
		}
		p.rolled = p.rolled[1:]
		p.pending = append(p.pending, pendingPart{epoch: epoch, name: r.name})
		j.waits = append(j.waits, r.synced)
	}
	p.rolled = nil
	return nil
}

// Wait waits for the background fsyncs of the files rolled so far.
func (p *PartFiles) Wait() {
	if p.wg != nil {
		p.wg.Wait()
	}
}

// Commit makes the pending files of epochs <= epoch visible (rename, then
// sync the directory). Committing again is harmless: a file already renamed
// is skipped. A file that fails to commit stays pending (retried by the
// next Commit).
func (p *PartFiles) Commit(epoch int64) error {
	keep := p.pending[:0]
	renamed := false
	var err error
	for _, pp := range p.pending {
		if pp.epoch > epoch {
			keep = append(keep, pp)
			continue
		}
		done, cerr := p.commitOne(pp)
		if cerr != nil {
			if err == nil {
				err = cerr
			}
			keep = append(keep, pp)
			continue
		}
		renamed = renamed || done
	}
	p.pending = keep
	if renamed {
		if serr := syncDir(p.dir); err == nil {
			err = serr
		}
	}
	return err
}

// commitOne renames a pending file to its visible name. It reports false
// when the file was already committed (pending gone, visible there), and
// fails when neither exists or both do.
func (p *PartFiles) commitOne(pp pendingPart) (bool, error) {
	tmp, final := p.pendingPath(pp.name), p.finalPath(pp.name)
	_, terr := os.Lstat(tmp)
	_, ferr := os.Lstat(final)
	switch {
	case terr == nil && ferr == nil:
		return false, fmt.Errorf("filesystem sink: cannot commit %s (epoch %d): %s already exists", tmp, pp.epoch, final)
	case terr == nil:
		if err := os.Rename(tmp, final); err != nil {
			return false, fmt.Errorf("filesystem sink: commit: %w", err)
		}
		return true, nil
	case os.IsNotExist(terr) && ferr == nil:
		return false, nil // committed before
	case os.IsNotExist(terr) && os.IsNotExist(ferr):
		return false, fmt.Errorf("filesystem sink: cannot commit the output of epoch %d: neither %s nor %s exists", pp.epoch, tmp, final)
	}
	if terr != nil && !os.IsNotExist(terr) {
		return false, fmt.Errorf("filesystem sink: commit: %w", terr)
	}
	return false, fmt.Errorf("filesystem sink: commit: %w", ferr)
}

// Restore brings the directory to the state of a restored checkpoint whose
// pending files are pending: it commits them (a file already visible is
// left alone; a pending file that is gone while its visible name is absent
// is an error naming it), then deletes every other in-progress and pending
// file of this subtask (output written after that checkpoint) and moves
// the numbering past every part of this subtask seen and past next.
func (p *PartFiles) Restore(pending []pendingPart, next int) error {
	p.Discard()
	p.pending = nil
	for _, pp := range pending {
		if n, hidden, ok := p.partNumber(pp.name); !ok || hidden {
			return fmt.Errorf("filesystem sink: cannot restore: the checkpoint names part file '%s', which is not a part of this sink subtask (%s<n>)", pp.name, p.base)
		} else if n >= next {
			next = n + 1
		}
	}
	renamed := false
	for _, pp := range pending {
		done, err := p.commitOne(pp)
		if err != nil {
			return err
		}
		renamed = renamed || done
	}
	if renamed {
		if err := syncDir(p.dir); err != nil {
			return err
		}
	}
	removed, err := p.scan(true)
	if err != nil {
		return err
	}
	if removed > 0 {
		if err := syncDir(p.dir); err != nil {
			return err
		}
	}
	if next > p.next {
		p.next = next
	}
	return nil
}

// view returns the part files of part id id and subtask in the same
// directory (with nothing open or pending): the view through which a
// restored subtask handles the files of an old subtask or of the job it
// was restored from.
func (p *PartFiles) view(id string, subtask int) *PartFiles { return partFilesView(p.dir, id, subtask) }

// partFilesView is the part files of part id id and subtask in dir, with
// nothing open or pending (a restore's view of an old subtask's files).
func partFilesView(dir, id string, subtask int) *PartFiles {
	return &PartFiles{dir: dir, id: id, base: fmt.Sprintf("part-%s-%d-", id, subtask)}
}

// Discard removes the in-progress and rolled files (never part of a
// checkpoint); pending files stay for a later Commit or Restore.
func (p *PartFiles) Discard() {
	if p.cur != nil {
		p.cur.f.Close()
		os.Remove(p.inProgressPath(p.cur.name))
		p.cur = nil
	}
	for _, r := range p.rolled {
		os.Remove(p.inProgressPath(r.name)) // its fsync still closes it
	}
	p.rolled = nil
}

// Abort discards the in-progress, rolled and pending files.
func (p *PartFiles) Abort() error {
	p.Discard()
	for _, pp := range p.pending {
		os.Remove(p.pendingPath(pp.name))
	}
	p.pending = nil
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("filesystem sink: %w", err)
	}
	err = d.Sync()
	d.Close()
	if err != nil {
		return fmt.Errorf("filesystem sink: syncing directory %s: %w", dir, err)
	}
	return nil
}

// FileSink is the filesystem sink: CSV or JSON lines into part files of the
// 'path' directory.
//
// Without checkpointing (SinkContext.Checkpointing false) a part is
// committed when it rolls (size or rollover interval, also on Tick) and at
// Finish. With checkpointing the sink is an exec.TwoPhaseSink: it never
// commits on its own (parts still roll but stay hidden, Finish only
// flushes); PreCommit(n) makes everything written so far pending for epoch
// n, Commit(n) makes epochs <= n visible, and RestoreState after a failure
// completes the restored checkpoint's commits and discards the rest, so
// the committed output is exactly-once. Not safe for concurrent use: the
// runtime calls every method on the sink's goroutine.
type FileSink struct {
	// legacyID is the part id states before version 3 (which do not
	// record theirs) used: PartID.
	legacyID    string
	parts       *PartFiles
	csv         *format.CSVEncoder
	json        *format.JSONEncoder
	subtask     int
	parallelism int
	updating    bool
	fileSize    int64
	rollover    time.Duration
	autoCommit  bool         // no checkpointing: commit on every roll
	epoch       int64        // auto-commit epoch counter
	lastSync    func() error // the wait of the last PreCommitAsync
	buf         []byte
	closed      bool
	now         func() time.Time
}

// PartID returns the deterministic "uuid-ish" id in part file names of a
// table: derived from the table name and path.
func PartID(t *catalog.Table) string { return uuidOf(t.Name, t.OptionOr("path", "")) }

// uuidOf formats two 64-bit hashes of x and y as a UUID-like id.
func uuidOf(x, y string) string {
	h1 := fnv.New64a()
	h1.Write([]byte(x + "\x00" + y))
	a := h1.Sum64()
	h2 := fnv.New64()
	h2.Write([]byte(y + "\x00" + x))
	b := h2.Sum64()
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", a>>32, (a>>16)&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
}

// partIDFor is the id in the part file names of job jobID's sink of table
// t: PartID's mixed with the job id, so that two jobs writing one path never
// name (and so overwrite or, restoring, delete) each other's files. A job
// restored from a checkpoint handles the files of the lineage its state
// names (restoreFrom). Without a job id (tests), PartID.
func partIDFor(t *catalog.Table, jobID string) string {
	if jobID == "" {
		return PartID(t)
	}
	return uuidOf(PartID(t), jobID)
}

func newFileSink(t *catalog.Table, sc *exec.SinkContext) (*FileSink, error) {
	s := &FileSink{
		legacyID:    PartID(t),
		subtask:     sc.Subtask,
		parallelism: max(sc.Parallelism, 1),
		updating:    sc.Updating,
		rollover:    optDuration(t, "sink.rolling-policy.rollover-interval", 30*time.Minute),
		fileSize:    128 << 20,
		autoCommit:  !sc.Checkpointing,
		now:         time.Now,
	}
	if v, ok := t.Option("sink.rolling-policy.file-size"); ok {
		s.fileSize, _ = catalog.ParseMemorySize(v)
	}
	if sc.Updating && strings.EqualFold(t.OptionOr("format", ""), "csv") {
		return nil, fmt.Errorf("filesystem sink with 'format' = 'csv' cannot write updating input (-U/+U/-D); use 'format' = 'json'")
	}
	var err error
	if s.csv, s.json, err = sinkEncoder(t, sc.Schema.Names()); err != nil {
		return nil, err
	}
	parts, err := NewPartFiles(fsPath(t), partIDFor(t, sc.JobID), sc.Subtask)
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
	return s.maybeRoll(s.now())
}

// Tick rolls the in-progress file when it is older than the rollover
// interval, so an idle unbounded job still commits what it wrote (with
// checkpointing: at the next checkpoint).
func (s *FileSink) Tick(now time.Time) error { return s.maybeRoll(now) }

func (s *FileSink) maybeRoll(now time.Time) error {
	if !s.parts.ShouldRoll(s.fileSize, s.rollover, now) {
		return nil
	}
	if s.autoCommit {
		return s.commitAll()
	}
	return s.parts.Roll()
}

func (s *FileSink) commitAll() error {
	s.epoch++
	if err := s.parts.PreCommit(s.epoch); err != nil {
		return err
	}
	return s.parts.Commit(s.epoch)
}

// Finish commits everything written (end of a bounded input); with
// checkpointing it only flushes: the final checkpoint commits.
func (s *FileSink) Finish() error {
	if s.autoCommit {
		return s.commitAll()
	}
	return s.parts.Flush()
}

// PreCommit implements exec.TwoPhaseSink: everything written so far
// becomes pending (durable, hidden) for epoch checkpointID. The state
// (version 3) is the header (see state.go), the sink's directory (absolute),
// the part id of its files, uvarint next part number, uvarint number of
// pending files, and per file: varint epoch and its visible name
// ("part-<id>-<subtask>-<n>", relative to the directory). Version 2 had no
// part id (it was PartID), version 1 no directory either.
func (s *FileSink) PreCommit(checkpointID int64) ([]byte, error) {
	return waitPreCommit(s.PreCommitAsync(checkpointID))
}

// waitPreCommit is PreCommit of a PreCommitAsync's results: it waits for
// done.
func waitPreCommit(state []byte, done func() error, err error) ([]byte, error) {
	if err == nil && done != nil {
		err = done()
	}
	if err != nil {
		return nil, err
	}
	return state, nil
}

// PreCommitAsync implements exec.AsyncPreCommitSink: PreCommit with the
// fsyncs left to the background (done waits for them).
func (s *FileSink) PreCommitAsync(checkpointID int64) ([]byte, func() error, error) {
	j := syncJob{prev: s.lastSync}
	if err := s.parts.preCommit(checkpointID, &j); err != nil {
		j.run()
		return nil, nil, err
	}
	s.lastSync = j.start(s.parts.wg)
	return s.state(), s.lastSync, nil
}

// state encodes the sink's checkpoint state (see PreCommit).
func (s *FileSink) state() []byte {
	b := stateHeader(kindFileSink, s.subtask, s.parallelism)
	b = appendString(b, absDir(s.parts.dir))
	b = appendString(b, s.parts.id)
	b = binary.AppendUvarint(b, uint64(s.parts.next))
	b = binary.AppendUvarint(b, uint64(len(s.parts.pending)))
	for _, pp := range s.parts.pending {
		b = binary.AppendVarint(b, pp.epoch)
		b = appendString(b, pp.name)
	}
	return b
}

// Commit implements exec.TwoPhaseSink: pending files of epochs <=
// checkpointID become visible.
func (s *FileSink) Commit(checkpointID int64) error { return s.parts.Commit(checkpointID) }

// RestoreState implements exec.TwoPhaseSink (see PartFiles.Restore). It is
// called before any Write. An empty state means nothing was pending: only
// the uncommitted files of this subtask are removed.
func (s *FileSink) RestoreState(state []byte) error {
	if len(state) == 0 {
		return s.parts.Restore(nil, 0)
	}
	r, err := openState(state, kindFileSink, s.subtask, s.parallelism)
	if err != nil {
		return err
	}
	st, err := readSinkState(r)
	if err != nil {
		return err
	}
	return s.restoreFrom(st, true)
}

// sinkState is a decoded file sink state.
type sinkState struct {
	subtask int // of the subtask that took it
	dir     string
	id      string // the part id of its files ("": version 2 or older, PartID)
	next    int
	pending []pendingPart
}

// absDir is dir made absolute (as recorded in the state), or dir itself if
// that fails.
func absDir(dir string) string {
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return filepath.Clean(dir)
}

// restoreFrom restores the state of old subtask st.subtask (own: this
// subtask's index). When the sink's path changed since the checkpoint (an
// upgrade writing the same table elsewhere), the state's pending files are
// committed where they were written, and nothing else in that directory is
// touched (the job that wrote it may still be running); this subtask
// starts afresh in its own directory. A version 1 state does not record
// its directory: its files must be in this one.
func (s *FileSink) restoreFrom(st sinkState, own bool) error {
	if st.dir != "" && st.dir != absDir(s.parts.dir) {
		old := &PartFiles{dir: st.dir}
		renamed := false
		for _, pp := range st.pending {
			done, err := old.commitOne(pp)
			if err != nil {
				return fmt.Errorf("%w (the sink's path was %s when the checkpoint was taken)", err, st.dir)
			}
			renamed = renamed || done
		}
		if renamed {
			if err := syncDir(st.dir); err != nil {
				return err
			}
		}
		if own {
			return s.parts.Restore(nil, 0)
		}
		return nil
	}
	id := s.adopt(st.id)
	parts := s.parts
	if !own {
		parts = s.parts.view(id, st.subtask)
	}
	return parts.Restore(st.pending, st.next)
}

// adopt makes the part id of a restored state (id; "" for states before
// version 3: PartID) this subtask's: a restored job goes on naming its
// files as the job that took the checkpoint did (its subtasks' files
// sort in the order they were written), while a new job's differ from
// every other job's. It returns the id.
func (s *FileSink) adopt(id string) string {
	if id == "" {
		id = s.legacyID
	}
	if id != s.parts.id {
		wg := s.parts.wg
		s.parts = s.parts.view(id, s.subtask)
		s.parts.wg = wg
	}
	return id
}

// readSinkState decodes a file sink state after its header.
func readSinkState(r *stateReader) (sinkState, error) {
	st := sinkState{subtask: r.subtask}
	if r.version >= 2 {
		st.dir = r.str()
	}
	if r.version >= 3 {
		st.id = r.str()
	}
	next := r.int()
	n := r.count(2)
	pending := make([]pendingPart, 0, n)
	for i := 0; i < n; i++ {
		e := r.varint()
		pending = append(pending, pendingPart{epoch: e, name: r.str()})
	}
	if err := r.end(); err != nil {
		return sinkState{}, err
	}
	if next > math.MaxInt32 || (r.version >= 2 && !filepath.IsAbs(st.dir)) {
		return sinkState{}, fmt.Errorf("filesystem sink: cannot restore: the checkpoint state is corrupted")
	}
	st.next, st.pending = int(next), pending
	return st, nil
}

// RestoreStates implements exec.RescalableSink for a restore at another
// parallelism. The states are those of old subtasks i with i mod
// Parallelism == Subtask, so across the new job every old subtask's files
// are handled by exactly one new subtask (old subtasks with i >=
// Parallelism included). For each state it completes the commits pending
// in it (the part files carry the old subtask's index: "part-<id>-<i>-<n>")
// and deletes every other in-progress or pending file of that old subtask
// (output written after the restored checkpoint). It also removes this
// subtask's own hidden files (its own state, when it is among them, is
// restored like that of any old subtask) and continues its own numbering
// past every part of its index seen and past the state's next part number,
// so names never collide. With no state it only cleans its own files.
// Hidden files of subtask indices that are neither this subtask nor one of
// the given old ones are left alone: another subtask owns them.
func (s *FileSink) RestoreStates(states [][]byte) error {
	rs, err := openGiven(states, kindFileSink, s.subtask, s.parallelism)
	if err != nil {
		return err
	}
	ownDone := false
	for _, r := range rs {
		st, err := readSinkState(r)
		if err != nil {
			return err
		}
		if st.dir == "" || st.dir == absDir(s.parts.dir) {
			s.adopt(st.id) // (every state of a job names one id)
		}
		own := r.subtask == s.subtask
		if err := s.restoreFrom(st, own); err != nil {
			return err
		}
		ownDone = ownDone || own
	}
	if !ownDone {
		return s.parts.Restore(nil, 0)
	}
	return nil
}

// Close discards uncommitted files; idempotent. With checkpointing, pending
// files are kept: they may belong to a checkpoint that completed but whose
// commit did not happen yet; RestoreState of the next attempt commits or
// removes them.
func (s *FileSink) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	defer s.parts.Wait()
	if s.autoCommit {
		return s.parts.Abort()
	}
	s.parts.Discard()
	return nil
}

// sinkEncoder returns the encoder of the table's 'format' for columns
// names: a CSV or a JSON one.
func sinkEncoder(t *catalog.Table, names []string) (*format.CSVEncoder, *format.JSONEncoder, error) {
	switch strings.ToLower(t.OptionOr("format", "")) {
	case "csv":
		o, err := format.CSVOptionsFromTable(t)
		if err != nil {
			return nil, nil, err
		}
		return format.NewCSVEncoder(o), nil, nil
	case "json":
		o, err := format.JSONOptionsFromTable(t)
		if err != nil {
			return nil, nil, err
		}
		return nil, format.NewJSONEncoder(names, o), nil
	}
	return nil, nil, fmt.Errorf("filesystem sink: unsupported format '%s'", t.OptionOr("format", ""))
}
