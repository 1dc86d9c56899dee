package planner

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

func upgradeCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	c := catalog.New()
	tab := func(name, connector string, cols ...catalog.Column) {
		opts := []catalog.Option{{Key: "connector", Value: connector}}
		if connector == "filesystem" {
			opts = append(opts, catalog.Option{Key: "path", Value: "/tmp/" + name}, catalog.Option{Key: "format", Value: "json"})
		}
		if err := c.CreateTable(&catalog.Table{Name: name, Schema: cols, Options: opts}, false); err != nil {
			t.Fatal(err)
		}
	}
	word := catalog.Column{Name: "word", Type: catalog.String}
	n := catalog.Column{Name: "n", Type: catalog.Int}
	cnt := catalog.Column{Name: "c", Type: catalog.BigInt}
	tab("words", "socket", word, n)
	tab("words2", "datagen", word, n)
	tab("out", "filesystem", word, cnt)
	tab("out2", "filesystem", word, cnt)
	tab("outn", "filesystem", catalog.Column{Name: "k", Type: catalog.Int}, cnt)
	tab("outs", "filesystem", word, catalog.Column{Name: "s", Type: catalog.BigInt})
	tab("pr", "print", word)
	tab("pr2", "print", word, cnt)
	return c
}

// planSQL plans an INSERT or a statement set.
func planSQL(t *testing.T, c *catalog.Catalog, sql string) (*Physical, error) {
	t.Helper()
	return planSQLWith(t, c, sql, nil)
}

// planSQLWith plans sql with a planner that set (if not nil) adjusts.
func planSQLWith(t *testing.T, c *catalog.Catalog, sql string, set func(*Planner)) (*Physical, error) {
	t.Helper()
	st, err := parser.Parse(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	p := &Planner{Catalog: c, Parallelism: 2, MaxParallelism: 128}
	if set != nil {
		set(p)
	}
	switch x := st.(type) {
	case *parser.Insert:
		return p.PlanInserts([]*parser.Insert{x})
	case *parser.StatementSet:
		return p.PlanInserts(x.Inserts)
	case *parser.Select:
		ph, _, err := p.PlanSelect(x.Query)
		return ph, err
	}
	t.Fatalf("unexpected statement %T", st)
	return nil, nil
}

func mustPlan(t *testing.T, c *catalog.Catalog, sql string) *Physical {
	t.Helper()
	ph, err := planSQL(t, c, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return ph
}

func aggIDs(ph *Physical) []string {
	var ids []string
	for _, op := range Operators(ph) {
		if op.Kind == KindGroupAggregate {
			ids = append(ids, op.ID)
		}
	}
	return ids
}

const wordCount = "INSERT INTO out SELECT word, COUNT(*) FROM words GROUP BY word"

func TestIDsStable(t *testing.T) {
	c := upgradeCatalog(t)
	for _, sql := range []string{
		wordCount,
		"INSERT INTO out SELECT word, CAST(SUM(n) AS BIGINT) FROM words GROUP BY word",
		"EXECUTE STATEMENT SET BEGIN INSERT INTO out SELECT word, COUNT(*) FROM words GROUP BY word; INSERT INTO out2 SELECT word, COUNT(*) FROM words GROUP BY word; END",
	} {
		a := OperatorsMeta(mustPlan(t, c, sql))
		// A fresh catalog and planner give the same ids.
		b := OperatorsMeta(mustPlan(t, upgradeCatalog(t), sql))
		if a != b {
			t.Errorf("%s: ids differ between runs:\n%s\n%s", sql, a, b)
		}
	}
	// Derived ids are part of the savepoint format: a change to how they are
	// derived orphans every existing savepoint's state.
	ph := mustPlan(t, c, wordCount)
	var got []string
	for _, op := range Operators(ph) {
		got = append(got, op.Kind+"="+op.ID)
	}
	want := "source=" + hashID("source", "words") + " group-aggregate=" +
		hashID("GroupAggregate", "sources=words", "keys=words.word", "aggs=count_star(*)", "ordinal=0") +
		" sink=" + hashID("sink", "out")
	if strings.Join(got, " ") != want {
		t.Errorf("ids %v, want %s", got, want)
	}
	literal := "source=98cf89a6151fbd37 group-aggregate=6a5d20dade01d195 sink=351aae1d53feced9"
	if strings.Join(got, " ") != literal {
		t.Errorf("ids changed: %s, were %s", strings.Join(got, " "), literal)
	}
}

// Two statements computing the same aggregation: planned once with
// sub-plan reuse (the default); without it, twice under distinct ids.
func TestIDsUniqueInJob(t *testing.T) {
	c := upgradeCatalog(t)
	sql := "EXECUTE STATEMENT SET BEGIN " +
		"INSERT INTO out SELECT word, COUNT(*) FROM words GROUP BY word; " +
		"INSERT INTO out SELECT word, COUNT(*) FROM words GROUP BY word; END"
	for _, reuse := range []bool{true, false} {
		ph, err := planSQLWith(t, c, sql, func(p *Planner) { p.NoSubPlanReuse = !reuse })
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, op := range Operators(ph) {
			if seen[op.ID] {
				t.Errorf("id %s used twice", op.ID)
			}
			seen[op.ID] = true
		}
		ids := aggIDs(ph)
		if reuse {
			if len(seen) != 4 || len(ids) != 1 {
				t.Errorf("reuse: %d operators, want 1 source, 1 shared aggregation, 2 sinks: %s", len(seen), OperatorsMeta(ph))
			}
			continue
		}
		if len(seen) != 5 {
			t.Errorf("%d operators, want 1 shared source, 2 aggregations, 2 sinks: %s", len(seen), OperatorsMeta(ph))
		}
		if len(ids) != 2 || ids[1] != ids[0]+"#1" {
			t.Errorf("aggregation ids %v, want the second one the first's + #1", ids)
		}
	}
}

func TestCompatibleChanges(t *testing.T) {
	c := upgradeCatalog(t)
	base := mustPlan(t, c, wordCount)
	sp := OperatorsMeta(base)
	baseAgg := aggIDs(base)[0]
	tests := []struct {
		name, sql string
		newSink   bool
	}{
		{"same", wordCount, false},
		{"filter after", "INSERT INTO out SELECT word, COUNT(*) FROM words GROUP BY word HAVING COUNT(*) > 1", false},
		{"projection after", "INSERT INTO out SELECT UPPER(word), COUNT(*) + 1 FROM words GROUP BY word", false},
		{"where before", "INSERT INTO out SELECT word, COUNT(*) FROM words WHERE n > 0 AND word <> '' GROUP BY word", false},
		{"projection before", "INSERT INTO out SELECT w, COUNT(*) FROM (SELECT n, word AS w FROM words WHERE n IS NOT NULL) GROUP BY w", false},
		{"filter after via subquery", "INSERT INTO out SELECT * FROM (SELECT word, COUNT(*) AS c FROM words GROUP BY word) WHERE c < 100", false},
		{"other sink", "INSERT INTO out2 SELECT word, COUNT(*) FROM words GROUP BY word", true},
		{"print sink", "INSERT INTO pr2 SELECT word, COUNT(*) FROM words GROUP BY word", false},
	}
	for _, tc := range tests {
		ph := mustPlan(t, c, tc.sql)
		if got := aggIDs(ph); len(got) != 1 || got[0] != baseAgg {
			t.Errorf("%s: aggregation ids %v, want [%s]", tc.name, got, baseAgg)
		}
		rep, err := CheckUpgrade(sp, ph, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := rep.Err(); err != nil {
			t.Errorf("%s: refused: %v", tc.name, err)
			continue
		}
		if rep.Count(StatusRestored) < 2 || rep.Count(StatusIncompatible) != 0 {
			t.Errorf("%s: report\n%s", tc.name, rep)
		}
		if tc.newSink && (rep.Count(StatusNew) != 1 || rep.Count(StatusUnclaimed) != 1) {
			t.Errorf("%s: want the new sink NEW and the old one UNCLAIMED:\n%s", tc.name, rep)
		}
	}
}

func TestIncompatibleChanges(t *testing.T) {
	c := upgradeCatalog(t)
	sp := OperatorsMeta(mustPlan(t, c, wordCount))
	pinned := OperatorsMeta(mustPlan(t, c, "INSERT INTO out SELECT /*+ UID('wc') */ word, COUNT(*) FROM words GROUP BY word"))
	tests := []struct {
		name      string
		savepoint string
		sql       string
		ignore    bool
		want      map[UpgradeStatus]int
		refused   string // substring of the error; "" = accepted
	}{
		{"other key: new + unclaimed", sp, "INSERT INTO outn SELECT n, COUNT(*) FROM words GROUP BY n", false,
			map[UpgradeStatus]int{StatusRestored: 1, StatusNew: 2, StatusUnclaimed: 2},
			"REFUSED: the state of 1 operator is unclaimed; SET 'execution.savepoint.ignore-unclaimed-state' = 'true'"},
		{"other key, ignoring unclaimed", sp, "INSERT INTO outn SELECT n, COUNT(*) FROM words GROUP BY n", true,
			map[UpgradeStatus]int{StatusRestored: 1, StatusNew: 2, StatusUnclaimed: 2}, ""},
		{"removed aggregation", sp, "INSERT INTO pr SELECT word FROM words", false,
			map[UpgradeStatus]int{StatusRestored: 1, StatusUnclaimed: 2}, "is unclaimed"},
		{"removed aggregation, ignoring unclaimed", sp, "INSERT INTO pr SELECT word FROM words", true,
			map[UpgradeStatus]int{StatusRestored: 1, StatusUnclaimed: 2}, ""},
		{"added aggregate", sp, "INSERT INTO outs SELECT word, CAST(SUM(n) AS BIGINT) FROM words GROUP BY word", false,
			map[UpgradeStatus]int{StatusRestored: 1, StatusNew: 2, StatusUnclaimed: 2}, "is unclaimed"},
		{"pinned, key type changed", pinned, "INSERT INTO outn SELECT /*+ UID('wc') */ n, COUNT(*) FROM words GROUP BY n", true,
			map[UpgradeStatus]int{StatusRestored: 1, StatusIncompatible: 1, StatusNew: 1, StatusUnclaimed: 1},
			"grouping key 1 (n) was STRING, now INT"},
		{"pinned, accumulator changed", pinned, "INSERT INTO out SELECT /*+ UID('wc') */ word, CAST(SUM(n) AS BIGINT) FROM words GROUP BY word", false,
			map[UpgradeStatus]int{StatusRestored: 2, StatusIncompatible: 1},
			"accumulator 1 was COUNT(*) -> BIGINT, now SUM(INT) -> INT"},
		{"pinned, key added", pinned, "INSERT INTO out SELECT /*+ UID('wc') */ word, COUNT(*) FROM words GROUP BY word, n", false,
			map[UpgradeStatus]int{StatusRestored: 2, StatusIncompatible: 1},
			"grouping keys were [word STRING], now [word STRING, n INT]"},
		{"other source table", sp, "INSERT INTO out SELECT word, COUNT(*) FROM words2 GROUP BY word", true,
			map[UpgradeStatus]int{StatusRestored: 1, StatusNew: 2, StatusUnclaimed: 2}, ""},
	}
	for _, tc := range tests {
		rep, err := CheckUpgrade(tc.savepoint, mustPlan(t, c, tc.sql), tc.ignore)
		if err != nil {
			t.Fatal(err)
		}
		for st, n := range tc.want {
			if rep.Count(st) != n {
				t.Errorf("%s: %d %s, want %d:\n%s", tc.name, rep.Count(st), st, n, rep)
			}
		}
		err = rep.Err()
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.refused)
		}
	}
}

func TestUIDHintPins(t *testing.T) {
	c := upgradeCatalog(t)
	ph := mustPlan(t, c, "INSERT INTO out SELECT /*+ UID('wc') */ word, COUNT(*) FROM words WHERE n > 1 GROUP BY word")
	if ids := aggIDs(ph); len(ids) != 1 || ids[0] != "wc" {
		t.Fatalf("ids %v", ids)
	}
	// A pinned id survives changes that a derived one does not.
	ph2 := mustPlan(t, c, "INSERT INTO out SELECT /*+ UID('wc') */ LOWER(word), COUNT(*) FROM words GROUP BY LOWER(word)")
	if ids := aggIDs(ph2); ids[0] != "wc" {
		t.Errorf("ids %v", ids)
	}
	ops := Operators(ph)
	if !ops[1].UID || ops[0].UID {
		t.Errorf("uid flags %+v", ops)
	}
	// DISTINCT on top of a hinted GROUP BY.
	ph3 := mustPlan(t, c, "INSERT INTO out SELECT /*+ UID('wc') */ DISTINCT word, COUNT(*) FROM words GROUP BY word")
	if ids := aggIDs(ph3); strings.Join(ids, ",") != "wc,wc/distinct" {
		t.Errorf("ids %v", ids)
	}
	ph4 := mustPlan(t, c, "INSERT INTO pr SELECT /*+ UID('d') */ DISTINCT word FROM words")
	if ids := aggIDs(ph4); strings.Join(ids, ",") != "d" {
		t.Errorf("ids %v", ids)
	}
	// The hint of an inner SELECT pins the inner aggregation only.
	ph5 := mustPlan(t, c, "INSERT INTO outn SELECT CAST(c AS INT), COUNT(*) FROM (SELECT /*+ UID('inner') */ word, COUNT(*) AS c FROM words GROUP BY word) GROUP BY c")
	if ids := aggIDs(ph5); len(ids) != 2 || ids[0] != "inner" || !isDerivedID(ids[1]) {
		t.Errorf("ids %v", ids)
	}

	errs := []struct{ sql, want string }{
		{"INSERT INTO pr SELECT /*+ UID('x') */ word FROM words", "1:27: UID('x') pins the id of a stateful operator, but this SELECT has none"},
		{"EXECUTE STATEMENT SET BEGIN INSERT INTO out SELECT /*+ UID('wc') */ word, COUNT(*) FROM words GROUP BY word; " +
			"INSERT INTO out2 SELECT /*+ UID('wc') */ word, COUNT(*) FROM words GROUP BY word; END", "1:138: operator id 'wc' is used twice in this job"},
	}
	for _, tc := range errs {
		_, err := planSQL(t, c, tc.sql)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.sql, err, tc.want)
		}
	}
}

// TestSourceReadTwice: two INSERTs of a statement set reading one table
// share its source (one id, one task with two outputs); with
// NoSourceReuse each reads on its own, under distinct ids.
func TestSourceReadTwice(t *testing.T) {
	c := upgradeCatalog(t)
	const set = "EXECUTE STATEMENT SET BEGIN INSERT INTO pr SELECT word FROM words; INSERT INTO pr SELECT word FROM words; END"
	ph := mustPlan(t, c, set)
	ops := Operators(ph)
	if len(ops) != 1 || ops[0].ID != hashID("source", "words") {
		t.Errorf("sources %+v", ops)
	}
	if src := ph.Tasks[0]; src.Source == nil || len(src.Outputs) != 2 || len(src.Ops) != 0 {
		t.Errorf("the shared source task: %s", Explain(ph))
	}
	st, err := parser.Parse(set)
	if err != nil {
		t.Fatal(err)
	}
	p := &Planner{Catalog: c, Parallelism: 2, MaxParallelism: 128, NoSourceReuse: true}
	ph, err = p.PlanInserts(st.(*parser.StatementSet).Inserts)
	if err != nil {
		t.Fatal(err)
	}
	ops = Operators(ph)
	if len(ops) != 2 || ops[0].ID == ops[1].ID || ops[0].ID != hashID("source", "words") {
		t.Errorf("sources without reuse %+v", ops)
	}
}

func TestOperatorsMetaDocument(t *testing.T) {
	c := upgradeCatalog(t)
	ph := mustPlan(t, c, "INSERT INTO out SELECT /*+ UID('wc') */ word, MAX(n) + COUNT(DISTINCT n) FROM words GROUP BY word")
	var doc map[string]any
	if err := json.Unmarshal([]byte(OperatorsMeta(ph)), &doc); err != nil {
		t.Fatal(err)
	}
	agg := doc["operators"].([]any)[1].(map[string]any)
	got, _ := json.Marshal(agg)
	want := `{"description":"GroupAggregate(groupBy=[word], select=[MAX($1) AS EXPR$0, COUNT(DISTINCT $1) AS EXPR$1]) on words",` +
		`"id":"wc","kind":"group-aggregate","state":{"accumulators":[{"arg_type":"INT","fn":"max","type":"INT"},` +
		`{"arg_type":"INT","distinct":true,"fn":"count","type":"BIGINT"}],"keys":[{"name":"word","type":"STRING"}]},"uid":true}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if doc["version"].(float64) != 1 {
		t.Errorf("version %v", doc["version"])
	}
	// MIN/MAX over an updating input keep a multiset.
	ph2 := mustPlan(t, c, "INSERT INTO outn SELECT CAST(c AS INT), MAX(c) FROM (SELECT word, COUNT(*) AS c FROM words GROUP BY word) GROUP BY c")
	ops := Operators(ph2)
	if acc := ops[2].State.Accumulators[0]; !acc.Retract || acc.String() != "MAX(BIGINT) -> BIGINT [retracting input]" {
		t.Errorf("accumulator %+v", acc)
	}
}

func TestUpgradeReportText(t *testing.T) {
	c := upgradeCatalog(t)
	sp := OperatorsMeta(mustPlan(t, c, "INSERT INTO out SELECT /*+ UID('wc') */ word, COUNT(*) FROM words GROUP BY word"))
	rep, err := CheckUpgrade(sp, mustPlan(t, c, "INSERT INTO outn SELECT /*+ UID('wc') */ n, COUNT(*) FROM words GROUP BY n"), false)
	if err != nil {
		t.Fatal(err)
	}
	src, out, outn := hashID("source", "words"), hashID("sink", "out"), hashID("sink", "outn")
	want := "== Upgrade Check ==\n" +
		"RESTORED      Source: words [id=" + src + "]\n" +
		"INCOMPATIBLE  GlobalGroupAggregate(groupBy=[n], select=[COUNT(*) AS EXPR$0]) on words [id=wc]: grouping key 1 (n) was STRING, now INT\n" +
		"NEW           Sink: outn [id=" + outn + "]: starts empty\n" +
		"UNCLAIMED     Sink: out [id=" + out + "]: the sink is gone; its uncommitted output is dropped\n" +
		"== Result ==\n" +
		"REFUSED: 1 operator has incompatible state\n"
	if got := rep.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if err := rep.Err(); err == nil || !strings.HasPrefix(err.Error(), "the savepoint's state does not fit this job:\n== Upgrade Check ==") {
		t.Errorf("error %v", err)
	}

	rep, _ = CheckUpgrade(sp, mustPlan(t, c, "INSERT INTO out SELECT /*+ UID('wc') */ word, COUNT(*) FROM words WHERE n > 0 GROUP BY word"), false)
	if v := rep.Verdict(); v != "COMPATIBLE: 3 restored, 0 new" {
		t.Errorf("verdict %q", v)
	}
	rep, _ = CheckUpgrade(sp, mustPlan(t, c, "INSERT INTO pr SELECT word FROM words"), true)
	if v := rep.Verdict(); v != "COMPATIBLE: 1 restored, 0 new, 2 unclaimed (dropped)" {
		t.Errorf("verdict %q", v)
	}
}

func TestCheckUpgradeBadDocument(t *testing.T) {
	c := upgradeCatalog(t)
	ph := mustPlan(t, c, wordCount)
	tests := []struct{ doc, want string }{
		{"", "records no operators"},
		{"{", "is not valid"},
		{`{"version": 2, "operators": []}`, "has version 2; this build reads version 1"},
		{`{"version": 1, "operators": [{"kind": "source"}]}`, "operator 1 has no id or kind"},
	}
	for _, tc := range tests {
		_, err := CheckUpgrade(tc.doc, ph, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.doc, err, tc.want)
		}
	}
	// A job without state against an empty savepoint document.
	rep, err := CheckUpgrade(`{"version":1,"operators":[]}`, mustPlan(t, c, "INSERT INTO pr SELECT word FROM words"), false)
	if err != nil || rep.Err() != nil || rep.Count(StatusNew) != 1 {
		t.Errorf("%v %v", err, rep)
	}
}

// TestUpgradeWindowOperators: window aggregations and watermark assigners
// are stateful operators of the upgrade check: a changed window size is
// incompatible, an unchanged window restores, a dropped one is unclaimed.
func TestUpgradeWindowOperators(t *testing.T) {
	c := upgradeCatalog(t)
	ts := catalog.Column{Name: "ts", Type: catalog.Timestamp}
	word := catalog.Column{Name: "word", Type: catalog.String}
	if err := c.CreateTable(&catalog.Table{Name: "clicks", Schema: catalog.Schema{word, ts},
		Watermark: &catalog.Watermark{Column: "ts", ExprSQL: "`ts`", DelayMillis: 0},
		Options:   []catalog.Option{{Key: "connector", Value: "socket"}}}, false); err != nil {
		t.Fatal(err)
	}
	q := func(size string) string {
		return "INSERT INTO out SELECT /*+ UID('w') */ word, COUNT(*) FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '" + size + "' SECOND)) GROUP BY word, window_start, window_end"
	}
	sp := OperatorsMeta(mustPlan(t, c, q("10")))
	kinds := map[string]bool{}
	for _, op := range Operators(mustPlan(t, c, q("10"))) {
		kinds[op.Kind] = true
	}
	if !kinds[KindWindowAggregate] || !kinds[KindWatermark] {
		t.Fatalf("operators %s", sp)
	}
	rep, err := CheckUpgrade(sp, mustPlan(t, c, q("10")), false)
	if err != nil || rep.Err() != nil {
		t.Fatalf("same window: %v %v\n%s", err, rep.Err(), rep)
	}
	rep, _ = CheckUpgrade(sp, mustPlan(t, c, q("20")), false)
	if rep.Err() == nil || !strings.Contains(rep.String(), "window was TUMBLE(size=[10 s]), now TUMBLE(size=[20 s])") {
		t.Errorf("a changed window size:\n%s", rep)
	}
}
