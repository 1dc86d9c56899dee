package exec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow/go/v17/arrow/ipc"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/planner"
)

// Unaligned checkpoints (the subtask's side; the gate decides when).
//
// The snapshot is taken when a barrier arrives on the first channel; the
// barrier is forwarded at once. The batches that are in flight for the
// checkpoint — those the barrier overtook in its channel's queue, and those
// of the other channels until their barriers — are processed as usual and
// also recorded as the subtask's channel state, stored with the snapshot
// under SubtaskKey("channels/"+task's first operator, subtask). On restore
// they are replayed through the chain before any input is read: the state
// plus the replayed batches are exactly the records before the cut.
//
// Channel state encoding, per batch: uvarint input edge, uvarint 1+len(ops)
// (0: all inserts), the ops, uvarint length of an Arrow IPC stream holding
// the batch, the stream.

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

func (st *subtask) onChannelState(ch int, b Batch) error {
	u := st.upend
	if u == nil {
		return nil
	}
	st.cfg.Metrics.ChannelState.Add(1)
	u.state = binary.AppendUvarint(u.state, uint64(st.chanInput[ch]))
	if b.Ops == nil {
		u.state = binary.AppendUvarint(u.state, 0)
	} else {
		u.state = binary.AppendUvarint(u.state, uint64(len(b.Ops)+1))
		for _, op := range b.Ops {
			u.state = append(u.state, byte(op))
		}
	}
	w := &u.ipc
	w.Reset()
	iw := ipc.NewWriter(w, ipc.WithSchema(b.Rec.Schema()), ipc.WithAllocator(st.cfg.Mem))
	if err := iw.Write(b.Rec); err != nil {
		return fmt.Errorf("recording channel state: %w", err)
	}
	if err := iw.Close(); err != nil {
		return fmt.Errorf("recording channel state: %w", err)
	}
	u.state = binary.AppendUvarint(u.state, uint64(w.Len()))
	u.state = append(u.state, w.Bytes()...)
	return nil
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
	oldP := 0 // every subtask of an unaligned checkpoint stores its key
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
			olds = append(olds, old{int(binary.BigEndian.Uint32(k[len(prefix):])), append([]byte(nil), v...)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	p := st.task.Parallelism
	rescaled := oldP != 0 && oldP != p
	kg := st.keyGroups()
	for _, o := range olds {
		if err := st.replayOne(o.state, o.index, rescaled, kg); err != nil {
			return fmt.Errorf("replaying channel state of subtask %d: %w", o.index, err)
		}
	}
	return nil
}

func (st *subtask) replayOne(b []byte, from int, rescaled bool, kg KeyGroups) error {
	errCorruptCS := errors.New("corrupt channel state")
	for len(b) > 0 {
		input, n := binary.Uvarint(b)
		if n <= 0 || int(input) >= len(st.task.Inputs) {
			return errCorruptCS
		}
		b = b[n:]
		nops, n := binary.Uvarint(b)
		if n <= 0 || nops > uint64(len(b)) {
			return errCorruptCS
		}
		b = b[n:]
		var ops []RowKind
		if nops > 0 {
			ops = make([]RowKind, nops-1)
			for i := range ops {
				ops[i] = RowKind(b[i])
			}
			b = b[nops-1:]
		}
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return errCorruptCS
		}
		r, err := ipc.NewReader(bytes.NewReader(b[n:n+int(l)]), ipc.WithAllocator(st.cfg.Mem))
		if err != nil {
			return err
		}
		b = b[n+int(l):]
		if !r.Next() {
			r.Release()
			return errCorruptCS
		}
		rec := r.Record()
		rec.Retain()
		r.Release()
		batch := Batch{Rec: rec, Ops: ops}
		edge := st.task.Inputs[input]
		switch {
		case !rescaled:
			if from != st.index {
				rec.Release()
				continue
			}
		case edge.Kind == planner.Hash:
			// Keep the rows of this subtask's key groups.
			hashes := HashKeys(rec, edge.Keys, nil)
			var idx []int32
			for i, h := range hashes {
				if g := keyGroup(h, kg.MaxParallelism); g >= kg.Start && g < kg.End {
					idx = append(idx, int32(i))
				}
			}
			part := Batch{Rec: expr.TakeRecord(rec, idx, st.cfg.Mem)}
			if ops != nil {
				part.Ops = make([]RowKind, len(idx))
				for k, i := range idx {
					part.Ops[k] = ops[i]
				}
			}
			rec.Release()
			batch = part
		default:
			if from%st.task.Parallelism != st.index {
				rec.Release()
				continue
			}
		}
		if batch.Rows() == 0 {
			batch.Rec.Release()
			continue
		}
		st.cfg.Metrics.ChannelStateReplayed.Add(1)
		if err := st.process(int(input), batch); err != nil {
			return err
		}
	}
	return nil
}
