package exec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/planner"
)

// COUNT(DISTINCT x) calls of one group aggregation over the same x, each
// with its own FILTER or none (planner.AggCall.Share: Nexmark q15 and q16
// count the distinct bidders and auctions of a day in all and in three
// price ranges), share one set of x's values per group with a count per
// call, as Flink's distinct aggregates share one MapView per argument: a
// row is looked up once for every call that takes it (instead of once per
// call), and a group's state holds each value once.
//
// A FILTER's argument column is CASE WHEN cond THEN x END: x where it is
// not NULL. So a row's value is read from the first call whose column is
// not NULL there, and every call whose column is not NULL there counts
// that value.
//
// The state of a group aggregation with shared calls over a retracting
// input is written in format aggStateV2: the first call of a share
// encodes the set (uvarint number of calls, uvarint number of values,
// then per value in the order of its encoding: the value and one varint
// count per call), the others nothing. Format aggStateV1 (a state written
// before shares, or by a plan without them) has each call's own multiset:
// each call reads its own into the shared set.
//
// Over an insert-only input with checkpoints a value is never removed and
// its counts beyond "seen" do not matter, and a group's sets only grow:
// the state is written in format aggStateV3 (aggstate.go), a sequence of
// records, and a checkpoint that finds a group changed writes a merge
// operand (checkpoint.MergeWriter) holding the values each call saw
// since the last completed checkpoint instead of the whole sets, once the
// committed state holds them (state.DeltaCodec). A share's part of a
// record: a byte (0: the whole set; 1: what was added since the record
// before), uvarint number of calls, uvarint number of entries, then per
// entry the value and a uvarint bit set of the calls that count it (whole
// sets: in the order of the values' encodings; additions: in the order
// they were seen; a value may repeat, e.g. after an aborted checkpoint:
// reading ORs the bits).

// distinctShare is the shared state of m COUNT(DISTINCT) calls.
type distinctShare[T scalar] struct {
	m    int
	sets []sharedSet[T] // by slot
	n    []int64        // by slot*m + call: the call's distinct values
	// the batch being applied: each call's column, set by its update; the
	// last call's update applies the batch
	cols []arrow.Array
	got  int
	in   [][]T // per call, its column's values (scratch)
	nm   []nullMask
	hasN []bool
	// format is the format being decoded (aggStateV1, V2 or V3)
	format byte
	// logged: insert-only input with checkpoints (format 3): the calls
	// each value gained are logged per set for the next merge operand
	logged bool
	// snapID is the checkpoint AppendDelta writes; tail whether this
	// record carries additions (beginSnap); pend the slots written since
	// the last completed or aborted checkpoint
	snapID int64
	tail   bool
	pend   []int32
}

// logEnt is a value (its index in the set) and the calls it gained.
type logEnt struct {
	k    int32
	bits uint64
}

// sharedSet is one group's values: ms holds every value some call counts
// (its cnt: how many calls count it, for the multiset's bookkeeping and
// encoding order), mc[i*m+j] call j's count of ms.vals[i].
type sharedSet[T scalar] struct {
	ms multiset[T]
	mc []int64
	// format 3: log holds the additions from absolute position logBase
	// on; the committed state holds this set up to position committed
	// (when hasBase); the pending snapshot snapID wrote it up to snap
	log                      []logEnt
	logBase, committed, snap int
	snapID                   int64
	hasBase                  bool
}

// shareMember is call j of a share: the accumulator the aggregation sees.
type shareMember[T scalar] struct {
	s       *distinctShare[T]
	j       int
	scratch []int64
	st      staged[int64]
}

// sharer is a distinctShare as its group aggregation sees it.
type sharer interface {
	setFormat(f byte)
	canTail(g int32) bool
	beginSnap(g int32, id int64, tail bool)
	endSnap()
	complete(id int64)
	abort(id int64)
	loadedCommitted(g int32)
}

// shareDistinct replaces the accumulators of calls that share a set
// (planner.AggCall.Share) with the members of one distinctShare. Calls
// of a type it does not share (DOUBLE: its NaN handling) or whose types
// differ keep their own. logged: the input is insert-only and
// checkpointed (format 3).
func shareDistinct(calls []planner.AggCall, accs []accumulator, logged bool) ([]accumulator, []sharer) {
	groups := map[int][]int{}
	var order []int
	for i, c := range calls {
		if c.Share > 0 && c.Distinct && c.Fn == "count" {
			if groups[c.Share] == nil {
				order = append(order, c.Share)
			}
			groups[c.Share] = append(groups[c.Share], i)
		}
	}
	var shares []sharer
	for _, sh := range order {
		ids := groups[sh]
		kind := stateKind(calls[ids[0]].ArgType.Kind)
		// a single call shares only to write additions (logged)
		same := (len(ids) >= 2 || logged) && len(ids) <= 64
		for _, i := range ids {
			same = same && stateKind(calls[i].ArgType.Kind) == kind
		}
		if !same {
			continue
		}
		var members []accumulator
		var share sharer
		switch kind {
		case catalog.KindBoolean:
			members, share = newShare[bool](len(ids), logged)
		case catalog.KindInt:
			members, share = newShare[int32](len(ids), logged)
		case catalog.KindBigInt:
			members, share = newShare[int64](len(ids), logged)
		case catalog.KindDecimal:
			members, share = newShare[decimal128.Num](len(ids), logged)
		case catalog.KindString:
			members, share = newShare[string](len(ids), logged)
		case catalog.KindTimestamp:
			members, share = newShare[arrow.Timestamp](len(ids), logged)
		default:
			continue
		}
		for k, i := range ids {
			accs[i] = members[k]
		}
		shares = append(shares, share)
	}
	return accs, shares
}

func newShare[T scalar](m int, logged bool) ([]accumulator, sharer) {
	s := &distinctShare[T]{m: m, cols: make([]arrow.Array, m), in: make([][]T, m), nm: make([]nullMask, m), hasN: make([]bool, m), logged: logged}
	out := make([]accumulator, m)
	for j := range out {
		out[j] = &shareMember[T]{s: s, j: j}
	}
	return out, s
}

func (s *distinctShare[T]) setFormat(f byte) { s.format = f }

// canTail reports whether slot g's next record may carry only additions:
// the committed state holds its set.
func (s *distinctShare[T]) canTail(g int32) bool { return s.sets[g].hasBase }

// beginSnap is called before slot g's record for checkpoint id is encoded
// (tail: additions only); endSnap after it.
func (s *distinctShare[T]) beginSnap(g int32, id int64, tail bool) {
	set := &s.sets[g]
	s.snapID, s.tail = id, tail
	if !tail { // the whole set: no earlier addition is needed again
		set.logBase += len(set.log)
		set.log = set.log[:0]
	}
	set.snap = set.logBase + len(set.log)
	if set.snapID == 0 {
		s.pend = append(s.pend, g)
	}
	set.snapID = id
}

func (s *distinctShare[T]) endSnap() { s.tail = false }

// loadedCommitted: slot g was just read from the committed state, which
// therefore holds its sets: its next record may carry additions only.
func (s *distinctShare[T]) loadedCommitted(g int32) {
	set := &s.sets[g]
	set.hasBase, set.committed, set.snapID = true, set.logBase+len(set.log), 0
}

// complete: checkpoint id is committed; the sets it wrote are held by the
// committed state up to what it wrote.
func (s *distinctShare[T]) complete(id int64) { s.resolve(id, true) }

// abort: checkpoint id failed; what it wrote may not be committed (a set
// with a base writes its additions since the base again: a value twice is
// harmless).
func (s *distinctShare[T]) abort(id int64) { s.resolve(id, false) }

// resolve ends the pending writes of the sets checkpoint id (or one
// before it) wrote: completed or aborted.
func (s *distinctShare[T]) resolve(id int64, completed bool) {
	keep := s.pend[:0]
	for _, g := range s.pend {
		if int(g) >= len(s.sets) {
			continue
		}
		set := &s.sets[g]
		switch {
		case set.snapID == 0:
		case set.snapID > id:
			keep = append(keep, g)
		case completed:
			cut := set.snap - set.logBase
			set.log = append(set.log[:0], set.log[cut:]...)
			set.logBase, set.committed, set.hasBase, set.snapID = set.snap, set.snap, true, 0
		default:
			set.snapID = 0
			if !set.hasBase { // the next record is whole again
				set.logBase += len(set.log)
				set.log = set.log[:0]
			}
		}
	}
	s.pend = keep
}

func (a *shareMember[T]) grow(n int) {
	if a.j != 0 {
		return
	}
	s := a.s
	s.sets = state.Grow(s.sets, n, sharedSet[T]{})
	s.n = state.Grow(s.n, n*s.m, 0)
}

func (a *shareMember[T]) reset(g int32) {
	if a.j != 0 {
		return
	}
	s := a.s
	s.sets[g] = sharedSet[T]{}
	clear(s.n[int(g)*s.m : int(g+1)*s.m])
}

// update records the call's column; the last call's applies the batch.
func (a *shareMember[T]) update(gids []int32, col arrow.Array, ops []RowKind) {
	s := a.s
	s.cols[a.j] = col
	if s.got++; s.got < s.m {
		return
	}
	s.got = 0
	s.apply(gids, ops)
	clear(s.cols)
}

// apply counts every row's value once for every call whose column holds
// it.
func (s *distinctShare[T]) apply(gids []int32, ops []RowKind) {
	m := s.m
	for j, col := range s.cols {
		s.in[j] = valuesOf[T](col, s.in[j])
		s.nm[j], s.hasN[j] = nullsOf(col)
	}
	full := uint64(1)<<m - 1
	if m == 64 {
		full = ^uint64(0)
	}
	for i, g := range gids {
		mask := full
		for j := 0; j < m; j++ {
			if s.hasN[j] && s.nm[j].null(i) {
				mask &^= 1 << j
			}
		}
		if mask == 0 {
			continue
		}
		v := s.in[bits.TrailingZeros64(mask)][i]
		d := sign(ops, i)
		set := &s.sets[g]
		k := set.ms.slot(v)
		if need := (int(k) + 1) * m; len(set.mc) < need {
			set.mc = append(set.mc, make([]int64, need-len(set.mc))...)
		}
		cs := set.mc[int(k)*m : int(k+1)*m]
		ns := s.n[int(g)*m : int(g+1)*m]
		live := set.ms.cnt[k]
		var gained uint64
		for mm := mask; mm != 0; mm &= mm - 1 {
			j := bits.TrailingZeros64(mm)
			before := cs[j]
			cs[j] += d
			switch {
			case before == 0:
				ns[j]++
				live++
				gained |= 1 << j
			case cs[j] == 0:
				ns[j]--
				live--
			}
		}
		if s.logged && gained != 0 && (set.hasBase || set.snapID != 0) {
			set.log = append(set.log, logEnt{k, gained})
		}
		if live == 0 {
			set.ms.removeAt(k)
		} else {
			set.ms.cnt[k] = live
		}
	}
}

func (a *shareMember[T]) result(slots []int32, mem memory.Allocator) arrow.Array {
	a.scratch = a.scratch[:0]
	for _, g := range slots {
		a.scratch = append(a.scratch, a.s.n[int(g)*a.s.m+a.j])
	}
	return buildArray(mem, arrow.PrimitiveTypes.Int64, a.scratch, nil)
}

func (a *shareMember[T]) staged() stagedCol { return &a.st }
func (a *shareMember[T]) stage(slots []int32) {
	a.st.dt = arrow.PrimitiveTypes.Int64
	for _, g := range slots {
		a.st.vals = append(a.st.vals, a.s.n[int(g)*a.s.m+a.j])
		a.st.valid = append(a.st.valid, true)
	}
}

// encode: the first call writes the set (aggStateV2), the others nothing.
func (a *shareMember[T]) encode(dst []byte, g int32) []byte {
	if a.j != 0 {
		return dst
	}
	s := a.s
	set := &s.sets[g]
	if s.logged && s.tail {
		dst = append(dst, 1)
		dst = binary.AppendUvarint(dst, uint64(s.m))
		from := set.committed - set.logBase
		dst = binary.AppendUvarint(dst, uint64(len(set.log)-from))
		for _, e := range set.log[from:] {
			dst = binary.AppendUvarint(appendScalar(dst, set.ms.vals[e.k]), e.bits)
		}
		return dst
	}
	if s.logged {
		dst = append(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(s.m))
	dst = binary.AppendUvarint(dst, uint64(set.ms.len()))
	emit := func(k int64) {
		dst = appendScalar(dst, set.ms.vals[k])
		cs := set.mc[int(k)*s.m : int(k+1)*s.m]
		if s.logged {
			var b uint64
			for j, c := range cs {
				if c != 0 {
					b |= 1 << j
				}
			}
			dst = binary.AppendUvarint(dst, b)
			return
		}
		for _, c := range cs {
			dst = binary.AppendVarint(dst, c)
		}
	}
	switch ms := any(&set.ms).(type) {
	case *multiset[int64]:
		for _, e := range sortedOrder(ms, 8) {
			emit(e.c)
		}
	case *multiset[arrow.Timestamp]:
		for _, e := range sortedOrder(ms, 8) {
			emit(e.c)
		}
	case *multiset[int32]:
		for _, e := range sortedOrder(ms, 4) {
			emit(e.c)
		}
	default:
		// sorted by the values' encodings, so equal sets give equal bytes
		type ent struct{ off, end, k int }
		var scratch []byte
		ents := make([]ent, 0, set.ms.len())
		set.ms.eachIndex(func(v T, k int32) {
			off := len(scratch)
			scratch = appendScalar(scratch, v)
			ents = append(ents, ent{off, len(scratch), int(k)})
		})
		slices.SortFunc(ents, func(x, y ent) int { return bytes.Compare(scratch[x.off:x.end], scratch[y.off:y.end]) })
		for _, e := range ents {
			emit(int64(e.k))
		}
	}
	return dst
}

// decode reads slot g's state: in aggStateV1 each call reads its own
// multiset into the set; in aggStateV2 and V3 the first call reads the set
// (V3: a record's whole set, after which the slot holds nothing else, or
// its additions) and the others nothing.
func (a *shareMember[T]) decode(src []byte, g int32) (int, error) {
	s := a.s
	v1, v3 := s.format == aggStateV1, s.format == aggStateV3
	if !v1 && a.j != 0 {
		return 0, nil
	}
	n := 0
	whole := true
	if v3 {
		if len(src) == 0 || src[0] > 1 {
			return 0, errCorrupt
		}
		whole, n = src[0] == 0, 1
	}
	if a.j == 0 && whole {
		a.reset(g)
	}
	if !v1 {
		m, k := binary.Uvarint(src[n:])
		if k <= 0 || m != uint64(s.m) {
			return 0, fmt.Errorf("%w: a COUNT(DISTINCT) set shared by %d calls, this aggregation shares it by %d", errCorrupt, m, s.m)
		}
		n += k
	}
	cnt, k := binary.Uvarint(src[n:])
	n += k
	if k <= 0 || cnt > uint64(len(src)) {
		return 0, errCorrupt
	}
	set := &s.sets[g]
	ns := s.n[int(g)*s.m : int(g+1)*s.m]
	for i := uint64(0); i < cnt; i++ {
		v, k, err := readScalar[T](src[n:])
		if err != nil {
			return 0, err
		}
		n += k
		idx := set.ms.slot(v)
		if need := (int(idx) + 1) * s.m; len(set.mc) < need {
			set.mc = append(set.mc, make([]int64, need-len(set.mc))...)
		}
		cs := set.mc[int(idx)*s.m : int(idx+1)*s.m]
		if v3 { // the calls that count it
			b, k := binary.Uvarint(src[n:])
			if k <= 0 || b>>s.m != 0 && s.m < 64 {
				return 0, errCorrupt
			}
			n += k
			for ; b != 0; b &= b - 1 {
				j := bits.TrailingZeros64(b)
				if cs[j] == 0 {
					cs[j] = 1
					set.ms.cnt[idx]++
					ns[j]++
				}
			}
		} else {
			calls := cs
			if v1 {
				calls = cs[a.j : a.j+1]
			}
			for j := range calls {
				c, k, err := readVarint(src[n:])
				if err != nil {
					return 0, err
				}
				n += k
				if c == 0 && !v1 {
					continue // a value this call does not count
				}
				if calls[j] != 0 || c == 0 {
					return 0, fmt.Errorf("%w: a COUNT(DISTINCT) value twice or with no count", errCorrupt)
				}
				calls[j] = c
				set.ms.cnt[idx]++
				if v1 {
					ns[a.j]++
				} else {
					ns[j]++
				}
			}
		}
		if set.ms.cnt[idx] == 0 {
			set.ms.removeAt(idx)
		}
	}
	return n, nil
}

func (a *shareMember[T]) mergeFrom(g int32, src accumulator, s int32) {
	panic("shared COUNT(DISTINCT) calls are not merged (group aggregations only)")
}

// slotBytes: the first call's estimate holds the set's memory.
func (a *shareMember[T]) slotBytes(g int32) int {
	if a.j != 0 {
		return 0
	}
	set := &a.s.sets[g]
	return set.ms.bytes() + 8*len(set.mc) + 8*a.s.m + 16*cap(set.log)
}
