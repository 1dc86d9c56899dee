package connectors

import (
	"sync"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/exec/expr"
)

// The fields of each ROW, by position in NexmarkSchema.
const (
	pID, pName, pEmail, pCard, pCity, pState, pTime, pExtra                         = 0, 1, 2, 3, 4, 5, 6, 7
	aID, aName, aDesc, aInitial, aReserve, aTime, aExpires, aSeller, aCategory, aXt = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
	bAuction, bBidder, bPrice, bChannel, bURL, bTime, bExtra                        = 0, 1, 2, 3, 4, 5, 6
)

// nexBatch builds one batch of events of NexmarkSchema, generating only the
// columns and ROW fields the job reads (exec.SourceContext.Columns): the
// others are all-null arrays, made once and shared by every batch. Integer
// and timestamp fields are written straight into their Arrow buffers (no
// builder call per value); a ROW's fields share its validity bitmap. An
// event's random draws come from its own generator (seeded by its number),
// so a field not generated changes no other field.
type nexBatch struct {
	mem   memory.Allocator // the job's: builders, null arrays
	pool  *bufPool         // the integer fields' and validity buffers
	batch int              // the batch size: null arrays of that length are cached

	kind    bool // event_type is read
	kinds   []int32
	kindBuf *memory.Buffer

	rows [3]nexRow // person, auction, bid

	scratch []byte
	// nulls caches the all-null arrays of batch rows: per ROW, the whole
	// column (index 0) and each field (1+f).
	nulls [3][]arrow.Array
	kind0 arrow.Array // event_type, when not read
}

// nexRow is a ROW column being built.
type nexRow struct {
	typ    *arrow.StructType
	used   bool   // the column is read
	fields []bool // its fields that are read
	// anyRandom: a read field needs the event's random draws (every
	// field but id and dateTime).
	anyRandom bool

	pool   *bufPool // the batch's
	valid  *memory.Buffer
	bits   []byte
	nulls  int
	ints   []nexInts // by field; vals nil unless read and integer
	strs   []nexStrs // by field; used unless read and a string
	intIdx []int     // the read integer fields
	strIdx []int     // the read string fields
}

// nexInts is an int64 or timestamp field written in place.
type nexInts struct {
	buf  *memory.Buffer
	vals []int64
}

func newNexBatch(mem memory.Allocator, batch int, use []exec.ColumnUse, plan []nexColumn) *nexBatch {
	b := &nexBatch{mem: mem, pool: &bufPool{parent: mem, free: map[int][][]byte{}}, batch: batch}
	// Map the table's column use onto NexmarkSchema's columns.
	gen := make([]exec.ColumnUse, NexmarkSchema.NumFields())
	for i, p := range plan {
		u := exec.ColumnUse{Used: true}
		if use != nil {
			u = use[i]
		}
		if !u.Used {
			continue
		}
		g := &gen[p.col]
		g.Used = true
		st, ok := NexmarkSchema.Field(p.col).Type.(*arrow.StructType)
		if !ok {
			continue
		}
		if g.Fields == nil {
			g.Fields = make([]bool, st.NumFields())
		}
		for k := range st.NumFields() {
			if p.fields == nil {
				if u.FieldUsed(k) {
					g.Fields[k] = true
				}
				continue
			}
			for j, f := range p.fields {
				if f == k && u.FieldUsed(j) {
					g.Fields[k] = true
				}
			}
		}
	}
	b.kind = gen[0].Used
	for r := range b.rows {
		row := &b.rows[r]
		row.typ = NexmarkSchema.Field(1 + r).Type.(*arrow.StructType)
		row.pool = b.pool
		u := gen[1+r]
		row.used = u.Used
		n := row.typ.NumFields()
		row.fields = make([]bool, n)
		row.ints = make([]nexInts, n)
		row.strs = make([]nexStrs, n)
		if !row.used {
			continue
		}
		timeField := []int{pTime, aTime, bTime}[r]
		// a person's and an auction's id (field 0) follow from the event
		// number; a bid's field 0 (its auction) is drawn
		idField := []int{0, 0, -1}[r]
		for f := range n {
			if !u.Fields[f] {
				continue
			}
			row.fields[f] = true
			if f != idField && f != timeField {
				row.anyRandom = true
			}
			if row.typ.Field(f).Type.ID() == arrow.STRING {
				row.strs[f].used = true
				row.strIdx = append(row.strIdx, f)
			} else {
				row.intIdx = append(row.intIdx, f)
			}
		}
	}
	b.nulls = [3][]arrow.Array{
		make([]arrow.Array, 1+b.rows[0].typ.NumFields()),
		make([]arrow.Array, 1+b.rows[1].typ.NumFields()),
		make([]arrow.Array, 1+b.rows[2].typ.NumFields()),
	}
	return b
}

// needTables reports whether a field read is drawn from the seed's tables
// (nexTables: the padding pool and the channels): an extra, a channel or
// a URL.
func (b *nexBatch) needTables() bool {
	p, a, d := &b.rows[0], &b.rows[1], &b.rows[2]
	return p.used && p.fields[pExtra] || a.used && a.fields[aXt] ||
		d.used && (d.fields[bChannel] || d.fields[bURL] || d.fields[bExtra])
}

// start begins a batch of n events.
func (b *nexBatch) start(n int, c *nexConfig) {
	if b.kind {
		b.kindBuf = newBuffer(b.pool, n*4)
		b.kinds = arrow.Int32Traits.CastFromBytes(b.kindBuf.Bytes())[:n]
	}
	for r := range b.rows {
		row := &b.rows[r]
		if !row.used {
			continue
		}
		row.valid = newBuffer(b.pool, (n+7)/8)
		row.bits = row.valid.Bytes()[:(n+7)/8]
		clear(row.bits)
		row.nulls = 0
		for _, f := range row.intIdx {
			buf := newBuffer(b.pool, n*8)
			row.ints[f] = nexInts{buf: buf, vals: arrow.Int64Traits.CastFromBytes(buf.Bytes())[:n]}
		}
		for _, f := range row.strIdx {
			row.strs[f].start(b.pool, n, nexStringBytes(r, f, n, c))
		}
	}
}

// nexStringBytes estimates the bytes of string field f of ROW r in a
// batch of n events (by the average sizes), so that appending does not
// grow its buffer event by event.
func nexStringBytes(r, f, n int, c *nexConfig) int {
	rows := n * int([]int64{c.personProp, c.auctionProp, c.bidProp}[r]) / int(c.total)
	per := 0
	switch {
	case r == 0 && f == pExtra:
		per = max(c.personSize-60, 0)
	case r == 0:
		per = 16
	case r == 1 && f == aXt:
		per = max(c.auctionSize-100, 0)
	case r == 1 && f == aDesc:
		per = 50
	case r == 1:
		per = 10
	case f == bExtra:
		per = max(c.bidSize-32, 0)
	case f == bURL:
		per = 80
	default:
		per = 12
	}
	return (rows + 1) * per
}

func newBuffer(mem memory.Allocator, size int) *memory.Buffer {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(size)
	return buf
}

// other marks row i as not of this ROW's kind (NULL).
func (row *nexRow) other(i int) {
	row.nulls++
	for _, f := range row.intIdx {
		row.ints[f].vals[i] = 0
	}
	for _, f := range row.strIdx {
		row.strs[f].null()
	}
}

func (row *nexRow) setInt(f, i int, v int64) {
	if row.fields[f] {
		row.ints[f].vals[i] = v
	}
}

func (row *nexRow) setStr(f int, s []byte) {
	if row.fields[f] {
		row.strs[f].appendBytes(row.pool, s)
	}
}

func (row *nexRow) setString(f int, s string) {
	if row.fields[f] {
		row.strs[f].appendString(row.pool, s)
	}
}

// event writes event n as row i.
func (b *nexBatch) event(c *nexConfig, t *nexTables, n int64, i int) {
	kind := c.kind(n)
	if b.kind {
		b.kinds[i] = int32(kind)
	}
	for r := range b.rows {
		row := &b.rows[r]
		if !row.used {
			continue
		}
		if nexKind(r) != kind {
			row.other(i)
			continue
		}
		row.bits[i>>3] |= 1 << (i & 7)
		ts := c.timestamp(n)
		switch kind {
		case nexPerson:
			b.person(c, t, n, ts, row, i)
		case nexAuction:
			b.auction(c, t, n, ts, row, i)
		default:
			b.bid(c, t, n, ts, row, i)
		}
	}
}

func (b *nexBatch) person(c *nexConfig, t *nexTables, n, ts int64, row *nexRow, i int) {
	row.setInt(pID, i, c.lastPerson(n)+nexFirstPersonID)
	row.setInt(pTime, i, ts)
	if !row.anyRandom {
		return
	}
	r := newNexRand(c.seed, n)
	s := append(b.scratch[:0], nexFirstNames[r.intn(int64(len(nexFirstNames)))]...)
	s = append(s, ' ')
	s = append(s, nexLastNames[r.intn(int64(len(nexLastNames)))]...)
	row.setStr(pName, s)
	size := len(s)
	s = nexString(s[:0], &r, 7, ' ')
	s = append(s, '@')
	s = append(nexString(s, &r, 5, ' '), ".com"...)
	row.setStr(pEmail, s)
	size += len(s)
	s = s[:0]
	for k := 0; k < 4; k++ {
		if k > 0 {
			s = append(s, ' ')
		}
		d := r.intn(10000)
		s = append(s, byte('0'+d/1000), byte('0'+d/100%10), byte('0'+d/10%10), byte('0'+d%10))
	}
	row.setStr(pCard, s)
	city, state := nexCities[r.intn(int64(len(nexCities)))], nexStates[r.intn(int64(len(nexStates)))]
	row.setString(pCity, city)
	row.setString(pState, state)
	size += 8 + len(s) + len(city) + len(state)
	if row.fields[pExtra] {
		row.setStr(pExtra, nexExtra(t.pool, &r, size, c.personSize))
	}
	b.scratch = s
}

func (b *nexBatch) auction(c *nexConfig, t *nexTables, n, ts int64, row *nexRow, i int) {
	row.setInt(aID, i, c.lastAuction(n)+nexFirstAuctionID)
	row.setInt(aTime, i, ts)
	if !row.anyRandom {
		return
	}
	r := newNexRand(c.seed, n)
	var seller int64
	if r.intn(int64(c.hotSellers)) > 0 { // a hot seller: the first of the last 100 people
		seller = c.lastPerson(n) / nexHotSellerRatio * nexHotSellerRatio
	} else {
		seller = c.nextPerson(n, &r)
	}
	category := nexFirstCategoryID + r.intn(nexNumCategories)
	initial := nexPrice(&r)
	// expires: on average when the auction inFlightAuctions later is created
	ahead := c.inFlightAuctions * c.total / c.auctionProp
	horizon := c.timestamp(n+ahead) - ts
	expires := ts + 1 + r.intn(max(horizon*2, 1))
	s := nexString(b.scratch[:0], &r, 20, ' ')
	row.setStr(aName, s)
	size := len(s)
	s = nexString(s[:0], &r, 100, ' ')
	row.setStr(aDesc, s)
	size += len(s)
	b.scratch = s
	row.setInt(aInitial, i, initial)
	if row.fields[aReserve] || row.fields[aXt] {
		row.setInt(aReserve, i, initial+nexPrice(&r))
	}
	row.setInt(aExpires, i, expires)
	row.setInt(aSeller, i, seller+nexFirstPersonID)
	row.setInt(aCategory, i, category)
	if row.fields[aXt] {
		row.setStr(aXt, nexExtra(t.pool, &r, 8+size+40, c.auctionSize))
	}
}

func (b *nexBatch) bid(c *nexConfig, t *nexTables, n, ts int64, row *nexRow, i int) {
	row.setInt(bTime, i, ts)
	if !row.anyRandom {
		return
	}
	r := newNexRand(c.seed, n)
	if !row.fields[bAuction] && !row.fields[bBidder] {
		// Only the draws: a cold auction or bidder takes one more.
		if r.intn(int64(c.hotAuctions)) == 0 {
			r.next()
		}
		if r.intn(int64(c.hotBidders)) == 0 {
			r.next()
		}
	} else {
		b.bidParties(c, n, row, i, &r)
	}
	if !(row.fields[bPrice] || row.fields[bChannel] || row.fields[bURL] || row.fields[bExtra]) {
		return
	}
	row.setInt(bPrice, i, nexPrice(&r))
	if !(row.fields[bChannel] || row.fields[bURL] || row.fields[bExtra]) {
		return
	}
	// The channel is drawn whatever is read (the extra's draws follow);
	// the tables (10,000 entries each: a cache miss) are read only for
	// a field generated.
	if r.intn(2) > 0 {
		k := r.intn(nexHotChannels)
		row.setString(bChannel, nexHotNames[k])
		if row.fields[bURL] {
			row.setString(bURL, t.hotURLs[k])
		}
	} else {
		k := r.intn(nexChannels)
		if row.fields[bChannel] {
			row.setString(bChannel, t.channels[k])
		}
		if row.fields[bURL] {
			row.setString(bURL, t.channelURLs[k])
		}
	}
	if row.fields[bExtra] {
		row.setStr(bExtra, nexExtra(t.pool, &r, 32, c.bidSize))
	}
}

// bidParties draws a bid's auction and bidder.
func (b *nexBatch) bidParties(c *nexConfig, n int64, row *nexRow, i int, r *nexRand) {
	var auction int64
	if r.intn(int64(c.hotAuctions)) > 0 { // a hot auction: the first of the last 100
		auction = c.lastAuction(n) / nexHotAuctionRatio * nexHotAuctionRatio
	} else {
		auction = c.nextAuction(n, r)
	}
	var bidder int64
	if r.intn(int64(c.hotBidders)) > 0 { // a hot bidder: the second of the last 100 people
		bidder = c.lastPerson(n)/nexHotBidderRatio*nexHotBidderRatio + 1
	} else {
		bidder = c.nextPerson(n, r)
	}
	row.setInt(bAuction, i, auction+nexFirstAuctionID)
	// The reference generator adds FIRST_PERSON_ID to the bidder twice;
	// kept, so that bidders join people as they do in Flink's runs.
	row.setInt(bBidder, i, bidder+2*nexFirstPersonID)
}

// record finishes the batch of n events as a record of NexmarkSchema.
func (b *nexBatch) record(n int) arrow.Record {
	cols := make([]arrow.Array, 0, 4)
	if b.kind {
		d := array.NewData(arrow.PrimitiveTypes.Int32, n, []*memory.Buffer{nil, b.kindBuf}, nil, 0, 0)
		cols = append(cols, array.NewInt32Data(d))
		d.Release()
		b.kindBuf.Release()
		b.kindBuf, b.kinds = nil, nil
	} else {
		cols = append(cols, b.nullArray(&b.kind0, arrow.PrimitiveTypes.Int32, n))
	}
	for r := range b.rows {
		cols = append(cols, b.rowArray(r, n))
	}
	rec := expr.NewRecord(NexmarkSchema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// rowArray finishes ROW column r.
func (b *nexBatch) rowArray(r, n int) arrow.Array {
	row := &b.rows[r]
	cache := b.nulls[r]
	if !row.used {
		return b.nullArray(&cache[0], row.typ, n)
	}
	kids := make([]arrow.ArrayData, row.typ.NumFields())
	for f := range kids {
		var a arrow.Array
		switch {
		case row.ints[f].buf != nil:
			d := array.NewData(row.typ.Field(f).Type, n, []*memory.Buffer{row.valid, row.ints[f].buf}, nil, row.nulls, 0)
			a = array.MakeFromData(d)
			d.Release()
			row.ints[f].buf.Release()
			row.ints[f] = nexInts{}
		case row.strs[f].used:
			d := row.strs[f].finish(row.typ.Field(f).Type, n, row.valid, row.nulls)
			a = array.MakeFromData(d)
			d.Release()
		default:
			a = b.nullArray(&cache[1+f], row.typ.Field(f).Type, n)
		}
		kids[f] = a.Data()
		kids[f].Retain()
		a.Release()
	}
	data := array.NewData(row.typ, n, []*memory.Buffer{row.valid}, kids, row.nulls, 0)
	row.valid.Release()
	row.valid, row.bits = nil, nil
	for _, k := range kids {
		k.Release()
	}
	a := array.NewStructData(data)
	data.Release()
	return a
}

// nullArray returns an all-null array of n rows of dt (a reference): of
// batch rows, the one cached in *slot.
func (b *nexBatch) nullArray(slot *arrow.Array, dt arrow.DataType, n int) arrow.Array {
	if n != b.batch {
		return array.MakeArrayOfNull(b.mem, dt, n)
	}
	if *slot == nil {
		*slot = array.MakeArrayOfNull(b.mem, dt, n)
	}
	(*slot).Retain()
	return *slot
}

// bufPool is the allocator of the buffers the source writes in place
// (every byte of them is written before use: they need not be zeroed). A
// buffer comes back when the last reference to it is released, on any
// goroutine, and is handed out again for the next batch: the consumers own
// the batch as usual, and the source reuses only what they gave back. At
// most bufPoolKeep buffers of each size are kept; after close every buffer
// goes back to the parent.
type bufPool struct {
	parent memory.Allocator
	mu     sync.Mutex
	free   map[int][][]byte // by size
	closed bool
}

const bufPoolKeep = 64

// poisonRecycled: this is a test binary (go test): buffers coming back to
// a bufPool are poisoned with recycledPoison (internal/memtest.Poison,
// which exec may not import).
var poisonRecycled = testing.Testing()

const recycledPoison = 0xA5

func (p *bufPool) Allocate(size int) []byte {
	p.mu.Lock()
	if l := p.free[size]; len(l) > 0 {
		buf := l[len(l)-1]
		p.free[size] = l[:len(l)-1]
		p.mu.Unlock()
		return buf
	}
	p.mu.Unlock()
	return p.parent.Allocate(size)
}

func (p *bufPool) Reallocate(size int, b []byte) []byte {
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free takes back a buffer whose last reference was released. In a test
// binary it is overwritten with poison first, as internal/memtest's
// poisoning allocator does with freed memory: an operator that kept a
// view of a batch it released reads poison (or the next batch's values),
// not the old ones, whichever allocator the test gave the job.
func (p *bufPool) Free(b []byte) {
	if poisonRecycled {
		all := b[:cap(b)]
		for i := range all {
			all[i] = recycledPoison
		}
	}
	p.mu.Lock()
	if l := p.free[len(b)]; !p.closed && len(l) < bufPoolKeep {
		p.free[len(b)] = append(l, b)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.parent.Free(b)
}

// close returns the free buffers to the parent; buffers still in use go
// back to it when released.
func (p *bufPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for size, l := range p.free {
		for _, buf := range l {
			p.parent.Free(buf)
		}
		delete(p.free, size)
	}
}

// release frees the builders and the cached arrays (and a batch begun but
// not finished).
func (b *nexBatch) release() {
	defer b.pool.close()
	if b.kindBuf != nil {
		b.kindBuf.Release()
		b.kindBuf = nil
	}
	if b.kind0 != nil {
		b.kind0.Release()
		b.kind0 = nil
	}
	for r := range b.rows {
		row := &b.rows[r]
		for f := range row.ints {
			if row.ints[f].buf != nil {
				row.ints[f].buf.Release()
				row.ints[f] = nexInts{}
			}
		}
		for f := range row.strs {
			row.strs[f].release()
		}
		if row.valid != nil {
			row.valid.Release()
			row.valid = nil
		}
		for k, a := range b.nulls[r] {
			if a != nil {
				a.Release()
				b.nulls[r][k] = nil
			}
		}
	}
}
