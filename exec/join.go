package exec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/planner"
)

func init() {
	RegisterOperator(func(s *planner.JoinOp, ctx *OpContext) (Operator, error) { return newJoin(s, ctx) })
}

// streamJoin is the regular (unbounded) streaming join, Flink's
// StreamingJoinOperator, and, for SemiJoin/AntiJoin, its
// StreamingSemiAntiJoinOperator (see semijoin.go).
//
// State: one KV for both sides, namespaced by side ("L", "R"); the layout of
// a side follows Flink's JoinInputSideSpec:
//
//	join key contains a unique key: Key(side, joinKey)              -> value
//	unique key:                     Key(side, joinKey, uniqueKey)   -> value
//	no unique key:                  Key(side, joinKey, encodedRow, seq) -> value
//	no unique key, insert-only:     Key(side, joinKey, seq)         -> value
//
// value = format byte, varint count (multiplicity of the row; 1 unless no
// unique key), varint numOfAssociations (matches of the row on the other
// side; kept for outer sides only, 0 otherwise), then the encoded row (not
// for the no-unique-key layout, whose row is the map key). Rows are encoded
// as encodeKeyColumns encodes keys (all columns).
//
// Insert-only, no unique key (a side that never retracts, as the bids of
// Nexmark q7 and q20): the row is in the value and the key is short (side,
// join key, sequence number), so the ordered index and the snapshot's sort
// compare a few bytes, not whole rows. Such a side that keeps no
// association counts is held by a state.Rows instead of the KV (without a
// TTL; docs/state.md "Insert-only join sides"): rows appended to
// chunks, chained by join key, a snapshot writing a range of them, the same
// keys and values as the KV's. Should a retraction reach it after all, its
// rows move into the KV (toKV). A retraction (none is expected)
// still finds the row: a scan of the join key's entries. Candidates of one
// join key are put in row order, as the key order of the other layout
// gives them, so that the output does not depend on sequence numbers
// (which differ with the parallelism). Either layout's entries are read by
// both: a row in the value wins, else the row is the key's row frame.
//
// No unique key: Flink keeps row -> count, so every insert reads the count
// first (a point read that misses memory once the state is larger than
// it). Here every added copy of a row is an entry of its own, keyed by the
// row and a sequence number never used before for the operator's keys (a
// uvarint frame), with count 1: an insert is a blind write (KV.PutNew). A
// retraction removes one entry of its row (a scan of the row's prefix).
// Sequence numbers are unique per join key: a join key lives in one key
// group, so in one subtask, and a subtask restored from a checkpoint
// continues after the highest number in the key groups it restored
// (seqReader). Entries without the sequence frame (whose count may exceed
// 1) are read and retracted as well: the key is a prefix-free row frame
// followed by anything.
//
// A batch of one side is processed in three passes: (1) encode the join
// keys, rows and key groups of the whole batch and look up, once per
// distinct join key, the other side's rows (the candidates: the other
// side's rows do not change while a batch of this side is processed, only
// their association counts do); the candidates are decoded column-wise
// into one Arrow record. (2) The residual condition is evaluated once over
// all (input row, candidate) pairs, a record built with Take. (3) Each
// input row, in order, applies Flink's per-record logic (row kinds,
// association counts, own state); what is emitted is a list of
// (kind, input row, candidate) whose columns are gathered with Take at
// the end. Changed association counts of candidates are written back once
// per batch.
type streamJoin struct {
	spec *planner.JoinOp
	ctx  *OpContext
	mem  memory.Allocator
	maxP int
	kv   *state.KV

	sides [2]*joinSideState
	// mapped: the rows the sides had mapped at the last reportMapped
	mapped int64
	// nullSafe[k]: key pair k matches NULL with NULL
	nullSafe []bool
	residual expr.Evaluator
	pairSch  *arrow.Schema // left columns ++ right columns (residual input)
	outSch   *arrow.Schema
	semi     bool // SemiJoin or AntiJoin
	anti     bool
	// maxPairs bounds the candidate pairs of one pass over a batch
	maxPairs int

	// per-batch scratch, reused
	jkBuf, rowBuf, ukBuf    []byte
	jkOffs, rowOffs, ukOffs []int
	hashes                  []uint64 // the batch's key hashes (read-only: keyHashes)
	keyHashBuf              []uint64
	nullKey                 []bool
	rowGroup                []int32
	groups                  map[uint64]int32 // key hash -> first group with it
	groupNext, groupRow     []int32          // next group of the same hash; a row with the group's key
	groupLo, groupHi        []int32
	cands                   []joinCand
	arena                   []byte
	candRows                [][]byte
	pairOff                 []int32
	pairIn, pairCand        []int32
	pass                    []bool
	outKind                 []RowKind
	outIn, outCand          []int32
	kbuf, vbuf              []byte
	// the prefix hashes of the batch's rows joinRows adds to a side in
	// state.Rows (ownHash: set during joinRows only) and the prefix
	// being hashed
	hashBuf, ownHash []uint64
	pbuf             []byte
	cur              []int
	// seq: the next sequence number of the no-unique-key layout; seqBuf
	// its encoding, reused
	seq    uint64
	seqBuf []byte
	// retractOwn's scan result, reused
	delKey, rowScratch []byte
	// err: a failure found in the middle of a batch (a Rows side's
	// committed read, a retraction on a Rows side); process returns it
	err error
}

// joinSideState is the static description of one side.
type joinSideState struct {
	spec   planner.JoinSide
	ns     []byte
	outer  bool // keeps association counts (padded side, or the left of semi/anti)
	layout int
	all    []int // every column: the row encoding
	schema *arrow.Schema
	bld    []array.Builder // decoding of candidate rows, reused
	// rows keeps the side's state instead of the KV: an insert-only side
	// without a unique key that keeps no association counts
	// (layoutAppend, state.Rows)
	rows *state.Rows
}

const (
	layoutValue    = iota // join key contains a unique key: one row per join key
	layoutUnique          // map unique key -> row
	layoutMultiset        // map row -> count
	layoutAppend          // insert-only, no unique key: map seq -> row
)

// joinCand is a row of the other side matching some join key of the
// batch; key and row are arena offsets.
type joinCand struct {
	keyOff, keyLen int
	rowOff, rowLen int
	count, assoc   int64
	kg             int
	dirty          bool
	// rowInValue: the stored value holds the row (a write-back keeps it)
	rowInValue bool
}

const joinStateV1 = 1

func newJoin(s *planner.JoinOp, ctx *OpContext) (*streamJoin, error) {
	if len(s.Left.Keys) != len(s.Right.Keys) {
		return nil, fmt.Errorf("join %s: %d left keys but %d right keys", s.ID, len(s.Left.Keys), len(s.Right.Keys))
	}
	j := &streamJoin{spec: s, ctx: ctx, mem: ctx.Mem, maxP: max(ctx.KeyGroups.MaxParallelism, 1), groups: map[uint64]int32{}, maxPairs: 1 << 16, seq: 1}
	if j.mem == nil {
		j.mem = memory.DefaultAllocator
	}
	j.semi = s.Type == planner.SemiJoin || s.Type == planner.AntiJoin
	j.anti = s.Type == planner.AntiJoin
	for i, side := range []planner.JoinSide{s.Left, s.Right} {
		st := &joinSideState{spec: side, ns: []byte{"LR"[i]}, schema: side.Schema.Arrow()}
		switch {
		case side.KeyContainsUnique():
			st.layout = layoutValue
		case side.UniqueKey != nil:
			st.layout = layoutUnique
		case side.Mode == planner.InsertOnly:
			st.layout = layoutAppend
		default:
			st.layout = layoutMultiset
		}
		for c, col := range side.Schema {
			if err := joinableType(col.Type); err != nil {
				return nil, fmt.Errorf("join %s: %s input column %s: %w", s.ID, [2]string{"left", "right"}[i], col.Name, err)
			}
			st.all = append(st.all, c)
			st.bld = append(st.bld, array.NewBuilder(j.mem, col.Type.ArrowType()))
		}
		j.sides[i] = st
	}
	j.sides[0].outer = s.Type.PadsRight() || j.semi
	j.sides[1].outer = s.Type.PadsLeft()
	j.nullSafe = make([]bool, len(s.Left.Keys))
	copy(j.nullSafe, s.NullSafe)

	pairFields := append(append([]arrow.Field{}, j.sides[0].schema.Fields()...), j.sides[1].schema.Fields()...)
	for i := range pairFields {
		pairFields[i].Name = fmt.Sprintf("$%d", i)
		pairFields[i].Nullable = true
	}
	j.pairSch = arrow.NewSchema(pairFields, nil)
	j.outSch = s.Out.Arrow()
	want := len(pairFields)
	if j.semi {
		want = len(s.Left.Schema)
	}
	if j.outSch.NumFields() != want {
		return nil, fmt.Errorf("join %s: output has %d columns, the inputs give %d", s.ID, j.outSch.NumFields(), want)
	}
	for i := 0; i < want; i++ {
		if !arrow.TypeEqual(j.outSch.Field(i).Type, pairFields[i].Type) {
			return nil, fmt.Errorf("join %s: output column %s has type %s, its input has %s", s.ID, s.Out[i].Name, j.outSch.Field(i).Type, pairFields[i].Type)
		}
	}
	if s.Residual != nil {
		var opts expr.Options
		if ctx.Clock != nil {
			opts.Now = ctx.Clock.Now
		}
		ev, err := expr.CompileWith(s.Residual, opts)
		if err != nil {
			return nil, fmt.Errorf("join %s: condition %s: %w", s.ID, s.Residual, err)
		}
		j.residual = ev
	}
	kv, err := state.NewKV(ctx.KVOptions(j.maxP))
	if err != nil {
		return nil, err
	}
	j.kv = kv
	if o := ctx.KVOptions(j.maxP); state.RowsFit(o) {
		for _, side := range j.sides {
			if side.layout == layoutAppend && !side.outer {
				if side.rows, err = state.NewRows(o); err != nil {
					kv.Close()
					return nil, err
				}
			}
		}
	}
	return j, nil
}

// joinableType reports whether rows with a column of type t can be kept
// in join state.
func joinableType(t catalog.Type) error {
	switch t.Kind {
	case catalog.KindRow, catalog.KindNull:
		return fmt.Errorf("type %s is not supported in a regular join yet", t)
	}
	return nil
}

func (j *streamJoin) Open(*OpContext) error                          { return nil }
func (j *streamJoin) ProcessWatermark(wm int64, out Collector) error { return out.EmitWatermark(wm) }
func (j *streamJoin) Finish(Collector) error                         { return nil }
func (j *streamJoin) Close() error {
	var err error
	// A tiered KV (state.backend.type) removes its spill directory.
	if j.kv != nil {
		err = j.kv.Close()
	}
	for _, s := range j.sides {
		if s == nil {
			continue
		}
		if s.rows != nil {
			if rerr := s.rows.Close(); err == nil {
				err = rerr
			}
		}
		for _, b := range s.bld {
			b.Release()
		}
		s.bld = nil
	}
	return err
}

// Snapshot writes the KV's changes, then each Rows side's new rows (a
// sorted run of their own: a checkpoint buffer merges runs).
func (j *streamJoin) Snapshot(id int64, w checkpoint.StateWriter) error {
	if err := j.kv.Snapshot(id, w); err != nil {
		return err
	}
	err := j.eachRows(func(r *state.Rows) error { return r.Snapshot(id, w) })
	j.reportMapped()
	return err
}

// reportMapped adds the rows the sides mapped since the last report to
// the job's Metrics.RowsMapped.
func (j *streamJoin) reportMapped() {
	var n int64
	for _, s := range j.sides {
		if s != nil && s.rows != nil {
			n += s.rows.Stats().Mapped
		}
	}
	if n > j.mapped && j.ctx.Metrics != nil {
		j.ctx.Metrics.RowsMapped.Add(n - j.mapped)
	}
	j.mapped = max(j.mapped, n)
}

func (j *streamJoin) NotifyComplete(id int64) error {
	j.kv.Complete(id)
	return j.eachRows(func(r *state.Rows) error { r.Complete(id); return nil })
}

func (j *streamJoin) NotifyAborted(id int64) error {
	j.kv.Abort(id)
	return j.eachRows(func(r *state.Rows) error { r.Abort(id); return nil })
}

// HoldInput implements InputHolder: a Rows side holds more rows no
// completed checkpoint has than its budget allows (Rows.HoldsInput).
func (j *streamJoin) HoldInput() int64 {
	for _, s := range j.sides {
		if s.rows != nil {
			if id := s.rows.HoldsInput(); id != 0 {
				return id
			}
		}
	}
	return 0
}

// eachRows calls fn with the Rows of each side that has one, up to the
// first error.
func (j *streamJoin) eachRows(fn func(r *state.Rows) error) error {
	for _, s := range j.sides {
		if s.rows != nil {
			if err := fn(s.rows); err != nil {
				return err
			}
		}
	}
	return nil
}

// Restore loads both sides' rows of the subtask's key groups: a Rows
// side's from its namespace, the KV's from the rest.
func (j *streamJoin) Restore(r checkpoint.StateReader) error {
	kg := j.ctx.KeyGroups
	if kg.End <= kg.Start {
		kg.Start, kg.End = 0, j.maxP
	}
	sr := seqReader{r, j}
	var skip [][]byte
	for _, s := range j.sides {
		if s.rows != nil {
			if err := s.rows.Restore(sr, s.ns, kg.Start, kg.End); err != nil {
				return err
			}
			skip = append(skip, state.NamespaceFrame(s.ns))
		}
	}
	if len(skip) == 0 {
		return j.kv.Restore(sr, kg.Start, kg.End)
	}
	return j.kv.Restore(skipReader{sr, skip}, kg.Start, kg.End)
}

// skipReader passes a checkpoint's keys on except those whose framed key
// (after the scanned key group's prefix) starts with one of skip.
type skipReader struct {
	r    checkpoint.StateReader
	skip [][]byte
}

func (s skipReader) Scan(prefix []byte, fn func(key, value []byte) error) error {
	return s.r.Scan(prefix, func(key, value []byte) error {
		for _, p := range s.skip {
			if bytes.HasPrefix(key[len(prefix):], p) {
				return nil
			}
		}
		return fn(key, value)
	})
}

// seqReader passes a checkpoint's keys through and advances the join's
// next sequence number past every one it sees.
type seqReader struct {
	r checkpoint.StateReader
	j *streamJoin
}

func (s seqReader) Scan(prefix []byte, fn func(key, value []byte) error) error {
	return s.r.Scan(prefix, func(key, value []byte) error {
		if len(key) >= len(prefix) {
			if q, ok := s.j.keySeq(key[len(prefix):]); ok && q >= s.j.seq {
				s.j.seq = q + 1
			}
		}
		return fn(key, value)
	})
}

// keySeq is the sequence number of a framed state key of a side that
// keeps sequence-numbered rows (false: the key is of another side or has
// no sequence frame).
func (j *streamJoin) keySeq(k []byte) (uint64, bool) {
	n, w := binary.Uvarint(k)
	if w <= 0 || n != 1 || len(k) < w+1 {
		return 0, false
	}
	for _, s := range j.sides {
		if s.ns[0] == k[w] {
			if s.layout == layoutAppend || s.layout == layoutMultiset {
				return joinKeySeq(k)
			}
			return 0, false
		}
	}
	return 0, false
}

// joinKeySeq is the sequence number of a framed no-unique-key state key:
// the last of four frames (namespace, join key, row, seq) or of three
// (namespace, join key, seq: an insert-only side) (false: the key has no
// sequence frame).
func joinKeySeq(k []byte) (uint64, bool) {
	var frames [4][]byte
	nf := 0
	for len(k) > 0 {
		n, w := binary.Uvarint(k)
		if w <= 0 || n > uint64(len(k)-w) || nf == len(frames) {
			return 0, false
		}
		frames[nf] = k[:w+int(n)]
		nf++
		k = k[w+int(n):]
	}
	if nf < 3 {
		return 0, false
	}
	k = frames[nf-1]
	n, w := binary.Uvarint(k)
	if w <= 0 || n != uint64(len(k)-w) {
		return 0, false
	}
	q, qw := binary.Uvarint(k[w:])
	if qw <= 0 || qw != int(n) {
		return 0, false
	}
	return q, true
}

// ProcessBatch joins a batch of side input (0 left, 1 right) against the
// other side's state.
func (j *streamJoin) ProcessBatch(input int, b Batch, out Collector) error {
	defer b.Rec.Release()
	n := b.Rows()
	if n == 0 {
		return nil
	}
	if input != 0 && input != 1 {
		return fmt.Errorf("join %s: no input %d", j.spec.ID, input)
	}
	rec := b.Rec
	if err := j.checkInput(input, rec); err != nil {
		return err
	}
	if j.ctx.StateTTL > 0 {
		var clock Clock = wallClock{}
		if j.ctx.Clock != nil {
			clock = j.ctx.Clock
		}
		j.kv.SetNow(clock.Now().UnixMilli())
		// Incremental cleanup, as the aggregation's: expired rows whose
		// key no probe reads again still leave the state (and the next
		// checkpoint). Flink emits nothing for expired join state.
		if err := j.kv.Sweep(2*n + 8); err != nil {
			return fmt.Errorf("join %s: state TTL cleanup: %w", j.spec.ID, err)
		}
	}
	return j.process(input, b, out)
}

// process joins batch b (not owned). A batch whose rows have more than
// maxPairs candidates in all is processed in halves (in order), bounding
// the pair and output records of one pass.
func (j *streamJoin) process(input int, b Batch, out Collector) error {
	in, other := j.sides[input], j.sides[1-input]
	rec := b.Rec
	n := b.Rows()
	j.prepare(in, b)
	j.lookup(in, other, n)
	if n > 1 {
		pairs := 0
		for _, g := range j.rowGroup {
			if g >= 0 {
				pairs += int(j.groupHi[g] - j.groupLo[g])
			}
		}
		if pairs > j.maxPairs {
			for _, r := range [2][2]int{{0, n / 2}, {n / 2, n}} {
				part := Batch{Rec: rec.NewSlice(int64(r[0]), int64(r[1]))}
				if b.Ops != nil {
					part.Ops = b.Ops[r[0]:r[1]]
				}
				err := j.process(input, part, out)
				part.Rec.Release()
				if err != nil {
					return err
				}
			}
			return nil
		}
	}
	candRec := j.decodeCands(other)
	defer candRec.Release()
	if err := j.evalResidual(input, rec, candRec, n); err != nil {
		return err
	}
	j.outKind, j.outIn, j.outCand = j.outKind[:0], j.outIn[:0], j.outCand[:0]
	if j.semi {
		if input == 0 {
			j.semiLeft(in, b, n)
		} else {
			j.semiRight(in, b, n)
		}
	} else {
		j.joinRows(input, in, other, b, n)
	}
	j.writeBack(other)
	if err := j.stateErr(); err != nil {
		return err
	}
	return j.emit(input, rec, candRec, out)
}

// stateErr is the first error the batch's state work found.
func (j *streamJoin) stateErr() error {
	if j.err != nil {
		return j.err
	}
	for _, s := range j.sides {
		if s.rows != nil && s.rows.Err() != nil {
			return fmt.Errorf("join %s: %w", j.spec.ID, s.rows.Err())
		}
	}
	return nil
}

// checkInput verifies that a batch has the columns of its side (one check
// per column and batch), so that a plan mismatch is an error, not a panic
// of the record assembly.
func (j *streamJoin) checkInput(input int, rec arrow.Record) error {
	sch := j.sides[input].schema
	if int(rec.NumCols()) != sch.NumFields() {
		return fmt.Errorf("join %s: %s input has %d columns, the plan says %d", j.spec.ID, [2]string{"left", "right"}[input], rec.NumCols(), sch.NumFields())
	}
	for c := 0; c < sch.NumFields(); c++ {
		if dt := rec.Column(c).DataType(); !arrow.TypeEqual(dt, sch.Field(c).Type) {
			return fmt.Errorf("join %s: %s input column %s has type %s, the plan says %s", j.spec.ID, [2]string{"left", "right"}[input], sch.Field(c).Name, dt, sch.Field(c).Type)
		}
	}
	return nil
}

// prepare encodes the batch's join keys, rows, unique keys and key groups
// and marks the rows whose key cannot match (a NULL in a key pair that is
// not null-safe).
func (j *streamJoin) prepare(in *joinSideState, b Batch) {
	rec := b.Rec
	n := int(rec.NumRows())
	j.jkBuf, j.jkOffs = encodeKeyColumns(rec, in.spec.Keys, j.jkBuf, j.jkOffs)
	j.rowBuf, j.rowOffs = encodeKeyColumns(rec, in.all, j.rowBuf, j.rowOffs)
	if in.layout == layoutUnique {
		j.ukBuf, j.ukOffs = encodeKeyColumns(rec, in.spec.UniqueKey, j.ukBuf, j.ukOffs)
	}
	j.hashes = keyHashes(b, in.spec.Keys, &j.keyHashBuf)
	if cap(j.nullKey) < n {
		j.nullKey = make([]bool, n)
	}
	j.nullKey = j.nullKey[:n]
	clear(j.nullKey)
	for k, c := range in.spec.Keys {
		if j.nullSafe[k] {
			continue
		}
		col := rec.Column(c)
		if col.NullN() == 0 {
			continue
		}
		for i := 0; i < n; i++ {
			if col.IsNull(i) {
				j.nullKey[i] = true
			}
		}
	}
}

func (j *streamJoin) jk(i int) []byte  { return j.jkBuf[j.jkOffs[i]:j.jkOffs[i+1]] }
func (j *streamJoin) row(i int) []byte { return j.rowBuf[j.rowOffs[i]:j.rowOffs[i+1]] }
func (j *streamJoin) kg(i int) int     { return keyGroup(j.hashes[i], j.maxP) }

// lookup finds, once per distinct join key of the batch, the other side's
// live rows with that key.
func (j *streamJoin) lookup(in, other *joinSideState, n int) {
	clear(j.groups)
	j.groupLo, j.groupHi = j.groupLo[:0], j.groupHi[:0]
	j.groupNext, j.groupRow = j.groupNext[:0], j.groupRow[:0]
	j.cands, j.arena = j.cands[:0], j.arena[:0]
	if cap(j.rowGroup) < n {
		j.rowGroup = make([]int32, n)
	}
	j.rowGroup = j.rowGroup[:n]
	for i := 0; i < n; i++ {
		if j.nullKey[i] {
			j.rowGroup[i] = -1
			continue
		}
		k := j.jk(i)
		h := j.hashes[i]
		head, ok := j.groups[h]
		g := head
		for ok && g >= 0 && !bytes.Equal(j.jk(int(j.groupRow[g])), k) {
			g = j.groupNext[g]
		}
		if ok && g >= 0 {
			j.rowGroup[i] = g
			continue
		}
		g = int32(len(j.groupLo))
		if ok {
			j.groupNext = append(j.groupNext, head)
		} else {
			j.groupNext = append(j.groupNext, -1)
		}
		j.groups[h] = g
		j.groupRow = append(j.groupRow, int32(i))
		j.rowGroup[i] = g
		j.groupLo = append(j.groupLo, int32(len(j.cands)))
		j.scanSide(other, k, j.kg(i))
		j.groupHi = append(j.groupHi, int32(len(j.cands)))
	}
}

// scanSide appends the rows of side s with join key k to the candidates.
func (j *streamJoin) scanSide(s *joinSideState, k []byte, kg int) {
	j.kbuf = state.Key(j.kbuf, s.ns, k)
	if s.layout == layoutValue {
		if v, ok := j.kv.Get(kg, j.kbuf); ok {
			j.addCand(s, j.kbuf, v, kg, len(j.kbuf))
		}
		return
	}
	plen := len(j.kbuf)
	// the prefix stays in kbuf: Scan's keys are fresh
	lo := len(j.cands)
	scan := j.kv.Scan
	if s.rows != nil {
		scan = s.rows.Scan // (an error stays in s.rows: process returns it)
	}
	_ = scan(kg, j.kbuf[:plen], func(key, v []byte) error {
		j.addCand(s, key, v, kg, plen)
		return nil
	})
	if s.layout == layoutAppend && len(j.cands)-lo > 1 {
		c := j.cands[lo:]
		slices.SortStableFunc(c, func(a, b joinCand) int {
			return bytes.Compare(j.arena[a.rowOff:a.rowOff+a.rowLen], j.arena[b.rowOff:b.rowOff+b.rowLen])
		})
	}
}

// addCand copies a stored row into the candidates (plen: length of the
// framed namespace and join key, after which the map key follows).
func (j *streamJoin) addCand(s *joinSideState, key, v []byte, kg, plen int) {
	c := joinCand{kg: kg}
	cnt, assoc, row, ok := parseJoinValue(v)
	if !ok {
		return // corrupt values never match (cannot happen: we wrote them)
	}
	c.rowInValue = len(row) > 0
	if (s.layout == layoutMultiset || s.layout == layoutAppend) && len(row) == 0 {
		// the row is the key's row frame (an entry of the multiset layout)
		m, w := binary.Uvarint(key[plen:])
		if w <= 0 || int(m) > len(key)-plen-w {
			return
		}
		row = key[plen+w : plen+w+int(m)]
	}
	c.count, c.assoc = cnt, assoc
	c.keyOff = len(j.arena)
	j.arena = append(j.arena, key...)
	c.keyLen = len(key)
	c.rowOff = len(j.arena)
	j.arena = append(j.arena, row...)
	c.rowLen = len(row)
	j.cands = append(j.cands, c)
}

func parseJoinValue(v []byte) (count, assoc int64, row []byte, ok bool) {
	if len(v) == 0 || v[0] != joinStateV1 {
		return 0, 0, nil, false
	}
	count, w := binary.Varint(v[1:])
	if w <= 0 {
		return 0, 0, nil, false
	}
	p := 1 + w
	assoc, w = binary.Varint(v[p:])
	if w <= 0 {
		return 0, 0, nil, false
	}
	return count, assoc, v[p+w:], true
}

func appendJoinValue(dst []byte, count, assoc int64, row []byte) []byte {
	dst = append(dst[:0], joinStateV1)
	dst = binary.AppendVarint(dst, count)
	dst = binary.AppendVarint(dst, assoc)
	return append(dst, row...)
}

// decodeCands decodes the candidates' rows column-wise into a record of
// side s's schema.
func (j *streamJoin) decodeCands(s *joinSideState) arrow.Record {
	rows := j.candRows[:0]
	for _, c := range j.cands {
		rows = append(rows, j.arena[c.rowOff:c.rowOff+c.rowLen])
	}
	j.candRows = rows
	if cap(j.cur) < len(rows) {
		j.cur = make([]int, len(rows))
	}
	cur := j.cur[:len(rows)]
	clear(cur)
	cols := make([]arrow.Array, len(s.bld))
	for c, b := range s.bld {
		decodeColumn(b, rows, cur)
		cols[c] = b.NewArray()
	}
	rec := expr.NewRecord(s.schema, cols, int64(len(rows)))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// evalResidual evaluates the residual condition over every (input row,
// candidate) pair of the batch at once; pass[pairOff[i]+k] tells whether
// row i joins the k-th candidate of its join key.
func (j *streamJoin) evalResidual(input int, rec, candRec arrow.Record, n int) error {
	if cap(j.pairOff) < n+1 {
		j.pairOff = make([]int32, n+1)
	}
	j.pairOff = j.pairOff[:n+1]
	pi, pc := j.pairIn[:0], j.pairCand[:0]
	for i := 0; i < n; i++ {
		j.pairOff[i] = int32(len(pi))
		if g := j.rowGroup[i]; g >= 0 {
			for c := j.groupLo[g]; c < j.groupHi[g]; c++ {
				pi = append(pi, int32(i))
				pc = append(pc, c)
			}
		}
	}
	j.pairOff[n] = int32(len(pi))
	j.pairIn, j.pairCand = pi, pc
	np := len(pi)
	if cap(j.pass) < np {
		j.pass = make([]bool, np)
	}
	j.pass = j.pass[:np]
	if j.residual == nil || np == 0 {
		for i := range j.pass {
			j.pass[i] = true
		}
		return nil
	}
	inPart := expr.TakeRecord(rec, pi, j.mem)
	defer inPart.Release()
	candPart := expr.TakeRecord(candRec, pc, j.mem)
	defer candPart.Release()
	l, r := inPart, candPart
	if input == 1 {
		l, r = candPart, inPart
	}
	cols := make([]arrow.Array, 0, j.pairSch.NumFields())
	cols = append(cols, l.Columns()...)
	cols = append(cols, r.Columns()...)
	pairs := expr.NewRecord(j.pairSch, cols, int64(np))
	defer pairs.Release()
	m, err := j.residual.Eval(pairs, j.mem)
	if err != nil {
		return fmt.Errorf("join %s: condition %s: %w", j.spec.ID, j.spec.Residual, err)
	}
	defer m.Release()
	mask, ok := m.(*array.Boolean)
	if !ok {
		return fmt.Errorf("join %s: condition %s is not BOOLEAN", j.spec.ID, j.spec.Residual)
	}
	for i := range j.pass {
		j.pass[i] = mask.IsValid(i) && mask.Value(i)
	}
	return nil
}

// out appends one output row: kind, input row (-1: NULLs) and candidate
// (-1: NULLs).
func (j *streamJoin) out(k RowKind, in, cand int32) {
	j.outKind = append(j.outKind, k)
	j.outIn = append(j.outIn, in)
	j.outCand = append(j.outCand, cand)
}

// rowsAhead: joinRows prefetches the index slot of the row this many rows
// on (state.Rows.Prefetch), so that its cache miss overlaps the work on
// the rows before it.
const rowsAhead = 8

// prefixHashes sets j.ownHash to the prefix hash of every row of the
// batch (state.PrefixHash of its namespace and join key) when side s
// keeps its rows in state.Rows, and returns it (nil otherwise).
func (j *streamJoin) prefixHashes(s *joinSideState, n int) []uint64 {
	if s.rows == nil || s.layout != layoutAppend {
		return nil
	}
	j.hashBuf = slices.Grow(j.hashBuf[:0], n)[:n]
	for i := range j.hashBuf {
		if j.nullKey[i] {
			j.hashBuf[i] = 0
			continue
		}
		j.pbuf = state.Key(j.pbuf, s.ns, j.jk(i))
		j.hashBuf[i] = state.PrefixHash(j.pbuf)
	}
	j.ownHash = j.hashBuf
	return j.hashBuf
}

// joinRows applies Flink's StreamingJoinOperator.processElement to every
// row of the batch in order.
func (j *streamJoin) joinRows(input int, in, other *joinSideState, b Batch, n int) {
	inOuter, otherOuter := in.outer, other.outer
	inner := !inOuter && !otherOuter
	hs := j.prefixHashes(in, n)
	defer func() { j.ownHash = nil }()
	for i := 0; i < n; i++ {
		if hs != nil && i+rowsAhead < n {
			in.rows.Prefetch(hs[i+rowsAhead])
		}
		kind := b.Op(i)
		ii := int32(i)
		lo, hi := j.pairOff[i], j.pairOff[i+1]
		matched := int64(0)
		for p := lo; p < hi; p++ {
			if j.pass[p] {
				matched += j.cands[j.pairCand[p]].count
			}
		}
		if kind.IsAdd() {
			if inOuter && matched == 0 {
				j.out(Insert, ii, -1)
				j.addOwn(in, i, 0)
				continue
			}
			if !inOuter {
				j.addOwn(in, i, 0)
			}
			for p := lo; p < hi; p++ {
				if !j.pass[p] {
					continue
				}
				ci := j.pairCand[p]
				c := &j.cands[ci]
				for k := int64(0); k < c.count; k++ {
					if otherOuter && c.assoc == 0 {
						j.out(Delete, -1, ci)
					}
					if inner {
						j.out(kind, ii, ci)
					} else {
						j.out(Insert, ii, ci)
					}
				}
				if otherOuter {
					c.assoc++
					c.dirty = true
				}
			}
			if inOuter {
				j.addOwn(in, i, matched)
			}
			continue
		}
		// retraction
		j.retractOwn(in, i)
		if matched == 0 {
			if inOuter {
				j.out(Delete, ii, -1)
			}
			continue
		}
		for p := lo; p < hi; p++ {
			if !j.pass[p] {
				continue
			}
			ci := j.pairCand[p]
			c := &j.cands[ci]
			for k := int64(0); k < c.count; k++ {
				if inOuter {
					j.out(Delete, ii, ci)
				} else {
					j.out(kind, ii, ci)
				}
				if otherOuter && c.assoc == 1 {
					j.out(Insert, -1, ci)
				}
			}
			if otherOuter {
				c.assoc--
				c.dirty = true
			}
		}
	}
}

// addOwn adds row i of the batch to side s's state; assoc is its number
// of associations (outer sides).
func (j *streamJoin) addOwn(s *joinSideState, i int, assoc int64) {
	if j.nullKey[i] {
		return // never matches: Flink keeps it, but nothing ever reads it
	}
	if !s.outer {
		assoc = 0
	}
	switch s.layout {
	case layoutValue:
		j.kbuf = state.Key(j.kbuf, s.ns, j.jk(i))
		j.vbuf = appendJoinValue(j.vbuf, 1, assoc, j.row(i))
	case layoutUnique:
		j.kbuf = state.Key(j.kbuf, s.ns, j.jk(i), j.ukBuf[j.ukOffs[i]:j.ukOffs[i+1]])
		j.vbuf = appendJoinValue(j.vbuf, 1, assoc, j.row(i))
	case layoutAppend:
		// the row under a fresh sequence number: no read
		j.seqBuf = binary.AppendUvarint(j.seqBuf[:0], j.seq)
		j.seq++
		j.kbuf = state.Key(j.kbuf, s.ns, j.jk(i), j.seqBuf)
		j.vbuf = appendJoinValue(j.vbuf, 1, assoc, j.row(i))
		if s.rows != nil {
			plen := len(j.kbuf) - 1 - len(j.seqBuf)
			if j.ownHash != nil {
				s.rows.AddHashed(j.ownHash[i], j.kg(i), j.kbuf, plen, j.vbuf)
			} else {
				s.rows.Add(j.kg(i), j.kbuf, plen, j.vbuf)
			}
			return
		}
		j.kv.PutNew(j.kg(i), j.kbuf, j.vbuf)
		return
	default:
		// a copy of its own under a fresh sequence number: no read
		j.seqBuf = binary.AppendUvarint(j.seqBuf[:0], j.seq)
		j.seq++
		j.kbuf = state.Key(j.kbuf, s.ns, j.jk(i), j.row(i), j.seqBuf)
		j.vbuf = appendJoinValue(j.vbuf, 1, assoc, nil)
		j.kv.PutNew(j.kg(i), j.kbuf, j.vbuf)
		return
	}
	j.kv.Put(j.kg(i), j.kbuf, j.vbuf)
}

// retractOwn removes row i of the batch from side s's state (one copy).
func (j *streamJoin) retractOwn(s *joinSideState, i int) {
	if j.nullKey[i] {
		return
	}
	switch s.layout {
	case layoutValue:
		j.kv.Delete(j.kg(i), state.Key(j.kbuf, s.ns, j.jk(i)))
	case layoutUnique:
		j.kv.Delete(j.kg(i), state.Key(j.kbuf, s.ns, j.jk(i), j.ukBuf[j.ukOffs[i]:j.ukOffs[i+1]]))
	case layoutAppend:
		// (an insert-only side retracts nothing; should a row come, one
		// copy of it goes: from a KV; Rows never remove a row)
		if s.rows != nil && !j.toKV(s) {
			return
		}
		j.retractScan(s, i)
	default:
		// one copy of the row: the first entry with the row's prefix
		j.kbuf = state.Key(j.kbuf, s.ns, j.jk(i), j.row(i))
		found := false
		var c, a int64
		_ = j.kv.Scan(j.kg(i), j.kbuf, func(k, v []byte) error {
			j.delKey = append(j.delKey[:0], k...)
			c, a, _, found = parseJoinValue(v)
			return errStopScan
		})
		if !found {
			// an entry of the insert-only layout (a checkpoint of a plan
			// whose side was insert-only), or an absent (or expired) row:
			// ignored then, as Flink
			j.retractScan(s, i)
			return
		}
		if c > 1 { // an entry of a count-keeping checkpoint
			j.vbuf = appendJoinValue(j.vbuf, c-1, a, nil)
			j.kv.Put(j.kg(i), j.delKey, j.vbuf)
			return
		}
		j.kv.Delete(j.kg(i), j.delKey)
	}
}

// toKV moves side s's rows from its Rows into the KV, once a retraction
// reaches the side (planned insert-only: it never happens in a planned
// job), so that the KV can remove rows. They are written as changes (a
// Put: the committed state may hold them) and the next snapshot writes
// them again. False: it failed (j.err).
func (j *streamJoin) toKV(s *joinSideState) bool {
	err := s.rows.Each(s.ns, func(kg int, key, val []byte) error {
		j.kv.Put(kg, key, val)
		return nil
	})
	if cerr := s.rows.Close(); err == nil {
		err = cerr
	}
	s.rows = nil
	if err != nil && j.err == nil {
		j.err = fmt.Errorf("join %s: moving the insert-only side's rows: %w", j.spec.ID, err)
	}
	return err == nil
}

// retractScan removes one copy of row i from side s by scanning the join
// key's entries for it, in either no-unique-key layout (the row in the
// value, or the key's row frame); an absent row is ignored.
func (j *streamJoin) retractScan(s *joinSideState, i int) {
	j.kbuf = state.Key(j.kbuf, s.ns, j.jk(i))
	plen := len(j.kbuf)
	want := j.row(i)
	found := false
	var c, a int64
	var row []byte
	_ = j.kv.Scan(j.kg(i), j.kbuf, func(k, v []byte) error {
		c, a, row, found = parseJoinValue(v)
		if found && len(row) == 0 { // a multiset entry: the row is in the key
			m, w := binary.Uvarint(k[plen:])
			found = w > 0 && int(m) <= len(k)-plen-w
			if found {
				row = k[plen+w : plen+w+int(m)]
			}
		}
		if !found || !bytes.Equal(row, want) {
			found = false
			return nil
		}
		j.delKey = append(j.delKey[:0], k...)
		j.rowScratch = append(j.rowScratch[:0], v...)
		return errStopScan
	})
	if !found {
		return
	}
	if c > 1 {
		_, _, row, _ = parseJoinValue(j.rowScratch)
		j.vbuf = appendJoinValue(j.vbuf, c-1, a, row)
		j.kv.Put(j.kg(i), j.delKey, j.vbuf)
		return
	}
	j.kv.Delete(j.kg(i), j.delKey)
}

// errStopScan ends a Scan after its first key.
var errStopScan = errors.New("join: scan stopped")

// writeBack stores the candidates whose association counts changed.
func (j *streamJoin) writeBack(s *joinSideState) {
	for ci := range j.cands {
		c := &j.cands[ci]
		if !c.dirty {
			continue
		}
		c.dirty = false
		var row []byte
		if s.layout != layoutMultiset || c.rowInValue {
			row = j.arena[c.rowOff : c.rowOff+c.rowLen]
		}
		j.vbuf = appendJoinValue(j.vbuf, c.count, c.assoc, row)
		j.kv.Put(c.kg, j.arena[c.keyOff:c.keyOff+c.keyLen], j.vbuf)
	}
}

// emit gathers the output rows column-wise and sends them.
func (j *streamJoin) emit(input int, rec, candRec arrow.Record, out Collector) error {
	n := len(j.outKind)
	if n == 0 {
		return nil
	}
	var cols []arrow.Array
	var parts []arrow.Record
	if j.semi {
		// left columns only: the input rows (left input) or the candidates
		// (right input)
		if input == 0 {
			parts = append(parts, expr.TakeRecord(rec, j.outIn, j.mem))
		} else {
			parts = append(parts, expr.TakeRecord(candRec, j.outCand, j.mem))
		}
	} else {
		inPart := expr.TakeRecord(rec, j.outIn, j.mem)
		candPart := expr.TakeRecord(candRec, j.outCand, j.mem)
		if input == 0 {
			parts = append(parts, inPart, candPart)
		} else {
			parts = append(parts, candPart, inPart)
		}
	}
	for _, p := range parts {
		cols = append(cols, p.Columns()...)
	}
	res := expr.NewRecord(j.outSch, cols, int64(n))
	for _, p := range parts {
		p.Release()
	}
	var ops []RowKind
	for _, k := range j.outKind {
		if k != Insert {
			ops = make([]RowKind, n)
			copy(ops, j.outKind)
			break
		}
	}
	return out.Collect(Batch{Rec: res, Ops: ops})
}
