package parser

import (
	"strconv"
	"strings"
)

// parseCreateTable parses the rest of CREATE [TEMPORARY] TABLE with a small
// recursive-descent parser (TiDB's grammar does not know Flink's DDL).
func parseCreateTable(c *cursor, base Base, temporary bool) (Statement, *Error) {
	ct := &CreateTable{Base: base, Temporary: temporary}
	if c.isWord("IF") {
		if err := c.expectWords("IF", "NOT", "EXISTS"); err != nil {
			return nil, err
		}
		ct.IfNotExists = true
	}
	name, nt, err := c.name("a table name")
	if err != nil {
		return nil, err
	}
	ct.Name, ct.NamePos = name, c.src.pos(nt.start)
	switch {
	case c.isWord("LIKE"):
		return nil, c.errorf(c.peek(), "CREATE TABLE ... LIKE is not supported yet; list the columns")
	case c.isWord("AS"):
		return nil, ctasError(c, name)
	case c.isWord("WITH"):
		// CREATE TABLE t WITH (...) AS SELECT: Flink's CTAS without columns.
		c.next()
		if _, err := parseOptions(c); err != nil {
			return nil, err
		}
		if c.isWord("AS") {
			return nil, ctasError(c, name)
		}
		return nil, &Error{Pos: ct.NamePos, Msg: "expected the column list after the table name, e.g. CREATE TABLE " + name + " (id INT, name STRING) WITH (...)"}
	}
	if err := c.expectOp("("); err != nil {
		return nil, err
	}
	for {
		switch {
		case c.isWord("WATERMARK"):
			if err := parseWatermark(c, ct); err != nil {
				return nil, err
			}
		case c.isWord("PRIMARY"), c.isWord("CONSTRAINT"):
			if err := parseTablePrimaryKey(c, ct); err != nil {
				return nil, err
			}
		default:
			if err := parseColumn(c, ct); err != nil {
				return nil, err
			}
		}
		if c.acceptOp(",") {
			continue
		}
		if c.acceptOp(")") {
			break
		}
		return nil, c.unexpected(`"," or ")"`)
	}
	if len(ct.Columns) == 0 {
		return nil, &Error{Pos: ct.NamePos, Msg: "table " + ct.Name + " has no columns"}
	}
	if c.isWord("COMMENT") {
		c.next()
		if ct.Comment, _, err = c.stringLit("a comment in quotes"); err != nil {
			return nil, err
		}
	}
	if c.isWord("PARTITIONED") {
		c.next()
		if err := c.expectWords("BY"); err != nil {
			return nil, err
		}
		if ct.PartitionKeys, ct.PartitionKeyPos, err = c.identListPos("a partition column name"); err != nil {
			return nil, err
		}
	}
	if c.isWord("WITH") {
		c.next()
		if ct.Options, err = parseOptions(c); err != nil {
			return nil, err
		}
	}
	if c.isWord("AS") {
		return nil, ctasError(c, name)
	}
	if err := c.expectEnd(); err != nil {
		return nil, err
	}
	return ct, nil
}

// ctasError reports CREATE TABLE ... AS SELECT at its AS.
func ctasError(c *cursor, name string) *Error {
	return c.errorf(c.peek(), "CREATE TABLE ... AS SELECT is not supported yet; create the table with its columns, then INSERT INTO %s SELECT ...", name)
}

func (ct *CreateTable) hasColumn(name string) bool {
	for _, col := range ct.Columns {
		if strings.EqualFold(col.Name, name) {
			return true
		}
	}
	return false
}

func parseColumn(c *cursor, ct *CreateTable) *Error {
	name, nt, err := c.ident("a column name, WATERMARK or PRIMARY KEY")
	if err != nil {
		return err
	}
	if ct.hasColumn(name) {
		return c.errorf(nt, "duplicate column %s", name)
	}
	col := ColumnDef{Name: name, Pos: c.src.pos(nt.start)}
	if c.isWord("AS") {
		c.next()
		from, to, err := exprRange(c, true)
		if err != nil {
			return err
		}
		if col.Computed, err = parseExpr(c.src, from, to); err != nil {
			return err
		}
	} else {
		if col.Type, err = parseType(c); err != nil {
			return err
		}
	}
	for {
		switch {
		case c.isWord("NOT") && c.isWordN(1, "NULL"):
			c.i += 2
			col.NotNull = true
		case c.isWord("NULL"):
			c.next()
		case c.isWord("PRIMARY"):
			pt := c.peek()
			if err := c.expectWords("PRIMARY", "KEY"); err != nil {
				return err
			}
			if err := expectNotEnforced(c, pt); err != nil {
				return err
			}
			if ct.PrimaryKey != nil {
				return c.errorf(pt, "table %s has more than one PRIMARY KEY", ct.Name)
			}
			ct.PrimaryKey, ct.PrimaryKeyPos = []string{name}, []Pos{col.Pos}
		case c.isWord("COMMENT"):
			c.next()
			if col.Comment, _, err = c.stringLit("a comment in quotes"); err != nil {
				return err
			}
		case c.isWord("METADATA") && col.Computed == nil:
			c.next()
			col.Metadata = true
			if c.isWord("FROM") {
				c.next()
				if col.MetadataKey, _, err = c.stringLit("a metadata key in quotes"); err != nil {
					return err
				}
			}
		case c.isWord("VIRTUAL") && col.Metadata:
			c.next()
			col.Virtual = true
		default:
			ct.Columns = append(ct.Columns, col)
			return nil
		}
	}
}

func expectNotEnforced(c *cursor, at token) *Error {
	if !c.acceptWords("NOT", "ENFORCED") {
		return c.errorf(at, "PRIMARY KEY must be declared NOT ENFORCED (the engine does not own the data, so it cannot enforce the key)")
	}
	return nil
}

func parseTablePrimaryKey(c *cursor, ct *CreateTable) *Error {
	pt := c.peek()
	if c.isWord("CONSTRAINT") {
		c.next()
		if _, _, err := c.ident("a constraint name"); err != nil {
			return err
		}
	}
	if err := c.expectWords("PRIMARY", "KEY"); err != nil {
		return err
	}
	cols, pos, err := c.identListPos("a column name")
	if err != nil {
		return err
	}
	if err := expectNotEnforced(c, pt); err != nil {
		return err
	}
	if ct.PrimaryKey != nil {
		return c.errorf(pt, "table %s has more than one PRIMARY KEY", ct.Name)
	}
	ct.PrimaryKey, ct.PrimaryKeyPos = cols, pos
	return nil
}

func parseWatermark(c *cursor, ct *CreateTable) *Error {
	wt := c.next() // WATERMARK
	if ct.Watermark != nil {
		return c.errorf(wt, "table %s has more than one WATERMARK", ct.Name)
	}
	if err := c.expectWords("FOR"); err != nil {
		return err
	}
	col, _, err := c.ident("the event-time column name")
	if err != nil {
		return err
	}
	if err := c.expectWords("AS"); err != nil {
		return err
	}
	from, to, err := exprRange(c, false)
	if err != nil {
		return err
	}
	e, err := parseExpr(c.src, from, to)
	if err != nil {
		return err
	}
	ct.Watermark = &WatermarkDef{Column: col, Expr: e, Pos: c.src.pos(wt.start)}
	return nil
}

// exprRange consumes an expression inside the column list: everything up to
// a ',' or ')' at nesting depth 0 (and, for computed columns, a trailing
// COMMENT '...'). It returns the original byte range.
func exprRange(c *cursor, stopAtComment bool) (int, int, *Error) {
	start := c.i
	depth := 0
loop:
	for !c.atEnd() {
		t := c.peek()
		if t.kind == tOp {
			switch c.src.tokText(t) {
			case "(":
				depth++
			case ")":
				if depth == 0 {
					break loop
				}
				depth--
			case ",":
				if depth == 0 {
					break loop
				}
			}
		}
		if depth == 0 && stopAtComment && c.isWord("COMMENT") && c.peekN(1).kind == tString {
			break
		}
		c.next()
	}
	if c.i == start {
		return 0, 0, c.unexpected("an expression")
	}
	return c.toks[start].start, c.toks[c.i-1].end, nil
}

// parseOptions parses ( 'k' = 'v', ... ).
func parseOptions(c *cursor) ([]Option, *Error) {
	if err := c.expectOp("("); err != nil {
		return nil, err
	}
	var opts []Option
	if c.acceptOp(")") {
		return opts, nil
	}
	seen := map[string]bool{}
	for {
		key, kt, err := optionKey(c)
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, c.errorf(kt, "duplicate option '%s'", key)
		}
		seen[key] = true
		if err := c.expectOp("="); err != nil {
			return nil, err
		}
		vt := c.peek()
		var val string
		switch vt.kind {
		case tString:
			val = c.src.stringValue(vt)
		case tNumber, tIdent:
			val = c.src.tokText(vt)
		default:
			return nil, c.unexpected("a value in quotes for option '" + key + "'")
		}
		c.next()
		opts = append(opts, Option{Key: key, Value: val, KeyPos: c.src.pos(kt.start), ValuePos: c.src.pos(vt.start)})
		if c.acceptOp(",") {
			continue
		}
		if err := c.expectOp(")"); err != nil {
			return nil, err
		}
		return opts, nil
	}
}

// parseType parses a type as written: NAME [(n [, m])], plus the multi-word
// forms DOUBLE PRECISION, CHARACTER VARYING and
// TIMESTAMP[(p)] WITH[OUT] [LOCAL] TIME ZONE, and the nested ROW<name type
// [NOT NULL] [COMMENT '...'], ...> (also written ROW(...)). Names are not
// validated here.
func parseType(c *cursor) (TypeName, *Error) {
	t := c.peek()
	if t.kind != tIdent {
		return TypeName{}, c.unexpected("a type name")
	}
	c.next()
	tn := TypeName{Name: c.src.word(t), Pos: c.src.pos(t.start)}
	switch {
	case tn.Name == "DOUBLE" && c.isWord("PRECISION"):
		c.next()
	case (tn.Name == "CHARACTER" || tn.Name == "CHAR") && c.isWord("VARYING"):
		c.next()
		tn.Name = "VARCHAR"
	}
	if tn.Name == "ROW" && (c.isOp("<") || c.isOp("(")) {
		return parseRowType(c, tn)
	}
	if c.isOp("(") {
		c.next()
		for {
			at := c.peek()
			if at.kind != tNumber || !allDigits(c.src.tokText(at)) {
				return TypeName{}, c.unexpected("a number in the type's arguments")
			}
			n, err := strconv.Atoi(c.src.tokText(at))
			if err != nil || n > 1<<30 {
				return TypeName{}, c.errorf(at, "type argument %s is too large", c.src.tokText(at))
			}
			c.next()
			tn.Args = append(tn.Args, n)
			if c.acceptOp(",") {
				continue
			}
			if err := c.expectOp(")"); err != nil {
				return TypeName{}, err
			}
			break
		}
	}
	if tn.Name == "TIMESTAMP" || tn.Name == "TIME" {
		switch {
		case c.acceptWords("WITH", "LOCAL", "TIME", "ZONE"):
			tn.Name += "_LTZ"
		case c.acceptWords("WITHOUT", "TIME", "ZONE"):
		case c.isWord("WITH") && c.isWordN(1, "TIME"):
			return TypeName{}, c.errorf(c.peek(), "TIMESTAMP WITH TIME ZONE is not supported; use TIMESTAMP_LTZ (TIMESTAMP WITH LOCAL TIME ZONE)")
		}
	}
	if c.isOp("<") {
		return TypeName{}, c.errorf(c.peek(), "nested type %s<...> is not supported (only ROW<...>)", tn.Name)
	}
	return tn, nil
}

// parseRowType parses the fields of ROW<...> or ROW(...); the cursor is at
// the '<' or '('.
func parseRowType(c *cursor, tn TypeName) (TypeName, *Error) {
	closer := ">"
	if c.isOp("(") {
		closer = ")"
	}
	c.next()
	for {
		if len(tn.Fields) == 0 && c.acceptCloser(closer) {
			return TypeName{}, c.errorf(c.toks[c.i-1], "a ROW type needs at least one field")
		}
		name, nt, err := c.ident("a field name")
		if err != nil {
			return TypeName{}, err
		}
		for _, f := range tn.Fields {
			if strings.EqualFold(f.Name, name) {
				return TypeName{}, c.errorf(nt, "duplicate field %s in ROW type", name)
			}
		}
		ft, err := parseType(c)
		if err != nil {
			return TypeName{}, err
		}
		fd := FieldDef{Name: name, Type: ft, Pos: c.src.pos(nt.start)}
		if c.isWord("NOT") && c.isWordN(1, "NULL") {
			c.i += 2
			fd.Type.NotNull = true
		} else if c.isWord("NULL") {
			c.next()
		}
		if c.isWord("COMMENT") && c.peekN(1).kind == tString {
			c.next()
			fd.Comment, _, _ = c.stringLit("a comment")
		}
		tn.Fields = append(tn.Fields, fd)
		if c.acceptOp(",") {
			continue
		}
		if c.acceptCloser(closer) {
			return tn, nil
		}
		return TypeName{}, c.unexpected(`"," or "` + closer + `"`)
	}
}
