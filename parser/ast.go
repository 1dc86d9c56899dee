package parser

import (
	"fmt"

	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Pos is a position in the user's original text (the whole script or shell
// input given to Parse). Offset is a byte offset into that text; Line and
// Col are 1-based, and Col counts characters (Unicode code points, not
// bytes) from the start of the line plus one. With ParseScriptAt, Line
// counts from the given first line, so that it is the line of the whole
// input the text came from.
type Pos struct {
	Offset int
	Line   int
	Col    int
}

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Error is a parse or analysis error at a position of the user's text.
// Error() renders "line:col: message"; callers that know the file name
// prefix it ("jobs/wc.sql:3:14: ...").
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("%d:%d: %s", e.Pos.Line, e.Pos.Col, e.Msg) }

// Statement is one parsed statement. Every statement knows where it starts
// and its exact original text.
type Statement interface {
	Position() Pos
	// SQL is the statement's original text (without the trailing ';').
	SQL() string
}

// Base carries what every statement has.
type Base struct {
	Pos  Pos
	Text string
}

func (b *Base) Position() Pos { return b.Pos }
func (b *Base) SQL() string   { return b.Text }

// TypeName is a SQL type as written, e.g. DECIMAL(10, 2). Name is upper-case.
// A ROW<name type, ...> (or ROW(name type, ...)) has Name "ROW" and its
// fields in Fields.
type TypeName struct {
	Name    string
	Args    []int
	Pos     Pos
	Fields  []FieldDef
	NotNull bool // a ROW field declared NOT NULL
}

// FieldDef is one field of a ROW type as written.
type FieldDef struct {
	Name    string
	Type    TypeName
	Pos     Pos
	Comment string
}

// Option is one 'key' = 'value' pair of a WITH (...) clause or a SET.
type Option struct {
	Key      string
	Value    string
	KeyPos   Pos
	ValuePos Pos
}

// ColumnDef is a physical column of CREATE TABLE.
//
// Two Flink column forms are also parsed (the catalog must support or
// reject them): a computed column `name AS expr` (Computed != nil, Type is
// empty) and a metadata column `name TYPE METADATA [FROM 'key'] [VIRTUAL]`
// (Metadata true; MetadataKey empty means the column name is the key).
type ColumnDef struct {
	Name    string
	Type    TypeName
	NotNull bool
	Pos     Pos

	Comment     string
	Computed    *Expr
	Metadata    bool
	MetadataKey string
	Virtual     bool
}

// WatermarkDef is WATERMARK FOR col AS expr.
type WatermarkDef struct {
	Column string
	Expr   *Expr // e.g. ts - INTERVAL '5' SECOND
	Pos    Pos
}

// Expr is a standalone scalar expression (e.g. of a WATERMARK clause), parsed
// by the TiDB parser with the same rewrites as a query.
type Expr struct {
	Node ast.ExprNode
	Ctx  *QueryContext
	// Text is the expression's original text.
	Text string
}

// CreateTable is CREATE TABLE [IF NOT EXISTS] name (cols, [WATERMARK FOR ...],
// [PRIMARY KEY (..) NOT ENFORCED]) WITH ('k' = 'v', ...).
type CreateTable struct {
	Base
	Name        string
	NamePos     Pos
	IfNotExists bool
	Temporary   bool
	Columns     []ColumnDef
	Watermark   *WatermarkDef
	PrimaryKey  []string
	// PrimaryKeyPos[i] is where PrimaryKey[i] is written.
	PrimaryKeyPos []Pos
	// PartitionKeys are the columns of PARTITIONED BY (...), at
	// PartitionKeyPos.
	PartitionKeys   []string
	PartitionKeyPos []Pos
	Options         []Option
	Comment         string // table COMMENT '...'
}

// CreateView is CREATE [TEMPORARY] VIEW [IF NOT EXISTS] name [(cols)] AS query.
type CreateView struct {
	Base
	Name        string
	NamePos     Pos
	Temporary   bool
	IfNotExists bool
	Columns     []string
	Query       *Query
}

// Drop is DROP [TEMPORARY] TABLE|VIEW [IF EXISTS] name.
type Drop struct {
	Base
	Kind     string // "TABLE" or "VIEW"
	Name     string
	NamePos  Pos
	IfExists bool
}

// ShowTables is SHOW TABLES. ShowViews is SHOW VIEWS.
type ShowTables struct{ Base }
type ShowViews struct{ Base }

// ShowFunctions is SHOW FUNCTIONS.
type ShowFunctions struct{ Base }

// ShowCreate is SHOW CREATE TABLE|VIEW name.
type ShowCreate struct {
	Base
	Kind    string // "TABLE" or "VIEW"
	Name    string
	NamePos Pos
}

// Describe is DESCRIBE name / DESC name.
type Describe struct {
	Base
	Name    string
	NamePos Pos
}

// Set is SET 'key' = 'value', or a bare SET (Key == "") that lists options.
type Set struct {
	Base
	Key      string
	Value    string
	KeyPos   Pos
	ValuePos Pos
}

// Reset is RESET 'key' or a bare RESET (Key == "": every option).
type Reset struct {
	Base
	Key    string
	KeyPos Pos
}

// Explain is EXPLAIN [PLAN FOR] <SELECT | INSERT | EXECUTE STATEMENT SET>.
type Explain struct {
	Base
	Stmt Statement // *Select, *Insert or *StatementSet
}

// ExplainUpgrade is EXPLAIN UPGRADE FROM SAVEPOINT 'path' <INSERT | EXECUTE
// STATEMENT SET>: the compatibility report of the statement's plan against
// the operators recorded in the savepoint (the job is not started).
type ExplainUpgrade struct {
	Base
	Path    string
	PathPos Pos
	Stmt    Statement // *Insert or *StatementSet
}

// Select is a continuous query whose results go to the client.
type Select struct {
	Base
	Query *Query
}

// Insert is INSERT INTO table [/*+ OPTIONS('k' = 'v') */] [(cols)] query.
type Insert struct {
	Base
	Table    string
	TablePos Pos
	Columns  []string
	// ColumnPos[i] is where Columns[i] is written.
	ColumnPos []Pos
	// Options are the sink table's dynamic options (an OPTIONS hint right
	// after the table name), to merge over its WITH options; HintPos is
	// the hint's position.
	Options []Option
	HintPos Pos
	Query   *Query
}

// StatementSet is EXECUTE STATEMENT SET BEGIN insert; ... END (also accepted:
// BEGIN STATEMENT SET; ... END;).
type StatementSet struct {
	Base
	Inserts []*Insert
}

// ShowJobs is SHOW JOBS.
type ShowJobs struct{ Base }

// ShowCheckpoints is SHOW CHECKPOINTS [FOR JOB 'id'] (JobID empty: every
// job of the session).
type ShowCheckpoints struct {
	Base
	JobID    string
	JobIDPos Pos
}

// ShowSavepoints is SHOW SAVEPOINTS [FOR JOB 'id'].
type ShowSavepoints struct {
	Base
	JobID    string
	JobIDPos Pos
}

// CreateSavepoint is CREATE SAVEPOINT FOR JOB 'id' [INTO 'dir'] (Dir empty:
// state.savepoints.dir).
type CreateSavepoint struct {
	Base
	JobID    string
	JobIDPos Pos
	Dir      string
	DirPos   Pos
}

// DescribeJob is DESCRIBE JOB 'id' (DESC JOB 'id').
type DescribeJob struct {
	Base
	JobID    string
	JobIDPos Pos
}

// StopJob is STOP JOB 'id' [WITH SAVEPOINT] [WITH DRAIN].
type StopJob struct {
	Base
	ID            string
	WithSavepoint bool
	WithDrain     bool
}

// Help is HELP. Quit is QUIT or EXIT.
type Help struct{ Base }
type Quit struct{ Base }

// Query is a SELECT (or UNION) handed to the TiDB parser after the pre-lexer's
// rewrites. Node is *ast.SelectStmt or *ast.SetOprStmt.
type Query struct {
	Node ast.ResultSetNode
	Ctx  *QueryContext
}

// TableFunc is a table function call in FROM, written by the user as
//
//	, LATERAL TABLE(SPLIT(line, ' ')) AS T(word)
//	CROSS JOIN LATERAL TABLE(SPLIT(line)) AS T(word)
//	CROSS JOIN UNNEST(SPLIT(line, ' ')) AS T(word)
//
// The pre-lexer replaces the call in the text given to TiDB by a table name
// (see QueryContext.TableFunc) and parses the arguments separately.
type TableFunc struct {
	Name    string // upper-case function name, e.g. "SPLIT"
	Args    []ast.ExprNode
	Alias   string   // T; may be empty
	Columns []string // word; may be empty
	Pos     Pos
	// Kind is how it was written: "LATERAL" (LATERAL TABLE(F(..))), "UNNEST"
	// (UNNEST(expr): Name is "UNNEST", Args has one element) or "TABLE"
	// (FROM TABLE(F(..)), e.g. a window TVF; an argument written TABLE t
	// appears as an *ast.ColumnNameExpr naming t, DESCRIPTOR(c) as a
	// FuncCallExpr "descriptor").
	Kind string
	// ArgNames are the names of named arguments (DATA => TABLE t), by
	// argument; "" for a positional one. Nil when there are none.
	ArgNames []string
	// PartitionBy are the columns of TABLE t PARTITION BY k (or (k1, k2)).
	PartitionBy []string
}

// TableRef is a table (or view) name in a FROM clause, as written. TiDB's
// table nodes carry no positions, so the pre-lexer gives every such name to
// TiDB as `__ssql_ref_<i>`.`name` and QueryContext.TableRef finds the
// TableRef of an *ast.TableName again.
type TableRef struct {
	Name string // the name itself (the last part of a qualified name)
	// Qualifiers are the catalog and database parts written before the
	// name (c.d.t gives [c d]); QualifierPos is where they start.
	Qualifiers   []string
	QualifierPos Pos
	Pos          Pos // where Name is written
	// JoinPos is the ',' or the first word of the JOIN (LEFT, CROSS, ...)
	// that puts this table into its FROM clause; Line 0 for the first
	// table of a FROM.
	JoinPos Pos
	// Options are dynamic table options, /*+ OPTIONS('k' = 'v', ...) */
	// written right after the name (Flink's syntax), to be merged over the
	// table's WITH options; HintPos is where the hint starts.
	Options []Option
	HintPos Pos
}

// QueryContext holds what the pre-lexer learned about a statement's text and
// maps positions back to the user's original text.
type QueryContext struct {
	impl queryContextImpl
}

// queryContextImpl is implemented by the pre-lexer.
type queryContextImpl interface {
	castType(e *ast.FuncCastExpr) (TypeName, bool)
	isTryCast(e *ast.FuncCastExpr) bool
	tableFunc(tn *ast.TableName) (*TableFunc, bool)
	locate(word string, after int) Pos
	startPos() Pos
	uidHint(sel *ast.SelectStmt) (string, Pos, bool)
	tableRef(tn *ast.TableName) (*TableRef, bool)
	nodePos(n ast.Node) (Pos, bool)
	tokenBefore(n ast.Node) (string, Pos, bool)
	nullSafeEqual(e *ast.BinaryOperationExpr) (distinct bool, at Pos, ok bool)
	aggFilter(n ast.Node) (ast.ExprNode, Pos, bool)
}

// AggFilter returns the condition of agg(...) FILTER (WHERE cond) written
// after the aggregate call a, and where FILTER is.
func (c *QueryContext) AggFilter(a ast.Node) (cond ast.ExprNode, at Pos, ok bool) {
	return c.impl.aggFilter(a)
}

// CastType returns the Flink type written in a CAST (TiDB's grammar only
// knows MySQL cast targets, so the pre-lexer rewrites them).
func (c *QueryContext) CastType(e *ast.FuncCastExpr) (TypeName, bool) { return c.impl.castType(e) }

// IsTryCast reports whether the user wrote TRY_CAST (NULL instead of an
// error when the value cannot be converted).
func (c *QueryContext) IsTryCast(e *ast.FuncCastExpr) bool { return c.impl.isTryCast(e) }

// TableFunc returns the table function that the pre-lexer replaced by tn, if any.
func (c *QueryContext) TableFunc(tn *ast.TableName) (*TableFunc, bool) { return c.impl.tableFunc(tn) }

// Locate returns the position in the original text of the first occurrence of
// word (an identifier or keyword, matched case-insensitively on word
// boundaries, outside string literals and comments) in this statement, or the
// statement's start if it does not occur. Used for semantic errors
// ("unknown column"), since TiDB's expression nodes carry no positions.
func (c *QueryContext) Locate(word string) Pos { return c.impl.locate(word, 0) }

// LocateNth returns the position of the n-th (1-based) occurrence of word
// (the last one when there are fewer).
func (c *QueryContext) LocateNth(word string, n int) Pos {
	at := c.impl.locate(word, 0)
	for i := 1; i < n; i++ {
		next := c.impl.locate(word, at.Offset+1)
		if next.Offset <= at.Offset {
			break
		}
		at = next
	}
	return at
}

// Start returns the position of the statement's first character.
func (c *QueryContext) Start() Pos { return c.impl.startPos() }

// UIDHint returns the operator id pinned by a /*+ UID('name') */ hint
// written right after sel's SELECT keyword, and the hint's position.
func (c *QueryContext) UIDHint(sel *ast.SelectStmt) (name string, pos Pos, ok bool) {
	return c.impl.uidHint(sel)
}

// TableRef returns what the user wrote for a table name of a FROM clause:
// its position, qualifiers and OPTIONS hint.
func (c *QueryContext) TableRef(tn *ast.TableName) (*TableRef, bool) { return c.impl.tableRef(tn) }

// PosOf returns where expression n starts in the original text (its first
// token), or the statement's start for a node without a position (TiDB
// records positions of expressions only).
func (c *QueryContext) PosOf(n ast.Node) Pos {
	if n != nil {
		if p, ok := c.impl.nodePos(n); ok {
			return p
		}
	}
	return c.Start()
}

// HasPos reports whether PosOf(n) is n's own position rather than the
// statement's start.
func (c *QueryContext) HasPos(n ast.Node) bool {
	if n == nil {
		return false
	}
	_, ok := c.impl.nodePos(n)
	return ok
}

// TokenBefore returns the code token (no comments) just before expression
// n in the original text, upper-cased when it is a word, and its position;
// ok is false when n has no position or nothing precedes it. The planner
// uses it to place errors about binary operators at the operator (the token
// before the right operand).
func (c *QueryContext) TokenBefore(n ast.Node) (text string, pos Pos, ok bool) {
	return c.impl.tokenBefore(n)
}

// NullSafeEqual reports, for e with Op opcode.NullEQ, whether the user
// wrote a IS DISTINCT FROM b (distinct true) or a IS NOT DISTINCT FROM b
// (distinct false), and where its IS is; the pre-lexer gives both to TiDB
// as a <=> b. ok is false when the user wrote MySQL's <=> itself.
func (c *QueryContext) NullSafeEqual(e *ast.BinaryOperationExpr) (distinct bool, at Pos, ok bool) {
	return c.impl.nullSafeEqual(e)
}

// ErrorAt builds an *Error at PosOf(n).
func (c *QueryContext) ErrorAt(n ast.Node, format string, args ...any) *Error {
	return &Error{Pos: c.PosOf(n), Msg: fmt.Sprintf(format, args...)}
}

// Errorf builds an *Error at the first occurrence of word (or the statement
// start when word is empty).
func (c *QueryContext) Errorf(word, format string, args ...any) *Error {
	p := c.Start()
	if word != "" {
		p = c.Locate(word)
	}
	return &Error{Pos: p, Msg: fmt.Sprintf(format, args...)}
}
