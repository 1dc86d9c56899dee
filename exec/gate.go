package exec

import (
	"context"
	"sync/atomic"
	"time"
)

// The input gate: every consumer subtask reads all its input channels from
// one Go channel (messages tagged with their channel index), so that no
// reflection is needed to wait on many inputs. Flow control is credit
// based, as Flink's network stack: a producer takes one of its channel's
// credits before sending a batch and the consumer returns it when the batch
// is processed, so each channel holds at most ChannelCapacity batches
// whether it is being read or paused (aligned). Signals (barriers, cancel
// markers, watermarks, idleness, end, shutdown) take no credit: they are
// small and never held back behind batches of other channels.

// outChan is the producer's end of one channel.
type outChan struct {
	in      chan Message  // the consumer's gate
	credits chan struct{} // one token per batch in flight on this channel
	index   int           // the channel's index at the consumer
}

func newOutChan(g *gateChans, index int) *outChan {
	return &outChan{in: g.in, credits: g.credits[index], index: index}
}

// send delivers m, blocking while the channel has no credit (backpressure)
// or until ctx is done (then m is released).
func (c *outChan) send(ctx context.Context, m Message) error {
	if m.Kind == MsgData {
		select {
		case c.credits <- struct{}{}:
		case <-ctx.Done():
			m.release()
			return ctx.Err()
		}
	}
	m.from = c.index
	select {
	case c.in <- m:
		return nil
	case <-ctx.Done():
		if m.Kind == MsgData {
			m.release()
		}
		return ctx.Err()
	}
}

// gateChans are the channels of one consumer subtask, made before any
// subtask starts.
type gateChans struct {
	in      chan Message
	credits []chan struct{}
}

func newGateChans(n, capacity int) *gateChans {
	g := &gateChans{in: make(chan Message, n*(capacity+2)), credits: make([]chan struct{}, n)}
	for i := range g.credits {
		g.credits[i] = make(chan struct{}, capacity)
	}
	return g
}

// gateHandler is what the gate drives: the subtask (or a test script).
type gateHandler interface {
	// onBatch processes a batch of channel ch.
	onBatch(ch int, b Batch) error
	// onWatermark: the minimum watermark over the active channels advanced.
	onWatermark(wm int64) error
	// onIdle: every channel that has not ended is idle: forward the
	// idleness (it ends when the subtask emits again).
	onIdle() error
	// onBarrier: barrier b arrived on every channel (aligned), or on every
	// channel in at-least-once mode: snapshot and forward it.
	onBarrier(b Barrier) error
	// onCancel: checkpoint id was cancelled upstream; forward the marker.
	onCancel(id int64) error
	// onUnalignedBarrier: barrier b arrived on its first channel in
	// unaligned mode (or an alignment timed out): snapshot at once and
	// forward b; the checkpoint's channel state follows.
	onUnalignedBarrier(b Barrier) error
	// onChannelState records a message of channel ch that is in flight for
	// the unaligned checkpoint (before ch's barrier, not yet processed at the
	// snapshot): a batch, a watermark or an idleness marker, in ch's order.
	// The gate keeps ownership (the message is processed later).
	onChannelState(ch int, m Message) error
	// onUnalignedDone: barrier b arrived on every channel: the channel
	// state is complete, acknowledge.
	onUnalignedDone(b Barrier) error
	// onUnalignedAbort: the unaligned checkpoint id was cancelled.
	onUnalignedAbort(id int64)
	// onEnd: every channel ended (end of data).
	onEnd() error
	// onShutdown: every channel shut down (nothing more will come).
	onShutdown() error
}

// inputGate is the consumer's end: per-channel queues that can be paused
// without reflection, the barrier handler (aligned or at-least-once), and
// per-channel watermarks combined by minimum. Used on the subtask's
// goroutine only.
type inputGate struct {
	chans       *gateChans
	h           gateHandler
	n           int
	atLeastOnce bool
	// unaligned: checkpoint barriers are taken first, wherever they are in
	// the queues, and the snapshot does not wait for alignment; the batches they
	// overtake and those of other channels until their barriers are the
	// checkpoint's channel state. Every message is queued (read eagerly).
	unaligned bool
	// alignTimeout (with unaligned): a barrier is taken unaligned only once
	// this long has passed since its trigger; before, it aligns. now is the
	// clock (unix nanoseconds).
	alignTimeout time.Duration
	now          func() int64
	// upending is the unaligned checkpoint whose channel state is being
	// recorded (nil: none); arrived says which channels delivered its
	// barrier.
	upending *Barrier
	// nBarriers counts barriers and cancel markers in the queues.
	nBarriers int
	rr        int

	queue   [][]Message // messages of paused channels, in order
	blocked []bool
	drain   bool // a channel was unblocked with messages queued
	// holders are the task's operators that may hold its input
	// (InputHolder): while one holds, the runtime takes no message and the
	// drain of the queues stops (the rest is drained when the runtime
	// resumes the gate). In unaligned mode a hold counts only once acked
	// (the coordinator's highest fully acknowledged checkpoint id) reached
	// its checkpoint.
	holders []InputHolder
	acked   *atomic.Int64

	ended, shut  []bool
	nEnded, nShu int

	wm       []int64
	idle     []bool
	combined int64
	allIdle  bool // onIdle was called and no channel is active since

	pending    *Barrier // the barrier being aligned
	alignID    int64    // barriers below this id are stale (done or cancelled)
	arrived    []bool
	lastCancel int64
}

func newInputGate(chans *gateChans, n int, atLeastOnce bool, h gateHandler) *inputGate {
	g := &inputGate{chans: chans, h: h, n: n, atLeastOnce: atLeastOnce,
		queue: make([][]Message, n), blocked: make([]bool, n), ended: make([]bool, n),
		shut: make([]bool, n), wm: make([]int64, n), idle: make([]bool, n), combined: NoWatermark,
		arrived: make([]bool, n)}
	for i := range g.wm {
		g.wm[i] = NoWatermark
	}
	g.now = func() int64 { return time.Now().UnixNano() }
	return g
}

// done reports whether every channel shut down.
func (g *inputGate) done() bool { return g.nShu == g.n }

// deliver takes one message read from the gate's channel.
func (g *inputGate) deliver(m Message) error {
	i := m.from
	if g.queueing() {
		g.queue[i] = append(g.queue[i], m)
		if g.candidate(m) {
			g.nBarriers++
		}
		return nil
	}
	if g.blocked[i] || len(g.queue[i]) > 0 {
		if m.Kind == MsgWatermark && len(g.queue[i]) > 0 {
			if last := &g.queue[i][len(g.queue[i])-1]; last.Kind == MsgWatermark {
				last.Watermark = max(last.Watermark, m.Watermark) // coalesce while paused
				return nil
			}
		}
		g.queue[i] = append(g.queue[i], m)
		return nil
	}
	if err := g.process(i, m); err != nil {
		return err
	}
	return g.drainQueues()
}

// holding reports whether an operator of the task holds its input.
func (g *inputGate) holding() bool {
	for _, h := range g.holders {
		if id := h.HoldInput(); id != 0 && (!g.unaligned || g.acked.Load() >= id) {
			return true
		}
	}
	return false
}

// drainQueues processes queued messages of channels no longer blocked.
// In queueing mode step takes the queues, in its own order.
func (g *inputGate) drainQueues() error {
	if g.queueing() {
		g.drain = false
		return nil
	}
	for g.drain {
		g.drain = false
		for i := range g.queue {
			for len(g.queue[i]) > 0 && !g.blocked[i] {
				if g.holding() {
					return nil // hasWork: resumed once the hold ends
				}
				m := g.queue[i][0]
				g.queue[i][0] = Message{}
				g.queue[i] = g.queue[i][1:]
				if len(g.queue[i]) == 0 {
					g.queue[i] = g.queue[i][:0:0]
				}
				if err := g.process(i, m); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// release returns everything still queued (after a failure or cancel).
func (g *inputGate) release() {
	for i, q := range g.queue {
		for j := range q {
			q[j].release()
		}
		g.queue[i] = nil
	}
}

func (g *inputGate) unblockAll() {
	for i := range g.blocked {
		g.arrived[i] = false
		if g.blocked[i] {
			g.blocked[i] = false
			if len(g.queue[i]) > 0 {
				g.drain = true
			}
		}
	}
}

func (g *inputGate) process(i int, m Message) error {
	switch m.Kind {
	case MsgData:
		<-g.chans.credits[i]
		g.active(i)
		if g.upending != nil && !g.arrived[i] {
			if err := g.h.onChannelState(i, m); err != nil {
				m.release()
				return err
			}
		}
		return g.h.onBatch(i, m.Batch)
	case MsgWatermark:
		if g.upending != nil && !g.arrived[i] {
			if err := g.h.onChannelState(i, m); err != nil {
				return err
			}
		}
		return g.channelWatermark(i, m.Watermark)
	case MsgIdle:
		if g.upending != nil && !g.arrived[i] {
			if err := g.h.onChannelState(i, m); err != nil {
				return err
			}
		}
		return g.channelIdle(i)
	case MsgBarrier:
		b := m.Barrier
		if b.ID < g.alignID {
			return nil // a barrier of a finished or cancelled checkpoint
		}
		if g.upending != nil && b.ID >= g.upending.ID {
			return g.unalignedBarrier(i, b, nil)
		}
		if g.pending == nil || b.ID > g.pending.ID {
			if g.pending != nil {
				g.unblockAll() // a newer checkpoint supersedes an unfinished alignment
			}
			g.pending, g.alignID = &b, b.ID
		}
		g.arrived[i] = true
		if !g.atLeastOnce && g.n > 1 {
			g.blocked[i] = true
		}
		return g.complete()
	case MsgCancel:
		return g.cancel(m.Barrier.ID, true)
	case MsgEnd:
		g.ended[i] = true
		g.nEnded++
		if err := g.advance(); err != nil {
			return err
		}
		if g.nEnded == g.n {
			return g.h.onEnd()
		}
	case MsgShutdown:
		g.shut[i] = true
		g.nShu++
		if err := g.complete(); err != nil {
			return err
		}
		if g.nShu == g.n {
			return g.h.onShutdown()
		}
	}
	return nil
}

// cancel aborts the alignment of checkpoint id (and older ones): blocked
// channels resume at once. forward passes the marker downstream once.
func (g *inputGate) cancel(id int64, forward bool) error {
	if g.pending != nil && g.pending.ID <= id {
		g.pending = nil
		g.unblockAll()
	}
	if g.upending != nil && g.upending.ID <= id {
		g.h.onUnalignedAbort(g.upending.ID)
		g.upending = nil
		for i := range g.arrived {
			g.arrived[i] = false
		}
	}
	if id >= g.alignID {
		g.alignID = id + 1
	}
	if forward && id > g.lastCancel {
		g.lastCancel = id
		return g.h.onCancel(id)
	}
	return nil
}

// abortAlignment is the coordinator's abort of checkpoint id: the alignment
// ends (no marker is forwarded: every subtask is notified itself) and the
// paused channels' queues are taken.
func (g *inputGate) abortAlignment(id int64) error {
	if err := g.cancel(id, false); err != nil {
		return err
	}
	return g.drainQueues()
}

// complete hands the pending barrier to the handler once every channel
// delivered it or shut down.
func (g *inputGate) complete() error {
	if g.upending != nil {
		return g.unalignedComplete()
	}
	if g.pending == nil {
		return nil
	}
	for i := range g.arrived {
		if !g.arrived[i] && !g.shut[i] {
			return nil
		}
	}
	b := *g.pending
	g.pending = nil
	g.alignID = b.ID + 1
	g.unblockAll()
	return g.h.onBarrier(b)
}

// active marks channel i active (it delivered a batch).
func (g *inputGate) active(i int) {
	if g.idle[i] {
		g.idle[i], g.allIdle = false, false
	}
}

// channelWatermark takes watermark wm of channel i (also when replaying
// channel state).
func (g *inputGate) channelWatermark(i int, wm int64) error {
	g.idle[i] = false
	g.wm[i] = max(g.wm[i], wm)
	if err := g.tellChannel(i); err != nil {
		return err
	}
	return g.advance()
}

// channelIdle takes an idleness marker of channel i.
func (g *inputGate) channelIdle(i int) error {
	g.idle[i] = true
	if err := g.tellChannel(i); err != nil {
		return err
	}
	return g.advance()
}

// tellChannel tells a handler that wants them (channelWatermarkHandler)
// that channel i's watermark or idleness changed.
func (g *inputGate) tellChannel(i int) error {
	if h, ok := g.h.(channelWatermarkHandler); ok {
		return h.onChannelWatermark(i)
	}
	return nil
}

// restoreWatermarks sets the channels' watermarks and idleness to those of
// an unaligned checkpoint's snapshot (same channels: replayChannelState)
// and tells the handler what they combine to.
func (g *inputGate) restoreWatermarks(wm []int64, idle []bool) error {
	copy(g.wm, wm)
	copy(g.idle, idle)
	for i := range g.wm {
		if err := g.tellChannel(i); err != nil {
			return err
		}
	}
	return g.advance()
}

// advance recomputes the minimum watermark over the channels that are
// neither idle nor ended and tells the handler when it moved forward.
func (g *inputGate) advance() error {
	wm, active, anyIdle := combineWatermarks(-1, nil, g.wm, g.idle, g.ended)
	if !active {
		// Every channel idle or ended (a bounded source's end carries its
		// final watermark before the end). As Flink's StatusWatermarkValve,
		// once the last active channel went idle nothing holds event time
		// back: the largest watermark of the idle channels is emitted, and
		// the subtask's output becomes idle too.
		if !anyIdle || g.allIdle {
			return nil
		}
		g.allIdle = true
		if wm > g.combined {
			g.combined = wm
			if err := g.h.onWatermark(wm); err != nil {
				return err
			}
		}
		return g.h.onIdle()
	}
	g.allIdle = false
	if wm > g.combined {
		g.combined = wm
		return g.h.onWatermark(wm)
	}
	return nil
}

// unalignedBarrier handles barrier b of channel i in unaligned mode (or
// after an alignment timeout). overtaken are the batches of channel i
// queued before it: they are channel state.
func (g *inputGate) unalignedBarrier(i int, b Barrier, overtaken []Message) error {
	if g.upending == nil || b.ID > g.upending.ID {
		if g.upending != nil { // superseded: a newer checkpoint started
			g.h.onUnalignedAbort(g.upending.ID)
		}
		g.upending, g.alignID = &b, b.ID
		for j := range g.arrived {
			g.arrived[j] = false
		}
		if err := g.h.onUnalignedBarrier(b); err != nil {
			return err
		}
	}
	for _, m := range overtaken {
		switch m.Kind {
		case MsgData, MsgWatermark, MsgIdle:
			if err := g.h.onChannelState(i, m); err != nil {
				return err
			}
		}
	}
	g.arrived[i] = true
	return g.unalignedComplete()
}

// unalignedComplete acknowledges the unaligned checkpoint once every
// channel delivered its barrier or shut down.
func (g *inputGate) unalignedComplete() error {
	for i := range g.arrived {
		if !g.arrived[i] && !g.shut[i] {
			return nil
		}
	}
	b := *g.upending
	g.upending = nil
	g.alignID = b.ID + 1
	for i := range g.arrived {
		g.arrived[i] = false
	}
	return g.h.onUnalignedDone(b)
}

// alignmentTimedOut turns the aligned checkpoint being aligned into an
// unaligned one (execution.checkpointing.aligned-checkpoint-timeout): the
// snapshot is taken now, the blocked channels resume (what they queued
// came after the barrier), and the other channels' batches until their
// barriers become channel state.
func (g *inputGate) alignmentTimedOut() error {
	if g.pending == nil {
		return nil
	}
	b := *g.pending
	arrived := append([]bool(nil), g.arrived...)
	g.pending = nil
	g.unblockAll()
	g.upending, g.alignID = &b, b.ID
	copy(g.arrived, arrived)
	g.recount()
	if err := g.h.onUnalignedBarrier(b); err != nil {
		return err
	}
	return g.unalignedComplete()
}

// hasWork reports whether queued messages can be processed now (unaligned
// mode queues every message).
func (g *inputGate) hasWork() bool {
	for i, q := range g.queue {
		if len(q) > 0 && !g.blocked[i] {
			return true
		}
	}
	return false
}

// step processes one queued message in unaligned mode: a barrier or cancel
// marker first, wherever it is (it overtakes the batches before it), else
// the head of the next channel in turn.
func (g *inputGate) step() error {
	if g.nBarriers > 0 {
		for i, q := range g.queue {
			if g.blocked[i] {
				continue // what a paused channel queued comes after its barrier
			}
			for k, m := range q {
				if !g.priority(m) {
					if m.Kind == MsgBarrier || m.Kind == MsgEnd || m.Kind == MsgShutdown {
						break // never overtake an aligned barrier or the end
					}
					continue
				}
				g.nBarriers--
				overtaken := q[:k:k]
				g.queue[i] = append(overtaken, q[k+1:]...)
				if m.Kind == MsgCancel {
					return g.cancel(m.Barrier.ID, true)
				}
				if m.Barrier.ID < g.alignID {
					return nil
				}
				return g.unalignedBarrier(i, m.Barrier, g.queue[i][:k])
			}
		}
	}
	for n := 0; n < g.n; n++ {
		i := (g.rr + n) % g.n
		if len(g.queue[i]) == 0 || g.blocked[i] {
			continue
		}
		if g.candidate(g.queue[i][0]) {
			g.nBarriers-- // taken in order (aligned)
		}
		g.rr = i + 1
		m := g.queue[i][0]
		g.queue[i][0] = Message{}
		g.queue[i] = g.queue[i][1:]
		return g.process(i, m)
	}
	return nil
}

// priority reports whether m overtakes the batches queued before it:
// cancel markers, the barriers of an unaligned checkpoint in progress, and
// in unaligned mode every checkpoint barrier. Savepoints and the final
// checkpoint stay aligned (as in Flink): their cut must hold every record
// before them, with no channel state, since the job may end or be moved
// after them.
func (g *inputGate) priority(m Message) bool {
	switch {
	case m.Kind == MsgCancel:
		return true
	case m.Kind != MsgBarrier:
		return false
	case g.upending != nil && m.Barrier.ID == g.upending.ID:
		return true
	}
	if !g.unaligned || m.Barrier.Kind != Checkpoint || m.Barrier.Final {
		return false
	}
	return g.alignTimeout == 0 || g.now()-m.Barrier.Triggered >= int64(g.alignTimeout)
}

// candidate reports whether m may become a priority message (a checkpoint
// barrier waiting for its alignment timeout).
func (g *inputGate) candidate(m Message) bool {
	return g.priority(m) || (g.unaligned && m.Kind == MsgBarrier && m.Barrier.Kind == Checkpoint && !m.Barrier.Final)
}

// alignDeadline is when the alignment in progress times out (0: none).
func (g *inputGate) alignDeadline() int64 {
	if g.pending == nil || !g.unaligned || g.alignTimeout == 0 || g.pending.Kind != Checkpoint || g.pending.Final {
		return 0
	}
	return g.pending.Triggered + int64(g.alignTimeout)
}

// queueing reports whether every message is queued and taken by step
// (unaligned mode, or an aligned checkpoint that timed out into an
// unaligned one).
func (g *inputGate) queueing() bool { return g.unaligned || g.upending != nil }

// recount counts the priority messages in the queues.
func (g *inputGate) recount() {
	g.nBarriers = 0
	for _, q := range g.queue {
		for _, m := range q {
			if g.candidate(m) {
				g.nBarriers++
			}
		}
	}
}

// resume is called when the gate may have left queueing mode: queued
// messages are then processed in order, as aligned mode does.
func (g *inputGate) resume() error {
	if g.queueing() {
		return nil
	}
	g.nBarriers = 0
	g.drain = true
	return g.drainQueues()
}
