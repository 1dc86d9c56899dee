package harness

import (
	"context"
	"slices"

	"github.com/streamsql/streamsql/bench/reference"
)

// hasReference reports whether bench/reference has a kernel for query.
func hasReference(query string) bool { return slices.Contains(reference.Queries(), query) }

// runReference runs query's hand-written kernel over the same nexmark
// batches (parallelism 1, the batch size of the engine's runs). Its CPU is
// the kernel pass's, generator included, as the engine's; GenCPU is that of
// a second, generator-only pass (reference.Run).
func runReference(ctx context.Context, spec Spec) (Result, error) {
	batch := spec.BatchSize
	if batch <= 0 {
		batch = 8192 // execution.batch-size's default
	}
	r, err := reference.Run(ctx, spec.Query, spec.Events, batch)
	res := Result{Spec: spec, Wall: r.Wall, User: r.CPU, GenCPU: r.GenCPU, OutRows: r.OutRows, PeakRSS: PeakRSS()}
	return res, err
}
