package planner

import (
	"fmt"
	"strings"
)

// Sub-plan reuse, as Flink's table.optimizer.reuse-sub-plan-enabled: an
// aggregation (group or window) that the statements compute more than once
// over the same input, e.g. the two identical HOP aggregations of Nexmark
// q5's AuctionBids and CountBids, is planned once; every place that reads
// it gets a task of its own behind a forward edge from the one producer
// (a reader, as a shared source has). The operator below it, with its
// input chain, is then built, run and checkpointed once.
//
// Two subtrees are the same when their digests are: a canonical
// description of every node down to the scans (kind, expressions with
// their column indexes and types, aggregate calls, window, schema,
// changelog mode, the scanned table with its options). A node the digest
// does not describe (VALUES, joins, ranks, ...) makes its subtree
// unshareable, so a wrong match cannot happen by omission; only
// aggregations are shared (their output is small, their work and state
// large). A UID hint pins an aggregation's operator id: such a node is
// not shared.

// reuseOf counts the shareable aggregations' digests over rels and
// returns those computed more than once (nil: none).
func reuseOf(rels []*rel) map[string]*Task {
	memo := map[*rel]string{}
	count := map[string]int{}
	var walk func(n *rel)
	walk = func(n *rel) {
		if n == nil {
			return
		}
		if d := shareDigest(n, memo); d != "" {
			count[d]++
		}
		for _, c := range n.children() {
			walk(c)
		}
	}
	for _, r := range rels {
		walk(r)
	}
	return repeated(count)
}

// shareDigest is r's digest when r is an aggregation that may be shared,
// else "".
func shareDigest(r *rel, memo map[*rel]string) string {
	switch r.kind {
	case relAgg, relWindowAgg:
		if r.uid != "" {
			return ""
		}
		return digest(r, memo)
	}
	return ""
}

// digest describes what r computes ("" when some node of it is of a kind
// the digest does not describe).
func digest(r *rel, memo map[*rel]string) string {
	if d, ok := memo[r]; ok {
		return d
	}
	d := digestOf(r, memo)
	memo[r] = d
	return d
}

func digestOf(r *rel, memo map[*rel]string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d|%v|", r.kind, r.mode)
	for _, c := range r.schema { // types only: names are aliases, what reads them uses indexes
		fmt.Fprintf(&sb, "%s,", c.Type)
	}
	sb.WriteString("|")
	switch r.kind {
	case relScan:
		if r.values || r.rows != nil || r.table == nil {
			return ""
		}
		sb.WriteString("scan:" + scanKey(r))
		return sb.String()
	case relCalc:
		if r.filter != nil {
			fmt.Fprintf(&sb, "where %s:%s;", r.filter, r.filter.Type())
		}
		if r.projs == nil {
			sb.WriteString("*")
		}
		for _, p := range r.projs {
			fmt.Fprintf(&sb, "%s:%s,", p, p.Type())
		}
		if r.computedOf != nil {
			sb.WriteString(";computed:" + strings.ToLower(r.computedOf.Name))
		}
		if r.scalarSubs || r.hidden != 0 {
			return ""
		}
	case relAgg:
		a := r.agg
		fmt.Fprintf(&sb, "agg keys=%v in=%v distinct=%t calls=%s", a.Keys, a.InputMode, a.DistinctOnly, callsDigest(a.Aggs))
	case relWindowAgg:
		a := r.win.agg
		if a == nil {
			return ""
		}
		fmt.Fprintf(&sb, "window %s keys=%v time=%d proc=%t attached=%t,%d,%d calls=%s",
			a.Window, a.Keys, a.TimeCol, a.Proctime, a.Attached, a.WinStart, a.WinEnd, callsDigest(a.Aggs))
		fmt.Fprintf(&sb, " spec=%+v part=%v", r.win.spec, r.win.partKeys)
	default:
		return ""
	}
	in := digest(r.input, memo)
	if in == "" {
		return ""
	}
	sb.WriteString("<" + in + ">")
	return sb.String()
}

func callsDigest(calls []AggCall) string {
	parts := make([]string, len(calls))
	for i, c := range calls {
		parts[i] = fmt.Sprintf("%s(%t,%d,%s)->%s", c.Fn, c.Distinct, c.Arg, c.ArgType, c.T)
	}
	return strings.Join(parts, ",")
}

// buildShared builds r once per digest (see reuseOf) and returns a reader
// task of it; ok is false when r is not shared.
func (b *physBuilder) buildShared(r *rel) (t *Task, ok bool) {
	if b.reuse == nil {
		return nil, false
	}
	if b.digests == nil {
		b.digests = map[*rel]string{}
	}
	d := shareDigest(r, b.digests)
	if d == "" {
		return nil, false
	}
	prod, shared := b.reuse[d]
	if !shared {
		return nil, false
	}
	if prod == nil {
		prod = b.buildRel(r)
		b.reuse[d] = prod
		if b.producers == nil {
			b.producers = map[*Task]bool{}
		}
		b.producers[prod] = true
	}
	t = b.newTask(prod.Parallelism)
	t.OutSchema, t.OutMode = r.schema, r.mode
	b.connect(prod, t, Forward, nil)
	return t, true
}

// isProducer reports whether t is a shared aggregation's task.
func (b *physBuilder) isProducer(t *Task) bool { return b.producers[t] }
