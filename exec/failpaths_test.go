package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/streamsql/streamsql/internal/memtest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/checkpoint"
)

// Tests of the failure paths of the checkpoint protocol (issue 7): each
// reproduces a behaviour that lost or duplicated rows, or hung, before
// runtime v2.

// fpJob is a lockstep aggregation job over genSource into a txnSink.
type fpJob struct {
	t     *testing.T
	mem   *memory.CheckedAllocator
	store *checkpoint.Store
	sys   *txnSystem
	ck    *CheckpointConfig
	cfg   JobConfig
	srcs  atomic.Int32 // sources whose input ended
}

func newFPJob(t *testing.T, total, keys int64, batch int) *fpJob {
	j := &fpJob{t: t, mem: memtest.NewChecked(), sys: &txnSystem{pending: map[string][]string{}}}
	var err error
	j.store, err = checkpoint.Open(checkpoint.Options{Dir: t.TempDir(), JobID: strings.Repeat("fe", 16), NumRetained: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		j.store.Close()
		j.mem.AssertSize(t, 0)
	})
	j.ck = &CheckpointConfig{Backend: j.store, TriggerEveryBatch: true, FirstID: 1}
	j.cfg = JobConfig{Mem: j.mem, BatchSize: batch, Checkpoint: j.ck,
		NewSource: func(_ *catalog.Table, sc *SourceContext) (Source, error) {
			return &endingSource{genSource{sc: sc, total: total, keys: keys}, &j.srcs}, nil
		},
		NewSink: func(_ *catalog.Table, sc *SinkContext) (Sink, error) {
			return &txnSink{sys: j.sys, subtask: sc.Subtask}, nil
		}}
	return j
}

// endingSource counts the sources whose input ended.
type endingSource struct {
	genSource
	ended *atomic.Int32
}

func (s *endingSource) Run(ctx context.Context, emit func(rec arrow.Record) error) error {
	err := s.genSource.Run(ctx, emit)
	if err == nil {
		s.ended.Add(1)
	}
	return err
}

func (j *fpJob) check(total, keys int64) {
	j.t.Helper()
	want := expectedCounts(total, keys)
	if got := foldChanges(j.sys.committed); fmt.Sprint(got) != fmt.Sprint(want.sorted()) {
		j.t.Fatalf("committed output differs (%d rows, want %d)", len(got), len(want))
	}
	if len(j.sys.pending) != 0 {
		j.t.Fatalf("pending transactions left: %d", len(j.sys.pending))
	}
}

// restartOnce runs the job with restarts (at most max) and counts them.
func (j *fpJob) run(par, maxRestarts int) (restarts int, err error) {
	err = RunAttempts(context.Background(), ckAggPlan(par), j.cfg, func(time.Time, error) (time.Duration, bool) {
		return 0, restarts < maxRestarts
	}, func(Attempt) { restarts++ })
	return restarts, err
}

// 1. An aborted checkpoint must not lose its epoch: the aggregation's
// changes written for it are written again by the next checkpoint. Keys are
// many and each epoch touches few of them, so a lost epoch shows.
func TestAbortedCheckpointsKeepTheirEpoch(t *testing.T) {
	const total, keys = 12000, 4000
	for _, step := range []FaultStep{StepSnapshot, StepAcked, StepCommitted} {
		t.Run(string(step), func(t *testing.T) {
			j := newFPJob(t, total, keys, 40)
			var aborted, completed atomic.Int32
			j.ck.TolerableFailed = 1 << 20
			j.ck.Fault = func(s FaultStep, id int64) error {
				if s == step && id%3 == 0 && id < 120 {
					return errors.New("injected abort")
				}
				if s == StepAcked && id == 131 {
					return fmt.Errorf("%w at checkpoint %d", ErrInjectedCrash, id)
				}
				return nil
			}
			j.ck.OnFailure = func(int64, error) { aborted.Add(1) }
			j.ck.OnComplete = func(checkpoint.Info) { completed.Add(1) }
			restarts, err := j.run(2, 1)
			if err != nil {
				t.Fatal(err)
			}
			if aborted.Load() < 30 || restarts != 1 {
				t.Fatalf("faults did not fire: %d aborted checkpoints, %d restarts", aborted.Load(), restarts)
			}
			j.check(total, keys)
		})
	}
}

// 2. An intermediate savepoint commits nothing: a crash after it and before
// the next checkpoint restores the previous checkpoint, whose epochs after
// it are replayed; had the savepoint committed, they would be there twice.
func TestIntermediateSavepointCommitsNoSideEffects(t *testing.T) {
	const total, keys = 6000, 700
	j := newFPJob(t, total, keys, 50)
	req := make(chan *SavepointRequest, 1)
	j.ck.Requests = req
	done := make(chan SavepointResult, 1)
	var spID atomic.Int64
	var crashed atomic.Bool
	j.ck.OnComplete = func(info checkpoint.Info) {
		if info.ID == 10 && spID.Load() == 0 {
			req <- &SavepointRequest{Dir: t.TempDir(), Done: done}
		}
		if info.Kind == checkpoint.KindSavepoint {
			spID.Store(info.ID)
		}
	}
	j.ck.Fault = func(s FaultStep, id int64) error {
		if s == StepAcked && spID.Load() != 0 && id > spID.Load() && crashed.CompareAndSwap(false, true) {
			return fmt.Errorf("%w after the savepoint", ErrInjectedCrash)
		}
		return nil
	}
	restarts, err := j.run(2, 1)
	if err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Err != nil || spID.Load() == 0 || !crashed.Load() || restarts != 1 {
		t.Fatalf("savepoint %+v (id %d), crashed %v, %d restarts", res, spID.Load(), crashed.Load(), restarts)
	}
	j.check(total, keys)
}

// 4. A job restored from a savepoint whose first attempt fails before its
// first checkpoint must go on numbering checkpoints above the restored one
// (it restarted at 1: "ids must grow" on every checkpoint, forever).
func TestRestoredJobFailingBeforeFirstCheckpointKeepsIDs(t *testing.T) {
	const total, keys = 3000, 50
	j := newFPJob(t, total, keys, 50)
	// Take a stop-with-savepoint at checkpoint 5.
	req := make(chan *SavepointRequest, 1)
	done := make(chan SavepointResult, 1)
	spDir := t.TempDir()
	j.ck.Requests = req
	j.ck.OnComplete = func(info checkpoint.Info) {
		if info.ID == 5 {
			req <- &SavepointRequest{Dir: spDir, Stop: true, Done: done}
		}
	}
	if err := RunJob(context.Background(), ckAggPlan(2), j.cfg); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	// Restore it into a new job directory; fail the first attempt at its
	// first batch, before any checkpoint.
	store, info, err := checkpoint.Restore(checkpoint.Options{Dir: t.TempDir(), JobID: strings.Repeat("ab", 16), NumRetained: 2}, res.Info.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var fired atomic.Int32
	var completed []int64
	var mu sync.Mutex
	ck := &CheckpointConfig{Backend: store, TriggerEveryBatch: true, Restore: true, FirstID: info.ID + 1,
		OnComplete: func(i checkpoint.Info) { mu.Lock(); completed = append(completed, i.ID); mu.Unlock() },
		OnFailure:  func(id int64, err error) { t.Errorf("checkpoint %d failed: %v", id, err) }}
	cfg := j.cfg
	cfg.Checkpoint = ck
	cfg.WrapOperator = func(_ string, _ int, op Operator) Operator {
		if _, ok := op.(*groupAgg); ok {
			var calls atomic.Int32
			return &faultyOp{Operator: op, at: "process", fired: &fired, calls: &calls, after: 1}
		}
		return op
	}
	restarts := 0
	err = RunAttempts(context.Background(), ckAggPlan(2), cfg, func(time.Time, error) (time.Duration, bool) {
		return 0, restarts < 2
	}, func(Attempt) { restarts++ })
	if err != nil {
		t.Fatal(err)
	}
	if fired.Load() != 1 || restarts != 1 {
		t.Fatalf("fault fired %d times, %d restarts", fired.Load(), restarts)
	}
	if len(completed) == 0 || completed[0] <= info.ID {
		t.Fatalf("checkpoints after restoring %d: %v", info.ID, completed)
	}
	j.check(total, keys)
}

// blockingSink blocks every Write until the attempt ends: heavy
// backpressure.
type blockingSink struct {
	ctx context.Context
}

func (s *blockingSink) Write(Batch) error { <-s.ctx.Done(); return s.ctx.Err() }
func (s *blockingSink) Finish() error     { return nil }
func (s *blockingSink) Close() error      { return nil }
func (s *blockingSink) PreCommit(int64) ([]byte, error) {
	return nil, nil
}
func (s *blockingSink) Commit(int64) error        { return nil }
func (s *blockingSink) RestoreState([]byte) error { return nil }

// 5. Under backpressure the coordinator keeps its clock: checkpoints that
// cannot complete expire and are counted, savepoint requests are answered,
// and the attempt fails once the tolerable failures are used up (before,
// trigger sends blocked the coordinator: no expiry, no answer, a hang).
func TestCoordinatorServesUnderBackpressure(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	store := openTestStore(t, "bb", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := make(chan *SavepointRequest, 1)
	done := make(chan SavepointResult, 1)
	var expired atomic.Int32
	ck := &CheckpointConfig{Backend: store, Interval: time.Millisecond, Timeout: 5 * time.Millisecond, TolerableFailed: 3, Requests: req,
		OnFailure: func(id int64, err error) {
			if !strings.Contains(err.Error(), "expired") {
				return
			}
			if expired.Add(1) == 1 {
				req <- &SavepointRequest{Dir: t.TempDir(), Done: done}
			}
		}}
	cfg := JobConfig{Mem: mem, BatchSize: 10, Checkpoint: ck,
		NewSource: func(_ *catalog.Table, sc *SourceContext) (Source, error) {
			return &genSource{sc: sc, total: -1, keys: 10}, nil
		},
		NewSink: func(_ *catalog.Table, sc *SinkContext) (Sink, error) { return &blockingSink{ctx: sc.Ctx}, nil }}
	err := RunJob(ctx, ckAggPlan(2), cfg)
	if err == nil || !strings.Contains(err.Error(), "tolerable-failed-checkpoints") {
		t.Fatalf("want the tolerable failures error, got %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the job hung until the test's deadline")
	}
	select {
	case res := <-done:
		if res.Err == nil {
			t.Fatal("the savepoint succeeded under a blocked sink")
		}
	default:
		t.Fatal("the savepoint request was never answered")
	}
	if expired.Load() < 4 {
		t.Fatalf("%d expired checkpoints, want at least 4", expired.Load())
	}
}

// 6. A final checkpoint (after every source ended) that fails is retried:
// the sources wait for it; the job finishes exactly once.
func TestFinalCheckpointIsRetried(t *testing.T) {
	const total, keys = 2000, 30
	for _, step := range []FaultStep{StepSnapshot, StepAcked, StepCommitted} {
		t.Run(string(step), func(t *testing.T) {
			j := newFPJob(t, total, keys, 100)
			j.ck.TolerableFailed = 2
			var fired atomic.Int32
			j.ck.Fault = func(s FaultStep, id int64) error {
				if s == step && j.srcs.Load() == 2 && fired.Add(1) <= 2 {
					return errors.New("injected failure of the final checkpoint")
				}
				return nil
			}
			if err := RunJob(context.Background(), ckAggPlan(2), j.cfg); err != nil {
				t.Fatal(err)
			}
			if fired.Load() < 2 {
				t.Fatalf("the final checkpoint's fault fired %d times", fired.Load())
			}
			j.check(total, keys)
		})
	}
}

// notifyOp records the notifications an operator receives.
type notifyOp struct {
	Operator
	completes, aborts *atomic.Int32
}

func (o *notifyOp) NotifyComplete(id int64) error {
	o.completes.Add(1)
	return o.Operator.NotifyComplete(id)
}
func (o *notifyOp) NotifyAborted(id int64) error {
	o.aborts.Add(1)
	return o.Operator.NotifyAborted(id)
}

// 7. A subtask whose snapshot fails sends a cancel marker: the checkpoint
// aborts, every operator is told (and of completed ones), and later
// checkpoints complete.
func TestFailedSnapshotCancelsAndNotifies(t *testing.T) {
	const total, keys = 3000, 40
	j := newFPJob(t, total, keys, 60)
	j.ck.TolerableFailed = 10
	var fired, calls, completes, aborts atomic.Int32
	var failures atomic.Int32
	j.ck.OnFailure = func(int64, error) { failures.Add(1) }
	j.cfg.WrapOperator = func(_ string, sub int, op Operator) Operator {
		if _, ok := op.(*groupAgg); ok {
			op = &notifyOp{Operator: op, completes: &completes, aborts: &aborts}
			if sub == 1 {
				return &faultyOp{Operator: op, at: "snapshot", fired: &fired, calls: &calls, after: 4}
			}
		}
		return op
	}
	if err := RunJob(context.Background(), ckAggPlan(3), j.cfg); err != nil {
		t.Fatal(err)
	}
	if fired.Load() != 1 || failures.Load() != 1 {
		t.Fatalf("snapshot fault fired %d, %d checkpoints failed", fired.Load(), failures.Load())
	}
	if aborts.Load() != 3 || completes.Load() < 3 {
		t.Fatalf("operators notified: %d aborts (want 3: one per subtask), %d completions", aborts.Load(), completes.Load())
	}
	j.check(total, keys)
}

// splitSource is a rescalable genSource: its state is its splits, each a
// (stride, next row) sequence of the original parallelism; after a rescale
// a subtask reads every split it was given, one after the other.
type splitSource struct {
	sc     *SourceContext
	total  int64
	keys   int64
	splits [][2]int64 // {stride, next}
	given  bool
}

func (s *splitSource) SnapshotState() ([]byte, error) { return json.Marshal(s.splits) }
func (s *splitSource) RestoreState(b []byte) error {
	s.given = true
	return json.Unmarshal(b, &s.splits)
}
func (s *splitSource) RestoreStates(states [][]byte) error {
	s.given = true
	s.splits = nil
	for _, b := range states {
		var sp [][2]int64
		if err := json.Unmarshal(b, &sp); err != nil {
			return err
		}
		s.splits = append(s.splits, sp...)
	}
	return nil
}
func (s *splitSource) Close() error { return nil }
func (s *splitSource) Run(ctx context.Context, emit func(arrow.Record) error) error {
	if !s.given {
		s.splits = [][2]int64{{int64(s.sc.Parallelism), int64(s.sc.Subtask)}}
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for i := range s.splits {
		for s.splits[i][1] < s.total {
			if err := ctx.Err(); err != nil {
				return err
			}
			kb, vb := array.NewInt64Builder(s.sc.Mem), array.NewInt64Builder(s.sc.Mem)
			for j := 0; j < s.sc.BatchSize && s.splits[i][1] < s.total; j++ {
				n := s.splits[i][1]
				kb.Append(n % s.keys)
				vb.Append(n)
				s.splits[i][1] += s.splits[i][0]
			}
			k, v := kb.NewArray(), vb.NewArray()
			kb.Release()
			vb.Release()
			rec := array.NewRecord(schema, []arrow.Array{k, v}, int64(k.Len()))
			k.Release()
			v.Release()
			if err := emit(rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// 3. Stop with a savepoint at p=2, restore at p=1, let checkpoints
// complete, crash, restore the new job's latest checkpoint: it must hold
// state of one parallelism only (the old subtask 1's entries were left
// behind: "the states come from different parallelisms"), and the output
// is exactly once. Also up again, 1 -> 3.
func TestDownscaleThenCrashRestores(t *testing.T) {
	const total, keys = 6000, 300
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	sys := &txnSystem{pending: map[string][]string{}}
	newCfg := func(ck *CheckpointConfig) JobConfig {
		return JobConfig{Mem: mem, BatchSize: 40, Checkpoint: ck,
			NewSource: func(_ *catalog.Table, sc *SourceContext) (Source, error) {
				return &splitSource{sc: sc, total: total, keys: keys}, nil
			},
			NewSink: func(_ *catalog.Table, sc *SinkContext) (Sink, error) {
				return &rtxnSink{txnSink{sys: sys, subtask: sc.Subtask}}, nil
			}}
	}
	// Attempt at p=2, stopped with a savepoint after checkpoint 10.
	store, err := checkpoint.Open(checkpoint.Options{Dir: t.TempDir(), JobID: strings.Repeat("d1", 16), NumRetained: 2})
	if err != nil {
		t.Fatal(err)
	}
	stopAt := func(ck *CheckpointConfig, after int64) chan SavepointResult {
		req := make(chan *SavepointRequest, 1)
		done := make(chan SavepointResult, 1)
		ck.Requests = req
		ck.OnComplete = func(info checkpoint.Info) {
			if info.ID == after {
				req <- &SavepointRequest{Dir: t.TempDir(), Stop: true, Done: done}
			}
		}
		return done
	}
	ck := &CheckpointConfig{Backend: store, TriggerEveryBatch: true, FirstID: 1}
	done := stopAt(ck, 10)
	if err := RunJob(context.Background(), ckChainedPlan(2), newCfg(ck)); err != nil {
		t.Fatal(err)
	}
	store.Close()
	sp := <-done
	if sp.Err != nil {
		t.Fatal(sp.Err)
	}
	// Restore at p=1 into a new job; crash after its 8th new checkpoint;
	// restore that job's latest checkpoint; stop with a savepoint.
	path := sp.Info.Path
	for step, par := range []int{1, 3} {
		store, info, err := checkpoint.Restore(checkpoint.Options{Dir: t.TempDir(), JobID: strings.Repeat(fmt.Sprintf("e%d", step), 16), NumRetained: 2}, path)
		if err != nil {
			t.Fatal(err)
		}
		ck := &CheckpointConfig{Backend: store, TriggerEveryBatch: true, Restore: true, FirstID: info.ID + 1, FailAfter: info.ID + 8}
		done := stopAt(ck, info.ID+15)
		restarts := 0
		err = RunAttempts(context.Background(), ckChainedPlan(par), newCfg(ck), func(time.Time, error) (time.Duration, bool) {
			return 0, restarts < 1
		}, func(a Attempt) {
			restarts++
			if !a.Restored || a.From.ID <= info.ID {
				t.Errorf("restart did not restore the new job's checkpoint: %+v", a)
			}
		})
		store.Close()
		if err != nil {
			t.Fatalf("p=%d: %v", par, err)
		}
		if restarts != 1 {
			t.Fatalf("p=%d: %d restarts, want the injected crash", par, restarts)
		}
		sp := <-done
		if sp.Err != nil {
			t.Fatalf("p=%d: %v", par, sp.Err)
		}
		path = sp.Info.Path
	}
	// Run the rest at p=2.
	store, info, err := checkpoint.Restore(checkpoint.Options{Dir: t.TempDir(), JobID: strings.Repeat("f0", 16), NumRetained: 2}, path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ck = &CheckpointConfig{Backend: store, TriggerEveryBatch: true, Restore: true, FirstID: info.ID + 1}
	if err := RunJob(context.Background(), ckChainedPlan(2), newCfg(ck)); err != nil {
		t.Fatal(err)
	}
	want := expectedCounts(total, keys)
	if got := foldChanges(sys.committed); fmt.Sprint(got) != fmt.Sprint(want.sorted()) {
		t.Fatalf("committed output differs (%d rows, want %d)", len(got), len(want))
	}
}

// rtxnSink is a txnSink that can be restored at another parallelism: its
// state names its subtask.
type rtxnSink struct{ txnSink }

type rtxnState struct {
	Sub  int
	Open []int64
}

func (s *rtxnSink) PreCommit(id int64) ([]byte, error) {
	if _, err := s.txnSink.PreCommit(id); err != nil {
		return nil, err
	}
	return json.Marshal(rtxnState{Sub: s.subtask, Open: s.open})
}

func (s *rtxnSink) RestoreState(b []byte) error {
	if b == nil {
		return s.RestoreStates(nil)
	}
	return s.RestoreStates([][]byte{b})
}

// RestoreStates commits what each old subtask had pending in the restored
// state and discards the rest of those subtasks' and its own pending
// transactions.
func (s *rtxnSink) RestoreStates(states [][]byte) error {
	subs := map[int]bool{s.subtask: true}
	for _, b := range states {
		var st rtxnState
		if err := json.Unmarshal(b, &st); err != nil {
			return err
		}
		subs[st.Sub] = true
		old := txnSink{sys: s.sys, subtask: st.Sub, open: st.Open}
		var last int64
		for _, e := range st.Open {
			last = max(last, e)
		}
		if err := old.Commit(last); err != nil {
			return err
		}
	}
	s.open = nil
	s.sys.mu.Lock()
	defer s.sys.mu.Unlock()
	for k := range s.sys.pending {
		var sub int
		fmt.Sscanf(k, "%d/", &sub)
		if subs[sub] {
			delete(s.sys.pending, k)
		}
	}
	for k := range s.sys.undurable { // discarded with their transactions
		var sub int
		fmt.Sscanf(k, "%d/", &sub)
		if subs[sub] {
			delete(s.sys.undurable, k)
		}
	}
	return nil
}

// fakeClock is a processing-time clock the test moves.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) Now() time.Time { return time.UnixMilli(c.ms.Load()) }

// twoBatchSource emits the same row twice; before the second it waits
// until the first result reached the sink, then moves the clock.
type twoBatchSource struct {
	sc      *SourceContext
	seen    chan struct{}
	advance func()
}

func (s *twoBatchSource) Close() error { return nil }
func (s *twoBatchSource) Run(ctx context.Context, emit func(arrow.Record) error) error {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for i := 0; i < 2; i++ {
		if i == 1 {
			select {
			case <-s.seen:
			case <-ctx.Done():
				return ctx.Err()
			}
			s.advance()
		}
		kb, vb := array.NewInt64Builder(s.sc.Mem), array.NewInt64Builder(s.sc.Mem)
		kb.Append(1)
		vb.Append(5)
		k, v := kb.NewArray(), vb.NewArray()
		kb.Release()
		vb.Release()
		rec := array.NewRecord(schema, []arrow.Array{k, v}, 1)
		k.Release()
		v.Release()
		if err := emit(rec); err != nil {
			return err
		}
	}
	return nil
}

// table.exec.state.ttl: a group not updated for longer than the TTL is
// dropped without a retraction; the next row of its key starts it afresh
// (+I), as in Flink. Without a TTL the same input updates it (-U/+U).
func TestStateTTLExpiresGroups(t *testing.T) {
	for _, ttl := range []time.Duration{0, time.Minute} {
		mem := memtest.NewChecked()
		clock := &fakeClock{}
		clock.ms.Store(1_000_000)
		seen := make(chan struct{}, 1)
		var got []string
		cfg := JobConfig{Mem: mem, BatchSize: 8, StateTTL: ttl, Clock: clock,
			NewSource: func(_ *catalog.Table, sc *SourceContext) (Source, error) {
				return &twoBatchSource{sc: sc, seen: seen, advance: func() { clock.ms.Add(2 * time.Minute.Milliseconds()) }}, nil
			},
			Collect: func(b Batch) error {
				for i := 0; i < b.Rows(); i++ {
					got = append(got, fmt.Sprintf("%s%d", b.Op(i), b.Rec.Column(1).(*array.Int64).Value(i)))
				}
				select {
				case seen <- struct{}{}:
				default:
				}
				return nil
			}}
		if err := RunJob(context.Background(), aggPlan(1), cfg); err != nil {
			t.Fatal(err)
		}
		want := "[+I1 -U1 +U2]"
		if ttl > 0 {
			want = "[+I1 +I1]"
		}
		if fmt.Sprint(got) != want {
			t.Fatalf("ttl %v: changelog of the counts %v, want %s", ttl, got, want)
		}
		mem.AssertSize(t, 0)
	}
}
