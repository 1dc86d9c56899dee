package planner

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/streamsql/streamsql/parser"
)

// Stable operator ids.
//
// State is stored under the id of the operator that owns it ([op id][key
// group][key] for keyed state, [op id][subtask] for sources and sinks), so an
// id must name "the same state" across runs and across compatible changes of
// the query. It is therefore derived only from what defines that state:
//
//   - a group aggregation: its kind, the source tables it reads, its grouping
//     keys and aggregate calls resolved through every stateless step down to
//     source columns (or to the output of the stateful operator below it),
//     and its ordinal among the stateful operators of its statement (INSERT
//     or SELECT);
//   - a source: its table's name, plus an ordinal when the job reads the
//     same table more than once;
//   - a sink: its table's name (plus an ordinal for a second INSERT into the
//     same table); the client of a SELECT is "collect".
//
// Filters, projections, casts and table functions do not enter the id
// unless they compute a grouping key or an aggregate's argument, so adding a
// WHERE before an aggregation, changing the projection or filter after it,
// or writing to another sink keeps the aggregation's id.
//
// A /*+ UID('name') */ hint pins an aggregation's id to name. Ids are
// unique in a job: derived ids that collide (the same aggregation written
// twice in a statement set) get a "#n" suffix in plan order; a pinned id
// used twice is an error.

// idState is what the physBuilder remembers to assign ids.
type idState struct {
	ordinal int            // stateful operators built so far in the current statement
	used    map[string]int // ids assigned in the job -> times derived
	pinned  map[string]bool
	sources map[string]int // table name -> reads so far
	sinks   map[string]int // sink name -> INSERTs so far
}

// startStatement starts a new statement (INSERT of a set, or a SELECT):
// ordinals of stateful operators restart at 0.
func (b *physBuilder) startStatement() { b.ids.ordinal = 0 }

func hashID(parts ...string) string {
	h := sha1.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s|", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// unique returns id, or id#n (the first n >= 1 still free) if the job
// already has id.
func (b *physBuilder) unique(id string) string {
	if b.ids.used == nil {
		b.ids.used = map[string]int{}
	}
	c := id
	for n := 1; b.ids.used[c] > 0; n++ {
		c = id + "#" + strconv.Itoa(n)
	}
	b.ids.used[c]++
	return c
}

// sourceID is the id of the scan r (relScan).
func (b *physBuilder) sourceID(r *rel) string {
	name := "values"
	if !r.values {
		name = strings.ToLower(r.table.Name)
	}
	if b.ids.sources == nil {
		b.ids.sources = map[string]int{}
	}
	n := b.ids.sources[name]
	b.ids.sources[name] = n + 1
	if n == 0 {
		return b.unique(hashID("source", name))
	}
	return b.unique(hashID("source", name, strconv.Itoa(n)))
}

// sinkID is the id of the sink writing to table name ("" = the client).
func (b *physBuilder) sinkID(name string) string {
	name = strings.ToLower(name)
	if name == "" {
		name = "collect"
	}
	if b.ids.sinks == nil {
		b.ids.sinks = map[string]int{}
	}
	n := b.ids.sinks[name]
	b.ids.sinks[name] = n + 1
	if n == 0 {
		return b.unique(hashID("sink", name))
	}
	return b.unique(hashID("sink", name, strconv.Itoa(n)))
}

// aggID is the id of the aggregation r (relAgg), whose input is built.
func (b *physBuilder) aggID(r *rel) string {
	ord := b.ids.ordinal
	b.ids.ordinal++
	if r.uid != "" {
		if b.ids.pinned == nil {
			b.ids.pinned = map[string]bool{}
		}
		if b.ids.pinned[r.uid] || b.ids.used[r.uid] > 0 {
			if b.err == nil {
				b.err = &parser.Error{Pos: r.uidPos, Msg: fmt.Sprintf("operator id '%s' is used twice in this job: UID hints must be unique", r.uid)}
			}
		}
		b.ids.pinned[r.uid] = true
		if b.ids.used == nil {
			b.ids.used = map[string]int{}
		}
		b.ids.used[r.uid]++
		return r.uid
	}
	a := r.agg
	in := r.input
	keys := make([]string, len(a.Keys))
	for i, k := range a.Keys {
		keys[i] = lineage(in, k)
	}
	calls := make([]string, len(a.Aggs))
	for i, c := range a.Aggs {
		arg := "*"
		if c.Arg >= 0 {
			arg = lineage(in, c.Arg)
		}
		d := ""
		if c.Distinct {
			d = "distinct "
		}
		calls[i] = c.Fn + "(" + d + arg + ")"
	}
	return b.unique(hashID("GroupAggregate",
		"sources="+strings.Join(sourceTables(in), ","),
		"keys="+strings.Join(keys, ","),
		"aggs="+strings.Join(calls, ","),
		"ordinal="+strconv.Itoa(ord)))
}

// sourceTables lists the tables r reads (lower-case, sorted, unique).
func sourceTables(r *rel) []string {
	seen := map[string]bool{}
	var walk func(n *rel)
	walk = func(n *rel) {
		if n.kind == relScan {
			name := "values"
			if !n.values {
				name = strings.ToLower(n.table.Name)
			}
			seen[name] = true
		}
		for _, c := range n.children() {
			walk(c)
		}
	}
	walk(r)
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// lineage renders column i of r as an expression over source columns and
// the outputs of stateful operators, looking through every stateless step.
// Column types are left out: a changed type is a changed state schema
// (reported as incompatible), not another operator.
func lineage(r *rel, i int) string {
	for {
		switch r.kind {
		case relScan:
			if r.values {
				return "values"
			}
			return strings.ToLower(r.table.Name) + "." + strings.ToLower(r.table.Schema[i].Name)
		case relCalc:
			if r.projs == nil {
				r = r.input
				continue
			}
			return exprLineage(r.input, r.projs[i])
		case relTableFunc:
			if i < len(r.input.schema) {
				r = r.input
				continue
			}
			args := make([]string, len(r.tfunc.Args))
			for j, a := range r.tfunc.Args {
				args[j] = exprLineage(r.input, a)
			}
			return r.tfunc.Fn + "(" + strings.Join(args, ", ") + ")"
		case relAgg:
			return "@" + r.agg.ID + "." + strconv.Itoa(i)
		case relWindowTVF:
			if i < len(r.input.schema) {
				r = r.input
				continue
			}
			return r.win.spec.String() + "." + windowColumns[i-len(r.input.schema)] + "(" + lineage(r.input, r.win.timeCol) + ")"
		case relWindowAgg:
			return "@" + r.win.agg.ID + "." + strconv.Itoa(i)
		case relWindowRank:
			if i < len(r.input.schema) {
				r = r.input
				continue
			}
			return "@" + r.rank.op.ID + ".rank"
		case relLimit, relSort:
			r = r.input
			continue
		case relUnion:
			parts := make([]string, len(r.inputs))
			for j, in := range r.inputs {
				parts[j] = lineage(in, i)
			}
			return "union(" + strings.Join(parts, ", ") + ")"
		case relOver:
			if i < len(r.input.schema) {
				r = r.input
				continue
			}
			return "@" + r.over.ID + "." + strconv.Itoa(i)
		case relJoin, relTemporalJoin: // temporaljoin.go
			if r.join.op != nil && r.join.op.ID != "" {
				return "@" + r.join.op.ID + "." + strconv.Itoa(i)
			}
			if i < len(r.input.schema) {
				r = r.input
				continue
			}
			i -= len(r.input.schema)
			r = r.right
			continue
		}
		return "?"
	}
}

// exprLineage renders e (over the columns of in) with lineage.
func exprLineage(in *rel, e Expr) string {
	switch x := e.(type) {
	case *ColRef:
		return lineage(in, x.Index)
	case *Literal:
		return x.String()
	case *Call:
		args := make([]string, len(x.Args))
		for i, a := range x.Args {
			args[i] = exprLineage(in, a)
		}
		return x.Fn + "(" + strings.Join(args, ", ") + ")"
	}
	return e.String()
}
