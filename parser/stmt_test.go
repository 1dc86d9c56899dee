package parser

import (
	"reflect"
	"strings"
	"testing"
)

func mustParse(t *testing.T, sql string) Statement {
	t.Helper()
	st, err := Parse(sql)
	if err != nil {
		t.Fatalf("Parse(%q): %v", sql, err)
	}
	return st
}

// clearBase zeroes what the table below does not spell out.
func clearBase(st Statement) Statement {
	switch s := st.(type) {
	case *ShowTables:
		return &ShowTables{}
	case *ShowViews:
		return &ShowViews{}
	case *ShowFunctions:
		return &ShowFunctions{}
	case *ShowJobs:
		return &ShowJobs{}
	case *ShowCheckpoints:
		return &ShowCheckpoints{JobID: s.JobID}
	case *ShowSavepoints:
		return &ShowSavepoints{JobID: s.JobID}
	case *CreateSavepoint:
		return &CreateSavepoint{JobID: s.JobID, Dir: s.Dir}
	case *DescribeJob:
		return &DescribeJob{JobID: s.JobID}
	case *Help:
		return &Help{}
	case *Quit:
		return &Quit{}
	case *ShowCreate:
		c := *s
		c.Base, c.NamePos = Base{}, Pos{}
		return &c
	case *Describe:
		c := *s
		c.Base, c.NamePos = Base{}, Pos{}
		return &c
	case *Drop:
		c := *s
		c.Base, c.NamePos = Base{}, Pos{}
		return &c
	case *Set:
		c := *s
		c.Base, c.KeyPos, c.ValuePos = Base{}, Pos{}, Pos{}
		return &c
	case *Reset:
		c := *s
		c.Base, c.KeyPos = Base{}, Pos{}
		return &c
	case *StopJob:
		c := *s
		c.Base = Base{}
		return &c
	}
	return st
}

func TestSimpleStatements(t *testing.T) {
	tests := []struct {
		sql  string
		want Statement
	}{
		{"SHOW TABLES", &ShowTables{}},
		{"show tables;", &ShowTables{}},
		{"SHOW VIEWS", &ShowViews{}},
		{"SHOW FUNCTIONS", &ShowFunctions{}},
		{"SHOW JOBS", &ShowJobs{}},
		{"SHOW CHECKPOINTS", &ShowCheckpoints{}},
		{"SHOW CREATE TABLE orders", &ShowCreate{Kind: "TABLE", Name: "orders"}},
		{"show create view `my view`", &ShowCreate{Kind: "VIEW", Name: "my view"}},
		{"DESCRIBE orders", &Describe{Name: "orders"}},
		{"DESC cat.db.orders", &Describe{Name: "cat.db.orders"}},
		{"DROP TABLE t", &Drop{Kind: "TABLE", Name: "t"}},
		{"DROP TEMPORARY VIEW IF EXISTS v", &Drop{Kind: "VIEW", Name: "v", IfExists: true}},
		{"SET", &Set{}},
		{"SET 'parallelism.default' = '4'", &Set{Key: "parallelism.default", Value: "4"}},
		{"SET table.exec.mini-batch.enabled = true", &Set{Key: "table.exec.mini-batch.enabled", Value: "true"}},
		{"SET 'execution.checkpointing.interval' = 10 s", &Set{Key: "execution.checkpointing.interval", Value: "10 s"}},
		{"SET 'a' = 'it''s'", &Set{Key: "a", Value: "it's"}},
		{"RESET", &Reset{}},
		{"RESET 'parallelism.default'", &Reset{Key: "parallelism.default"}},
		{"reset pipeline.name", &Reset{Key: "pipeline.name"}},
		{"STOP JOB 'abc'", &StopJob{ID: "abc"}},
		{"STOP JOB 'abc' WITH SAVEPOINT", &StopJob{ID: "abc", WithSavepoint: true}},
		{"stop job 'abc' with savepoint with drain", &StopJob{ID: "abc", WithSavepoint: true, WithDrain: true}},
		{"STOP JOB 'abc' WITH DRAIN", &StopJob{ID: "abc", WithDrain: true}},
		{"SHOW CHECKPOINTS FOR JOB 'abc'", &ShowCheckpoints{JobID: "abc"}},
		{"SHOW SAVEPOINTS", &ShowSavepoints{}},
		{"show savepoints for job 'abc';", &ShowSavepoints{JobID: "abc"}},
		{"CREATE SAVEPOINT FOR JOB 'abc'", &CreateSavepoint{JobID: "abc"}},
		{"create savepoint for job 'abc' into '/tmp/sp'", &CreateSavepoint{JobID: "abc", Dir: "/tmp/sp"}},
		{"CREATE SAVEPOINT FOR JOB 'abc' INTO 'file:///tmp/it''s'", &CreateSavepoint{JobID: "abc", Dir: "file:///tmp/it's"}},
		{"DESCRIBE JOB 'abc'", &DescribeJob{JobID: "abc"}},
		{"desc job 'abc'", &DescribeJob{JobID: "abc"}},
		{"DESCRIBE job", &Describe{Name: "job"}},
		{"HELP", &Help{}},
		{"QUIT", &Quit{}},
		{"exit;", &Quit{}},
	}
	for _, tc := range tests {
		t.Run(tc.sql, func(t *testing.T) {
			got := clearBase(mustParse(t, tc.sql))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestSetPositions(t *testing.T) {
	s := mustParse(t, "SET\n  'k' =\n  'v'").(*Set)
	if s.KeyPos != (Pos{6, 2, 3}) || s.ValuePos != (Pos{14, 3, 3}) {
		t.Errorf("positions %+v %+v", s.KeyPos, s.ValuePos)
	}
}

func TestCreateTable(t *testing.T) {
	sql := `CREATE TEMPORARY TABLE IF NOT EXISTS orders (
  id BIGINT NOT NULL COMMENT 'the id',
  ` + "`timestamp`" + ` TIMESTAMP(3),
  user STRING,
  value DECIMAL(10, 2),
  count INT,
  price DOUBLE PRECISION,
  name VARCHAR(20) NULL,
  ltz TIMESTAMP(3) WITH LOCAL TIME ZONE,
  proc AS PROCTIME(),
  part INT METADATA FROM 'partition' VIRTUAL,
  WATERMARK FOR ` + "`timestamp`" + ` AS ` + "`timestamp`" + ` - INTERVAL '5' SECOND,
  PRIMARY KEY (id) NOT ENFORCED
) COMMENT 'orders table' WITH (
  'connector' = 'kafka',
  'topic' = 'orders'
)`
	ct := mustParse(t, sql).(*CreateTable)
	if ct.Name != "orders" || !ct.Temporary || !ct.IfNotExists || ct.Comment != "orders table" {
		t.Errorf("header %+v", ct)
	}
	if ct.NamePos != (Pos{37, 1, 38}) {
		t.Errorf("name pos %+v", ct.NamePos)
	}
	type col struct {
		name, typ string
		args      []int
		notNull   bool
	}
	want := []col{
		{"id", "BIGINT", nil, true}, {"timestamp", "TIMESTAMP", []int{3}, false}, {"user", "STRING", nil, false},
		{"value", "DECIMAL", []int{10, 2}, false}, {"count", "INT", nil, false}, {"price", "DOUBLE", nil, false},
		{"name", "VARCHAR", []int{20}, false}, {"ltz", "TIMESTAMP_LTZ", []int{3}, false}, {"proc", "", nil, false},
		{"part", "INT", nil, false},
	}
	if len(ct.Columns) != len(want) {
		t.Fatalf("columns %+v", ct.Columns)
	}
	for i, w := range want {
		c := ct.Columns[i]
		if c.Name != w.name || c.Type.Name != w.typ || !reflect.DeepEqual(c.Type.Args, w.args) || c.NotNull != w.notNull {
			t.Errorf("column %d: %+v, want %+v", i, c, w)
		}
	}
	if c := ct.Columns[0]; c.Comment != "the id" || c.Pos != (Pos{48, 2, 3}) || c.Type.Pos != (Pos{51, 2, 6}) {
		t.Errorf("id column %+v", c)
	}
	if c := ct.Columns[8]; c.Computed == nil || c.Computed.Node == nil {
		t.Errorf("computed column %+v", c)
	}
	if c := ct.Columns[9]; !c.Metadata || c.MetadataKey != "partition" || !c.Virtual {
		t.Errorf("metadata column %+v", c)
	}
	if ct.Watermark == nil || ct.Watermark.Column != "timestamp" || ct.Watermark.Pos.Line != 12 {
		t.Fatalf("watermark %+v", ct.Watermark)
	}
	if !reflect.DeepEqual(ct.PrimaryKey, []string{"id"}) {
		t.Errorf("pk %v", ct.PrimaryKey)
	}
	wantOpts := []Option{
		{Key: "connector", Value: "kafka", KeyPos: Pos{Line: 15, Col: 3}, ValuePos: Pos{Line: 15, Col: 17}},
		{Key: "topic", Value: "orders", KeyPos: Pos{Line: 16, Col: 3}, ValuePos: Pos{Line: 16, Col: 13}},
	}
	for i := range ct.Options {
		ct.Options[i].KeyPos.Offset, ct.Options[i].ValuePos.Offset = 0, 0
	}
	if !reflect.DeepEqual(ct.Options, wantOpts) {
		t.Errorf("options %+v", ct.Options)
	}
}

func TestCreateTableVariants(t *testing.T) {
	ct := mustParse(t, "create table t (a int primary key not enforced, b string) with ('connector'='datagen')").(*CreateTable)
	if !reflect.DeepEqual(ct.PrimaryKey, []string{"a"}) || ct.Columns[0].Type.Name != "INT" {
		t.Errorf("%+v", ct)
	}
	ct = mustParse(t, "CREATE TABLE t (a INT, b INT, CONSTRAINT pk PRIMARY KEY (a, b) NOT ENFORCED)").(*CreateTable)
	if !reflect.DeepEqual(ct.PrimaryKey, []string{"a", "b"}) || ct.Options != nil {
		t.Errorf("%+v", ct)
	}
}

func TestCreateView(t *testing.T) {
	v := mustParse(t, "CREATE TEMPORARY VIEW IF NOT EXISTS v (a, b) AS SELECT x, y FROM t").(*CreateView)
	if v.Name != "v" || !v.Temporary || !v.IfNotExists || !reflect.DeepEqual(v.Columns, []string{"a", "b"}) || v.Query == nil {
		t.Errorf("%+v", v)
	}
	if p := v.Query.Ctx.Start(); p != (Pos{48, 1, 49}) {
		t.Errorf("query start %+v", p)
	}
}

func TestInsertAndStatementSet(t *testing.T) {
	ins := mustParse(t, "INSERT INTO sink (a, b) SELECT x, y FROM t").(*Insert)
	if ins.Table != "sink" || !reflect.DeepEqual(ins.Columns, []string{"a", "b"}) || ins.Query == nil || ins.TablePos != (Pos{12, 1, 13}) {
		t.Errorf("%+v", ins)
	}
	for _, sql := range []string{
		"EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT x FROM t; INSERT INTO b SELECT y FROM t; END",
		"EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT x FROM t; INSERT INTO b SELECT y FROM t END",
		"BEGIN STATEMENT SET; INSERT INTO a SELECT x FROM t; INSERT INTO b SELECT y FROM t; END;",
	} {
		set := mustParse(t, sql).(*StatementSet)
		if len(set.Inserts) != 2 || set.Inserts[0].Table != "a" || set.Inserts[1].Table != "b" {
			t.Errorf("%q: %+v", sql, set)
		}
		if got := set.Inserts[1].SQL(); got != "INSERT INTO b SELECT y FROM t" {
			t.Errorf("inner text %q", got)
		}
	}
}

func TestExplain(t *testing.T) {
	tests := []struct {
		sql  string
		kind string
	}{
		{"EXPLAIN SELECT a FROM t", "*parser.Select"},
		{"EXPLAIN PLAN FOR SELECT a FROM t", "*parser.Select"},
		{"explain plan for insert into s select a from t", "*parser.Insert"},
		{"EXPLAIN EXECUTE STATEMENT SET BEGIN INSERT INTO s SELECT a FROM t; END", "*parser.StatementSet"},
	}
	for _, tc := range tests {
		e := mustParse(t, tc.sql).(*Explain)
		if got := reflect.TypeOf(e.Stmt).String(); got != tc.kind {
			t.Errorf("%q: inner %s", tc.sql, got)
		}
	}
	e := mustParse(t, "EXPLAIN PLAN FOR SELECT a FROM t").(*Explain)
	if e.Stmt.Position() != (Pos{17, 1, 18}) || e.Stmt.SQL() != "SELECT a FROM t" {
		t.Errorf("inner %+v %q", e.Stmt.Position(), e.Stmt.SQL())
	}
}

func TestSelectForms(t *testing.T) {
	for _, sql := range []string{
		"SELECT 1",
		"(SELECT a FROM t) UNION ALL (SELECT b FROM u)",
		"WITH x AS (SELECT a FROM t) SELECT a FROM x",
		"SELECT a FROM t UNION SELECT b FROM u",
	} {
		if _, ok := mustParse(t, sql).(*Select); !ok {
			t.Errorf("%q is not a Select", sql)
		}
	}
}

func TestJobStatementPositions(t *testing.T) {
	cs := mustParse(t, "CREATE SAVEPOINT\n  FOR JOB 'abc' INTO '/d'").(*CreateSavepoint)
	if cs.JobIDPos != (Pos{27, 2, 11}) || cs.DirPos != (Pos{38, 2, 22}) {
		t.Errorf("positions %+v %+v", cs.JobIDPos, cs.DirPos)
	}
	dj := mustParse(t, "DESCRIBE JOB 'abc'").(*DescribeJob)
	if dj.JobIDPos != (Pos{13, 1, 14}) {
		t.Errorf("position %+v", dj.JobIDPos)
	}
}

func TestJobStatementErrors(t *testing.T) {
	tests := []struct{ sql, want string }{
		{"CREATE SAVEPOINT", "1:17: expected FOR"},
		{"CREATE SAVEPOINT FOR 'abc'", "1:22: expected JOB, found \"'abc'\""},
		{"CREATE SAVEPOINT FOR JOB abc", "1:26: expected a job id in quotes"},
		{"CREATE SAVEPOINT FOR JOB ''", "1:26: empty job id"},
		{"CREATE SAVEPOINT FOR JOB 'abc' INTO", "1:36: expected a directory in quotes"},
		{"CREATE SAVEPOINT FOR JOB 'abc' INTO ''", "1:37: empty savepoint directory"},
		{"CREATE SAVEPOINT FOR JOB 'abc' TO '/d'", "1:32: unexpected"},
		{"CREATE TEMPORARY SAVEPOINT FOR JOB 'a'", "1:18: expected TABLE or VIEW after CREATE TEMPORARY"},
		{"CREATE INDEX i", "1:8: expected TABLE or VIEW after CREATE"},
		{"SHOW SAVEPOINTS FOR 'abc'", "1:21: expected JOB"},
		{"SHOW SAVEPOINTS FOR JOB", "1:24: expected a job id in quotes"},
		{"SHOW SAVEPOINTS 'abc'", "1:17: unexpected"},
		{"SHOW CHECKPOINTS FOR JOB 'a' 'b'", "1:30: unexpected"},
		{"DESCRIBE JOB 'abc' extra", "1:20: unexpected"},
		{"SHOW SAVEPOINT", "1:6: unsupported statement SHOW \"SAVEPOINT\""},
	}
	for _, tc := range tests {
		_, err := Parse(tc.sql)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want prefix %q", tc.sql, err, tc.want)
		}
	}
}
