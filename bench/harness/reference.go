package harness

import (
	"context"
	"fmt"
)

// hasReference reports whether bench/reference has a kernel for query.
// (Filled in when bench/reference lands.)
func hasReference(query string) bool { return false }

func runReference(ctx context.Context, spec Spec) (Result, error) {
	return Result{Spec: spec}, fmt.Errorf("%s: no reference kernel", spec.Query)
}
