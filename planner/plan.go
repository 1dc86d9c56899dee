package planner

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// QuerySchema returns the columns a query produces (for CREATE VIEW and DESCRIBE).
func (p *Planner) QuerySchema(q *parser.Query) (catalog.Schema, error) {
	r, err := p.buildQuery(q)
	if err != nil {
		return nil, err
	}
	return r.schema, nil
}

// PlanSelect plans a SELECT whose changelog goes to the client.
func (p *Planner) PlanSelect(q *parser.Query) (*Physical, catalog.Schema, error) {
	r, err := p.buildQuery(q)
	if err != nil {
		return nil, nil, err
	}
	b := &physBuilder{p: p}
	if !p.NoSubPlanReuse {
		b.reuse = reuseOf([]*rel{r})
	}
	if !p.NoSourceReuse {
		b.shared = sharedOf([]*rel{r}, b.reuse)
	}
	b.startStatement()
	t := b.build(r)
	if b.err != nil {
		return nil, nil, b.err
	}
	if t.Parallelism != 1 {
		next := b.newTask(1)
		next.OutSchema, next.OutMode = t.OutSchema, t.OutMode
		b.connect(t, next, Global, nil)
		t = next
	}
	t.Sink = &SinkSpec{Schema: r.schema, Mode: r.mode, ID: b.sinkID("")}
	b.finish()
	if b.err != nil {
		return nil, nil, b.err
	}
	return b.plan, r.schema, nil
}

// PlanInserts plans one or more INSERT INTO statements as one job.
func (p *Planner) PlanInserts(ins []*parser.Insert) (*Physical, error) {
	b := &physBuilder{p: p}
	if !p.NoSourceReuse || !p.NoSubPlanReuse {
		rels := p.statementRels(ins)
		if !p.NoSubPlanReuse {
			b.reuse = reuseOf(rels)
		}
		if !p.NoSourceReuse {
			b.shared = sharedOf(rels, b.reuse)
		}
	}
	for _, in := range ins {
		if err := p.planInsert(b, in); err != nil {
			return nil, err
		}
	}
	b.finish()
	if b.err != nil {
		return nil, b.err
	}
	return b.plan, nil
}

// statementRels are the logical plans of the statements of a statement
// set, for finding what they compute more than once: the scans (by
// scanKey) that more than one statement, or one statement more than once
// (a self-join), reads become one source task feeding every reader, as
// Flink's table.optimizer.reuse-source-enabled does, so a source is read
// once (one socket connection, one pass over the files); aggregations
// computed more than once are planned once (reuse.go). Statements that do
// not plan are skipped here; planInsert reports them.
func (p *Planner) statementRels(ins []*parser.Insert) []*rel {
	var rels []*rel
	for _, in := range ins {
		if r, err := p.buildQuery(in.Query); err == nil {
			rels = append(rels, r)
		}
	}
	return rels
}

// sharedOf returns the scans that rels read more than once (nil: none);
// an aggregation of reuse (reuseOf) is built once, so the scans below its
// other occurrences are not read.
func sharedOf(rels []*rel, reuse map[string]*Task) map[string]*Task {
	readers := map[string]int{}
	memo, built := map[*rel]string{}, map[string]bool{}
	var walk func(n *rel)
	walk = func(n *rel) {
		if d := shareDigest(n, memo); d != "" {
			if _, ok := reuse[d]; ok {
				if built[d] {
					return
				}
				built[d] = true
			}
		}
		if n.kind == relScan && !n.values {
			readers[scanKey(n)]++
		}
		for _, c := range n.children() {
			walk(c)
		}
	}
	for _, r := range rels {
		walk(r)
	}
	return repeated(readers)
}

// repeated returns the keys counted more than once, each with no task yet
// (nil: none).
func repeated(count map[string]int) map[string]*Task {
	var out map[string]*Task
	for k, n := range count {
		if n > 1 {
			if out == nil {
				out = map[string]*Task{}
			}
			out[k] = nil
		}
	}
	return out
}

// scanKey identifies what a scan reads: the table and its options (an
// OPTIONS hint makes another source).
func scanKey(r *rel) string {
	var sb strings.Builder
	sb.WriteString(strings.ToLower(r.table.Name))
	for _, o := range r.table.Options {
		fmt.Fprintf(&sb, "|%d:%s=%d:%s", len(o.Key), o.Key, len(o.Value), o.Value)
	}
	return sb.String()
}

func (p *Planner) planInsert(b *physBuilder, in *parser.Insert) error {
	t, ok := p.Catalog.Table(in.Table)
	if !ok {
		msg := fmt.Sprintf("sink table '%s' not found", in.Table)
		if _, isView := p.Catalog.View(in.Table); isView {
			msg = fmt.Sprintf("'%s' is a view; INSERT INTO needs a table", in.Table)
		} else if s := catalog.Suggest(in.Table, p.Catalog.TableNames()); s != "" {
			msg += fmt.Sprintf("; did you mean '%s'?", s)
		}
		return &parser.Error{Pos: in.TablePos, Msg: msg}
	}
	isSink, updates := true, true
	if p.SinkCaps != nil {
		isSink, updates = p.SinkCaps(t)
	}
	if !isSink {
		return &parser.Error{Pos: in.TablePos, Msg: fmt.Sprintf("connector '%s' of table '%s' cannot be used as a sink", t.Connector(), t.Name)}
	}
	if in.Options != nil {
		var err error
		if t, err = withDynamicOptions(t, in.Options, in.HintPos); err != nil {
			return err
		}
		if p.SinkCaps != nil {
			_, updates = p.SinkCaps(t) // the hint may change the format
		}
	}
	r, err := p.buildQuery(in.Query)
	if err != nil {
		return err
	}
	// Map query columns to the sink's columns (by position, or by the
	// explicit column list), casting where the types differ.
	target := t.Schema
	order := make([]int, len(target)) // sink column -> query column, -1 = NULL
	if len(in.Columns) > 0 {
		for i := range order {
			order[i] = -1
		}
		for qi, c := range in.Columns {
			at := in.TablePos
			if qi < len(in.ColumnPos) {
				at = in.ColumnPos[qi]
			}
			si := target.Index(c)
			if si < 0 {
				msg := fmt.Sprintf("column '%s' not found in sink table '%s' (columns: %s)", c, t.Name, strings.Join(target.Names(), ", "))
				if s := catalog.Suggest(c, target.Names()); s != "" {
					msg += fmt.Sprintf("; did you mean '%s'?", s)
				}
				return &parser.Error{Pos: at, Msg: msg}
			}
			if order[si] >= 0 {
				return &parser.Error{Pos: at, Msg: fmt.Sprintf("column '%s' is listed twice in INSERT INTO %s (...)", c, t.Name)}
			}
			order[si] = qi
		}
		if len(in.Columns) != len(r.schema) {
			return &parser.Error{Pos: in.TablePos, Msg: fmt.Sprintf("INSERT INTO %s lists %d columns but the query produces %d", t.Name, len(in.Columns), len(r.schema))}
		}
	} else {
		if len(r.schema) != len(target) {
			return &parser.Error{Pos: in.TablePos, Msg: fmt.Sprintf("column count mismatch: query produces %d columns [%s] but sink table '%s' has %d [%s]",
				len(r.schema), strings.Join(r.schema.Names(), ", "), t.Name, len(target), strings.Join(target.Names(), ", "))}
		}
		for i := range order {
			order[i] = i
		}
	}
	projs := make([]Expr, len(target))
	identity := true
	for si, c := range target {
		qi := order[si]
		if qi < 0 {
			projs[si] = &Literal{T: c.Type.Nullable()}
			identity = false
			continue
		}
		var e Expr = &ColRef{Index: qi, Name: r.schema[qi].Name, T: r.schema[qi].Type}
		if !e.Type().Equal(c.Type) {
			if !implicitSinkCast(e.Type(), c.Type) {
				return &parser.Error{Pos: in.TablePos, Msg: fmt.Sprintf("column types of the query and sink table '%s' do not match: sink column '%s' (position %d) is %s but the query gives %s",
					t.Name, c.Name, si, c.Type.Nullable(), e.Type().Nullable())}
			}
			ce, err := ResolveCast(e, c.Type.Nullable())
			if err != nil {
				return &parser.Error{Pos: in.TablePos, Msg: fmt.Sprintf("column '%s' of sink table '%s' is %s but the query produces %s", c.Name, t.Name, c.Type, e.Type())}
			}
			e = ce
			identity = false
		}
		if qi != si {
			identity = false
		}
		projs[si] = e
	}
	if !identity {
		r = &rel{kind: relCalc, input: r, schema: target, quals: make([]string, len(target)), mode: r.mode, projs: projs}
	}
	if r.mode == Retract && !updates {
		return &parser.Error{Pos: in.Pos, Msg: fmt.Sprintf("Table sink '%s' doesn't support consuming update changes which is produced by node %s", t.Name, r.updatingNode())}
	}
	b.startStatement()
	task := b.build(r)
	if b.err != nil {
		return b.err
	}
	if p.SinkParallelism != nil {
		if want := p.SinkParallelism(t, task.Parallelism); want != task.Parallelism {
			if r.mode != InsertOnly {
				return &parser.Error{Pos: in.TablePos, Msg: fmt.Sprintf("'sink.parallelism' = '%d' of table '%s' differs from the parallelism %d of its input, which is possible only for an insert-only stream (this one is updating because of %s)",
					want, t.Name, task.Parallelism, r.updatingNode())}
			}
			next := b.newTask(want)
			next.OutSchema, next.OutMode = task.OutSchema, task.OutMode
			b.connect(b.skipReader(task), next, Rebalance, nil)
			task = next
		}
	}
	task.Sink = &SinkSpec{Table: t, Schema: target, Mode: r.mode, ID: b.sinkID(t.Name)}
	return nil
}

// physBuilder turns rel chains into tasks.
type physBuilder struct {
	p      *Planner
	shared map[string]*Task // scanKey -> the shared source task (nil until built)
	// reuse: digest -> the shared aggregation's task (nil until built),
	// producers those tasks, digests the digests of rels (reuse.go).
	reuse     map[string]*Task
	producers map[*Task]bool
	digests   map[*rel]string
	plan      *Physical
	seq       int
	ids       idState // stable ids of stateful operators, sources and sinks (ids.go)
	err       error   // first error of build (a UID hint that cannot be applied)
}

// id derives the id of a stateless operator from its place in the task
// chain. Stateless operators keep no state, so their ids need not survive
// a change of the query; stateful ones use ids.go.
func (b *physBuilder) id(t *Task, desc string) string {
	h := sha1.New()
	for _, op := range t.Ops {
		h.Write([]byte(op.OpID()))
	}
	if t.Source != nil {
		h.Write([]byte(t.Source.ID))
	}
	for _, e := range t.Inputs {
		h.Write([]byte(e.From.Name))
		if len(e.From.Outputs) > 1 { // a reader of a shared source or aggregation
			from := ""
			if e.From.Source != nil {
				from = e.From.Source.ID
			} else if n := len(e.From.Ops); n > 0 {
				from = e.From.Ops[n-1].OpID()
			}
			fmt.Fprintf(h, "|%s#%d", from, slices.Index(e.From.Outputs, e))
		}
	}
	fmt.Fprintf(h, "|%s|%d", desc, len(t.Ops))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func (b *physBuilder) newTask(par int) *Task {
	if b.plan == nil {
		b.plan = &Physical{}
	}
	t := &Task{Parallelism: par}
	b.plan.Tasks = append(b.plan.Tasks, t)
	return t
}

func (b *physBuilder) connect(from, to *Task, kind ExchangeKind, keys []int) {
	e := &Edge{From: from, To: to, Kind: kind, Keys: keys, Mode: from.OutMode}
	from.Outputs = append(from.Outputs, e)
	to.Inputs = append(to.Inputs, e)
	b.plan.Edges = append(b.plan.Edges, e)
}

// build returns the task whose chain ends with r (the sink is attached by the caller).
func (b *physBuilder) build(r *rel) *Task {
	if t, ok := b.buildShared(r); ok {
		return t
	}
	return b.buildRel(r)
}

// buildRel builds r (shared or not).
func (b *physBuilder) buildRel(r *rel) *Task {
	switch r.kind {
	case relScan:
		if b.shared != nil && !r.values {
			if src, ok := b.shared[scanKey(r)]; ok {
				// A shared source task has no chained operators: each
				// reader starts its own task behind a forward edge.
				if src == nil {
					src = b.scanTask(r)
					b.shared[scanKey(r)] = src
				}
				t := b.newTask(src.Parallelism)
				t.OutSchema, t.OutMode = r.schema, r.mode
				b.connect(src, t, Forward, nil)
				return t
			}
		}
		return b.scanTask(r)
	case relCalc, relTableFunc:
		t := b.build(r.input)
		var op Op
		if r.kind == relCalc {
			if r.filter == nil && r.projs == nil {
				t.OutSchema = r.schema
				return t
			}
			calc := &CalcOp{Filter: r.filter, Projs: r.projs, Out: r.schema, Mode: r.mode}
			op = calc
			if n := len(t.Ops); n > 0 {
				if inner, ok := t.Ops[n-1].(*CalcOp); ok {
					if m, ok := mergeCalc(inner, calc); ok {
						t.Ops, op = t.Ops[:n-1], m
					}
				}
			}
		} else {
			op = r.tfunc
		}
		t.Ops = append(t.Ops, op)
		setID(op, b.id(t, op.Describe()))
		if r.computedOf != nil {
			b.addComputedWatermark(t, r)
		}
		t.OutSchema, t.OutMode = r.schema, r.mode
		return t
	case relAgg:
		in := b.build(r.input)
		par := b.p.Parallelism
		kind := Hash
		if len(r.agg.Keys) == 0 {
			par, kind = 1, Global
		}
		if b.twoPhase(r.agg, in, par) {
			// (the reader of a shared source keeps its task: the local
			// phase runs there)
			SplitAggregation(r.agg, in)
			local := in.Ops[len(in.Ops)-1]
			setID(local, b.id(in, local.Describe()))
		} else {
			in = b.skipReader(in)
		}
		t := b.newTask(par)
		b.connect(in, t, kind, r.agg.Keys)
		t.Ops = append(t.Ops, r.agg)
		r.agg.ID = b.aggID(r)
		t.OutSchema, t.OutMode = r.schema, r.mode
		return t
	case relWindowTVF, relWindowAgg:
		return b.buildWindow(r)
	case relWindowRank:
		return b.buildWindowRankTask(r)
	case relOver:
		return b.buildOverTask(r)
	case relJoin:
		if r.join.timed != nil {
			return b.buildTimedJoinTask(r) // intervaljoin.go
		}
		return b.buildJoinTask(r)
	case relUnion:
		return b.buildUnionTask(r)
	case relSort, relLimit:
		return b.buildSortTask(r)
	case relLookupJoin:
		return b.buildLookupJoin(r) // lookupjoin.go
	case relTemporalJoin:
		return b.buildTemporalJoin(r) // temporaljoin.go
	}
	panic("unknown rel")
}

// twoPhase reports whether aggregation a over the task in (whose chain
// ends with a's input) runs in two phases (LocalAggOp, then a with Global
// set): table.optimizer.agg-phase-strategy is TWO_PHASE, or AUTO (the
// default) and the input is shuffled between subtasks (either side runs
// in parallel), where a row per key and batch crosses the exchange instead
// of a row per input row and a hot key's rows are folded before they reach
// its one subtask. The input must be insert-only, every call mergeable
// (TwoPhaseCall), the keys the input's first columns, and in a task of
// this aggregation's own (not a shared source or a reused sub-plan).
func (b *physBuilder) twoPhase(a *AggOp, in *Task, par int) bool {
	switch strings.ToUpper(b.p.AggPhase) {
	case "ONE_PHASE":
		return false
	case "TWO_PHASE":
	default: // AUTO
		if par <= 1 && in.Parallelism <= 1 {
			return false
		}
	}
	return in.Sink == nil && len(in.Outputs) == 0 && !b.isProducer(in) && Splittable(a)
}

// Splittable reports whether aggregation a itself can run in two phases:
// its input is insert-only, its keys are its input's first columns (the
// partial rows' layout) and every call merges exactly (TwoPhaseCall).
// Whether its input task can take the local phase is the caller's to judge.
func Splittable(a *AggOp) bool {
	if a.InputMode != InsertOnly {
		return false
	}
	for i, k := range a.Keys {
		if k != i {
			return false
		}
	}
	for _, c := range a.Aggs {
		if !TwoPhaseCall(c) {
			return false
		}
	}
	return true
}

// SplitAggregation makes aggregation a two-phase: its local phase
// (LocalAggOp, without an ID yet) is chained at the end of task in, whose
// output a reads, and a becomes the global phase. The caller has checked
// that a can be split (twoPhase).
func SplitAggregation(a *AggOp, in *Task) {
	local := localAgg(a, in.OutSchema)
	in.Ops = append(in.Ops, local)
	in.OutSchema, in.OutMode = local.Out, InsertOnly
	for _, e := range in.Outputs {
		e.Mode = InsertOnly
	}
	a.Global = true
}

// localAgg is the local phase of a over input columns in.
func localAgg(a *AggOp, in catalog.Schema) *LocalAggOp {
	out := make(catalog.Schema, 0, len(a.Keys)+2)
	for _, k := range a.Keys {
		out = append(out, in[k])
	}
	out = append(out, catalog.Column{Name: PartialRowsColumn, Type: catalog.BigInt.WithNotNull(true)})
	for _, c := range a.Aggs {
		for j, t := range PartialTypes(c) {
			out = append(out, catalog.Column{Name: fmt.Sprintf("$partial_%s_%d", c.Name, j), Type: t})
		}
	}
	return &LocalAggOp{Keys: a.Keys, Aggs: a.Aggs, KeyNames: a.KeyNames, Out: out}
}

// skipReader returns t, or the shared source behind t when t is a reader
// of it that does nothing (no operator yet) and is about to be connected
// by an exchange: the empty task and its forward edge are dropped.
func (b *physBuilder) skipReader(t *Task) *Task {
	if t.Source != nil || len(t.Ops) > 0 || t.Sink != nil || len(t.Outputs) > 0 || len(t.Inputs) != 1 || t.Inputs[0].Kind != Forward {
		return t
	}
	e := t.Inputs[0]
	src := e.From
	if !(src.Source != nil && b.shared != nil) && !b.isProducer(src) {
		return t
	}
	src.Outputs = slices.DeleteFunc(src.Outputs, func(x *Edge) bool { return x == e })
	b.plan.Edges = slices.DeleteFunc(b.plan.Edges, func(x *Edge) bool { return x == e })
	b.plan.Tasks = slices.DeleteFunc(b.plan.Tasks, func(x *Task) bool { return x == t })
	return src
}

// scanTask starts a task with the source of scan r.
func (b *physBuilder) scanTask(r *rel) *Task {
	par := b.p.Parallelism
	if r.values {
		par = 1
	} else if b.p.SourceParallelism != nil {
		par = b.p.SourceParallelism(r.table, par)
	}
	t := b.newTask(par)
	spec := &SourceSpec{Values: r.values, Rows: r.rows}
	if r.rows != nil {
		spec.Schema = r.schema
	}
	if !r.values {
		spec.Table = r.table
		spec.Schema = r.table.Schema
	}
	spec.ID = b.sourceID(r)
	t.Source = spec
	b.addWatermark(t, r)
	t.OutSchema, t.OutMode = r.schema, r.mode
	return t
}

func setID(op Op, id string) {
	switch o := op.(type) {
	case *LocalAggOp:
		o.ID = id
	case *CalcOp:
		o.ID = id
	case *TableFuncOp:
		o.ID = id
	case *AggOp:
		o.ID = id
	case *UnionOp:
		o.ID = id
	}
}

// finish numbers and names the tasks.
func (b *physBuilder) finish() {
	b.pruneJoinInputs()
	prunePartitions(b.plan.Tasks)
	for i, t := range b.plan.Tasks {
		t.Index = i
		var parts []string
		if t.Source != nil {
			if t.Source.Values {
				parts = append(parts, "Source: Values")
			} else {
				parts = append(parts, "Source: "+t.Source.Table.Name)
			}
		}
		for _, op := range t.Ops {
			d := op.Describe()
			if j := strings.IndexByte(d, '('); j > 0 {
				d = d[:j]
			}
			parts = append(parts, d)
		}
		if t.Sink != nil {
			if t.Sink.Table != nil {
				parts = append(parts, "Sink: "+t.Sink.Table.Name)
			} else {
				parts = append(parts, "Sink: client")
			}
		}
		t.Name = strings.Join(parts, " -> ")
	}
}

// Explain renders the physical DAG: tasks with their parallelism and
// operators, exchanges with their keys, and the changelog mode of every edge.
func Explain(ph *Physical) string {
	var sb strings.Builder
	sb.WriteString("== Physical Plan ==\n")
	for _, t := range ph.Tasks {
		fmt.Fprintf(&sb, "Task %d [parallelism=%d]\n", t.Index+1, t.Parallelism)
		for _, e := range t.Inputs {
			fmt.Fprintf(&sb, "  <- %s from Task %d %s\n", exchangeDesc(e), e.From.Index+1, e.Mode)
		}
		if t.Source != nil {
			if t.Source.Rows != nil {
				fmt.Fprintf(&sb, "  Source: Values(tuples=[%s], fields=[%s]) [I]\n", valuesTuples(t.Source.Rows), strings.Join(t.Source.Schema.Names(), ", "))
			} else if t.Source.Values {
				sb.WriteString("  Source: Values(1 row) [I]\n")
			} else {
				pf := ""
				if t.Source.PartitionFilter != nil {
					pf = ", partitions=[" + t.Source.PartitionFilter.String() + "]"
				}
				fmt.Fprintf(&sb, "  Source: TableSourceScan(table=[%s], connector=[%s], fields=[%s]%s) [I]\n",
					t.Source.Table.Name, t.Source.Table.Connector(), strings.Join(t.Source.Schema.Names(), ", "), pf)
			}
		}
		for _, op := range t.Ops {
			fmt.Fprintf(&sb, "  %s %s\n", op.Describe(), opMode(op))
		}
		if t.Sink != nil {
			if t.Sink.Table != nil {
				fmt.Fprintf(&sb, "  Sink: %s(table=[%s], fields=[%s]) %s\n", t.Sink.Table.Connector(), t.Sink.Table.Name, strings.Join(t.Sink.Schema.Names(), ", "), t.Sink.Mode)
			} else {
				fmt.Fprintf(&sb, "  Sink: client(fields=[%s]) %s\n", strings.Join(t.Sink.Schema.Names(), ", "), t.Sink.Mode)
			}
		}
		for _, e := range t.Outputs {
			fmt.Fprintf(&sb, "  -> %s to Task %d %s\n", exchangeDesc(e), e.To.Index+1, e.Mode)
		}
	}
	return sb.String()
}

func exchangeDesc(e *Edge) string {
	if e.Kind != Hash {
		return e.Kind.String()
	}
	names := make([]string, len(e.Keys))
	for i, k := range e.Keys {
		names[i] = e.From.OutSchema[k].Name
	}
	return "HASH[" + strings.Join(names, ", ") + "]"
}

func opMode(op Op) string {
	switch o := op.(type) {
	case *CalcOp:
		return o.Mode.String()
	case *AggOp:
		return Retract.String()
	case *LocalAggOp:
		return InsertOnly.String()
	case *WindowAggOp, *WindowTVFOp, *WatermarkAssignerOp, *WindowRankOp:
		return InsertOnly.String()
	case *RankOp:
		return Retract.String()
	case *DeduplicateOp:
		return o.Mode().String()
	case *OverAggOp:
		return InsertOnly.String()
	case *JoinOp:
		return o.OutMode.String()
	case *UnionOp:
		return o.Mode.String()
	case *SortOp:
		return InsertOnly.String()
	case *LimitOp:
		return o.Mode.String()
	case *IntervalJoinOp, *WindowJoinOp:
		return InsertOnly.String()
	case *LookupJoinOp:
		return o.Mode.String()
	case *TemporalJoinOp:
		return InsertOnly.String()
	}
	return ""
}

// implicitSinkCast reports whether a query column of type from may be
// written to a sink column of type to without an explicit CAST: as in Flink,
// only casts that lose nothing (widening numerics, any STRING length, NULL).
func implicitSinkCast(from, to catalog.Type) bool {
	if from.Kind == catalog.KindNull {
		return true
	}
	// digits a DECIMAL target keeps before and after the point
	fits := func(intDigits, scale int) bool {
		return to.Kind == catalog.KindDecimal && to.Precision-to.Scale >= intDigits && to.Scale >= scale
	}
	if from.Kind == to.Kind {
		switch from.Kind {
		case catalog.KindTimestamp, catalog.KindTimestampLTZ, catalog.KindTime:
			return to.Precision >= from.Precision
		case catalog.KindRow:
			return from.Equal(to)
		}
		return from.Kind != catalog.KindDecimal || fits(from.Precision-from.Scale, from.Scale)
	}
	rank := map[catalog.Kind]int{catalog.KindTinyInt: 1, catalog.KindSmallInt: 2, catalog.KindInt: 3, catalog.KindBigInt: 4}
	if rank[from.Kind] > 0 {
		switch {
		case rank[to.Kind] > rank[from.Kind], to.Kind == catalog.KindFloat, to.Kind == catalog.KindDouble:
			return true
		case to.Kind == catalog.KindDecimal:
			return fits(intDigits(from), 0)
		}
	}
	if from.Kind == catalog.KindFloat {
		return to.Kind == catalog.KindDouble
	}
	switch from.Kind {
	case catalog.KindInt:
		return to.Kind == catalog.KindBigInt || to.Kind == catalog.KindDouble || fits(10, 0)
	case catalog.KindBigInt:
		return to.Kind == catalog.KindDouble || fits(19, 0)
	case catalog.KindDecimal:
		return to.Kind == catalog.KindDouble
	}
	return false
}
