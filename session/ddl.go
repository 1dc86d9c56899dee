package session

import (
	"errors"
	"fmt"
	"strings"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner"
)

func (s *Session) createTable(x *parser.CreateTable) (*Result, error) {
	t := &catalog.Table{Name: x.Name, PrimaryKey: x.PrimaryKey}
	for _, c := range x.Columns {
		if c.Metadata {
			return nil, &parser.Error{Pos: c.Pos, Msg: fmt.Sprintf("column '%s': metadata columns are not supported yet", c.Name)}
		}
		if c.Computed != nil {
			continue
		}
		typ, err := planner.ResolveTypeName(c.Type)
		if err != nil {
			return nil, err
		}
		typ.NotNull = c.NotNull
		if t.Schema.Index(c.Name) >= 0 {
			return nil, &parser.Error{Pos: c.Pos, Msg: fmt.Sprintf("duplicate column '%s'", c.Name)}
		}
		t.Schema = append(t.Schema, catalog.Column{Name: c.Name, Type: typ})
	}
	// Computed columns refer to physical columns only (as in Flink).
	for i, c := range x.Columns {
		if c.Computed == nil {
			continue
		}
		typ, err := s.Planner().ComputedColumnType(t.Schema, c.Name, c.Computed)
		if err != nil {
			return nil, err
		}
		t.Computed = append(t.Computed, catalog.ComputedColumn{Name: c.Name, Type: typ.Nullable().WithNotNull(typ.NotNull),
			ExprSQL: strings.TrimSpace(c.Computed.Text), Expr: c.Computed, Position: i})
	}
	if len(t.Schema) == 0 {
		return nil, &parser.Error{Pos: x.NamePos, Msg: "a table needs at least one physical column"}
	}
	for ki, k := range x.PrimaryKey {
		i := t.Schema.Index(k)
		if i < 0 {
			p := x.Pos
			if ki < len(x.PrimaryKeyPos) {
				p = x.PrimaryKeyPos[ki]
			}
			msg := fmt.Sprintf("primary key column '%s' is not a column of table '%s' (columns: %s)", k, x.Name, strings.Join(t.Schema.Names(), ", "))
			if s := catalog.Suggest(k, t.Schema.Names()); s != "" {
				msg += fmt.Sprintf("; did you mean '%s'?", s)
			}
			return nil, &parser.Error{Pos: p, Msg: msg}
		}
		t.Schema[i].Type.NotNull = true
	}
	if err := partitionKeys(t, x); err != nil {
		return nil, err
	}
	if w := x.Watermark; w != nil {
		full := t.FullSchema()
		i := full.Index(w.Column)
		if i < 0 {
			return nil, &parser.Error{Pos: w.Pos, Msg: fmt.Sprintf("watermark column '%s' is not a column of the table", w.Column)}
		}
		if !planner.IsRowtimeType(full[i].Type) {
			return nil, &parser.Error{Pos: w.Pos, Msg: fmt.Sprintf("watermark column '%s' must be TIMESTAMP(3) or TIMESTAMP_LTZ(3), not %s", w.Column, full[i].Type)}
		}
		for _, cc := range t.Computed {
			if cc.Name == full[i].Name && strings.EqualFold(strings.Join(strings.Fields(cc.ExprSQL), ""), "PROCTIME()") {
				return nil, &parser.Error{Pos: w.Pos, Msg: fmt.Sprintf("watermark column '%s' is a processing-time attribute (PROCTIME()): a watermark needs an event-time column", w.Column)}
			}
		}
		text := ""
		var delay int64
		if w.Expr != nil {
			d, err := planner.WatermarkDelay(full, w.Expr)
			if err != nil {
				return nil, err
			}
			text, delay = exprText(x.Text, w), d
		}
		t.Watermark = &catalog.Watermark{Column: full[i].Name, ExprSQL: text, DelayMillis: delay}
	}
	for _, o := range x.Options {
		t.Options = append(t.Options, catalog.Option{Key: o.Key, Value: o.Value})
	}
	if err := planner.ValidateTable(t); err != nil {
		p := x.Pos
		var oe *catalog.OptionError
		if errors.As(err, &oe) {
			for _, o := range x.Options {
				if o.Key == oe.Key {
					p = o.KeyPos
				}
			}
		}
		return nil, &parser.Error{Pos: p, Msg: err.Error()}
	}
	if err := s.Catalog.CreateTable(t, x.IfNotExists); err != nil {
		return nil, &parser.Error{Pos: x.NamePos, Msg: err.Error()}
	}
	return ok(succeeded), nil
}

// partitionKeys checks PARTITIONED BY (...): distinct physical columns, not
// all of them, on a connector that writes partitions (filesystem).
func partitionKeys(t *catalog.Table, x *parser.CreateTable) error {
	if len(x.PartitionKeys) == 0 {
		return nil
	}
	at := func(i int) parser.Pos {
		if i < len(x.PartitionKeyPos) {
			return x.PartitionKeyPos[i]
		}
		return x.Pos
	}
	var conn string
	for _, o := range x.Options {
		if strings.EqualFold(o.Key, "connector") {
			conn = strings.ToLower(o.Value)
		}
	}
	if conn != "" && conn != "filesystem" {
		return &parser.Error{Pos: at(0), Msg: fmt.Sprintf("PARTITIONED BY needs a connector that writes partitions ('filesystem'), not '%s'", conn)}
	}
	for ki, k := range x.PartitionKeys {
		i := t.Schema.Index(k)
		if i < 0 {
			msg := fmt.Sprintf("partition column '%s' is not a physical column of table '%s' (columns: %s)", k, x.Name, strings.Join(t.Schema.Names(), ", "))
			if t.FullSchema().Index(k) >= 0 {
				msg = fmt.Sprintf("partition column '%s' is a computed column; partition by physical columns", k)
			} else if s := catalog.Suggest(k, t.Schema.Names()); s != "" {
				msg += fmt.Sprintf("; did you mean '%s'?", s)
			}
			return &parser.Error{Pos: at(ki), Msg: msg}
		}
		for _, prev := range t.PartitionKeys {
			if strings.EqualFold(prev, t.Schema[i].Name) {
				return &parser.Error{Pos: at(ki), Msg: fmt.Sprintf("partition column '%s' is listed twice", k)}
			}
		}
		switch t.Schema[i].Type.Kind {
		case catalog.KindRow:
			return &parser.Error{Pos: at(ki), Msg: fmt.Sprintf("partition column '%s' has type %s; partition by a column of an atomic type", k, t.Schema[i].Type)}
		}
		t.PartitionKeys = append(t.PartitionKeys, t.Schema[i].Name)
	}
	if len(t.PartitionKeys) == len(t.Schema) {
		return &parser.Error{Pos: at(0), Msg: fmt.Sprintf("every column of table '%s' is a partition column: the files would have no columns; keep at least one column out of PARTITIONED BY", x.Name)}
	}
	return nil
}

// exprText returns the watermark expression's text: what follows AS in the
// watermark clause, up to the end of the clause.
func exprText(stmt string, w *parser.WatermarkDef) string {
	up := strings.ToUpper(stmt)
	i := strings.Index(up, "WATERMARK")
	if i < 0 {
		return ""
	}
	rest := stmt[i:]
	j := strings.Index(strings.ToUpper(rest), " AS ")
	if j < 0 {
		return ""
	}
	rest = rest[j+4:]
	depth := 0
	for k, r := range rest {
		switch r {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				return strings.TrimSpace(rest[:k])
			}
			depth--
		case ',':
			if depth == 0 {
				return strings.TrimSpace(rest[:k])
			}
		}
	}
	return strings.TrimSpace(rest)
}

func (s *Session) createView(x *parser.CreateView) (*Result, error) {
	schema, err := s.Planner().QuerySchema(x.Query)
	if err != nil {
		return nil, err
	}
	if len(x.Columns) > 0 && len(x.Columns) != len(schema) {
		return nil, &parser.Error{Pos: x.NamePos, Msg: fmt.Sprintf("view '%s' lists %d columns but its query produces %d", x.Name, len(x.Columns), len(schema))}
	}
	v := &catalog.View{Name: x.Name, Columns: x.Columns, SQL: x.Text, Query: x.Query}
	if err := s.Catalog.CreateView(v, x.IfNotExists); err != nil {
		return nil, &parser.Error{Pos: x.NamePos, Msg: err.Error()}
	}
	return ok(succeeded), nil
}

func (s *Session) showCreate(x *parser.ShowCreate) (*Result, error) {
	if x.Kind == "VIEW" {
		v, found := s.Catalog.View(x.Name)
		if !found {
			return nil, &parser.Error{Pos: x.NamePos, Msg: fmt.Sprintf("view '%s' not found", x.Name)}
		}
		return &Result{Kind: ResultText, Message: v.SQL}, nil
	}
	t, found := s.Catalog.Table(x.Name)
	if !found {
		msg := fmt.Sprintf("table '%s' not found", x.Name)
		if _, isView := s.Catalog.View(x.Name); isView {
			msg = fmt.Sprintf("'%s' is a view: use SHOW CREATE VIEW", x.Name)
		}
		return nil, &parser.Error{Pos: x.NamePos, Msg: msg}
	}
	return &Result{Kind: ResultText, Message: ShowCreateTable(t)}, nil
}

// ShowCreateTable renders t's DDL in canonical form, as Flink does.
func ShowCreateTable(t *catalog.Table) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "CREATE TABLE `%s` (\n", t.Name)
	var lines []string
	for i, c := range t.FullSchema() {
		if cc, ok := t.ComputedAt(i); ok {
			lines = append(lines, fmt.Sprintf("  `%s` AS %s", c.Name, cc.ExprSQL))
			continue
		}
		lines = append(lines, fmt.Sprintf("  `%s` %s", c.Name, c.Type))
	}
	if t.Watermark != nil {
		lines = append(lines, fmt.Sprintf("  WATERMARK FOR `%s` AS %s", t.Watermark.Column, t.Watermark.ExprSQL))
	}
	if len(t.PrimaryKey) > 0 {
		ks := make([]string, len(t.PrimaryKey))
		for i, k := range t.PrimaryKey {
			ks[i] = "`" + k + "`"
		}
		lines = append(lines, fmt.Sprintf("  PRIMARY KEY (%s) NOT ENFORCED", strings.Join(ks, ", ")))
	}
	sb.WriteString(strings.Join(lines, ",\n"))
	sb.WriteString("\n)")
	if len(t.PartitionKeys) > 0 {
		ks := make([]string, len(t.PartitionKeys))
		for i, k := range t.PartitionKeys {
			ks[i] = "`" + k + "`"
		}
		fmt.Fprintf(&sb, " PARTITIONED BY (%s)", strings.Join(ks, ", "))
	}
	sb.WriteString(" WITH (\n")
	var opts []string
	for _, o := range t.Options {
		opts = append(opts, fmt.Sprintf("  '%s' = '%s'", o.Key, strings.ReplaceAll(o.Value, "'", "''")))
	}
	sb.WriteString(strings.Join(opts, ",\n"))
	sb.WriteString("\n)")
	return sb.String()
}

func (s *Session) describe(x *parser.Describe) (*Result, error) {
	r := &Result{Kind: ResultTable, Columns: []string{"name", "type", "null", "key", "extras", "watermark"}}
	if t, found := s.Catalog.Table(x.Name); found {
		for ci, c := range t.FullSchema() {
			extras := ""
			if cc, ok := t.ComputedAt(ci); ok {
				extras = "AS " + cc.ExprSQL
			}
			null := "TRUE"
			if c.Type.NotNull {
				null = "FALSE"
			}
			key := ""
			for _, k := range t.PrimaryKey {
				if strings.EqualFold(k, c.Name) {
					key = "PRI(" + strings.Join(t.PrimaryKey, ", ") + ")"
				}
			}
			wm := ""
			if t.Watermark != nil && strings.EqualFold(t.Watermark.Column, c.Name) {
				wm = t.Watermark.ExprSQL
			}
			r.Rows = append(r.Rows, []string{c.Name, c.Type.Nullable().String(), null, key, extras, wm})
		}
		return r, nil
	}
	if v, found := s.Catalog.View(x.Name); found {
		q := v.Query.(*parser.Query)
		schema, err := s.Planner().QuerySchema(q)
		if err != nil {
			return nil, err
		}
		for i, c := range schema {
			name := c.Name
			if len(v.Columns) > 0 {
				name = v.Columns[i]
			}
			null := "TRUE"
			if c.Type.NotNull {
				null = "FALSE"
			}
			r.Rows = append(r.Rows, []string{name, c.Type.Nullable().String(), null, "", "", ""})
		}
		return r, nil
	}
	msg := fmt.Sprintf("table or view '%s' not found", x.Name)
	if sg := catalog.Suggest(x.Name, s.Catalog.TableNames()); sg != "" {
		msg += fmt.Sprintf("; did you mean '%s'?", sg)
	}
	return nil, &parser.Error{Pos: x.NamePos, Msg: msg}
}

// HelpText is what HELP prints.
const HelpText = `Statements (end each with ';'):
  CREATE [TEMPORARY] TABLE [IF NOT EXISTS] t (col TYPE [NOT NULL], ...,
      [WATERMARK FOR ts AS expr], [PRIMARY KEY (c) NOT ENFORCED]) WITH ('connector' = '...', ...)
  CREATE [TEMPORARY] VIEW [IF NOT EXISTS] v [(cols)] AS SELECT ...
  DROP TABLE|VIEW [IF EXISTS] name
  SHOW TABLES | SHOW VIEWS | SHOW FUNCTIONS | SHOW CREATE TABLE t | SHOW CREATE VIEW v
  DESCRIBE t
  SET                      list the session options
  SET 'key' = 'value'      e.g. SET 'parallelism.default' = '2'
  RESET ['key']
  SELECT ...               run a continuous query; results stream here until it ends or Ctrl-C
  INSERT INTO t SELECT ... submit a job writing to table t
  EXECUTE STATEMENT SET BEGIN INSERT ...; INSERT ...; END   several INSERTs as one job
  EXPLAIN <SELECT | INSERT | EXECUTE STATEMENT SET>          show the physical DAG
  SHOW JOBS | DESCRIBE JOB '<id>' | STOP JOB '<id>'          list jobs; show one; cancel one
  STOP JOB '<id>' WITH SAVEPOINT [WITH DRAIN]                 stop at a savepoint in state.savepoints.dir
  CREATE SAVEPOINT FOR JOB '<id>' [INTO '<dir>']              take a savepoint; the job keeps running
  SHOW SAVEPOINTS [FOR JOB '<id>'] | SHOW CHECKPOINTS [FOR JOB '<id>']
  EXPLAIN UPGRADE FROM SAVEPOINT '<path>' <INSERT | EXECUTE STATEMENT SET>
                           can this statement restore the savepoint's state? (nothing runs)
  HELP | QUIT
Checkpoints: SET 'execution.checkpointing.interval' = '10 s'; SET 'state.checkpoints.dir' = '/path';
  savepoints: SET 'state.savepoints.dir' = '/path'; pin an aggregation's state: SELECT /*+ UID('name') */ ...
  restore with SET 'execution.savepoint.path' = '<savepoint or checkpoint>' (or streamsql run --from)
Types: BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p, s), STRING, VARCHAR(n),
  DATE, TIME(p), TIMESTAMP(p), TIMESTAMP_LTZ(p), ROW<name type, ...>; computed columns: c AS expr
Connectors: datagen, filesystem (csv, json), socket, print, blackhole
Table function: FROM t, LATERAL TABLE(SPLIT(s[, delimiter])) AS T(word)`
