package connectors

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/exec/expr"
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
	out := expr.NewRecord(schema, cols, rec.NumRows())
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
	b        *nexBatch
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
	if n.b == nil {
		n.b = newNexBatch(n.sc.Mem, n.sc.BatchSize, n.sc.Columns, n.plan)
		n.tab = &nexTables{} // not read unless a field drawn from them is
		if n.b.needTables() {
			n.tab = nexTablesFor(n.cfg.seed)
		}
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
		gt := startGen()
		n.b.start(int(cnt), &n.cfg)
		for e := int64(0); e < cnt; e++ {
			n.b.event(&n.cfg, n.tab, int64(s.start+s.step*uint64(s.k+e)), int(e))
		}
		rec := n.b.record(int(cnt))
		gt.stop()
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
