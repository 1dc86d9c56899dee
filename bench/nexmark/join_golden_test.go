package nexmark

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Golden tests of the join queries: as the other golden tests, each query
// runs as the benchmark writes it over a bounded stream, in every variant
// (goldenVariants), and its folded output is compared with SQLite's answer
// over the same persons, auctions and bids, exported as CSV by one more
// job.

const joinGoldenEvents = 20000

// joinOracles are SQLite's versions of the join queries over tables
// person, auction and bid (timestamps as Flink's text; ms() turns them into
// epoch milliseconds). AVG of BIGINT is BIGINT in Flink: the integer
// quotient.
var joinOracles = map[string]string{
	"q3": `SELECT P.name, P.city, P.state, A.id FROM auction A JOIN person P ON A.seller = P.id
	  WHERE A.category = 10 AND P.state IN ('OR', 'ID', 'CA')`,
	"q4": `SELECT category, sum(final) / count(*) FROM (
	    SELECT max(B.price) AS final, A.category FROM auction A JOIN bid B ON A.id = B.auction
	    WHERE ms(B.dateTime) BETWEEN ms(A.dateTime) AND ms(A.expires)
	    GROUP BY A.id, A.category)
	  GROUP BY category`,
	// HOP(2 s, 10 s): a bid at t is in the five windows starting at
	// floor(t / 2 s) * 2 s - k * 2 s, k = 0..4
	"q5": `WITH k(n) AS (VALUES (0), (1), (2), (3), (4)),
	  w AS (SELECT auction, (ms(dateTime) / 2000) * 2000 - n * 2000 AS ws FROM bid, k),
	  ab AS (SELECT auction, count(*) AS num, ws FROM w GROUP BY auction, ws),
	  mb AS (SELECT max(num) AS maxn, ws FROM ab GROUP BY ws)
	  SELECT ab.auction, ab.num FROM ab JOIN mb ON ab.ws = mb.ws AND ab.num >= mb.maxn`,
	"q7": `SELECT B.auction, B.bidder, B.price, B.dateTime, B.extra FROM bid B JOIN (
	    SELECT max(price) AS maxprice, (ms(dateTime) / 10000) * 10000 + 10000 AS wend FROM bid GROUP BY ms(dateTime) / 10000) B1
	  ON B.price = B1.maxprice
	  WHERE ms(B.dateTime) BETWEEN B1.wend - 10000 AND B1.wend`,
	"q9": `SELECT id, itemName, description, initialBid, reserve, dateTime, expires, seller, category, extra,
	    auction, bidder, price, bid_dateTime, bid_extra FROM (
	    SELECT A.*, B.auction, B.bidder, B.price, B.dateTime AS bid_dateTime, B.extra AS bid_extra,
	      ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, ms(B.dateTime) ASC) AS rn
	    FROM auction A JOIN bid B ON A.id = B.auction
	    WHERE ms(B.dateTime) BETWEEN ms(A.dateTime) AND ms(A.expires))
	  WHERE rn <= 1`,
	"q20": `SELECT B.auction, B.bidder, B.price, B.channel, B.url, B.dateTime, B.extra,
	    A.itemName, A.description, A.initialBid, A.reserve, A.dateTime, A.expires, A.seller, A.category, A.extra
	  FROM bid B JOIN auction A ON B.auction = A.id WHERE A.category = 10`,
	"q23": `SELECT B.bidder, B.price, B.channel, B.url, B.extra,
	    P.id, P.name, P.emailAddress, P.creditCard, P.city, P.state, P.extra,
	    A.itemName, A.description, A.initialBid, A.reserve, A.dateTime, A.expires, A.seller, A.category, A.extra
	  FROM bid B JOIN person P ON P.id = B.bidder JOIN auction A ON A.seller = B.bidder`,
}

// events are the persons, auctions and bids of a stream, as CSV rows.
type events struct{ persons, auctions, bids [][]string }

// exportEvents writes the three kinds of events of the stream as CSV with
// one job (a statement set).
func exportEvents(t *testing.T, dir string, vars map[string]string) events {
	t.Helper()
	ddl, err := DDL(vars)
	if err != nil {
		t.Fatal(err)
	}
	pd, ad, bd := filepath.Join(dir, "person"), filepath.Join(dir, "auction"), filepath.Join(dir, "bid")
	script := ddl + fmt.Sprintf(`
CREATE TABLE person_csv (id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, state VARCHAR, `+"`dateTime`"+` TIMESTAMP(3), extra VARCHAR)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv');
CREATE TABLE auction_csv (id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT, `+"`dateTime`"+` TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv');
CREATE TABLE bid_csv (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, `+"`dateTime`"+` TIMESTAMP(3), extra VARCHAR)
WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv');
EXECUTE STATEMENT SET BEGIN
INSERT INTO person_csv SELECT * FROM person;
INSERT INTO auction_csv SELECT * FROM auction;
INSERT INTO bid_csv SELECT * FROM bid;
END;
`, pd, ad, bd)
	runScript(t, script, 0)
	read := func(d string) [][]string {
		var rows [][]string
		files, _ := filepath.Glob(filepath.Join(d, "part-*"))
		for _, f := range files {
			rows = append(rows, readCSV(t, f)...)
		}
		return rows
	}
	return events{read(pd), read(ad), read(bd)}
}

// sqliteEventsAnswer runs query over the events in SQLite: sorted rows.
func sqliteEventsAnswer(t *testing.T, ev events, query string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tables := []struct {
		ddl  string
		rows [][]string
	}{
		{`CREATE TABLE person (id INTEGER, name TEXT, emailAddress TEXT, creditCard TEXT, city TEXT, state TEXT, dateTime TEXT, extra TEXT)`, ev.persons},
		{`CREATE TABLE auction (id INTEGER, itemName TEXT, description TEXT, initialBid INTEGER, reserve INTEGER, dateTime TEXT, expires TEXT, seller INTEGER, category INTEGER, extra TEXT)`, ev.auctions},
		{`CREATE TABLE bid (auction INTEGER, bidder INTEGER, price INTEGER, channel TEXT, url TEXT, dateTime TEXT, extra TEXT)`, ev.bids},
	}
	for _, tb := range tables {
		if _, err := db.Exec(tb.ddl); err != nil {
			t.Fatal(err)
		}
		name := strings.Fields(tb.ddl)[2]
		n := strings.Count(tb.ddl, ",") + 1
		ins := fmt.Sprintf("INSERT INTO %s VALUES (%s)", name, strings.TrimSuffix(strings.Repeat("?, ", n), ", "))
		tx, _ := db.Begin()
		st, err := tx.Prepare(ins)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range tb.rows {
			args := make([]any, len(r))
			for i, v := range r {
				args[i] = v
			}
			if _, err := st.Exec(args...); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
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
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestNexmarkJoinsAgainstSQLite runs the join queries in every golden
// variant against SQLite.
func TestNexmarkJoinsAgainstSQLite(t *testing.T) {
	// 100 s of event time; people are 1 in 5 events (the benchmark: 1 in
	// 50), so that bidders (person ids offset by 2000, as in the reference
	// generator) are people too and q23 has rows
	vars := map[string]string{"EVENTS_NUM": fmt.Sprint(joinGoldenEvents), "TPS": "200",
		"PERSON_PROPORTION": "10", "AUCTION_PROPORTION": "3", "BID_PROPORTION": "37"}
	ev := exportEvents(t, t.TempDir(), vars)
	if len(ev.persons) != joinGoldenEvents/5 || len(ev.auctions) != joinGoldenEvents*3/50 || len(ev.bids) != joinGoldenEvents*37/50 {
		t.Fatalf("exported %d persons, %d auctions, %d bids of %d events", len(ev.persons), len(ev.auctions), len(ev.bids), joinGoldenEvents)
	}
	for _, q := range Queries() {
		oracle, ok := joinOracles[q]
		if !ok {
			continue
		}
		t.Run(q, func(t *testing.T) {
			want := sqliteEventsAnswer(t, ev, oracle)
			if len(want) == 0 {
				t.Fatalf("SQLite's answer to %s is empty: nothing would be checked", q)
			}
			for _, v := range goldenVariants(q, joinGoldenEvents) {
				got := queryOutput(t, q, t.TempDir(), vars, v.settings, v.crashAfter)
				if d := diffRows(got, want); d != "" {
					t.Errorf("%s %s differs from SQLite (%d rows, want %d): %s", q, v.name, len(got), len(want), d)
				}
			}
		})
	}
}
