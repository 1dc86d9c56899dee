package parser

import (
	"reflect"
	"testing"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
)

func mustQuery(t *testing.T, sql string) (*ast.SelectStmt, *QueryContext) {
	t.Helper()
	st := mustParse(t, sql)
	sel, ok := st.(*Select)
	if !ok {
		t.Fatalf("%q: %T", sql, st)
	}
	node, ok := sel.Query.Node.(*ast.SelectStmt)
	if !ok {
		t.Fatalf("%q: node %T", sql, sel.Query.Node)
	}
	return node, sel.Query.Ctx
}

// collect returns every node of type T under n.
func collect[T ast.Node](n ast.Node) []T {
	v := &collector[T]{}
	n.Accept(v)
	return v.found
}

type collector[T ast.Node] struct{ found []T }

func (c *collector[T]) Enter(n ast.Node) (ast.Node, bool) {
	if x, ok := n.(T); ok {
		c.found = append(c.found, x)
	}
	return n, false
}
func (c *collector[T]) Leave(n ast.Node) (ast.Node, bool) { return n, true }

func TestCastRoundTrip(t *testing.T) {
	tests := []struct {
		cast string
		want TypeName
	}{
		{"INT", TypeName{Name: "INT"}},
		{"integer", TypeName{Name: "INTEGER"}},
		{"BIGINT", TypeName{Name: "BIGINT"}},
		{"STRING", TypeName{Name: "STRING"}},
		{"VARCHAR(10)", TypeName{Name: "VARCHAR", Args: []int{10}}},
		{"BOOLEAN", TypeName{Name: "BOOLEAN"}},
		{"DOUBLE", TypeName{Name: "DOUBLE"}},
		{"DECIMAL(10, 2)", TypeName{Name: "DECIMAL", Args: []int{10, 2}}},
		{"TIMESTAMP(3)", TypeName{Name: "TIMESTAMP", Args: []int{3}}},
		{"TIMESTAMP_LTZ(3)", TypeName{Name: "TIMESTAMP_LTZ", Args: []int{3}}},
		{"CHAR(5)", TypeName{Name: "CHAR", Args: []int{5}}},
		{"SIGNED", TypeName{Name: "SIGNED"}},
		{"Foo", TypeName{Name: "FOO"}}, // validated by the catalog, not here
	}
	for _, tc := range tests {
		sql := "SELECT CAST(a AS " + tc.cast + ") FROM t"
		sel, ctx := mustQuery(t, sql)
		c := sel.Fields.Fields[0].Expr.(*ast.FuncCastExpr)
		got, ok := ctx.CastType(c)
		tc.want.Pos = Pos{17, 1, 18}
		if !ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %+v %v, want %+v", sql, got, ok, tc.want)
		}
		if col, ok := c.Expr.(*ast.ColumnNameExpr); !ok || col.Name.Name.L != "a" {
			t.Errorf("%q: operand %T", sql, c.Expr)
		}
	}
	// Several and nested casts, including inside a table function's arguments.
	sql := "SELECT CAST(CAST(a AS INT) AS STRING), CAST(b AS DOUBLE) FROM t, LATERAL TABLE(f(CAST(c AS BIGINT))) AS T(x)"
	sel, ctx := mustQuery(t, sql)
	var names []string
	for _, c := range collect[*ast.FuncCastExpr](sel) {
		tn, ok := ctx.CastType(c)
		if !ok {
			t.Fatalf("unknown cast %v", c)
		}
		names = append(names, tn.Name)
	}
	tfs := collect[*ast.TableName](sel)
	tf, ok := ctx.TableFunc(tfs[1])
	if !ok {
		t.Fatal("table function not found")
	}
	for _, c := range collect[*ast.FuncCastExpr](tf.Args[0]) {
		tn, _ := ctx.CastType(c)
		names = append(names, tn.Name)
	}
	if want := []string{"STRING", "INT", "DOUBLE", "BIGINT"}; !reflect.DeepEqual(names, want) {
		t.Errorf("casts %v, want %v", names, want)
	}
}

func TestTableFunctions(t *testing.T) {
	tests := []struct {
		sql   string
		want  TableFunc // Args checked by count
		nargs int
		join  ast.JoinType
	}{
		{"SELECT word FROM lines, LATERAL TABLE(SPLIT(line, ' ')) AS T(word)",
			TableFunc{Name: "SPLIT", Alias: "T", Columns: []string{"word"}, Kind: "LATERAL", Pos: Pos{38, 1, 39}}, 2, ast.CrossJoin},
		{"SELECT word FROM lines CROSS JOIN LATERAL TABLE(split(line)) T(word)",
			TableFunc{Name: "SPLIT", Alias: "T", Columns: []string{"word"}, Kind: "LATERAL", Pos: Pos{48, 1, 49}}, 1, ast.CrossJoin},
		{"SELECT word FROM lines LEFT JOIN LATERAL TABLE(split(line)) AS T(word, n) ON TRUE",
			TableFunc{Name: "SPLIT", Alias: "T", Columns: []string{"word", "n"}, Kind: "LATERAL", Pos: Pos{47, 1, 48}}, 1, ast.LeftJoin},
		{"SELECT word FROM lines CROSS JOIN UNNEST(tags) AS T(word)",
			TableFunc{Name: "UNNEST", Alias: "T", Columns: []string{"word"}, Kind: "UNNEST", Pos: Pos{34, 1, 35}}, 1, ast.CrossJoin},
		{"SELECT * FROM lines, LATERAL TABLE(gen())",
			TableFunc{Name: "GEN", Kind: "LATERAL", Pos: Pos{35, 1, 36}}, 0, ast.CrossJoin},
		{"SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' MINUTES)) GROUP BY window_start",
			TableFunc{Name: "TUMBLE", Kind: "TABLE", Pos: Pos{41, 1, 42}}, 3, 0},
	}
	for _, tc := range tests {
		sel, ctx := mustQuery(t, tc.sql)
		var got *TableFunc
		for _, tn := range collect[*ast.TableName](sel) {
			if tf, ok := ctx.TableFunc(tn); ok {
				got = tf
			} else if tn.Name.L == "" || tn.Name.L[0] == '_' {
				t.Errorf("%q: stray table %s", tc.sql, tn.Name)
			}
		}
		if got == nil {
			t.Fatalf("%q: no table function", tc.sql)
		}
		if len(got.Args) != tc.nargs {
			t.Errorf("%q: %d args", tc.sql, len(got.Args))
		}
		cp := *got
		cp.Args = nil
		if !reflect.DeepEqual(cp, tc.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.sql, cp, tc.want)
		}
		if tc.join != 0 {
			j := sel.From.TableRefs
			if j.Tp != tc.join || j.Right == nil {
				t.Errorf("%q: join %v", tc.sql, j.Tp)
			}
		}
	}
	// Window TVF arguments: TABLE t -> column name, DESCRIPTOR(c) -> call, INTERVAL -> IntervalOf.
	sel, ctx := mustQuery(t, tests[5].sql)
	tf, _ := ctx.TableFunc(collect[*ast.TableName](sel)[0])
	if c, ok := tf.Args[0].(*ast.ColumnNameExpr); !ok || c.Name.Name.O != "bids" {
		t.Errorf("arg 0 %T", tf.Args[0])
	}
	if f, ok := tf.Args[1].(*ast.FuncCallExpr); !ok || f.FnName.L != "descriptor" {
		t.Errorf("arg 1 %T", tf.Args[1])
	}
	if iv, ok := IntervalOf(tf.Args[2]); !ok || iv.Millis != 600_000 {
		t.Errorf("arg 2 %v %v", iv, ok)
	}
}

func TestIntervals(t *testing.T) {
	tests := []struct {
		lit  string
		want Interval
	}{
		{"INTERVAL '5' SECOND", Interval{Millis: 5000, Unit: "SECOND"}},
		{"INTERVAL '1.5' SECONDS", Interval{Millis: 1500, Unit: "SECOND"}},
		{"interval '10' minutes", Interval{Millis: 600_000, Unit: "MINUTE"}},
		{"INTERVAL '2' HOUR", Interval{Millis: 7_200_000, Unit: "HOUR"}},
		{"INTERVAL '1' DAY", Interval{Millis: 86_400_000, Unit: "DAY"}},
		{"INTERVAL 3 SECOND", Interval{Millis: 3000, Unit: "SECOND"}},
		{"INTERVAL -'3' SECOND", Interval{Millis: -3000, Unit: "SECOND"}},
		{"INTERVAL '-3' SECOND", Interval{Millis: -3000, Unit: "SECOND"}},
		{"INTERVAL '1 02:03:04.5' DAY TO SECOND", Interval{Millis: 86_400_000 + 2*3_600_000 + 3*60_000 + 4500, Unit: "DAY TO SECOND"}},
		{"INTERVAL '01:30' HOUR TO MINUTE", Interval{Millis: 5_400_000, Unit: "HOUR TO MINUTE"}},
		{"INTERVAL '2' MONTH", Interval{YearMonth: true, Months: 2, Unit: "MONTH"}},
		{"INTERVAL '1-6' YEAR TO MONTH", Interval{YearMonth: true, Months: 18, Unit: "YEAR TO MONTH"}},
		{"INTERVAL '3' SECOND(3)", Interval{Millis: 3000, Unit: "SECOND"}},
	}
	for _, tc := range tests {
		sel, _ := mustQuery(t, "SELECT "+tc.lit+" FROM t")
		got, ok := IntervalOf(sel.Fields.Fields[0].Expr)
		if !ok || got != tc.want {
			t.Errorf("%s: got %+v %v, want %+v", tc.lit, got, ok, tc.want)
		}
	}
	// Arithmetic and function arguments.
	sel, _ := mustQuery(t, "SELECT ts - INTERVAL '5' SECOND, TUMBLE_END(ts, INTERVAL '1' MINUTE) FROM t GROUP BY TUMBLE(ts, INTERVAL '1' MINUTE)")
	b := sel.Fields.Fields[0].Expr.(*ast.BinaryOperationExpr)
	if iv, ok := IntervalOf(b.R); b.Op != opcode.Minus || !ok || iv.Millis != 5000 {
		t.Errorf("ts - interval: %v %+v", b.Op, b.R)
	}
	g := sel.GroupBy.Items[0].Expr.(*ast.FuncCallExpr)
	if iv, ok := IntervalOf(g.Args[1]); g.FnName.L != "tumble" || !ok || iv.Millis != 60_000 {
		t.Errorf("group by %v", g.FnName)
	}
	// Window frame.
	sel, _ = mustQuery(t, "SELECT SUM(x) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '1' HOURS PRECEDING AND CURRENT ROW) FROM t")
	w := sel.Fields.Fields[0].Expr.(*ast.WindowFuncExpr)
	iv, err := FrameInterval(&w.Spec.Frame.Extent.Start)
	if err != nil || iv.Millis != 3_600_000 {
		t.Errorf("frame: %+v %v", iv, err)
	}
}

func TestFlinkSyntaxAccepted(t *testing.T) {
	for _, sql := range []string{
		"SELECT CHAR_LENGTH(s), SUBSTRING(s FROM 1 FOR 2), SUBSTRING(s, 1, 2), TRIM(BOTH 'x' FROM s), CEIL(x), FLOOR(x), MOD(a, b) FROM t",
		"SELECT POSITION('a' IN s), EXTRACT(HOUR FROM ts), UPPER(s), LOWER(s), CONCAT(a, b), a || b, COALESCE(a, b), NULLIF(a, b) FROM t",
		"SELECT TIMESTAMPADD(SECOND, 1, ts), TIMESTAMPDIFF(SECOND, a, b), CURRENT_TIMESTAMP, LOCALTIMESTAMP, PROCTIME() FROM t",
		"SELECT TIMESTAMP '2020-01-01 00:00:00', DATE '2020-01-01', DATE_FORMAT(ts, 'yyyy-MM-dd'), TO_TIMESTAMP(s) FROM t",
		"SELECT `timestamp`, `count`, `value`, `user`, user, value, count, timestamp, key, `key`, t.key, status, level, name, type, data FROM t",
		"SELECT SPLIT(s, ','), JSON_VALUE(s, '$.a'), FIRST(x), HASH(s), my_udf(x) FROM t",
		"SELECT a FROM t WHERE a IN (1, 2) AND b NOT IN (SELECT b FROM u) AND c = ANY (SELECT c FROM u) AND EXISTS (SELECT 1 FROM u)",
		"SELECT a, COUNT(DISTINCT b) FROM t GROUP BY a HAVING COUNT(*) > 1 ORDER BY a DESC LIMIT 10",
		"SELECT * FROM (SELECT a, ROW_NUMBER() OVER (PARTITION BY a ORDER BY ts DESC) AS rn FROM t) WHERE rn <= 3",
		"SELECT a FROM t /* comment ; */ WHERE b = 'x' -- trailing\n AND c--no space comment\n= 1",
		"SELECT /*+ UID('agg') */ a FROM t",
		"SELECT 'back\\slash', 'it''s' FROM t",
		"SELECT a FROM t1 JOIN t2 ON t1.id = t2.id LEFT JOIN t3 ON t1.id = t3.id FULL OUTER JOIN t4 ON TRUE",
		"SELECT a FROM t WHERE ts BETWEEN ts2 - INTERVAL '1' HOUR AND ts2 + INTERVAL '1' HOUR",
		"SELECT IF(a > 0, 'p', 'n'), CASE a WHEN 1 THEN 'one' ELSE 'other' END FROM t",
	} {
		if _, err := Parse(sql); err != nil {
			t.Errorf("%q: %v", sql, err)
		}
	}
	sel, _ := mustQuery(t, "SELECT SPLIT(s, ','), first(x), my_udf(x) FROM t")
	for i, want := range []string{"split", "first", "my_udf"} {
		if f, ok := sel.Fields.Fields[i].Expr.(*ast.FuncCallExpr); !ok || f.FnName.L != want {
			t.Errorf("function %d: %T", i, sel.Fields.Fields[i].Expr)
		}
	}
	sel, _ = mustQuery(t, "SELECT 'back\\slash' FROM t")
	if v := sel.Fields.Fields[0].Expr.(ast.ValueExpr).GetString(); v != `back\slash` {
		t.Errorf("backslash string %q", v)
	}
}

func TestTemporalJoin(t *testing.T) {
	for _, sql := range []string{
		"SELECT * FROM o JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON o.c = r.c",
		"SELECT * FROM o LEFT JOIN rates FOR SYSTEM_TIME AS OF o.ts r ON o.c = r.c",
		"SELECT * FROM o JOIN rates FOR SYSTEM_TIME AS OF o.ts ON o.c = rates.c",
	} {
		sel, _ := mustQuery(t, sql)
		ts := sel.From.TableRefs.Right.(*ast.TableSource)
		tn := ts.Source.(*ast.TableName)
		col, ok := tn.AsOf.TsExpr.(*ast.ColumnNameExpr)
		if tn.Name.O != "rates" || !ok || col.Name.Table.O != "o" || col.Name.Name.O != "ts" {
			t.Errorf("%q: %+v", sql, tn)
		}
		if ts.AsName.O != "r" && ts.AsName.O != "" {
			t.Errorf("%q: alias %q", sql, ts.AsName.O)
		}
	}
	checkErrors(t, []errorCase{
		{"temporal join without column", "SELECT * FROM o JOIN r FOR SYSTEM_TIME AS OF 5", 1, 46, "expected a time attribute"},
		{"tidb error without position", "SELECT a FROM t\nWHERE a = 1e400", 2, 11, "Illegal double '1e400'"},
	})
}

func TestLocate(t *testing.T) {
	stmts, err := ParseScript("SHOW TABLES;\nINSERT INTO s\nSELECT 'amount', amount, t.Amount\n  FROM t -- amount\n  WHERE x.y > 1")
	if err != nil {
		t.Fatal(err)
	}
	q := stmts[1].(*Insert).Query
	tests := []struct {
		word string
		want Pos
	}{
		{"amount", Pos{44, 3, 18}},
		{"AMOUNT", Pos{44, 3, 18}},
		{"t.amount", Pos{52, 3, 26}},
		{"x.y", Pos{88, 5, 9}},
		{"nothere", Pos{27, 3, 1}},
		{"where", Pos{82, 5, 3}},
	}
	for _, tc := range tests {
		if got := q.Ctx.Locate(tc.word); got != tc.want {
			t.Errorf("Locate(%q) = %+v, want %+v", tc.word, got, tc.want)
		}
	}
	if e := q.Ctx.Errorf("amount", "unknown column %s", "amount"); e.Error() != "3:18: unknown column amount" {
		t.Errorf("Errorf: %v", e)
	}
}

func TestWatermarkExpr(t *testing.T) {
	ct := mustParse(t, "CREATE TABLE t (ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector' = 'x')").(*CreateTable)
	b, ok := ct.Watermark.Expr.Node.(*ast.BinaryOperationExpr)
	if !ok || b.Op != opcode.Minus {
		t.Fatalf("watermark node %T", ct.Watermark.Expr.Node)
	}
	if c, ok := b.L.(*ast.ColumnNameExpr); !ok || c.Name.Name.L != "ts" {
		t.Errorf("left %T", b.L)
	}
	if iv, ok := IntervalOf(b.R); !ok || iv.Millis != 5000 {
		t.Errorf("right %+v", b.R)
	}
	if p := ct.Watermark.Expr.Ctx.Locate("ts"); p != (Pos{53, 1, 54}) {
		t.Errorf("locate in watermark %+v", p)
	}
	ct = mustParse(t, "CREATE TABLE t (ts TIMESTAMP(3), WATERMARK FOR ts AS CAST(ts AS TIMESTAMP(3))) WITH ('connector' = 'x')").(*CreateTable)
	c := ct.Watermark.Expr.Node.(*ast.FuncCastExpr)
	if tn, ok := ct.Watermark.Expr.Ctx.CastType(c); !ok || tn.Name != "TIMESTAMP" {
		t.Errorf("cast in watermark %+v", tn)
	}
}

// TestPlannerNodes pins the TiDB node types the planner walks (see the
// package report / doc).
func TestPlannerNodes(t *testing.T) {
	sel, _ := mustQuery(t, `SELECT a, 1, 'x', f(a), COUNT(*), SUM(DISTINCT b), CASE WHEN a IS NULL THEN 1 END,
		a IN (1, 2), a BETWEEN 1 AND 2, a LIKE 'x%', NOT a, -a, a + b * 2, (a), a || b, a IS NOT NULL
		FROM t1 AS x JOIN t2 ON x.id = t2.id`)
	want := []string{"*ast.ColumnNameExpr", "*test_driver.ValueExpr", "*test_driver.ValueExpr", "*ast.FuncCallExpr",
		"*ast.AggregateFuncExpr", "*ast.AggregateFuncExpr", "*ast.CaseExpr", "*ast.PatternInExpr", "*ast.BetweenExpr",
		"*ast.PatternLikeOrIlikeExpr", "*ast.UnaryOperationExpr", "*ast.UnaryOperationExpr", "*ast.BinaryOperationExpr",
		"*ast.ParenthesesExpr", "*ast.FuncCallExpr", "*ast.IsNullExpr"}
	for i, f := range sel.Fields.Fields {
		if got := reflect.TypeOf(f.Expr).String(); got != want[i] {
			t.Errorf("field %d: %s, want %s", i, got, want[i])
		}
	}
	agg := sel.Fields.Fields[5].Expr.(*ast.AggregateFuncExpr)
	if agg.F != "sum" || !agg.Distinct {
		t.Errorf("aggregate %s %v", agg.F, agg.Distinct)
	}
	if cc := sel.Fields.Fields[14].Expr.(*ast.FuncCallExpr); cc.FnName.L != "concat" {
		t.Errorf("|| is %s", cc.FnName.L)
	}
	sel2, _ := mustQuery(t, "SELECT a FROM t1 FULL OUTER JOIN t2 ON t1.a = t2.a LEFT JOIN t3 ON TRUE")
	outer := sel2.From.TableRefs
	if outer.Tp != ast.LeftJoin || !IsFullOuterJoin(outer.Left.(*ast.Join)) || IsFullOuterJoin(outer) {
		t.Errorf("full join %+v", outer)
	}
	j := sel.From.TableRefs
	if j.Tp != ast.CrossJoin || j.On == nil {
		t.Errorf("join %v %v", j.Tp, j.On)
	}
	if ts := j.Left.(*ast.TableSource); ts.AsName.O != "x" || ts.Source.(*ast.TableName).Name.O != "t1" {
		t.Errorf("left %+v", ts)
	}
}

func TestConcurrentParse(t *testing.T) {
	const n = 8
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			_, err := ParseScript("SELECT SPLIT(a, ','), CAST(b AS INT) FROM t, LATERAL TABLE(f(x)) AS T(y); SELECT a FORM t")
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err == nil || err.Error() != `1:89: syntax error near "t"` {
			t.Errorf("got %v", err)
		}
	}
}
