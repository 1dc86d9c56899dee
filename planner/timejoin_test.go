package planner

import (
	"fmt"
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

// TestTimeJoinDetection: the condition shapes that are interval joins and
// those that stay regular joins, as Flink plans them: Nexmark q4's bound
// by expires and q7's by a window aggregation's window_end (neither a
// time attribute), a bound on one side only, bounds between different
// time columns, a processing-time attribute.
func TestTimeJoinDetection(t *testing.T) {
	c := upgradeCatalog(t)
	ts := catalog.Column{Name: "ts", Type: catalog.Timestamp}
	ex := catalog.Column{Name: "expires", Type: catalog.Timestamp}
	word := catalog.Column{Name: "word", Type: catalog.String}
	for _, name := range []string{"l", "r"} {
		if err := c.CreateTable(&catalog.Table{Name: name, Schema: catalog.Schema{word, ts, ex},
			Watermark: &catalog.Watermark{Column: "ts", ExprSQL: "`ts`", DelayMillis: 0},
			Options:   []catalog.Option{{Key: "connector", Value: "socket"}}}, false); err != nil {
			t.Fatal(err)
		}
	}
	kindOf := func(sql string) string {
		for _, task := range mustPlan(t, c, sql).Tasks {
			for _, op := range task.Ops {
				switch o := op.(type) {
				case *IntervalJoinOp:
					return fmt.Sprintf("interval[%d,%d]", o.LowerBound, o.UpperBound)
				case *WindowJoinOp:
					return "window"
				case *JoinOp:
					return "regular"
				}
			}
		}
		return "none"
	}
	for _, tc := range []struct{ sql, want string }{
		{"INSERT INTO pr SELECT l.word FROM l JOIN r ON l.word = r.word AND r.ts BETWEEN l.ts - INTERVAL '1' SECOND AND l.ts + INTERVAL '2' SECOND", "interval[-2000,1000]"},
		{"INSERT INTO pr SELECT l.word FROM l, r WHERE l.word = r.word AND l.ts > r.ts AND l.ts < r.ts + INTERVAL '1' MINUTE", "interval[1,59999]"},
		{"INSERT INTO pr SELECT l.word FROM l JOIN r ON r.ts >= l.ts AND r.ts <= l.ts", "interval[0,0]"},
		// q4: BETWEEN a.dateTime AND a.expires
		{"INSERT INTO pr SELECT l.word FROM l JOIN r ON l.word = r.word AND r.ts BETWEEN l.ts AND l.expires", "regular"},
		{"INSERT INTO pr SELECT l.word FROM l JOIN r ON l.word = r.word AND r.ts >= l.ts", "regular"},
		{"INSERT INTO pr SELECT l.word FROM l JOIN r ON l.word = r.word AND r.ts >= l.ts AND r.expires <= l.ts + INTERVAL '1' SECOND", "regular"},
		// q7: bids within 10 s before a window aggregation's window_end
		{"INSERT INTO pr SELECT r.word FROM r JOIN (SELECT MAX(word) AS w, window_end FROM TABLE(TUMBLE(TABLE l, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end) b " +
			"ON r.word = b.w AND r.ts BETWEEN b.window_end - INTERVAL '10' SECOND AND b.window_end", "regular"},
		{"INSERT INTO pr SELECT l.word FROM (SELECT *, PROCTIME() AS pt FROM l) l JOIN (SELECT *, PROCTIME() AS pt FROM r) r ON l.word = r.word AND r.pt BETWEEN l.pt AND l.pt + INTERVAL '1' SECOND", "regular"},
		{"INSERT INTO pr SELECT a.word FROM (SELECT * FROM TABLE(TUMBLE(TABLE l, DESCRIPTOR(ts), INTERVAL '10' SECOND))) a JOIN (SELECT * FROM TABLE(TUMBLE(TABLE r, DESCRIPTOR(ts), INTERVAL '10' SECOND))) b ON a.window_start = b.window_start AND a.window_end = b.window_end", "window"},
		// window_start alone is no window join
		{"INSERT INTO pr SELECT a.word FROM (SELECT * FROM TABLE(TUMBLE(TABLE l, DESCRIPTOR(ts), INTERVAL '10' SECOND))) a JOIN (SELECT * FROM TABLE(TUMBLE(TABLE r, DESCRIPTOR(ts), INTERVAL '10' SECOND))) b ON a.window_start = b.window_start", "regular"},
	} {
		if got := kindOf(tc.sql); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.sql, got, tc.want)
		}
	}
}
