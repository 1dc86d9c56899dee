package planner

import (
	"strings"
	"testing"

	"github.com/streamsql/streamsql/catalog"
)

// TestUpgradeWindowRank: a Window TopN is a stateful operator of the
// upgrade check (kind window-rank, its partition and window keys, the
// buffered row columns and the ranking); the same query restores it, a
// changed ranking is another operator whose old state is unclaimed.
func TestUpgradeWindowRank(t *testing.T) {
	c := upgradeCatalog(t)
	ts := catalog.Column{Name: "ts", Type: catalog.Timestamp}
	word := catalog.Column{Name: "word", Type: catalog.String}
	if err := c.CreateTable(&catalog.Table{Name: "clicks", Schema: catalog.Schema{word, ts},
		Watermark: &catalog.Watermark{Column: "ts", ExprSQL: "`ts`", DelayMillis: 0},
		Options:   []catalog.Option{{Key: "connector", Value: "socket"}}}, false); err != nil {
		t.Fatal(err)
	}
	q := func(n string) string {
		return "INSERT INTO pr SELECT word FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, word ORDER BY ts DESC) AS rn" +
			" FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND))) WHERE rn <= " + n
	}
	var rank *OperatorMeta
	ops := Operators(mustPlan(t, c, q("3")))
	for i, op := range ops {
		if op.Kind == KindWindowRank {
			rank = &ops[i]
		}
	}
	if rank == nil {
		t.Fatalf("no %s among %+v", KindWindowRank, ops)
	}
	if got := keyList(rank.State.Keys); got != "word STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3)" {
		t.Errorf("keys %s", got)
	}
	if got := keyList(rank.State.Rows); got != "word STRING, ts TIMESTAMP(3), window_start TIMESTAMP(3), window_end TIMESTAMP(3), window_time TIMESTAMP(3)" {
		t.Errorf("rows %s", got)
	}
	if rank.State.Rank != "ROW_NUMBER 1..3 ORDER BY $1 DESC" || rank.State.Window != "TUMBLE(size=[10 s])" {
		t.Errorf("rank %q window %q", rank.State.Rank, rank.State.Window)
	}
	sp := OperatorsMeta(mustPlan(t, c, q("3")))
	rep, err := CheckUpgrade(sp, mustPlan(t, c, q("3")), false)
	if err != nil || rep.Err() != nil || rep.Count(StatusRestored) != len(ops) {
		t.Fatalf("same query: %v %v\n%s", err, rep.Err(), rep)
	}
	rep, _ = CheckUpgrade(sp, mustPlan(t, c, q("5")), false)
	if rep.Err() == nil || rep.Count(StatusUnclaimed) != 1 || rep.Count(StatusNew) != 1 || !strings.Contains(rep.String(), "WindowRank") {
		t.Errorf("a changed rank range:\n%s", rep)
	}
}
