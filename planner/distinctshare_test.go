package planner

import (
	"fmt"
	"testing"
)

// TestDistinctShares: COUNT(DISTINCT x) calls of one x share a set
// whether or not they have a FILTER; a call of another argument has its
// own; plain COUNTs with a FILTER have none; the shares are planned the
// same every time.
func TestDistinctShares(t *testing.T) {
	c := upgradeCatalog(t)
	sql := `SELECT word,
		COUNT(DISTINCT n), COUNT(DISTINCT n) FILTER (WHERE n > 3), COUNT(*) FILTER (WHERE n > 3),
		COUNT(DISTINCT n + 1), COUNT(DISTINCT n) FILTER (WHERE n < 0),
		COUNT(DISTINCT word) FILTER (WHERE n = 1), COUNT(n) FILTER (WHERE n = 2),
		COUNT(DISTINCT word || 'x') FILTER (WHERE n = 1), COUNT(DISTINCT word || 'x')
		FROM words GROUP BY word`
	ph := mustPlan(t, c, sql)
	var agg *AggOp
	for _, tk := range ph.Tasks {
		for _, op := range tk.Ops {
			if a, ok := op.(*AggOp); ok {
				agg = a
			}
		}
	}
	if agg == nil {
		t.Fatal("no aggregation")
	}
	var got []int
	for _, a := range agg.Aggs {
		got = append(got, a.Share)
	}
	want := []int{1, 1, 0, 2, 1, 3, 0, 4, 4}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("shares %v, want %v (%v)", got, want, agg.Aggs)
	}
	// deterministic: another planner gives the same shares' ids
	if a, b := aggIDs(ph), aggIDs(mustPlan(t, upgradeCatalog(t), sql)); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("ids differ between runs: %v %v", a, b)
	}
}
