package exec

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/decimal128"

	"github.com/streamsql/streamsql/checkpoint"
)

// Checkpointed state of a group aggregation, one entry per group:
//
//	key:   checkpoint.KeyedPrefix(operator id, key group) + encoded group key
//	value: format byte, row count (varint), then each accumulator's state
//
// Format 1 (aggStateV1): every accumulator writes its own state. Format 2
// (aggStateV2), written by an aggregation whose COUNT(DISTINCT) calls share
// their sets (distinctshare.go) over a retracting input: the same, except
// that a share's first call writes the shared set and its other calls
// nothing. Format 3 (aggStateV3), written by one whose shares have an
// insert-only input, with checkpoints: a sequence of records, each the
// format byte, its body's length (4 bytes, little-endian) and the body (row
// count and accumulators, as in format 2 but with the shares' sets as
// bit sets per value, or what they gained since the record before: see
// distinctshare.go). A checkpoint writes a group's first record (the whole
// state) as its value and later records as merge operands, which the
// committed state appends to it (checkpoint.MergeWriter); reading a value
// reads its records in order: the last one's row count and other
// accumulators, every one's additions to the sets. Every format is read.
//
// The encoded group key is, per key column, a null flag (0/1) and the value
// (fixed width little-endian, or a 4-byte length and the bytes of a
// string). Only groups changed since the previous barrier are written;
// groups that disappeared are deleted.

const (
	aggStateV1 = 1
	aggStateV2 = 2
	aggStateV3 = 3
)

var errCorrupt = errors.New("corrupt aggregation state")

// aggCodec encodes a group's key and value for the keyed-state table.
type aggCodec struct{ a *groupAgg }

func (c aggCodec) AppendKey(dst []byte, g int32) []byte {
	for _, k := range c.a.keys {
		dst = k.appendEncoded(dst, g)
	}
	return dst
}

// ValueSize implements state.SizedCodec: a bound of a group's encoding
// when every accumulator's is bounded (no multiset, no string), else 0.
func (c aggCodec) ValueSize() int {
	n := 1 + 4 + binary.MaxVarintLen64 // format, record length, row count
	for _, acc := range c.a.accs {
		b, ok := acc.(boundedAcc)
		if !ok || b.maxBytes() == 0 {
			return 0
		}
		n += b.maxBytes()
	}
	return n
}

// boundedAcc is an accumulator whose slot's encoding takes at most
// maxBytes (0: unbounded).
type boundedAcc interface{ maxBytes() int }

func (a *countAcc) maxBytes() int     { return binary.MaxVarintLen64 }
func (a *sumAcc[I, S]) maxBytes() int { return 2 * binary.MaxVarintLen64 }
func (a *decSumAcc) maxBytes() int    { return 16 + binary.MaxVarintLen64 }
func (a *minMax[T]) maxBytes() int {
	var zero T
	if _, str := any(zero).(string); str || a.retract {
		return 0
	}
	return 1 + 16
}

func (c aggCodec) AppendValue(dst []byte, g int32) []byte {
	a := c.a
	if a.logged {
		return c.appendRecord(dst, g)
	}
	if len(a.shares) > 0 {
		dst = append(dst, aggStateV2)
	} else {
		dst = append(dst, aggStateV1)
	}
	dst = binary.AppendVarint(dst, a.rowCount[g])
	for _, acc := range a.accs {
		dst = acc.encode(dst, g)
	}
	return dst
}

// appendRecord appends slot g's state as one format 3 record.
func (c aggCodec) appendRecord(dst []byte, g int32) []byte {
	a := c.a
	dst = append(dst, aggStateV3, 0, 0, 0, 0)
	at := len(dst)
	dst = binary.AppendVarint(dst, a.rowCount[g])
	for _, acc := range a.accs {
		dst = acc.encode(dst, g)
	}
	binary.LittleEndian.PutUint32(dst[at-4:at], uint32(len(dst)-at))
	return dst
}

// AppendDelta implements state.DeltaCodec: in format 3, a record of what
// slot g's sets gained since the last completed checkpoint (a merge
// operand) when the committed state holds every set of the slot, else the
// whole state.
func (c aggCodec) AppendDelta(dst []byte, g int32) ([]byte, bool) {
	a := c.a
	if !a.logged {
		return c.AppendValue(dst, g), false
	}
	tail := true
	for _, s := range a.shares {
		tail = tail && s.canTail(g)
	}
	for _, s := range a.shares {
		s.beginSnap(g, a.snapID, tail)
	}
	dst = c.appendRecord(dst, g)
	for _, s := range a.shares {
		s.endSnap()
	}
	return dst, tail
}

// Snapshot implements Operator: the changed groups, through the table.
func (a *groupAgg) Snapshot(id int64, w checkpoint.StateWriter) error {
	a.snapID = id
	return a.tbl.Snapshot(id, w)
}

func (a *groupAgg) NotifyComplete(id int64) error {
	a.tbl.Complete(id)
	for _, s := range a.shares {
		s.complete(id)
	}
	return nil
}

func (a *groupAgg) NotifyAborted(id int64) error {
	a.tbl.Abort(id)
	for _, s := range a.shares {
		s.abort(id)
	}
	return nil
}

// Restore implements Operator: it loads every group of the subtask's key
// groups.
func (a *groupAgg) Restore(r checkpoint.StateReader) error {
	kg := a.ctx.KeyGroups
	if err := a.tbl.Restore(r, kg.Start, kg.End, a.decodeSlot); err != nil {
		return err
	}
	return a.tbl.MaybeEvict()
}

// decodeSlot fills slot g from a group's encoded key and value (restore,
// and a tiered table's cold reads).
func (a *groupAgg) decodeSlot(g int32, key, val []byte) (int64, bool, error) {
	rest := key
	for _, ks := range a.keys {
		n, err := ks.decode(rest, g)
		if err != nil {
			return 0, false, err
		}
		rest = rest[n:]
	}
	if len(rest) != 0 {
		return 0, false, errCorrupt
	}
	if len(val) == 0 || val[0] < aggStateV1 || val[0] > aggStateV3 {
		return 0, false, fmt.Errorf("%w: unknown format", errCorrupt)
	}
	if val[0] != aggStateV1 && len(a.shares) == 0 {
		return 0, false, fmt.Errorf("%w: the state's COUNT(DISTINCT) calls share their sets, this aggregation's do not", errCorrupt)
	}
	for _, s := range a.shares {
		s.setFormat(val[0])
	}
	var err error
	if val[0] == aggStateV3 {
		err = a.decodeRecords(g, val)
	} else {
		_, err = a.decodeBody(g, val[1:])
	}
	if err != nil {
		return 0, false, err
	}
	if !a.intKey {
		return 0, false, nil
	}
	if key[0] == 0 {
		return 0, true, nil
	}
	return a.keys[0].(intKeyOf).int64At(g), false, nil
}

// decodeRecords reads the format 3 records of val into slot g, in order.
func (a *groupAgg) decodeRecords(g int32, val []byte) error {
	for rest := val; len(rest) > 0; {
		if len(rest) < 5 || rest[0] != aggStateV3 {
			return errCorrupt
		}
		l := int(binary.LittleEndian.Uint32(rest[1:5]))
		if l > len(rest)-5 {
			return errCorrupt
		}
		if n, err := a.decodeBody(g, rest[5:5+l]); err != nil {
			return err
		} else if n != l {
			return fmt.Errorf("%w: a record of %d bytes holds %d", errCorrupt, l, n)
		}
		rest = rest[5+l:]
	}
	return nil
}

// decodeBody reads a row count and every accumulator's state into slot g
// and returns the bytes read.
func (a *groupAgg) decodeBody(g int32, body []byte) (int, error) {
	rc, n := binary.Varint(body)
	if n <= 0 {
		return 0, errCorrupt
	}
	a.rowCount[g] = rc
	for _, acc := range a.accs {
		m, err := acc.decode(body[n:], g)
		if err != nil {
			return 0, err
		}
		n += m
	}
	return n, nil
}

// appendEncoded appends slot g's key value as in encodeKeys.
func (k *typedKeys[T]) appendEncoded(dst []byte, g int32) []byte {
	if !k.valid[g] {
		dst = append(dst, 0)
		var zero T
		w := len(appendScalar(nil, zero))
		if _, isStr := any(zero).(string); isStr {
			w = 4
		}
		return append(dst, make([]byte, w)...)
	}
	return appendScalar(append(dst, 1), k.vals[g])
}

// decode reads one key value into slot g and returns the bytes used.
func (k *typedKeys[T]) decode(src []byte, g int32) (int, error) {
	for int(g) >= len(k.vals) {
		var zero T
		k.vals = append(k.vals, zero)
		k.valid = append(k.valid, false)
	}
	if len(src) == 0 {
		return 0, errCorrupt
	}
	v, n, err := readScalar[T](src[1:])
	if err != nil {
		return 0, err
	}
	k.valid[g] = src[0] == 1
	if !k.valid[g] {
		var zero T
		v = zero
	}
	k.vals[g] = v
	return 1 + n, nil
}

// appendScalar appends v: fixed-width little-endian numbers, one byte for a
// boolean, a 4-byte length and the bytes of a string. Only used when
// snapshotting (per changed key), never per row.
func appendScalar[T scalar](dst []byte, v T) []byte {
	switch x := any(v).(type) {
	case bool:
		if x {
			return append(dst, 1)
		}
		return append(dst, 0)
	case int32:
		return binary.LittleEndian.AppendUint32(dst, uint32(x))
	case int64:
		return binary.LittleEndian.AppendUint64(dst, uint64(x))
	case arrow.Timestamp:
		return binary.LittleEndian.AppendUint64(dst, uint64(x))
	case float64:
		if x == 0 {
			x = 0
		}
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(x))
	case decimal128.Num:
		dst = binary.LittleEndian.AppendUint64(dst, x.LowBits())
		return binary.LittleEndian.AppendUint64(dst, uint64(x.HighBits()))
	case string:
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(x)))
		return append(dst, x...)
	}
	panic("appendScalar: unsupported type")
}

// readScalar reads what appendScalar wrote.
func readScalar[T scalar](src []byte) (T, int, error) {
	var zero T
	need := func(n int) bool { return len(src) >= n }
	var v any
	n := 0
	switch any(zero).(type) {
	case bool:
		if !need(1) {
			return zero, 0, errCorrupt
		}
		v, n = src[0] == 1, 1
	case int32:
		if !need(4) {
			return zero, 0, errCorrupt
		}
		v, n = int32(binary.LittleEndian.Uint32(src)), 4
	case int64:
		if !need(8) {
			return zero, 0, errCorrupt
		}
		v, n = int64(binary.LittleEndian.Uint64(src)), 8
	case arrow.Timestamp:
		if !need(8) {
			return zero, 0, errCorrupt
		}
		v, n = arrow.Timestamp(binary.LittleEndian.Uint64(src)), 8
	case float64:
		if !need(8) {
			return zero, 0, errCorrupt
		}
		v, n = math.Float64frombits(binary.LittleEndian.Uint64(src)), 8
	case decimal128.Num:
		if !need(16) {
			return zero, 0, errCorrupt
		}
		v, n = decimal128.New(int64(binary.LittleEndian.Uint64(src[8:])), binary.LittleEndian.Uint64(src)), 16
	case string:
		if !need(4) {
			return zero, 0, errCorrupt
		}
		l := int(binary.LittleEndian.Uint32(src))
		if !need(4 + l) {
			return zero, 0, errCorrupt
		}
		v, n = string(src[4:4+l]), 4+l
	}
	return v.(T), n, nil
}

func readVarint(src []byte) (int64, int, error) {
	v, n := binary.Varint(src)
	if n <= 0 {
		return 0, 0, errCorrupt
	}
	return v, n, nil
}

// Accumulator states.

func (a *countAcc) encode(dst []byte, g int32) []byte { return binary.AppendVarint(dst, a.n[g]) }
func (a *countAcc) decode(src []byte, g int32) (int, error) {
	v, n, err := readVarint(src)
	a.n[g] = v
	return n, err
}

func (a *sumAcc[I, S]) encode(dst []byte, g int32) []byte {
	switch s := any(a.sum[g]).(type) {
	case int64:
		dst = binary.AppendVarint(dst, s)
	case float64:
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(s))
	}
	return binary.AppendVarint(dst, a.nn[g])
}
func (a *sumAcc[I, S]) decode(src []byte, g int32) (int, error) {
	used := 0
	switch any(a.sum[g]).(type) {
	case int64:
		v, n, err := readVarint(src)
		if err != nil {
			return 0, err
		}
		a.sum[g], used = S(v), n
	case float64:
		if len(src) < 8 {
			return 0, errCorrupt
		}
		a.sum[g], used = S(math.Float64frombits(binary.LittleEndian.Uint64(src))), 8
	}
	nn, n, err := readVarint(src[used:])
	a.nn[g] = nn
	return used + n, err
}

func (a *decSumAcc) encode(dst []byte, g int32) []byte {
	return binary.AppendVarint(appendScalar(dst, a.sum[g]), a.nn[g])
}
func (a *decSumAcc) decode(src []byte, g int32) (int, error) {
	v, n, err := readScalar[decimal128.Num](src)
	if err != nil {
		return 0, err
	}
	nn, m, err := readVarint(src[n:])
	a.sum[g], a.nn[g] = v, nn
	return n + m, err
}

// appendMultiset appends m sorted by encoded value, so that equal state
// gives equal bytes whatever Go's map order.
func appendMultiset[T scalar](dst []byte, m *multiset[T]) []byte {
	dst = binary.AppendUvarint(dst, uint64(m.len()))
	switch mm := any(m).(type) {
	case *multiset[int64]:
		return appendMultiset64(dst, mm)
	case *multiset[arrow.Timestamp]:
		return appendMultiset64(dst, mm)
	case *multiset[int32]:
		return appendMultiset32(dst, mm)
	}
	return appendMultisetEncoded(dst, m)
}

// appendMultisetEncoded appends m's entries (not its length) sorted by
// their encodings.
func appendMultisetEncoded[T scalar](dst []byte, m *multiset[T]) []byte {
	// Encodings go into one scratch buffer (not one allocation per entry)
	// and are written sorted, so equal multisets give equal bytes.
	type ent struct {
		off, end int
		c        int64
	}
	var scratch []byte
	ents := make([]ent, 0, m.len())
	m.eachIndex(func(v T, i int32) {
		c := m.cnt[i]
		off := len(scratch)
		scratch = appendScalar(scratch, v)
		ents = append(ents, ent{off, len(scratch), c})
	})
	slices.SortFunc(ents, func(a, b ent) int { return bytes.Compare(scratch[a.off:a.end], scratch[b.off:b.end]) })
	for _, e := range ents {
		dst = binary.AppendVarint(append(dst, scratch[e.off:e.end]...), e.c)
	}
	return dst
}

// appendMultiset64 is appendMultiset of 8-byte integers: the same bytes
// (values little-endian, sorted as their encodings compare: by the
// byte-reversed value), without encoding every value to compare it.
func appendMultiset64[V int64 | arrow.Timestamp](dst []byte, m *multiset[V]) []byte {
	dst = slices.Grow(dst, m.len()*10)
	for _, e := range sortedOrder(m, 8) {
		dst = binary.BigEndian.AppendUint64(dst, e.k) // = little-endian of the value
		dst = binary.AppendVarint(dst, m.cnt[e.c])
	}
	return dst
}

// appendMultiset32 is appendMultiset64 of 4-byte integers.
func appendMultiset32[V int32](dst []byte, m *multiset[V]) []byte {
	dst = slices.Grow(dst, m.len()*6)
	for _, e := range sortedOrder(m, 4) {
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.k))
		dst = binary.AppendVarint(dst, m.cnt[e.c])
	}
	return dst
}

// keepOrder is the smallest multiset that keeps its order between
// encodings (16 bytes a value): a smaller one is sorted again (cheaply,
// and a group evicted soon after its encoding kept no memory for it).
const keepOrder = 256

// sortedOrder returns the sort keys (the byte-reversed values, nbytes
// wide) and indexes of m's values in key order, kept in m.ord for the
// next call: a multiset no value left since then sorts only the values
// added since and merges them in (a large COUNT(DISTINCT) set over an
// insert-only input is encoded at every checkpoint that finds its group
// changed, and mostly grows: q15 sorted its sets of a million values
// whole every second). Otherwise every value is sorted again.
func sortedOrder[V int64 | arrow.Timestamp | int32](m *multiset[V], nbytes int) []keyCount {
	key := func(v V) uint64 {
		if nbytes == 8 {
			return bits.ReverseBytes64(uint64(v))
		}
		return uint64(bits.ReverseBytes32(uint32(v)))
	}
	if !m.ordOK {
		m.ord = m.ord[:0]
		for i, c := range m.cnt {
			if c != 0 {
				m.ord = append(m.ord, keyCount{key(m.vals[i]), int64(i)})
			}
		}
		ord := sortKeyCounts(m.ord, nbytes)
		if len(ord) < keepOrder {
			m.ord, m.ordOK = nil, false
			return ord
		}
		m.ord, m.ordN, m.ordOK = ord, len(m.cnt), true
		return m.ord
	}
	if m.ordN == len(m.cnt) {
		return m.ord
	}
	add := make([]keyCount, 0, len(m.cnt)-m.ordN)
	for i := m.ordN; i < len(m.cnt); i++ {
		add = append(add, keyCount{key(m.vals[i]), int64(i)})
	}
	add = sortKeyCounts(add, nbytes)
	// merge from the back, in place (keys are distinct)
	old := len(m.ord)
	m.ord = slices.Grow(m.ord, len(add))[:old+len(add)]
	i, j := old-1, len(add)-1
	for k := len(m.ord) - 1; j >= 0; k-- {
		if i >= 0 && m.ord[i].k > add[j].k {
			m.ord[k] = m.ord[i]
			i--
		} else {
			m.ord[k] = add[j]
			j--
		}
	}
	m.ordN = len(m.cnt)
	return m.ord
}

// keyCount is a multiset entry to encode: its sort key and c, its count
// or (sortedOrder's kept order) its index in the multiset.
type keyCount struct {
	k uint64
	c int64
}

// sortKeyCounts sorts ents (distinct keys below 1 << (8*nbytes)) by key
// and returns them (in ents or in a buffer of its own). Many entries are
// radix sorted, a byte a pass, least significant first, skipping the
// bytes every key shares: a comparison sort took ~100 ns an entry on
// multisets of a million values, re-encoded at every checkpoint (q15).
func sortKeyCounts(ents []keyCount, nbytes int) []keyCount {
	if len(ents) < 256 {
		slices.SortFunc(ents, func(a, b keyCount) int { return cmp.Compare(a.k, b.k) })
		return ents
	}
	var counts [8][256]int
	for _, e := range ents {
		for b := 0; b < nbytes; b++ {
			counts[b][byte(e.k>>(8*b))]++
		}
	}
	var spare []keyCount
	src := ents
	for b := 0; b < nbytes; b++ {
		c := &counts[b]
		if c[byte(src[0].k>>(8*b))] == len(src) {
			continue // every key has this byte
		}
		if spare == nil {
			spare = make([]keyCount, len(ents))
		}
		sum := 0
		for i, n := range c {
			c[i] = sum
			sum += n
		}
		for _, e := range src {
			d := byte(e.k >> (8 * b))
			spare[c[d]] = e
			c[d]++
		}
		src, spare = spare, src
	}
	return src
}

func readMultiset[T scalar](src []byte) (multiset[T], int, error) {
	var m multiset[T]
	cnt, n := binary.Uvarint(src)
	if n <= 0 || cnt > uint64(len(src)) {
		return m, 0, errCorrupt
	}
	if cnt > 0 {
		// sized once: a large multiset is not rehashed while read
		m.reserve(int(cnt))
		m.cnt = make([]int64, 0, cnt)
		m.vals = make([]T, 0, cnt)
	}
	for i := uint64(0); i < cnt; i++ {
		v, k, err := readScalar[T](src[n:])
		if err != nil {
			return m, 0, err
		}
		n += k
		c, k, err := readVarint(src[n:])
		if err != nil {
			return m, 0, err
		}
		n += k
		m.add(v, c)
	}
	return m, n, nil
}

func (a *minMax[T]) encode(dst []byte, g int32) []byte {
	if a.has[g] {
		dst = appendScalar(append(dst, 1), a.val[g])
	} else {
		dst = append(dst, 0)
	}
	if a.retract {
		dst = appendMultiset(dst, &a.multi[g])
	}
	return dst
}
func (a *minMax[T]) decode(src []byte, g int32) (int, error) {
	if len(src) == 0 {
		return 0, errCorrupt
	}
	n := 1
	a.has[g] = src[0] == 1
	if a.has[g] {
		v, k, err := readScalar[T](src[1:])
		if err != nil {
			return 0, err
		}
		a.val[g] = v
		n += k
	}
	if a.retract {
		m, k, err := readMultiset[T](src[n:])
		if err != nil {
			return 0, err
		}
		a.multi[g] = m
		n += k
	}
	return n, nil
}

func (a *distinctCount[T]) encode(dst []byte, g int32) []byte { return appendMultiset(dst, &a.sets[g]) }
func (a *distinctCount[T]) decode(src []byte, g int32) (int, error) {
	m, n, err := readMultiset[T](src)
	a.sets[g] = m
	return n, err
}
