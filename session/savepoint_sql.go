package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/parser"
)

// This file holds the savepoint statements: CREATE SAVEPOINT, SHOW
// SAVEPOINTS, SHOW CHECKPOINTS FOR JOB and DESCRIBE JOB.

// savepointRecord is a savepoint this session took (CREATE SAVEPOINT or the
// REST API): the job it belongs to is known exactly.
type savepointRecord struct {
	jobID string
	path  string
}

// taken remembers the savepoints each session took, without a field in
// Session: keyed by a weak pointer, and dropped by a cleanup when the
// session is collected.
var taken struct {
	mu sync.Mutex
	m  map[weak.Pointer[Session]][]savepointRecord
}

func (s *Session) recordSavepoint(jobID, path string) {
	if path == "" {
		return
	}
	k := weak.Make(s)
	taken.mu.Lock()
	defer taken.mu.Unlock()
	if taken.m == nil {
		taken.m = map[weak.Pointer[Session]][]savepointRecord{}
	}
	if _, ok := taken.m[k]; !ok {
		runtime.AddCleanup(s, func(k weak.Pointer[Session]) {
			taken.mu.Lock()
			delete(taken.m, k)
			taken.mu.Unlock()
		}, k)
	}
	taken.m[k] = append(taken.m[k], savepointRecord{jobID: jobID, path: filepath.Clean(path)})
}

func (s *Session) takenSavepoints() []savepointRecord {
	taken.mu.Lock()
	defer taken.mu.Unlock()
	return append([]savepointRecord(nil), taken.m[weak.Make(s)]...)
}

// SavepointEntry is a savepoint directory on disk.
type SavepointEntry struct {
	// JobID is the job's id; for an incomplete savepoint of another
	// session only its first 6 characters (from the directory name
	// savepoint-<6>-<random>).
	JobID    string
	Path     string
	Complete bool   // it has a valid _metadata; an incomplete one is never restored
	Reason   string // why it is incomplete
	Time     time.Time
}

// scanSavepoints lists the savepoint-* directories in dir.
func scanSavepoints(dir string) ([]SavepointEntry, error) {
	list, err := checkpoint.ListSavepoints(dir)
	if err != nil {
		return nil, err
	}
	out := make([]SavepointEntry, 0, len(list))
	for _, sp := range list {
		e := SavepointEntry{Path: filepath.Clean(sp.Path), Complete: sp.Complete, Reason: sp.Reason}
		if sp.Complete {
			e.JobID, e.Time = sp.Info.JobID, time.UnixMilli(sp.Info.TimeMS)
		}
		if e.JobID == "" {
			rest := strings.TrimPrefix(sp.Name, "savepoint-")
			e.JobID, _, _ = strings.Cut(rest, "-")
		}
		if e.Time.IsZero() {
			if fi, err := os.Stat(e.Path); err == nil {
				e.Time = fi.ModTime()
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// Savepoints lists the savepoints of this session's jobs (wherever they
// were taken) and every savepoint under state.savepoints.dir, complete or
// not, oldest first. With jobID, only that job's.
func (s *Session) Savepoints(jobID string) ([]SavepointEntry, error) {
	return s.savepoints(jobID, s.Options.Path("state.savepoints.dir"))
}

func (s *Session) savepoints(jobID, defaultDir string) ([]SavepointEntry, error) {
	var ids []string
	for _, in := range s.Jobs() {
		ids = append(ids, in.ID)
	}
	ownJob := func(prefix string) string {
		if prefix == "" {
			return ""
		}
		for _, id := range ids {
			if strings.HasPrefix(id, prefix) {
				return id
			}
		}
		return ""
	}
	exact := map[string]string{} // path -> job id
	dirs := map[string]bool{}    // directories holding this session's savepoints
	for _, r := range s.takenSavepoints() {
		exact[r.path] = r.jobID
		dirs[filepath.Dir(r.path)] = true
	}
	seen := map[string]bool{}
	var out []SavepointEntry
	add := func(dir string, all bool) error {
		list, err := scanSavepoints(dir)
		if err != nil {
			return err
		}
		for _, e := range list {
			if seen[e.Path] {
				continue
			}
			own := false
			if id, ok := exact[e.Path]; ok {
				e.JobID, own = id, true
			} else if id := ownJob(e.JobID); id != "" {
				e.JobID, own = id, true
			}
			if !own && !all {
				continue
			}
			seen[e.Path] = true
			out = append(out, e)
		}
		return nil
	}
	if defaultDir != "" {
		if err := add(defaultDir, true); err != nil {
			return nil, err
		}
	}
	var more []string
	for d := range dirs {
		more = append(more, d)
	}
	sort.Strings(more)
	for _, d := range more {
		if err := add(d, false); err != nil {
			return nil, err
		}
	}
	if jobID != "" {
		keep := out[:0]
		for _, e := range out {
			if e.JobID == jobID || len(e.JobID) < len(jobID) && strings.HasPrefix(jobID, e.JobID) {
				keep = append(keep, e)
			}
		}
		out = keep
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

// createSavepoint is CREATE SAVEPOINT FOR JOB 'id' [INTO 'dir'].
func (s *Session) createSavepoint(ctx context.Context, x *parser.CreateSavepoint) (*Result, error) {
	if _, err := s.findJob(x.JobID); err != nil {
		return nil, &parser.Error{Pos: x.JobIDPos, Msg: err.Error()}
	}
	info, err := s.TriggerSavepoint(ctx, x.JobID, x.Dir)
	if err != nil {
		return nil, &parser.Error{Pos: x.JobIDPos, Msg: fmt.Sprintf("savepoint of job %s failed: %v", x.JobID, err)}
	}
	s.recordSavepoint(x.JobID, info.Path)
	return &Result{Kind: ResultTable, Columns: []string{"savepoint path"}, Rows: [][]string{{info.Path}}}, nil
}

// SavepointColumns are the columns of SHOW SAVEPOINTS.
var SavepointColumns = []string{"job id", "savepoint path", "status", "time"}

// showSavepoints is SHOW SAVEPOINTS [FOR JOB 'id'].
func (s *Session) showSavepoints(x *parser.ShowSavepoints) (*Result, error) {
	list, err := s.Savepoints(x.JobID)
	if err != nil {
		return nil, &parser.Error{Pos: x.Pos, Msg: err.Error()}
	}
	r := &Result{Kind: ResultTable, Columns: SavepointColumns}
	for _, e := range list {
		status := "COMPLETED"
		if !e.Complete {
			status = "INCOMPLETE"
		}
		r.Rows = append(r.Rows, []string{e.JobID, e.Path, status, e.Time.Format("2006-01-02 15:04:05.000")})
	}
	return r, nil
}

// showJobCheckpoints is SHOW CHECKPOINTS [FOR JOB 'id'].
func (s *Session) showJobCheckpoints(x *parser.ShowCheckpoints) (*Result, error) {
	if x.JobID == "" {
		return s.showCheckpoints()
	}
	if _, err := s.findJob(x.JobID); err != nil {
		return nil, &parser.Error{Pos: x.JobIDPos, Msg: err.Error()}
	}
	r, err := s.showCheckpoints()
	if err != nil {
		return nil, err
	}
	keep := r.Rows[:0]
	for _, row := range r.Rows {
		if row[0] == x.JobID {
			keep = append(keep, row)
		}
	}
	r.Rows = keep
	return r, nil
}

// describeJob is DESCRIBE JOB 'id': one row per property.
func (s *Session) describeJob(x *parser.DescribeJob) (*Result, error) {
	j, err := s.findJob(x.JobID)
	if err != nil {
		return nil, &parser.Error{Pos: x.JobIDPos, Msg: err.Error()}
	}
	in := j.snapshot()
	r := &Result{Kind: ResultTable, Columns: []string{"property", "value"}}
	add := func(k, v string) { r.Rows = append(r.Rows, []string{k, v}) }
	// As in SHOW JOBS: the status is one word, the cause is the last failure.
	status := in.Status
	last := ""
	switch n := len(in.Failures); {
	case in.Err != nil:
		last = shorten(in.Err.Error(), 200)
	case n > 0:
		last = shorten(in.Failures[n-1], 200)
	}
	add("job id", in.ID)
	add("job name", in.Name)
	add("status", status)
	add("start time", in.StartTime.Format("2006-01-02 15:04:05.000"))
	add("parallelism", fmt.Sprint(in.Parallelism))
	add("records in", fmt.Sprint(in.RecordsIn))
	add("records out", fmt.Sprint(in.RecordsOut))
	add("late records", fmt.Sprint(in.LateRecords))
	add("input holds", fmt.Sprint(in.InputHolds))
	add("in-flight batches restored", fmt.Sprint(in.InFlightRestored))
	add("join rows mapped to files", fmt.Sprint(in.RowsMapped))
	add("attempts", fmt.Sprint(in.Attempts))
	add("last failure", last)
	add("checkpoint dir", in.CheckpointDir)
	lastChk := ""
	if in.Checkpoints > 0 {
		lastChk = fmt.Sprintf("%d (%d completed)", in.LastCheckpoint, in.Checkpoints)
	}
	add("last checkpoint", lastChk)
	add("restored from", in.RestoredFrom)
	sps, err := s.Savepoints(in.ID)
	if err != nil {
		return nil, &parser.Error{Pos: x.Pos, Msg: err.Error()}
	}
	if len(sps) == 0 {
		add("savepoints", "")
	}
	for _, e := range sps {
		v := e.Path
		if !e.Complete {
			v += " (INCOMPLETE)"
		}
		add("savepoint", v)
	}
	return r, nil
}
