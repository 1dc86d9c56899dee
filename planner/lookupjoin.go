package planner

// Planning of lookup joins (Flink's LookupJoin) and the check of
// event-time temporal joins.
//
//	FROM o JOIN dim FOR SYSTEM_TIME AS OF o.proc_time [AS] d ON o.k = d.k
//
// with o.proc_time a processing-time attribute of the left side joins each
// left row with the rows dim holds when the row is processed: dim is read
// by the operator (exec/lookupjoin.go), not as a stream, into an in-memory
// index by the join key, reloaded after 'lookup.join.cache.ttl' (Flink's
// filesystem lookup option). INNER and LEFT; append-only when the left side
// is; no state but the cache. The parser rewrites FOR SYSTEM_TIME AS OF to
// TiDB's AS OF TIMESTAMP (TableName.AsOf).

import (
	"fmt"
	"strings"
	"time"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// relLookupJoin is a lookup join of rel.input with a dimension table
// (rel.join.timed is its *LookupJoinOp).
const relLookupJoin relKind = 130

// LookupJoinOp joins each row of its input with the rows of the dimension
// table Table whose DimKeys equal its LeftKeys (a NULL key matches
// nothing) and for which Residual (over left ++ dim columns) is TRUE; a
// LEFT join pads a row without a match. Chained after its input (no
// exchange, no state). Output: the input's columns then the table's.
type LookupJoinOp struct {
	ID        string
	Type      JoinType // InnerJoin or LeftJoin
	Table     *catalog.Table
	DimSchema catalog.Schema
	LeftKeys  []int
	DimKeys   []int
	Residual  Expr
	Out       catalog.Schema
	Mode      ChangelogMode
	// CacheTTL is how long the loaded table is used before it is read
	// again ('lookup.join.cache.ttl', default 60 min).
	CacheTTL time.Duration
}

func (o *LookupJoinOp) OpID() string { return o.ID }
func (o *LookupJoinOp) Describe() string {
	var conds []string
	for i := range o.LeftKeys {
		conds = append(conds, fmt.Sprintf("%s = %s", o.Out[o.LeftKeys[i]].Name, o.DimSchema[o.DimKeys[i]].Name))
	}
	if o.Residual != nil {
		conds = append(conds, o.Residual.String())
	}
	return fmt.Sprintf("LookupJoin(table=[%s], joinType=[%s], lookup=[%s], select=[%s])",
		o.Table.Name, o.Type, strings.Join(conds, " AND "), strings.Join(o.Out.Names(), ", "))
}

// lookupJoin plans x as a lookup join when its right side is a table FOR
// SYSTEM_TIME AS OF a time attribute of the left side (ok false: not a
// temporal join). right is the right side as built (a scan of the table).
func (p *Planner) lookupJoin(x *ast.Join, left, right *rel, typ JoinType, at parser.Pos, ctx *parser.QueryContext) (*rel, bool, error) {
	ts, isTS := x.Right.(*ast.TableSource)
	if !isTS {
		return nil, false, nil
	}
	tn, isTN := ts.Source.(*ast.TableName)
	if !isTN || tn.AsOf == nil {
		return nil, false, nil
	}
	fail := func(format string, args ...any) (*rel, bool, error) {
		return nil, true, &parser.Error{Pos: at, Msg: fmt.Sprintf(format, args...)}
	}
	if right.kind != relScan || right.table == nil {
		return fail("FOR SYSTEM_TIME AS OF needs a table, and '%s' is not one", tn.Name.O)
	}
	t := right.table
	// The time: a time attribute of the left side.
	b := &exprBuilder{p: p, ctx: ctx, in: left, clause: "FOR SYSTEM_TIME AS OF"}
	te, err := b.build(tn.AsOf.TsExpr)
	if err != nil {
		return nil, true, err
	}
	col, isCol := te.(*ColRef)
	if !isCol || col.Index >= len(left.schema) || !timeAttrs(left)[col.Index] {
		return fail("FOR SYSTEM_TIME AS OF must name a time attribute of the left table (a processing-time or event-time column), got %s", te)
	}
	if !procTimeAttr(left, col.Index) {
		if len(t.PrimaryKey) > 0 && t.Watermark != nil {
			return p.temporalJoin(x, left, right, t, col.Index, typ, at, ctx) // temporaljoin.go
		}
		return fail("an event-time temporal join needs a versioned table: '%s' has no PRIMARY KEY and WATERMARK (for a lookup join, use a processing-time attribute: FOR SYSTEM_TIME AS OF o.proc_time with proc_time AS PROCTIME())", t.Name)
	}
	if t.Connector() != "filesystem" {
		return fail("connector '%s' of table '%s' does not support lookup joins (the filesystem connector does)", t.Connector(), t.Name)
	}
	if typ != InnerJoin && typ != LeftJoin {
		return fail("a lookup join is INNER or LEFT, not %s", typ)
	}
	if left.mode != InsertOnly {
		return fail("a lookup join needs an insert-only input; the left side is updating because of %s", left.updatingNode())
	}
	if x.On == nil {
		return fail("a lookup join needs an equality condition: ON o.k = %s.k", tn.Name.O)
	}
	j := joinOf(left, right, typ, at)
	left = j.input
	nl := len(left.schema)
	cb := &exprBuilder{p: p, ctx: ctx, in: j, clause: "ON"}
	cond, err := cb.build(x.On.Expr)
	if err != nil {
		return nil, true, err
	}
	if k := cond.Type().Kind; k != catalog.KindBoolean && k != catalog.KindNull {
		return nil, true, exprErr(ctx, x.On.Expr, "ON", "the join condition must be BOOLEAN, got %s", cond.Type())
	}
	var lkeys []Expr
	var dkeys []int
	var rest []Expr
	for _, c := range conjunctsOf(cond) {
		if a, d, ns, ok := equiPair(c, nl); ok && !ns {
			if dc, isCol := d.(*ColRef); isCol {
				lkeys, dkeys = append(lkeys, a), append(dkeys, dc.Index-nl)
				continue
			}
		}
		rest = append(rest, c)
	}
	if len(dkeys) == 0 {
		return fail("a lookup join needs an equality between the left side and a column of '%s' in ON", t.Name)
	}
	dtypes := make([]catalog.Type, len(dkeys))
	for i, d := range dkeys {
		dtypes[i] = t.Schema[d].Type
	}
	kl, err := keyLeft(left, lkeys, dtypes, rest, t.Schema, j.quals[nl:], typ)
	if err != nil {
		ke := err.(*keyTypeError)
		return fail("cannot look up %s with %s: %v", ke.want, ke.got, ke.err)
	}
	ext2, lk, residual, out, quals := kl.left, kl.keys, kl.residual, kl.out, kl.quals
	ttl := 60 * time.Minute
	if v, ok := t.Option("lookup.join.cache.ttl"); ok {
		d, err := catalog.ParseDuration(v)
		if err != nil {
			return fail("option 'lookup.join.cache.ttl' of table '%s': %v", t.Name, err)
		}
		ttl = d
	}
	op := &LookupJoinOp{Type: typ, Table: t, DimSchema: t.Schema, LeftKeys: lk, DimKeys: dkeys, Residual: residual,
		Out: out, Mode: left.mode, CacheTTL: ttl}
	r := &rel{kind: relLookupJoin, input: ext2, schema: out, quals: quals, mode: left.mode,
		join: &joinRel{typ: typ, pos: at, timed: op}, describ: op.Describe()}
	return kl.dropKeys(r, nl, j), true, nil
}

// buildLookupJoin chains the lookup join after its input's task.
func (b *physBuilder) buildLookupJoin(r *rel) *Task {
	op := r.join.timed.(*LookupJoinOp)
	t := b.build(r.input)
	t.Ops = append(t.Ops, op)
	op.ID = b.id(t, op.Describe())
	t.OutSchema, t.OutMode = r.schema, r.mode
	return t
}

// keyedLeft is the left side of a lookup or temporal join with its keys
// cast to the right side's key types.
type keyedLeft struct {
	left     *rel  // the left side, extended by the computed key columns
	keys     []int // the key columns of left
	residual Expr  // over left ++ right columns
	out      catalog.Schema
	quals    []string
}

// keyTypeError: a left key cannot be cast to the right key's type.
type keyTypeError struct {
	want, got catalog.Type
	err       error
}

func (e *keyTypeError) Error() string { return e.err.Error() }

// keyLeft computes the left keys lkeys as columns of the right key types
// (a Calc on the left when they are expressions or typed differently),
// moves the residual conjuncts rest (over left ++ right) past the added
// columns and lays out the output: the extended left columns, then the
// right ones (nullable for a LEFT join). rquals are the right columns'
// qualifiers.
func keyLeft(left *rel, lkeys []Expr, rtypes []catalog.Type, rest []Expr, right catalog.Schema, rquals []string, typ JoinType) (keyedLeft, error) {
	nl := len(left.schema)
	var ext []Expr
	var kl keyedLeft
	for i, e := range lkeys {
		k, err := keyColumn(e, rtypes[i], nl, &ext)
		if err != nil {
			return kl, &keyTypeError{want: rtypes[i], got: e.Type(), err: err}
		}
		kl.keys = append(kl.keys, k)
	}
	kl.left = extendRel(left, ext)
	kl.residual = andOf(rest)
	if kl.residual != nil && len(ext) > 0 {
		kl.residual = shiftCols(kl.residual, nl, len(ext))
	}
	kl.out = append(kl.out, kl.left.schema...)
	kl.quals = append(kl.quals, kl.left.quals...)
	for i, c := range right {
		if typ == LeftJoin {
			c.Type = c.Type.Nullable()
		}
		kl.out = append(kl.out, c)
		kl.quals = append(kl.quals, rquals[i])
	}
	return kl, nil
}

// dropKeys returns join r without the computed key columns of its left
// side: as j (the join as written, whose left side has nl columns).
func (kl keyedLeft) dropKeys(r *rel, nl int, j *rel) *rel {
	if len(kl.left.schema) == nl {
		return r
	}
	projs := make([]Expr, 0, len(j.schema))
	for i := 0; i < nl; i++ {
		projs = append(projs, &ColRef{Index: i, Name: kl.out[i].Name, T: kl.out[i].Type})
	}
	for k := len(kl.left.schema); k < len(kl.out); k++ {
		projs = append(projs, &ColRef{Index: k, Name: kl.out[k].Name, T: kl.out[k].Type})
	}
	return &rel{kind: relCalc, input: r, schema: j.schema, quals: j.quals, mode: r.mode, projs: projs}
}
