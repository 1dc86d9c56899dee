package exec

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/streamsql/streamsql/checkpoint"
)

// StateBackend is where checkpoints go (*checkpoint.Store implements it).
type StateBackend interface {
	// Commit applies the subtasks' writes of checkpoint id atomically: the
	// synchronous part of a checkpoint.
	Commit(id int64, bufs []*checkpoint.Buffer) error
	// Persist makes checkpoint id durable (asynchronous part: processing
	// continues meanwhile) and writes its _metadata last.
	Persist(id int64, kind checkpoint.Kind, meta map[string]string) (checkpoint.Info, error)
	// Abort removes what a failed or timed-out checkpoint wrote.
	Abort(id int64) error
	// Reader reads the committed state (for restoring subtasks).
	Reader() checkpoint.StateReader
	// RestoreLatest resets the committed state to the latest complete
	// checkpoint (after a failure); ok is false when there is none.
	RestoreLatest() (info checkpoint.Info, ok bool, err error)
	// PersistSavepoint writes the committed state of checkpoint id as a
	// self-contained savepoint in a new directory under dir.
	PersistSavepoint(id int64, dir string, meta map[string]string) (checkpoint.Info, error)
}

// SavepointRequest asks a running job for a savepoint. Stop ends the job
// after it (sources stop at the barrier, sinks commit, the job finishes);
// Drain first ends the input so that operators flush (end of data).
type SavepointRequest struct {
	Dir         string
	Stop, Drain bool
	// Done receives the result once (buffered by the requester).
	Done chan SavepointResult
}

// SavepointResult is the outcome of a SavepointRequest.
type SavepointResult struct {
	Info checkpoint.Info
	Err  error
}

// CheckpointConfig turns checkpointing on for a job attempt.
type CheckpointConfig struct {
	Interval time.Duration
	// AtLeastOnce disables barrier alignment: records after a barrier on an
	// early channel are processed before the snapshot (duplicates after a
	// restore, never loss).
	AtLeastOnce     bool
	Timeout         time.Duration
	MinPause        time.Duration
	TolerableFailed int
	Backend         StateBackend
	// Restore makes every subtask load its state from Backend.Reader()
	// before processing (the backend is positioned at the checkpoint).
	Restore bool
	// FirstID is the id of the attempt's first checkpoint (ids only grow);
	// LastID is set by the runtime to the last id it used.
	FirstID int64
	LastID  int64
	Meta    map[string]string
	// Requests delivers savepoint requests (nil: none).
	Requests chan *SavepointRequest
	// OnComplete and OnFailure observe checkpoints (logging, SHOW CHECKPOINTS).
	OnComplete func(checkpoint.Info)
	OnFailure  func(id int64, err error)

	// TriggerEveryBatch runs sources in lockstep with checkpoints instead of
	// a timer: after each batch a source waits until every running source
	// emitted one, then a checkpoint is taken. The number and position of
	// barriers is then deterministic (tests).
	TriggerEveryBatch bool
	// FailAfter > 0 fails the attempt right after checkpoint FailAfter
	// completed (crash injection for tests). FailedAt reports it.
	FailAfter int64
}

// ErrInjectedCrash is the failure FailAfter injects.
var ErrInjectedCrash = errors.New("injected crash after checkpoint")

type trigger struct {
	id    int64
	final bool // the last barrier: subtasks shut down after it
	// savepoint requests
	savepoint, stop, drain bool
}

type ack struct {
	id  int64
	buf *checkpoint.Buffer
	err error
}

// coordinator triggers checkpoints in the sources, collects the subtasks'
// acknowledgements, commits and persists each checkpoint, then tells the
// two-phase sinks to commit. One runs per job attempt.
type coordinator struct {
	cfg      *CheckpointConfig
	triggers []chan trigger // one per source subtask
	acks     chan ack
	expected int // subtasks that acknowledge each checkpoint

	mu        sync.Mutex
	completed int64           // latest completed checkpoint id
	notify    []chan struct{} // one per two-phase sink subtask: "completed changed"

	sourcesLeft int
	finished    chan struct{} // a source subtask ended its input
	nextID      int64
	lastEnd     time.Time
}

func newCoordinator(cfg *CheckpointConfig, expected int) *coordinator {
	return &coordinator{cfg: cfg, acks: make(chan ack, expected), expected: expected,
		finished: make(chan struct{}, 1024), nextID: max(cfg.FirstID, 1)}
}

// addSource registers a source subtask and returns its trigger channel.
// Called before the subtasks start.
func (c *coordinator) addSource() chan trigger {
	ch := make(chan trigger, 4)
	c.triggers = append(c.triggers, ch)
	c.sourcesLeft++
	return ch
}

// addSink registers a sink subtask and returns its notification channel
// (only two-phase sinks read it). Called before the subtasks start.
func (c *coordinator) addSink() chan struct{} {
	ch := make(chan struct{}, 1)
	c.notify = append(c.notify, ch)
	return ch
}

// latest returns the latest completed checkpoint id.
func (c *coordinator) latest() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.completed
}

// run drives checkpoints until ctx is done or the final checkpoint
// completed (returns nil) or too many checkpoints failed (returns the error).
func (c *coordinator) run(ctx context.Context, batchTick <-chan struct{}) error {
	var tick <-chan time.Time
	if !c.cfg.TriggerEveryBatch && c.cfg.Interval > 0 {
		t := time.NewTicker(c.cfg.Interval)
		defer t.Stop()
		tick = t.C
	}
	failures := 0
	allEnded := false
	waiting := 0 // lockstep (TriggerEveryBatch): sources waiting for a barrier
	for {
		final := false
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.finished:
			c.sourcesLeft--
			if c.sourcesLeft == 0 {
				allEnded, final = true, true
			} else if batchTick == nil || waiting < c.sourcesLeft {
				continue
			}
		case <-tick:
			if allEnded || time.Since(c.lastEnd) < c.cfg.MinPause {
				continue
			}
		case <-batchTick:
			if waiting++; waiting < c.sourcesLeft {
				continue
			}
		case req := <-c.cfg.Requests:
			tr := trigger{savepoint: true, stop: req.Stop, drain: req.Drain, final: req.Stop || allEnded}
			info, err := c.checkpoint(ctx, tr, req.Dir)
			req.Done <- SavepointResult{Info: info, Err: err}
			if err == nil && tr.final {
				return nil // the job ends with its savepoint
			}
			if err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil && tr.stop {
				// The sources already stopped: fail the attempt, so that the
				// restart strategy resumes from the latest checkpoint.
				return fmt.Errorf("stop with savepoint failed: %w", err)
			}
			continue
		}
		if batchTick != nil && !final {
			waiting = 0
		}
		for {
			_, err := c.checkpoint(ctx, trigger{final: final}, "")
			if err == nil {
				failures = 0
				if c.cfg.FailAfter > 0 && c.latest() >= c.cfg.FailAfter {
					return fmt.Errorf("%w %d", ErrInjectedCrash, c.cfg.FailAfter)
				}
				if final {
					return nil
				}
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			failures++
			if c.cfg.OnFailure != nil {
				c.cfg.OnFailure(c.nextID-1, err)
			}
			if failures > c.cfg.TolerableFailed {
				return fmt.Errorf("checkpoint failed %d times in a row (execution.checkpointing.tolerable-failed-checkpoints = %d): %w", failures, c.cfg.TolerableFailed, err)
			}
			if !final {
				break // the next tick tries again
			}
		}
	}
}

// checkpoint runs one checkpoint: trigger, collect acks, commit, persist,
// notify sinks.
func (c *coordinator) checkpoint(ctx context.Context, tr trigger, savepointDir string) (checkpoint.Info, error) {
	id := c.nextID
	c.nextID++
	c.cfg.LastID = id
	tr.id = id
	info, err := c.takeCheckpoint(ctx, tr, savepointDir)
	if err != nil {
		return info, err
	}
	c.lastEnd = time.Now()
	c.mu.Lock()
	c.completed = id
	c.mu.Unlock()
	for _, n := range c.notify {
		select {
		case n <- struct{}{}:
		default: // a notification is already pending
		}
	}
	if c.cfg.OnComplete != nil {
		c.cfg.OnComplete(info)
	}
	return info, nil
}

// takeCheckpoint triggers the barrier, collects the acks, commits and
// persists (as a checkpoint, or as a savepoint under savepointDir).
func (c *coordinator) takeCheckpoint(ctx context.Context, tr trigger, savepointDir string) (checkpoint.Info, error) {
	id := tr.id
	for _, t := range c.triggers {
		select {
		case t <- tr:
		case <-ctx.Done():
			return checkpoint.Info{}, ctx.Err()
		}
	}
	var timeout <-chan time.Time
	if c.cfg.Timeout > 0 {
		t := time.NewTimer(c.cfg.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	bufs := make([]*checkpoint.Buffer, 0, c.expected)
	for len(bufs) < c.expected {
		select {
		case a := <-c.acks:
			if a.id != id {
				continue // late ack of an aborted checkpoint
			}
			if a.err != nil {
				c.cfg.Backend.Abort(id)
				return checkpoint.Info{}, fmt.Errorf("checkpoint %d: %w", id, a.err)
			}
			bufs = append(bufs, a.buf)
		case <-timeout:
			c.cfg.Backend.Abort(id)
			return checkpoint.Info{}, fmt.Errorf("checkpoint %d expired after %v (execution.checkpointing.timeout)", id, c.cfg.Timeout)
		case <-ctx.Done():
			return checkpoint.Info{}, ctx.Err()
		}
	}
	start := time.Now()
	if err := c.cfg.Backend.Commit(id, bufs); err != nil {
		c.cfg.Backend.Abort(id)
		return checkpoint.Info{}, fmt.Errorf("checkpoint %d: committing state: %w", id, err)
	}
	syncDur := time.Since(start)
	var info checkpoint.Info
	var err error
	if tr.savepoint {
		info, err = c.cfg.Backend.PersistSavepoint(id, savepointDir, c.cfg.Meta)
	} else {
		info, err = c.cfg.Backend.Persist(id, checkpoint.KindCheckpoint, c.cfg.Meta)
	}
	if err != nil {
		if !tr.savepoint {
			c.cfg.Backend.Abort(id)
		}
		return checkpoint.Info{}, fmt.Errorf("checkpoint %d: %w", id, err)
	}
	if info.SyncMS == 0 {
		info.SyncMS = syncDur.Milliseconds()
	}
	return info, nil
}
