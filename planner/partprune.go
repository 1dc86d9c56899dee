package planner

import "strings"

// Partition pruning: a scan of a partitioned filesystem table whose first
// operator is a Calc with a filter gets the filter's conjuncts that read
// partition columns only (and nothing that changes while the job runs:
// clock functions, PROCTIME) as SourceSpec.PartitionFilter. The source
// evaluates it over the values of each partition directory and reads only
// the directories where it is true. The Calc keeps the whole filter, so
// pruning never changes a result; it only skips files.

// clockFns are the functions whose value depends on when they run.
var clockFns = map[string]bool{"current_timestamp": true, "localtimestamp": true, "current_date": true,
	"current_time": true, "unix_timestamp": true, "proctime": true, "rand": true, "rand_integer": true, "uuid": true}

func prunePartitions(tasks []*Task) {
	for _, t := range tasks {
		if t.Source == nil || t.Source.Values || t.Source.Table == nil || len(t.Source.Table.PartitionKeys) == 0 ||
			len(t.Ops) == 0 || len(t.Outputs) > 1 {
			continue
		}
		c, ok := t.Ops[0].(*CalcOp)
		if !ok || c.Filter == nil {
			continue
		}
		part := map[int]bool{}
		for i, col := range t.Source.Schema {
			for _, k := range t.Source.Table.PartitionKeys {
				if strings.EqualFold(k, col.Name) {
					part[i] = true
				}
			}
		}
		var keep []Expr
		for _, e := range conjunctsOf(c.Filter) {
			if onlyReads(e, part) {
				keep = append(keep, e)
			}
		}
		if len(keep) == 0 {
			continue
		}
		f := keep[0]
		for _, e := range keep[1:] {
			f = &Call{Fn: "and", Args: []Expr{f, e}, T: f.Type()}
		}
		t.Source.PartitionFilter = f
	}
}

// conjunctsOf splits e at its top-level ANDs.
func conjunctsOf(e Expr) []Expr {
	if c, ok := e.(*Call); ok && c.Fn == "and" && len(c.Args) == 2 {
		return append(conjunctsOf(c.Args[0]), conjunctsOf(c.Args[1])...)
	}
	return []Expr{e}
}

// onlyReads reports whether e reads columns of cols only (at least one)
// and calls no clock function.
func onlyReads(e Expr, cols map[int]bool) bool {
	reads := false
	ok := true
	var walk func(Expr)
	walk = func(e Expr) {
		switch x := e.(type) {
		case *ColRef:
			reads = true
			if !cols[x.Index] {
				ok = false
			}
		case *Call:
			if clockFns[x.Fn] {
				ok = false
			}
			for _, a := range x.Args {
				walk(a)
			}
		case *Literal:
		default:
			ok = false // an expression kind pruning does not know
		}
	}
	walk(e)
	return ok && reads
}
