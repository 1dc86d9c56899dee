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
//	BOOLEAN          arrow.Boolean
//	TINYINT          arrow.Int8
//	SMALLINT         arrow.Int16
//	INT              arrow.Int32
//	BIGINT           arrow.Int64
//	FLOAT            arrow.Float32
//	DOUBLE           arrow.Float64
//	DECIMAL(p,s)     arrow.Decimal128{Precision: p, Scale: s}
//	STRING           arrow.String (VARCHAR(n) and CHAR(n) share this storage)
//	DATE             arrow.Date32 (days since 1970-01-01)
//	TIME(p)          arrow.Time32{Unit: Millisecond} (milliseconds of the day;
//	                 as in Flink's runtime, fractions beyond milliseconds are
//	                 dropped whatever p is)
//	TIMESTAMP(p)     arrow.Timestamp{Unit: Millisecond for p <= 3,
//	                 Microsecond for p <= 6, Nanosecond for p <= 9}; no time
//	                 zone: wall-clock time
//	TIMESTAMP_LTZ(p) arrow.Timestamp{Unit as TIMESTAMP(p), TimeZone: "UTC"}:
//	                 an instant, shown in the session's table.local-time-zone
//	INTERVAL DAY TO SECOND  arrow.Duration{Unit: Millisecond}
//	INTERVAL YEAR TO MONTH  arrow.MonthInterval (months)
//	ROW<f T, ...>    arrow.Struct with one child per field
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
	KindTinyInt
	KindSmallInt
	KindFloat
	KindDate
	KindTime
	KindTimestampLTZ
	KindIntervalDT // INTERVAL DAY TO SECOND (milliseconds)
	KindIntervalYM // INTERVAL YEAR TO MONTH (months)
	KindRow
)

// Type is a SQL type with its parameters and nullability.
type Type struct {
	Kind      Kind
	Precision int // DECIMAL precision (1..38); TIMESTAMP, TIMESTAMP_LTZ, TIME fractional digits (0..9)
	Scale     int // DECIMAL scale
	Length    int // VARCHAR(n)/CHAR(n) declared length; 0 means STRING (unbounded)
	NotNull   bool
	// Fields are the fields of a ROW, in order.
	Fields []Column
}

// Convenience constructors.
var (
	Null         = Type{Kind: KindNull}
	Boolean      = Type{Kind: KindBoolean}
	TinyInt      = Type{Kind: KindTinyInt}
	SmallInt     = Type{Kind: KindSmallInt}
	Int          = Type{Kind: KindInt}
	BigInt       = Type{Kind: KindBigInt}
	Float        = Type{Kind: KindFloat}
	Double       = Type{Kind: KindDouble}
	String       = Type{Kind: KindString}
	Date         = Type{Kind: KindDate}
	Time         = Type{Kind: KindTime}
	Timestamp    = Type{Kind: KindTimestamp, Precision: 3}
	TimestampLTZ = Type{Kind: KindTimestampLTZ, Precision: 3}
	IntervalDT   = Type{Kind: KindIntervalDT, Precision: 3}
	IntervalYM   = Type{Kind: KindIntervalYM}
)

// Decimal returns DECIMAL(p, s).
func Decimal(p, s int) Type { return Type{Kind: KindDecimal, Precision: p, Scale: s} }

// TimestampP returns TIMESTAMP(p).
func TimestampP(p int) Type { return Type{Kind: KindTimestamp, Precision: p} }

// TimestampLTZP returns TIMESTAMP_LTZ(p).
func TimestampLTZP(p int) Type { return Type{Kind: KindTimestampLTZ, Precision: p} }

// Row returns ROW<fields>.
func Row(fields ...Column) Type { return Type{Kind: KindRow, Fields: fields} }

// Nullable returns t with NotNull cleared.
func (t Type) Nullable() Type { t.NotNull = false; return t }

// WithNotNull returns t with NotNull set to nn.
func (t Type) WithNotNull(nn bool) Type { t.NotNull = nn; return t }

// IsNumeric reports whether t is TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE or DECIMAL.
func (t Type) IsNumeric() bool {
	switch t.Kind {
	case KindTinyInt, KindSmallInt, KindInt, KindBigInt, KindFloat, KindDouble, KindDecimal:
		return true
	}
	return false
}

// IsInteger reports whether t is TINYINT, SMALLINT, INT or BIGINT.
func (t Type) IsInteger() bool {
	switch t.Kind {
	case KindTinyInt, KindSmallInt, KindInt, KindBigInt:
		return true
	}
	return false
}

// IsTimestamp reports whether t is TIMESTAMP(p) or TIMESTAMP_LTZ(p).
func (t Type) IsTimestamp() bool { return t.Kind == KindTimestamp || t.Kind == KindTimestampLTZ }

// IsDatetime reports whether t is DATE, TIME, TIMESTAMP or TIMESTAMP_LTZ.
func (t Type) IsDatetime() bool {
	return t.Kind == KindDate || t.Kind == KindTime || t.IsTimestamp()
}

// IsInterval reports whether t is an INTERVAL type.
func (t Type) IsInterval() bool { return t.Kind == KindIntervalDT || t.Kind == KindIntervalYM }

// TimeUnit is the Arrow unit that stores a TIMESTAMP(p) or TIMESTAMP_LTZ(p).
func (t Type) TimeUnit() arrow.TimeUnit {
	switch {
	case t.Precision <= 3:
		return arrow.Millisecond
	case t.Precision <= 6:
		return arrow.Microsecond
	}
	return arrow.Nanosecond
}

// UnitsPerMilli is how many stored units of a TIMESTAMP(p) or
// TIMESTAMP_LTZ(p) make a millisecond (1, 1000 or 1000000).
func (t Type) UnitsPerMilli() int64 {
	switch t.TimeUnit() {
	case arrow.Microsecond:
		return 1000
	case arrow.Nanosecond:
		return 1000000
	}
	return 1
}

// Equal compares kinds and parameters, ignoring nullability and VARCHAR length.
func (t Type) Equal(o Type) bool {
	if t.Kind != o.Kind {
		return false
	}
	switch t.Kind {
	case KindDecimal:
		return t.Precision == o.Precision && t.Scale == o.Scale
	case KindTimestamp, KindTimestampLTZ, KindTime:
		return t.Precision == o.Precision
	case KindRow:
		if len(t.Fields) != len(o.Fields) {
			return false
		}
		for i := range t.Fields {
			if t.Fields[i].Name != o.Fields[i].Name || !t.Fields[i].Type.Equal(o.Fields[i].Type) ||
				t.Fields[i].Type.NotNull != o.Fields[i].Type.NotNull {
				return false
			}
		}
	}
	return true
}

// Field returns the index of the ROW field named name (case-insensitive), or -1.
func (t Type) Field(name string) int {
	for i, f := range t.Fields {
		if f.Name == name {
			return i
		}
	}
	for i, f := range t.Fields {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// String renders the type as Flink prints it (e.g. "DECIMAL(10, 2)", "STRING",
// "VARCHAR(20)", "TIMESTAMP(3)", "BIGINT NOT NULL", "ROW<`id` BIGINT, `name` STRING>").
func (t Type) String() string {
	var s string
	switch t.Kind {
	case KindNull:
		s = "NULL"
	case KindBoolean:
		s = "BOOLEAN"
	case KindTinyInt:
		s = "TINYINT"
	case KindSmallInt:
		s = "SMALLINT"
	case KindInt:
		s = "INT"
	case KindBigInt:
		s = "BIGINT"
	case KindFloat:
		s = "FLOAT"
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
	case KindDate:
		s = "DATE"
	case KindTime:
		s = fmt.Sprintf("TIME(%d)", t.Precision)
	case KindTimestamp:
		s = fmt.Sprintf("TIMESTAMP(%d)", t.Precision)
	case KindTimestampLTZ:
		s = fmt.Sprintf("TIMESTAMP_LTZ(%d)", t.Precision)
	case KindIntervalDT:
		s = "INTERVAL DAY TO SECOND(3)"
	case KindIntervalYM:
		s = "INTERVAL YEAR TO MONTH"
	case KindRow:
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			parts[i] = "`" + strings.ReplaceAll(f.Name, "`", "``") + "` " + f.Type.String()
		}
		s = "ROW<" + strings.Join(parts, ", ") + ">"
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
	case KindTinyInt:
		return arrow.PrimitiveTypes.Int8
	case KindSmallInt:
		return arrow.PrimitiveTypes.Int16
	case KindInt:
		return arrow.PrimitiveTypes.Int32
	case KindBigInt:
		return arrow.PrimitiveTypes.Int64
	case KindFloat:
		return arrow.PrimitiveTypes.Float32
	case KindDouble:
		return arrow.PrimitiveTypes.Float64
	case KindDecimal:
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}
	case KindString:
		return arrow.BinaryTypes.String
	case KindDate:
		return arrow.FixedWidthTypes.Date32
	case KindTime:
		return arrow.FixedWidthTypes.Time32ms
	case KindTimestamp:
		return &arrow.TimestampType{Unit: t.TimeUnit()}
	case KindTimestampLTZ:
		return &arrow.TimestampType{Unit: t.TimeUnit(), TimeZone: "UTC"}
	case KindIntervalDT:
		return arrow.FixedWidthTypes.Duration_ms
	case KindIntervalYM:
		return arrow.FixedWidthTypes.MonthInterval
	case KindRow:
		fs := make([]arrow.Field, len(t.Fields))
		for i, f := range t.Fields {
			fs[i] = arrow.Field{Name: f.Name, Type: f.Type.ArrowType(), Nullable: !f.Type.NotNull}
		}
		return arrow.StructOf(fs...)
	case KindNull:
		return arrow.Null
	}
	panic(fmt.Sprintf("catalog: no Arrow type for kind %d", t.Kind))
}

// ParseTypeName maps a SQL type name and its numeric arguments to a Type
// (ROW types are built by the caller from their fields, see Row).
// name is case-insensitive. Errors name the type and the accepted forms.
func ParseTypeName(name string, args []int) (Type, error) {
	n := strings.ToUpper(name)
	noArgs := func(t Type) (Type, error) {
		if len(args) != 0 {
			return Type{}, fmt.Errorf("type %s takes no arguments", n)
		}
		return t, nil
	}
	precision := func(t Type, def int) (Type, error) {
		switch len(args) {
		case 0:
			t.Precision = def
		case 1:
			if args[0] < 0 || args[0] > 9 {
				return Type{}, fmt.Errorf("%s precision must be between 0 and 9, got %d", n, args[0])
			}
			t.Precision = args[0]
		default:
			return Type{}, fmt.Errorf("type %s takes one precision argument (0 to 9)", n)
		}
		return t, nil
	}
	switch n {
	case "BOOLEAN", "BOOL":
		return noArgs(Boolean)
	case "TINYINT":
		return noArgs(TinyInt)
	case "SMALLINT":
		return noArgs(SmallInt)
	case "INT", "INTEGER":
		return noArgs(Int)
	case "BIGINT":
		return noArgs(BigInt)
	case "FLOAT", "REAL":
		return noArgs(Float)
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
	case "DATE":
		return noArgs(Date)
	case "TIME":
		return precision(Time, 0) // Flink's default TIME is TIME(0)
	case "TIMESTAMP":
		return precision(Type{Kind: KindTimestamp}, 6) // Flink's default TIMESTAMP is TIMESTAMP(6)
	case "TIMESTAMP_LTZ":
		return precision(Type{Kind: KindTimestampLTZ}, 6)
	case "TIME_LTZ":
		return Type{}, fmt.Errorf("TIME WITH LOCAL TIME ZONE is not supported (Flink has no such type either)")
	}
	return Type{}, fmt.Errorf("unknown type %s (supported: BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p, s), STRING, VARCHAR(n), DATE, TIME(p), TIMESTAMP(p), TIMESTAMP_LTZ(p), ROW<name type, ...>)", name)
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
