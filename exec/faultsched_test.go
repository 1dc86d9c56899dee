package exec

// A randomized fault schedule (issue 7, "Proof"), in the spirit of Pebble's
// metamorphic tests: a seeded generator builds a schedule, a list of events
// applied in order to one job (and to the jobs restored from its
// savepoints): crashes and aborts at named protocol points, expired
// checkpoints, failed and successful intermediate savepoints, stop with
// savepoint and restore at another parallelism, failures during a restore
// and before the first checkpoint after one, faults of one subtask's
// snapshot or sink pre-commit, faults of the checkpoint at the end of input.
// The job is a GROUP BY over more than 10,000 keys, few of them rewritten
// per epoch (or two of them, the second deleting and re-creating groups),
// aligned or unaligned under backpressure, into a two-phase sink; the oracle is the uninterrupted result,
// to which the committed output must fold exactly (nothing lost, nothing
// twice), with no transaction left pending. Every event must fire, and be
// seen where its effect shows (a restart, a failed checkpoint, a savepoint's
// result); anything the schedule did not cause (a restart, a failed
// checkpoint) fails the schedule.
//
// Checkpoints run in lockstep with the sources (TriggerEveryBatch): one per
// round of source batches. Every event fires at a counted occurrence of a
// protocol step (the n-th acked, the n-th completed, a subtask's n-th
// snapshot), never after a delay or a timer of its own, so a seed always
// plays the same schedule; what varies from run to run is only the
// interleaving of independent goroutines (which subtask snapshots first,
// whether a savepoint's barrier precedes the next lockstep one), on which
// neither the oracle nor the counts depend. An expiry is forced, not
// awaited: the timeout is cut to 1ms while one subtask is held before its
// snapshot, and released when the coordinator reports the expiry.
//
// `go test` runs schedulesPerRun seeds; STREAMSQL_SOAK=N runs N random seeds
// (make soak N=...); STREAMSQL_SEED=S runs seed S alone. A failure prints
// its seed and schedule.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/streamsql/streamsql/internal/memtest"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec/bufpool"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/planner"
)

const (
	schedKeys   = 10007 // groups: a prime, so that keys and splits do not line up
	schedRows   = 30000 // every group gets 2 or 3 rows, some 750 groups change per epoch
	schedSplits = 6     // source splits: every parallelism 1..3 divides them
	schedStride = 2003  // a split's i-th row is its (i*schedStride mod 5000)-th (coprime with 5000)
	// schedBatch is the rows a source batch takes from each split it reads:
	// every round of batches (one epoch) reads 6*128 rows of 30,000 at any
	// parallelism, also after a rescale.
	schedBatch = 128
	// schedBudget bounds the checkpoints a schedule's events use up before
	// they have all fired. The input is 40 rounds of batches, each one
	// checkpoint, and a restart only ever adds rounds (the restored job
	// reads part of its input again).
	schedBudget = 26
	// schedulesPerRun is how many seeds a plain `go test` runs; under the
	// race detector (about ten times slower) the first schedulesPerRaceRun.
	schedulesPerRun     = 50
	schedulesPerRaceRun = 8
	// schedTimeout turns a hung schedule into a failure that names its seed
	// (schedDeadline: three times as long under the race detector, where a
	// schedule of seed 6 took 40 s alone and passed 60 s with a second
	// package's race tests beside it on two cores).
	schedTimeout = time.Minute
)

// schedDeadline is how long a schedule may run before it counts as hung.
func schedDeadline() time.Duration {
	if raceDetector() {
		return 3 * schedTimeout
	}
	return schedTimeout
}

// evKind is the kind of a schedule event.
type evKind uint8

const (
	// evAbort: Fault returns an error at step: the checkpoint is aborted.
	evAbort evKind = iota
	// evCrash: Fault returns ErrInjectedCrash at step: the attempt fails.
	evCrash
	// evIgnored: Fault returns an error at StepPersisted, after _metadata:
	// the checkpoint completes all the same.
	evIgnored
	// evOpAbort, evOpCrash: one subtask's aggregation snapshot (or, with
	// sink, its sink pre-commit) fails; a crash fails the attempt.
	evOpAbort
	evOpCrash
	// evExpire: the checkpoint after the n-th completed one expires (the
	// timeout is cut short and one subtask held until it aborts).
	evExpire
	// evSavepoint, evSavepointFail: an intermediate savepoint after the n-th
	// completed checkpoint, which completes (commits nothing) or fails (its
	// target is inside the job's checkpoint directory).
	evSavepoint
	evSavepointFail
	// evStopFail: a stop with savepoint that fails: the attempt fails and the
	// job restarts from its latest checkpoint.
	evStopFail
	// evStop: stop with savepoint (drain or not), then a new job restored
	// from it at parallelism par.
	evStop
	// evKill: an intermediate savepoint, then a crash at the next checkpoint
	// (before it commits anything); the job is abandoned and a new one
	// restored from the savepoint at parallelism par.
	evKill
	// evRestoreFail: an aggregation subtask fails in Restore (the first
	// attempt after a restart or of a restored job).
	evRestoreFail
	// evEarlyFail: an aggregation subtask fails on its first batch of an
	// attempt that restored: before the attempt's first checkpoint.
	evEarlyFail
	// evEndAbort, evEndCrash: Fault fails at step of the final checkpoint
	// (triggered after every source ended its input); an aborted one is
	// retried.
	evEndAbort
	evEndCrash
)

// schedEvent is one event of a schedule.
type schedEvent struct {
	kind  evKind
	step  FaultStep
	n     int  // fire at the n-th occurrence of its trigger once it is live
	sub   int  // evOpAbort/evOpCrash: the subtask
	sink  bool // evOpAbort/evOpCrash: the sink's pre-commit, not the aggregation's snapshot
	async bool // evOpCrash of an asynchronous sink: its done fails, not its pre-commit
	drain bool // evStop
	par   int  // evStop/evKill: parallelism of the restored job
}

func (e schedEvent) String() string {
	nth := fmt.Sprintf("#%d", e.n)
	switch e.kind {
	case evAbort:
		return fmt.Sprintf("abort at %s %s", e.step, nth)
	case evCrash:
		return fmt.Sprintf("crash at %s %s", e.step, nth)
	case evIgnored:
		return fmt.Sprintf("error at persisted %s (ignored: _metadata is durable)", nth)
	case evOpAbort, evOpCrash:
		what := "aggregation snapshot"
		if e.sink {
			what = "sink pre-commit"
		}
		verb := "fails"
		if e.kind == evOpCrash {
			verb = "crashes"
			if e.sink && e.async {
				what, verb = "sink pre-commit's background durability", "fails (the attempt fails)"
			}
		}
		return fmt.Sprintf("%s of subtask %d %s %s", what, e.sub, verb, nth)
	case evExpire:
		return fmt.Sprintf("checkpoint after completed %s expires", nth)
	case evSavepoint:
		return fmt.Sprintf("intermediate savepoint after completed %s", nth)
	case evSavepointFail:
		return fmt.Sprintf("failed intermediate savepoint after completed %s", nth)
	case evStopFail:
		return fmt.Sprintf("failed stop-with-savepoint after completed %s (restart)", nth)
	case evStop:
		d := ""
		if e.drain {
			d = " --drain"
		}
		return fmt.Sprintf("stop-with-savepoint%s after completed %s, restore at p%d", d, nth, e.par)
	case evKill:
		return fmt.Sprintf("intermediate savepoint after completed %s, crash at the next checkpoint, restore from the savepoint at p%d", nth, e.par)
	case evRestoreFail:
		return "an aggregation subtask fails in Restore"
	case evEarlyFail:
		return "an aggregation subtask fails on its first batch (before the first checkpoint after the restore)"
	case evEndAbort:
		return fmt.Sprintf("abort at %s of the final checkpoint", e.step)
	case evEndCrash:
		return fmt.Sprintf("crash at %s of the final checkpoint", e.step)
	}
	return "?"
}

// wantObs is how many observations an event must produce: the failed
// checkpoint, the restart, the savepoint's result; a kill both its
// savepoint and its crash.
func (e schedEvent) wantObs() int {
	if e.kind == evKill {
		return 2
	}
	return 1
}

// restarts reports whether the event ends its attempt (RunAttempts
// restarts, or a new job is restored).
func (e schedEvent) restarts() bool {
	switch e.kind {
	case evCrash, evOpCrash, evStopFail, evStop, evKill, evRestoreFail, evEarlyFail, evEndCrash:
		return true
	}
	return false
}

// schedule is a generated list of events with the job it applies to.
type schedule struct {
	seed    uint64
	plan    schedPlan
	par     int // parallelism of the first job
	maxPar  int // key groups (pipeline.max-parallelism), the same for every job
	chanCap int // messages an exchange channel buffers (backpressure)
	retain  int // state.checkpoints.num-retained
	// unaligned: execution.checkpointing.unaligned.enabled (barriers
	// overtake the batches queued at a subtask; those are stored as channel
	// state), with the small channel capacities giving backpressure.
	unaligned bool
	// asyncSink: the sink pre-commits asynchronously
	// (AsyncPreCommitSink): its output becomes durable in the done the
	// coordinator waits for, and a sink crash event fails that done.
	asyncSink bool
	// phase: whether an aggregation over an insert-only input runs in two
	// phases (planner.SplitAggregation), as
	// table.optimizer.agg-phase-strategy ONE_PHASE, AUTO (two phases
	// above parallelism 1: a rescale across 1 restores one plan's state and
	// channel state into the other) or TWO_PHASE would plan it.
	phase  schedPhase
	events []schedEvent
}

// schedPhase is a schedule's agg-phase-strategy.
type schedPhase uint8

const (
	phaseOne schedPhase = iota
	phaseAuto
	phaseTwo
)

func (p schedPhase) String() string {
	return [...]string{"ONE_PHASE", "AUTO", "TWO_PHASE"}[p]
}

// split makes the aggregations of plan that can run in two phases do so
// (at parallelism par), as the planner would: those it finds splittable
// (planner.Splittable), behind a hash exchange from a task with no other
// output. (The plans are built by hand, already connected: the planner's
// own check runs while it builds them.)
func (p schedPhase) split(plan *planner.Physical, par int) *planner.Physical {
	if p == phaseOne || p == phaseAuto && par == 1 {
		return plan
	}
	for _, t := range plan.Tasks {
		if len(t.Ops) == 0 || len(t.Inputs) != 1 {
			continue
		}
		a, ok := t.Ops[0].(*planner.AggOp)
		in := t.Inputs[0].From
		if ok && len(in.Outputs) == 1 && t.Inputs[0].Kind == planner.Hash && planner.Splittable(a) {
			planner.SplitAggregation(a, in)
			in.Ops[len(in.Ops)-1].(*planner.LocalAggOp).ID = a.ID + "-local"
		}
	}
	return plan
}

func (s *schedule) String() string {
	var b strings.Builder
	plan := [...]string{
		planGlobalSink: "src -> HASH(k) -> agg(k) -> GLOBAL -> sink(p1)",
		planChained:    "src -> HASH(k) -> agg(k)+sink",
		planTwoLevel:   "src -> HASH(k) -> agg(k)+calc(s % 7919) -> HASH -> agg(b)+sink",
		planFanOut:     "src -> {HASH(k) -> agg(k)+sink a, HASH(k) -> agg(k)(p1) -> GLOBAL -> sink b(p1)}",
		planWindow:     "src+watermark(t - 1.3 s) -> HASH(k) -> HOP(1 s, 2 s) window agg(k)+sink",
		planWindowRank: "src+watermark(t - 1.3 s)+TUMBLE(1 s) -> HASH(k) -> window top 2(k)+sink",
		planJoin:       "src -> {HASH(k) -> agg(k) -> HASH(k) -> join right, HASH(k) -> join left}; join(k)+sink",
		planSharedAgg:  "src -> HASH(k) -> agg(k) -> {FORWARD -> sink a, FORWARD -> sink b}",
		planSession:    "src+watermark(t - 1.3 s) -> HASH(k % 101) -> SESSION(100 ms) window agg(k)+sink",
	}[s.plan]
	mode := "aligned"
	if s.unaligned {
		mode = "unaligned"
	}
	if s.asyncSink {
		mode += ", asynchronous sink pre-commit"
	}
	fmt.Fprintf(&b, "schedule seed=%d: %s at p%d, %s, max parallelism %d, channel capacity %d, %d retained, %s; %d rows over %d keys, %d rows per split and batch\n",
		s.seed, plan, s.par, mode, s.maxPar, s.chanCap, s.retain, s.phase, schedRows, schedKeys, schedBatch)
	for i, e := range s.events {
		fmt.Fprintf(&b, "  %2d. %s\n", i+1, e)
	}
	return b.String()
}

// schedPlan is the job a schedule runs.
type schedPlan uint8

const (
	// planGlobalSink: GROUP BY k, COUNT(*), SUM(v) into a sink at
	// parallelism 1 (ckAggPlan).
	planGlobalSink schedPlan = iota
	// planChained: the same with the sink chained to the aggregation, at
	// the job's parallelism (ckChainedPlan).
	planChained
	// planTwoLevel: then GROUP BY s % schedBuckets, COUNT(*), SUM(k) over
	// that changelog, with the sink chained (see twoLevelPlan).
	planTwoLevel
	// planFanOut: a source with two output edges (a source shared by two
	// statements), each into the aggregation and a sink (see fanPlan); the
	// committed output holds every row twice.
	planFanOut
	// planWindow: event time and a HOP window aggregation with its sink
	// chained (windowsched_test.go).
	planWindow
	// planWindowRank: the same event time, a TUMBLE window TVF and a
	// Window TopN per key with its sink chained (windowrank_test.go).
	planWindowRank
	// planJoin: the source's rows joined on k with the aggregation of
	// their key (an updating right side with a unique key), the sink
	// chained to the join (joinSchedPlan).
	planJoin
	// planSharedAgg: one aggregation read by two sinks behind forward
	// edges, the shape of an aggregation that sub-plan reuse plans once
	// for two readers (planner/reuse.go: a statement set, a CTE read
	// twice; see sharedAggPlan); the committed output holds every row
	// twice.
	planSharedAgg
	// planSession: planWindow's source with 101 keys and a SESSION window
	// (gap 100 ms): sessions grow, and merge when a split's row arrives
	// after others' later rows (windowsched_test.go).
	planSession
	numSchedPlans
)

// windowed: the job fires windows by event time (its source emits t).
func (p schedPlan) windowed() bool {
	return p == planWindow || p == planWindowRank || p == planSession
}

func (p schedPlan) build(par int) *planner.Physical {
	switch p {
	case planChained:
		return ckChainedPlan(par)
	case planTwoLevel:
		return twoLevelPlan(par)
	case planFanOut:
		return fanPlan(par)
	case planWindow:
		return windowSchedPlan(par)
	case planSession:
		return sessionSchedPlan(par)
	case planWindowRank:
		return windowRankSchedPlan(par)
	case planJoin:
		return joinSchedPlan(par)
	case planSharedAgg:
		return sharedAggPlan(par)
	}
	return ckAggPlan(par)
}

// sharedAggPlan is planSharedAgg's job: ckAggPlan's aggregation with two
// output edges, each a forward edge to a sink task of its own at the
// aggregation's parallelism (the sinks are not chained: a task chains at
// most one consumer).
func sharedAggPlan(par int) *planner.Physical {
	p := ckAggPlan(par)
	src, agg, sinkA := p.Tasks[0], p.Tasks[1], p.Tasks[2]
	sinkA.Name, sinkA.Parallelism = "sink-a", par
	sinkA.Sink.Table, sinkA.Sink.ID = &catalog.Table{Name: "a"}, "sink-a"
	sinkB := &planner.Task{Name: "sink-b", Parallelism: par,
		Sink: &planner.SinkSpec{Schema: sinkA.Sink.Schema, Mode: sinkA.Sink.Mode, Table: &catalog.Table{Name: "b"}, ID: "sink-b"}}
	ea := &planner.Edge{From: agg, To: sinkA, Kind: planner.Forward, Mode: planner.Retract}
	eb := &planner.Edge{From: agg, To: sinkB, Kind: planner.Forward, Mode: planner.Retract}
	agg.Outputs, sinkA.Inputs, sinkB.Inputs = []*planner.Edge{ea, eb}, []*planner.Edge{ea}, []*planner.Edge{eb}
	return &planner.Physical{Tasks: []*planner.Task{src, agg, sinkA, sinkB}, Edges: []*planner.Edge{p.Edges[0], ea, eb}}
}

// schedBuckets is the number of second-level groups of planTwoLevel (a
// prime below the number of keys: groups hold one or two keys, and lose and
// regain them all the time).
const schedBuckets = 7919

// want is the folded output of the uninterrupted job, from expectedCounts.
func (p schedPlan) want() []string {
	if p == planWindow {
		return windowSchedWant()
	}
	if p == planSession {
		return sessionSchedWant()
	}
	if p == planWindowRank {
		return windowRankSchedWant()
	}
	if p == planJoin {
		return joinSchedWant()
	}
	rows := expectedCounts(schedRows, schedKeys).sorted()
	if p == planFanOut || p == planSharedAgg { // both sinks write every row
		twice := make([]string, 0, 2*len(rows))
		for _, r := range rows {
			twice = append(twice, r, r)
		}
		return twice
	}
	if p != planTwoLevel {
		return rows
	}
	type group struct{ n, sk int64 }
	groups := map[int64]*group{}
	for _, row := range rows { // "k|c|s|"
		var k, c, sum int64
		if _, err := fmt.Sscanf(row, "%d|%d|%d|", &k, &c, &sum); err != nil {
			panic(err)
		}
		g := groups[sum%schedBuckets]
		if g == nil {
			g = &group{}
			groups[sum%schedBuckets] = g
		}
		g.n++
		g.sk += k
	}
	second := folded{}
	for b, g := range groups {
		second[fmt.Sprintf("%d|%d|%d|", b, g.n, g.sk)]++
	}
	return second.sorted()
}

// joinSchedPlan: the source (k, v) feeds the aggregation (k, c, s) and,
// by a second edge, the left side of an inner join on k whose right side
// is the aggregation's changelog; the sink is chained to the join. Every
// row joins its key's aggregate, which changes with every later row of
// the key: the join retracts and re-emits its pairs all the time.
func joinSchedPlan(par int) *planner.Physical {
	p := ckAggPlan(par)
	src, agg := p.Tasks[0], p.Tasks[1]
	aggOut := agg.OutSchema
	out := append(append(catalog.Schema{}, kvSchema...), aggOut...)
	j := &planner.JoinOp{ID: "join", Type: planner.InnerJoin, NullSafe: []bool{false}, Out: out, OutMode: planner.Retract,
		Left:  planner.JoinSide{Keys: []int{0}, Mode: planner.InsertOnly, Schema: kvSchema},
		Right: planner.JoinSide{Keys: []int{0}, UniqueKey: []int{0}, Mode: planner.Retract, Schema: aggOut}}
	jt := &planner.Task{Name: "join", Parallelism: par, Ops: []planner.Op{j}, OutSchema: out, OutMode: planner.Retract,
		Sink: &planner.SinkSpec{Table: &catalog.Table{Name: "txn"}, ID: "sink", Schema: out, Mode: planner.Retract}}
	left := &planner.Edge{From: src, To: jt, Kind: planner.Hash, Keys: []int{0}}
	right := &planner.Edge{From: agg, To: jt, Kind: planner.Hash, Keys: []int{0}, Mode: planner.Retract}
	src.Outputs = append(src.Outputs, left)
	agg.Outputs = []*planner.Edge{right}
	jt.Inputs = []*planner.Edge{left, right}
	return &planner.Physical{Tasks: []*planner.Task{src, agg, jt}, Edges: []*planner.Edge{p.Edges[0], left, right}}
}

// joinSchedWant is joinSchedPlan's uninterrupted output: every row n
// (k = n mod schedKeys, v = n) with its key's final count and sum.
func joinSchedWant() []string {
	type kv struct{ c, s int64 }
	aggs := map[int64]kv{}
	for n := int64(0); n < schedRows; n++ {
		a := aggs[n%schedKeys]
		a.c++
		a.s += n
		aggs[n%schedKeys] = a
	}
	out := make(folded, schedRows)
	for n := int64(0); n < schedRows; n++ {
		k := n % schedKeys
		out[fmt.Sprintf("%d|%d|%d|%d|%d|", k, n, k, aggs[k].c, aggs[k].s)]++
	}
	return out.sorted()
}

// twoLevelPlan is ckAggPlan's source and aggregation (k, c, s) chained to a
// projection (b = s % schedBuckets, k), then HASH(b) ->
// GroupAggregate(b, COUNT(*), SUM(k)) with the sink chained. Every row of
// the input moves its key from one group b to another: groups are deleted
// (state tombstones) and created again every epoch.
func twoLevelPlan(par int) *planner.Physical {
	p := ckAggPlan(par)
	src, agg := p.Tasks[0], p.Tasks[1]
	big := catalog.BigInt
	mid := catalog.Schema{{Name: "b", Type: big}, {Name: "k", Type: big}}
	proj := &planner.CalcOp{ID: "calc", Out: mid, Mode: planner.Retract, Projs: []planner.Expr{
		&planner.Call{Fn: "%", T: big, Args: []planner.Expr{&planner.ColRef{Index: 2, Name: "s", T: big}, &planner.Literal{Value: int64(schedBuckets), T: big}}},
		&planner.ColRef{Index: 0, Name: "k", T: big},
	}}
	agg.Ops, agg.OutSchema = append(agg.Ops, proj), mid
	out := catalog.Schema{{Name: "b", Type: big}, {Name: "n", Type: big}, {Name: "sk", Type: big}}
	agg2 := &planner.AggOp{ID: "agg2", Keys: []int{0}, KeyNames: []string{"b"}, InputMode: planner.Retract, Out: out, Aggs: []planner.AggCall{
		{Fn: "count_star", Arg: -1, T: big},
		{Fn: "sum", Arg: 1, ArgType: big, T: big},
	}}
	t2 := &planner.Task{Name: "agg2", Parallelism: par, Ops: []planner.Op{agg2}, OutSchema: out, OutMode: planner.Retract,
		Sink: &planner.SinkSpec{Table: &catalog.Table{Name: "txn"}, ID: "sink", Schema: out, Mode: planner.Retract}}
	e2 := &planner.Edge{From: agg, To: t2, Kind: planner.Hash, Keys: []int{0}, Mode: planner.Retract}
	agg.Outputs, t2.Inputs = []*planner.Edge{e2}, []*planner.Edge{e2}
	return &planner.Physical{Tasks: []*planner.Task{src, agg, t2}, Edges: []*planner.Edge{p.Edges[0], e2}}
}

// genSchedule builds the schedule of a seed. It tracks how many checkpoints
// the events use up (at most schedBudget, so that all fire before the end of
// input), the current parallelism, and whether a complete checkpoint
// certainly exists (so that a restart restores and a restore fault fires).
func genSchedule(seed uint64) *schedule {
	r := rand.New(rand.NewPCG(seed, 0x5eed5eed))
	s := &schedule{seed: seed, plan: schedPlan(r.IntN(int(numSchedPlans))), par: 1 + r.IntN(3),
		maxPar: []int{7, 16, 16, 32, 128}[r.IntN(5)], chanCap: 1 + r.IntN(4), retain: 1 + r.IntN(3),
		unaligned: r.IntN(3) == 0}
	s.asyncSink = seed/4%2 == 1 // independent of schedTiered's seed%4
	s.phase = schedPhase(seed / 8 % 3)
	par := s.par
	subtasks := func() int { // subtasks that take snapshots
		switch s.plan {
		case planChained, planWindow, planWindowRank, planSession:
			return 2 * par
		case planTwoLevel, planJoin:
			return 3 * par
		case planFanOut:
			return 2*par + 2
		case planSharedAgg:
			return 4 * par
		}
		return 2*par + 1
	}
	budget := schedBudget
	restorable := false   // a complete checkpoint exists in the current job
	afterRestart := false // the previous event ended its attempt
	switches := 0
	want := 4 + r.IntN(7)
	add := func(e schedEvent, cost int) {
		s.events = append(s.events, e)
		budget -= cost
		afterRestart = e.restarts()
	}
	otherPar := func() int {
		p := 1 + r.IntN(2)
		if p >= par {
			p++
		}
		return p
	}
	for len(s.events) < want && budget > 4 {
		if afterRestart && restorable && r.IntN(3) == 0 {
			if r.IntN(2) == 0 {
				add(schedEvent{kind: evRestoreFail}, 0)
			} else {
				add(schedEvent{kind: evEarlyFail}, 1)
			}
			continue
		}
		n := 1 + r.IntN(3)
		switch k := r.IntN(100); {
		case k < 16:
			step := []FaultStep{StepAcked, StepCommitted, StepSnapshot}[r.IntN(3)]
			e := schedEvent{kind: evAbort, step: step, n: n}
			cost := n + 1
			if step == StepSnapshot {
				e.n = 1 + r.IntN(2*subtasks())
				cost = (e.n+subtasks()-1)/subtasks() + 1
			} else if n >= 2 {
				restorable = true
			}
			add(e, cost)
		case k < 34:
			step := []FaultStep{StepAcked, StepCommitted, StepPersisted, StepSnapshot}[r.IntN(4)]
			e := schedEvent{kind: evCrash, step: step, n: n}
			cost := n + 1
			switch {
			case step == StepSnapshot:
				e.n = 1 + r.IntN(2*subtasks())
				cost = (e.n+subtasks()-1)/subtasks() + 1
			case step == StepPersisted || n >= 2:
				restorable = true
			}
			add(e, cost)
		case k < 38:
			restorable = true
			add(schedEvent{kind: evIgnored, step: StepPersisted, n: n}, n+1)
		case k < 50:
			e := schedEvent{kind: evOpAbort, n: n, sink: r.IntN(3) == 0}
			if r.IntN(2) == 0 {
				e.kind = evOpCrash
			}
			if !e.sink || s.plan != planGlobalSink {
				e.sub = r.IntN(par)
			}
			e.async = e.sink && e.kind == evOpCrash && s.asyncSink
			add(e, n+1)
		case k < 57:
			restorable = true
			add(schedEvent{kind: evExpire, n: n}, n+2)
		case k < 67:
			restorable = true
			add(schedEvent{kind: evSavepoint, n: n}, n+1)
			if r.IntN(2) == 0 {
				// A crash before the next checkpoint completes: the restore
				// goes back to the checkpoint before the savepoint, so the
				// savepoint must not have committed its epoch.
				e := schedEvent{kind: evCrash, step: []FaultStep{StepAcked, StepCommitted, StepSnapshot}[r.IntN(3)], n: 1}
				if e.step == StepSnapshot {
					e.n = 1 + r.IntN(subtasks())
				}
				add(e, 2)
			}
		case k < 74:
			restorable = true
			add(schedEvent{kind: evSavepointFail, n: n}, n+1)
		case k < 79:
			restorable = true
			add(schedEvent{kind: evStopFail, n: n}, n+1)
		case k < 100 && switches < 2:
			switches++
			// A drain fires every window early (MaxWatermark): a window job
			// restored from it is not the uninterrupted job (as in Flink).
			e := schedEvent{kind: evStop, n: n, par: otherPar(), drain: r.IntN(2) == 0 && !s.plan.windowed()}
			cost := n + 1
			if r.IntN(2) == 0 {
				e.kind, e.drain = evKill, false
				cost++
			}
			add(e, cost)
			par, restorable = e.par, true // the new job restores the savepoint
		}
	}
	if r.IntN(3) == 0 {
		e := schedEvent{kind: evEndAbort, step: []FaultStep{StepAcked, StepCommitted}[r.IntN(2)]}
		if r.IntN(2) == 0 {
			e.kind = evEndCrash
			e.step = []FaultStep{StepAcked, StepCommitted, StepPersisted}[r.IntN(3)]
		}
		add(e, 0)
		if e.kind == evEndCrash && restorable && r.IntN(2) == 0 {
			add(schedEvent{kind: evRestoreFail}, 0)
		}
	}
	return s
}

// schedFault is the error an event injects; a crash unwraps to
// ErrInjectedCrash.
type schedFault struct {
	ev    int
	crash bool
}

func (f *schedFault) Error() string {
	if f.crash {
		return fmt.Sprintf("schedule event %d: %v", f.ev+1, ErrInjectedCrash)
	}
	return fmt.Sprintf("schedule event %d: injected fault", f.ev+1)
}

func (f *schedFault) Unwrap() error {
	if f.crash {
		return ErrInjectedCrash
	}
	return nil
}

// lineageSwitch is a new job to restore from a savepoint (evStop, evKill).
type lineageSwitch struct {
	ev   int
	req  *SavepointRequest // evStop: its result comes after the job ended
	path string            // evKill: the savepoint
	par  int
}

// schedRunner applies a schedule to the jobs it runs. The event cur is
// live from attempt live on: its trigger is counted (count) and it fires;
// then the next one becomes current (at once, or from the next attempt if
// it ended the attempt). The hooks run on the coordinator's and the
// subtasks' goroutines; everything is guarded by mu.
type schedRunner struct {
	s   *schedule
	ctx context.Context
	sys *txnSystem

	mu       sync.Mutex
	durables int // asynchronous pre-commits the coordinator waited for
	attempt  int // attempts started, over every job
	par      int // parallelism of the current job
	ck       *CheckpointConfig
	store    *checkpoint.Store
	spRoot   string

	cur   int
	live  int
	count int
	stage int // of a multi-step event
	// minID: only checkpoints from minID on count, so that an event does
	// not hit a checkpoint that an earlier one aborted already.
	minID int64
	req   *SavepointRequest // the current event's savepoint request
	id    int64             // evExpire: the checkpoint at arming, then the held one; evIgnored: the one
	held  chan struct{}     // evExpire: closed when the held checkpoint expired
	spErr int               // failed checkpoints seen while a failing savepoint is in flight

	obs     []int // per event: its effects seen (see wantObs)
	firedAt []int // attempt in which each event fired (0: not yet)

	ended       map[int]int   // attempt -> source subtasks whose input ended
	seen        map[int]int64 // attempt -> highest checkpoint id a Fault call saw
	endID       map[int]int64 // attempt -> seen when the last source ended: later ids are final checkpoints
	completedIn map[int]int   // attempt -> checkpoints completed
	lastDone    int64
	completed   int // checkpoints completed, over every job
	failed      int // checkpoints failed, over every job
	abandon     bool
	savepoints  []int64        // ids of the intermediate savepoints that completed
	sinkCommits map[int64]bool // ids sinks were told to commit
	sw          *lineageSwitch
	restarts    int
	problems    []string
}

func (r *schedRunner) problem(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf("attempt %d: ", r.attempt)+fmt.Sprintf(format, args...))
}

// current returns the live event, or nil.
func (r *schedRunner) current() *schedEvent {
	if r.cur >= len(r.s.events) || r.attempt < r.live {
		return nil
	}
	return &r.s.events[r.cur]
}

// advance makes the next event current; it is live at once, or from the
// next attempt when this one ends.
func (r *schedRunner) advance(nextAttempt bool) {
	r.cur++
	r.count, r.stage, r.req, r.id, r.held, r.spErr = 0, 0, nil, 0, nil, 0
	r.live = r.attempt
	if nextAttempt {
		r.live = r.attempt + 1
	}
}

func (r *schedRunner) fire(ev int) { r.firedAt[ev] = r.attempt }

// poll collects the result of the current event's savepoint, if it came.
func (r *schedRunner) poll() {
	if r.req == nil || r.cur >= len(r.s.events) {
		return
	}
	e := r.s.events[r.cur]
	if e.kind == evStopFail || e.kind == evStop {
		return // seen when the attempt ended
	}
	var res SavepointResult
	select {
	case res = <-r.req.Done:
	default:
		return
	}
	r.req = nil
	switch e.kind {
	case evSavepoint:
		if res.Err != nil {
			r.problem("event %d: the savepoint failed: %v", r.cur+1, res.Err)
		} else if res.Info.Kind != checkpoint.KindSavepoint {
			r.problem("event %d: the savepoint's kind is %q", r.cur+1, res.Info.Kind)
		} else {
			r.obs[r.cur]++
			r.savepoints = append(r.savepoints, res.Info.ID)
		}
		r.advance(false)
	case evSavepointFail:
		if res.Err == nil {
			r.problem("event %d: the savepoint into the job directory succeeded: %+v", r.cur+1, res.Info)
		} else if r.spErr != 1 {
			r.problem("event %d: %d failed checkpoints reported for the failed savepoint, want 1", r.cur+1, r.spErr)
		} else {
			r.obs[r.cur]++
		}
		r.advance(false)
	case evKill:
		if res.Err != nil {
			r.problem("event %d: the savepoint failed: %v", r.cur+1, res.Err)
			r.advance(false)
			return
		}
		r.obs[r.cur]++
		r.savepoints = append(r.savepoints, res.Info.ID)
		r.sw = &lineageSwitch{ev: r.cur, path: res.Info.Path, par: e.par}
		r.stage = 2 // crash at the next checkpoint
	}
}

// sendSavepoint sends the current event's savepoint request.
func (r *schedRunner) sendSavepoint(e schedEvent) {
	dir := r.spRoot
	if e.kind == evSavepointFail || e.kind == evStopFail {
		dir = r.store.JobDir() + "/savepoints" // refused: the engine deletes what is in there
	}
	req := &SavepointRequest{Dir: dir, Stop: e.kind == evStop || e.kind == evStopFail, Drain: e.drain,
		Done: make(chan SavepointResult, 1)}
	select {
	case r.ck.Requests <- req:
	default:
		r.problem("event %d: the savepoint request channel is full", r.cur+1)
		return
	}
	r.req = req
	r.stage = 1
	r.fire(r.cur)
	if e.kind == evStop {
		r.sw = &lineageSwitch{ev: r.cur, req: req, par: e.par}
		r.advance(true)
	}
}

// fault is CheckpointConfig.Fault.
func (r *schedRunner) fault(step FaultStep, id int64) error {
	r.mu.Lock()
	wait, err := r.faultLocked(step, id)
	r.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-r.ctx.Done():
		}
	}
	return err
}

func (r *schedRunner) faultLocked(step FaultStep, id int64) (chan struct{}, error) {
	r.poll()
	r.seen[r.attempt] = max(r.seen[r.attempt], id)
	e := r.current()
	if e == nil {
		return nil, nil
	}
	ev := r.cur
	switch e.kind {
	case evAbort, evCrash, evIgnored:
		if step != e.step || id < r.minID || r.stage != 0 {
			return nil, nil
		}
		if r.count++; r.count < e.n {
			return nil, nil
		}
		r.fire(ev)
		switch e.kind {
		case evCrash:
			r.advance(true)
			return nil, &schedFault{ev: ev, crash: true}
		case evIgnored:
			r.stage, r.id = 1, id // seen when it completes
		default:
			r.minID = id + 1
			r.advance(false)
		}
		return nil, &schedFault{ev: ev}
	case evEndAbort, evEndCrash:
		if step != e.step || r.ended[r.attempt] < r.par || id <= r.endID[r.attempt] {
			return nil, nil
		}
		r.fire(ev)
		if e.kind == evEndCrash {
			r.advance(true)
			return nil, &schedFault{ev: ev, crash: true}
		}
		r.advance(false)
		return nil, &schedFault{ev: ev}
	case evExpire:
		switch {
		case r.stage == 0 && step == StepPersisted && id >= r.minID:
			if r.count++; r.count == e.n {
				// Called on the coordinator's goroutine, which reads the
				// timeout when it triggers the next checkpoint.
				r.ck.Timeout = time.Millisecond
				r.stage, r.id = 1, id
				r.fire(ev)
			}
		case r.stage == 1 && step == StepSnapshot && id > r.id:
			r.stage, r.id, r.held = 2, id, make(chan struct{})
			return r.held, nil
		}
	case evSavepoint, evSavepointFail, evStopFail, evStop, evKill:
		switch {
		case r.stage == 0 && step == StepPersisted && id >= r.minID:
			if r.count++; r.count == e.n {
				r.sendSavepoint(*e)
			}
		case r.stage == 2 && step == StepAcked: // evKill
			r.fire(ev)
			r.abandon = true
			r.advance(true)
			return nil, &schedFault{ev: ev, crash: true}
		}
	}
	return nil, nil
}

// onFailure is CheckpointConfig.OnFailure.
func (r *schedRunner) onFailure(id int64, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.poll()
	r.failed++
	var sf *schedFault
	if errors.As(err, &sf) {
		switch r.s.events[sf.ev].kind {
		case evAbort, evOpAbort, evEndAbort:
			r.obs[sf.ev]++
		default:
			r.problem("checkpoint %d failed with the fault of event %d (%s): %v", id, sf.ev+1, r.s.events[sf.ev], err)
		}
		return
	}
	if e := r.current(); e != nil {
		switch {
		case e.kind == evExpire && (r.stage == 2 && id == r.id || r.stage == 1 && id > r.id):
			// Held at its first snapshot (2), or expired before any (1).
			if !strings.Contains(err.Error(), "expired") {
				r.problem("event %d: held checkpoint %d failed, but not by its timeout: %v", r.cur+1, id, err)
			} else {
				r.obs[r.cur]++
			}
			r.ck.Timeout = 0 // coordinator's goroutine, as above
			if r.held != nil {
				close(r.held)
			}
			r.minID = id + 1
			r.advance(false)
			return
		case (e.kind == evSavepointFail || e.kind == evStopFail) && r.stage == 1:
			r.spErr++
			return
		}
	}
	r.problem("checkpoint %d failed, not caused by the schedule: %v", id, err)
}

// onComplete is CheckpointConfig.OnComplete.
func (r *schedRunner) onComplete(info checkpoint.Info) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.poll()
	if info.ID <= r.lastDone {
		r.problem("checkpoint %d completed after checkpoint %d: ids must grow", info.ID, r.lastDone)
	}
	r.lastDone = info.ID
	r.completed++
	r.completedIn[r.attempt]++
	if e := r.current(); e != nil && e.kind == evIgnored && r.stage == 1 && info.ID == r.id {
		r.obs[r.cur]++
		r.advance(false)
	}
}

// opFault is called before subtask sub's aggregation snapshot or sink
// pre-commit of checkpoint id.
func (r *schedRunner) opFault(sink bool, sub int, id int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.poll()
	e := r.current()
	if e == nil || (e.kind != evOpAbort && e.kind != evOpCrash) || e.sink != sink || e.async || e.sub != sub || id < r.minID {
		return nil
	}
	if r.count++; r.count < e.n {
		return nil
	}
	ev := r.cur
	r.fire(ev)
	if e.kind == evOpCrash {
		r.advance(true)
		return &schedFault{ev: ev, crash: true}
	}
	r.minID = id + 1
	r.advance(false)
	return &schedFault{ev: ev}
}

// durableFault is called when the coordinator waits for the asynchronous
// pre-commit of sink subtask sub for checkpoint id (asyncSchedSink).
func (r *schedRunner) durableFault(sub int, id int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.durables++
	r.poll()
	e := r.current()
	if e == nil || !e.async || e.sub != sub || id < r.minID {
		return nil
	}
	if r.count++; r.count < e.n {
		return nil
	}
	ev := r.cur
	r.fire(ev)
	r.advance(true)
	return &schedFault{ev: ev, crash: true}
}

// opRestore is called before an aggregation subtask restores.
func (r *schedRunner) opRestore() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.current(); e != nil && e.kind == evRestoreFail {
		ev := r.cur
		r.fire(ev)
		r.advance(true)
		return &schedFault{ev: ev}
	}
	return nil
}

// opBatch is called before an aggregation subtask processes a batch.
func (r *schedRunner) opBatch() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.current(); e != nil && e.kind == evEarlyFail {
		ev := r.cur
		if n := r.completedIn[r.attempt]; n > 0 {
			r.problem("event %d: the first batch came after %d checkpoints of the attempt", ev+1, n)
		}
		r.fire(ev)
		r.advance(true)
		return &schedFault{ev: ev}
	}
	return nil
}

// sourceEnded is called when a source subtask of attempt a read all its
// input. The last one injected the last barrier of the input already (its
// snapshot's Fault call came first): every later checkpoint is a final one.
func (r *schedRunner) sourceEnded(a int) {
	r.mu.Lock()
	r.ended[a]++
	if r.ended[a] == r.par {
		r.endID[a] = r.seen[a]
	}
	r.mu.Unlock()
}

// onRestart is RunAttempts' onRestart: every restart must be the doing of
// an event.
func (r *schedRunner) onRestart(a Attempt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.restarts++
	r.checkStarted()
	r.attempt++
	var sf *schedFault
	if errors.As(a.Err, &sf) {
		switch r.s.events[sf.ev].kind {
		case evCrash, evOpCrash, evEndCrash, evRestoreFail, evEarlyFail:
			r.obs[sf.ev]++
		default:
			r.problem("restart after the fault of event %d (%s): %v", sf.ev+1, r.s.events[sf.ev], a.Err)
		}
		return
	}
	if r.cur < len(r.s.events) && r.s.events[r.cur].kind == evStopFail && r.stage == 1 && r.req != nil {
		var res SavepointResult
		got := false
		select {
		case res = <-r.req.Done:
			got = true
		default:
		}
		switch {
		case !got:
			r.problem("event %d: restarted with no result for the stop-with-savepoint: %v", r.cur+1, a.Err)
		case res.Err == nil:
			r.problem("event %d: the stop-with-savepoint into the job directory did not fail: %v", r.cur+1, a.Err)
		case r.spErr != 1:
			r.problem("event %d: %d failed checkpoints reported for the failed stop-with-savepoint, want 1", r.cur+1, r.spErr)
		case !strings.Contains(a.Err.Error(), "stop with savepoint failed"):
			r.problem("event %d: the attempt failed with %v, want the failed stop-with-savepoint", r.cur+1, a.Err)
		default:
			r.obs[r.cur]++
		}
		r.advance(false) // live in the attempt that starts now
		return
	}
	r.problem("restart not caused by the schedule: %v", a.Err)
}

// checkStarted records a restore fault that was live in the attempt that
// just ended and did not fire in it.
func (r *schedRunner) checkStarted() {
	if r.cur < len(r.s.events) && r.attempt >= r.live {
		switch k := r.s.events[r.cur].kind; k {
		case evRestoreFail, evEarlyFail:
			r.problem("event %d (%s) did not fire in the attempt after its restart", r.cur+1, r.s.events[r.cur])
		}
	}
}

func (r *schedRunner) restarter(time.Time, error) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.abandon {
		r.abandon = false
		return 0, false // evKill: the job is abandoned
	}
	return 0, r.restarts < 4*len(r.s.events)+4
}

// schedSource reads rows n = 0..schedRows-1 (k = n % schedKeys, v = n) in
// schedSplits splits: split j holds the rows n with n % schedSplits == j,
// in a scrambled order (its i-th row is j + schedSplits*(i*schedStride mod
// 5000)), so that the 2 or 3 rows of a key come at unrelated epochs, from
// the second epoch on, and most keys are not touched in an epoch. It
// computes the same table as genSource, so expectedCounts is the oracle.
// A fresh subtask i of p
// reads the splits j with j % p == i; a restored one the splits of the
// states it is given, at any parallelism, so each split has one reader.
// Each batch holds the next schedBatch rows of every split it reads.
type schedSource struct {
	r       *schedRunner
	attempt int
	sc      *SourceContext
	splits  []schedSplit
	fresh   bool
}

type schedSplit struct {
	J    int64 `json:"j"`
	Next int64 `json:"next"` // rows of the split emitted
}

func (s *schedSource) SnapshotState() ([]byte, error) {
	if s.splits == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(s.splits)
}

func (s *schedSource) RestoreState(b []byte) error { return s.RestoreStates([][]byte{b}) }

func (s *schedSource) RestoreStates(states [][]byte) error {
	s.fresh, s.splits = false, nil
	for _, b := range states {
		var sp []schedSplit
		if err := json.Unmarshal(b, &sp); err != nil {
			return err
		}
		s.splits = append(s.splits, sp...)
	}
	return nil
}

func (s *schedSource) Run(ctx context.Context, emit func(arrow.Record) error) error {
	if s.fresh {
		for j := int64(s.sc.Subtask); j < schedSplits; j += int64(s.sc.Parallelism) {
			s.splits = append(s.splits, schedSplit{J: j})
		}
	}
	if s.r.s.plan.windowed() {
		return s.runTimed(ctx, emit)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		kb, vb := array.NewInt64Builder(s.sc.Mem), array.NewInt64Builder(s.sc.Mem)
		for i := range s.splits {
			sp := &s.splits[i]
			for n := 0; n < schedBatch && sp.Next < schedRows/schedSplits; n++ {
				row := sp.J + schedSplits*(sp.Next*schedStride%(schedRows/schedSplits))
				kb.Append(row % schedKeys)
				vb.Append(row)
				sp.Next++
			}
		}
		if kb.Len() == 0 {
			kb.Release()
			vb.Release()
			s.r.sourceEnded(s.attempt)
			return nil
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

func (s *schedSource) Close() error { return nil }

// schedSink is rtxnSink (txnSink, rescalable) with the schedule's sink
// faults, recording what it is told to commit.
type schedSink struct {
	rtxnSink
	r *schedRunner
}

func (s *schedSink) PreCommit(id int64) ([]byte, error) {
	if err := s.r.opFault(true, s.subtask, id); err != nil {
		return nil, err
	}
	return s.rtxnSink.PreCommit(id)
}

// Commit records that the sink was told to commit id.
func (s *schedSink) Commit(id int64) error {
	s.r.mu.Lock()
	s.r.sinkCommits[id] = true
	s.r.mu.Unlock()
	return s.txnSink.Commit(id)
}

// asyncSchedSink is schedSink pre-committing asynchronously: a
// pre-commit's transaction is pending but not durable until the done the
// coordinator waits for, which (as a file sink's) covers every earlier
// pre-commit of the subtask too; the schedule's sink crash events fail
// that done instead of the pre-commit.
type asyncSchedSink struct{ *schedSink }

func (s *asyncSchedSink) PreCommitAsync(id int64) ([]byte, func() error, error) {
	state, err := s.PreCommit(id)
	if err != nil {
		return nil, nil, err
	}
	sys, sub := s.sys, s.subtask
	sys.mu.Lock()
	if sys.undurable == nil {
		sys.undurable = map[string]bool{}
	}
	sys.undurable[s.key(id)] = true
	sys.mu.Unlock()
	return state, func() error {
		if err := s.r.durableFault(sub, id); err != nil {
			return err
		}
		sys.mu.Lock()
		defer sys.mu.Unlock()
		for k := range sys.undurable {
			var ksub int
			var e int64
			fmt.Sscanf(k, "%d/%d", &ksub, &e)
			if ksub == sub && e <= id {
				delete(sys.undurable, k)
			}
		}
		return nil
	}, nil
}

// schedOp wraps an aggregation subtask with the schedule's operator faults.
type schedOp struct {
	Operator
	r   *schedRunner
	sub int
}

// HoldInput passes the wrapped operator's holds on (InputHolder): the
// join plan's tiered Rows with a 2 KiB budget hold the input while most
// of its checkpoints are pending.
func (o *schedOp) HoldInput() int64 {
	if h, ok := o.Operator.(InputHolder); ok {
		return h.HoldInput()
	}
	return 0
}

// schedHolds and schedUnalignedHolds count the input holds of the
// schedules' jobs (Metrics.InputHolds; over every schedule of the
// process), the second those of schedules with unaligned checkpoints.
var schedHolds, schedUnalignedHolds atomic.Int64

func (o *schedOp) ProcessBatch(input int, b Batch, out Collector) error {
	if err := o.r.opBatch(); err != nil {
		b.Rec.Release()
		return err
	}
	return o.Operator.ProcessBatch(input, b, out)
}

func (o *schedOp) Snapshot(id int64, w checkpoint.StateWriter) error {
	if err := o.r.opFault(false, o.sub, id); err != nil {
		return err
	}
	return o.Operator.Snapshot(id, w)
}

func (o *schedOp) Restore(rd checkpoint.StateReader) error {
	if err := o.r.opRestore(); err != nil {
		return err
	}
	return o.Operator.Restore(rd)
}

func schedJobID(n int) string { return fmt.Sprintf("%032x", 0xfa17+n) }

// schedTiered: half of the schedules of the join plan and of the chained
// and two-level aggregations keep their state in the Pebble tier with a
// hot budget of a few rows (the join's KV and the aggregations' tables),
// so that rows and groups leave memory and come back all the time
// (write-backs, clean drops read back from the committed state,
// tombstones of retracted rows and of groups whose count fell to zero)
// across every fault the schedule injects.
func schedTiered(s *schedule) bool {
	switch s.plan {
	case planJoin, planChained, planTwoLevel:
		return s.seed%4 >= 2
	}
	return false
}

// schedTierHotBytes is a tiered schedule's hot budget: 2 KiB (a few rows,
// so that the changes of an epoch overflow it three times over and are
// written back) or, for seeds 6 and 7 mod 8, 64 KiB (an epoch's changes
// stay in memory until committed and clean rows and groups are dropped
// without a write).
func schedTierHotBytes(s *schedule) int64 {
	if s.seed%8 >= 6 {
		return 64 << 10
	}
	return 2 << 10
}

// runSchedule runs s and returns what went wrong (nothing: nil) and a
// summary of what happened.
func runSchedule(s *schedule) (problems []string, summary string) {
	fs := vfs.NewMem()
	// Even seeds: Go's allocator under poisoning (a read of released
	// memory reads poison); odd seeds: the recycling allocator jobs run
	// with, kept small so that buffers are handed out again and again (a
	// buffer with two owners corrupts a batch the oracle then catches).
	mem := memtest.NewChecked()
	var pool *bufpool.Recycler
	if s.seed%2 == 1 {
		pool = bufpool.New(4 << 20)
		mem = memory.NewCheckedAllocator(pool)
	}
	ctx, cancel := context.WithTimeout(context.Background(), schedDeadline())
	defer cancel()
	r := &schedRunner{s: s, ctx: ctx, sys: &txnSystem{pending: map[string][]string{}}, spRoot: "/savepoints",
		obs: make([]int, len(s.events)), firedAt: make([]int, len(s.events)),
		ended: map[int]int{}, seen: map[int]int64{}, endID: map[int]int64{}, completedIn: map[int]int{}, sinkCommits: map[int64]bool{}}
	opts := func(n int) checkpoint.Options {
		return checkpoint.Options{Dir: "/checkpoints", JobID: schedJobID(n), NumRetained: s.retain, FS: fs}
	}
	store, err := checkpoint.Open(opts(0))
	if err != nil {
		return []string{err.Error()}, ""
	}
	var stateDir, backend string
	if schedTiered(s) {
		backend = "rocksdb"
		if stateDir, err = os.MkdirTemp("", "faultsched-state-"); err != nil {
			return []string{err.Error()}, ""
		}
		defer os.RemoveAll(stateDir)
	}
	jobs := 0
	defer func() {
		summary = fmt.Sprintf("%d jobs, %d restarts, %d checkpoints completed, %d failed, %d changes committed",
			jobs, r.restarts, r.completed, r.failed, len(r.sys.committed))
	}()
	restore, firstID := false, int64(1)
	par := s.par
	for job := 0; ; job++ {
		ck := &CheckpointConfig{Backend: store, TriggerEveryBatch: true, TolerableFailed: 1 << 20, Unaligned: s.unaligned,
			Restore: restore, FirstID: firstID, Requests: make(chan *SavepointRequest, 1),
			Fault: r.fault, OnFailure: r.onFailure, OnComplete: r.onComplete}
		r.mu.Lock()
		r.attempt++
		r.par, r.ck, r.store, r.sw = par, ck, store, nil
		r.mu.Unlock()
		plan := s.phase.split(s.plan.build(par), par)
		metrics := &Metrics{}
		cfg := JobConfig{Mem: mem, BatchSize: schedBatch, Checkpoint: ck, MaxParallelism: s.maxPar, ChannelCapacity: s.chanCap,
			Metrics:      metrics,
			StateBackend: backend, StateDir: stateDir, StateTierHotBytes: schedTierHotBytes(s),
			NewSource: func(_ *catalog.Table, sc *SourceContext) (Source, error) {
				r.mu.Lock()
				defer r.mu.Unlock()
				return &schedSource{r: r, attempt: r.attempt, sc: sc, fresh: true}, nil
			},
			NewSink: func(tb *catalog.Table, sc *SinkContext) (Sink, error) {
				sub := sc.Subtask
				if tb.Name == "b" { // the second sink (planFanOut, planSharedAgg): its own transactions
					sub += 100
				}
				sk := &schedSink{rtxnSink: rtxnSink{txnSink{sys: r.sys, subtask: sub}}, r: r}
				if s.asyncSink {
					return &asyncSchedSink{sk}, nil
				}
				return sk, nil
			},
			WrapOperator: func(_ string, sub int, op Operator) Operator {
				switch op.(type) {
				case *groupAgg, *windowAgg, *windowRank:
					if s.plan != planJoin {
						return &schedOp{Operator: op, r: r, sub: sub}
					}
				case *streamJoin: // the join plan's faults hit the join
					return &schedOp{Operator: op, r: r, sub: sub}
				}
				return op
			}}
		jobs++
		err := RunAttempts(ctx, plan, cfg, r.restarter, r.onRestart)
		schedHolds.Add(metrics.InputHolds.Load())
		if s.unaligned {
			schedUnalignedHolds.Add(metrics.InputHolds.Load())
		}
		cerr := store.Close()
		r.mu.Lock()
		r.poll() // a savepoint result that came last
		r.checkStarted()
		sw := r.sw
		if cerr != nil {
			r.problem("closing the store: %v", cerr)
		}
		if n := mem.CurrentAlloc(); n != 0 {
			r.problem("job %d: %d bytes still allocated after it ended", job+1, n)
		}
		if sw != nil && sw.req != nil { // evStop: the job ended after its savepoint
			select {
			case res := <-sw.req.Done:
				if res.Err != nil || err != nil {
					r.problem("event %d: stop-with-savepoint: %v; the job: %v", sw.ev+1, res.Err, err)
					sw = nil
				} else {
					r.obs[sw.ev]++
					sw.path = res.Info.Path
				}
			default:
				r.problem("event %d: the job ended (%v) without a result for its stop-with-savepoint", sw.ev+1, err)
				sw = nil
			}
		} else if sw != nil { // evKill: RunAttempts gives up after its crash
			var sf *schedFault
			if errors.As(err, &sf) && sf.ev == sw.ev && errors.Is(err, ErrInjectedCrash) {
				r.obs[sw.ev]++
			} else {
				r.problem("event %d: the abandoned job ended with %v, want its crash", sw.ev+1, err)
				sw = nil
			}
		} else if err != nil {
			r.problem("job %d failed: %v", job+1, err)
		}
		if ctx.Err() != nil && r.cur < len(s.events) {
			r.problem("the schedule hung (%v) at event %d (%s), stage %d, live from attempt %d",
				schedDeadline(), r.cur+1, s.events[r.cur], r.stage, r.live)
		}
		problems := len(r.problems)
		r.mu.Unlock()
		if sw == nil || problems > 0 {
			break
		}
		var info checkpoint.Info
		store, info, err = checkpoint.Restore(opts(job+1), sw.path)
		if err != nil {
			r.problem("restoring %s: %v", sw.path, err)
			break
		}
		if info.Kind != checkpoint.KindSavepoint {
			r.problem("restored %s: kind %q", sw.path, info.Kind)
		}
		restore, firstID, par = true, info.ID+1, sw.par
	}
	var leaks leakReport
	mem.AssertSize(&leaks, 0)
	r.problems = append(r.problems, leaks...)
	if pool != nil && pool.Stats().Reused == 0 {
		r.problem("the recycling allocator handed out no buffer twice: %+v", pool.Stats())
	}
	for _, id := range r.savepoints {
		if r.sinkCommits[id] {
			r.problem("sinks were told to commit intermediate savepoint %d: it must commit no side effects", id)
		}
	}
	for i, e := range s.events {
		switch {
		case r.firedAt[i] == 0:
			r.problem("event %d (%s) did not fire", i+1, e)
		case r.obs[i] != e.wantObs():
			r.problem("event %d (%s) fired in attempt %d and was seen %d times, want %d", i+1, e, r.firedAt[i], r.obs[i], e.wantObs())
		}
	}
	if len(r.problems) > 0 {
		return r.problems, "" // the output may be partial: not compared
	}
	r.problems = append(r.problems, r.sys.violations...)
	if s.asyncSink && r.durables == 0 {
		r.problems = append(r.problems, "asynchronous sink: the coordinator never waited for a pre-commit")
	}
	got := foldChanges(r.sys.committed)
	want := s.plan.want()
	if d := diffSorted(got, want); d != "" {
		r.problems = append(r.problems, "committed output differs from the uninterrupted result: "+d)
	}
	if len(r.sys.pending) != 0 {
		var ks []string
		for k := range r.sys.pending {
			ks = append(ks, k)
		}
		r.problems = append(r.problems, fmt.Sprintf("pending transactions left: %v", ks))
	}
	return r.problems, ""
}

// leakReport collects what CheckedAllocator.AssertSize reports, so that
// leaks are reported with the schedule.
type leakReport []string

func (l *leakReport) Helper() {}
func (l *leakReport) Errorf(format string, args ...any) {
	*l = append(*l, "leak: "+fmt.Sprintf(format, args...))
}

// diffSorted describes how two sorted row lists differ: counts and the
// first rows missing and unexpected.
func diffSorted(got, want []string) string {
	var missing, extra []string
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || i < len(got) && got[i] < want[j]:
			extra = append(extra, got[i])
			i++
		case i == len(got) || want[j] < got[i]:
			missing = append(missing, want[j])
			j++
		default:
			i++
			j++
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		return ""
	}
	first := func(xs []string) []string { return xs[:min(len(xs), 5)] }
	return fmt.Sprintf("%d rows, want %d; %d missing (e.g. %v), %d unexpected (e.g. %v)",
		len(got), len(want), len(missing), first(missing), len(extra), first(extra))
}

// TestFaultSchedule runs generated fault schedules; see the top of the file.
func TestFaultSchedule(t *testing.T) {
	var seeds []uint64
	switch {
	case os.Getenv("STREAMSQL_SEED") != "":
		seed, err := strconv.ParseUint(os.Getenv("STREAMSQL_SEED"), 10, 64)
		if err != nil {
			t.Fatalf("STREAMSQL_SEED: %v", err)
		}
		seeds = []uint64{seed}
	case os.Getenv("STREAMSQL_SOAK") != "":
		n, err := strconv.Atoi(os.Getenv("STREAMSQL_SOAK"))
		if err != nil || n < 1 {
			t.Fatalf("STREAMSQL_SOAK=%q: want a number of schedules", os.Getenv("STREAMSQL_SOAK"))
		}
		for range n {
			seeds = append(seeds, rand.Uint64())
		}
	default:
		n := schedulesPerRun
		if raceDetector() {
			n = schedulesPerRaceRun
		}
		for i := range n {
			seeds = append(seeds, uint64(i+1))
		}
	}
	// the tiered join schedules must have paged: rows dropped clean and
	// read back from the committed state (checked once every subtest ran;
	// dirty rows stay in memory, so write-backs are rare)
	// (and the aggregations' tiered tables the same, over every tiered
	// schedule)
	before, tbefore := state.KVTierTotals(), state.TableTierTotals()
	holdsBefore, uholdsBefore := schedHolds.Load(), schedUnalignedHolds.Load()
	var tiered, tieredTables atomic.Int64
	t.Cleanup(func() {
		after := state.KVTierTotals()
		drops, com, wb := after.CleanDrops-before.CleanDrops, after.ComReads-before.ComReads, after.WriteBacks-before.WriteBacks
		holds, uholds := schedHolds.Load()-holdsBefore, schedUnalignedHolds.Load()-uholdsBefore
		if n := tiered.Load(); n >= 3 && (drops == 0 || com == 0) {
			t.Errorf("%d tiered join schedules: %d clean drops, %d reads from the committed state; want some of each", n, drops, com)
		}
		t.Logf("tiered join schedules: %d (clean drops %d, committed reads %d, write-backs %d, input holds %d, %d of them unaligned, rows mapped %d)", tiered.Load(), drops, com, wb, holds, uholds, after.Mapped-before.Mapped)
		tafter := state.TableTierTotals()
		tdrops, tcom, twb := tafter.CleanDrops-tbefore.CleanDrops, tafter.ComReads-tbefore.ComReads, tafter.WriteBacks-tbefore.WriteBacks
		if n := tieredTables.Load(); n >= 3 && (tdrops == 0 || tcom == 0) {
			t.Errorf("%d tiered schedules: the aggregations' tables made %d clean drops, %d reads from the committed state; want some of each", n, tdrops, tcom)
		}
		t.Logf("tiered schedules: %d; the aggregations' tables: clean drops %d, committed reads %d, write-backs %d", tieredTables.Load(), tdrops, tcom, twb)
	})
	for _, seed := range seeds {
		s := genSchedule(seed)
		if schedTiered(s) {
			tieredTables.Add(1)
			if s.plan == planJoin {
				tiered.Add(1)
			}
		}
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			problems, summary := runSchedule(s)
			if len(problems) > 0 {
				t.Fatalf("%s  (%s)\n  %s\nreproduce: STREAMSQL_SEED=%d go test -run TestFaultSchedule ./exec/",
					s, summary, strings.Join(problems, "\n  "), seed)
			}
			t.Logf("%s  (%s)", s, summary)
		})
	}
}

// raceDetector reports whether the test binary was built with -race.
func raceDetector() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// TestFaultScheduleGenerator checks the generator: deterministic per seed,
// within its budget, and covering every kind of event over the seeds that
// `go test` runs.
func TestFaultScheduleGenerator(t *testing.T) {
	kinds := map[evKind]int{}
	async, asyncFails := 0, 0
	for i := range schedulesPerRun {
		seed := uint64(i + 1)
		a, b := genSchedule(seed), genSchedule(seed)
		if a.String() != b.String() {
			t.Fatalf("seed %d: two different schedules:\n%s%s", seed, a, b)
		}
		if len(a.events) < 4 {
			t.Fatalf("seed %d: only %d events:\n%s", seed, len(a.events), a)
		}
		for _, e := range a.events {
			kinds[e.kind]++
			if e.async {
				asyncFails++
			}
		}
		if a.asyncSink {
			async++
		}
	}
	if async == 0 || asyncFails == 0 {
		t.Errorf("the first %d seeds: %d schedules with an asynchronous sink, %d of its durability failures; want some of each", schedulesPerRun, async, asyncFails)
	}
	for k := evAbort; k <= evEndCrash; k++ {
		if kinds[k] == 0 {
			t.Errorf("no schedule of the first %d seeds has an event %d (e.g. %s)", schedulesPerRun, k, schedEvent{kind: k})
		}
	}
}

var (
	_ RescalableSource   = (*schedSource)(nil)
	_ RescalableSink     = (*schedSink)(nil)
	_ AsyncPreCommitSink = (*asyncSchedSink)(nil)
)

// TestSchedPhaseSplits: the schedules' two-phase plans hold a local phase
// (a schedule that meant to run one would otherwise prove nothing about
// it), AUTO splits above parallelism 1 only, ONE_PHASE never.
func TestSchedPhaseSplits(t *testing.T) {
	locals := func(ph *planner.Physical) int {
		n := 0
		for _, task := range ph.Tasks {
			for _, op := range task.Ops {
				if _, ok := op.(*planner.LocalAggOp); ok {
					n++
				}
			}
		}
		return n
	}
	for _, p := range []schedPlan{planGlobalSink, planChained, planTwoLevel, planSharedAgg} {
		if n := locals(phaseTwo.split(p.build(1), 1)); n != 1 {
			t.Errorf("plan %d, TWO_PHASE at p1: %d local phases, want 1", p, n)
		}
		if n := locals(phaseAuto.split(p.build(2), 2)); n != 1 {
			t.Errorf("plan %d, AUTO at p2: %d local phases, want 1", p, n)
		}
		if n := locals(phaseAuto.split(p.build(1), 1)) + locals(phaseOne.split(p.build(3), 3)); n != 0 {
			t.Errorf("plan %d: %d local phases at AUTO p1 or ONE_PHASE", p, n)
		}
	}
}
