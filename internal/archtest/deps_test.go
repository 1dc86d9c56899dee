// Package archtest checks the package dependency rules of
// ../shared/design/architecture.md: a change that breaks the ownership table
// fails this test.
package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/streamsql/streamsql/"

// allowed lists, per package prefix, the module packages it may import
// (prefixes). A package not listed may import anything.
var allowed = map[string][]string{
	"parser":     {"parser"},
	"catalog":    {"catalog", "parser"},
	"planner":    {"planner", "parser", "catalog"},
	"checkpoint": {"checkpoint", "catalog"},
	"exec":       {"exec", "catalog", "planner", "checkpoint"},
}

// forbidden lists imports that are never allowed, whatever the package.
var forbidden = []string{"github.com/cockroachdb/cockroach"}

func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}:{{join .Imports " "}}`, "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ":")
		rel := strings.TrimPrefix(pkg, mod)
		top, _, _ := strings.Cut(rel, "/")
		rules, ok := allowed[top]
		for _, imp := range strings.Fields(imports) {
			for _, f := range forbidden {
				if strings.HasPrefix(imp, f) {
					t.Errorf("%s imports %s, which is forbidden", pkg, imp)
				}
			}
			if !ok || !strings.HasPrefix(imp, mod) {
				continue
			}
			checked++
			target := strings.TrimPrefix(imp, mod)
			permitted := false
			for _, r := range rules {
				if target == r || strings.HasPrefix(target, r+"/") {
					permitted = true
				}
			}
			if !permitted {
				t.Errorf("%s may not import %s (see architecture.md, 'Who owns what')", pkg, imp)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no module imports were checked: is go list output parsed correctly?")
	}
}
