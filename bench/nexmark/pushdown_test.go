package nexmark

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/session"
)

// readColumns plans the INSERT that ends script (after its DDL) and
// returns what the nexmark source is told it reads: "event_type",
// "bid.price", ... sorted; "*" for every column.
func readColumns(t *testing.T, script string) string {
	t.Helper()
	stmts, err := parser.ParseScript(script)
	if err != nil {
		t.Fatal(err)
	}
	s := session.New(session.Config{})
	defer s.Close()
	var ins *parser.Insert
	for _, st := range stmts {
		if x, ok := st.(*parser.Insert); ok {
			ins = x
			continue
		}
		if _, err := s.Execute(context.Background(), st); err != nil {
			t.Fatal(err)
		}
	}
	ph, err := s.Planner().PlanInserts([]*parser.Insert{ins})
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range ph.Tasks {
		if task.Source == nil || task.Source.Table.Connector() != "nexmark" {
			continue
		}
		use := exec.SourceColumnUse(task)
		if use == nil {
			return "*"
		}
		var got []string
		for i, col := range task.Source.Schema {
			u := use[i]
			if !u.Used {
				continue
			}
			if u.Fields == nil {
				got = append(got, col.Name)
				continue
			}
			for f, fc := range col.Type.Fields {
				if u.FieldUsed(f) {
					got = append(got, col.Name+"."+fc.Name)
				}
			}
		}
		sort.Strings(got)
		return strings.Join(got, " ")
	}
	t.Fatal("no nexmark source in the plan")
	return ""
}

// TestSourceProjectionPushDown: the nexmark source is told exactly the
// columns and ROW fields a query reads through the views, the computed
// dateTime and the watermark (the rest it may leave NULL); the results of
// every query with the push-down are checked against SQLite by
// TestNexmarkQueriesAgainstSQLite.
func TestSourceProjectionPushDown(t *testing.T) {
	ddl, err := DDL(map[string]string{"EVENTS_NUM": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	// dateTime (its CASE reads the three dateTime fields and event_type)
	// and the views' filters are read by every query.
	const base = "auction.dateTime bid.dateTime event_type person.dateTime"
	for _, c := range []struct{ name, sql, want string }{
		{"tumble", `CREATE TABLE sink (k BIGINT, window_start TIMESTAMP(3), c BIGINT, s BIGINT) WITH ('connector' = 'blackhole');
CREATE VIEW keyed AS SELECT MOD(price, 10000) AS k, price, ` + "`dateTime`" + ` FROM bid;
INSERT INTO sink SELECT k, window_start, COUNT(*), SUM(price)
FROM TABLE(TUMBLE(TABLE keyed, DESCRIPTOR(` + "`dateTime`" + `), INTERVAL '10' SECOND))
GROUP BY k, window_start, window_end;`, "bid.price"},
		{"bid fields", `CREATE TABLE o (a BIGINT, u VARCHAR) WITH ('connector' = 'blackhole');
INSERT INTO o SELECT auction, url FROM bid WHERE bidder > 5;`, "bid.auction bid.bidder bid.url"},
		{"two views", `CREATE TABLE o (a BIGINT, u VARCHAR) WITH ('connector' = 'blackhole');
INSERT INTO o SELECT id, city FROM person WHERE state = 'OR';`, "person.city person.id person.state"},
		// a self-join (one shared source, two readers): the columns the
		// query, the join key and the views' filters read, pruned below
		// the join (planner/joinprune.go)
		{"join", `CREATE TABLE o (n VARCHAR, a BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO o SELECT P.name, A.id FROM auction AS A JOIN person AS P ON A.seller = P.id WHERE A.category = 10;`,
			"auction.category auction.id auction.seller person.id person.name"},
		// a lookup join (q13's shape): its key and residual condition,
		// and what the query reads after it
		{"lookup join", `CREATE TABLE side (k BIGINT, v VARCHAR) WITH ('connector' = 'filesystem', 'path' = '/nonexistent', 'format' = 'csv');
CREATE TABLE o (a BIGINT, p BIGINT, v VARCHAR) WITH ('connector' = 'blackhole');
INSERT INTO o SELECT B.auction, B.price, S.v FROM (SELECT *, PROCTIME() AS p_time FROM bid) B
JOIN side FOR SYSTEM_TIME AS OF B.p_time AS S ON MOD(B.auction, 10000) = S.k AND B.bidder > S.k;`,
			"bid.auction bid.bidder bid.price"},
		{"whole row", `CREATE TABLE o (e INT, b ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, ` + "`dateTime`" + ` TIMESTAMP(3), extra VARCHAR>) WITH ('connector' = 'blackhole');
INSERT INTO o SELECT event_type, bid FROM datagen;`, "bid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := strings.Fields(base + " " + c.want)
			if c.want == "bid" { // the whole ROW: its fields are not listed
				want = []string{"auction.dateTime", "bid", "event_type", "person.dateTime"}
			}
			sort.Strings(want)
			if got := readColumns(t, ddl+c.sql); got != strings.Join(want, " ") {
				t.Fatalf("the source reads %q, want %q", got, strings.Join(want, " "))
			}
		})
	}
	// Every column of a plain copy of the table is read.
	got := readColumns(t, ddl+`CREATE TABLE o (e INT, p `+rowOf(t, ddl, "person")+`, a `+rowOf(t, ddl, "auction")+`, b `+rowOf(t, ddl, "bid")+`) WITH ('connector' = 'blackhole');
INSERT INTO o SELECT event_type, person, auction, bid FROM datagen;`)
	if got != "*" {
		t.Fatalf("SELECT of every column: the source reads %q, want every column", got)
	}
}

// rowOf is the SQL type of the ROW column name of the nexmark table.
func rowOf(t *testing.T, ddl, name string) string {
	t.Helper()
	stmts, err := parser.ParseScript(ddl)
	if err != nil {
		t.Fatal(err)
	}
	s := session.New(session.Config{})
	defer s.Close()
	for _, st := range stmts {
		if _, err := s.Execute(context.Background(), st); err != nil {
			t.Fatal(err)
		}
	}
	tb, ok := s.Catalog.Table("datagen")
	if !ok {
		t.Fatal("no table datagen")
	}
	for _, c := range tb.Schema {
		if c.Name == name {
			return sqlType(c.Type)
		}
	}
	t.Fatalf("no column %s", name)
	return ""
}

func sqlType(ty catalog.Type) string {
	if ty.Kind != catalog.KindRow {
		return ty.String()
	}
	var parts []string
	for _, f := range ty.Fields {
		parts = append(parts, fmt.Sprintf("`%s` %s", f.Name, sqlType(f.Type)))
	}
	return "ROW<" + strings.Join(parts, ", ") + ">"
}
