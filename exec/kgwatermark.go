package exec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec/state"
)

// windowState is the keyed state every event-time window operator has:
// slots (a state.Table), event-time timers and the per-key-group watermark.
// Embedded, it gives the operator its Snapshot, NotifyComplete and
// NotifyAborted.
type windowState struct {
	tbl    *state.Table
	timers *state.Timers
	// byEnd: the operator's slots freed by range (endRanges; nothing for
	// sessions, whose keys do not start with their end)
	byEnd endRanges
	kgWatermark
	opID  string
	opCtx *OpContext
}

func (s *windowState) Snapshot(id int64, sw checkpoint.StateWriter) error {
	if err := s.byEnd.snapshot(s.tbl); err != nil {
		return err
	}
	if err := s.tbl.Snapshot(id, sw); err != nil {
		return err
	}
	if err := s.timers.Snapshot(id, sw); err != nil {
		return err
	}
	return s.kgWatermark.snapshot(s.opID, s.opCtx, sw)
}

func (s *windowState) NotifyComplete(id int64) error {
	s.tbl.Complete(id)
	s.timers.Complete(id)
	return nil
}

func (s *windowState) NotifyAborted(id int64) error {
	s.tbl.Abort(id)
	s.timers.Abort(id)
	return nil
}

// kgWatermark is the event-time watermark of a keyed window operator
// (window aggregation, window rank), kept per key group across restores:
// the watermark is checkpointed per subtask with the key groups it
// covered, and after a restore (also at another parallelism) each key
// group is judged by the larger of the live watermark and the one it had
// reached, until the live watermark passes them all. So a restored job
// drops and fires exactly what the uninterrupted one does.
type kgWatermark struct {
	wm        int64 // the live watermark
	wmReal    int64 // the last watermark before MaxWatermark (what a snapshot stores)
	forwarded int64
	// restored is the watermark restored per key group of the subtask
	// (index kg - KeyGroups.Start); nil once the live watermark passed all.
	restored    []int64
	restoredMax int64
	staleWM     []int // old subtasks' watermark entries to delete
}

func newKGWatermark() kgWatermark {
	return kgWatermark{wm: NoWatermark, wmReal: NoWatermark, forwarded: NoWatermark, restoredMax: NoWatermark}
}

// wmFor is the watermark that judges rows of key group kg (of the
// subtask's key groups starting at start).
func (k *kgWatermark) wmFor(kg, start int) int64 {
	if k.restored != nil {
		return max(k.wm, k.restored[kg-start])
	}
	return k.wm
}

// advance moves the live watermark to wm.
func (k *kgWatermark) advance(wm int64) {
	if wm > k.wm {
		k.wm = wm
	}
	if wm != MaxWatermark && wm > k.wmReal {
		k.wmReal = wm
	}
	if k.restored != nil && k.wmReal >= k.restoredMax {
		k.restored = nil
	}
}

func wmKey(opID string, subtask int) []byte {
	return checkpoint.SubtaskKey(opID+"/watermark", subtask)
}

// snapshot writes the subtask's entry: uvarint first and end key group,
// then a varint watermark per key group. The end of input or a drain
// (MaxWatermark) is not stored: a job restored from a drained savepoint
// judges later rows by the watermark before the drain (as Flink, which
// restarts watermarks from scratch, it fires the windows the drain fired
// again for later rows). Entries of old subtasks above the parallelism
// are deleted.
func (k *kgWatermark) snapshot(opID string, ctx *OpContext, sw checkpoint.StateWriter) error {
	kgs := ctx.KeyGroups
	v := binary.AppendUvarint(nil, uint64(kgs.Start))
	v = binary.AppendUvarint(v, uint64(kgs.End))
	for kg := kgs.Start; kg < kgs.End; kg++ {
		x := k.wmReal
		if k.restored != nil {
			x = max(x, k.restored[kg-kgs.Start])
		}
		v = binary.AppendVarint(v, x)
	}
	if err := sw.Put(wmKey(opID, ctx.Subtask), v); err != nil {
		return err
	}
	for _, j := range k.staleWM {
		if err := sw.Delete(wmKey(opID, j)); err != nil {
			return err
		}
	}
	return nil
}

// restore reads every old subtask's entry and keeps the watermarks of this
// subtask's key groups.
func (k *kgWatermark) restore(opID string, ctx *OpContext, r checkpoint.StateReader) error {
	kgs := ctx.KeyGroups
	k0 := wmKey(opID, 0)
	prefix := k0[:len(k0)-4]
	restored := make([]int64, kgs.End-kgs.Start)
	for i := range restored {
		restored[i] = NoWatermark
	}
	err := r.Scan(prefix, func(key, v []byte) error {
		if len(key) != len(k0) {
			return nil
		}
		if i := int(binary.BigEndian.Uint32(key[len(prefix):])); i >= ctx.Parallelism {
			k.staleWM = append(k.staleWM, i)
		}
		s, n := binary.Uvarint(v)
		if n <= 0 {
			return errCorrupt
		}
		v = v[n:]
		e, n := binary.Uvarint(v)
		if n <= 0 {
			return errCorrupt
		}
		v = v[n:]
		for kg := int(s); kg < int(e); kg++ {
			x, n, err := readVarint(v)
			if err != nil {
				return err
			}
			v = v[n:]
			if kg >= kgs.Start && kg < kgs.End {
				restored[kg-kgs.Start] = x
				k.restoredMax = max(k.restoredMax, x)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if k.restoredMax > k.wm {
		k.restored = restored
	}
	return nil
}

// endRanges is the bookkeeping of an operator whose slot keys start with
// the slice or window end (or, the temporal sort, the time) the watermark
// frees them at (appendEndKey): the slots of every fired end of a key
// group are one key range, so a fire frees them without a tombstone each
// (free) and the next snapshot deletes, in each key group that freed a
// slot since the last one, the range of every end up to the last one
// fired. That is only right because no slot of such an end is live: a
// fire frees the slots of an end in every key group before the snapshot
// (the watermark passed the end), and a row of it would be late. The zero
// value is ready; an operator that frees nothing this way (sessions) has
// nothing to write.
type endRanges struct {
	// live counts the live slots by end (add: the operator's new and
	// restored slots); freedTo is the largest end of a slot freed (freed:
	// one was); kgs the key groups that freed one since the last snapshot
	// (inKG marks them)
	live    map[int64]int32
	freedTo int64
	freed   bool
	kgs     []int
	inKG    []bool
}

// add counts a live slot of end end.
func (e *endRanges) add(end int64) {
	if e.live == nil {
		e.live = map[int64]int32{}
	}
	e.live[end]++
}

// free frees fired slot g of tbl whose end is end (its key leaves the
// state with the next snapshot's range deletion).
func (e *endRanges) free(tbl *state.Table, g int32, end int64) {
	if n := e.live[end] - 1; n > 0 {
		e.live[end] = n
	} else {
		delete(e.live, end)
	}
	if tbl.Tracking() {
		if !e.freed || end > e.freedTo {
			e.freedTo, e.freed = end, true
		}
		kg := tbl.KeyGroup(g)
		if kg >= len(e.inKG) {
			e.inKG = append(e.inKG, make([]bool, kg+1-len(e.inKG))...)
		}
		if !e.inKG[kg] {
			e.inKG[kg] = true
			e.kgs = append(e.kgs, kg)
		}
	}
	tbl.RemoveCovered(g)
}

// snapshot has tbl's next snapshot delete, in each key group that freed
// a slot since the last time, the keys of every end up to freedTo. A live
// slot at or below freedTo is a bug (its key would be deleted), reported
// as an error.
func (e *endRanges) snapshot(tbl *state.Table) error {
	if len(e.kgs) == 0 {
		return nil
	}
	for end := range e.live {
		if end <= e.freedTo {
			return fmt.Errorf("window state: a slot of end %d is live after one of %d was freed", end, e.freedTo)
		}
	}
	var hi []byte
	if e.freedTo < math.MaxInt64 {
		hi = appendEndKey(nil, e.freedTo+1)
	} else {
		hi = bytes.Repeat([]byte{0xff}, 9)
	}
	for _, kg := range e.kgs {
		tbl.DeleteRange(kg, nil, hi)
		e.inKG[kg] = false
	}
	e.kgs = e.kgs[:0]
	return nil
}

// appendEndKey appends end v in 8 bytes that sort as v does.
func appendEndKey(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v)^(1<<63))
}
