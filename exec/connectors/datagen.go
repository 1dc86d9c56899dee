package connectors

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/exec/expr"
)

// DatagenBaseTime is the fixed "now" of random TIMESTAMP values: a random
// timestamp is DatagenBaseTime minus a uniform amount in [0, max-past].
// (Flink uses the wall clock; a fixed base keeps runs reproducible.)
const DatagenBaseTime int64 = 1704067200000 // 2024-01-01 00:00:00.000

// Datagen is the datagen source. Row n of the table (n = 0, 1, 2, ...) has
// values that depend only on (seed, column name, n); subtask i of p produces
// the split of rows i, i+p, i+2p, ... so the multiset of rows does not
// depend on the parallelism or the batch size. After a restore at another
// parallelism a subtask owns the splits of the old subtasks given to it
// (possibly several, possibly none) and produces them interleaved, one
// batch of each in turn.
type Datagen struct {
	sc     *exec.SourceContext
	schema *arrow.Schema
	fields []genField
	total  int64 // rows of the whole table; -1 = unbounded
	rate   float64
	splits []genSplit
	cur    int // the split the next batch comes from (round robin)

	// clock, replaceable in tests
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

type genField struct {
	name     string
	typ      catalog.Type
	seq      bool
	key      uint64 // hash stream of values
	nullKey  uint64 // hash stream of nulls
	nullRate float64
	nullCut  uint64 // a row is NULL when its null hash < nullCut
	lo, hi   int64  // random integer bounds (DECIMAL: unscaled)
	flo, fhi float64
	length   int
	varLen   bool
	maxPast  int64 // ms
	start    int64 // sequence start (integer sequences)
	fstart   float64
	scaleMul int64 // DECIMAL sequences: 10^scale
}

const golden = 0x9E3779B97F4A7C15

func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	x ^= x >> 31
	return x
}

func fieldOpt(t *catalog.Table, col, suffix string) (string, bool) {
	for _, o := range t.Options {
		k := o.Key
		if strings.HasPrefix(k, "fields.") && strings.HasSuffix(k, "."+suffix) &&
			len(k) > len("fields.")+len(suffix)+1 && strings.EqualFold(k[len("fields."):len(k)-len(suffix)-1], col) {
			return strings.TrimSpace(o.Value), true
		}
	}
	return "", false
}

func newDatagen(t *catalog.Table, sc *exec.SourceContext) (*Datagen, error) {
	seed := uint64(optInt(t, "seed", 0))
	g := &Datagen{
		sc:     sc,
		schema: sc.Schema.Arrow(),
		total:  -1,
		rate:   float64(optInt(t, "rows-per-second", 10000)),
		now:    time.Now,
		sleep:  sleepCtx,
	}
	if v, ok := t.Option("number-of-rows"); ok {
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		g.total = n
	}
	for _, c := range sc.Schema {
		h := fnv.New64a()
		h.Write([]byte(strings.ToLower(c.Name)))
		name := h.Sum64()
		f := genField{name: c.Name, typ: c.Type, key: mix(seed*golden ^ name), nullKey: mix((seed+1)*golden ^ name ^ 0x5bd1e995)}
		kind, _ := fieldOpt(t, c.Name, "kind")
		f.seq = strings.EqualFold(kind, "sequence")
		if v, ok := fieldOpt(t, c.Name, "null-rate"); ok {
			f.nullRate, _ = strconv.ParseFloat(v, 64)
			if f.nullRate >= 1 {
				f.nullCut = math.MaxUint64
			} else {
				f.nullCut = uint64(f.nullRate * (1 << 63) * 2)
			}
		}
		if f.seq {
			sv, _ := fieldOpt(t, c.Name, "start")
			ev, _ := fieldOpt(t, c.Name, "end")
			if c.Type.Kind == catalog.KindDouble {
				s, _ := strconv.ParseFloat(sv, 64)
				e, _ := strconv.ParseFloat(ev, 64)
				f.fstart = s
				g.bound(int64(math.Floor(e-s)) + 1)
			} else {
				s, err1 := strconv.ParseInt(sv, 10, 64)
				e, err2 := strconv.ParseInt(ev, 10, 64)
				if err1 != nil || err2 != nil {
					return nil, fmt.Errorf("datagen column '%s': sequence start and end must be integers, got '%s' and '%s'", c.Name, sv, ev)
				}
				f.start = s
				g.bound(e - s + 1)
				if c.Type.Kind == catalog.KindDecimal {
					f.scaleMul = 1
					for i := 0; i < c.Type.Scale; i++ {
						f.scaleMul *= 10
					}
				}
			}
			g.fields = append(g.fields, f)
			continue
		}
		// random
		minV, hasMin := fieldOpt(t, c.Name, "min")
		maxV, hasMax := fieldOpt(t, c.Name, "max")
		switch c.Type.Kind {
		case catalog.KindInt:
			f.lo, f.hi = math.MinInt32, math.MaxInt32
		case catalog.KindBigInt:
			f.lo, f.hi = math.MinInt64, math.MaxInt64
		case catalog.KindDecimal:
			// the type's whole range, clamped to 18 digits
			d := min(c.Type.Precision, 18)
			m := int64(1)
			for i := 0; i < d; i++ {
				m *= 10
			}
			f.lo, f.hi = -(m - 1), m-1
		case catalog.KindDouble:
			// Flink's defaults: [Double.MIN_VALUE, Double.MAX_VALUE]
			f.flo, f.fhi = math.SmallestNonzeroFloat64, math.MaxFloat64
		}
		switch c.Type.Kind {
		case catalog.KindInt, catalog.KindBigInt:
			if hasMin {
				f.lo, _ = strconv.ParseInt(minV, 10, 64)
			}
			if hasMax {
				f.hi, _ = strconv.ParseInt(maxV, 10, 64)
			}
		case catalog.KindDouble:
			if hasMin {
				f.flo, _ = strconv.ParseFloat(minV, 64)
			}
			if hasMax {
				f.fhi, _ = strconv.ParseFloat(maxV, 64)
			}
		case catalog.KindDecimal:
			scale := math.Pow(10, float64(c.Type.Scale))
			if hasMin {
				v, _ := strconv.ParseFloat(minV, 64)
				f.lo = int64(math.Max(math.Ceil(v*scale), float64(f.lo)))
			}
			if hasMax {
				v, _ := strconv.ParseFloat(maxV, 64)
				f.hi = int64(math.Min(math.Floor(v*scale), float64(f.hi)))
			}
		}
		if f.lo > f.hi || f.flo > f.fhi {
			return nil, fmt.Errorf("datagen column '%s': min is greater than max", c.Name)
		}
		f.length = 100
		if v, ok := fieldOpt(t, c.Name, "length"); ok {
			n, _ := strconv.Atoi(v)
			f.length = n
		}
		if v, ok := fieldOpt(t, c.Name, "var-len"); ok {
			f.varLen, _ = catalog.ParseBool(v)
		}
		if v, ok := fieldOpt(t, c.Name, "max-past"); ok {
			d, _ := catalog.ParseDuration(v)
			f.maxPast = d.Milliseconds()
		}
		g.fields = append(g.fields, f)
	}
	g.splits = []genSplit{g.ownSplit()}
	return g, nil
}

// genSplit is one arithmetic progression of table rows: start, start+step,
// start+2*step, ... below bound (bound < 0: unbounded), of which the first
// k were emitted.
type genSplit struct {
	start, step uint64
	bound       int64
	k           int64
}

// ownSplit is the split of this subtask when the job starts afresh.
func (g *Datagen) ownSplit() genSplit {
	return genSplit{start: uint64(g.sc.Subtask), step: uint64(g.sc.Parallelism), bound: g.total}
}

// remaining returns the rows of the split still to produce, or -1.
func (s *genSplit) remaining() int64 {
	if s.bound < 0 {
		return -1
	}
	n := int64(0)
	if uint64(s.bound) > s.start {
		n = int64((uint64(s.bound) - s.start + s.step - 1) / s.step)
	}
	return max(n-s.k, 0)
}

// bound limits the table to n rows (sequences end the source).
func (g *Datagen) bound(n int64) {
	if n < 0 {
		n = 0
	}
	if g.total < 0 || n < g.total {
		g.total = n
	}
}

// Offset returns the number of rows this subtask has emitted (over all its
// splits). Offset and SeekTo are called from the goroutine running Run
// (e.g. inside emit) or while Run is not running.
func (g *Datagen) Offset() int64 {
	n := int64(0)
	for _, s := range g.splits {
		n += s.k
	}
	return n
}

// SeekTo makes this subtask produce its own split (rows Subtask + m *
// Parallelism) from its n-th row (0-based) on, dropping any splits taken
// over from a restore.
func (g *Datagen) SeekTo(n int64) {
	s := g.ownSplit()
	s.k = n
	g.splits, g.cur = []genSplit{s}, 0
}

// SnapshotState implements exec.CheckpointedSource. The state (version 2)
// is the header (see state.go), the uvarint number of splits this subtask
// owns and per split: uvarint start, uvarint step, uvarint bound+1 (0:
// unbounded) and uvarint k, the rows of the split emitted. Row values
// depend only on (seed, column, row index), so this is all a restored
// generator needs to continue with exactly the same rows, at any batch size
// and parallelism. A restored split keeps its bound: a changed
// 'number-of-rows' or sequence end applies to new jobs only. The rate
// limiter starts afresh after a restore.
//
// Version 1 held only k, the rows emitted of the split (Subtask,
// Parallelism, the table's bound); it is still read.
func (g *Datagen) SnapshotState() ([]byte, error) {
	return appendSplits(stateHeader(kindDatagen, g.sc.Subtask, g.sc.Parallelism), g.splits), nil
}

// appendSplits appends the uvarint number of splits and per split: uvarint
// start, uvarint step, uvarint bound+1 (0: unbounded) and uvarint k.
func appendSplits(b []byte, splits []genSplit) []byte {
	b = binary.AppendUvarint(b, uint64(len(splits)))
	for _, s := range splits {
		b = binary.AppendUvarint(b, s.start)
		b = binary.AppendUvarint(b, s.step)
		b = binary.AppendUvarint(b, uint64(s.bound+1))
		b = binary.AppendUvarint(b, uint64(s.k))
	}
	return b
}

// RestoreState implements exec.CheckpointedSource: the subtask continues
// every split of the state where the snapshot was taken.
func (g *Datagen) RestoreState(state []byte) error {
	r, err := openState(state, kindDatagen, g.sc.Subtask, g.sc.Parallelism)
	if err != nil {
		return err
	}
	splits, err := g.readSplits(r, nil)
	if err != nil {
		return err
	}
	g.splits, g.cur = splits, 0
	return nil
}

// RestoreSplits implements exec.SplitSource. Every subtask gathers the
// unfinished splits of all old subtasks in order; when there are fewer
// splits than subtasks, each is cut into c = ceil(Parallelism/splits)
// interleaved parts (rows next, next+c*step, ...; next+step, ...), so an
// upscale puts every new subtask to work (evenly when the parallelism is a
// multiple of the splits); then split j goes to subtask j mod Parallelism.
// Row values depend only on the row index, so cutting a split changes no
// row. With no split left the subtask produces nothing. Its later
// snapshots list its splits, so a job can be rescaled again.
func (g *Datagen) RestoreSplits(states [][]byte, owned []bool) error {
	rs, err := openAllStates(states, kindDatagen)
	if err != nil {
		return err
	}
	var all []genSplit
	for _, r := range rs {
		if all, err = g.readSplits(r, all); err != nil {
			return err
		}
	}
	g.splits, g.cur = assignSplits(all, g.sc.Subtask, g.sc.Parallelism), 0
	return nil
}

// assignSplits returns the share of subtask of parallelism p of all the
// unfinished splits (see Datagen.RestoreSplits).
func assignSplits(all []genSplit, subtask, p int) []genSplit {
	var live []genSplit
	for _, s := range all {
		if s.remaining() != 0 {
			live = append(live, s)
		}
	}
	if len(live) > 0 && len(live) < p {
		live = cutSplits(live, (p+len(live)-1)/len(live))
	}
	var mine []genSplit
	for j, s := range live {
		if j%p == subtask {
			mine = append(mine, s)
		}
	}
	return mine
}

// maxSplitStep bounds how finely cutSplits divides a sequence.
const maxSplitStep = 1 << 40

// cutSplits cuts every split into c interleaved parts, in place of it and
// in order; a split with fewer than c rows left, or whose step would pass
// maxSplitStep, stays whole.
func cutSplits(splits []genSplit, c int) []genSplit {
	out := make([]genSplit, 0, len(splits)*c)
	for _, s := range splits {
		if r := s.remaining(); (r >= 0 && r < int64(c)) || s.step*uint64(c) > maxSplitStep {
			out = append(out, s)
			continue
		}
		next := s.start + s.step*uint64(s.k)
		for i := 0; i < c; i++ {
			out = append(out, genSplit{start: next + uint64(i)*s.step, step: uint64(c) * s.step, bound: s.bound})
		}
	}
	return out
}

// readSplits decodes the splits of a state after its header and appends
// them to dst.
func (g *Datagen) readSplits(r *stateReader, dst []genSplit) ([]genSplit, error) {
	if r.version == 1 {
		k := r.int()
		if err := r.end(); err != nil {
			return nil, err
		}
		return append(dst, genSplit{start: uint64(r.subtask), step: uint64(r.parallelism), bound: g.total, k: k}), nil
	}
	return readSplitList(r, dst)
}

// readSplitList decodes what appendSplits wrote, which ends the state,
// and appends the splits to dst.
func readSplitList(r *stateReader, dst []genSplit) ([]genSplit, error) {
	n := r.count(4)
	for i := 0; i < n; i++ {
		s := genSplit{start: r.uint(), step: r.uint(), bound: r.int() - 1, k: r.int()}
		if r.err == nil && (s.step == 0 || s.step > maxSplitStep || s.k < 0) {
			r.fail()
		}
		dst = append(dst, s)
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	return dst, nil
}

// next returns the index of the split the next batch comes from.
func (g *Datagen) next() int { return nextSplit(g.splits, g.cur) }

// nextSplit returns the first split with rows left from cur on, round
// robin; -1 when every split is done.
func nextSplit(splits []genSplit, cur int) int {
	for j := range splits {
		i := (cur + j) % len(splits)
		if splits[i].remaining() != 0 {
			return i
		}
	}
	return -1
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Run generates batches until the table's rows are produced or ctx is done.
func (g *Datagen) Run(ctx context.Context, emit func(arrow.Record) error) error {
	lim := g.newLimiter()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		i := g.next()
		if i < 0 {
			return nil
		}
		s := &g.splits[i]
		n := int64(g.sc.BatchSize)
		if r := s.remaining(); r >= 0 {
			n = min(n, r)
		}
		if lim != nil {
			var err error
			if n, err = lim.take(ctx, n, emit); err != nil {
				return err
			}
		}
		gt := startGen()
		rec := g.generate(s, n)
		gt.stop()
		s.k += n
		g.cur = i + 1
		if err := emit(rec); err != nil {
			return err
		}
	}
}

// Close implements exec.Source.
func (g *Datagen) Close() error { return nil }

// limiter is a token bucket of this subtask's share of rows-per-second,
// consulted once per batch.
type limiter struct {
	g      *Datagen
	rate   float64 // rows per second of this subtask
	tokens float64
	last   time.Time
	lastEm time.Time // last emission (for linger)
}

func (g *Datagen) newLimiter() *limiter {
	if g.rate <= 0 {
		return nil
	}
	now := g.now()
	return &limiter{g: g, rate: g.rate / float64(g.sc.Parallelism), tokens: 1, last: now, lastEm: now}
}

// take waits until it may emit up to n rows and returns how many: n when the
// bucket holds n tokens, fewer (at least 1) once Linger has passed since the
// last emission. While waiting it calls emit(nil) at least every Linger.
func (l *limiter) take(ctx context.Context, n int64, emit func(arrow.Record) error) (int64, error) {
	linger := l.g.sc.Linger
	if linger <= 0 {
		linger = 100 * time.Millisecond
	}
	burst := math.Max(float64(n), l.rate) // at most one second (or one batch) of backlog
	for {
		now := l.g.now()
		l.tokens = math.Min(burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
		l.last = now
		avail := int64(l.tokens)
		if avail >= n || avail >= 1 && (l.g.sc.Linger <= 0 || now.Sub(l.lastEm) >= l.g.sc.Linger) {
			k := min(avail, n)
			l.tokens -= float64(k)
			l.lastEm = now
			return k, nil
		}
		wait := time.Duration((float64(n) - l.tokens) / l.rate * float64(time.Second))
		if avail >= 1 {
			wait = min(wait, l.g.sc.Linger-now.Sub(l.lastEm))
		}
		wait = max(min(wait, linger), time.Millisecond)
		if err := l.g.sleep(ctx, wait); err != nil {
			return 0, err
		}
		if avail < 1 {
			if err := emit(nil); err != nil {
				return 0, err
			}
		}
	}
}

// Generate builds the next n rows of the split Run would produce next
// (its rows k, k+1, ..., i.e. table rows start + (k+j)*step) without moving
// the position. When every split is done it continues the first one past
// its bound; with no split at all the record is empty.
func (g *Datagen) Generate(n int64) arrow.Record {
	if len(g.splits) == 0 {
		return g.generate(&genSplit{step: 1}, 0)
	}
	return g.generate(&g.splits[max(g.next(), 0)], n)
}

func (g *Datagen) generate(s *genSplit, n int64) arrow.Record {
	mem := g.sc.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	first := s.start + uint64(s.k)*s.step
	cols := make([]arrow.Array, len(g.fields))
	for i := range g.fields {
		cols[i] = g.fields[i].generate(mem, int(n), first, s.step)
	}
	rec := expr.NewRecord(g.schema, cols, n)
	for _, c := range cols {
		c.Release()
	}
	return rec
}

func (f *genField) nulls(mem memory.Allocator, n int, first, step uint64) (*memory.Buffer, int) {
	if f.nullCut == 0 {
		return nil, 0
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	bm := buf.Bytes()
	for i := range bm {
		bm[i] = 0
	}
	nulls := 0
	row := first
	for j := 0; j < n; j++ {
		if mix(f.nullKey+row*golden) >= f.nullCut {
			bitutil.SetBit(bm, j)
		} else {
			nulls++
		}
		row += step
	}
	return buf, nulls
}

func fixedBuf(mem memory.Allocator, bytes int) *memory.Buffer {
	b := memory.NewResizableBuffer(mem)
	b.Resize(bytes)
	return b
}

func (f *genField) generate(mem memory.Allocator, n int, first, step uint64) arrow.Array {
	validity, nullN := f.nulls(mem, n, first, step)
	dt := f.typ.ArrowType()
	var bufs []*memory.Buffer
	switch f.typ.Kind {
	case catalog.KindBigInt, catalog.KindTimestamp:
		b := fixedBuf(mem, n*8)
		v := arrow.Int64Traits.CastFromBytes(b.Bytes())
		f.fillInt64(v, first, step)
		bufs = []*memory.Buffer{validity, b}
	case catalog.KindInt:
		b := fixedBuf(mem, n*4)
		v := arrow.Int32Traits.CastFromBytes(b.Bytes())
		row := first
		if f.seq {
			for j := range v {
				v[j] = int32(f.start + int64(row))
				row += step
			}
		} else {
			w := uint64(f.hi-f.lo) + 1
			for j := range v {
				hi, _ := bits.Mul64(mix(f.key+row*golden), w)
				v[j] = int32(f.lo + int64(hi))
				row += step
			}
		}
		bufs = []*memory.Buffer{validity, b}
	case catalog.KindDouble:
		b := fixedBuf(mem, n*8)
		v := arrow.Float64Traits.CastFromBytes(b.Bytes())
		row := first
		if f.seq {
			for j := range v {
				v[j] = f.fstart + float64(row)
				row += step
			}
		} else {
			for j := range v {
				u := float64(mix(f.key+row*golden)>>11) * (1.0 / (1 << 53))
				v[j] = f.flo*(1-u) + f.fhi*u
				row += step
			}
		}
		bufs = []*memory.Buffer{validity, b}
	case catalog.KindDecimal:
		b := fixedBuf(mem, n*16)
		v := arrow.Decimal128Traits.CastFromBytes(b.Bytes())
		row := first
		w := uint64(f.hi-f.lo) + 1
		for j := range v {
			var x int64
			if f.seq {
				x = (f.start + int64(row)) * f.scaleMul
			} else {
				hi, _ := bits.Mul64(mix(f.key+row*golden), w)
				x = f.lo + int64(hi)
			}
			v[j] = decimal128.FromI64(x)
			row += step
		}
		bufs = []*memory.Buffer{validity, b}
	case catalog.KindBoolean:
		b := fixedBuf(mem, int(bitutil.BytesForBits(int64(n))))
		bm := b.Bytes()
		for i := range bm {
			bm[i] = 0
		}
		row := first
		for j := 0; j < n; j++ {
			if mix(f.key+row*golden)&1 == 1 {
				bitutil.SetBit(bm, j)
			}
			row += step
		}
		bufs = []*memory.Buffer{validity, b}
	case catalog.KindString:
		return f.genStrings(mem, n, first, step, validity, nullN)
	}
	data := array.NewData(dt, n, bufs, nil, nullN, 0)
	arr := array.MakeFromData(data)
	data.Release()
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	return arr
}

func (f *genField) fillInt64(v []int64, first, step uint64) {
	row := first
	switch {
	case f.seq:
		for j := range v {
			v[j] = f.start + int64(row)
			row += step
		}
	case f.typ.Kind == catalog.KindTimestamp:
		w := uint64(f.maxPast) + 1
		for j := range v {
			hi, _ := bits.Mul64(mix(f.key+row*golden), w)
			v[j] = DatagenBaseTime - int64(hi)
			row += step
		}
	case f.lo == math.MinInt64 && f.hi == math.MaxInt64:
		for j := range v {
			v[j] = int64(mix(f.key + row*golden))
			row += step
		}
	default:
		w := uint64(f.hi-f.lo) + 1
		for j := range v {
			hi, _ := bits.Mul64(mix(f.key+row*golden), w)
			v[j] = f.lo + int64(hi)
			row += step
		}
	}
}

const hexChars = "0123456789abcdef"

func (f *genField) genStrings(mem memory.Allocator, n int, first, step uint64, validity *memory.Buffer, nullN int) arrow.Array {
	offBuf := fixedBuf(mem, (n+1)*4)
	offs := arrow.Int32Traits.CastFromBytes(offBuf.Bytes())
	var data []byte
	if !f.seq {
		total := 0
		row := first
		for j := 0; j < n; j++ {
			offs[j] = int32(total)
			total += f.strLen(row)
			row += step
		}
		offs[n] = int32(total)
		dataBuf := fixedBuf(mem, total)
		data = dataBuf.Bytes()
		row = first
		for j := 0; j < n; j++ {
			out := data[offs[j]:offs[j+1]]
			for c := 0; c < len(out); c += 16 {
				h := mix(f.key + row*golden + uint64(c/16+1)*0xD6E8FEB86659FD93)
				for k := c; k < len(out) && k < c+16; k++ {
					out[k] = hexChars[h&15]
					h >>= 4
				}
			}
			row += step
		}
		return stringArray(n, validity, nullN, offBuf, dataBuf)
	}
	dataBuf := memory.NewResizableBuffer(mem)
	scratch := make([]byte, 0, n*8)
	row := first
	for j := 0; j < n; j++ {
		offs[j] = int32(len(scratch))
		scratch = strconv.AppendInt(scratch, f.start+int64(row), 10)
		row += step
	}
	offs[n] = int32(len(scratch))
	dataBuf.Resize(len(scratch))
	copy(dataBuf.Bytes(), scratch)
	return stringArray(n, validity, nullN, offBuf, dataBuf)
}

func (f *genField) strLen(row uint64) int {
	if !f.varLen || f.length == 0 {
		return f.length
	}
	hi, _ := bits.Mul64(mix(f.key^0x2545F4914F6CDD1D+row*golden), uint64(f.length))
	return 1 + int(hi)
}

func stringArray(n int, validity *memory.Buffer, nullN int, offs, data *memory.Buffer) arrow.Array {
	d := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{validity, offs, data}, nil, nullN, 0)
	arr := array.MakeFromData(d)
	d.Release()
	if validity != nil {
		validity.Release()
	}
	offs.Release()
	data.Release()
	return arr
}
