package exec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/decimal128"

	"github.com/streamsql/streamsql/checkpoint"
)

// Checkpointed state of a group aggregation, one entry per group:
//
//	key:   checkpoint.KeyedPrefix(operator id, key group) + encoded group key
//	value: format byte, row count (varint), then each accumulator's state
//
// The encoded group key is, per key column, a null flag (0/1) and the value
// (fixed width little-endian, or a 4-byte length and the bytes of a
// string). Only groups changed since the previous barrier are written;
// groups that disappeared are deleted.

const aggStateV1 = 1

var errCorrupt = errors.New("corrupt aggregation state")

// stateKey appends the state key of slot g to dst.
func (a *groupAgg) stateKey(dst []byte, g int32) []byte {
	dst = append(dst, checkpoint.KeyedPrefix(a.spec.ID, int(a.kgOf[g]))...)
	for _, k := range a.keys {
		dst = k.appendEncoded(dst, g)
	}
	return dst
}

// SnapshotState implements StatefulOperator.
func (a *groupAgg) SnapshotState(w checkpoint.StateWriter, _ KeyGroups) error {
	for _, k := range a.tombstones {
		if err := w.Delete(k); err != nil {
			return err
		}
	}
	a.tombstones = a.tombstones[:0]
	var key, val []byte
	for _, g := range a.dirtyList {
		a.dirty[g] = false
		if a.rowCount[g] <= 0 {
			continue // dropped in this epoch: tombstoned
		}
		key = a.stateKey(key[:0], g)
		val = append(val[:0], aggStateV1)
		val = binary.AppendVarint(val, a.rowCount[g])
		for _, acc := range a.accs {
			val = acc.encode(val, g)
		}
		if err := w.Put(key, val); err != nil {
			return err
		}
	}
	a.dirtyList = a.dirtyList[:0]
	return nil
}

// RestoreState implements StatefulOperator: it loads every group of the
// subtask's key groups.
func (a *groupAgg) RestoreState(r checkpoint.StateReader, kg KeyGroups) error {
	for k := kg.Start; k < kg.End; k++ {
		prefix := checkpoint.KeyedPrefix(a.spec.ID, k)
		err := r.Scan(prefix, func(key, val []byte) error {
			g := a.allocSlot()
			a.kgOf[g] = uint16(k)
			rest := key[len(prefix):]
			for _, ks := range a.keys {
				n, err := ks.decode(rest, g)
				if err != nil {
					return err
				}
				rest = rest[n:]
			}
			if len(rest) != 0 {
				return errCorrupt
			}
			if len(val) == 0 || val[0] != aggStateV1 {
				return fmt.Errorf("%w: unknown format", errCorrupt)
			}
			rc, n := binary.Varint(val[1:])
			if n <= 0 {
				return errCorrupt
			}
			a.rowCount[g] = rc
			v := val[1+n:]
			for _, acc := range a.accs {
				m, err := acc.decode(v, g)
				if err != nil {
					return err
				}
				v = v[m:]
			}
			a.index(g, key[len(prefix):])
			return nil
		})
		if err != nil {
			return fmt.Errorf("restoring key group %d: %w", k, err)
		}
	}
	return nil
}

// index makes slot g findable by its key (encoded as in stateKey).
func (a *groupAgg) index(g int32, enc []byte) {
	if !a.intKey {
		ks := string(enc)
		a.strMap[ks] = g
		a.keyOf[g] = ks
		return
	}
	if enc[0] == 0 {
		a.nullSlot = g
		return
	}
	a.intMap[a.keys[0].(intKeyOf).int64At(g)] = g
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

func appendMultiset[T scalar](dst []byte, m map[T]int64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(m)))
	for v, c := range m {
		dst = binary.AppendVarint(appendScalar(dst, v), c)
	}
	return dst
}

func readMultiset[T scalar](src []byte) (map[T]int64, int, error) {
	cnt, n := binary.Uvarint(src)
	if n <= 0 || cnt > uint64(len(src)) {
		return nil, 0, errCorrupt
	}
	var m map[T]int64
	if cnt > 0 {
		m = make(map[T]int64, cnt)
	}
	for i := uint64(0); i < cnt; i++ {
		v, k, err := readScalar[T](src[n:])
		if err != nil {
			return nil, 0, err
		}
		n += k
		c, k, err := readVarint(src[n:])
		if err != nil {
			return nil, 0, err
		}
		n += k
		m[v] = c
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
		dst = appendMultiset(dst, a.multi[g])
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

func (a *distinctCount[T]) encode(dst []byte, g int32) []byte { return appendMultiset(dst, a.sets[g]) }
func (a *distinctCount[T]) decode(src []byte, g int32) (int, error) {
	m, n, err := readMultiset[T](src)
	a.sets[g] = m
	return n, err
}
