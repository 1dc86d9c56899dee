package planner

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// IsRowtimeType reports whether t can be an event-time attribute (a
// WATERMARK FOR column): TIMESTAMP(3) or TIMESTAMP_LTZ(3), as in Flink.
func IsRowtimeType(t catalog.Type) bool { return t.IsTimestamp() && t.Precision == 3 }

// WatermarkDelay checks a WATERMARK FOR expression and returns the bounded
// delay it declares. Supported, as the strategies Flink users write:
// `ts` (ascending timestamps) and `ts - INTERVAL 'n' unit` (bounded
// out-of-orderness), where ts is a TIMESTAMP(3) or TIMESTAMP_LTZ(3) column
// of schema (physical or computed).
func WatermarkDelay(schema catalog.Schema, e *parser.Expr) (delayMillis int64, err error) {
	n := unparen(e.Node)
	col := func(x ast.ExprNode) error {
		c, ok := unparen(x).(*ast.ColumnNameExpr)
		if !ok {
			return e.Ctx.Errorf("", "unsupported watermark expression: use `ts` or `ts - INTERVAL 'n' SECOND`")
		}
		i := schema.Index(c.Name.Name.O)
		if i < 0 {
			return e.Ctx.Errorf(c.Name.Name.O, "column '%s' in the watermark expression is not a column of the table", c.Name.Name.O)
		}
		if !IsRowtimeType(schema[i].Type) {
			return e.Ctx.Errorf(c.Name.Name.O, "watermark expression must be TIMESTAMP(3) or TIMESTAMP_LTZ(3), but '%s' is %s", c.Name.Name.O, schema[i].Type)
		}
		return nil
	}
	if b, ok := n.(*ast.BinaryOperationExpr); ok && b.Op == opcode.Minus {
		if err := col(b.L); err != nil {
			return 0, err
		}
		iv, ok := parser.IntervalOf(unparen(b.R))
		if !ok || iv.YearMonth || iv.Millis < 0 {
			return 0, e.Ctx.Errorf("INTERVAL", "the watermark delay must be a day-time INTERVAL such as INTERVAL '5' SECOND")
		}
		return iv.Millis, nil
	}
	if err := col(n); err != nil {
		return 0, err
	}
	return 0, nil
}
