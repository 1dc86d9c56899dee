package connectors

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
)

// The fields of the Nexmark events, as the Flink benchmark's DDL declares
// them (ddl_gen.sql): event_type INT, then one ROW per kind, NULL unless
// the event is of that kind.
var (
	nexTS        = &arrow.TimestampType{Unit: arrow.Millisecond}
	nexPersonTyp = arrow.StructOf(
		arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "emailAddress", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "creditCard", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "city", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "state", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "dateTime", Type: nexTS, Nullable: true},
		arrow.Field{Name: "extra", Type: arrow.BinaryTypes.String, Nullable: true},
	)
	nexAuctionTyp = arrow.StructOf(
		arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "itemName", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "description", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "initialBid", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "reserve", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "dateTime", Type: nexTS, Nullable: true},
		arrow.Field{Name: "expires", Type: nexTS, Nullable: true},
		arrow.Field{Name: "seller", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "category", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "extra", Type: arrow.BinaryTypes.String, Nullable: true},
	)
	nexBidTyp = arrow.StructOf(
		arrow.Field{Name: "auction", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "bidder", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "price", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "channel", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "url", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "dateTime", Type: nexTS, Nullable: true},
		arrow.Field{Name: "extra", Type: arrow.BinaryTypes.String, Nullable: true},
	)
	// NexmarkSchema is every column the generator produces.
	NexmarkSchema = arrow.NewSchema([]arrow.Field{
		{Name: "event_type", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "person", Type: nexPersonTyp, Nullable: true},
		{Name: "auction", Type: nexAuctionTyp, Nullable: true},
		{Name: "bid", Type: nexBidTyp, Nullable: true},
	}, nil)
)

// nexBuilders build one batch of events: a typed builder per leaf field
// (no interface call per value), the struct validity as bools.
type nexBuilders struct {
	kind *array.Int32Builder

	pValid                                     []bool
	pID                                        *array.Int64Builder
	pName, pEmail, pCard, pCity, pState, pXtra *array.StringBuilder
	pTime                                      *array.TimestampBuilder

	aValid                       []bool
	aID, aInit, aRes, aSel, aCat *array.Int64Builder
	aName, aDesc, aXtra          *array.StringBuilder
	aTime, aExp                  *array.TimestampBuilder

	bValid                []bool
	bAuc, bBidder, bPrice *array.Int64Builder
	bChan, bURL, bXtra    *array.StringBuilder
	bTime                 *array.TimestampBuilder

	scratch []byte
	every   []array.Builder // all the builders above (see all)
}

func newNexBuilders(mem memory.Allocator) *nexBuilders {
	i64 := func() *array.Int64Builder { return array.NewInt64Builder(mem) }
	str := func() *array.StringBuilder { return array.NewStringBuilder(mem) }
	ts := func() *array.TimestampBuilder { return array.NewTimestampBuilder(mem, nexTS) }
	return &nexBuilders{kind: array.NewInt32Builder(mem),
		pID: i64(), pName: str(), pEmail: str(), pCard: str(), pCity: str(), pState: str(), pTime: ts(), pXtra: str(),
		aID: i64(), aName: str(), aDesc: str(), aInit: i64(), aRes: i64(), aTime: ts(), aExp: ts(), aSel: i64(), aCat: i64(), aXtra: str(),
		bAuc: i64(), bBidder: i64(), bPrice: i64(), bChan: str(), bURL: str(), bTime: ts(), bXtra: str(),
	}
}

// reserve makes room for n events (their strings by the average sizes),
// so that appending does not grow buffers event by event.
func (b *nexBuilders) reserve(n int, c *nexConfig) {
	for _, x := range b.all() {
		x.Reserve(n)
	}
	bids := n * int(c.bidProp) / int(c.total)
	others := n - bids
	b.bXtra.ReserveData(bids * max(c.bidSize-32, 0))
	b.bURL.ReserveData(bids * 80)
	b.bChan.ReserveData(bids * 12)
	b.aXtra.ReserveData(others * max(c.auctionSize-100, 0))
	b.aDesc.ReserveData(others * 50)
	b.pXtra.ReserveData(others / 4 * max(c.personSize-60, 0))
}

func (b *nexBuilders) release() {
	for _, x := range b.all() {
		x.Release()
	}
}

func (b *nexBuilders) all() []array.Builder {
	if b.every != nil {
		return b.every
	}
	b.every = []array.Builder{b.kind,
		b.pID, b.pName, b.pEmail, b.pCard, b.pCity, b.pState, b.pTime, b.pXtra,
		b.aID, b.aName, b.aDesc, b.aInit, b.aRes, b.aTime, b.aExp, b.aSel, b.aCat, b.aXtra,
		b.bAuc, b.bBidder, b.bPrice, b.bChan, b.bURL, b.bTime, b.bXtra}
	return b.every
}

func (b *nexBuilders) nullPerson() {
	b.pValid = append(b.pValid, false)
	b.pID.AppendNull()
	b.pName.AppendNull()
	b.pEmail.AppendNull()
	b.pCard.AppendNull()
	b.pCity.AppendNull()
	b.pState.AppendNull()
	b.pTime.AppendNull()
	b.pXtra.AppendNull()
}

func (b *nexBuilders) nullAuction() {
	b.aValid = append(b.aValid, false)
	b.aID.AppendNull()
	b.aName.AppendNull()
	b.aDesc.AppendNull()
	b.aInit.AppendNull()
	b.aRes.AppendNull()
	b.aTime.AppendNull()
	b.aExp.AppendNull()
	b.aSel.AppendNull()
	b.aCat.AppendNull()
	b.aXtra.AppendNull()
}

func (b *nexBuilders) nullBid() {
	b.bValid = append(b.bValid, false)
	b.bAuc.AppendNull()
	b.bBidder.AppendNull()
	b.bPrice.AppendNull()
	b.bChan.AppendNull()
	b.bURL.AppendNull()
	b.bTime.AppendNull()
	b.bXtra.AppendNull()
}

// appendEvent appends event n.
func (b *nexBuilders) appendEvent(c *nexConfig, t *nexTables, n int64) {
	r := newNexRand(c.seed, n)
	ts := c.timestamp(n)
	kind := c.kind(n)
	b.kind.Append(int32(kind))
	switch kind {
	case nexPerson:
		b.person(c, t, n, ts, &r)
		b.nullAuction()
		b.nullBid()
	case nexAuction:
		b.nullPerson()
		b.auction(c, t, n, ts, &r)
		b.nullBid()
	default:
		b.nullPerson()
		b.nullAuction()
		b.bid(c, t, n, ts, &r)
	}
}

func (b *nexBuilders) person(c *nexConfig, t *nexTables, n, ts int64, r *nexRand) {
	b.pValid = append(b.pValid, true)
	b.pID.Append(c.lastPerson(n) + nexFirstPersonID)
	s := append(b.scratch[:0], nexFirstNames[r.intn(int64(len(nexFirstNames)))]...)
	s = append(s, ' ')
	s = append(s, nexLastNames[r.intn(int64(len(nexLastNames)))]...)
	b.pName.BinaryBuilder.Append(s)
	size := len(s)
	s = nexString(s[:0], r, 7, ' ')
	s = append(s, '@')
	s = append(nexString(s, r, 5, ' '), ".com"...)
	b.pEmail.BinaryBuilder.Append(s)
	size += len(s)
	s = s[:0]
	for i := 0; i < 4; i++ {
		if i > 0 {
			s = append(s, ' ')
		}
		d := r.intn(10000)
		s = append(s, byte('0'+d/1000), byte('0'+d/100%10), byte('0'+d/10%10), byte('0'+d%10))
	}
	b.pCard.BinaryBuilder.Append(s)
	city, state := nexCities[r.intn(int64(len(nexCities)))], nexStates[r.intn(int64(len(nexStates)))]
	b.pCity.Append(city)
	b.pState.Append(state)
	b.pTime.Append(arrow.Timestamp(ts))
	size += 8 + len(s) + len(city) + len(state)
	b.pXtra.BinaryBuilder.Append(nexExtra(t.pool, r, size, c.personSize))
	b.scratch = s
}

func (b *nexBuilders) auction(c *nexConfig, t *nexTables, n, ts int64, r *nexRand) {
	b.aValid = append(b.aValid, true)
	b.aID.Append(c.lastAuction(n) + nexFirstAuctionID)
	var seller int64
	if r.intn(int64(c.hotSellers)) > 0 { // a hot seller: the first of the last 100 people
		seller = c.lastPerson(n) / nexHotSellerRatio * nexHotSellerRatio
	} else {
		seller = c.nextPerson(n, r)
	}
	category := nexFirstCategoryID + r.intn(nexNumCategories)
	initial := nexPrice(r)
	// expires: on average when the auction inFlightAuctions later is created
	ahead := c.inFlightAuctions * c.total / c.auctionProp
	horizon := c.timestamp(n+ahead) - ts
	expires := ts + 1 + r.intn(max(horizon*2, 1))
	s := nexString(b.scratch[:0], r, 20, ' ')
	b.aName.BinaryBuilder.Append(s)
	size := len(s)
	s = nexString(s[:0], r, 100, ' ')
	b.aDesc.BinaryBuilder.Append(s)
	size += len(s)
	b.scratch = s
	b.aInit.Append(initial)
	b.aRes.Append(initial + nexPrice(r))
	b.aTime.Append(arrow.Timestamp(ts))
	b.aExp.Append(arrow.Timestamp(expires))
	b.aSel.Append(seller + nexFirstPersonID)
	b.aCat.Append(category)
	b.aXtra.BinaryBuilder.Append(nexExtra(t.pool, r, 8+size+40, c.auctionSize))
}

func (b *nexBuilders) bid(c *nexConfig, t *nexTables, n, ts int64, r *nexRand) {
	b.bValid = append(b.bValid, true)
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
	price := nexPrice(r)
	var channel, url string
	if r.intn(2) > 0 {
		i := r.intn(nexHotChannels)
		channel, url = nexHotNames[i], t.hotURLs[i]
	} else {
		i := r.intn(nexChannels)
		channel, url = t.channels[i], t.channelURLs[i]
	}
	b.bAuc.Append(auction + nexFirstAuctionID)
	// The reference generator adds FIRST_PERSON_ID to the bidder twice;
	// kept, so that bidders join people as they do in Flink's runs.
	b.bBidder.Append(bidder + 2*nexFirstPersonID)
	b.bPrice.Append(price)
	b.bChan.Append(channel)
	b.bURL.Append(url)
	b.bTime.Append(arrow.Timestamp(ts))
	b.bXtra.BinaryBuilder.Append(nexExtra(t.pool, r, 32, c.bidSize))
}

// record finishes the batch as a record of NexmarkSchema.
func (b *nexBuilders) record(mem memory.Allocator, n int) arrow.Record {
	kind := b.kind.NewArray()
	person := structArray(mem, nexPersonTyp, b.pValid, b.pID, b.pName, b.pEmail, b.pCard, b.pCity, b.pState, b.pTime, b.pXtra)
	auction := structArray(mem, nexAuctionTyp, b.aValid, b.aID, b.aName, b.aDesc, b.aInit, b.aRes, b.aTime, b.aExp, b.aSel, b.aCat, b.aXtra)
	bid := structArray(mem, nexBidTyp, b.bValid, b.bAuc, b.bBidder, b.bPrice, b.bChan, b.bURL, b.bTime, b.bXtra)
	b.pValid, b.aValid, b.bValid = b.pValid[:0], b.aValid[:0], b.bValid[:0]
	rec := array.NewRecord(NexmarkSchema, []arrow.Array{kind, person, auction, bid}, int64(n))
	for _, a := range []arrow.Array{kind, person, auction, bid} {
		a.Release()
	}
	return rec
}

// structArray makes a struct array of typ from the children the builders
// hold and the validity of each row.
func structArray(mem memory.Allocator, typ *arrow.StructType, valid []bool, children ...array.Builder) arrow.Array {
	kids := make([]arrow.ArrayData, len(children))
	for i, c := range children {
		a := c.NewArray()
		kids[i] = a.Data()
		kids[i].Retain()
		a.Release()
	}
	nulls := 0
	bitmap := memory.NewResizableBuffer(mem)
	bitmap.Resize(int(bitutilBytes(len(valid))))
	bm := bitmap.Bytes()
	for i := range bm {
		bm[i] = 0
	}
	for i, v := range valid {
		if v {
			bm[i/8] |= 1 << (i % 8)
		} else {
			nulls++
		}
	}
	data := array.NewData(typ, len(valid), []*memory.Buffer{bitmap}, kids, nulls, 0)
	bitmap.Release()
	for _, k := range kids {
		k.Release()
	}
	a := array.NewStructData(data)
	data.Release()
	return a
}

func bitutilBytes(n int) int { return (n + 7) / 8 }

// project returns the columns of rec (of NexmarkSchema) that schema names,
// in its order, with the fields of each ROW it names (by name,
// case-insensitive). It takes ownership of rec.
func nexProject(rec arrow.Record, schema *arrow.Schema, plan []nexColumn) arrow.Record {
	cols := make([]arrow.Array, len(plan))
	for i, p := range plan {
		src := rec.Column(p.col)
		if p.fields == nil {
			src.Retain()
			cols[i] = src
			continue
		}
		st := src.(*array.Struct)
		kids := make([]arrow.ArrayData, len(p.fields))
		for j, f := range p.fields {
			kids[j] = st.Field(f).Data()
		}
		d := st.Data()
		data := array.NewData(schema.Field(i).Type, d.Len(), d.Buffers()[:1], kids, d.NullN(), d.Offset())
		cols[i] = array.NewStructData(data)
		data.Release()
	}
	out := array.NewRecord(schema, cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	rec.Release()
	return out
}

// nexColumn says where a column of the table comes from: a column of
// NexmarkSchema and, for a ROW whose fields differ from the generator's,
// the generator's field of each of its fields.
type nexColumn struct {
	col    int
	fields []int
}

// nexPlan maps the table's Arrow schema onto NexmarkSchema, or says which
// column or field does not exist or has another type.
func nexPlan(schema *arrow.Schema) ([]nexColumn, bool, error) {
	plan := make([]nexColumn, schema.NumFields())
	identity := schema.NumFields() == NexmarkSchema.NumFields()
	for i, f := range schema.Fields() {
		j := nexFieldIndex(NexmarkSchema.Fields(), f.Name)
		if j < 0 {
			return nil, false, fmt.Errorf("nexmark: the table has column '%s'; a nexmark table has the columns event_type INT, person ROW<...>, auction ROW<...> and bid ROW<...> (Flink's Nexmark DDL)", f.Name)
		}
		gen := NexmarkSchema.Field(j)
		plan[i].col = j
		identity = identity && i == j
		gst, ok := gen.Type.(*arrow.StructType)
		if !ok {
			if !arrow.TypeEqual(f.Type, gen.Type) {
				return nil, false, fmt.Errorf("nexmark: column '%s' must be INT", f.Name)
			}
			continue
		}
		st, ok := f.Type.(*arrow.StructType)
		if !ok {
			return nil, false, fmt.Errorf("nexmark: column '%s' must be a ROW of the fields of Flink's Nexmark DDL", f.Name)
		}
		same := st.NumFields() == gst.NumFields()
		idx := make([]int, st.NumFields())
		for k, sf := range st.Fields() {
			g := nexFieldIndex(gst.Fields(), sf.Name)
			if g < 0 {
				return nil, false, fmt.Errorf("nexmark: %s has no field '%s' (fields: %s)", gen.Name, sf.Name, nexFieldNames(gst))
			}
			if !arrow.TypeEqual(sf.Type, gst.Field(g).Type) {
				return nil, false, fmt.Errorf("nexmark: field %s.%s must be %s", gen.Name, sf.Name, nexSQLType(gst.Field(g).Type))
			}
			idx[k] = g
			same = same && g == k && sf.Name == gst.Field(g).Name
		}
		if !same {
			plan[i].fields = idx
			identity = false
		}
	}
	return plan, identity, nil
}

func nexFieldIndex(fs []arrow.Field, name string) int {
	for i, f := range fs {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

func nexFieldNames(st *arrow.StructType) string {
	var names []string
	for _, f := range st.Fields() {
		names = append(names, f.Name)
	}
	return strings.Join(names, ", ")
}

func nexSQLType(t arrow.DataType) string {
	switch t.ID() {
	case arrow.INT64:
		return "BIGINT"
	case arrow.TIMESTAMP:
		return "TIMESTAMP(3)"
	}
	return "VARCHAR"
}

// Nexmark is the nexmark source: the events of Flink's Nexmark benchmark
// (see nexmarkgen.go). Event n of the stream is deterministic for (seed,
// n); subtask i of p produces events i, i+p, i+2p, ... (its split); the
// state is the splits with the events emitted of each, so a restored
// source continues with exactly the events it would have produced, at any
// parallelism (rescaled by split, as datagen). It is bounded by
// 'events.num' (or 'stop-at'), else unbounded.
type Nexmark struct {
	sc       *exec.SourceContext
	cfg      nexConfig
	tab      *nexTables
	b        *nexBuilders
	schema   *arrow.Schema
	plan     []nexColumn
	identity bool  // the table's schema is NexmarkSchema
	total    int64 // events of the whole stream; -1: unbounded
	keep     bool  // keep-alive: stay up (idle) after the last event
	splits   []genSplit
	cur      int
}

var _ exec.SplitSource = (*Nexmark)(nil)

func newNexmark(t *catalog.Table, sc *exec.SourceContext) (*Nexmark, error) {
	schema := sc.Schema.Arrow()
	plan, identity, err := nexPlan(schema)
	if err != nil {
		return nil, err
	}
	size := func(key, def string) int {
		v, ok := t.Option(key)
		if !ok {
			v = def
		}
		n, _ := catalog.ParseMemorySize(v)
		return int(n)
	}
	c := nexConfig{
		seed:             uint64(optInt(t, "seed", 0)),
		personProp:       optInt(t, "person.proportion", 1),
		auctionProp:      optInt(t, "auction.proportion", 3),
		bidProp:          optInt(t, "bid.proportion", 46),
		delayUs:          1e6 / float64(optInt(t, "first-event.rate", 10000)),
		baseTime:         DatagenBaseTime,
		personSize:       size("person.avg-size", "200b"),
		auctionSize:      size("auction.avg-size", "500b"),
		bidSize:          size("bid.avg-size", "100b"),
		hotAuctions:      int(optInt(t, "bid.hot-ratio.auctions", 2)),
		hotBidders:       int(optInt(t, "bid.hot-ratio.bidders", 4)),
		hotSellers:       int(optInt(t, "auction.hot-ratio.sellers", 4)),
		inFlightAuctions: 100,
		activePeople:     1000,
	}
	c.total = c.personProp + c.auctionProp + c.bidProp
	n := &Nexmark{sc: sc, cfg: c, schema: schema, plan: plan, identity: identity, total: -1,
		keep: optBool(t, "keep-alive", false)}
	if v := optInt(t, "events.num", 0); v > 0 {
		n.total = v
	}
	if v := optInt(t, "stop-at", -1); v >= 0 && (n.total < 0 || v < n.total) {
		n.total = v
	}
	n.splits = []genSplit{{start: uint64(sc.Subtask), step: uint64(sc.Parallelism), bound: n.total}}
	return n, nil
}

// Run implements exec.Source.
func (n *Nexmark) Run(ctx context.Context, emit func(arrow.Record) error) error {
	if n.tab == nil {
		n.tab = nexTablesFor(n.cfg.seed)
		n.b = newNexBuilders(n.sc.Mem)
	}
	out := emit
	if !n.identity {
		out = func(rec arrow.Record) error { return emit(nexProject(rec, n.schema, n.plan)) }
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		i := nextSplit(n.splits, n.cur)
		if i < 0 {
			break
		}
		s := &n.splits[i]
		cnt := int64(n.sc.BatchSize)
		if r := s.remaining(); r >= 0 {
			cnt = min(cnt, r)
		}
		n.b.reserve(int(cnt), &n.cfg)
		for e := int64(0); e < cnt; e++ {
			n.b.appendEvent(&n.cfg, n.tab, int64(s.start+s.step*uint64(s.k+e)))
		}
		rec := n.b.record(n.sc.Mem, int(cnt))
		s.k += cnt
		n.cur = i + 1
		if err := out(rec); err != nil {
			return err
		}
	}
	if !n.keep {
		return nil
	}
	return idleUntilDone(ctx, n.sc, emit)
}

// Close implements exec.Source.
func (n *Nexmark) Close() error {
	if n.b != nil {
		n.b.release()
		n.b = nil
	}
	return nil
}

// SnapshotState implements exec.CheckpointedSource: the header (see
// state.go) and the splits (appendSplits): start, step, bound and the
// events emitted of each.
func (n *Nexmark) SnapshotState() ([]byte, error) {
	return appendSplits(stateHeader(kindNexmark, n.sc.Subtask, n.sc.Parallelism), n.splits), nil
}

// RestoreState implements exec.CheckpointedSource.
func (n *Nexmark) RestoreState(state []byte) error {
	r, err := openState(state, kindNexmark, n.sc.Subtask, n.sc.Parallelism)
	if err != nil {
		return err
	}
	splits, err := readSplitList(r, nil)
	if err != nil {
		return err
	}
	n.splits, n.cur = splits, 0
	return nil
}

// RestoreSplits implements exec.SplitSource, as Datagen.RestoreSplits.
func (n *Nexmark) RestoreSplits(states [][]byte, _ []bool) error {
	rs, err := openAllStates(states, kindNexmark)
	if err != nil {
		return err
	}
	var all []genSplit
	for _, r := range rs {
		if all, err = readSplitList(r, all); err != nil {
			return err
		}
	}
	n.splits, n.cur = assignSplits(all, n.sc.Subtask, n.sc.Parallelism), 0
	return nil
}

var nexTablesCache sync.Map // seed -> *nexTables

// nexTablesFor returns the seed's tables, built once per process.
func nexTablesFor(seed uint64) *nexTables {
	if t, ok := nexTablesCache.Load(seed); ok {
		return t.(*nexTables)
	}
	t, _ := nexTablesCache.LoadOrStore(seed, newNexTables(seed))
	return t.(*nexTables)
}

// idleUntilDone keeps a finished source alive until ctx is done, calling
// emit(nil) (a heartbeat: barriers and notifications are handled there)
// every Linger, or every 100 ms without one.
func idleUntilDone(ctx context.Context, sc *exec.SourceContext, emit func(arrow.Record) error) error {
	every := sc.Linger
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if err := emit(nil); err != nil {
				return err
			}
		}
	}
}
