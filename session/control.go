package session

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"path/filepath"
	"sync"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/control"
	"github.com/streamsql/streamsql/parser"
)

// Control is a session as the REST API sees it (control.Engine). The API
// calls it from its own goroutines while the session's client keeps
// executing statements: run statements through Control.Execute, which
// keeps SET and RESET from changing options while the API reads them.
type Control struct {
	s  *Session
	mu sync.RWMutex // write: SET/RESET; read: the API reading options
}

var _ control.Engine = (*Control)(nil)

// NewControl returns the control view of s.
func NewControl(s *Session) *Control { return &Control{s: s} }

// Session returns the controlled session.
func (c *Control) Session() *Session { return c.s }

// Execute is Session.Execute; statements that change options run
// exclusively of the API's reads.
func (c *Control) Execute(ctx context.Context, st parser.Statement) (*Result, error) {
	switch st.(type) {
	case *parser.Set, *parser.Reset:
		c.mu.Lock()
		defer c.mu.Unlock()
	}
	return c.s.Execute(ctx, st)
}

// option reads an option path safely.
func (c *Control) option(key string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.s.Options.Path(key)
}

func noJob(id string) error {
	return fmt.Errorf("%w: no job with id '%s'", control.ErrNoJob, id)
}

func details(in JobInfo) control.JobDetails {
	d := control.JobDetails{
		ID: in.ID, Name: in.Name, State: in.Status, StartTime: in.StartTime.UnixMilli(),
		Parallelism: in.Parallelism, RecordsIn: in.RecordsIn, RecordsOut: in.RecordsOut,
		SkippedRecords: in.SkippedBad, LateRecords: in.LateRecords, InputHolds: in.InputHolds, InFlightRestored: in.InFlightRestored, RowsMapped: in.RowsMapped, Attempts: in.Attempts, Failures: in.Failures,
		CheckpointDir: in.CheckpointDir, Checkpoints: in.Checkpoints, LastCheckpoint: in.LastCheckpoint,
		RestoredFrom: in.RestoredFrom,
	}
	if in.Err != nil {
		d.FailureCause = in.Err.Error()
	}
	return d
}

// Jobs lists the session's INSERT jobs (SELECT queries are left out, as in
// SHOW JOBS).
func (c *Control) Jobs() []control.JobDetails {
	var out []control.JobDetails
	for _, in := range c.s.Jobs() {
		if in.Name == "collect" {
			continue
		}
		out = append(out, details(in))
	}
	return out
}

func (c *Control) info(id string) (JobInfo, error) {
	j, err := c.s.findJob(id)
	if err != nil {
		return JobInfo{}, noJob(id)
	}
	in := j.snapshot()
	if in.Name == "collect" {
		return JobInfo{}, noJob(id)
	}
	return in, nil
}

// Job returns a job's details with its savepoints.
func (c *Control) Job(id string) (control.JobDetails, error) {
	in, err := c.info(id)
	if err != nil {
		return control.JobDetails{}, err
	}
	d := details(in)
	d.SavepointDir = c.option("state.savepoints.dir")
	sps, err := c.s.savepoints(id, d.SavepointDir)
	if err != nil {
		return d, err
	}
	for _, e := range sps {
		st := control.Completed
		if !e.Complete {
			st = "INCOMPLETE"
		}
		d.Savepoints = append(d.Savepoints, control.SavepointInfo{Location: e.Path, Status: st, Time: e.Time.UnixMilli()})
	}
	return d, nil
}

// Checkpoints lists a job's checkpoints on disk.
func (c *Control) Checkpoints(id string) (control.CheckpointStats, error) {
	var st control.CheckpointStats
	in, err := c.info(id)
	if err != nil {
		return st, err
	}
	st.Counts.Completed = in.Checkpoints
	st.Counts.Total = in.Checkpoints
	if in.RestoredFrom != "" {
		st.Counts.Restored = 1
		st.Latest.Restored = &control.RestoredEntry{ExternalPath: in.RestoredFrom}
	}
	for _, r := range c.s.takenSavepoints() {
		if r.jobID == id {
			st.Latest.Savepoint = &control.CheckpointEntry{Status: control.Completed, IsSavepoint: true, ExternalPath: r.path}
		}
	}
	if in.CheckpointDir == "" {
		return st, nil
	}
	list, err := checkpoint.List(filepath.Dir(filepath.Clean(in.CheckpointDir)))
	if errors.Is(err, iofs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	for _, jc := range list {
		if jc.JobID != id {
			continue
		}
		for _, ci := range jc.Checkpoints {
			e := control.CheckpointEntry{ID: ci.ID, Status: control.Completed, LatestAckTimestamp: ci.TimeMS,
				StateSize: ci.Size, CheckpointedSize: ci.Written, EndToEndDuration: ci.SyncMS + ci.AsyncMS, ExternalPath: ci.Path}
			st.History = append(st.History, e)
			last := e
			st.Latest.Completed = &last
		}
		for _, name := range jc.Incomplete {
			var n int64 = -1
			_, _ = fmt.Sscanf(name, "chk-%d", &n)
			st.History = append(st.History, control.CheckpointEntry{ID: n, Status: "INCOMPLETE", ExternalPath: filepath.Join(jc.Dir, name)})
		}
	}
	return st, nil
}

// targetDir resolves an empty savepoint directory to state.savepoints.dir,
// read under the lock (the session would read it unguarded).
func (c *Control) targetDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	if dir = c.option("state.savepoints.dir"); dir == "" {
		return "", errors.New("no savepoint directory: give a target directory, or set 'state.savepoints.dir' in the job's process")
	}
	return dir, nil
}

// Savepoint takes a savepoint; the job keeps running.
func (c *Control) Savepoint(ctx context.Context, id, dir string) (string, error) {
	if _, err := c.info(id); err != nil {
		return "", err
	}
	dir, err := c.targetDir(dir)
	if err != nil {
		return "", err
	}
	info, err := c.s.TriggerSavepoint(ctx, id, dir)
	if err != nil {
		return "", err
	}
	c.s.recordSavepoint(id, info.Path)
	return info.Path, nil
}

// StopWithSavepoint stops a job at a savepoint; it returns once the job
// ended.
func (c *Control) StopWithSavepoint(ctx context.Context, id, dir string, drain bool) (string, error) {
	if _, err := c.info(id); err != nil {
		return "", err
	}
	dir, err := c.targetDir(dir)
	if err != nil {
		return "", err
	}
	info, err := c.s.StopWithSavepoint(ctx, id, dir, drain)
	c.s.recordSavepoint(id, info.Path)
	if err != nil {
		return info.Path, err
	}
	return info.Path, nil
}

// Cancel cancels a job and returns once it ended (or ctx is done).
func (c *Control) Cancel(ctx context.Context, id string) error {
	if _, err := c.info(id); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- c.s.CancelJob(id) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
