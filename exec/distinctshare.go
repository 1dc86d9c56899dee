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
// The state of a group aggregation with shared calls is written in format
// aggStateV2: the first call of a share encodes the set (uvarint number of
// calls, uvarint number of values, then per value in the order of its
// encoding: the value and one varint count per call), the others nothing. Format aggStateV1 (a state
// written before shares, or by a plan without them) has each call's own
// multiset: each call reads its own into the shared set.

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
	v1   bool // decoding aggStateV1: each call its own multiset
}

// sharedSet is one group's values: ms holds every value some call counts
// (its cnt: how many calls count it, for the multiset's bookkeeping and
// encoding order), mc[i*m+j] call j's count of ms.vals[i].
type sharedSet[T scalar] struct {
	ms multiset[T]
	mc []int64
}

// shareMember is call j of a share: the accumulator the aggregation sees.
type shareMember[T scalar] struct {
	s       *distinctShare[T]
	j       int
	scratch []int64
	st      staged[int64]
}

// shareDistinct replaces the accumulators of calls that share a set
// (planner.AggCall.Share) with the members of one distinctShare. Calls
// of a type it does not share (DOUBLE: its NaN handling) or whose types
// differ keep their own.
func shareDistinct(calls []planner.AggCall, accs []accumulator) ([]accumulator, []interface{ setV1(bool) }) {
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
	var shares []interface{ setV1(bool) }
	for _, sh := range order {
		ids := groups[sh]
		kind := stateKind(calls[ids[0]].ArgType.Kind)
		same := len(ids) >= 2 && len(ids) <= 64
		for _, i := range ids {
			same = same && stateKind(calls[i].ArgType.Kind) == kind
		}
		if !same {
			continue
		}
		var members []accumulator
		var share interface{ setV1(bool) }
		switch kind {
		case catalog.KindBoolean:
			members, share = newShare[bool](len(ids))
		case catalog.KindInt:
			members, share = newShare[int32](len(ids))
		case catalog.KindBigInt:
			members, share = newShare[int64](len(ids))
		case catalog.KindDecimal:
			members, share = newShare[decimal128.Num](len(ids))
		case catalog.KindString:
			members, share = newShare[string](len(ids))
		case catalog.KindTimestamp:
			members, share = newShare[arrow.Timestamp](len(ids))
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

func newShare[T scalar](m int) ([]accumulator, interface{ setV1(bool) }) {
	s := &distinctShare[T]{m: m, cols: make([]arrow.Array, m), in: make([][]T, m), nm: make([]nullMask, m), hasN: make([]bool, m)}
	out := make([]accumulator, m)
	for j := range out {
		out[j] = &shareMember[T]{s: s, j: j}
	}
	return out, s
}

func (s *distinctShare[T]) setV1(v1 bool) { s.v1 = v1 }

func (a *shareMember[T]) grow(n int) {
	if a.j != 0 {
		return
	}
	s := a.s
	for len(s.sets) < n {
		s.sets = append(s.sets, sharedSet[T]{})
	}
	if want := n * s.m; len(s.n) < want {
		s.n = append(s.n, make([]int64, want-len(s.n))...)
	}
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
		for mm := mask; mm != 0; mm &= mm - 1 {
			j := bits.TrailingZeros64(mm)
			before := cs[j]
			cs[j] += d
			switch {
			case before == 0:
				ns[j]++
				live++
			case cs[j] == 0:
				ns[j]--
				live--
			}
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
	dst = binary.AppendUvarint(dst, uint64(s.m))
	dst = binary.AppendUvarint(dst, uint64(set.ms.len()))
	emit := func(k int64) {
		dst = appendScalar(dst, set.ms.vals[k])
		for _, c := range set.mc[int(k)*s.m : int(k+1)*s.m] {
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
		for v, k := range set.ms.idx {
			off := len(scratch)
			scratch = appendScalar(scratch, v)
			ents = append(ents, ent{off, len(scratch), int(k)})
		}
		slices.SortFunc(ents, func(x, y ent) int { return bytes.Compare(scratch[x.off:x.end], scratch[y.off:y.end]) })
		for _, e := range ents {
			emit(int64(e.k))
		}
	}
	return dst
}

// decode reads slot g's state: in aggStateV2 the first call reads the set
// and the others nothing; in aggStateV1 each call reads its own multiset
// into the set.
func (a *shareMember[T]) decode(src []byte, g int32) (int, error) {
	s := a.s
	if a.j == 0 {
		a.reset(g)
	}
	if !s.v1 && a.j != 0 {
		return 0, nil
	}
	n := 0
	if !s.v1 {
		m, k := binary.Uvarint(src)
		if k <= 0 || m != uint64(s.m) {
			return 0, fmt.Errorf("%w: a COUNT(DISTINCT) set shared by %d calls, this aggregation shares it by %d", errCorrupt, m, s.m)
		}
		n = k
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
		calls := cs
		if s.v1 {
			calls = cs[a.j : a.j+1]
		}
		for j := range calls {
			c, k, err := readVarint(src[n:])
			if err != nil {
				return 0, err
			}
			n += k
			if c == 0 && !s.v1 {
				continue // a value this call does not count
			}
			if calls[j] != 0 || c == 0 {
				return 0, fmt.Errorf("%w: a COUNT(DISTINCT) value twice or with no count", errCorrupt)
			}
			calls[j] = c
			set.ms.cnt[idx]++
			if s.v1 {
				ns[a.j]++
			} else {
				ns[j]++
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
	return set.ms.bytes() + 8*len(set.mc) + 8*a.s.m
}
