package session

import (
	"context"
	"fmt"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec"
)

// findJob returns the session's job with id.
func (s *Session) findJob(id string) (*job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.jobs {
		if j.info.ID == id {
			return j, nil
		}
	}
	return nil, fmt.Errorf("no job with id '%s' (SHOW JOBS lists them)", id)
}

// savepointDir resolves the target directory of a savepoint: dir, or
// state.savepoints.dir.
func (s *Session) savepointDir(dir string) (string, error) {
	if dir == "" {
		dir = s.Options.Path("state.savepoints.dir")
	}
	if dir == "" {
		return "", fmt.Errorf("no savepoint directory: give one (INTO '<dir>') or SET 'state.savepoints.dir'")
	}
	return dir, nil
}

// TriggerSavepoint takes a savepoint of a running job into a new directory
// under dir (state.savepoints.dir when empty) and returns its Info; the job
// keeps running.
func (s *Session) TriggerSavepoint(ctx context.Context, jobID, dir string) (checkpoint.Info, error) {
	return s.requestSavepoint(ctx, jobID, dir, false, false)
}

// StopWithSavepoint stops a job at a savepoint: sources stop at the
// barrier, the savepoint completes, sinks commit, and the job ends FINISHED.
// With drain, the input is ended first so that operators flush.
func (s *Session) StopWithSavepoint(ctx context.Context, jobID, dir string, drain bool) (checkpoint.Info, error) {
	info, err := s.requestSavepoint(ctx, jobID, dir, true, drain)
	if err != nil {
		return info, err
	}
	j, _ := s.findJob(jobID)
	select {
	case <-j.done:
	case <-ctx.Done():
		return info, ctx.Err()
	}
	return info, nil
}

// CancelJob cancels a job and waits until it ended.
func (s *Session) CancelJob(jobID string) error {
	j, err := s.findJob(jobID)
	if err != nil {
		return err
	}
	j.cancel()
	<-j.done
	return nil
}

func (s *Session) requestSavepoint(ctx context.Context, jobID, dir string, stop, drain bool) (checkpoint.Info, error) {
	j, err := s.findJob(jobID)
	if err != nil {
		return checkpoint.Info{}, err
	}
	if j.requests == nil {
		return checkpoint.Info{}, fmt.Errorf("job %s takes no checkpoints: savepoints need 'execution.checkpointing.interval' and 'state.checkpoints.dir' set when the job is submitted", jobID)
	}
	if dir, err = s.savepointDir(dir); err != nil {
		return checkpoint.Info{}, err
	}
	req := &exec.SavepointRequest{Dir: dir, Stop: stop, Drain: drain, Done: make(chan exec.SavepointResult, 1)}
	select {
	case j.requests <- req:
	case <-j.done:
		return checkpoint.Info{}, fmt.Errorf("job %s is not running", jobID)
	case <-ctx.Done():
		return checkpoint.Info{}, ctx.Err()
	}
	select {
	case res := <-req.Done:
		return res.Info, res.Err
	case <-j.done:
		return checkpoint.Info{}, fmt.Errorf("job %s ended before its savepoint completed", jobID)
	case <-ctx.Done():
		return checkpoint.Info{}, ctx.Err()
	}
}
