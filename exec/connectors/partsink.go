package connectors

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/exec/format"
)

// PartitionedSink is the filesystem sink of a table with PARTITIONED BY
// (k1, k2, ...), as Flink writes one: every row goes into the directory
// <path>/k1=v1/k2=v2/ of its partition values (escaped as Flink escapes
// path names; NULL or ” is partition.default-name), and the files hold
// the other columns only. Each partition directory has its own part files
// (PartFiles: the same in-progress / pending / committed states and
// two-phase commit as the unpartitioned sink).
//
// Partition commit (sink.partition-commit.*): a partition is committed
// (its success file written, with the 'success-file' policy) once its
// files are committed by a checkpoint and the trigger holds: for
// 'partition-time', the watermark (the minimum over all sink subtasks)
// passes the time extracted from the partition values plus the delay; for
// 'process-time' (the default), the clock passes the time the partition
// was first written plus the delay. The subtasks report to one
// partitionCommitter per sink task (SinkContext.Shared): each reports on
// every commit (and on restore) the partitions it wrote and its watermark
// as of that checkpoint; the committer decides over the latest report of
// every subtask. Every subtask keeps its uncommitted partitions in its
// checkpoint state, so a partition whose commit was interrupted is
// committed after the restore. Data arriving for a partition after it was
// committed (late rows) is written, and the partition committed again, as
// in Flink. Without checkpointing, parts commit as they roll and
// partitions are committed at the end of the input.
type PartitionedSink struct {
	// legacyID is the part id states before version 2 (which do not
	// record theirs) used: PartID.
	legacyID    string
	root        string
	id          string
	subtask     int
	parallelism int
	keyNames    []string
	keyCols     []int // partition columns in the input
	dataCols    []int // the others, written into the files
	dataSchema  *arrow.Schema
	csv         *format.CSVEncoder
	json        *format.JSONEncoder
	fileSize    int64
	rollover    time.Duration
	autoCommit  bool
	epoch       int64 // auto-commit epoch counter
	pc          *catalog.PartitionCommit
	clock       exec.Clock
	committer   *partitionCommitter

	parts map[string]*sinkPartition // by relative path "k1=v1/k2=v2"
	// toCommit are the partitions written and not yet committed.
	toCommit map[string]*commitEntry
	wm       int64 // the input's watermark
	// reported is the watermark recorded by each PreCommit not yet
	// committed (checkpoint id -> watermark).
	reported map[int64]int64

	// per batch, reused
	keyFmt   []format.Column
	cols     []arrow.Array // the data columns of the batch
	keyBuf   []byte
	valBuf   []byte
	prevKey  []byte
	samePrev []bool // row i's partition columns hold row i-1's values (sameAsPrevRows)
	rowPart  []*sinkPartition
	batchPs  []*sinkPartition
	closed   bool
	// wg counts the background fsyncs of every partition's part files
	// (partitions leave parts when idle; Close waits for all).
	wg       sync.WaitGroup
	lastSync func() error // the wait of the last PreCommitAsync
}

// sinkPartition is one partition directory's writer.
type sinkPartition struct {
	rel    string
	values []string // unescaped, by partition column (for the time extractor)
	files  *PartFiles
	buf    []byte // this batch's rows
	rows   int
}

// commitEntry is a partition awaiting its commit.
type commitEntry struct {
	values  []string
	created int64 // clock ms of its first write since its last commit
	// lastWrite is the checkpoint that took its latest rows (0: rows
	// written since the last PreCommit).
	lastWrite int64
	dirty     bool // written since the last PreCommit
}

func newPartitionedSink(t *catalog.Table, sc *exec.SinkContext) (*PartitionedSink, error) {
	pc, err := catalog.PartitionCommitFromTable(t)
	if err != nil {
		return nil, err
	}
	s := &PartitionedSink{
		root:        fsPath(t),
		id:          partIDFor(t, sc.JobID),
		legacyID:    PartID(t),
		subtask:     sc.Subtask,
		parallelism: max(sc.Parallelism, 1),
		rollover:    optDuration(t, "sink.rolling-policy.rollover-interval", 30*time.Minute),
		fileSize:    128 << 20,
		autoCommit:  !sc.Checkpointing,
		pc:          pc,
		clock:       sc.Clock,
		parts:       map[string]*sinkPartition{},
		toCommit:    map[string]*commitEntry{},
		wm:          exec.NoWatermark,
		reported:    map[int64]int64{},
	}
	if s.clock == nil {
		s.clock = wallClockT{}
	}
	if v, ok := t.Option("sink.rolling-policy.file-size"); ok {
		s.fileSize, _ = catalog.ParseMemorySize(v)
	}
	if sc.Updating {
		return nil, fmt.Errorf("filesystem sink of partitioned table '%s' cannot write updating input (-U/+U/-D)", t.Name)
	}
	var names []string
	for i, c := range sc.Schema {
		isKey := false
		for _, k := range t.PartitionKeys {
			if strings.EqualFold(k, c.Name) {
				isKey = true
			}
		}
		if isKey {
			continue
		}
		s.dataCols = append(s.dataCols, i)
		names = append(names, c.Name)
	}
	for _, k := range t.PartitionKeys {
		i := sc.Schema.Index(k)
		if i < 0 {
			return nil, fmt.Errorf("filesystem sink: partition column '%s' is not in the sink's input", k)
		}
		s.keyCols = append(s.keyCols, i)
		s.keyNames = append(s.keyNames, sc.Schema[i].Name)
	}
	if s.csv, s.json, err = sinkEncoder(t, names); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.root, 0o755); err != nil {
		return nil, fmt.Errorf("filesystem sink: %w", err)
	}
	if sc.Shared != nil {
		s.committer = sc.Shared("partition-committer", func() any {
			return newPartitionCommitter(s.root, s.keyNames, pc, s.parallelism, s.clock)
		}).(*partitionCommitter)
	} else {
		s.committer = newPartitionCommitter(s.root, s.keyNames, pc, s.parallelism, s.clock)
	}
	return s, nil
}

type wallClockT struct{}

func (wallClockT) Now() time.Time { return time.Now() }

// sameAsPrevRows sets same[i] when every column cols of rec holds at row
// i what it holds at row i-1 (both NULL, or the same bytes), comparing the
// raw values of strings and fixed-width columns a column at a time (a
// false "different" only costs formatting the row's partition again); a
// column of another type (booleans, nested) makes no row the same.
// Consecutive rows of a partitioned sink's input mostly share their
// partition (a day, an hour), so the row need not be formatted again.
func sameAsPrevRows(same []bool, rec arrow.Record, cols []int) []bool {
	n := int(rec.NumRows())
	if cap(same) < n {
		same = make([]bool, n)
	}
	same = same[:n]
	for i := range same {
		same[i] = i > 0
	}
	for _, c := range cols {
		col := rec.Column(c)
		switch a := col.(type) {
		case *array.String:
			vo, data := a.ValueOffsets(), a.ValueBytes()
			base := vo[0]
			for i := 1; i < n; i++ {
				same[i] = same[i] && string(data[vo[i]-base:vo[i+1]-base]) == string(data[vo[i-1]-base:vo[i]-base])
			}
		default:
			fw, ok := col.DataType().(arrow.FixedWidthDataType)
			if !ok || fw.BitWidth()%8 != 0 || len(col.Data().Buffers()) < 2 || col.Data().Buffers()[1] == nil {
				clear(same)
				return same
			}
			w := fw.BitWidth() / 8
			raw := col.Data().Buffers()[1].Bytes()[col.Data().Offset()*w:]
			for i := 1; i < n; i++ {
				same[i] = same[i] && string(raw[i*w:(i+1)*w]) == string(raw[(i-1)*w:i*w])
			}
		}
		if col.NullN() > 0 {
			for i := 1; i < n; i++ {
				// two NULLs over different bytes count as different: the
				// row is formatted, no harm done
				same[i] = same[i] && col.IsValid(i-1) == col.IsValid(i)
			}
		}
	}
	return same
}

// escapePartition appends v escaped as Flink escapes partition path names
// (control characters and "#%'*/:=?\{[]^ and DEL as %XX).
func escapePartition(dst []byte, v []byte) []byte {
	const hex = "0123456789ABCDEF"
	for _, c := range v {
		switch {
		case c < 0x20 || c == 0x7f || c == '"' || c == '#' || c == '%' || c == '\'' || c == '*' || c == '/' ||
			c == ':' || c == '=' || c == '?' || c == '\\' || c == '{' || c == '[' || c == ']' || c == '^':
			dst = append(dst, '%', hex[c>>4], hex[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// unescapePartition reverses escapePartition.
func unescapePartition(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, ok := unhex2(s[i+1], s[i+2]); ok {
				b = append(b, v)
				i += 2
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}

func unhex2(a, b byte) (byte, bool) {
	h := func(c byte) (byte, bool) {
		switch {
		case c >= '0' && c <= '9':
			return c - '0', true
		case c >= 'A' && c <= 'F':
			return c - 'A' + 10, true
		case c >= 'a' && c <= 'f':
			return c - 'a' + 10, true
		}
		return 0, false
	}
	x, ok1 := h(a)
	y, ok2 := h(b)
	return x<<4 | y, ok1 && ok2
}

// partitionOf returns the writer of the partition whose relative path is
// rel (the key bytes), opening it on first use.
func (s *PartitionedSink) partitionOf(rel []byte) (*sinkPartition, error) {
	if p, ok := s.parts[string(rel)]; ok {
		return p, nil
	}
	r := string(rel)
	files, err := NewPartFiles(filepath.Join(s.root, filepath.FromSlash(r)), s.id, s.subtask)
	if err != nil {
		return nil, err
	}
	files.wg = &s.wg
	p := &sinkPartition{rel: r, values: partitionValues(r), files: files}
	s.parts[r] = p
	return p, nil
}

// partitionValues returns the unescaped values of a relative partition
// path (the default name, standing for NULL, is kept as written).
func partitionValues(rel string) []string {
	segs := strings.Split(rel, "/")
	out := make([]string, len(segs))
	for i, seg := range segs {
		_, v, _ := strings.Cut(seg, "=")
		out[i] = unescapePartition(v)
	}
	return out
}

// Write routes every row to its partition and encodes the data columns
// into that partition's in-progress part file.
func (s *PartitionedSink) Write(b exec.Batch) error {
	if b.Rec == nil || b.Rows() == 0 {
		return nil
	}
	n := b.Rows()
	s.keyFmt = s.keyFmt[:0]
	for _, c := range s.keyCols {
		s.keyFmt = append(s.keyFmt, format.NewColumn(b.Rec.Column(c)))
	}
	s.rowPart = s.rowPart[:0]
	s.batchPs = s.batchPs[:0]
	var cur *sinkPartition
	s.prevKey = s.prevKey[:0]
	s.samePrev = sameAsPrevRows(s.samePrev, b.Rec, s.keyCols)
	for i := 0; i < n; i++ {
		if cur != nil && s.samePrev[i] {
			// the previous row's partition: no value formatted or escaped
			cur.rows++
			s.rowPart = append(s.rowPart, cur)
			continue
		}
		s.keyBuf = s.keyBuf[:0]
		for k := range s.keyFmt {
			if k > 0 {
				s.keyBuf = append(s.keyBuf, '/')
			}
			s.keyBuf = append(s.keyBuf, s.keyNames[k]...)
			s.keyBuf = append(s.keyBuf, '=')
			c := &s.keyFmt[k]
			start := len(s.keyBuf)
			if !c.IsNull(i) {
				s.valBuf = c.Append(s.valBuf[:0], i, format.StyleFormatSQL)
				s.keyBuf = escapePartition(s.keyBuf, s.valBuf)
			}
			if len(s.keyBuf) == start {
				s.keyBuf = append(s.keyBuf, s.pc.DefaultName...)
			}
		}
		if cur == nil || string(s.keyBuf) != string(s.prevKey) {
			p, err := s.partitionOf(s.keyBuf)
			if err != nil {
				return err
			}
			cur = p
			s.prevKey = append(s.prevKey[:0], s.keyBuf...)
			if p.rows == 0 {
				s.batchPs = append(s.batchPs, p)
			}
		}
		cur.rows++
		s.rowPart = append(s.rowPart, cur)
	}
	if s.dataSchema == nil {
		fields := make([]arrow.Field, len(s.dataCols))
		for j, c := range s.dataCols {
			fields[j] = b.Rec.Schema().Field(c)
		}
		s.dataSchema = arrow.NewSchema(fields, nil)
	}
	s.cols = s.cols[:0]
	for _, c := range s.dataCols {
		s.cols = append(s.cols, b.Rec.Column(c))
	}
	data := expr.NewRecord(s.dataSchema, s.cols, int64(n))
	defer data.Release()
	if s.csv != nil {
		s.csv.Reset(data)
		for i, p := range s.rowPart {
			p.buf = s.csv.AppendRow(p.buf, i)
		}
	} else {
		s.json.Reset(data)
		for i, p := range s.rowPart {
			p.buf = s.json.AppendRow(p.buf, i, "")
		}
	}
	now := s.clock.Now()
	for _, p := range s.batchPs {
		w, err := p.files.Writer()
		if err != nil {
			return err
		}
		if _, err := w.Write(p.buf); err != nil {
			return fmt.Errorf("filesystem sink: %w", err)
		}
		p.files.Written(len(p.buf))
		p.buf, p.rows = p.buf[:0], 0
		if cap(p.buf) > 1<<20 {
			p.buf = nil
		}
		e := s.toCommit[p.rel]
		if e == nil {
			e = &commitEntry{values: p.values, created: now.UnixMilli()}
			s.toCommit[p.rel] = e
		}
		e.dirty = true
		if err := s.maybeRoll(p, now); err != nil {
			return err
		}
	}
	return nil
}

func (s *PartitionedSink) maybeRoll(p *sinkPartition, now time.Time) error {
	if !p.files.ShouldRoll(s.fileSize, s.rollover, now) {
		return nil
	}
	if s.autoCommit {
		s.epoch++
		if err := p.files.PreCommit(s.epoch); err != nil {
			return err
		}
		return p.files.Commit(s.epoch)
	}
	return p.files.Roll()
}

// Tick rolls the part files older than the rollover interval.
func (s *PartitionedSink) Tick(now time.Time) error {
	for _, rel := range s.sortedParts() {
		if err := s.maybeRoll(s.parts[rel], now); err != nil {
			return err
		}
	}
	return nil
}

// OnWatermark implements exec.WatermarkSink.
func (s *PartitionedSink) OnWatermark(wm int64) error {
	if wm > s.wm {
		s.wm = wm
	}
	return nil
}

func (s *PartitionedSink) sortedParts() []string {
	out := make([]string, 0, len(s.parts))
	for rel := range s.parts {
		out = append(out, rel)
	}
	sort.Strings(out)
	return out
}

// Finish: without checkpointing, commits every part and then, once every
// subtask finished, every partition (the input's watermark is then the
// maximum); with checkpointing it flushes (the final checkpoint commits).
func (s *PartitionedSink) Finish() error {
	if !s.autoCommit {
		for _, rel := range s.sortedParts() {
			if err := s.parts[rel].files.Flush(); err != nil {
				return err
			}
		}
		return nil
	}
	s.epoch++
	for _, rel := range s.sortedParts() {
		p := s.parts[rel]
		if err := p.files.PreCommit(s.epoch); err != nil {
			return err
		}
		if err := p.files.Commit(s.epoch); err != nil {
			return err
		}
	}
	for _, e := range s.toCommit {
		e.lastWrite, e.dirty = s.epoch, false
	}
	return s.committer.report(s.subtask, s.wm, s.entries(s.epoch))
}

// entries returns the partitions awaiting commit whose rows were taken by
// checkpoint id or earlier.
func (s *PartitionedSink) entries(id int64) map[string]commitEntry {
	out := make(map[string]commitEntry, len(s.toCommit))
	for rel, e := range s.toCommit {
		if e.lastWrite > 0 && e.lastWrite <= id {
			out[rel] = *e
		}
	}
	return out
}

// PreCommit implements exec.TwoPhaseSink: every partition's output becomes
// pending for checkpointID. The state (kind 'P', version 1) is the header,
// the sink's directory (absolute), the watermark (varint), uvarint number
// of partition directories with files pending, each: its relative path,
// uvarint next part number, uvarint number of pending files and per file
// varint epoch and visible name; then uvarint number of partitions
// awaiting commit, each: relative path, varint creation time (ms) and
// varint last checkpoint that took rows of it. Lists are sorted by path.
func (s *PartitionedSink) PreCommit(checkpointID int64) ([]byte, error) {
	return waitPreCommit(s.PreCommitAsync(checkpointID))
}

// PreCommitAsync implements exec.AsyncPreCommitSink: PreCommit with the
// fsyncs of every partition's files left to one background job (done
// waits for it).
func (s *PartitionedSink) PreCommitAsync(checkpointID int64) ([]byte, func() error, error) {
	j := syncJob{prev: s.lastSync}
	for rel, e := range s.toCommit {
		if e.dirty {
			e.lastWrite, e.dirty = checkpointID, false
		} else if s.committer.committed(rel, e.lastWrite) {
			delete(s.toCommit, rel)
		}
	}
	b := stateHeader(kindPartSink, s.subtask, s.parallelism)
	b = appendString(b, absDir(s.root))
	b = appendString(b, s.id)
	b = binary.AppendVarint(b, s.wm)
	var withFiles []string
	for _, rel := range s.sortedParts() {
		p := s.parts[rel]
		if err := p.files.preCommit(checkpointID, &j); err != nil {
			j.run()
			return nil, nil, err
		}
		if len(p.files.pending) > 0 {
			withFiles = append(withFiles, rel)
		} else if p.files.cur == nil && len(p.files.rolled) == 0 && s.toCommit[rel] == nil {
			delete(s.parts, rel) // nothing open or pending: reopened on its next row
		}
	}
	b = binary.AppendUvarint(b, uint64(len(withFiles)))
	for _, rel := range withFiles {
		p := s.parts[rel]
		b = appendString(b, rel)
		b = binary.AppendUvarint(b, uint64(p.files.next))
		b = binary.AppendUvarint(b, uint64(len(p.files.pending)))
		for _, pp := range p.files.pending {
			b = binary.AppendVarint(b, pp.epoch)
			b = appendString(b, pp.name)
		}
	}
	rels := make([]string, 0, len(s.toCommit))
	for rel := range s.toCommit {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	b = binary.AppendUvarint(b, uint64(len(rels)))
	for _, rel := range rels {
		e := s.toCommit[rel]
		b = appendString(b, rel)
		b = binary.AppendVarint(b, e.created)
		b = binary.AppendVarint(b, e.lastWrite)
	}
	s.reported[checkpointID] = s.wm
	s.lastSync = j.start(&s.wg)
	return b, s.lastSync, nil
}

// Commit implements exec.TwoPhaseSink: the pending files of epochs <=
// checkpointID become visible, then the subtask reports its partitions to
// the committer.
func (s *PartitionedSink) Commit(checkpointID int64) error {
	for _, rel := range s.sortedParts() {
		if err := s.parts[rel].files.Commit(checkpointID); err != nil {
			return err
		}
	}
	wm, ok := s.reported[checkpointID]
	if !ok {
		return nil
	}
	for id := range s.reported {
		if id <= checkpointID {
			delete(s.reported, id)
		}
	}
	return s.committer.report(s.subtask, wm, s.entries(checkpointID))
}

// partSinkState is a decoded partitioned sink state.
type partSinkState struct {
	subtask  int
	dir      string
	id       string // the part id of its files ("": version 1, PartID)
	wm       int64
	files    map[string]partFilesState
	toCommit map[string]commitEntry
}

type partFilesState struct {
	next    int
	pending []pendingPart
}

func readPartSinkState(r *stateReader) (partSinkState, error) {
	st := partSinkState{subtask: r.subtask, files: map[string]partFilesState{}, toCommit: map[string]commitEntry{}}
	st.dir = r.str()
	if r.version >= 2 {
		st.id = r.str()
	}
	st.wm = r.varint()
	n := r.count(3)
	for i := 0; i < n && r.err == nil; i++ {
		rel := r.str()
		next := r.int()
		m := r.count(2)
		var ps []pendingPart
		for j := 0; j < m && r.err == nil; j++ {
			e := r.varint()
			ps = append(ps, pendingPart{epoch: e, name: r.str()})
		}
		if next > math.MaxInt32 {
			return st, fmt.Errorf("filesystem sink: cannot restore: the checkpoint state is corrupted")
		}
		st.files[rel] = partFilesState{next: int(next), pending: ps}
	}
	n = r.count(3)
	for i := 0; i < n && r.err == nil; i++ {
		rel := r.str()
		created := r.varint()
		st.toCommit[rel] = commitEntry{created: created, lastWrite: r.varint()}
	}
	if err := r.end(); err != nil {
		return st, err
	}
	if !filepath.IsAbs(st.dir) {
		return st, fmt.Errorf("filesystem sink: cannot restore: the checkpoint state is corrupted")
	}
	for rel := range st.files {
		if !validRel(rel) {
			return st, fmt.Errorf("filesystem sink: cannot restore: the checkpoint names partition '%s', which is not a partition path", rel)
		}
	}
	return st, nil
}

// validRel reports whether rel is a relative partition path (k=v segments,
// nothing climbing out of the directory).
func validRel(rel string) bool {
	if rel == "" || strings.HasPrefix(rel, "/") {
		return false
	}
	for _, seg := range strings.Split(rel, "/") {
		if seg == "" || seg == "." || seg == ".." || !strings.Contains(seg, "=") || strings.ContainsRune(seg, '\\') {
			return false
		}
	}
	return true
}

// RestoreState implements exec.TwoPhaseSink.
func (s *PartitionedSink) RestoreState(state []byte) error {
	if len(state) == 0 {
		return s.RestoreStates(nil)
	}
	return s.RestoreStates([][]byte{state})
}

// RestoreStates implements exec.RescalableSink: for every given old
// subtask's state it completes the commits pending in it and deletes every
// other hidden part of that old subtask in every partition directory; it
// cleans its own hidden parts too, takes over the old subtasks' partitions
// awaiting commit and reports them to the committer.
func (s *PartitionedSink) RestoreStates(states [][]byte) error {
	rs, err := openGiven(states, kindPartSink, s.subtask, s.parallelism)
	if err != nil {
		return err
	}
	dirs, err := partitionDirs(s.root, len(s.keyCols))
	if err != nil {
		return err
	}
	ownDone := false
	wm := int64(math.MaxInt64)
	for _, r := range rs {
		st, err := readPartSinkState(r)
		if err != nil {
			return err
		}
		if st.dir != absDir(s.root) {
			return fmt.Errorf("filesystem sink: cannot restore: the checkpoint's partitions were written under %s, the table's path is now %s", st.dir, absDir(s.root))
		}
		if st.wm < wm {
			wm = st.wm
		}
		// the restored job goes on naming its files as the job that took
		// the checkpoint did (see FileSink.adopt); every state of a job
		// names one id
		if s.id = st.id; s.id == "" {
			s.id = s.legacyID
		}
		if err := s.restoreSubtask(s.id, st.subtask, st.files, dirs); err != nil {
			return err
		}
		ownDone = ownDone || st.subtask == s.subtask
		for rel, e := range st.toCommit {
			if old, ok := s.toCommit[rel]; ok {
				e.created = min(e.created, old.created)
				e.lastWrite = max(e.lastWrite, old.lastWrite)
			}
			e.values = partitionValues(rel)
			ec := e
			s.toCommit[rel] = &ec
		}
	}
	if !ownDone {
		// this subtask's own hidden files of an earlier attempt
		if err := s.restoreSubtask(s.id, s.subtask, nil, dirs); err != nil {
			return err
		}
	}
	if len(rs) == 0 {
		return nil
	}
	s.wm = wm
	return s.committer.report(s.subtask, wm, s.entries(math.MaxInt64))
}

// restoreSubtask restores old subtask sub's part files in every partition
// directory: the pending ones its state names are committed, its other
// hidden ones removed.
func (s *PartitionedSink) restoreSubtask(id string, sub int, files map[string]partFilesState, dirs []string) error {
	for _, rel := range dirs {
		pf := partFilesView(filepath.Join(s.root, filepath.FromSlash(rel)), id, sub)
		fs := files[rel]
		if err := pf.Restore(fs.pending, fs.next); err != nil {
			return err
		}
	}
	for rel := range files {
		if !contains(dirs, rel) {
			return fmt.Errorf("filesystem sink: cannot restore: partition directory %s named by the checkpoint is gone", filepath.Join(s.root, filepath.FromSlash(rel)))
		}
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// partitionDirs returns the partition directories under root (depth
// levels of k=v directories), as sorted relative slash paths.
func partitionDirs(root string, depth int) ([]string, error) {
	var out []string
	var walk func(dir, rel string, d int) error
	walk = func(dir, rel string, d int) error {
		if d == depth {
			out = append(out, rel)
			return nil
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return fmt.Errorf("filesystem sink: %w", err)
		}
		for _, e := range ents {
			if !e.IsDir() || !strings.Contains(e.Name(), "=") || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			r := e.Name()
			if rel != "" {
				r = rel + "/" + e.Name()
			}
			if err := walk(filepath.Join(dir, e.Name()), r, d+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root, "", 0); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// Close discards uncommitted output (pending files stay with
// checkpointing, as in FileSink.Close); idempotent.
func (s *PartitionedSink) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	defer s.wg.Wait()
	for _, p := range s.parts {
		if s.autoCommit {
			p.files.Abort()
		} else {
			p.files.Discard()
		}
	}
	return nil
}
