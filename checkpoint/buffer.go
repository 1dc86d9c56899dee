package checkpoint

import (
	"bytes"
	"fmt"
)

// Buffer collects one subtask's state writes for one checkpoint. It
// implements StateWriter. Keys and values are copied into chunks (4 KiB
// growing to 1 MiB) that are kept across Reset (as many as the last
// checkpoint used), so a Put does not allocate once the buffer has grown, and growing never copies what was written (a doubling
// slice would hold up to three times a large checkpoint's delta while it
// grows). Not safe for concurrent use. Commit applies buffers in order and
// resets them.
type Buffer struct {
	ops    []bufOp
	chunks [][]byte // chunks[:cur+1] in use; the rest kept for reuse
	cur    int
	bytes  int
	runs   []SortedRun // PutRun's runs, referenced by ops
	ranges []keyRange  // DeleteRange's ranges (copied)
}

// keyRange is [start, end) of DeleteRange.
type keyRange struct{ start, end []byte }

// SortedRun is a run of Puts in strictly increasing key order that a
// Buffer references instead of copying (PutRun): the commit reads it,
// maybe on another goroutine than the writer's, so what At reads must not
// change until Release. State whose snapshot is already sorted and held
// immutable in memory (a join side's appended rows) hands it over this
// way: no copy of every row into the buffer and no buffer memory for it.
type SortedRun interface {
	// Len is the number of Puts.
	Len() int
	// At returns Put i: its key, written into dst (grown if needed), and
	// its value, valid until Release.
	At(i int, dst []byte) (key, value []byte)
	// Bytes is the size of the keys and values.
	Bytes() int
	// Release is called once the buffer is done with the run (at Reset).
	Release()
}

// bufChunk is the largest size of a Buffer's chunks; a larger key and
// value get a chunk of their own.
const bufChunk = 1 << 20

// bufOp is one write: key at chunks[chunk&^mergeOp][off:off+kLen], the
// value right after it; vLen == delOp: a Delete; chunk&mergeOp: a Merge.
type bufOp struct {
	chunk, off, kLen, vLen uint32
}

// mergeOp marks a Merge in bufOp.chunk.
const mergeOp = 1 << 31

const (
	delOp = ^uint32(0)
	runOp = delOp - 1 // chunk: the index of the run in runs
)

// NewBuffer returns an empty buffer.
func NewBuffer() *Buffer { return &Buffer{} }

// room returns the chunk index and offset where n bytes go. Chunks grow
// from 4 KiB to bufChunk, so that a small checkpoint's buffer stays small.
func (b *Buffer) room(n int) (int, int) {
	if len(b.chunks) == 0 {
		b.chunks = append(b.chunks, make([]byte, 0, max(4<<10, n)))
	}
	c := b.chunks[b.cur]
	if cap(c)-len(c) < n {
		size := max(min(2*cap(c), bufChunk), n)
		b.cur++
		if b.cur == len(b.chunks) {
			b.chunks = append(b.chunks, make([]byte, 0, size))
		} else if cap(b.chunks[b.cur]) < n {
			b.chunks[b.cur] = make([]byte, 0, size) // a kept chunk too small for n
		}
	}
	return b.cur, len(b.chunks[b.cur])
}

func (b *Buffer) add(key, value []byte, del, merge bool) {
	ci, off := b.room(len(key) + len(value))
	c := append(b.chunks[ci], key...)
	b.chunks[ci] = append(c, value...)
	op := bufOp{chunk: uint32(ci), off: uint32(off), kLen: uint32(len(key)), vLen: uint32(len(value))}
	if del {
		op.vLen = delOp
	}
	if merge {
		op.chunk |= mergeOp
	}
	b.ops = append(b.ops, op)
	b.bytes += len(key) + len(value)
}

// Put records key = value (both copied).
func (b *Buffer) Put(key, value []byte) error {
	b.add(key, value, false, false)
	return nil
}

// Delete records the removal of key (copied).
func (b *Buffer) Delete(key []byte) error {
	b.add(key, nil, true, false)
	return nil
}

// Merge records value appended to key's value (see MergeWriter; both
// copied).
func (b *Buffer) Merge(key, value []byte) error {
	b.add(key, value, false, true)
	return nil
}

// DeleteRange records the removal of the keys in [start, end) that
// earlier checkpoints wrote (see RangeDeleter; both copied). An empty
// range is nothing.
func (b *Buffer) DeleteRange(start, end []byte) error {
	if bytes.Compare(start, end) >= 0 {
		return nil
	}
	if len(start) == 0 || start[0] == tagInternal {
		return fmt.Errorf("checkpoint: range deletion from %q reaches the reserved subspace 0x00", start)
	}
	b.ranges = append(b.ranges, keyRange{bytes.Clone(start), bytes.Clone(end)})
	b.bytes += len(start) + len(end)
	return nil
}

// PutRun records the Puts of run, at this point of the buffer's writes,
// by reference (see SortedRun).
func (b *Buffer) PutRun(run SortedRun) error {
	if run.Len() == 0 {
		run.Release()
		return nil
	}
	b.ops = append(b.ops, bufOp{chunk: uint32(len(b.runs)), vLen: runOp})
	b.runs = append(b.runs, run)
	b.bytes += run.Bytes()
	return nil
}

// Len is the number of recorded operations (a run and a range deletion
// count as one).
func (b *Buffer) Len() int { return len(b.ops) + len(b.ranges) }

// Bytes is the size of the recorded keys and values.
func (b *Buffer) Bytes() int { return b.bytes }

// bufKeep is how many chunks a reset Buffer keeps at least; it keeps as
// many as the checkpoint just committed used (the next one is likely of
// the same size: a job writing 60 MB a checkpoint allocated, zeroed and
// faulted in 60 MB of chunks every second), up to bufKeepMax. A large
// delta's memory is given back by the next smaller checkpoint.
const (
	bufKeep    = 4
	bufKeepMax = 256
)

// Reset empties the buffer, keeping the chunks it used (see bufKeep).
func (b *Buffer) Reset() {
	keep := min(max(bufKeep, b.cur+1), bufKeepMax)
	if len(b.chunks) > keep {
		clear(b.chunks[keep:])
		b.chunks = b.chunks[:keep]
	}
	if cap(b.ops) > bufKeep*bufChunk/16 && cap(b.ops) > 2*len(b.ops) {
		b.ops = nil // twice what this checkpoint used
	}
	b.ops = b.ops[:0]
	for i := range b.chunks {
		b.chunks[i] = b.chunks[i][:0]
	}
	b.cur = 0
	b.bytes = 0
	for i, r := range b.runs {
		r.Release()
		b.runs[i] = nil
	}
	b.runs = b.runs[:0]
	clear(b.ranges)
	b.ranges = b.ranges[:0]
}

// at returns op i: its key, its value (nil for a Delete) and whether it
// is a Delete, aliasing the buffer's chunks. Op i is not a run.
func (b *Buffer) at(i int) (k, v []byte, del bool) {
	op := b.ops[i]
	c := b.chunks[op.chunk&^mergeOp]
	ke := op.off + op.kLen
	k = c[op.off:ke:ke]
	if op.vLen == delOp {
		return k, nil, true
	}
	ve := ke + op.vLen
	return k, c[ke:ve:ve], false
}

// Scoped returns a StateWriter that prepends prefix to every key before
// handing it to w (e.g. an operator writing under KeyedPrefix).
func Scoped(w StateWriter, prefix []byte) StateWriter {
	s := &scoped{w: w, prefix: append([]byte(nil), prefix...)}
	if _, ok := w.(MergeWriter); ok {
		return scopedMerge{s}
	}
	return s
}

type scoped struct {
	w      StateWriter
	prefix []byte
	key    []byte
}

func (s *scoped) Put(key, value []byte) error {
	s.key = append(append(s.key[:0], s.prefix...), key...)
	return s.w.Put(s.key, value)
}

func (s *scoped) Delete(key []byte) error {
	s.key = append(append(s.key[:0], s.prefix...), key...)
	return s.w.Delete(s.key)
}

// scopedMerge is scoped over a MergeWriter: Scoped keeps merges when w
// takes them.
type scopedMerge struct{ *scoped }

func (s scopedMerge) Merge(key, value []byte) error {
	s.key = append(append(s.key[:0], s.prefix...), key...)
	return s.w.(MergeWriter).Merge(s.key, value)
}

// merge reports whether op i (not a run) is a Merge.
func (b *Buffer) merge(i int) bool { return b.ops[i].chunk&mergeOp != 0 }

var errMergeTwice = fmt.Errorf("checkpoint: a key merged and also written otherwise in one checkpoint")
