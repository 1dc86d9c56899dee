package planner

import (
	"strings"
	"testing"
)

// TestSubPlanReuse: an aggregation computed more than once over the same
// input is planned once, its readers behind forward edges; any difference
// in what it computes (a filter below it, an aggregate call, the keys, the
// window, a UID hint) keeps two; the option turns reuse off.
func TestSubPlanReuse(t *testing.T) {
	c := upgradeCatalog(t)
	count := func(sql string, set func(*Planner)) (aggs, windows int, ph *Physical) {
		t.Helper()
		ph, err := planSQLWith(t, c, sql, set)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		for _, tk := range ph.Tasks {
			for _, op := range tk.Ops {
				switch op.(type) {
				case *AggOp:
					aggs++
				case *WindowAggOp:
					windows++
				}
			}
		}
		return aggs, windows, ph
	}
	twice := func(a, b string) string {
		return "EXECUTE STATEMENT SET BEGIN INSERT INTO out " + a + "; INSERT INTO out2 " + b + "; END"
	}
	const q = "SELECT word, COUNT(*) FROM words GROUP BY word"
	for _, tc := range []struct {
		name, sql string
		aggs      int
	}{
		{"same aggregation in two statements", twice(q, q), 1},
		{"same aggregation, other projections above", twice(q, "SELECT word, c + 1 FROM (SELECT word, COUNT(*) AS c FROM words GROUP BY word) AS x"), 1},
		{"self-join of a CTE", "INSERT INTO out WITH a AS (SELECT word, COUNT(*) AS c FROM words GROUP BY word) SELECT x.word, y.c FROM a AS x JOIN a AS y ON x.c = y.c", 1},
		{"MAX of the same aggregation", "INSERT INTO out SELECT a.word, a.c FROM (SELECT word, COUNT(*) AS c FROM words GROUP BY word) AS a JOIN (SELECT MAX(c) AS m FROM (SELECT word, COUNT(*) AS c FROM words GROUP BY word) AS b) AS mx ON a.c = mx.m", 2},
		{"another filter below", twice(q, "SELECT word, COUNT(*) FROM words WHERE n > 1 GROUP BY word"), 2},
		{"another aggregate", twice(q, "SELECT word, SUM(n) FROM words GROUP BY word"), 2},
		{"another key", twice(q, "SELECT CAST(n AS STRING), COUNT(*) FROM words GROUP BY n"), 2},
		{"another table", twice(q, "SELECT word, COUNT(*) FROM words2 GROUP BY word"), 2},
		{"a UID hint", twice(q, "SELECT /*+ UID('pinned') */ word, COUNT(*) FROM words GROUP BY word"), 2},
	} {
		aggs, _, ph := count(tc.sql, nil)
		if aggs != tc.aggs {
			t.Errorf("%s: %d group aggregations, want %d:\n%s", tc.name, aggs, tc.aggs, Explain(ph))
		}
	}
	// Off: every occurrence planned.
	if aggs, _, ph := count(twice(q, q), func(p *Planner) { p.NoSubPlanReuse = true }); aggs != 2 {
		t.Errorf("reuse off: %d group aggregations, want 2:\n%s", aggs, Explain(ph))
	}
	// The shared aggregation's task feeds one reader per use; the source
	// below it is read once, by the aggregation's input chain only.
	_, _, ph := count(twice(q, q), nil)
	for _, tk := range ph.Tasks {
		if len(tk.Ops) == 1 {
			if _, ok := tk.Ops[0].(*AggOp); ok {
				if len(tk.Outputs) != 2 || tk.Outputs[0].Kind != Forward || tk.Outputs[1].Kind != Forward {
					t.Errorf("the shared aggregation's outputs: %v\n%s", tk.Outputs, Explain(ph))
				}
			}
		}
		if tk.Source != nil && len(tk.Outputs) != 1 {
			t.Errorf("the source has %d outputs, want 1:\n%s", len(tk.Outputs), Explain(ph))
		}
	}
	if !strings.Contains(Explain(ph), "FORWARD") {
		t.Fatal("no forward edge to the readers")
	}
	// Window aggregations (Nexmark q5's shape) are covered by the q5
	// golden tests of bench/nexmark, against SQLite, with crashes.
}
