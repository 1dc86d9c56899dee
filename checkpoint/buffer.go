package checkpoint

// Buffer collects one subtask's state writes for one checkpoint. It
// implements StateWriter. Keys and values are copied into one arena, so a
// Put does not allocate per call once the buffer has grown. Not safe for
// concurrent use. Commit applies buffers in order and resets them.
type Buffer struct {
	ops  []bufOp
	data []byte
}

type bufOp struct {
	del        bool
	kOff, kLen int
	vOff, vLen int
}

// NewBuffer returns an empty buffer.
func NewBuffer() *Buffer { return &Buffer{} }

// Put records key = value (both copied).
func (b *Buffer) Put(key, value []byte) error {
	op := bufOp{kOff: len(b.data), kLen: len(key)}
	b.data = append(b.data, key...)
	op.vOff, op.vLen = len(b.data), len(value)
	b.data = append(b.data, value...)
	b.ops = append(b.ops, op)
	return nil
}

// Delete records the removal of key (copied).
func (b *Buffer) Delete(key []byte) error {
	op := bufOp{del: true, kOff: len(b.data), kLen: len(key)}
	b.data = append(b.data, key...)
	b.ops = append(b.ops, op)
	return nil
}

// Len is the number of recorded operations.
func (b *Buffer) Len() int { return len(b.ops) }

// Bytes is the size of the recorded keys and values.
func (b *Buffer) Bytes() int { return len(b.data) }

// Reset empties the buffer, keeping its memory.
func (b *Buffer) Reset() {
	b.ops = b.ops[:0]
	b.data = b.data[:0]
}

func (b *Buffer) each(fn func(del bool, k, v []byte) error) error {
	for _, op := range b.ops {
		k := b.data[op.kOff : op.kOff+op.kLen : op.kOff+op.kLen]
		var v []byte
		if !op.del {
			v = b.data[op.vOff : op.vOff+op.vLen : op.vOff+op.vLen]
		}
		if err := fn(op.del, k, v); err != nil {
			return err
		}
	}
	return nil
}

// Scoped returns a StateWriter that prepends prefix to every key before
// handing it to w (e.g. an operator writing under KeyedPrefix).
func Scoped(w StateWriter, prefix []byte) StateWriter {
	return &scoped{w: w, prefix: append([]byte(nil), prefix...)}
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
