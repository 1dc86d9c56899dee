package catalog

import (
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
)

// Kind is a SQL type family.
type Kind uint8

// The SQL types streamsql supports. Their Arrow storage is fixed:
//
//	BOOLEAN      arrow.Boolean
//	INT          arrow.Int32
//	BIGINT       arrow.Int64
//	DOUBLE       arrow.Float64
//	DECIMAL(p,s) arrow.Decimal128{Precision: p, Scale: s}
//	STRING       arrow.String (VARCHAR(n) and CHAR(n) share this storage)
//	TIMESTAMP(3) arrow.Timestamp{Unit: Millisecond} (no time zone; wall-clock time)
//
// KindNull is the type of the NULL literal before it is coerced to a concrete type.
const (
	KindNull Kind = iota
	KindBoolean
	KindInt
	KindBigInt
	KindDouble
	KindDecimal
	KindString
	KindTimestamp
)

// Type is a SQL type with its parameters and nullability.
type Type struct {
	Kind      Kind
	Precision int // DECIMAL precision (1..38); TIMESTAMP precision (always 3)
	Scale     int // DECIMAL scale
	Length    int // VARCHAR(n)/CHAR(n) declared length; 0 means STRING (unbounded)
	NotNull   bool
}

// Convenience constructors.
var (
	Null      = Type{Kind: KindNull}
	Boolean   = Type{Kind: KindBoolean}
	Int       = Type{Kind: KindInt}
	BigInt    = Type{Kind: KindBigInt}
	Double    = Type{Kind: KindDouble}
	String    = Type{Kind: KindString}
	Timestamp = Type{Kind: KindTimestamp, Precision: 3}
)

// Decimal returns DECIMAL(p, s).
func Decimal(p, s int) Type { return Type{Kind: KindDecimal, Precision: p, Scale: s} }

// Nullable returns t with NotNull cleared.
func (t Type) Nullable() Type { t.NotNull = false; return t }

// WithNotNull returns t with NotNull set to nn.
func (t Type) WithNotNull(nn bool) Type { t.NotNull = nn; return t }

// IsNumeric reports whether t is INT, BIGINT, DOUBLE or DECIMAL.
func (t Type) IsNumeric() bool {
	switch t.Kind {
	case KindInt, KindBigInt, KindDouble, KindDecimal:
		return true
	}
	return false
}

// IsInteger reports whether t is INT or BIGINT.
func (t Type) IsInteger() bool { return t.Kind == KindInt || t.Kind == KindBigInt }

// Equal compares kinds and parameters, ignoring nullability and VARCHAR length.
func (t Type) Equal(o Type) bool {
	if t.Kind != o.Kind {
		return false
	}
	switch t.Kind {
	case KindDecimal:
		return t.Precision == o.Precision && t.Scale == o.Scale
	}
	return true
}

// String renders the type as Flink prints it (e.g. "DECIMAL(10, 2)", "STRING",
// "VARCHAR(20)", "TIMESTAMP(3)", "BIGINT NOT NULL").
func (t Type) String() string {
	var s string
	switch t.Kind {
	case KindNull:
		s = "NULL"
	case KindBoolean:
		s = "BOOLEAN"
	case KindInt:
		s = "INT"
	case KindBigInt:
		s = "BIGINT"
	case KindDouble:
		s = "DOUBLE"
	case KindDecimal:
		s = fmt.Sprintf("DECIMAL(%d, %d)", t.Precision, t.Scale)
	case KindString:
		if t.Length > 0 {
			s = fmt.Sprintf("VARCHAR(%d)", t.Length)
		} else {
			s = "STRING"
		}
	case KindTimestamp:
		s = fmt.Sprintf("TIMESTAMP(%d)", t.Precision)
	default:
		s = fmt.Sprintf("UNKNOWN(%d)", t.Kind)
	}
	if t.NotNull {
		s += " NOT NULL"
	}
	return s
}

// ArrowType returns the Arrow storage type of t.
func (t Type) ArrowType() arrow.DataType {
	switch t.Kind {
	case KindBoolean:
		return arrow.FixedWidthTypes.Boolean
	case KindInt:
		return arrow.PrimitiveTypes.Int32
	case KindBigInt:
		return arrow.PrimitiveTypes.Int64
	case KindDouble:
		return arrow.PrimitiveTypes.Float64
	case KindDecimal:
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}
	case KindString:
		return arrow.BinaryTypes.String
	case KindTimestamp:
		return &arrow.TimestampType{Unit: arrow.Millisecond}
	case KindNull:
		return arrow.Null
	}
	panic(fmt.Sprintf("catalog: no Arrow type for kind %d", t.Kind))
}

// ParseTypeName maps a SQL type name and its numeric arguments to a Type.
// name is case-insensitive. Errors name the type and the accepted forms.
func ParseTypeName(name string, args []int) (Type, error) {
	n := strings.ToUpper(name)
	noArgs := func(t Type) (Type, error) {
		if len(args) != 0 {
			return Type{}, fmt.Errorf("type %s takes no arguments", n)
		}
		return t, nil
	}
	switch n {
	case "BOOLEAN", "BOOL":
		return noArgs(Boolean)
	case "INT", "INTEGER":
		return noArgs(Int)
	case "BIGINT":
		return noArgs(BigInt)
	case "DOUBLE", "FLOAT8":
		return noArgs(Double)
	case "STRING", "TEXT":
		return noArgs(String)
	case "VARCHAR", "CHAR":
		if len(args) == 0 {
			if n == "CHAR" {
				return Type{Kind: KindString, Length: 1}, nil
			}
			return String, nil
		}
		if len(args) != 1 || args[0] < 1 {
			return Type{}, fmt.Errorf("type %s takes one positive length argument", n)
		}
		return Type{Kind: KindString, Length: args[0]}, nil
	case "DECIMAL", "DEC", "NUMERIC":
		p, s := 10, 0 // Flink's default DECIMAL is DECIMAL(10, 0)
		switch len(args) {
		case 0:
		case 1:
			p = args[0]
		case 2:
			p, s = args[0], args[1]
		default:
			return Type{}, fmt.Errorf("type DECIMAL takes at most two arguments (precision, scale)")
		}
		if p < 1 || p > 38 {
			return Type{}, fmt.Errorf("DECIMAL precision must be between 1 and 38, got %d", p)
		}
		if s < 0 || s > p {
			return Type{}, fmt.Errorf("DECIMAL scale must be between 0 and the precision %d, got %d", p, s)
		}
		return Decimal(p, s), nil
	case "TIMESTAMP":
		if len(args) == 0 || (len(args) == 1 && args[0] == 3) {
			return Timestamp, nil
		}
		return Type{}, fmt.Errorf("only TIMESTAMP(3) is supported (millisecond precision)")
	}
	return Type{}, fmt.Errorf("unknown type %s (supported: BOOLEAN, INT, BIGINT, DOUBLE, DECIMAL(p, s), STRING, VARCHAR(n), TIMESTAMP(3))", name)
}

// Column is a named, typed column.
type Column struct {
	Name string
	Type Type
}

// Schema is an ordered list of columns.
type Schema []Column

// Index returns the position of the column named name (case-insensitive), or -1.
func (s Schema) Index(name string) int {
	for i, c := range s {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

// Names returns the column names.
func (s Schema) Names() []string {
	out := make([]string, len(s))
	for i, c := range s {
		out[i] = c.Name
	}
	return out
}

// Arrow returns the Arrow schema of s.
func (s Schema) Arrow() *arrow.Schema {
	fs := make([]arrow.Field, len(s))
	for i, c := range s {
		fs[i] = arrow.Field{Name: c.Name, Type: c.Type.ArrowType(), Nullable: !c.Type.NotNull}
	}
	return arrow.NewSchema(fs, nil)
}
