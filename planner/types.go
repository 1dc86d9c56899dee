package planner

import (
	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// ResolveTypeName maps a type as written (CREATE TABLE, CAST) to a
// catalog.Type; ROW types recursively. The error is at the type (or the
// offending field's type).
func ResolveTypeName(tn parser.TypeName) (catalog.Type, error) {
	if tn.Name == "ROW" && len(tn.Fields) > 0 {
		fields := make([]catalog.Column, len(tn.Fields))
		for i, f := range tn.Fields {
			ft, err := ResolveTypeName(f.Type)
			if err != nil {
				return catalog.Type{}, err
			}
			ft.NotNull = f.Type.NotNull
			fields[i] = catalog.Column{Name: f.Name, Type: ft}
		}
		return catalog.Row(fields...), nil
	}
	if tn.Name == "ROW" {
		return catalog.Type{}, &parser.Error{Pos: tn.Pos, Msg: "a ROW type needs its fields, e.g. ROW<id BIGINT, name STRING>"}
	}
	t, err := catalog.ParseTypeName(tn.Name, tn.Args)
	if err != nil {
		return catalog.Type{}, &parser.Error{Pos: tn.Pos, Msg: err.Error()}
	}
	return t, nil
}
