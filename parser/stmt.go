package parser

import "strings"

// parseStatement parses the code tokens of one statement; end is the offset
// just after it (its ';' or the end of the text).
func parseStatement(src *source, toks []token, end int) (Statement, *Error) {
	st, err := parseStatementKind(src, toks, end)
	if err != nil {
		return nil, err
	}
	switch st.(type) {
	case *Select, *Insert, *StatementSet, *Explain, *ExplainUpgrade, *CreateView:
		// Their queries read their own hints.
	default:
		if err := noHints(src, toks[0].start, end); err != nil {
			return nil, err
		}
	}
	return st, nil
}

func parseStatementKind(src *source, toks []token, end int) (Statement, *Error) {
	c := newCursor(src, toks, end)
	first := toks[0]
	base := Base{Pos: src.pos(first.start), Text: src.text[first.start:toks[len(toks)-1].end]}
	switch src.word(first) {
	case "CREATE":
		return parseCreate(c, base)
	case "DROP":
		return parseDrop(c, base)
	case "SHOW":
		return parseShow(c, base)
	case "DESCRIBE", "DESC":
		c.next()
		if c.isWord("JOB") && c.peekN(1).kind == tString {
			c.next()
			id, pos, err := jobIDLit(c)
			if err != nil {
				return nil, err
			}
			if err := c.expectEnd(); err != nil {
				return nil, err
			}
			return &DescribeJob{Base: base, JobID: id, JobIDPos: pos}, nil
		}
		name, nt, err := c.name("a table or view name")
		if err != nil {
			return nil, err
		}
		if err := c.expectEnd(); err != nil {
			return nil, err
		}
		return &Describe{Base: base, Name: name, NamePos: src.pos(nt.start)}, nil
	case "SET":
		return parseSet(c, base)
	case "RESET":
		return parseReset(c, base)
	case "EXPLAIN":
		return parseExplain(c, base)
	case "SELECT", "WITH", "VALUES":
		q, err := parseQuery(src, first.start, toks[len(toks)-1].end)
		if err != nil {
			return nil, err
		}
		return &Select{Base: base, Query: q}, nil
	case "INSERT":
		return parseInsert(c, base)
	case "EXECUTE", "BEGIN":
		return parseStatementSet(c, base)
	case "STOP":
		return parseStopJob(c, base)
	case "HELP":
		c.next()
		if err := c.expectEnd(); err != nil {
			return nil, err
		}
		return &Help{Base: base}, nil
	case "QUIT", "EXIT":
		c.next()
		if err := c.expectEnd(); err != nil {
			return nil, err
		}
		return &Quit{Base: base}, nil
	}
	if first.kind == tOp && src.tokText(first) == "(" {
		q, err := parseQuery(src, first.start, toks[len(toks)-1].end)
		if err != nil {
			return nil, err
		}
		return &Select{Base: base, Query: q}, nil
	}
	return nil, c.errorf(first, "unsupported statement %s; see HELP", quoteUpper(src, first))
}

func quoteUpper(src *source, t token) string {
	if t.kind == tIdent {
		return `"` + src.word(t) + `"`
	}
	return src.describe(t)
}

func parseCreate(c *cursor, base Base) (Statement, *Error) {
	c.next() // CREATE
	temporary := c.acceptWords("TEMPORARY")
	switch {
	case c.isWord("TABLE"):
		c.next()
		return parseCreateTable(c, base, temporary)
	case c.isWord("VIEW"):
		c.next()
		return parseCreateView(c, base, temporary)
	case c.isWord("SAVEPOINT") && !temporary:
		c.next()
		return parseCreateSavepoint(c, base)
	}
	// CREATE SAVEPOINT is a job-control verb, not DDL: it is left out here.
	if temporary {
		return nil, c.unexpected("TABLE or VIEW after CREATE TEMPORARY")
	}
	return nil, c.unexpected("TABLE or VIEW after CREATE")
}

func parseCreateView(c *cursor, base Base, temporary bool) (Statement, *Error) {
	v := &CreateView{Base: base, Temporary: temporary}
	if c.isWord("IF") {
		if err := c.expectWords("IF", "NOT", "EXISTS"); err != nil {
			return nil, err
		}
		v.IfNotExists = true
	}
	name, nt, err := c.name("a view name")
	if err != nil {
		return nil, err
	}
	v.Name, v.NamePos = name, c.src.pos(nt.start)
	if c.isOp("(") {
		if v.Columns, err = c.identList("a column name"); err != nil {
			return nil, err
		}
	}
	if err := c.expectWords("AS"); err != nil {
		return nil, err
	}
	if c.atEnd() {
		return nil, c.unexpected("a query after AS")
	}
	from, to := c.restRange()
	if v.Query, err = parseQuery(c.src, from, to); err != nil {
		return nil, err
	}
	return v, nil
}

func parseDrop(c *cursor, base Base) (Statement, *Error) {
	c.next() // DROP
	d := &Drop{Base: base}
	c.acceptWords("TEMPORARY")
	switch {
	case c.isWord("TABLE"), c.isWord("VIEW"):
		d.Kind = c.src.word(c.next())
	default:
		return nil, c.unexpected("TABLE or VIEW after DROP")
	}
	if c.isWord("IF") {
		if err := c.expectWords("IF", "EXISTS"); err != nil {
			return nil, err
		}
		d.IfExists = true
	}
	name, nt, err := c.name("a " + strings.ToLower(d.Kind) + " name")
	if err != nil {
		return nil, err
	}
	d.Name, d.NamePos = name, c.src.pos(nt.start)
	if err := c.expectEnd(); err != nil {
		return nil, err
	}
	return d, nil
}

func parseShow(c *cursor, base Base) (Statement, *Error) {
	c.next() // SHOW
	t := c.next()
	var st Statement
	switch c.src.word(t) {
	case "TABLES":
		st = &ShowTables{Base: base}
	case "VIEWS":
		st = &ShowViews{Base: base}
	case "FUNCTIONS":
		st = &ShowFunctions{Base: base}
	case "JOBS":
		st = &ShowJobs{Base: base}
	case "CHECKPOINTS":
		sc := &ShowCheckpoints{Base: base}
		if c.acceptWords("FOR") {
			var err *Error
			if sc.JobID, sc.JobIDPos, err = forJob(c); err != nil {
				return nil, err
			}
		}
		st = sc
	case "SAVEPOINTS":
		sp := &ShowSavepoints{Base: base}
		if c.acceptWords("FOR") {
			var err *Error
			if sp.JobID, sp.JobIDPos, err = forJob(c); err != nil {
				return nil, err
			}
		}
		st = sp
	case "CREATE":
		sc := &ShowCreate{Base: base}
		switch {
		case c.isWord("TABLE"), c.isWord("VIEW"):
			sc.Kind = c.src.word(c.next())
		default:
			return nil, c.unexpected("TABLE or VIEW after SHOW CREATE")
		}
		name, nt, err := c.name("a " + strings.ToLower(sc.Kind) + " name")
		if err != nil {
			return nil, err
		}
		sc.Name, sc.NamePos = name, c.src.pos(nt.start)
		st = sc
	default:
		return nil, c.errorf(t, "unsupported statement SHOW %s; expected SHOW TABLES, VIEWS, FUNCTIONS, JOBS, CHECKPOINTS, SAVEPOINTS or CREATE TABLE|VIEW; see HELP",
			quoteUpper(c.src, t))
	}
	if err := c.expectEnd(); err != nil {
		return nil, err
	}
	return st, nil
}

// optionKey parses a SET/RESET key: a '...' literal or an unquoted dotted
// name such as table.exec.mini-batch.enabled.
func optionKey(c *cursor) (string, token, *Error) {
	t := c.peek()
	if t.kind == tString {
		c.next()
		return c.src.stringValue(t), t, nil
	}
	var sb strings.Builder
	for !c.atEnd() && !c.isOp("=") {
		k := c.peek()
		if sb.Len() > 0 && k.start != c.toks[c.i-1].end {
			break // a key is written without spaces
		}
		txt := c.src.tokText(k)
		if k.kind != tIdent && k.kind != tNumber && !(k.kind == tOp && (txt == "." || txt == "-")) {
			return "", t, c.errorf(k, "unexpected %s in option key (write the key in quotes: SET 'key' = 'value')", c.src.describe(k))
		}
		sb.WriteString(txt)
		c.next()
	}
	if sb.Len() == 0 {
		return "", t, c.unexpected("an option key")
	}
	return sb.String(), t, nil
}

func parseSet(c *cursor, base Base) (Statement, *Error) {
	c.next() // SET
	s := &Set{Base: base}
	if c.atEnd() {
		return s, nil
	}
	key, kt, err := optionKey(c)
	if err != nil {
		return nil, err
	}
	s.Key, s.KeyPos = key, c.src.pos(kt.start)
	if err := c.expectOp("="); err != nil {
		return nil, err
	}
	vt := c.peek()
	if c.atEnd() {
		return nil, c.unexpected("a value after =")
	}
	s.ValuePos = c.src.pos(vt.start)
	if vt.kind == tString && c.i == len(c.toks)-1 {
		s.Value = c.src.stringValue(vt)
		return s, nil
	}
	from, to := c.restRange()
	s.Value = strings.TrimSpace(c.src.text[from:to])
	return s, nil
}

func parseReset(c *cursor, base Base) (Statement, *Error) {
	c.next() // RESET
	r := &Reset{Base: base}
	if c.atEnd() {
		return r, nil
	}
	key, kt, err := optionKey(c)
	if err != nil {
		return nil, err
	}
	r.Key, r.KeyPos = key, c.src.pos(kt.start)
	if err := c.expectEnd(); err != nil {
		return nil, err
	}
	return r, nil
}

func parseExplain(c *cursor, base Base) (Statement, *Error) {
	c.next() // EXPLAIN
	if c.isWord("UPGRADE") {
		return parseExplainUpgrade(c, base)
	}
	c.acceptWords("PLAN", "FOR")
	if c.atEnd() {
		return nil, c.unexpected("a statement after EXPLAIN")
	}
	inner, err := parseStatement(c.src, c.toks[c.i:], c.end)
	if err != nil {
		return nil, err
	}
	switch inner.(type) {
	case *Select, *Insert, *StatementSet:
	default:
		return nil, &Error{Pos: inner.Position(), Msg: "EXPLAIN supports SELECT, INSERT and EXECUTE STATEMENT SET"}
	}
	return &Explain{Base: base, Stmt: inner}, nil
}

// parseExplainUpgrade parses UPGRADE FROM SAVEPOINT 'path' <INSERT |
// EXECUTE STATEMENT SET> after EXPLAIN.
func parseExplainUpgrade(c *cursor, base Base) (Statement, *Error) {
	c.next() // UPGRADE
	if err := c.expectWords("FROM", "SAVEPOINT"); err != nil {
		return nil, err
	}
	path, t, err := c.stringLit("a savepoint path in quotes, e.g. FROM SAVEPOINT '/savepoints/savepoint-a1b2c3-0f9e'")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(path) == "" {
		return nil, c.errorf(t, "empty savepoint path")
	}
	eu := &ExplainUpgrade{Base: base, Path: path, PathPos: c.src.pos(t.start)}
	if c.atEnd() {
		return nil, c.unexpected("INSERT or EXECUTE STATEMENT SET after the savepoint path")
	}
	inner, err := parseStatement(c.src, c.toks[c.i:], c.end)
	if err != nil {
		return nil, err
	}
	switch inner.(type) {
	case *Insert, *StatementSet:
	default:
		return nil, &Error{Pos: inner.Position(), Msg: "EXPLAIN UPGRADE supports INSERT and EXECUTE STATEMENT SET (the statements that run as jobs with savepoints)"}
	}
	eu.Stmt = inner
	return eu, nil
}

func parseInsert(c *cursor, base Base) (Statement, *Error) {
	c.next() // INSERT
	if c.isWord("OVERWRITE") {
		return nil, c.errorf(c.peek(), "INSERT OVERWRITE is not supported; use INSERT INTO")
	}
	if err := c.expectWords("INTO"); err != nil {
		return nil, err
	}
	ins := &Insert{Base: base}
	name, nt, err := c.name("a table name")
	if err != nil {
		return nil, err
	}
	ins.Table, ins.TablePos = name, c.src.pos(nt.start)
	// /*+ OPTIONS(...) */ right after the name; no other hint before the query.
	nameEnd := c.toks[c.i-1].end
	if ins.Options, ins.HintPos, err = tableHint(c.src, c.src.hintsIn(nameEnd, c.peek().start)); err != nil {
		return nil, err
	}
	if err := noHints(c.src, base.Pos.Offset, nt.start); err != nil {
		return nil, err
	}
	if c.isOp("(") {
		if ins.Columns, ins.ColumnPos, err = c.identListPos("a column name"); err != nil {
			return nil, err
		}
		if err := noHints(c.src, c.toks[c.i-1].end, c.peek().start); err != nil {
			return nil, err
		}
	}
	if c.atEnd() {
		return nil, c.unexpected("a query (SELECT ...)")
	}
	w := c.src.word(c.peek())
	if w != "SELECT" && w != "WITH" && w != "VALUES" && !c.isOp("(") {
		return nil, c.unexpected("a query (SELECT ...)")
	}
	from, to := c.restRange()
	if ins.Query, err = parseQuery(c.src, from, to); err != nil {
		return nil, err
	}
	return ins, nil
}

// parseStatementSet parses EXECUTE STATEMENT SET BEGIN ...; END and
// BEGIN STATEMENT SET; ...; END. split guarantees the block ends with END.
func parseStatementSet(c *cursor, base Base) (Statement, *Error) {
	if c.isWord("EXECUTE") {
		if err := c.expectWords("EXECUTE", "STATEMENT", "SET", "BEGIN"); err != nil {
			return nil, err
		}
	} else {
		if err := c.expectWords("BEGIN", "STATEMENT", "SET"); err != nil {
			return nil, err
		}
		c.acceptOp(";")
	}
	last := len(c.toks) - 1
	if last < c.i || c.src.word(c.toks[last]) != "END" {
		return nil, c.errorf(c.toks[last], "expected END to close the statement set, found %s", c.src.describe(c.toks[last]))
	}
	body := c.toks[c.i:last]
	set := &StatementSet{Base: base}
	start := 0
	flush := func(i, end int) *Error {
		if i == start {
			return nil
		}
		st, err := parseStatement(c.src, body[start:i], end)
		if err != nil {
			return err
		}
		ins, ok := st.(*Insert)
		if !ok {
			return &Error{Pos: st.Position(), Msg: "a statement set may contain only INSERT INTO statements"}
		}
		set.Inserts = append(set.Inserts, ins)
		return nil
	}
	for i, t := range body {
		if t.kind == tOp && c.src.tokText(t) == ";" {
			if err := flush(i, t.start); err != nil {
				return nil, err
			}
			start = i + 1
		}
	}
	if err := flush(len(body), c.toks[last].start); err != nil {
		return nil, err
	}
	if len(set.Inserts) == 0 {
		return nil, c.errorf(c.toks[last], "statement set has no INSERT INTO statements")
	}
	if err := func() *Error { c.i = last + 1; return c.expectEnd() }(); err != nil {
		return nil, err
	}
	return set, nil
}

func parseStopJob(c *cursor, base Base) (Statement, *Error) {
	c.next() // STOP
	if err := c.expectWords("JOB"); err != nil {
		return nil, err
	}
	id, _, err := c.stringLit("a job id in quotes, e.g. STOP JOB 'a1b2c3'")
	if err != nil {
		return nil, err
	}
	s := &StopJob{Base: base, ID: id}
	for !c.atEnd() {
		with := c.peek()
		if err := c.expectWords("WITH"); err != nil {
			return nil, err
		}
		switch {
		case c.isWord("SAVEPOINT") && !s.WithSavepoint:
			s.WithSavepoint = true
		case c.isWord("DRAIN") && !s.WithDrain:
			s.WithDrain = true
		default:
			return nil, c.errorf(with, "expected WITH SAVEPOINT or WITH DRAIN, found %s", c.src.describe(c.peek()))
		}
		c.next()
	}
	return s, nil
}

// jobIDLit consumes a job id in quotes.
func jobIDLit(c *cursor) (string, Pos, *Error) {
	id, t, err := c.stringLit("a job id in quotes, e.g. JOB 'a1b2c3'")
	if err != nil {
		return "", Pos{}, err
	}
	if strings.TrimSpace(id) == "" {
		return "", Pos{}, c.errorf(t, "empty job id; SHOW JOBS lists the ids")
	}
	return id, c.src.pos(t.start), nil
}

// forJob parses JOB 'id' after FOR.
func forJob(c *cursor) (string, Pos, *Error) {
	if err := c.expectWords("JOB"); err != nil {
		return "", Pos{}, err
	}
	return jobIDLit(c)
}

// parseCreateSavepoint parses FOR JOB 'id' [INTO 'dir'] after CREATE SAVEPOINT.
func parseCreateSavepoint(c *cursor, base Base) (Statement, *Error) {
	cs := &CreateSavepoint{Base: base}
	if err := c.expectWords("FOR"); err != nil {
		return nil, err
	}
	var err *Error
	if cs.JobID, cs.JobIDPos, err = forJob(c); err != nil {
		return nil, err
	}
	if c.acceptWords("INTO") {
		dir, t, err := c.stringLit("a directory in quotes, e.g. INTO '/var/lib/streamsql/savepoints'")
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(dir) == "" {
			return nil, c.errorf(t, "empty savepoint directory")
		}
		cs.Dir, cs.DirPos = dir, c.src.pos(t.start)
	}
	if err := c.expectEnd(); err != nil {
		return nil, err
	}
	return cs, nil
}
