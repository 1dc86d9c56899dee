// Package nexmark holds the Nexmark benchmark's query files as the Flink
// Nexmark benchmark writes them (ddl_gen.sql, ddl_views.sql, qN.sql; see
// README.md for the differences) and builds runnable scripts from them.
package nexmark

import (
	"embed"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

//go:embed *.sql
var files embed.FS

// Queries lists the query files (q0, q1, ...) in numeric order.
func Queries() []string {
	ents, _ := files.ReadDir(".")
	var qs []string
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, "q") && strings.HasSuffix(n, ".sql") {
			qs = append(qs, strings.TrimSuffix(n, ".sql"))
		}
	}
	sort.Slice(qs, func(i, j int) bool {
		var a, b int
		fmt.Sscanf(qs[i], "q%d", &a)
		fmt.Sscanf(qs[j], "q%d", &b)
		return a < b
	})
	return qs
}

// Defaults are the values of the benchmark's ${VAR}s unless told otherwise
// (the Flink benchmark's nexmark.yaml: 10 M events/s of event time, 100 M
// events, proportions 1/3/46).
var Defaults = map[string]string{
	"TPS":                "10000000",
	"EVENTS_NUM":         "100000000",
	"PERSON_PROPORTION":  "1",
	"AUCTION_PROPORTION": "3",
	"BID_PROPORTION":     "46",
	"NEXMARK_TABLE":      "datagen",
}

var varRef = regexp.MustCompile(`\$\{([A-Z_]+)\}`)

// Script returns ddl_gen.sql, ddl_views.sql and the query's file, with
// every ${VAR} replaced by vars[VAR] (else Defaults[VAR]); an unknown
// variable is an error.
func Script(query string, vars map[string]string) (string, error) {
	return script([]string{"ddl_gen", "ddl_views", query}, vars)
}

// DDL is Script without a query: the nexmark table and its views.
func DDL(vars map[string]string) (string, error) {
	return script([]string{"ddl_gen", "ddl_views"}, vars)
}

func script(names []string, vars map[string]string) (string, error) {
	query := names[len(names)-1]
	var sb strings.Builder
	for _, f := range names {
		b, err := files.ReadFile(f + ".sql")
		if err != nil {
			return "", fmt.Errorf("nexmark: no query file %s.sql", f)
		}
		sb.Write(b)
		sb.WriteString("\n")
	}
	var missing []string
	out := varRef.ReplaceAllStringFunc(sb.String(), func(m string) string {
		name := m[2 : len(m)-1]
		if v, ok := vars[name]; ok {
			return v
		}
		if v, ok := Defaults[name]; ok {
			return v
		}
		missing = append(missing, name)
		return m
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("nexmark: %s: no value for ${%s}", query, strings.Join(missing, "}, ${"))
	}
	return out, nil
}
