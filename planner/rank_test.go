package planner

import (
	"strings"
	"testing"

	"github.com/streamsql/streamsql/catalog"
)

// TestUpgradeRank: a regular TopN and a deduplication are stateful
// operators of the upgrade check (kinds rank and deduplicate, partition
// keys, kept row columns, the ranking); the same query restores them, a
// changed rank range is another operator whose old state is unclaimed.
func TestUpgradeRank(t *testing.T) {
	c := upgradeCatalog(t)
	ts := catalog.Column{Name: "ts", Type: catalog.Timestamp}
	word := catalog.Column{Name: "word", Type: catalog.String}
	if err := c.CreateTable(&catalog.Table{Name: "clicks", Schema: catalog.Schema{word, ts},
		Watermark: &catalog.Watermark{Column: "ts", ExprSQL: "`ts`", DelayMillis: 0},
		Options:   []catalog.Option{{Key: "connector", Value: "socket"}}}, false); err != nil {
		t.Fatal(err)
	}
	topn := func(n string) string {
		return "INSERT INTO pr SELECT word FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY word ORDER BY ts) AS rn FROM clicks) WHERE rn <= " + n
	}
	find := func(ops []OperatorMeta, kind string) *OperatorMeta {
		for i, op := range ops {
			if op.Kind == kind {
				return &ops[i]
			}
		}
		t.Fatalf("no %s among %+v", kind, ops)
		return nil
	}
	ops := Operators(mustPlan(t, c, topn("3")))
	rank := find(ops, KindRank)
	if got := keyList(rank.State.Keys); got != "word STRING" {
		t.Errorf("keys %s", got)
	}
	if got := keyList(rank.State.Rows); got != "word STRING, ts TIMESTAMP(3)" {
		t.Errorf("rows %s", got)
	}
	if rank.State.Rank != "ROW_NUMBER 1..3 ORDER BY $1 (AppendFastStrategy)" {
		t.Errorf("rank %q", rank.State.Rank)
	}
	sp := OperatorsMeta(mustPlan(t, c, topn("3")))
	rep, err := CheckUpgrade(sp, mustPlan(t, c, topn("3")), false)
	if err != nil || rep.Err() != nil || rep.Count(StatusRestored) != len(ops) {
		t.Fatalf("same query: %v %v\n%s", err, rep.Err(), rep)
	}
	rep, _ = CheckUpgrade(sp, mustPlan(t, c, topn("5")), false)
	if rep.Err() == nil || rep.Count(StatusUnclaimed) != 1 || rep.Count(StatusNew) != 1 || !strings.Contains(rep.String(), "Rank(") {
		t.Errorf("a changed rank range:\n%s", rep)
	}
	// rank 1 by the rowtime, rank not read: a deduplication keeping the first row
	d := find(Operators(mustPlan(t, c, topn("1"))), KindDeduplicate)
	if d.State.Rank != "(keep=[FirstRow], key=[word], order=[ROWTIME])" || keyList(d.State.Keys) != "word STRING" {
		t.Errorf("deduplicate %+v", d.State)
	}
}
