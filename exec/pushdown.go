package exec

import "github.com/streamsql/streamsql/planner"

// ColumnUse says whether a job reads a column of a source's schema and,
// for a ROW column, which of its fields.
type ColumnUse struct {
	Used bool
	// Fields, for a ROW column, says which fields are read; nil: all of
	// them (or the column is not a ROW).
	Fields []bool
}

// FieldUsed reports whether field f of the column is read.
func (u ColumnUse) FieldUsed(f int) bool {
	return u.Used && (u.Fields == nil || (f < len(u.Fields) && u.Fields[f]))
}

// SourceColumnUse is the projection push-down into a source: which columns
// (and ROW fields) of the source's schema the operators chained after it
// read, by liveness backwards over the chain. The last operator analysed
// counts as reading all its output (an exchange, a sink or an operator not
// analysed reads it). A Calc's computed projections and its filter read
// their columns whatever happens downstream (they are evaluated on every
// row); a projection that only picks a column or a ROW field reads it only
// when its output is read. The watermark assigner reads its time column and
// passes every column on; a lookup join reads its keys and its residual
// condition and passes its input's columns on, before the dimension
// table's. nil: every column is read (nothing to prune).
//
// A source may fill a column or field that is not read with nulls: the
// chain never looks at it.
//
// A source shared by several readers (a self-join, a statement set) has no
// operators of its own: what it must fill is what any of its readers'
// chains reads.
func SourceColumnUse(t *planner.Task) []ColumnUse {
	if t.Source == nil || t.Source.Values {
		return nil
	}
	width := len(t.Source.Schema)
	if len(t.Ops) > 0 || len(t.Outputs) < 2 {
		return chainColumnUse(width, t.Ops)
	}
	var need []ColumnUse
	for _, e := range t.Outputs {
		if e.Kind != planner.Forward || len(e.To.Inputs) != 1 {
			return nil
		}
		u := chainColumnUse(width, e.To.Ops)
		if u == nil {
			return nil
		}
		if need == nil {
			need = make([]ColumnUse, width)
		}
		for c := range need {
			mergeUse(&need[c], u[c])
		}
	}
	for _, u := range need {
		if !u.Used || u.Fields != nil {
			return need
		}
	}
	return nil
}

// chainColumnUse is SourceColumnUse over a chain of operators reading
// width columns.
func chainColumnUse(width int, chain []planner.Op) []ColumnUse {
	widths := []int{width} // widths[i]: input width of op i
	n := 0
ops:
	for _, op := range chain {
		in := widths[len(widths)-1]
		switch o := op.(type) {
		case *planner.CalcOp:
			if o.Projs != nil {
				in = len(o.Projs)
			}
		case *planner.WatermarkAssignerOp:
		case *planner.LookupJoinOp:
			// its input's columns, then the dimension table's
			if len(o.Out)-len(o.DimSchema) != in {
				break ops
			}
			in = len(o.Out)
		default:
			break ops
		}
		widths = append(widths, in)
		n++
	}
	need := make([]ColumnUse, widths[n])
	for i := range need {
		need[i].Used = true
	}
	for i := n - 1; i >= 0; i-- {
		in := make([]ColumnUse, widths[i])
		switch o := chain[i].(type) {
		case *planner.CalcOp:
			markExpr(in, o.Filter)
			if o.Projs == nil {
				for c, u := range need {
					mergeUse(&in[c], u)
				}
				break
			}
			for j, p := range o.Projs {
				if !picksOnly(p) {
					markExpr(in, p)
					continue
				}
				if !need[j].Used {
					continue
				}
				if col, ok := p.(*planner.ColRef); ok && col.Index < len(in) {
					mergeUse(&in[col.Index], need[j])
					continue
				}
				markExpr(in, p) // a field: read whole
			}
		case *planner.WatermarkAssignerOp:
			for c, u := range need {
				mergeUse(&in[c], u)
			}
			if o.TimeCol < len(in) {
				in[o.TimeCol] = ColumnUse{Used: true}
			}
		case *planner.LookupJoinOp:
			// an input column is read where its output column is, as a
			// key, or by the residual condition (which also reads the
			// dimension's columns, past the input's)
			for c := range in {
				mergeUse(&in[c], need[c])
			}
			for _, k := range o.LeftKeys {
				if k < len(in) {
					in[k] = ColumnUse{Used: true}
				}
			}
			if o.Residual != nil {
				markExpr(in, o.Residual)
			}
		}
		need = in
	}
	for _, u := range need {
		if !u.Used || u.Fields != nil {
			return need
		}
	}
	return nil
}

// mergeUse adds u to dst.
func mergeUse(dst *ColumnUse, u ColumnUse) {
	switch {
	case !u.Used:
	case !dst.Used:
		*dst = ColumnUse{Used: true, Fields: append([]bool(nil), u.Fields...)}
		if u.Fields == nil {
			dst.Fields = nil
		}
	case dst.Fields == nil:
	case u.Fields == nil:
		dst.Fields = nil
	default:
		for len(dst.Fields) < len(u.Fields) {
			dst.Fields = append(dst.Fields, false)
		}
		for f, ok := range u.Fields {
			dst.Fields[f] = dst.Fields[f] || ok
		}
	}
}

// markExpr marks what e reads: a column whole, or the ROW field that a
// field access of a column picks (the whole field, at any depth below).
func markExpr(in []ColumnUse, e planner.Expr) {
	switch x := e.(type) {
	case *planner.ColRef:
		if x.Index < len(in) {
			in[x.Index] = ColumnUse{Used: true}
		}
	case *planner.Call:
		if x.Fn == "field" && len(x.Args) == 2 {
			col, okc := x.Args[0].(*planner.ColRef)
			lit, okl := x.Args[1].(*planner.Literal)
			if k, oki := literalInt(lit); okc && okl && oki && col.Index < len(in) {
				f := make([]bool, k+1)
				f[k] = true
				mergeUse(&in[col.Index], ColumnUse{Used: true, Fields: f})
				return
			}
		}
		for _, a := range x.Args {
			markExpr(in, a)
		}
	}
}

func literalInt(l *planner.Literal) (int, bool) {
	if l == nil {
		return 0, false
	}
	switch v := l.Value.(type) {
	case int32:
		return int(v), v >= 0
	case int64:
		return int(v), v >= 0
	case int:
		return v, v >= 0
	}
	return 0, false
}
