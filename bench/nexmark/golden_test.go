package nexmark

import (
	"database/sql"
	"database/sql/driver"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"modernc.org/sqlite"
)

// Golden tests of the Nexmark queries: each runs as the benchmark writes
// it (only its blackhole sink becomes a JSON file sink) over a bounded
// stream, and its folded output is compared with SQLite's answer over the
// same events, exported as CSV by a separate job. REGEXP_EXTRACT and
// SPLIT_INDEX are given to SQLite as Go functions (Flink's semantics,
// written here independently of the engine).

const goldenEvents = "50000"

func init() {
	sqlite.MustRegisterDeterministicScalarFunction("regexp_extract", 3, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		s, _ := args[0].(string)
		re, err := regexp.Compile(args[1].(string))
		if err != nil {
			return nil, err
		}
		m := re.FindStringSubmatch(s)
		idx := int(args[2].(int64))
		if m == nil || idx >= len(m) {
			return nil, nil
		}
		return m[idx], nil
	})
	// ts3 renders epoch milliseconds as TIMESTAMP(3) text
	sqlite.MustRegisterDeterministicScalarFunction("ts3", 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		ms := args[0].(int64)
		// as Flink's SQL timestamp format (JSON, CSV): the fraction without
		// trailing zeros
		return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.999"), nil
	})
	// ms parses TIMESTAMP(3) text into epoch milliseconds
	sqlite.MustRegisterDeterministicScalarFunction("ms", 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		ts, err := time.Parse("2006-01-02 15:04:05.999999999", args[0].(string))
		if err != nil {
			return nil, err
		}
		return ts.UnixMilli(), nil
	})
	sqlite.MustRegisterDeterministicScalarFunction("split_index", 3, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		s, _ := args[0].(string)
		parts := strings.Split(s, args[1].(string))
		idx := int(args[2].(int64))
		if idx < 0 || idx >= len(parts) {
			return nil, nil
		}
		return parts[idx], nil
	})
}

// oracles are SQLite's versions of the queries over table bid(auction,
// bidder, price, channel, url, dateTime, extra), dateTime as
// 'yyyy-MM-dd HH:mm:ss.SSS' text. Decimal results are computed exactly
// (integers) and rendered as rationals for comparison.
var oracles = map[string]string{
	"q0": `SELECT auction, bidder, price, dateTime, extra FROM bid`,
	"q1": `SELECT auction, bidder, (price * 908) || '/1000', dateTime, extra FROM bid`,
	"q2": `SELECT auction, price FROM bid WHERE auction % 123 = 0`,
	"q14": `SELECT auction, bidder, (price * 908) || '/1000',
	  CASE WHEN h >= 8 AND h <= 18 THEN 'dayTime' WHEN h <= 6 OR h >= 20 THEN 'nightTime' ELSE 'otherTime' END,
	  dateTime, extra
	FROM (SELECT *, CAST(substr(dateTime, 12, 2) AS INTEGER) AS h FROM bid)
	WHERE price * 908 > 1000000000 AND price * 908 < 50000000000`,
	"q15": `SELECT substr(dateTime, 1, 10),
	  count(*), sum(price < 10000), sum(price >= 10000 AND price < 1000000), sum(price >= 1000000),
	  count(DISTINCT bidder), count(DISTINCT CASE WHEN price < 10000 THEN bidder END),
	  count(DISTINCT CASE WHEN price >= 10000 AND price < 1000000 THEN bidder END),
	  count(DISTINCT CASE WHEN price >= 1000000 THEN bidder END),
	  count(DISTINCT auction), count(DISTINCT CASE WHEN price < 10000 THEN auction END),
	  count(DISTINCT CASE WHEN price >= 10000 AND price < 1000000 THEN auction END),
	  count(DISTINCT CASE WHEN price >= 1000000 THEN auction END)
	FROM bid GROUP BY substr(dateTime, 1, 10)`,
	"q16": `SELECT channel, substr(dateTime, 1, 10), max(substr(dateTime, 12, 5)),
	  count(*), sum(price < 10000), sum(price >= 10000 AND price < 1000000), sum(price >= 1000000),
	  count(DISTINCT bidder), count(DISTINCT CASE WHEN price < 10000 THEN bidder END),
	  count(DISTINCT CASE WHEN price >= 10000 AND price < 1000000 THEN bidder END),
	  count(DISTINCT CASE WHEN price >= 1000000 THEN bidder END),
	  count(DISTINCT auction), count(DISTINCT CASE WHEN price < 10000 THEN auction END),
	  count(DISTINCT CASE WHEN price >= 10000 AND price < 1000000 THEN auction END),
	  count(DISTINCT CASE WHEN price >= 1000000 THEN auction END)
	FROM bid GROUP BY channel, substr(dateTime, 1, 10)`,
	"q17": `SELECT auction, substr(dateTime, 1, 10),
	  count(*), sum(price < 10000), sum(price >= 10000 AND price < 1000000), sum(price >= 1000000),
	  min(price), max(price), sum(price) / count(*), sum(price)
	FROM bid GROUP BY auction, substr(dateTime, 1, 10)`,
	"q21": `SELECT auction, bidder, price, channel,
	  CASE WHEN lower(channel) = 'apple' THEN '0' WHEN lower(channel) = 'google' THEN '1'
	       WHEN lower(channel) = 'facebook' THEN '2' WHEN lower(channel) = 'baidu' THEN '3'
	       ELSE regexp_extract(url, '(&|^)channel_id=([^&]*)', 2) END
	FROM bid
	WHERE regexp_extract(url, '(&|^)channel_id=([^&]*)', 2) IS NOT NULL
	   OR lower(channel) IN ('apple', 'google', 'facebook', 'baidu')`,
	// session windows of 10 s per bidder: a gap of 10 s or more starts a
	// new session; a session ends 10 s after its last bid
	"q11": `WITH b AS (SELECT bidder, ms(dateTime) AS t FROM bid),
	g AS (SELECT bidder, t, CASE WHEN t - lag(t) OVER (PARTITION BY bidder ORDER BY t) >= 10000 THEN 1 ELSE 0 END AS brk FROM b),
	s AS (SELECT bidder, t, sum(brk) OVER (PARTITION BY bidder ORDER BY t ROWS UNBOUNDED PRECEDING) AS sid FROM g)
	SELECT bidder, count(*), ts3(min(t)), ts3(max(t) + 10000) FROM s GROUP BY bidder, sid`,
	"q22": `SELECT auction, bidder, price, channel, split_index(url, '/', 3), split_index(url, '/', 4), split_index(url, '/', 5) FROM bid`,
}

// runScript runs a script in a fresh session to its end. crashAfter > 0
// runs it with a checkpoint after every source batch and a crash after
// checkpoint crashAfter, restored by one restart (asserted).
func runScript(t *testing.T, script string, crashAfter int64) {
	t.Helper()
	runScriptClock(t, script, nil, crashAfter)
}

var blackhole = regexp.MustCompile(`'connector'\s*=\s*'blackhole'`)

// queryOutput runs query with its sink written as JSON files under dir and
// returns the folded rows.
func queryOutput(t *testing.T, query, dir string, vars map[string]string, settings string, crashAfter int64) []string {
	t.Helper()
	script, err := Script(query, vars)
	if err != nil {
		t.Fatal(err)
	}
	if !blackhole.MatchString(script) {
		t.Fatalf("%s has no blackhole sink", query)
	}
	script = blackhole.ReplaceAllString(script, fmt.Sprintf("'connector' = 'filesystem', 'path' = '%s', 'format' = 'json'", dir))
	runScript(t, settings+script, crashAfter)
	return foldJSON(t, dir)
}

// foldJSON reads the committed part files of a JSON file sink and folds
// the changelog into rows (fields in file order, numbers as rationals).
func foldJSON(t *testing.T, dir string) []string {
	t.Helper()
	counts := map[string]int{}
	files, _ := filepath.Glob(filepath.Join(dir, "part-*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if line == "" {
				continue
			}
			dec := json.NewDecoder(strings.NewReader(line))
			dec.UseNumber()
			tok, _ := dec.Token() // {
			_ = tok
			op := "+I"
			var vals []string
			for dec.More() {
				k, _ := dec.Token()
				var v any
				if err := dec.Decode(&v); err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				if k == "op" {
					op = v.(string)
					continue
				}
				vals = append(vals, canon(v))
			}
			row := strings.Join(vals, "|")
			if op == "+I" || op == "+U" {
				counts[row]++
			} else {
				counts[row]--
			}
		}
	}
	var rows []string
	for r, n := range counts {
		if n < 0 {
			t.Fatalf("row retracted more often than added: %s", r)
		}
		for i := 0; i < n; i++ {
			rows = append(rows, r)
		}
	}
	sort.Strings(rows)
	return rows
}

// canon renders a value for comparison: numbers (and "a/b" texts) as
// exact rationals, NULL as NULL.
func canon(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case json.Number:
		if r, ok := new(big.Rat).SetString(x.String()); ok {
			return r.RatString()
		}
		return x.String()
	case int64:
		return fmt.Sprint(x)
	case float64:
		return new(big.Rat).SetFloat64(x).RatString()
	case string:
		if i := strings.IndexByte(x, '/'); i > 0 && !strings.ContainsAny(x, " :") {
			if r, ok := new(big.Rat).SetString(x); ok {
				return r.RatString()
			}
		}
		return x
	case []byte:
		return canon(string(x))
	}
	return fmt.Sprint(v)
}

// exportBids writes the bids of the stream as CSV with one more job.
func exportBids(t *testing.T, dir string, vars map[string]string) [][]string {
	t.Helper()
	script, err := Script("q0", vars)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(script, "CREATE TABLE nexmark_q0")
	script = script[:i] + fmt.Sprintf(`CREATE TABLE bids_csv (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, `+"`dateTime`"+` TIMESTAMP(3), extra VARCHAR)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv');
INSERT INTO bids_csv SELECT auction, bidder, price, channel, url, `+"`dateTime`"+`, extra FROM bid;
`, dir)
	runScript(t, script, 0)
	var rows [][]string
	files, _ := filepath.Glob(filepath.Join(dir, "part-*"))
	for _, f := range files {
		rows = append(rows, readCSV(t, f)...)
	}
	return rows
}

func sqliteAnswer(t *testing.T, bids [][]string, query string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE bid (auction INTEGER, bidder INTEGER, price INTEGER, channel TEXT, url TEXT, dateTime TEXT, extra TEXT)`); err != nil {
		t.Fatal(err)
	}
	tx, _ := db.Begin()
	ins, _ := tx.Prepare(`INSERT INTO bid VALUES (?, ?, ?, ?, ?, ?, ?)`)
	for _, r := range bids {
		if _, err := ins.Exec(r[0], r[1], r[2], r[3], r[4], r[5], r[6]); err != nil {
			t.Fatal(err)
		}
	}
	tx.Commit()
	res, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	cols, _ := res.Columns()
	var out []string
	for res.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := res.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = canon(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	sort.Strings(out)
	return out
}

// TestNexmarkQueriesAgainstSQLite runs every query that SQLite can check.
func TestNexmarkQueriesAgainstSQLite(t *testing.T) {
	vars := map[string]string{"EVENTS_NUM": goldenEvents, "TPS": "10000"}
	bids := exportBids(t, t.TempDir(), vars)
	if len(bids) != 46000 {
		t.Fatalf("%d bids exported, want 46000 of %s events", len(bids), goldenEvents)
	}
	for _, q := range Queries() {
		oracle, ok := oracles[q]
		if !ok {
			continue
		}
		t.Run(q, func(t *testing.T) {
			want := sqliteAnswer(t, bids, oracle)
			if len(want) == 0 {
				t.Fatalf("SQLite's answer to %s is empty: nothing would be checked", q)
			}
			variants := goldenVariants(q, 50000)
			for _, v := range variants {
				got := queryOutput(t, q, t.TempDir(), vars, v.settings, v.crashAfter)
				if d := diffRows(got, want); d != "" {
					t.Errorf("%s %s differs from SQLite (%d rows, want %d): %s", q, v.name, len(got), len(want), d)
				}
			}
		})
	}
}

type goldenVariant struct {
	name, settings string
	crashAfter     int64
}

// goldenVariants are the runs every golden query is checked in: p1, p3
// with batches of 7, p2 with a crash, and a seeded random one
// (parallelism, batch size, aligned or unaligned checkpoints, the
// checkpoint after which it crashes: within the first half of each source's
// batches of a stream of events, so that it happens before the end).
func goldenVariants(q string, events int) []goldenVariant {
	variants := []goldenVariant{
		{"p1", "SET 'parallelism.default' = '1';\n", 0},
		{"p3-batch7", "SET 'parallelism.default' = '3';\nSET 'execution.batch-size' = '7';\n", 0},
		{"p2-crash", "SET 'parallelism.default' = '2';\nSET 'execution.batch-size' = '1000';\n", 9},
	}
	seed := goldenSeed(q)
	r := rand.New(rand.NewPCG(seed, 7))
	p, batch := 1+r.IntN(4), []int{50, 256, 1000, 2048}[r.IntN(4)]
	v := goldenVariant{name: fmt.Sprintf("seed %d: p%d batch %d", seed, p, batch),
		settings:   fmt.Sprintf("SET 'parallelism.default' = '%d';\nSET 'execution.batch-size' = '%d';\n", p, batch),
		crashAfter: 1 + int64(r.IntN(max(1, events/(p*batch)/2)))}
	if r.IntN(2) == 0 {
		v.name += " unaligned"
		v.settings += "SET 'execution.checkpointing.unaligned.enabled' = 'true';\n"
	}
	v.name += fmt.Sprintf(" crash after %d", v.crashAfter)
	return append(variants, v)
}

// diffRows describes the first difference of two sorted row lists.
func diffRows(got, want []string) string {
	for i := 0; i < len(got) || i < len(want); i++ {
		switch {
		case i >= len(got):
			return "missing " + want[i]
		case i >= len(want):
			return "extra " + got[i]
		case got[i] != want[i]:
			return fmt.Sprintf("got %s\nwant %s", got[i], want[i])
		}
	}
	return ""
}

// goldenSeed is STREAMSQL_SEED when set (to rerun a failure), else a seed
// from the query's name and the time, printed with any failure.
func goldenSeed(q string) uint64 {
	if v, err := strconv.ParseUint(os.Getenv("STREAMSQL_SEED"), 10, 64); err == nil {
		return v
	}
	h := fnv.New64a()
	h.Write([]byte(q))
	return h.Sum64() ^ uint64(time.Now().UnixNano())
}

// TestNexmarkQ10Partitions runs q10 as written (a filesystem sink
// partitioned by day and minute, committed by partition time with a success
// file) over 500 s of event time and checks every partition against
// SQLite: its rows are exactly the bids of its day and minute, it has a
// success file, and no part file of it was written after its success file
// (a partition is committed only once it is complete). In the parallelism,
// batch-size, crash and seeded random variants.
func TestNexmarkQ10Partitions(t *testing.T) {
	vars := map[string]string{"EVENTS_NUM": goldenEvents, "TPS": "100"}
	bids := exportBids(t, t.TempDir(), vars)
	want := sqliteAnswer(t, bids, `SELECT auction, bidder, price, dateTime, extra, substr(dateTime, 1, 10), substr(dateTime, 12, 5) FROM bid`)
	minutes := map[string]bool{}
	for _, r := range want {
		f := strings.Split(r, "|")
		minutes[f[len(f)-1]] = true
	}
	if len(minutes) < 8 {
		t.Fatalf("the bids span %d minutes: too few partitions to check", len(minutes))
	}
	seed := goldenSeed("q10")
	r := rand.New(rand.NewPCG(seed, 10))
	p, batch := 1+r.IntN(4), []int{256, 1000, 2048}[r.IntN(3)]
	random := fmt.Sprintf("SET 'parallelism.default' = '%d';\nSET 'execution.batch-size' = '%d';\n", p, batch)
	crash := 1 + int64(r.IntN(max(1, 50000/(p*batch)/2)))
	// a watermark after every batch (as Flink's interval 0), so that the
	// watermark moves while checkpoints commit partitions
	const perBatch = "SET 'pipeline.auto-watermark-interval' = '0 ms';\n"
	for _, v := range []struct {
		name, settings string
		crashAfter     int64
	}{
		{"p1", "SET 'parallelism.default' = '1';\n", 0},
		{"p3-batch7", "SET 'parallelism.default' = '3';\nSET 'execution.batch-size' = '7';\n", 0},
		{"p2-crash", "SET 'parallelism.default' = '2';\nSET 'execution.batch-size' = '1000';\n" + perBatch, 9},
		{fmt.Sprintf("seed %d: p%d batch %d crash after %d", seed, p, batch, crash), random + perBatch, crash},
	} {
		dir := t.TempDir()
		vars := map[string]string{"EVENTS_NUM": goldenEvents, "TPS": "100", "NEXMARK_DIR": dir, "SUBMIT_TIME": "run"}
		script, err := Script("q10", vars)
		if err != nil {
			t.Fatal(err)
		}
		runScript(t, v.settings+script, v.crashAfter)
		out := filepath.Join(dir, "data", "output", "run", "bid")
		got := readPartitions(t, out)
		if d := diffRows(got, want); d != "" {
			t.Errorf("q10 %s differs from SQLite (%d rows, want %d): %s", v.name, len(got), len(want), d)
		}
		if v.name == "p3-batch7" {
			// and read back as the partitioned table it is
			back := filepath.Join(dir, "back")
			runScript(t, fmt.Sprintf(`CREATE TABLE q10 (auction BIGINT, bidder BIGINT, price BIGINT, `+"`dateTime`"+` TIMESTAMP(3), extra VARCHAR, dt STRING, hm STRING)
PARTITIONED BY (dt, hm) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv');
CREATE TABLE back (auction BIGINT, bidder BIGINT, price BIGINT, `+"`dateTime`"+` TIMESTAMP(3), extra VARCHAR, dt STRING, hm STRING)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
INSERT INTO back SELECT * FROM q10;
`, out, back), 0)
			if d := diffRows(foldJSON(t, back), want); d != "" {
				t.Errorf("q10's output read back as a partitioned table differs from SQLite: %s", d)
			}
		}
	}
}

// readPartitions reads a dt=/hm= partitioned CSV sink: every row with its
// partition values appended; it fails on a partition without a success
// file or with a part file newer than it.
func readPartitions(t *testing.T, root string) []string {
	t.Helper()
	var rows []string
	dts, _ := filepath.Glob(filepath.Join(root, "dt=*"))
	parts := 0
	for _, dtDir := range dts {
		hms, _ := filepath.Glob(filepath.Join(dtDir, "hm=*"))
		for _, dir := range hms {
			parts++
			dt := strings.TrimPrefix(filepath.Base(dtDir), "dt=")
			hm := strings.ReplaceAll(strings.TrimPrefix(filepath.Base(dir), "hm="), "%3A", ":")
			success, err := os.Stat(filepath.Join(dir, "_SUCCESS"))
			if err != nil {
				t.Errorf("partition %s is not committed: %v", dir, err)
				continue
			}
			files, _ := filepath.Glob(filepath.Join(dir, "part-*"))
			hidden, _ := filepath.Glob(filepath.Join(dir, ".part-*"))
			if len(hidden) > 0 {
				t.Errorf("partition %s has uncommitted files %v", dir, hidden)
			}
			for _, f := range files {
				st, err := os.Stat(f)
				if err != nil {
					t.Fatal(err)
				}
				if st.ModTime().After(success.ModTime()) {
					t.Errorf("%s was written after its partition's success file", f)
				}
				for _, rec := range readCSV(t, f) {
					vals := make([]string, 0, len(rec)+2)
					for _, v := range append(rec, dt, hm) {
						vals = append(vals, canon(v))
					}
					rows = append(rows, strings.Join(vals, "|"))
				}
			}
		}
	}
	if parts == 0 {
		t.Errorf("no partitions under %s", root)
	}
	sort.Strings(rows)
	return rows
}

// readCSV reads the records of a CSV file.
func readCSV(t *testing.T, file string) [][]string {
	t.Helper()
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	recs, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
