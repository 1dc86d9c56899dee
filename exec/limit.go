package exec

import (
	"encoding/binary"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/planner"
)

func init() {
	RegisterOperator(func(s *planner.LimitOp, ctx *OpContext) (Operator, error) { return newLimit(s, ctx) })
}

// limitOp keeps rows Offset+1 .. Offset+Count of an append-only input
// (LIMIT n OFFSET m without ORDER BY) at parallelism 1. Its state is the
// number of rows seen, kept in key group 0 of a KV so checkpoints and
// restores go through exec/state.
type limitOp struct {
	Stateless
	spec *planner.LimitOp
	kv   *state.KV
	kgs  KeyGroups
	seen int64
	key  []byte
	buf  [8]byte
}

func newLimit(s *planner.LimitOp, ctx *OpContext) (*limitOp, error) {
	kv, err := state.NewKV(state.Options{OpID: s.ID, MaxParallelism: max(ctx.KeyGroups.MaxParallelism, 1), Checkpointing: ctx.Checkpointing})
	if err != nil {
		return nil, err
	}
	return &limitOp{spec: s, kv: kv, kgs: ctx.KeyGroups, key: state.Key(nil, []byte("seen"), nil)}, nil
}

func (l *limitOp) ProcessBatch(_ int, b Batch, out Collector) error {
	n := b.Rec.NumRows()
	from, to := l.seen, l.seen+n
	l.seen = to
	binary.BigEndian.PutUint64(l.buf[:], uint64(l.seen))
	l.kv.Put(0, l.key, l.buf[:])
	lo := max(l.spec.Offset, from) - from
	hi := min(l.spec.Offset+l.spec.Count, to) - from
	switch {
	case lo >= hi:
		b.Rec.Release()
		return nil
	case lo == 0 && hi == n:
		return out.Collect(b)
	}
	rec := b.Rec.NewSlice(lo, hi)
	b.Rec.Release()
	var ops []RowKind
	if b.Ops != nil {
		ops = b.Ops[lo:hi]
	}
	return out.Collect(Batch{Rec: rec, Ops: ops})
}

func (l *limitOp) Snapshot(id int64, w checkpoint.StateWriter) error { return l.kv.Snapshot(id, w) }
func (l *limitOp) NotifyComplete(id int64) error                     { l.kv.Complete(id); return nil }
func (l *limitOp) NotifyAborted(id int64) error                      { l.kv.Abort(id); return nil }
func (l *limitOp) Restore(r checkpoint.StateReader) error {
	if err := l.kv.Restore(r, l.kgs.Start, l.kgs.End); err != nil {
		return err
	}
	if v, ok := l.kv.Get(0, l.key); ok && len(v) == 8 {
		l.seen = int64(binary.BigEndian.Uint64(v))
	}
	return nil
}

func (l *limitOp) Close() error { return l.kv.Close() }
