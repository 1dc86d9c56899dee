package planner

import (
	"strings"
	"testing"
)

// TestSetOpsPlans: UNION ALL inputs at another parallelism are rebalanced
// (append-only) or gathered (updating); LIMIT's id is stable across
// plannings and in the upgrade metadata; the ids of two references to one
// CTE differ.
func TestSetOpsPlans(t *testing.T) {
	c := upgradeCatalog(t)
	ph := mustPlan(t, c, "SELECT word FROM words UNION ALL SELECT 'x'")
	var union *Task
	for _, tk := range ph.Tasks {
		if len(tk.Ops) > 0 {
			if _, ok := tk.Ops[0].(*UnionOp); ok {
				union = tk
			}
		}
	}
	if union == nil || union.Parallelism != 2 || len(union.Inputs) != 2 ||
		union.Inputs[0].Kind != Forward || union.Inputs[1].Kind != Rebalance {
		t.Fatalf("append-only union:\n%s", Explain(ph))
	}
	// a global aggregation (parallelism 1, updating) and a scan (2)
	ph = mustPlan(t, c, "SELECT COUNT(*) AS c FROM words UNION ALL SELECT CAST(n AS BIGINT) FROM words")
	found := false
	for _, tk := range ph.Tasks {
		if len(tk.Ops) > 0 {
			if _, ok := tk.Ops[0].(*UnionOp); ok {
				found = true
				if tk.Parallelism != 1 || tk.Inputs[0].Kind != Forward || tk.Inputs[1].Kind != Global {
					t.Fatalf("an updating input at another parallelism makes the union gather:\n%s", Explain(ph))
				}
			}
		}
	}
	if !found {
		t.Fatalf("no union:\n%s", Explain(ph))
	}
	q := "INSERT INTO pr SELECT word FROM words LIMIT 3"
	a, b := OperatorsMeta(mustPlan(t, c, q)), OperatorsMeta(mustPlan(t, c, q))
	if a != b || !strings.Contains(a, `"kind":"limit"`) {
		t.Fatalf("limit meta not stable or missing:\n%s\n%s", a, b)
	}
	cte := "INSERT INTO out WITH a AS (SELECT word, COUNT(*) AS c FROM words GROUP BY word) SELECT * FROM a UNION ALL SELECT * FROM a"
	if ids := aggIDs(mustPlan(t, c, cte)); len(ids) != 1 {
		t.Fatalf("two references to a CTE share one aggregation (sub-plan reuse): %v", ids)
	}
	ph, err := planSQLWith(t, c, cte, func(p *Planner) { p.NoSubPlanReuse = true })
	if err != nil {
		t.Fatal(err)
	}
	ids := aggIDs(ph)
	if len(ids) != 2 || ids[0] == ids[1] {
		t.Fatalf("without sub-plan reuse, two references to a CTE need two aggregations with distinct ids: %v", ids)
	}
}
