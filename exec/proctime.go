package exec

import (
	"time"
)

// Processing-time timers. An operator that wants to be called when
// processing time reaches t calls OpContext.WakeAt(t) and implements
// ProcessingTimeOperator; the runtime calls OnProcessingTime on the
// subtask's goroutine, between batches, once the job's Clock says t has
// passed (a task with inputs waits for it in its input loop; operators
// chained to a source are called between the source's batches and
// heartbeats). Wake-ups are not state: an operator keeps its timers in
// state (state.Timers) and asks again for the earliest after a restore.

// ProcessingTimeOperator is an operator with processing-time timers.
type ProcessingTimeOperator interface {
	Operator
	// OnProcessingTime is called once the clock passed a wake-up the
	// operator asked for (now is the clock's time). The wake-up is
	// cleared: ask again with OpContext.WakeAt for the next one.
	OnProcessingTime(now time.Time, out Collector) error
}

// TimerClock is a Clock that can also wake the runtime. The wall clock
// does; a test clock fires its timers when the test advances it. With a
// Clock that is not a TimerClock, wake-ups wait on wall-clock timers for
// the difference the Clock tells.
type TimerClock interface {
	Clock
	// NewTimer returns a channel that receives once the clock reaches at
	// (at once when it has), and a function that stops the timer. The
	// deadline is absolute, so a clock that moves between a reading and
	// the arming cannot push it back.
	NewTimer(at time.Time) (<-chan time.Time, func() bool)
}

func (wallClock) NewTimer(at time.Time) (<-chan time.Time, func() bool) {
	t := time.NewTimer(time.Until(at))
	return t.C, t.Stop
}

// WakeAt asks the runtime to call the operator's OnProcessingTime once the
// clock reaches t; of several requests before the call the earliest wins.
// The operator must implement ProcessingTimeOperator.
func (c *OpContext) WakeAt(t time.Time) {
	if c.wakeups != nil {
		c.wakeups.set(c.opIndex, t.UnixNano())
	}
}

// wakeups are the processing-time wake-ups of one subtask's operators.
type wakeups struct {
	clock Clock
	at    []int64 // per operator: unix nanos of its wake-up, 0: none
	next  int64   // the earliest, 0: none
	// the armed timer: for next, when armed is next
	c     <-chan time.Time
	stop  func() bool
	armed int64
}

func (w *wakeups) set(i int, t int64) {
	if t == 0 {
		t = 1
	}
	if w.at[i] == 0 || t < w.at[i] {
		w.at[i] = t
	}
	if w.next == 0 || t < w.next {
		w.next = t
	}
}

// timer returns the channel that receives when the earliest wake-up is
// due (nil: none asked for), arming a timer for it when it changed.
func (w *wakeups) timer() <-chan time.Time {
	if w == nil {
		return nil
	}
	if w.next == w.armed {
		return w.c
	}
	w.disarm()
	if w.next == 0 {
		return nil
	}
	if tc, ok := w.clock.(TimerClock); ok {
		w.c, w.stop = tc.NewTimer(time.Unix(0, w.next))
	} else {
		t := time.NewTimer(time.Duration(w.next - w.clock.Now().UnixNano()))
		w.c, w.stop = t.C, t.Stop
	}
	w.armed = w.next
	return w.c
}

func (w *wakeups) disarm() {
	if w == nil {
		return
	}
	if w.stop != nil {
		w.stop()
	}
	w.c, w.stop, w.armed = nil, nil, 0
}

// due reports whether the earliest wake-up has passed (cheap when none).
func (w *wakeups) due() bool {
	return w != nil && w.next != 0 && w.clock.Now().UnixNano() >= w.next
}

// fireProcessingTime calls OnProcessingTime of every operator whose
// wake-up passed, in chain order.
func (st *subtask) fireProcessingTime() error {
	w := st.wakeups
	if w == nil || w.next == 0 {
		return nil
	}
	now := w.clock.Now()
	ns := now.UnixNano()
	w.next = 0
	for i, at := range w.at {
		if at == 0 {
			continue
		}
		if at > ns {
			if w.next == 0 || at < w.next {
				w.next = at
			}
			continue
		}
		w.at[i] = 0
		pt, ok := st.ops[i].(ProcessingTimeOperator)
		if !ok {
			continue // wrapped by a test's WrapOperator that hides it
		}
		if err := pt.OnProcessingTime(now, st.next[i]); err != nil {
			return err
		}
		// it may have asked again (set keeps next up to date)
	}
	return nil
}
