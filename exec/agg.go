package exec

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec/expr"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/planner"
)

// groupAgg is a keyed, non-windowed aggregation producing a retract stream.
//
// State is columnar: groups are dense ids (slots) into typed slices, found
// through a map from the encoded key (or from the int64 key directly when
// there is a single integer key). A batch is processed in whole-column
// passes: look up group ids, remember the old results of the touched groups,
// apply every accumulator over the batch, compute the new results, and emit
// per touched group +I, -U/+U (only if the result changed, as Flink) or -D
// (when its row count drops to zero). Changes are thus consolidated per input
// batch; with a batch size of 1 the changelog is Flink's per-row changelog.
type groupAgg struct {
	spec      *planner.AggOp
	batchSize int
	mem       memory.Allocator
	schema    *arrow.Schema
	ctx       *OpContext

	// keyed state: groups are slots of the table; the key columns and the
	// accumulators are columns indexed by slot
	tbl       *state.Table
	intKey    bool // single INT/BIGINT/TIMESTAMP key: looked up without encoding
	tiered    bool // tbl keeps cold groups in Pebble: lookups pass key groups
	keyBuf    []byte
	keyOffs   []int
	keyHashes []uint64 // state.KeyHash of each distinct key of the batch (bytes-keyed tables)
	rowHashes []uint64 // HashKeys of each row (the batch's own, or hashBuf)
	hashBuf   []uint64
	inHashes  []uint64 // the hashes the current batch came with (keyHashes), or nil
	dedupe    batchKeys
	regroup   bool    // tests: group rows by encoded keys as after a collision
	firstGids []int32 // the slot of each of dedupe.first
	keys      []keyStore
	rowCount  []int64
	accs      []accumulator
	partialW  []int // the columns of each call's partial state (mergePartials)

	maxP int

	// per-batch scratch
	before, after, take, pairsOld, pairsNew []int32
	outSlots, dead                          []int32
	ops                                     []RowKind
	pairPos                                 []int
	changed                                 []bool
	gids                                    []int32
	runs                                    []int32 // gidRuns of gids (insert-only batches of long runs)
	mark                                    []uint32
	epoch                                   uint32
	touched                                 []int32
	// shares are the sets shared by COUNT(DISTINCT) calls (distinctshare.go);
	// logged: they write format 3 (an insert-only input, checkpoints)
	shares []sharer
	logged bool
	snapID int64 // the checkpoint being snapshotted (AppendDelta)
	// slotBytes' parts (sizeParts; sizeFixed -1 until computed)
	sizeFixed int
	sizeVar   []accSizer
}

func newAgg(s *planner.AggOp, ctx *OpContext) (*groupAgg, error) {
	a := &groupAgg{spec: s, mem: ctx.Mem, batchSize: max(ctx.BatchSize, 1), schema: s.Out.Arrow(), maxP: max(ctx.KeyGroups.MaxParallelism, 1), ctx: ctx, sizeFixed: -1}
	if len(s.Keys) == 1 {
		switch s.Out[0].Type.Kind {
		case catalog.KindInt, catalog.KindBigInt, catalog.KindTimestamp:
			a.intKey = true
		}
	}
	for i := range s.Keys {
		ks, err := newKeyStore(s.Out[i].Type)
		if err != nil {
			return nil, fmt.Errorf("GROUP BY column %s: %w", s.Out[i].Name, err)
		}
		a.keys = append(a.keys, ks)
	}
	retract := s.InputMode == planner.Retract
	for _, c := range s.Aggs {
		acc, err := newAccumulator(c, retract)
		if err != nil {
			return nil, err
		}
		a.accs = append(a.accs, acc)
	}
	o := ctx.KVOptions(a.maxP) // checkpointing, TTL and the state backend
	// an insert-only input with checkpoints and no TTL: sets write format 3
	logged := !retract && o.Checkpointing && o.TTL == 0
	a.accs, a.shares = shareDistinct(s.Aggs, a.accs, logged)
	a.logged = logged && len(a.shares) > 0
	o.OpID, o.IntKeys = s.ID, a.intKey
	tbl, err := state.NewTable(o, aggCodec{a})
	if err != nil {
		return nil, err
	}
	tbl.OnGrow = func(n int) {
		a.rowCount = state.Grow(a.rowCount, n, 0)
		a.mark = state.Grow(a.mark, n, 0)
		for _, acc := range a.accs {
			acc.grow(n)
		}
	}
	a.tbl = tbl
	// With the rocksdb backend cold groups live in Pebble (statetier.go).
	hooks := state.TierHooks{Decode: a.decodeSlot, Clear: a.clearSlot, Bytes: a.slotBytes, IntKey: a.intKeyCodec}
	if a.logged {
		hooks.Committed = func(g int32) {
			for _, s := range a.shares {
				s.loadedCommitted(g)
			}
		}
	}
	if err := tbl.EnableTier(hooks); err != nil {
		return nil, err
	}
	a.tiered = tbl.Tiered()
	return a, nil
}

func (a *groupAgg) Open(*OpContext) error                          { return nil }
func (a *groupAgg) ProcessWatermark(wm int64, out Collector) error { return out.EmitWatermark(wm) }
func (a *groupAgg) Finish(out Collector) error                     { return nil }
func (a *groupAgg) Close() error {
	var err error
	if a.tbl != nil {
		err = a.tbl.Close()
	}
	a.tbl, a.accs = nil, nil
	return err
}

// intKeyCodec appends the encoded key of int key v (what aggCodec's
// AppendKey writes for a slot holding it): a tiered table reads a cold
// int key from the committed state by it.
func (a *groupAgg) intKeyCodec(dst []byte, v int64, null bool) []byte {
	w := 8
	if a.spec.Out[0].Type.Kind == catalog.KindInt {
		w = 4
	}
	if null {
		return append(dst, make([]byte, 1+w)...)
	}
	dst = append(dst, 1)
	if w == 4 {
		return binary.LittleEndian.AppendUint32(dst, uint32(int32(v)))
	}
	return binary.LittleEndian.AppendUint64(dst, uint64(v))
}

// keyGroupOf is the key group of row row of rec, as the hash exchange
// routed it (only new keys and cold lookups need it: it hashes one row).
func (a *groupAgg) keyGroupOf(rec arrow.Record, row int) int {
	return keyGroup(HashRow(rec, a.spec.Keys, row), a.maxP)
}

// putKeys stores the key of row row of rec in slot g.
func (a *groupAgg) putKeys(g int32, rec arrow.Record, row int) {
	for i, k := range a.spec.Keys {
		a.keys[i].put(g, rec.Column(k), row)
	}
}

// putKeysEncoded is putKeys for a bytes-keyed table: a string key value
// is kept as a substring of enc, the table's copy of the encoded key (see
// encodeKeyColumns), so that a group's string key is held once.
func (a *groupAgg) putKeysEncoded(g int32, rec arrow.Record, row int, enc string) {
	p := 0
	for i, k := range a.spec.Keys {
		col := rec.Column(k)
		if sk, ok := a.keys[i].(*typedKeys[string]); ok {
			if _, isStr := col.(*array.String); isStr {
				l := int(uint32(enc[p+1]) | uint32(enc[p+2])<<8 | uint32(enc[p+3])<<16 | uint32(enc[p+4])<<24)
				sk.set(g, enc[p+5:p+5+l], enc[p] == 1)
				p += 5 + l
				continue
			}
		}
		a.keys[i].put(g, col, row)
		p += 1 + fixedWidth(col.DataType())
	}
}

func (a *groupAgg) lookup(rec arrow.Record) {
	n := int(rec.NumRows())
	if cap(a.gids) < n {
		a.gids = make([]int32, n)
	}
	a.gids = a.gids[:n]
	if a.intKey {
		col := rec.Column(a.spec.Keys[0])
		switch c := col.(type) {
		case *array.Int64:
			lookupInts(a, rec, c, c.Int64Values())
		case *array.Int32:
			lookupInts(a, rec, c, c.Int32Values())
		case *array.Timestamp:
			lookupInts(a, rec, c, c.TimestampValues())
		}
		return
	}
	// Group the rows by key first (their keys' HashKeys, which are also
	// their key groups' hashes), then encode and look up each distinct
	// key once, the index entry of the key keysAhead keys on prefetched
	// while this one is looked up.
	a.groupRows(rec)
	first := a.dedupe.first
	a.keyBuf, a.keyOffs = encodeKeyRows(rec, a.spec.Keys, first, a.keyBuf, a.keyOffs)
	a.keyHashes = slices.Grow(a.keyHashes[:0], len(first))[:len(first)]
	for j := range first {
		a.keyHashes[j] = state.KeyHash(a.keyBuf[a.keyOffs[j]:a.keyOffs[j+1]])
	}
	a.firstGids = slices.Grow(a.firstGids[:0], len(first))[:len(first)]
	for j := range first {
		if j+keysAhead < len(first) {
			a.tbl.PrefetchKey(a.keyHashes[j+keysAhead])
		}
		a.firstGids[j] = a.lookupKey(rec, j)
	}
	for i, d := range a.dedupe.of {
		a.gids[i] = a.firstGids[d]
	}
}

// groupRows groups rec's rows by key into a.dedupe (and their HashKeys
// into a.rowHashes): by hash, checked column by column; by encoded key
// when two keys of the batch share a hash (or regroup is set: a test's).
func (a *groupAgg) groupRows(rec arrow.Record) {
	if a.inHashes != nil {
		a.rowHashes = a.inHashes
	} else {
		a.hashBuf = HashKeys(rec, a.spec.Keys, a.hashBuf[:0])
		a.rowHashes = a.hashBuf
	}
	a.keyBuf, a.keyOffs, a.keyHashes = a.dedupe.groupRows(rec, a.spec.Keys, a.rowHashes, a.regroup, a.keyBuf, a.keyOffs, a.keyHashes)
}

// lookupKey returns the slot of the batch's distinct key j (its encoding
// and KeyHash in keyBuf and keyHashes, its first row dedupe.first[j]),
// inserted when absent or expired.
func (a *groupAgg) lookupKey(rec arrow.Record, j int) int32 {
	h := a.keyHashes[j]
	k := a.keyBuf[a.keyOffs[j]:a.keyOffs[j+1]]
	g, ok := a.tbl.LookupBytesHot(h, k)
	if ok && !a.tbl.Expired(g) {
		return g
	}
	row := int(a.dedupe.first[j])
	kg := keyGroup(a.rowHashes[row], a.maxP) // keyGroupOf, hashed already
	if !ok && a.tiered {
		// a cold key is read by key group
		g, ok = a.tbl.LookupBytesHashed(kg, h, k)
	}
	if ok && a.tbl.Expired(g) {
		a.dropSlot(g)
		ok = false
	}
	if !ok {
		g = a.tbl.InsertBytesHashed(h, k, kg)
		a.putKeysEncoded(g, rec, row, a.tbl.Key(g))
	}
	return g
}

// keysAhead: the aggregation prefetches the table's index entry of the
// key this many rows on (state.Table.PrefetchKey).
const keysAhead = 8

func lookupInts[T int32 | int64 | arrow.Timestamp](a *groupAgg, rec arrow.Record, col arrow.Array, vs []T) {
	nm, nulls := nullsOf(col)
	for i, v := range vs {
		if i+keysAhead < len(vs) {
			a.tbl.PrefetchInt(int64(vs[i+keysAhead]))
		}
		if nulls && nm.null(i) {
			kg := -1
			if a.tiered {
				kg = a.keyGroupOf(rec, i)
			}
			g, ok := a.tbl.LookupNullIn(kg)
			if ok && a.tbl.Expired(g) {
				a.dropSlot(g)
				ok = false
			}
			if !ok {
				g = a.tbl.InsertNull(a.keyGroupOf(rec, i))
				a.putKeys(g, rec, i)
			}
			a.gids[i] = g
			continue
		}
		g, ok := a.tbl.LookupIntHot(int64(v))
		if !ok && a.tiered {
			g, ok = a.tbl.LookupIntIn(a.keyGroupOf(rec, i), int64(v))
		}
		if ok && a.tbl.Expired(g) {
			a.dropSlot(g)
			ok = false
		}
		if !ok {
			g = a.tbl.InsertInt(int64(v), a.keyGroupOf(rec, i))
			a.putKeys(g, rec, i)
		}
		a.gids[i] = g
	}
}

// Process consumes b in slices of at most the job's batch size, so that
// changes are consolidated per configured batch (and with a batch size of 1
// the changelog is exactly Flink's per-row changelog, even when an upstream
// operator such as SPLIT turned one row into several).
func (a *groupAgg) ProcessBatch(_ int, b Batch, out Collector) error {
	defer b.Rec.Release()
	n := b.Rows()
	if n <= a.batchSize {
		if err := a.process(b, out); err != nil {
			return err
		}
		return a.tbl.MaybeEvict()
	}
	for lo := 0; lo < n; lo += a.batchSize {
		hi := min(lo+a.batchSize, n)
		part := Batch{Rec: b.Rec.NewSlice(int64(lo), int64(hi)), HashedBy: b.HashedBy}
		if b.Ops != nil {
			part.Ops = b.Ops[lo:hi]
		}
		if len(b.Hashes) == n {
			part.Hashes = b.Hashes[lo:hi]
		}
		err := a.process(part, out)
		part.Rec.Release()
		if err == nil {
			err = a.tbl.MaybeEvict() // a tiered table evicts between batches
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// process applies one batch (not owned) and emits its consolidated changes.
func (a *groupAgg) process(b Batch, out Collector) error {
	n := b.Rows()
	if n == 0 {
		return nil
	}
	if a.ctx.StateTTL > 0 {
		a.tbl.SetNow(a.ctx.Clock.Now().UnixMilli())
		// Incremental cleanup: expired groups leave the state silently
		// (Flink emits nothing for expired state).
		a.tbl.Sweep(2*n+8, a.dropSlot)
	}
	a.inHashes = nil
	if !a.intKey {
		a.inHashes = batchHashes(b, a.spec.Keys)
	}
	a.lookup(b.Rec)
	a.inHashes = nil

	// touched slots in first-touch order: a bytes-keyed lookup found them
	// (the batch's distinct keys, each its own slot); int keys are marked
	a.touched = a.touched[:0]
	if !a.intKey {
		a.touched = append(a.touched, a.firstGids...)
		for _, g := range a.touched {
			a.tbl.Touch(g)
		}
	} else {
		a.epoch++
		if a.epoch == 0 { // wrapped: clear marks
			for i := range a.mark {
				a.mark[i] = 0
			}
			a.epoch = 1
		}
		for _, g := range a.gids {
			if a.mark[g] != a.epoch {
				a.mark[g] = a.epoch
				a.touched = append(a.touched, g)
				a.tbl.Touch(g)
			}
		}
	}
	before := a.before[:0] // touched slots alive before the batch
	for _, g := range a.touched {
		if a.rowCount[g] > 0 {
			before = append(before, g)
		}
	}
	a.before = before
	// Stage the old results (aggout.go): staged index oi is before[oi].
	for _, acc := range a.accs {
		acc.staged().reset()
		acc.stage(before)
	}

	partial := partialInput(b.Rec, len(a.spec.Keys))
	byRuns := b.Ops == nil && len(a.gids) >= minRunRows && !partial
	if byRuns {
		a.runs, byRuns = gidRuns(a.gids, a.runs[:0], len(a.gids)/minRunLen)
	}
	switch {
	case partial:
		if b.Ops != nil {
			return fmt.Errorf("%s: partial groups with a changelog", a.spec.Describe())
		}
		if err := a.mergePartials(b.Rec); err != nil {
			return err
		}
	case byRuns:
		for k := 0; k+1 < len(a.runs); k++ {
			a.rowCount[a.gids[a.runs[k]]] += int64(a.runs[k+1] - a.runs[k])
		}
	case b.Ops == nil:
		for _, g := range a.gids {
			a.rowCount[g]++
		}
	default:
		for i, g := range a.gids {
			if b.Ops[i].IsAdd() {
				a.rowCount[g]++
			} else {
				a.rowCount[g]--
			}
		}
	}
	for i, acc := range a.accs {
		if partial {
			break
		}
		var col arrow.Array
		if arg := a.spec.Aggs[i].Arg; arg >= 0 {
			col = b.Rec.Column(arg)
		}
		if byRuns {
			if ru, ok := acc.(runUpdater); ok && ru.updateRuns(a.gids, a.runs, col) {
				continue
			}
		}
		acc.update(a.gids, col, b.Ops)
	}

	after := a.after[:0]
	for _, g := range a.touched {
		if a.rowCount[g] > 0 {
			after = append(after, g)
		}
	}
	a.after = after
	// Stage the new results: staged index len(before)+ni is after[ni].
	for _, acc := range a.accs {
		acc.stage(after)
	}

	// Pair old and new results per touched slot.
	oi, ni := 0, 0
	take, slots, ops := a.take[:0], a.outSlots[:0], a.ops[:0]
	pairsOld, pairsNew, pairPos := a.pairsOld[:0], a.pairsNew[:0], a.pairPos[:0]
	dead := a.dead[:0]
	nb := int32(len(before))
	for _, g := range a.touched {
		wasAlive := oi < len(before) && before[oi] == g
		isAlive := ni < len(after) && after[ni] == g
		switch {
		case wasAlive && isAlive:
			pairPos = append(pairPos, len(take))
			pairsOld = append(pairsOld, int32(oi))
			pairsNew = append(pairsNew, nb+int32(ni))
			take = append(take, int32(oi), nb+int32(ni))
			slots = append(slots, g, g)
			ops = append(ops, UpdateBefore, UpdateAfter)
		case wasAlive:
			take = append(take, int32(oi))
			slots = append(slots, g)
			ops = append(ops, Delete)
		case isAlive:
			take = append(take, nb+int32(ni))
			slots = append(slots, g)
			ops = append(ops, Insert)
		}
		if wasAlive {
			oi++
		}
		if isAlive {
			ni++
		}
		if !isAlive {
			dead = append(dead, g)
		}
	}
	a.take, a.outSlots, a.ops, a.pairsOld, a.pairsNew, a.pairPos, a.dead = take, slots, ops, pairsOld, pairsNew, pairPos, dead
	// Drop unchanged -U/+U pairs (Flink emits nothing when the result is equal).
	if len(pairPos) > 0 {
		changed := a.changed[:0]
		for range pairPos {
			changed = append(changed, false)
		}
		a.changed = changed
		for _, acc := range a.accs {
			acc.staged().diff(pairsOld, pairsNew, changed)
		}
		// Compact in place, skipping unchanged pairs.
		w, k := 0, 0
		for i := 0; i < len(take); i++ {
			if k < len(pairPos) && pairPos[k] == i {
				ch := changed[k]
				k++
				if !ch {
					i++ // skip the -U and its +U
					continue
				}
			}
			take[w], slots[w], ops[w] = take[i], slots[i], ops[i]
			w++
		}
		take, slots, ops = take[:w], slots[:w], ops[:w]
	}
	var outRec arrow.Record
	if len(take) > 0 {
		// The keys are read before the dead slots are dropped.
		cols := make([]arrow.Array, 0, len(a.keys)+len(a.accs))
		for _, k := range a.keys {
			cols = append(cols, k.take(slots, a.mem))
		}
		for _, acc := range a.accs {
			cols = append(cols, acc.staged().take(take, a.mem))
		}
		outRec = expr.NewRecord(a.schema, cols, int64(len(take)))
		for _, c := range cols {
			c.Release()
		}
	}
	for _, g := range dead {
		a.dropSlot(g)
	}
	if outRec == nil {
		return nil
	}
	// The downstream operator owns ops: a fresh slice per emitted batch.
	return out.Collect(Batch{Rec: outRec, Ops: slices.Clone(ops)})
}

func (a *groupAgg) dropSlot(g int32) {
	// The table records the key's removal (encoding it) before it is cleared.
	var ik int64
	null := false
	if a.intKey {
		null = a.tbl.NullSlot() == g
		if !null {
			ik = a.keys[0].(intKeyOf).int64At(g)
		}
	}
	a.tbl.Remove(g, ik, null)
	a.rowCount[g] = 0
	for _, acc := range a.accs {
		acc.reset(g)
	}
}

// keyStore keeps one key column's value per slot.
type keyStore interface {
	put(g int32, col arrow.Array, row int)
	gather(slots []int32, mem memory.Allocator) arrow.Array
	// take builds the column of the keys of slots (one copy).
	take(slots []int32, mem memory.Allocator) arrow.Array
	appendEncoded(dst []byte, g int32) []byte
	decode(src []byte, g int32) (int, error)
	// slotBytes estimates slot g's memory; clear releases it (a tiered
	// table evicted the slot: statetier.go).
	slotBytes(g int32) int
	clear(g int32)
}

type intKeyOf interface{ int64At(g int32) int64 }

type typedKeys[T scalar] struct {
	dt      arrow.DataType
	vals    []T
	valid   []bool
	scratch []T
	sv      []bool
}

func (k *typedKeys[T]) put(g int32, col arrow.Array, row int) {
	k.grow(g)
	if col.IsNull(row) {
		k.valid[g] = false
		return
	}
	k.valid[g] = true
	k.vals[g] = cloneScalar(valueAt[T](col, row))
}

// grow makes room for slot g.
func (k *typedKeys[T]) grow(g int32) {
	if int(g) >= len(k.vals) {
		var zero T
		k.vals = state.Grow(k.vals, int(g)+1, zero)
		k.valid = state.Grow(k.valid, int(g)+1, false)
	}
}

// set stores v (kept as is: not cloned) as slot g's key.
func (k *typedKeys[T]) set(g int32, v T, valid bool) {
	k.grow(g)
	if !valid {
		var zero T
		v = zero
	}
	k.vals[g], k.valid[g] = v, valid
}

func (k *typedKeys[T]) gather(slots []int32, mem memory.Allocator) arrow.Array {
	k.scratch = k.scratch[:0]
	k.sv = k.sv[:0]
	for _, g := range slots {
		k.scratch = append(k.scratch, k.vals[g])
		k.sv = append(k.sv, k.valid[g])
	}
	return buildArray(mem, k.dt, k.scratch, k.sv)
}

func (k *typedKeys[T]) take(slots []int32, mem memory.Allocator) arrow.Array {
	return takeCol(k.vals, k.valid, slots, k.dt, mem)
}

func (k *typedKeys[T]) int64At(g int32) int64 {
	switch v := any(k.vals[g]).(type) {
	case int32:
		return int64(v)
	case int64:
		return v
	case arrow.Timestamp:
		return int64(v)
	}
	return 0
}

// valueAt reads one value (not for hot loops), without boxing it.
func valueAt[T scalar](col arrow.Array, row int) T {
	var out T
	switch p := any(&out).(type) {
	case *int32:
		switch a := col.(type) {
		case *array.Int32:
			*p = a.Value(row)
		case *array.Int8:
			*p = int32(a.Value(row))
		case *array.Int16:
			*p = int32(a.Value(row))
		case *array.Date32:
			*p = int32(a.Value(row))
		case *array.Time32:
			*p = int32(a.Value(row))
		case *array.MonthInterval:
			*p = int32(a.Value(row))
		}
	case *int64:
		switch a := col.(type) {
		case *array.Int64:
			*p = a.Value(row)
		case *array.Duration:
			*p = int64(a.Value(row))
		}
	case *float64:
		switch a := col.(type) {
		case *array.Float64:
			*p = a.Value(row)
		case *array.Float32:
			*p = float64(a.Value(row))
		}
	case *arrow.Timestamp:
		*p = col.(*array.Timestamp).Value(row)
	case *decimal128.Num:
		*p = col.(*array.Decimal128).Value(row)
	case *string:
		*p = col.(*array.String).Value(row)
	case *bool:
		*p = col.(*array.Boolean).Value(row)
	}
	return out
}

func newKeyStore(t catalog.Type) (keyStore, error) {
	dt := t.ArrowType()
	switch stateKind(t.Kind) {
	case catalog.KindBoolean:
		return &typedKeys[bool]{dt: dt}, nil
	case catalog.KindInt:
		return &typedKeys[int32]{dt: dt}, nil
	case catalog.KindBigInt:
		return &typedKeys[int64]{dt: dt}, nil
	case catalog.KindDouble:
		return &typedKeys[float64]{dt: dt}, nil
	case catalog.KindDecimal:
		return &typedKeys[decimal128.Num]{dt: dt}, nil
	case catalog.KindString:
		return &typedKeys[string]{dt: dt}, nil
	case catalog.KindTimestamp:
		return &typedKeys[arrow.Timestamp]{dt: dt}, nil
	}
	return nil, fmt.Errorf("cannot group by type %s", t)
}
