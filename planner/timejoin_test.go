package planner

import (
	"strings"
	"testing"

	"github.com/streamsql/streamsql/catalog"
)

// TestUpgradeTimeJoins: interval and window joins are stateful operators
// of the upgrade check (their own kinds, the bounds or the window in the
// state description); the same query restores every operator, and a
// changed bound is reported.
func TestUpgradeTimeJoins(t *testing.T) {
	c := upgradeCatalog(t)
	ts := catalog.Column{Name: "ts", Type: catalog.Timestamp}
	word := catalog.Column{Name: "word", Type: catalog.String}
	for _, name := range []string{"l", "r"} {
		if err := c.CreateTable(&catalog.Table{Name: name, Schema: catalog.Schema{word, ts},
			Watermark: &catalog.Watermark{Column: "ts", ExprSQL: "`ts`", DelayMillis: 0},
			Options:   []catalog.Option{{Key: "connector", Value: "socket"}}}, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		kind, sql, changed, state string
	}{
		{KindIntervalJoin,
			"INSERT INTO pr SELECT l.word FROM l JOIN r ON l.word = r.word AND r.ts BETWEEN l.ts - INTERVAL '1' SECOND AND l.ts + INTERVAL '2' SECOND",
			"INSERT INTO pr SELECT l.word FROM l JOIN r ON l.word = r.word AND r.ts BETWEEN l.ts - INTERVAL '1' SECOND AND l.ts + INTERVAL '3' SECOND",
			"InnerJoin leftLowerBound=-2000 leftUpperBound=1000"},
		{KindWindowJoin,
			"INSERT INTO pr SELECT a.word FROM (SELECT * FROM TABLE(TUMBLE(TABLE l, DESCRIPTOR(ts), INTERVAL '10' SECOND))) a LEFT JOIN (SELECT * FROM TABLE(TUMBLE(TABLE r, DESCRIPTOR(ts), INTERVAL '10' SECOND))) b ON a.word = b.word AND a.window_start = b.window_start AND a.window_end = b.window_end",
			"INSERT INTO pr SELECT a.word FROM (SELECT * FROM TABLE(TUMBLE(TABLE l, DESCRIPTOR(ts), INTERVAL '5' SECOND))) a LEFT JOIN (SELECT * FROM TABLE(TUMBLE(TABLE r, DESCRIPTOR(ts), INTERVAL '5' SECOND))) b ON a.word = b.word AND a.window_start = b.window_start AND a.window_end = b.window_end",
			"LeftOuterJoin"},
	} {
		var found *OperatorMeta
		ops := Operators(mustPlan(t, c, tc.sql))
		for i, op := range ops {
			if op.Kind == tc.kind {
				found = &ops[i]
			}
		}
		if found == nil {
			t.Fatalf("no %s among %+v", tc.kind, ops)
		}
		if found.State.Rank != tc.state || len(found.State.Keys) == 0 || len(found.State.Rows) == 0 {
			t.Errorf("%s state %+v", tc.kind, found.State)
		}
		sp := OperatorsMeta(mustPlan(t, c, tc.sql))
		rep, err := CheckUpgrade(sp, mustPlan(t, c, tc.sql), false)
		if err != nil || rep.Err() != nil || rep.Count(StatusRestored) != len(ops) {
			t.Fatalf("%s, same query: %v %v\n%s", tc.kind, err, rep.Err(), rep)
		}
		rep, _ = CheckUpgrade(sp, mustPlan(t, c, tc.changed), false)
		if rep.Count(StatusRestored) == len(ops) || !strings.Contains(rep.String(), "Join") {
			t.Errorf("%s, changed: every operator restored:\n%s", tc.kind, rep)
		}
	}
}
