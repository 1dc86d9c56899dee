package planner

// WITH name [(c1, ...)] AS (query), ...: common table expressions. A CTE
// is visible to the CTEs after it and to the query of its WITH, and
// shadows tables and views of the same name. Every reference plans the
// CTE's query again (as a view's), so each has its own operators and state.

import (
	"fmt"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// cte is a common table expression in scope.
type cte struct {
	name string // lower-case
	node ast.ResultSetNode
	cols []string
	ctx  *parser.QueryContext
}

// pushWith brings the CTEs of w into scope; pop removes them again.
func (p *Planner) pushWith(w *ast.WithClause, ctx *parser.QueryContext) (pop func(), err error) {
	if w == nil {
		return func() {}, nil
	}
	if w.IsRecursive {
		return nil, ctx.Errorf("RECURSIVE", "WITH RECURSIVE is not supported (Flink SQL has no recursive queries)")
	}
	depth := len(p.ctes)
	restore := func() { p.ctes = p.ctes[:depth] }
	seen := map[string]bool{}
	for _, c := range w.CTEs {
		name := c.Name.L
		if seen[name] {
			restore()
			return nil, ctx.Errorf(c.Name.O, "WITH names '%s' twice", c.Name.O)
		}
		seen[name] = true
		var cols []string
		for _, cn := range c.ColNameList {
			cols = append(cols, cn.O)
		}
		if c.Query == nil || c.Query.Query == nil {
			restore()
			return nil, ctx.Errorf(c.Name.O, "WITH %s needs a query", c.Name.O)
		}
		p.ctes = append(p.ctes, cte{name: name, node: c.Query.Query, cols: cols, ctx: ctx})
		// check the query now: errors show at their place, not at a reference
		r, err := p.buildCTE(len(p.ctes)-1, c.Name.O)
		if err != nil {
			restore()
			return nil, err
		}
		if len(cols) > 0 && len(cols) != len(r.schema)-r.hidden {
			restore()
			return nil, ctx.Errorf(c.Name.O, "WITH %s lists %d columns but its query produces %d", c.Name.O, len(cols), len(r.schema)-r.hidden)
		}
	}
	return restore, nil
}

// lookupCTE returns the innermost CTE named name (index into p.ctes), or -1.
func (p *Planner) lookupCTE(name string) int {
	name = strings.ToLower(name)
	for i := len(p.ctes) - 1; i >= 0; i-- {
		if p.ctes[i].name == name {
			return i
		}
	}
	return -1
}

// buildCTE plans the query of CTE i (seeing only the CTEs before it),
// named as written (as), with its column list applied.
func (p *Planner) buildCTE(i int, as string) (*rel, error) {
	c := p.ctes[i]
	saved := p.ctes
	p.ctes = p.ctes[:i:i]
	defer func() { p.ctes = saved }()
	var r *rel
	var err error
	switch x := c.node.(type) {
	case *ast.SelectStmt:
		r, err = p.buildSelect(x, c.ctx)
	case *ast.SetOprStmt:
		r, err = p.buildSetOpr(x, c.ctx)
	default:
		return nil, c.ctx.Errorf(as, "unsupported query in WITH %s", as)
	}
	if err != nil {
		return nil, err
	}
	if r.hidden > 0 {
		r = dropHidden(r)
	}
	if len(c.cols) > 0 && len(c.cols) == len(r.schema) {
		out := *r
		out.schema = append(catalog.Schema(nil), r.schema...)
		for j := range out.schema {
			out.schema[j].Name = c.cols[j]
		}
		r = &out
	}
	return r.qualify(as), nil
}

// cteRef plans a FROM reference to CTE i.
func (p *Planner) cteRef(i int, tn *ast.TableName, ctx *parser.QueryContext) (*rel, error) {
	if ref, ok := ctx.TableRef(tn); ok && ref.Options != nil {
		return nil, &parser.Error{Pos: ref.HintPos, Msg: fmt.Sprintf("'%s' is a WITH query: an OPTIONS hint applies to tables only", tn.Name.O)}
	}
	return p.buildCTE(i, tn.Name.O)
}
