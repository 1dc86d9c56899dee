package catalog

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Table is a table declared with CREATE TABLE: a schema bound to a connector.
type Table struct {
	Name string
	// Schema holds the physical columns: what the connector reads and
	// writes (INSERT INTO writes only these, as in Flink).
	Schema Schema
	// Computed are the computed columns (`c AS expr`), evaluated after the
	// scan; FullSchema interleaves them with Schema in declaration order.
	Computed   []ComputedColumn
	Watermark  *Watermark
	PrimaryKey []string
	// PartitionKeys are the PARTITIONED BY columns (physical columns; the
	// filesystem connector writes them as directories, not into files).
	PartitionKeys []string
	// Options are the WITH (...) pairs in declaration order; keys are as written.
	Options []Option
}

// ComputedColumn is `Name AS <ExprSQL>` of CREATE TABLE.
type ComputedColumn struct {
	Name    string
	Type    Type // inferred from the expression over the physical columns
	ExprSQL string
	// Expr is the parsed expression (a *parser.Expr, opaque here so that
	// catalog does not depend on the parser).
	Expr any
	// Position is the column's index in FullSchema (declaration order).
	Position int
}

// FullSchema returns every column a query sees, in declaration order:
// physical and computed. Without computed columns it is Schema itself.
func (t *Table) FullSchema() Schema {
	if len(t.Computed) == 0 {
		return t.Schema
	}
	out := make(Schema, 0, len(t.Schema)+len(t.Computed))
	p, c := 0, 0
	for len(out) < len(t.Schema)+len(t.Computed) {
		if c < len(t.Computed) && t.Computed[c].Position == len(out) {
			out = append(out, Column{Name: t.Computed[c].Name, Type: t.Computed[c].Type})
			c++
			continue
		}
		if p < len(t.Schema) {
			out = append(out, t.Schema[p])
			p++
			continue
		}
		out = append(out, Column{Name: t.Computed[c].Name, Type: t.Computed[c].Type})
		c++
	}
	return out
}

// ComputedAt returns the computed column at index i of FullSchema, if any.
func (t *Table) ComputedAt(i int) (*ComputedColumn, bool) {
	for k := range t.Computed {
		if t.Computed[k].Position == i {
			return &t.Computed[k], true
		}
	}
	return nil, false
}

// Option is one connector option.
type Option struct {
	Key, Value string
}

// Watermark is WATERMARK FOR Column AS <ExprSQL>.
type Watermark struct {
	Column  string
	ExprSQL string
	// DelayMillis is the bounded out-of-orderness the expression declares
	// (ts - INTERVAL ...; 0 for ts itself).
	DelayMillis int64
}

// Option returns the value of key (exact, case-sensitive as in Flink) and whether it is set.
func (t *Table) Option(key string) (string, bool) {
	for _, o := range t.Options {
		if o.Key == key {
			return o.Value, true
		}
	}
	return "", false
}

// OptionOr returns the value of key or def when it is not set.
func (t *Table) OptionOr(key, def string) string {
	if v, ok := t.Option(key); ok {
		return v
	}
	return def
}

// Connector returns the 'connector' option.
func (t *Table) Connector() string { v, _ := t.Option("connector"); return v }

// View is a named query. Query is the parsed query (a *parser.Query); it is
// kept opaque here so that catalog does not depend on the parser.
type View struct {
	Name    string
	Columns []string // optional explicit column names
	SQL     string   // the query's text, for SHOW CREATE VIEW
	Query   any
}

// Catalog holds a session's tables and views. Names are case-insensitive.
// It is safe for concurrent use.
type Catalog struct {
	mu     sync.RWMutex
	tables map[string]*Table
	views  map[string]*View
}

// New returns an empty catalog.
func New() *Catalog {
	return &Catalog{tables: map[string]*Table{}, views: map[string]*View{}}
}

func key(name string) string { return strings.ToLower(name) }

// ErrExists and ErrNotFound are returned (wrapped) by the mutators.
var (
	ErrExists   = fmt.Errorf("already exists")
	ErrNotFound = fmt.Errorf("does not exist")
)

// CreateTable adds t. It fails if a table or view of that name exists, unless ifNotExists.
func (c *Catalog) CreateTable(t *Table, ifNotExists bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key(t.Name)
	if _, ok := c.tables[k]; ok {
		if ifNotExists {
			return nil
		}
		return fmt.Errorf("table '%s' %w", t.Name, ErrExists)
	}
	if _, ok := c.views[k]; ok {
		return fmt.Errorf("a view named '%s' %w", t.Name, ErrExists)
	}
	c.tables[k] = t
	return nil
}

// CreateView adds v.
func (c *Catalog) CreateView(v *View, ifNotExists bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key(v.Name)
	if _, ok := c.views[k]; ok {
		if ifNotExists {
			return nil
		}
		return fmt.Errorf("view '%s' %w", v.Name, ErrExists)
	}
	if _, ok := c.tables[k]; ok {
		return fmt.Errorf("a table named '%s' %w", v.Name, ErrExists)
	}
	c.views[k] = v
	return nil
}

// Drop removes a table (kind "TABLE") or view (kind "VIEW").
func (c *Catalog) Drop(kind, name string, ifExists bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key(name)
	switch kind {
	case "TABLE":
		if _, ok := c.tables[k]; ok {
			delete(c.tables, k)
			return nil
		}
		if _, ok := c.views[k]; ok {
			return fmt.Errorf("'%s' is a view, not a table: use DROP VIEW", name)
		}
	case "VIEW":
		if _, ok := c.views[k]; ok {
			delete(c.views, k)
			return nil
		}
		if _, ok := c.tables[k]; ok {
			return fmt.Errorf("'%s' is a table, not a view: use DROP TABLE", name)
		}
	}
	if ifExists {
		return nil
	}
	return fmt.Errorf("%s '%s' %w", strings.ToLower(kind), name, ErrNotFound)
}

// Table returns the table named name.
func (c *Catalog) Table(name string) (*Table, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.tables[key(name)]
	return t, ok
}

// View returns the view named name.
func (c *Catalog) View(name string) (*View, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.views[key(name)]
	return v, ok
}

// TableNames returns the names of tables and views, sorted.
func (c *Catalog) TableNames() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for _, t := range c.tables {
		out = append(out, t.Name)
	}
	for _, v := range c.views {
		out = append(out, v.Name)
	}
	sort.Strings(out)
	return out
}

// ViewNames returns the names of views, sorted.
func (c *Catalog) ViewNames() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for _, v := range c.views {
		out = append(out, v.Name)
	}
	sort.Strings(out)
	return out
}

// Suggest returns the candidate closest to s by edit distance, or "" when
// none is close enough to be a plausible typo.
func Suggest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > max(2, len(s)/3) {
		return ""
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
