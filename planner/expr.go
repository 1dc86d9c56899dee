package planner

import (
	"fmt"
	"strings"

	"github.com/streamsql/streamsql/catalog"
)

// Expr is a typed scalar expression over the columns of one input batch.
// Expressions are resolved by the planner: every Call has a known function,
// argument types already coerced by implicit casts (see ResolveCall), and a
// result type. exec compiles an Expr once into typed kernels.
type Expr interface {
	Type() catalog.Type
	String() string
}

// ColRef reads column Index of the input batch.
type ColRef struct {
	Index int
	Name  string
	T     catalog.Type
}

func (c *ColRef) Type() catalog.Type { return c.T }
func (c *ColRef) String() string     { return fmt.Sprintf("$%d:%s", c.Index, c.Name) }

// Literal is a constant. Value holds, by T.Kind:
//
//	KindNull, or any kind with a NULL value: nil
//	KindBoolean:   bool
//	KindInt:       int32
//	KindBigInt:    int64
//	KindDouble:    float64
//	KindDecimal:   decimal128.Num (unscaled value at T.Scale)
//	KindString:    string
//	KindTimestamp: int64 (since the epoch in the units of T.TimeUnit():
//	               milliseconds for TIMESTAMP(0..3); wall-clock, no time zone)
//	KindTimestampLTZ: int64 (an instant, units as KindTimestamp)
//	KindTinyInt:   int8
//	KindSmallInt:  int16
//	KindFloat:     float32
//	KindDate:      int32 (days since 1970-01-01)
//	KindTime:      int32 (milliseconds of the day)
//	KindIntervalDT: int64 (milliseconds)
//	KindIntervalYM: int32 (months)
type Literal struct {
	Value any
	T     catalog.Type
}

func (l *Literal) Type() catalog.Type { return l.T }
func (l *Literal) String() string {
	if l.Value == nil {
		return "NULL"
	}
	if s, ok := l.Value.(string); ok {
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	}
	return fmt.Sprintf("%v", l.Value)
}

// Call applies a built-in scalar function. Fn is one of the names listed in
// functions.go (lower-case, operators by symbol: "+", "=", "and", ...).
// For "cast", the target type is T and Args has one element.
type Call struct {
	Fn   string
	Args []Expr
	T    catalog.Type
}

func (c *Call) Type() catalog.Type { return c.T }
func (c *Call) String() string {
	parts := make([]string, len(c.Args))
	for i, a := range c.Args {
		parts[i] = a.String()
	}
	if c.Fn == "cast" {
		return fmt.Sprintf("CAST(%s AS %s)", parts[0], c.T.Nullable())
	}
	if c.Fn == "field" && len(c.Args) == 2 {
		if l, ok := c.Args[1].(*Literal); ok {
			if k, ok := l.Value.(int32); ok && int(k) < len(c.Args[0].Type().Fields) {
				return parts[0] + "." + c.Args[0].Type().Fields[k].Name
			}
		}
	}
	return fmt.Sprintf("%s(%s)", c.Fn, strings.Join(parts, ", "))
}
