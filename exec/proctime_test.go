package exec

import (
	"context"
	"errors"
	"github.com/streamsql/streamsql/internal/memtest"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/streamsql/streamsql/catalog"
)

// manualClock is a TimerClock that moves only when the test advances it.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []manualTimer
}

type manualTimer struct {
	at time.Time
	c  chan time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) NewTimer(at time.Time) (<-chan time.Time, func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := manualTimer{at: at, c: make(chan time.Time, 1)}
	if !at.After(c.now) {
		t.c <- c.now
		return t.c, func() bool { return false }
	}
	c.timers = append(c.timers, t)
	return t.c, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.timers {
			if x.c == t.c {
				c.timers = append(c.timers[:i], c.timers[i+1:]...)
				return true
			}
		}
		return false
	}
}

// Advance moves the clock and fires the timers that are due.
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			t.c <- c.now
		} else {
			kept = append(kept, t)
		}
	}
	c.timers = kept
}

// procOp wraps an operator with a processing-time timer every 10 ms of
// the clock, reporting each call on fired.
type procOp struct {
	Operator
	ctx    *OpContext
	opened chan struct{}
	fired  chan time.Time
	left   int
}

func (o *procOp) Open(ctx *OpContext) error {
	o.ctx = ctx
	ctx.WakeAt(ctx.Clock.Now().Add(10 * time.Millisecond))
	close(o.opened)
	return o.Operator.Open(ctx)
}

func (o *procOp) OnProcessingTime(now time.Time, out Collector) error {
	o.fired <- now
	if o.left--; o.left > 0 {
		o.ctx.WakeAt(now.Add(10 * time.Millisecond))
		o.ctx.WakeAt(now.Add(30 * time.Millisecond)) // a later request does not postpone it
	}
	return nil
}

// oneBatchSource emits its rows and then waits for cancellation.
type oneBatchSource struct{ genSource }

func (s *oneBatchSource) Run(ctx context.Context, emit func(arrow.Record) error) error {
	if err := s.genSource.Run(ctx, emit); err != nil {
		return err
	}
	<-ctx.Done()
	return ctx.Err()
}

// TestProcessingTimeTimers: an operator's processing-time wake-ups fire
// when the job's clock reaches them, not before, each once, while no data
// arrives; the job then cancels cleanly.
func TestProcessingTimeTimers(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	base := time.UnixMilli(1_700_000_000_000)
	clock := &manualClock{now: base}
	fired, opened := make(chan time.Time, 8), make(chan struct{})
	cfg := JobConfig{Mem: mem, BatchSize: 10, Clock: clock,
		NewSource: func(_ *catalog.Table, sc *SourceContext) (Source, error) {
			return &oneBatchSource{genSource{sc: sc, total: 10, keys: 3}}, nil
		},
		NewSink: func(*catalog.Table, *SinkContext) (Sink, error) { return &funcSink{write: func(Batch) {}}, nil },
		WrapOperator: func(task string, _ int, op Operator) Operator {
			return &procOp{Operator: op, opened: opened, fired: fired, left: 3}
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunJob(ctx, ckAggPlan(1), cfg) }()
	wait := func(want time.Duration) {
		t.Helper()
		select {
		case now := <-fired:
			if got := now.Sub(base); got != want {
				t.Fatalf("timer fired at +%v, want +%v", got, want)
			}
		case err := <-done:
			t.Fatalf("job ended: %v", err)
		case <-time.After(20 * time.Second): // a guard against a hang, not a wait for the event
			t.Fatalf("no timer call for +%v", want)
		}
	}
	<-opened // the operator asked for +10 ms
	clock.Advance(5 * time.Millisecond)
	clock.Advance(5 * time.Millisecond)
	wait(10 * time.Millisecond) // not at +5
	clock.Advance(7 * time.Millisecond)
	clock.Advance(8 * time.Millisecond)
	wait(25 * time.Millisecond) // due at +20, seen when the clock said +25
	clock.Advance(10 * time.Millisecond)
	wait(35 * time.Millisecond)
	clock.Advance(time.Hour)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	select {
	case now := <-fired:
		t.Fatalf("a fourth call at +%v: the operator asked for three", now.Sub(base))
	default:
	}
}
