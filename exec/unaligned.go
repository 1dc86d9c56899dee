package exec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/planner"
)

// Unaligned checkpoints (the subtask's side; the gate decides when).
//
// The snapshot is taken when a barrier arrives on the first channel; the
// barrier is forwarded at once. The messages that are in flight for the
// checkpoint — those the barrier overtook in its channel's queue, and those
// of the other channels until their barriers — are processed as usual and
// also recorded as the subtask's channel state, stored with the snapshot
// under SubtaskKey("channels/"+task's first operator, subtask). On restore
// they are replayed through the chain before any input is read: the state
// plus the replayed messages are exactly the records before the cut.
//
// The channel state holds the watermarks and idleness markers in flight
// too, and each channel's watermark at the snapshot: a replayed row meets
// the watermark it met in the run that took the checkpoint (at the same
// parallelism), so a restored job judges late rows as the uninterrupted
// one. After a rescale (or when the channels changed) the old subtasks'
// recordings are merged: each replayed row meets a watermark no later than
// the one it met before (see replayMerged).
//
// Channel state encoding (version 2): 0xFF, 2, uvarint parallelism of the
// task that wrote it, uvarint n channels, per channel its uvarint input
// edge, varint watermark and idle byte; then one
// entry per message, in each channel's order: 'B' (batch): uvarint
// channel, uvarint 1+len(ops) (0: all inserts), the ops, uvarint length of
// an Arrow IPC stream holding the batch, the stream; 'W': uvarint channel,
// varint watermark; 'I' (idle): uvarint channel. Version 1 (still read) had
// no header and batches only: uvarint input edge, then as 'B' from the ops.

const (
	csVersion2 = 2
	csBatch    = 'B'
	csMark     = 'W'
	csIdle     = 'I'
)

type unalignedSnap struct {
	id    int64
	buf   *checkpoint.Buffer
	state []byte
	ipc   bytes.Buffer // one batch's IPC stream, reused
	// durable is the sink's pre-commit wait, acknowledged with the snapshot
	durable func() error
}

// channelStateID is the operator id under which channel state is stored.
func (st *subtask) channelStateID() string {
	if len(st.task.Ops) > 0 {
		return "channels/" + st.task.Ops[0].OpID()
	}
	if st.task.Sink != nil {
		return "channels/" + st.task.Sink.ID
	}
	return "channels/" + st.task.Name
}

func (st *subtask) onUnalignedBarrier(b Barrier) error { return st.takeSnapshot(b, true) }

// channelStateHeader starts an unaligned checkpoint's channel state: each
// channel's input edge, watermark and idleness at the snapshot (only a
// task with inputs, hence a gate, takes unaligned snapshots).
func (st *subtask) channelStateHeader(dst []byte) []byte {
	return appendCSHeader(dst, st.task.Parallelism, st.chanInput, st.gate.wm, st.gate.idle)
}

func (st *subtask) onChannelState(ch int, m Message) error {
	u := st.upend
	if u == nil {
		return nil
	}
	if m.Kind == MsgData {
		st.cfg.Metrics.ChannelState.Add(1)
	}
	var err error
	u.state, err = appendCSMessage(u.state, ch, m, &u.ipc, st.cfg.Mem)
	if err != nil {
		return fmt.Errorf("recording channel state: %w", err)
	}
	return nil
}

// appendCSHeader appends a channel state's header (version 2).
func appendCSHeader(dst []byte, parallelism int, inputs []int, wm []int64, idle []bool) []byte {
	dst = append(dst, 0xFF, csVersion2)
	dst = binary.AppendUvarint(dst, uint64(parallelism))
	dst = binary.AppendUvarint(dst, uint64(len(inputs)))
	for i, in := range inputs {
		dst = binary.AppendUvarint(dst, uint64(in))
		dst = binary.AppendVarint(dst, wm[i])
		b := byte(0)
		if idle[i] {
			b = 1
		}
		dst = append(dst, b)
	}
	return dst
}

// appendCSMessage appends the entry of message m of channel ch; ipcBuf is
// reused for a batch's IPC stream.
func appendCSMessage(dst []byte, ch int, m Message, ipcBuf *bytes.Buffer, mem memory.Allocator) ([]byte, error) {
	switch m.Kind {
	case MsgWatermark:
		dst = append(dst, csMark)
		dst = binary.AppendUvarint(dst, uint64(ch))
		return binary.AppendVarint(dst, m.Watermark), nil
	case MsgIdle:
		dst = append(dst, csIdle)
		return binary.AppendUvarint(dst, uint64(ch)), nil
	case MsgData:
	default:
		return dst, fmt.Errorf("unexpected message kind %d", m.Kind)
	}
	b := m.Batch
	dst = append(dst, csBatch)
	dst = binary.AppendUvarint(dst, uint64(ch))
	if b.Ops == nil {
		dst = binary.AppendUvarint(dst, 0)
	} else {
		dst = binary.AppendUvarint(dst, uint64(len(b.Ops)+1))
		for _, op := range b.Ops {
			dst = append(dst, byte(op))
		}
	}
	ipcBuf.Reset()
	iw := ipc.NewWriter(ipcBuf, ipc.WithSchema(b.Rec.Schema()), ipc.WithAllocator(mem))
	if err := iw.Write(b.Rec); err != nil {
		return dst, err
	}
	if err := iw.Close(); err != nil {
		return dst, err
	}
	dst = binary.AppendUvarint(dst, uint64(ipcBuf.Len()))
	return append(dst, ipcBuf.Bytes()...), nil
}

func (st *subtask) onUnalignedDone(b Barrier) error {
	u := st.upend
	if u == nil || u.id != b.ID {
		return nil // its snapshot failed (acknowledged already)
	}
	st.upend = nil
	err := u.buf.Put(checkpoint.SubtaskKey(st.channelStateID(), st.index), u.state)
	st.coord.ackSnapshot(ack{slot: st.slot, id: b.ID, buf: u.buf, err: err, durable: u.durable})
	return nil
}

func (st *subtask) onUnalignedAbort(id int64) {
	if st.upend != nil && st.upend.id <= id {
		st.upend = nil
	}
}

// replayChannelState feeds the restored channel state through the chain.
// At the same parallelism a subtask replays its own; after a rescale, the
// batches of a hash input are re-routed by key group (each subtask keeps
// the rows of its key groups, from every old subtask) and those of other
// inputs go from old subtask i to new subtask i mod parallelism.
func (st *subtask) replayChannelState() error {
	if !st.checkpointing() || !st.coord.cfg.Restore {
		return nil
	}
	id := st.channelStateID()
	k0 := checkpoint.SubtaskKey(id, 0)
	prefix := k0[:len(k0)-4]
	type old struct {
		index int
		state []byte
	}
	var olds []old
	oldP := 0 // version 1: every subtask of an unaligned checkpoint stores its key
	err := st.coord.cfg.Backend.Reader().Scan(prefix, func(k, v []byte) error {
		if len(k) != len(k0) {
			return nil
		}
		oldP++
		i := int(binary.BigEndian.Uint32(k[len(prefix):]))
		if p := st.task.Parallelism; i >= p && i%p == st.index {
			if st.takenOver == nil {
				st.takenOver = map[string][]int{}
			}
			st.takenOver[id] = append(st.takenOver[id], i)
		}
		if len(v) > 0 {
			olds = append(olds, old{i, append([]byte(nil), v...)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Rescaled: the parallelism the state was written at (version 2 says;
	// with an aligned-checkpoint-timeout some subtasks may have taken the
	// checkpoint aligned and stored none) is not this one.
	rescaled := oldP != 0 && oldP != st.task.Parallelism
	for _, o := range olds {
		if par, _, ok := csParallelism(o.state); ok {
			rescaled = par != st.task.Parallelism
			break
		}
	}
	var streams []*csStream
	for _, o := range olds {
		if !rescaled && o.index != st.index {
			continue
		}
		s, err := parseChannelState(o.state, len(st.task.Inputs))
		if err != nil {
			return fmt.Errorf("replaying channel state of subtask %d: %w", o.index, err)
		}
		s.from = o.index
		streams = append(streams, s)
	}
	if len(streams) == 1 && !rescaled && !streams[0].v1 && slices.Equal(streams[0].inputs, st.chanInput) {
		return st.replaySameChannels(streams[0])
	}
	return st.replayMerged(streams, rescaled)
}

// csEntry is one recorded message of a channel state.
type csEntry struct {
	kind  byte // csBatch, csMark, csIdle
	ch    int  // -1: version 1 (no channel recorded)
	input int
	wm    int64
	ops   []RowKind
	ipc   []byte
}

// csStream is one old subtask's channel state: the channels' watermarks
// and idleness at the snapshot (advanced as the entries are replayed),
// and the entries.
type csStream struct {
	from    int
	v1      bool
	inputs  []int // input edge per channel
	wm      []int64
	idle    []bool
	entries []csEntry
	pos     int
}

var errCorruptCS = errors.New("corrupt channel state")

// csParallelism reads the parallelism a version 2 channel state was
// written at, and returns the rest of the state after it.
func csParallelism(b []byte) (int, []byte, bool) {
	if len(b) < 3 || b[0] != 0xFF || b[1] != csVersion2 {
		return 0, nil, false
	}
	par, n := binary.Uvarint(b[2:])
	if n <= 0 || par == 0 || par > 1<<31 {
		return 0, nil, false
	}
	return int(par), b[2+n:], true
}

// parseChannelState decodes a channel state (either version); the
// entries' IPC streams point into b.
func parseChannelState(b []byte, nInputs int) (*csStream, error) {
	s := &csStream{}
	uvarint := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	channel := func() (int, bool) {
		ch, ok := uvarint()
		return int(ch), ok && ch < uint64(len(s.inputs))
	}
	batch := func(e *csEntry) bool {
		nops, ok := uvarint()
		if !ok || nops > uint64(len(b)) {
			return false
		}
		if nops > 0 {
			e.ops = make([]RowKind, nops-1)
			for i := range e.ops {
				e.ops[i] = RowKind(b[i])
			}
			b = b[nops-1:]
		}
		l, ok := uvarint()
		if !ok || l > uint64(len(b)) {
			return false
		}
		e.ipc, b = b[:l], b[l:]
		return true
	}
	if len(b) == 0 || b[0] != 0xFF {
		s.v1 = true
		for len(b) > 0 {
			in, ok := uvarint()
			if !ok || in >= uint64(nInputs) {
				return nil, errCorruptCS
			}
			e := csEntry{kind: csBatch, ch: -1, input: int(in)}
			if !batch(&e) {
				return nil, errCorruptCS
			}
			s.entries = append(s.entries, e)
		}
		return s, nil
	}
	if len(b) < 2 || b[1] != csVersion2 {
		return nil, fmt.Errorf("channel state of an unknown version")
	}
	_, rest, ok := csParallelism(b)
	if !ok {
		return nil, errCorruptCS
	}
	b = rest
	n, ok := uvarint()
	if !ok || n > uint64(len(b)) {
		return nil, errCorruptCS
	}
	s.inputs, s.wm, s.idle = make([]int, n), make([]int64, n), make([]bool, n)
	for i := range s.inputs {
		in, ok := uvarint()
		if !ok || in >= uint64(nInputs) {
			return nil, errCorruptCS
		}
		wm, k := binary.Varint(b)
		if k <= 0 || len(b) < k+1 || b[k] > 1 {
			return nil, errCorruptCS
		}
		s.inputs[i], s.wm[i], s.idle[i] = int(in), wm, b[k] == 1
		b = b[k+1:]
	}
	for len(b) > 0 {
		kind := b[0]
		b = b[1:]
		ch, ok := channel()
		if !ok {
			return nil, errCorruptCS
		}
		e := csEntry{kind: kind, ch: ch, input: s.inputs[ch]}
		switch kind {
		case csBatch:
			ok = batch(&e)
		case csMark:
			var k int
			e.wm, k = binary.Varint(b)
			ok = k > 0
			if ok {
				b = b[k:]
			}
		case csIdle:
		default:
			ok = false
		}
		if !ok {
			return nil, errCorruptCS
		}
		s.entries = append(s.entries, e)
	}
	return s, nil
}

// combined is the stream's watermark by the gate's rules (NoWatermark for
// version 1, which recorded none).
func (s *csStream) combined(in int) (int64, bool) {
	if s.v1 {
		return NoWatermark, true
	}
	w, active, anyIdle := combineWatermarks(in, s.inputs, s.wm, s.idle, nil)
	return w, active || anyIdle
}

// replaySameChannels replays the subtask's own channel state when its
// channels are those of the run that recorded it: the gate takes the
// recorded watermarks, so every row meets the watermarks it met then.
func (st *subtask) replaySameChannels(s *csStream) error {
	g := st.gate
	if err := g.restoreWatermarks(s.wm, s.idle); err != nil {
		return err
	}
	kg := st.keyGroups()
	for _, e := range s.entries {
		var err error
		switch e.kind {
		case csBatch:
			g.active(e.ch)
			err = st.replayBatch(e, s.from, false, kg)
		case csMark:
			err = g.channelWatermark(e.ch, e.wm)
		case csIdle:
			err = g.channelIdle(e.ch)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// replayMerged replays channel states recorded by other channels (a
// rescale, or an upstream task rescaled), merged by mergeReplay.
func (st *subtask) replayMerged(streams []*csStream, rescaled bool) error {
	kg := st.keyGroups()
	var iw InputWatermarkOperator
	if len(st.ops) > 0 {
		iw, _ = st.ops[0].(InputWatermarkOperator)
	}
	emitted, err := mergeReplay(streams, len(st.task.Inputs), mergeSink{
		batch: func(s *csStream, e csEntry) error { return st.replayBatch(e, s.from, rescaled, kg) },
		edge: func(in int, wm int64) error {
			if iw == nil {
				return nil
			}
			return iw.ProcessInputWatermark(in, wm)
		},
		watermark: st.watermark,
	})
	if g := st.gate; g != nil && emitted > g.combined {
		g.combined = emitted // the gate hands on only later watermarks
	}
	return err
}

// mergeSink receives a merged replay: batches, input edges' watermarks
// (before the combined one) and combined watermarks.
type mergeSink struct {
	batch     func(s *csStream, e csEntry) error
	edge      func(in int, wm int64) error
	watermark func(wm int64) error
}

// mergeReplay merges old subtasks' channel states so that every
// watermark handed on is the minimum over the streams of what each had
// reached (by the gate's rules, per input edge and combined): a replayed
// row meets a watermark no later than the one it met when it was recorded
// (rows are never judged late that were not; some the old run judged late
// may be accepted). Each stream's batches are replayed up to its next
// watermark or idleness entry; then the entry of the stream furthest
// behind is applied. It returns the last combined watermark handed on.
func mergeReplay(streams []*csStream, nInputs int, to mergeSink) (int64, error) {
	edge := make([]int64, nInputs)
	for i := range edge {
		edge[i] = NoWatermark
	}
	emitted := NoWatermark
	minOver := func(in int) (int64, bool) {
		w, any := MaxWatermark, false
		for _, s := range streams {
			if x, ok := s.combined(in); ok {
				w, any = min(w, x), true
			}
		}
		return w, any
	}
	advance := func() error {
		for in := range edge {
			if w, ok := minOver(in); ok && w > edge[in] {
				edge[in] = w
				if err := to.edge(in, w); err != nil {
					return err
				}
			}
		}
		if w, ok := minOver(-1); ok && w > emitted {
			emitted = w
			return to.watermark(w)
		}
		return nil
	}
	if err := advance(); err != nil {
		return emitted, err
	}
	for {
		for _, s := range streams {
			for ; s.pos < len(s.entries) && s.entries[s.pos].kind == csBatch; s.pos++ {
				e := s.entries[s.pos]
				if e.ch >= 0 {
					s.idle[e.ch] = false
				}
				if err := to.batch(s, e); err != nil {
					return emitted, err
				}
			}
		}
		var next *csStream
		var nextWM int64
		for _, s := range streams {
			if s.pos == len(s.entries) {
				continue
			}
			if w, _ := s.combined(-1); next == nil || w < nextWM {
				next, nextWM = s, w
			}
		}
		if next == nil {
			return emitted, nil
		}
		e := next.entries[next.pos]
		next.pos++
		if e.kind == csMark {
			next.wm[e.ch], next.idle[e.ch] = max(next.wm[e.ch], e.wm), false
		} else {
			next.idle[e.ch] = true
		}
		if err := advance(); err != nil {
			return emitted, err
		}
	}
}

// replayBatch decodes a recorded batch and processes the part of it that
// belongs to this subtask.
func (st *subtask) replayBatch(e csEntry, from int, rescaled bool, kg KeyGroups) error {
	edge := st.task.Inputs[e.input]
	switch {
	case !rescaled:
		if from != st.index {
			return nil
		}
	case edge.Kind == planner.Hash:
	default:
		if from%st.task.Parallelism != st.index {
			return nil
		}
	}
	r, err := ipc.NewReader(bytes.NewReader(e.ipc), ipc.WithAllocator(st.cfg.Mem))
	if err != nil {
		return err
	}
	if !r.Next() {
		r.Release()
		return errCorruptCS
	}
	rec := r.Record()
	rec.Retain()
	r.Release()
	batch := Batch{Rec: rec, Ops: e.ops}
	if rescaled && edge.Kind == planner.Hash {
		// Keep the rows of this subtask's key groups.
		hashes := HashKeys(rec, edge.Keys, nil)
		var idx []int32
		for i, h := range hashes {
			if g := keyGroup(h, kg.MaxParallelism); g >= kg.Start && g < kg.End {
				idx = append(idx, int32(i))
			}
		}
		part := Batch{Rec: expr.TakeRecord(rec, idx, st.cfg.Mem)}
		if e.ops != nil {
			part.Ops = make([]RowKind, len(idx))
			for k, i := range idx {
				part.Ops[k] = e.ops[i]
			}
		}
		rec.Release()
		batch = part
	}
	if batch.Rows() == 0 {
		batch.Rec.Release()
		return nil
	}
	st.cfg.Metrics.ChannelStateReplayed.Add(1)
	return st.process(e.input, batch)
}
