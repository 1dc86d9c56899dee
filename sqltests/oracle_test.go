package sqltests

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/streamsql/streamsql/internal/memtest"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/session"
)

// tierHotBytes is the hot budget of the tiered state tables in the
// 'rocksdb' variants of the oracle tests: a few groups, so that nearly
// every batch evicts and reads groups back.
const tierHotBytes = 1 << 10

// tierSetup returns the statements of a 'rocksdb' variant (spill
// directories under the test's temporary directory) and makes tiered
// tables tiny until the test ends; tierPaged then asserts that tables
// evicted, wrote back and read cold keys since tierSetup.
func tierSetup(t *testing.T) []string {
	restore := state.SetTableTierHotBytes(tierHotBytes)
	t.Cleanup(restore)
	return []string{"SET 'state.backend.type' = 'rocksdb'",
		"SET 'state.backend.rocksdb.localdir' = '" + t.TempDir() + "'"}
}

// tierPaged asserts that the tiered tables closed since before paged.
func tierPaged(t *testing.T, what string, before state.TierStats) {
	t.Helper()
	now := state.TableTierTotals()
	ev, wb, cr := now.Evictions-before.Evictions, now.WriteBacks-before.WriteBacks, now.ColdReads-before.ColdReads
	drops, com := now.CleanDrops-before.CleanDrops, now.ComReads-before.ComReads
	// an evicted key is written back, or dropped clean when a checkpoint
	// the store committed holds it (then read back from there)
	if ev == 0 || wb+drops == 0 || cr == 0 {
		t.Fatalf("%s: the state tier never paged (evictions %d, write-backs %d, clean drops %d, cold reads %d)", what, ev, wb, drops, cr)
	}
	t.Logf("%s: %d evictions, %d write-backs, %d clean drops, %d cold reads (%d from the committed state)", what, ev, wb, drops, cr, com)
}

// oracleQuery is one query run through streamsql and through SQLite. kinds
// has one letter per result column: i integer, s string, f floating point
// (compared with a tolerance).
type oracleQuery struct {
	name   string
	stream string // streamsql
	sqlite string // SQLite; "" means the same text
	kinds  string
}

// Views are created in both engines before the queries run.
var oracleViews = []string{
	"CREATE VIEW kv AS SELECT k, s, COUNT(*) AS c, SUM(v) AS sv FROM t GROUP BY k, s",
	"CREATE VIEW vc AS SELECT v, COUNT(*) AS c FROM t GROUP BY v",
}

var oracleQueries = []oracleQuery{
	{name: "count-sum-min-max",
		stream: "SELECT k, COUNT(*) AS n, COUNT(v) AS nv, SUM(v) AS sv, MIN(v) AS lo, MAX(v) AS hi FROM t GROUP BY k",
		kinds:  "iiiiii"},
	// Flink's AVG of a BIGINT is a BIGINT: the sum divided by the count,
	// truncated toward zero (as SQLite's integer division).
	{name: "avg",
		stream: "SELECT s, AVG(v) AS av, AVG(d) AS ad, SUM(d) AS sd FROM t GROUP BY s",
		sqlite: "SELECT s, SUM(v) / COUNT(v) AS av, AVG(d) AS ad, SUM(d) AS sd FROM t GROUP BY s",
		kinds:  "siff"},
	{name: "multi-key",
		stream: "SELECT k, s, COUNT(*) AS n, SUM(v) AS sv, MAX(d) AS md, MIN(d) AS nd FROM t GROUP BY k, s",
		kinds:  "isiiff"},
	{name: "count-distinct",
		stream: "SELECT k, COUNT(DISTINCT s) AS ds, COUNT(DISTINCT v) AS dv FROM t GROUP BY k",
		kinds:  "iii"},
	// COUNT(DISTINCT x) calls of one x, with and without FILTERs, share one
	// set of x per group (exec/distinctshare.go); the second query's input
	// retracts.
	{name: "count-distinct-filters",
		stream: "SELECT k, COUNT(DISTINCT v) AS dv, COUNT(DISTINCT v) FILTER (WHERE d > 0) AS dvp, COUNT(DISTINCT v) FILTER (WHERE s = 'a') AS dva, " +
			"COUNT(DISTINCT s) FILTER (WHERE v > 0) AS dsp, COUNT(DISTINCT s) FILTER (WHERE v <= 0) AS dsn, COUNT(*) FILTER (WHERE d > 0) AS np FROM t GROUP BY k",
		kinds: "iiiiiii"},
	{name: "count-distinct-filters-retracting",
		stream: "SELECT c, COUNT(DISTINCT sv) AS dsv, COUNT(DISTINCT sv) FILTER (WHERE s = 'b') AS dsb, COUNT(DISTINCT sv) FILTER (WHERE k > 2) AS dsk FROM kv GROUP BY c",
		kinds:  "iiii"},
	{name: "where",
		stream: "SELECT s, COUNT(*) AS n, SUM(v) AS sv FROM t WHERE v > 0 AND d < 50 GROUP BY s",
		kinds:  "sii"},
	{name: "having",
		stream: "SELECT k, SUM(v) AS sv, COUNT(*) AS n FROM t GROUP BY k HAVING SUM(v) > 0 OR COUNT(*) < 440",
		kinds:  "iii"},
	{name: "global",
		stream: "SELECT COUNT(*) AS n, SUM(v) AS sv, MIN(d) AS lo, MAX(d) AS hi, AVG(v) AS av, COUNT(DISTINCT s) AS ds FROM t",
		sqlite: "SELECT COUNT(*) AS n, SUM(v) AS sv, MIN(d) AS lo, MAX(d) AS hi, SUM(v) / COUNT(v) AS av, COUNT(DISTINCT s) AS ds FROM t",
		kinds:  "iiffii"},
	{name: "agg-over-agg-view",
		stream: "SELECT s, COUNT(*) AS ng, SUM(c) AS total, MAX(sv) AS hi, MIN(sv) AS lo FROM kv GROUP BY s",
		kinds:  "siiii"},
	{name: "count-of-counts",
		stream: "SELECT c, COUNT(*) AS n FROM vc GROUP BY c",
		kinds:  "ii"},
	{name: "string-min-max",
		stream: "SELECT k, MIN(s) AS lo, MAX(s) AS hi, COUNT(s) AS n FROM t WHERE s IS NOT NULL GROUP BY k",
		kinds:  "issi"},
	{name: "distinct",
		stream: "SELECT DISTINCT k, s FROM t WHERE v BETWEEN -100 AND 100",
		kinds:  "is"},
	{name: "in-or-null",
		stream: "SELECT k, COUNT(*) AS n FROM t WHERE s IN ('a', 'b') OR d IS NULL GROUP BY k",
		kinds:  "ii"},
	// equalities of one column with constants among other disjuncts run
	// as an IN set (exec/expr orToIn)
	{name: "or-of-equalities",
		stream: "SELECT k, COUNT(*) AS n, SUM(v) AS sv FROM t WHERE s = 'a' OR k = 3 OR s = 'c' OR 'zz' = s OR k = 5 GROUP BY k",
		kinds:  "iii"},
	// calls in both the filter and the projections (v * 3, UPPER(s) and
	// UPPER(s) = 'B') evaluate once (exec calc.shareWithFilter), and
	// repeated ones within an expression too (exec/expr cse.go)
	{name: "shared-in-filter-and-select",
		stream: "SELECT x3, c, COUNT(*) AS n FROM (SELECT v * 3 AS x3, CASE WHEN v * 3 > 1500 THEN 'hi' WHEN UPPER(s) = 'B' THEN 'b' ELSE UPPER(s) END AS c " +
			"FROM t WHERE v * 3 > -1500 AND (UPPER(s) = 'B' OR UPPER(s) = 'C' OR s IS NULL)) GROUP BY x3, c",
		kinds: "isi"},
}

// oracleData writes a seeded random table as CSV ('NULL' for NULL) and
// returns its rows for SQLite.
func oracleData(t *testing.T, path string, n int) [][]any {
	rng := rand.New(rand.NewSource(20240601))
	var b strings.Builder
	rows := make([][]any, n)
	for i := range rows {
		var row [4]any
		if rng.Intn(10) > 0 {
			row[0] = int64(rng.Intn(6))
		}
		if rng.Intn(10) > 0 {
			row[1] = string(rune('a' + rng.Intn(4)))
		}
		if rng.Intn(10) > 0 {
			row[2] = int64(rng.Intn(2001) - 1000)
		}
		if rng.Intn(10) > 0 {
			row[3] = float64(rng.Intn(20001)-10000) / 100
		}
		for j, v := range row {
			if j > 0 {
				b.WriteByte(',')
			}
			switch x := v.(type) {
			case nil:
				b.WriteString("NULL")
			case int64:
				b.WriteString(strconv.FormatInt(x, 10))
			case float64:
				b.WriteString(strconv.FormatFloat(x, 'f', -1, 64))
			case string:
				b.WriteString(x)
			}
		}
		b.WriteByte('\n')
		rows[i] = row[:]
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestOracleSQLite(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "t.csv")
	data := oracleData(t, csvPath, 3000)

	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one in-memory database
	mustExec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("sqlite: %s: %v", q, err)
		}
	}
	mustExec("CREATE TABLE t (k INTEGER, s TEXT, v INTEGER, d REAL)")
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range data {
		if _, err := tx.Exec("INSERT INTO t VALUES (?, ?, ?, ?)", r...); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, v := range oracleViews {
		mustExec(v)
	}
	want := sqliteWant(t, db, oracleQueries, false)

	// the last variant keeps the aggregations' groups in the Pebble tier
	// with a hot budget of a few groups (state.backend.type 'rocksdb')
	type variant struct {
		name  string
		p, bs int
		rocks bool
	}
	for _, v := range []variant{{"parallelism=1", 1, 100, false}, {"parallelism=4", 4, 100, false}, {"parallelism=2,batch=13,rocksdb", 2, 13, true}} {
		p := v.p
		t.Run(v.name, func(t *testing.T) {
			s, done := newOracleSession(t)
			defer done()
			setup := []string{
				fmt.Sprintf("SET 'parallelism.default' = '%d'", p),
				fmt.Sprintf("SET 'execution.batch-size' = '%d'", v.bs),
				"CREATE TABLE t (k INT, s STRING, v BIGINT, d DOUBLE) WITH ('connector' = 'filesystem', 'path' = '" +
					csvPath + "', 'format' = 'csv', 'csv.null-literal' = 'NULL')",
			}
			if v.rocks {
				setup = append(tierSetup(t), setup...)
			}
			before := state.TableTierTotals()
			checkQueries(t, s, append(setup, oracleViews...), oracleQueries, want)
			if v.rocks {
				tierPaged(t, "aggregations", before)
			}
		})
	}
}

// sqliteWant runs each query's SQLite text (q.sqlite, or q.stream when that
// is empty) and returns the result tables by query name. An error fails t,
// and so does an empty result when nonEmpty (the query would test nothing).
func sqliteWant(t *testing.T, db *sql.DB, queries []oracleQuery, nonEmpty bool) map[string][][]*string {
	t.Helper()
	want := make(map[string][][]*string, len(queries))
	for _, q := range queries {
		text := q.sqlite
		if text == "" {
			text = q.stream
		}
		rows, err := sqliteRows(db, text)
		if err != nil {
			t.Fatalf("sqlite %s: %v", q.name, err)
		}
		if nonEmpty && len(rows) == 0 {
			t.Fatalf("sqlite %s: empty result, the query tests nothing", q.name)
		}
		want[q.name] = rows
	}
	return want
}

// newOracleSession returns a session on a checked allocator and the
// function, to defer, that closes it and then asserts it leaked nothing.
func newOracleSession(t *testing.T) (*session.Session, func()) {
	mem := memtest.NewChecked()
	s := session.New(session.Config{Stdout: &lockedBuffer{}})
	s.Mem = mem
	return s, func() {
		s.Close()
		mem.AssertSize(t, 0)
	}
}

// checkQueries runs the setup statements through s (an error is fatal),
// then each query, its changelog folded by streamRows, and compares the
// result with want[q.name]: a query that fails or differs is an error that
// names it. It reports whether every query ran (whatever its result).
func checkQueries(t *testing.T, s *session.Session, setup []string, queries []oracleQuery, want map[string][][]*string) bool {
	t.Helper()
	return checkQueriesBy(t, s, streamRows, setup, queries, want)
}

// checkQueriesBy is checkQueries with the queries' results read by rows
// (streamRows, or appendOnlyRows for an append-only output).
func checkQueriesBy(t *testing.T, s *session.Session, rows func(*session.Session, string) ([][]*string, error),
	setup []string, queries []oracleQuery, want map[string][][]*string) bool {
	t.Helper()
	for _, q := range setup {
		if _, err := streamRows(s, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	ran := true
	for _, q := range queries {
		got, err := rows(s, q.stream)
		if err != nil {
			t.Errorf("%s: %v", q.name, err)
			ran = false
			continue
		}
		if msg := compareTables(q.kinds, want[q.name], got); msg != "" {
			t.Errorf("%s: %s\nquery: %s", q.name, msg, q.stream)
		}
	}
	return ran
}

// sqliteRows runs a query and renders its values as strings (nil = NULL).
func sqliteRows(db *sql.DB, q string) ([][]*string, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]*string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]*string, len(cols))
		for i, v := range vals {
			var s string
			switch x := v.(type) {
			case nil:
				continue
			case int64:
				s = strconv.FormatInt(x, 10)
			case float64:
				s = strconv.FormatFloat(x, 'g', -1, 64)
			case []byte:
				s = string(x)
			default:
				s = fmt.Sprint(x)
			}
			row[i] = &s
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// streamRows executes one statement; for a SELECT it drains the changelog
// and returns the folded final table.
func streamRows(s *session.Session, q string) ([][]*string, error) {
	st, err := parser.Parse(q)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	res, err := s.Execute(ctx, st)
	if err != nil || res.Kind != session.ResultStream {
		return nil, err
	}
	type entry struct {
		row []*string
		n   int
	}
	table := map[string]*entry{}
	for batch := range res.Stream.Changes {
		for _, ch := range batch {
			key := strings.Join(changeValues(ch, "\x00NULL"), "\x01")
			e := table[key]
			if e == nil {
				e = &entry{row: ch.Values}
				table[key] = e
			}
			switch ch.Op {
			case "+I", "+U":
				e.n++
			default:
				e.n--
				if e.n < 0 {
					res.Stream.Cancel()
					for range res.Stream.Changes {
					}
					return nil, fmt.Errorf("%s of a row not in the table: %s", ch.Op, key)
				}
			}
		}
	}
	if err := res.Stream.Err(); err != nil {
		return nil, err
	}
	var out [][]*string
	for _, e := range table {
		for i := 0; i < e.n; i++ {
			out = append(out, e.row)
		}
	}
	return out, nil
}

// compareTables compares two result tables as multisets: rows are sorted by
// their non-floating-point columns, then compared column by column, floats
// with a relative tolerance.
func compareTables(kinds string, want, got [][]*string) string {
	key := func(r []*string) string {
		var parts []string
		for i, v := range r {
			if i < len(kinds) && kinds[i] == 'f' {
				continue
			}
			if v == nil {
				parts = append(parts, "\x00")
			} else {
				parts = append(parts, *v)
			}
		}
		return strings.Join(parts, "\x01")
	}
	sortRows := func(rows [][]*string) {
		sort.SliceStable(rows, func(i, j int) bool { return key(rows[i]) < key(rows[j]) })
	}
	sortRows(want)
	sortRows(got)
	show := func(r []*string) string {
		var parts []string
		for _, v := range r {
			if v == nil {
				parts = append(parts, "NULL")
			} else {
				parts = append(parts, *v)
			}
		}
		return strings.Join(parts, " | ")
	}
	if len(want) != len(got) {
		return fmt.Sprintf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if len(w) != len(kinds) || len(g) != len(kinds) {
			return fmt.Sprintf("row %d: %d and %d columns, want %d", i, len(w), len(g), len(kinds))
		}
		for c := range kinds {
			if (w[c] == nil) != (g[c] == nil) {
				return fmt.Sprintf("row %d: got %s, want %s", i, show(g), show(w))
			}
			if w[c] == nil {
				continue
			}
			if kinds[c] != 'f' {
				if *w[c] != *g[c] {
					return fmt.Sprintf("row %d: got %s, want %s", i, show(g), show(w))
				}
				continue
			}
			a, err1 := strconv.ParseFloat(*w[c], 64)
			b, err2 := strconv.ParseFloat(*g[c], 64)
			if err1 != nil || err2 != nil || math.Abs(a-b) > 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b))) {
				return fmt.Sprintf("row %d: got %s, want %s", i, show(g), show(w))
			}
		}
	}
	return ""
}

func TestCompareTables(t *testing.T) {
	s := func(v string) *string { return &v }
	want := [][]*string{{s("a"), s("1.0")}, {nil, s("2.5")}}
	for _, tc := range []struct {
		got [][]*string
		ok  bool
	}{
		{[][]*string{{nil, s("2.5000000000001")}, {s("a"), s("1")}}, true},
		{[][]*string{{s("a"), s("1.1")}, {nil, s("2.5")}}, false},
		{[][]*string{{s("a"), s("1.0")}}, false},
		{[][]*string{{s("b"), s("1.0")}, {nil, s("2.5")}}, false},
		{[][]*string{{s("a"), nil}, {nil, s("2.5")}}, false},
	} {
		if msg := compareTables("sf", append([][]*string{}, want...), tc.got); (msg == "") != tc.ok {
			t.Errorf("%v: %q", tc.got, msg)
		}
	}
}
