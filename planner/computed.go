package planner

import (
	"fmt"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// ComputedColumnType types the expression of a computed column (`c AS
// expr` of CREATE TABLE) over the table's physical columns, as Flink does:
// a computed column may refer to physical columns only, and must not
// contain aggregates. tz is the session time zone (for functions of
// TIMESTAMP_LTZ).
func (p *Planner) ComputedColumnType(physical catalog.Schema, name string, e *parser.Expr) (catalog.Type, error) {
	in := &rel{kind: relScan, schema: physical, quals: make([]string, len(physical))}
	b := &exprBuilder{ctx: e.Ctx, in: in, clause: "a computed column", p: p}
	x, err := b.build(e.Node)
	if err != nil {
		return catalog.Type{}, err
	}
	if x.Type().Kind == catalog.KindNull {
		return catalog.Type{}, e.Ctx.ErrorAt(e.Node, "computed column '%s' has the type of an untyped NULL; CAST it to a type", name)
	}
	return x.Type(), nil
}

// scanWithComputed returns the scan of t (physical columns), followed by a
// Calc that evaluates t's computed columns, when it has any: the query
// sees t.FullSchema().
func (p *Planner) scanWithComputed(t *catalog.Table) (*rel, error) {
	scan := &rel{kind: relScan, table: t, schema: t.Schema, quals: make([]string, len(t.Schema)), mode: InsertOnly,
		describ: "TableSourceScan(table=[" + t.Name + "])"}
	if len(t.Computed) == 0 {
		return scan, nil
	}
	full := t.FullSchema()
	projs := make([]Expr, len(full))
	phys := 0
	for i, c := range full {
		cc, ok := t.ComputedAt(i)
		if !ok {
			projs[i] = &ColRef{Index: phys, Name: c.Name, T: c.Type}
			phys++
			continue
		}
		pe, ok := cc.Expr.(*parser.Expr)
		if !ok {
			return nil, fmt.Errorf("computed column '%s' of table '%s' has no expression", cc.Name, t.Name)
		}
		b := &exprBuilder{ctx: pe.Ctx, in: scan, clause: "a computed column", p: p}
		x, err := b.build(pe.Node)
		if err != nil {
			return nil, fmt.Errorf("in computed column '%s' of table '%s': %w", cc.Name, t.Name, err)
		}
		if !x.Type().Equal(cc.Type) {
			if x, err = ResolveCast(x, cc.Type); err != nil {
				return nil, fmt.Errorf("in computed column '%s' of table '%s': %w", cc.Name, t.Name, err)
			}
		}
		projs[i] = x
	}
	return &rel{kind: relCalc, input: scan, schema: full, quals: make([]string, len(full)), mode: InsertOnly, projs: projs, computedOf: t}, nil
}
