package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/streamsql/streamsql/internal/memtest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/planner"
)

// openTestStore opens a checkpoint store in a temporary directory for job
// id strings.Repeat(job, 16), keeping retained checkpoints; it is closed
// when the test ends (Close is idempotent: a test may close it first).
func openTestStore(t testing.TB, job string, retained int) *checkpoint.Store {
	t.Helper()
	store, err := checkpoint.Open(checkpoint.Options{Dir: t.TempDir(), JobID: strings.Repeat(job, 16), NumRetained: retained})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// txnSystem is the "external system" of txnSink: pending output per
// (subtask, epoch) that survives a crash, and the committed changelog.
type txnSystem struct {
	mu        sync.Mutex
	pending   map[string][]string // "subtask/epoch" -> rows
	committed []string            // "+I|k|c|s|" changes, in commit order
	commits   int
	// undurable are the pending transactions of an asynchronous
	// pre-commit not yet made durable (asyncSchedSink); committing one
	// is a violation (its rows are lost, as a file's unsynced bytes).
	undurable  map[string]bool
	violations []string
}

// txnSink is a two-phase sink over txnSystem.
type txnSink struct {
	sys     *txnSystem
	subtask int
	cur     []string // rows of the open transaction
	open    []int64  // epochs pre-committed, not yet committed
}

func (s *txnSink) Write(b Batch) error {
	cols := make([]*array.Int64, b.Rec.NumCols())
	for c := range cols {
		switch col := b.Rec.Column(c).(type) {
		case *array.Int64:
			cols[c] = col
		default: // TIMESTAMP (window columns): the same int64 storage
			cols[c] = array.NewInt64Data(col.Data())
			defer cols[c].Release()
		}
	}
	var row []byte
	for i := 0; i < b.Rows(); i++ {
		row = append(append(row[:0], b.Op(i).String()...), '|')
		for _, col := range cols {
			row = append(strconv.AppendInt(row, col.Value(i), 10), '|')
		}
		s.cur = append(s.cur, string(row))
	}
	return nil
}
func (s *txnSink) Finish() error { return nil }
func (s *txnSink) Close() error  { return nil }

func (s *txnSink) key(epoch int64) string { return fmt.Sprintf("%d/%d", s.subtask, epoch) }

func (s *txnSink) PreCommit(id int64) ([]byte, error) {
	s.sys.mu.Lock()
	s.sys.pending[s.key(id)] = s.cur
	s.sys.mu.Unlock()
	s.cur = nil
	s.open = append(s.open, id)
	return json.Marshal(s.open)
}

func (s *txnSink) Commit(id int64) error {
	s.sys.mu.Lock()
	defer s.sys.mu.Unlock()
	keep := s.open[:0]
	for _, e := range s.open {
		if e > id {
			keep = append(keep, e)
			continue
		}
		if rows, ok := s.sys.pending[s.key(e)]; ok {
			if s.sys.undurable[s.key(e)] {
				s.sys.violations = append(s.sys.violations, fmt.Sprintf("%s committed before its pre-commit was durable", s.key(e)))
				delete(s.sys.pending, s.key(e))
				continue
			}
			s.sys.committed = append(s.sys.committed, rows...)
			delete(s.sys.pending, s.key(e))
			s.sys.commits++
		}
	}
	s.open = keep
	return nil
}

// RestoreState completes the commits pending in the restored state and
// discards every other pending transaction of this subtask.
func (s *txnSink) RestoreState(state []byte) error {
	var open []int64
	if state != nil {
		if err := json.Unmarshal(state, &open); err != nil {
			return err
		}
	}
	s.open = open
	var last int64
	for _, e := range open {
		last = max(last, e)
	}
	if err := s.Commit(last); err != nil {
		return err
	}
	s.sys.mu.Lock()
	defer s.sys.mu.Unlock()
	for k := range s.sys.pending {
		if strings.HasPrefix(k, fmt.Sprintf("%d/", s.subtask)) {
			delete(s.sys.pending, k)
		}
	}
	return nil
}

// foldChanges folds "op|values|" changes into sorted final rows.
func foldChanges(changes []string) []string {
	m := map[string]int{}
	for _, c := range changes {
		op, row, _ := strings.Cut(c, "|")
		if op == "+I" || op == "+U" {
			m[row]++
		} else {
			m[row]--
		}
	}
	var out []string
	for r, n := range m {
		if n < 0 {
			out = append(out, "NEGATIVE:"+r)
		}
		for i := 0; i < n; i++ {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}

// ckAggPlan is aggPlan with a two-phase sink at parallelism par.
func ckAggPlan(par int) *planner.Physical {
	p := aggPlan(par)
	src, agg, sink := p.Tasks[0], p.Tasks[1], p.Tasks[2]
	src.Source.ID, agg.Ops[0].(*planner.AggOp).ID = "src", "agg"
	sink.Sink.Table, sink.Sink.ID = &catalog.Table{Name: "txn"}, "sink"
	return p
}

// ckChainedPlan is ckAggPlan with the sink chained to the aggregation (one
// task: agg -> sink), as the planner builds INSERT ... GROUP BY.
func ckChainedPlan(par int) *planner.Physical {
	p := ckAggPlan(par)
	src, agg, sink := p.Tasks[0], p.Tasks[1], p.Tasks[2]
	agg.Sink, agg.Outputs = sink.Sink, nil
	p.Tasks, p.Edges = []*planner.Task{src, agg}, p.Edges[:1]
	return p
}

// TestCrashRestoreExactlyOnce injects a crash right after checkpoint k,
// restores the latest complete checkpoint and runs the job to the end: the
// committed output folds to exactly the uninterrupted result (nothing
// lost, nothing counted twice), for several k, parallelisms and modes.
func TestCrashRestoreExactlyOnce(t *testing.T) {
	const total, keys = 4000, 23
	want := expectedCounts(total, keys)
	for _, chained := range []bool{false, true} {
		for _, par := range []int{1, 3} {
			for _, crashAt := range []int64{1, 4, 9, 28} { // 28: the final checkpoint at p3
				plan := ckAggPlan
				if chained {
					plan = ckChainedPlan
				}
				t.Run(fmt.Sprintf("chained=%v/p%d/crash-after-%d", chained, par, crashAt), func(t *testing.T) {
					mem := memtest.NewChecked()
					defer mem.AssertSize(t, 0)
					store := openTestStore(t, "ab", 2)
					sys := &txnSystem{pending: map[string][]string{}}
					ck := &CheckpointConfig{Backend: store, TriggerEveryBatch: true, FailAfter: crashAt, FirstID: 1}
					cfg := JobConfig{Mem: mem, BatchSize: 50, Checkpoint: ck,
						NewSource: func(_ *catalog.Table, sc *SourceContext) (Source, error) {
							return &genSource{sc: sc, total: total, keys: keys}, nil
						},
						NewSink: func(_ *catalog.Table, sc *SinkContext) (Sink, error) {
							if !sc.Checkpointing {
								t.Error("sink not told that checkpointing is on")
							}
							return &txnSink{sys: sys, subtask: sc.Subtask}, nil
						}}
					err := RunJob(context.Background(), plan(par), cfg)
					if !errors.Is(err, ErrInjectedCrash) {
						t.Fatalf("attempt 1: want the injected crash, got %v", err)
					}
					info, ok, err := store.RestoreLatest()
					if err != nil || !ok || info.ID < crashAt {
						t.Fatalf("RestoreLatest: %+v ok=%v err=%v", info, ok, err)
					}
					ck.FailAfter, ck.Restore, ck.FirstID = 0, true, ck.LastID+1
					if err := RunJob(context.Background(), plan(par), cfg); err != nil {
						t.Fatalf("attempt 2: %v", err)
					}
					got := foldChanges(sys.committed)
					if fmt.Sprint(got) != fmt.Sprint(want.sorted()) {
						t.Fatalf("committed output differs after the crash:\n got %v\nwant %v", got, want.sorted())
					}
					if len(sys.pending) != 0 {
						t.Fatalf("pending transactions left: %v", sys.pending)
					}
				})
			}
		}
	}
}

// faultyOp wraps a stateful operator and fails once at a chosen point.
type faultyOp struct {
	Operator
	at    string // "process", "snapshot", "restore", "close"
	fired *atomic.Int32
	calls *atomic.Int32
	after int32 // fail at the after-th call of that point
}

var errFault = errors.New("injected operator fault")

func (f *faultyOp) hit(point string) error {
	if point != f.at || f.fired.Load() > 0 {
		return nil
	}
	if f.calls.Add(1) == f.after && f.fired.CompareAndSwap(0, 1) {
		return fmt.Errorf("%w at %s", errFault, point)
	}
	return nil
}

func (f *faultyOp) ProcessBatch(input int, b Batch, out Collector) error {
	if err := f.hit("process"); err != nil {
		b.Rec.Release()
		return err
	}
	return f.Operator.ProcessBatch(input, b, out)
}

func (f *faultyOp) Snapshot(id int64, w checkpoint.StateWriter) error {
	if err := f.hit("snapshot"); err != nil {
		return err
	}
	return f.Operator.Snapshot(id, w)
}

func (f *faultyOp) Restore(r checkpoint.StateReader) error {
	if err := f.hit("restore"); err != nil {
		return err
	}
	return f.Operator.Restore(r)
}

func (f *faultyOp) Close() error {
	err := f.Operator.Close()
	if herr := f.hit("close"); herr != nil {
		return herr
	}
	return err
}

// TestOperatorFaultsRestartExactlyOnce injects one operator failure while
// processing a batch, taking a snapshot, restoring, or closing; the job
// restarts from the latest complete checkpoint (restarts counted: the fault
// fired) and the committed output is exactly the uninterrupted result.
func TestOperatorFaultsRestartExactlyOnce(t *testing.T) {
	const total, keys = 3000, 17
	want := expectedCounts(total, keys)
	cases := []struct {
		at    string
		after int32
		crash int64 // also crash after this checkpoint so that a restore happens
	}{
		{at: "process", after: 25},
		{at: "snapshot", after: 7},
		{at: "restore", after: 1, crash: 3},
		{at: "close", after: 1},
	}
	for _, c := range cases {
		t.Run(c.at, func(t *testing.T) {
			mem := memtest.NewChecked()
			defer mem.AssertSize(t, 0)
			store := openTestStore(t, "cd", 1)
			sys := &txnSystem{pending: map[string][]string{}}
			var fired, calls atomic.Int32
			ck := &CheckpointConfig{Backend: store, TriggerEveryBatch: true, FirstID: 1, FailAfter: c.crash}
			cfg := JobConfig{Mem: mem, BatchSize: 40, Checkpoint: ck,
				NewSource: func(_ *catalog.Table, sc *SourceContext) (Source, error) {
					return &genSource{sc: sc, total: total, keys: keys}, nil
				},
				NewSink: func(_ *catalog.Table, sc *SinkContext) (Sink, error) {
					return &txnSink{sys: sys, subtask: sc.Subtask}, nil
				},
				WrapOperator: func(_ string, _ int, op Operator) Operator {
					if _, ok := op.(*groupAgg); ok {
						return &faultyOp{Operator: op, at: c.at, fired: &fired, calls: &calls, after: c.after}
					}
					return op
				}}
			restarts := 0
			err := RunAttempts(context.Background(), ckAggPlan(2), cfg, func(time.Time, error) (time.Duration, bool) {
				return 0, restarts < 3
			}, func(a Attempt) {
				restarts++
				ck.FailAfter = 0 // the injected crash (if any) fires once
			})
			if err != nil {
				t.Fatal(err)
			}
			if fired.Load() != 1 {
				t.Fatalf("the %s fault did not fire", c.at)
			}
			wantRestarts := 1
			if c.crash > 0 {
				wantRestarts = 2 // the crash, then the failed restore
			}
			if restarts != wantRestarts {
				t.Fatalf("%d restarts, want %d", restarts, wantRestarts)
			}
			if got := foldChanges(sys.committed); fmt.Sprint(got) != fmt.Sprint(want.sorted()) {
				t.Fatalf("committed output differs:\n got %v\nwant %v", got, want.sorted())
			}
		})
	}
}

// TestAtLeastOnceRunsToTheEnd: without alignment a channel may deliver the
// final barrier and then its shutdown before the other channels' barriers;
// the job must still finish (it hung), and without failures the output is
// exact.
func TestAtLeastOnceRunsToTheEnd(t *testing.T) {
	const total, keys = 3000, 11
	want := expectedCounts(total, keys)
	for i := 0; i < 5; i++ {
		mem := memtest.NewChecked()
		store, err := checkpoint.Open(checkpoint.Options{Dir: t.TempDir(), JobID: strings.Repeat("12", 16), NumRetained: 1})
		if err != nil {
			t.Fatal(err)
		}
		sys := &txnSystem{pending: map[string][]string{}}
		cfg := JobConfig{Mem: mem, BatchSize: 64, Checkpoint: &CheckpointConfig{Backend: store, AtLeastOnce: true, TriggerEveryBatch: true, FirstID: 1},
			NewSource: func(_ *catalog.Table, sc *SourceContext) (Source, error) {
				return &genSource{sc: sc, total: total, keys: keys}, nil
			},
			NewSink: func(_ *catalog.Table, sc *SinkContext) (Sink, error) {
				return &txnSink{sys: sys, subtask: sc.Subtask}, nil
			}}
		if err := RunJob(context.Background(), ckAggPlan(3), cfg); err != nil {
			t.Fatal(err)
		}
		store.Close()
		if got := foldChanges(sys.committed); fmt.Sprint(got) != fmt.Sprint(want.sorted()) {
			t.Fatalf("output differs:\n got %v\nwant %v", got, want.sorted())
		}
		mem.AssertSize(t, 0)
	}
}
