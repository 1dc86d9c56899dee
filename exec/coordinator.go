package exec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
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
	// Unaligned is execution.checkpointing.unaligned.enabled: barriers
	// overtake the batches queued at each subtask's input, the snapshot does
	// not wait for alignment, and the batches in flight are stored with the
	// checkpoint as channel state (replayed first on restore). Exactly-once.
	Unaligned bool
	// AlignedTimeout is execution.checkpointing.aligned-checkpoint-timeout,
	// used with Unaligned as in Flink: checkpoints start aligned, and a
	// barrier that reaches a subtask (or is still aligning there) later than
	// this after its trigger is taken unaligned. 0: always unaligned.
	AlignedTimeout time.Duration
	// MaxConcurrent is execution.checkpointing.max-concurrent-checkpoints
	// (0 means 1): periodic checkpoints in flight at once. Savepoints and
	// the final checkpoint are not limited by it. With Unaligned it is 1:
	// as in Flink, unaligned checkpoints do not run concurrently (their
	// channel state would be recorded for several barriers at once).
	MaxConcurrent int
	// Fault, when set, is called at the named protocol steps of every
	// checkpoint (tests inject failures with it): an error aborts the
	// checkpoint at that step (counted as a failed checkpoint); an error
	// wrapping ErrInjectedCrash fails the attempt at once, as a crash of
	// the process would.
	Fault func(step FaultStep, id int64) error
}

// FaultStep names a step of the checkpoint protocol (see
// CheckpointConfig.Fault).
type FaultStep string

const (
	// StepAcked: every subtask acknowledged; the state is not committed.
	StepAcked FaultStep = "acked"
	// StepCommitted: the state is committed to the working store, not yet
	// durable (no _metadata).
	StepCommitted FaultStep = "committed"
	// StepPersisted: _metadata is written; sinks are not yet told to commit.
	StepPersisted FaultStep = "persisted"
	// StepSnapshot: a subtask is about to take its snapshot (called on
	// the subtask's goroutine; an error fails that subtask's snapshot).
	StepSnapshot FaultStep = "snapshot"
)

// ErrInjectedCrash is the failure FailAfter and Fault inject.
var ErrInjectedCrash = errors.New("injected crash")

// trigger asks a source subtask to inject a barrier.
type trigger struct {
	id    int64
	at    int64 // unix nanoseconds
	final bool  // the last barrier: the job ends once it completes
	// savepoint requests
	savepoint, stop, drain bool
}

func barrierOf(tr trigger) Barrier {
	b := Barrier{ID: tr.id, Final: tr.final, Triggered: tr.at}
	if tr.savepoint {
		b.Kind = Savepoint
	}
	return b
}

type ack struct {
	slot int // the acknowledging subtask
	id   int64
	buf  *checkpoint.Buffer
	err  error
	// durable, when not nil, waits for the subtask's sink to make its
	// pre-committed output durable (AsyncPreCommitSink).
	durable func() error
}

// ctlKind is a control message from the coordinator to a subtask.
type ctlKind uint8

const (
	ctlTrigger  ctlKind = iota // sources: inject a barrier
	ctlComplete                // checkpoint id completed (commit: sinks commit)
	ctlAbort                   // checkpoint id aborted
	ctlShutdown                // sources: the final checkpoint completed, end
)

type ctlMsg struct {
	kind   ctlKind
	tr     trigger
	id     int64
	commit bool
	// buf (ctlComplete): the subtask's snapshot buffer, committed and
	// empty, handed back for its next snapshot.
	buf *checkpoint.Buffer
}

// mailbox is an unbounded queue with a wake-up signal: senders never
// block (the coordinator must not stall behind a backpressured subtask);
// the receiver waits on sig and pops. The messages are few per checkpoint.
type mailbox[T any] struct {
	mu  sync.Mutex
	q   []T
	sig chan struct{}
}

func newMailbox[T any]() *mailbox[T] { return &mailbox[T]{sig: make(chan struct{}, 1)} }

func (m *mailbox[T]) put(v T) {
	m.mu.Lock()
	m.q = append(m.q, v)
	m.mu.Unlock()
	select {
	case m.sig <- struct{}{}:
	default:
	}
}

func (m *mailbox[T]) pop() (T, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var zero T
	if len(m.q) == 0 {
		return zero, false
	}
	v := m.q[0]
	m.q[0] = zero
	m.q = m.q[1:]
	return v, true
}

// pendingCkpt is a checkpoint between its trigger and its outcome.
type pendingCkpt struct {
	tr       trigger
	req      *SavepointRequest
	deadline time.Time
	bufs     []*checkpoint.Buffer // by subtask slot
	durable  []func() error       // by subtask slot (ack.durable)
	acks     int
}

// coordinator is the job's checkpoint coordinator: a state machine per
// checkpoint. PENDING (triggered, acks arriving) -> COMPLETING (state
// committed, _metadata written) -> COMPLETED (every subtask notified; sinks
// commit unless it is an intermediate savepoint); or ABORTED (a failed
// snapshot, the timeout from trigger to _metadata, a failed commit or
// persist): every subtask is notified so that operators keep the changes
// of the aborted epoch for the next checkpoint. Triggers and notifications
// go through mailboxes and never block. One runs per job attempt.
type coordinator struct {
	cfg     *CheckpointConfig
	sources []*mailbox[ctlMsg] // source subtasks
	all     []*mailbox[ctlMsg] // every subtask, by slot
	acks    *mailbox[ack]

	mu          sync.Mutex
	batches     int // lockstep: sources that emitted a batch and wait
	finished    int // sources that ended their input
	progressSig chan struct{}

	sourcesLeft int
	nextID      int64
	lastEnd     time.Time
	pending     map[int64]*pendingCkpt
	// acked is the highest checkpoint id every subtask acknowledged (read
	// by the subtasks' gates: an operator's input hold counts in unaligned
	// mode only once its checkpoint is acked; inputGate.holding)
	acked    atomic.Int64
	failures int
	stopping bool // a stop-with-savepoint is in flight
	finalID  int64
}

func newCoordinator(cfg *CheckpointConfig) *coordinator {
	next := max(cfg.FirstID, 1)
	if lc, ok := cfg.Backend.(interface{ LastCommitted() int64 }); ok {
		next = max(next, lc.LastCommitted()+1)
	}
	if mx, ok := cfg.Backend.(interface{ MaxID() int64 }); ok {
		next = max(next, mx.MaxID()+1)
	}
	return &coordinator{cfg: cfg, acks: newMailbox[ack](), progressSig: make(chan struct{}, 1),
		nextID: next, pending: map[int64]*pendingCkpt{}}
}

// addSubtask registers a subtask (before any starts) and returns its slot
// and mailbox.
func (c *coordinator) addSubtask(source bool) (int, *mailbox[ctlMsg]) {
	m := newMailbox[ctlMsg]()
	c.all = append(c.all, m)
	if source {
		c.sources = append(c.sources, m)
		c.sourcesLeft++
	}
	return len(c.all) - 1, m
}

func (c *coordinator) signal() {
	select {
	case c.progressSig <- struct{}{}:
	default:
	}
}

// batchDone is called by a source in lockstep mode after each batch.
func (c *coordinator) batchDone() {
	c.mu.Lock()
	c.batches++
	c.mu.Unlock()
	c.signal()
}

// sourceFinished is called by a source subtask when its input ended.
func (c *coordinator) sourceFinished() {
	c.mu.Lock()
	c.finished++
	c.mu.Unlock()
	c.signal()
}

// ackSnapshot is called by a subtask after its snapshot for checkpoint id.
func (c *coordinator) ackSnapshot(a ack) { c.acks.put(a) }

// run drives checkpoints until ctx is done, the final checkpoint (or a
// stop-with-savepoint) completed (returns nil), or the attempt must fail:
// too many failed checkpoints, a failed stop-with-savepoint, an injected
// crash.
func (c *coordinator) run(ctx context.Context) (err error) {
	defer func() {
		for _, p := range c.pending {
			if p.req != nil {
				perr := err
				if perr == nil {
					perr = errors.New("the job finished before the savepoint completed")
				}
				p.req.Done <- SavepointResult{Err: perr}
			}
		}
	}()
	var tick <-chan time.Time
	if !c.cfg.TriggerEveryBatch && c.cfg.Interval > 0 {
		t := time.NewTicker(c.cfg.Interval)
		defer t.Stop()
		tick = t.C
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	allEnded, finalPending := false, false
	lockstepDue := false // lockstep: the sources wait for the next barrier
	// In lockstep, a savepoint request is taken only in place of a lockstep
	// barrier, so that its cut (after which batch) is deterministic.
	requests := c.cfg.Requests
	if c.cfg.TriggerEveryBatch {
		requests = nil
	}
	for {
		// Arm the timer for the earliest deadline.
		var next time.Time
		for _, p := range c.pending {
			if !p.deadline.IsZero() && (next.IsZero() || p.deadline.Before(next)) {
				next = p.deadline
			}
		}
		timer.Stop()
		var timeout <-chan time.Time
		if !next.IsZero() {
			timer.Reset(time.Until(next))
			timeout = timer.C
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.progressSig:
			c.mu.Lock()
			finished, batches := c.finished, c.batches
			c.finished = 0
			if batches >= c.sourcesLeft-finished && batches > 0 {
				c.batches = 0
			} else {
				batches = 0
			}
			c.mu.Unlock()
			c.sourcesLeft -= finished
			if c.sourcesLeft == 0 && !allEnded {
				allEnded = true
			}
			if batches > 0 && c.sourcesLeft > 0 { // lockstep: every running source waits
				lockstepDue = true
			}
		case <-tick:
			if !allEnded && !c.stopping && len(c.pending) < c.cfg.maxConcurrent() && time.Since(c.lastEnd) >= c.cfg.MinPause {
				c.trigger(trigger{})
			}
		case req := <-requests:
			c.request(req)
		case <-c.acks.sig:
			for {
				a, ok := c.acks.pop()
				if !ok {
					break
				}
				if err := c.onAck(a); err != nil {
					return err
				}
				if c.finalID != 0 {
					return nil // the final checkpoint completed: the job ends
				}
			}
		case <-timeout:
			if err := c.expire(time.Now()); err != nil {
				return err
			}
		}
		if lockstepDue && len(c.pending) == 0 {
			// Lockstep checkpoints run one at a time, so that their number
			// and place do not depend on timing.
			lockstepDue = false
			select {
			case req := <-c.cfg.Requests:
				c.request(req)
			default:
				c.trigger(trigger{})
			}
		}
		if allEnded && !finalPending && !c.stopping && len(c.pending) == 0 && c.cfg.TriggerEveryBatch {
			select { // lockstep: a waiting request goes before the final checkpoint
			case req := <-c.cfg.Requests:
				c.request(req)
				continue
			default:
			}
		}
		if allEnded && !finalPending && !c.stopping && len(c.pending) == 0 {
			c.trigger(trigger{final: true})
			finalPending = true
		}
		if finalPending {
			// A final checkpoint that failed is retried: the sources wait.
			hasFinal := false
			for _, p := range c.pending {
				if p.tr.final {
					hasFinal = true
				}
			}
			if !hasFinal {
				c.trigger(trigger{final: true})
			}
		}
	}
}

// request starts a savepoint for req.
func (c *coordinator) request(req *SavepointRequest) {
	if c.stopping {
		req.Done <- SavepointResult{Err: errors.New("the job is being stopped with a savepoint already")}
		return
	}
	c.stopping = req.Stop
	c.trigger(trigger{savepoint: true, stop: req.Stop, drain: req.Drain, final: req.Stop}).req = req
}

// expire aborts every pending checkpoint whose deadline passed at now.
func (c *coordinator) expire(now time.Time) error {
	ids := make([]int64, 0, len(c.pending))
	for id, p := range c.pending {
		if !p.deadline.IsZero() && !now.Before(p.deadline) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := c.abort(id, fmt.Errorf("checkpoint %d expired after %v (execution.checkpointing.timeout)", id, c.cfg.Timeout)); err != nil {
			return err
		}
	}
	return nil
}

// trigger starts checkpoint tr in every source subtask; it never blocks.
func (c *coordinator) trigger(tr trigger) *pendingCkpt {
	tr.id = c.nextID
	tr.at = time.Now().UnixNano()
	c.nextID++
	c.cfg.LastID = tr.id
	p := &pendingCkpt{tr: tr, bufs: make([]*checkpoint.Buffer, len(c.all))}
	if c.cfg.Timeout > 0 {
		p.deadline = time.Now().Add(c.cfg.Timeout)
	}
	c.pending[tr.id] = p
	for _, m := range c.sources {
		m.put(ctlMsg{kind: ctlTrigger, tr: tr})
	}
	return p
}

func (c *coordinator) fault(step FaultStep, id int64) error {
	if c.cfg.Fault == nil {
		return nil
	}
	return c.cfg.Fault(step, id)
}

// onAck records one acknowledgement; the last one completes the checkpoint.
func (c *coordinator) onAck(a ack) error {
	p := c.pending[a.id]
	if p == nil {
		return nil // a late ack of an aborted checkpoint
	}
	if a.err != nil {
		return c.abort(a.id, fmt.Errorf("checkpoint %d: %w", a.id, a.err))
	}
	if p.bufs[a.slot] == nil {
		p.acks++
	}
	p.bufs[a.slot] = a.buf
	if a.durable != nil {
		if p.durable == nil {
			p.durable = make([]func() error, len(c.all))
		}
		p.durable[a.slot] = a.durable
	}
	if p.acks < len(c.all) {
		return nil
	}
	return c.complete(p)
}

// complete commits and persists a fully acknowledged checkpoint, then
// notifies every subtask.
func (c *coordinator) complete(p *pendingCkpt) error {
	id := p.tr.id
	fail := func(err error) error {
		if errors.Is(err, ErrInjectedCrash) {
			return err
		}
		return c.abort(id, err)
	}
	if id > c.acked.Load() {
		c.acked.Store(id)
	}
	if err := c.fault(StepAcked, id); err != nil {
		return fail(err)
	}
	start := time.Now()
	if err := c.cfg.Backend.Commit(id, p.bufs); err != nil {
		return fail(fmt.Errorf("checkpoint %d: committing state: %w", id, err))
	}
	// The sinks' output this checkpoint names must be durable before its
	// metadata is: their fsyncs ran meanwhile. A sink that failed to make
	// it durable fails the attempt (a restore replays what it covers).
	for _, done := range p.durable {
		if done == nil {
			continue
		}
		if err := done(); err != nil {
			return fmt.Errorf("checkpoint %d: sink pre-commit: %w", id, err)
		}
	}
	syncDur := time.Since(start)
	if err := c.fault(StepCommitted, id); err != nil {
		return fail(err)
	}
	var info checkpoint.Info
	var err error
	if p.tr.savepoint {
		info, err = c.cfg.Backend.PersistSavepoint(id, p.req.Dir, c.cfg.Meta)
	} else {
		info, err = c.cfg.Backend.Persist(id, checkpoint.KindCheckpoint, c.cfg.Meta)
	}
	if err != nil {
		return fail(fmt.Errorf("checkpoint %d: %w", id, err))
	}
	if info.SyncMS == 0 {
		info.SyncMS = syncDur.Milliseconds()
	}
	info.DurationMS = time.Duration(time.Now().UnixNano() - p.tr.at).Milliseconds()
	if err := c.fault(StepPersisted, id); err != nil {
		if errors.Is(err, ErrInjectedCrash) {
			return err
		}
		// _metadata is durable: the checkpoint is complete whatever the
		// hook says; only a crash can come between it and the commits.
	}
	delete(c.pending, id)
	// Older pending checkpoints cannot complete any more (ids must grow):
	// they are subsumed, not failed.
	for old, q := range c.pending {
		if old < id && !q.tr.stop {
			delete(c.pending, old)
			for _, m := range c.all {
				m.put(ctlMsg{kind: ctlAbort, id: old})
			}
			if q.req != nil {
				q.req.Done <- SavepointResult{Err: fmt.Errorf("savepoint %d: subsumed by checkpoint %d", old, id)}
			}
		}
	}
	c.failures = 0
	c.lastEnd = time.Now()
	// An intermediate savepoint has no side effects: sinks commit nothing
	// (its output is committed by the next checkpoint).
	commit := !p.tr.savepoint || p.tr.stop
	for slot, m := range c.all {
		// The store emptied the buffers it committed: each goes back to
		// its subtask for the next snapshot (it grew to about the size
		// one needs).
		m.put(ctlMsg{kind: ctlComplete, id: id, commit: commit, buf: p.bufs[slot]})
	}
	p.bufs = nil
	if c.cfg.OnComplete != nil {
		c.cfg.OnComplete(info)
	}
	if p.req != nil {
		p.req.Done <- SavepointResult{Info: info}
		p.req = nil
	}
	if c.cfg.FailAfter > 0 && id >= c.cfg.FailAfter {
		return fmt.Errorf("%w after checkpoint %d", ErrInjectedCrash, c.cfg.FailAfter)
	}
	if p.tr.final {
		for _, m := range c.sources {
			m.put(ctlMsg{kind: ctlShutdown, id: id})
		}
		c.finalID = id
	}
	return nil
}

// abort ends checkpoint id as failed: its files are removed, every subtask
// is told (operators keep the epoch's changes for the next checkpoint), a
// savepoint requester gets the error. Too many failures in a row, or a
// failed stop-with-savepoint, fail the attempt.
func (c *coordinator) abort(id int64, cause error) error {
	p := c.pending[id]
	if p == nil {
		return nil
	}
	delete(c.pending, id)
	if !p.tr.savepoint {
		if err := c.cfg.Backend.Abort(id); err != nil && c.cfg.OnFailure != nil {
			c.cfg.OnFailure(id, err)
		}
	}
	for _, m := range c.all {
		m.put(ctlMsg{kind: ctlAbort, id: id})
	}
	if c.cfg.OnFailure != nil {
		c.cfg.OnFailure(id, cause)
	}
	if p.req != nil {
		p.req.Done <- SavepointResult{Err: cause}
		p.req = nil
	}
	if p.tr.stop {
		// The sources stopped at the barrier: fail the attempt, so that the
		// restart strategy resumes from the latest checkpoint.
		return fmt.Errorf("stop with savepoint failed: %w", cause)
	}
	if p.tr.savepoint {
		return nil // a failed savepoint does not count against checkpoints
	}
	c.failures++
	if c.failures > c.cfg.TolerableFailed {
		return fmt.Errorf("checkpoint failed %d times in a row (execution.checkpointing.tolerable-failed-checkpoints = %d): %w", c.failures, c.cfg.TolerableFailed, cause)
	}
	return nil
}

// maxConcurrent is the number of periodic checkpoints that may be pending
// at once (see MaxConcurrent).
func (c *CheckpointConfig) maxConcurrent() int {
	if c.Unaligned {
		return 1
	}
	return max(c.MaxConcurrent, 1)
}
