package reference

import (
	"context"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/exec/bufpool"
)

// BenchmarkKernelAllocator runs the q1 and q2 kernels (generator included)
// with the source's batches from Go's allocator and from the recycling one
// the engine uses (exec/bufpool), to show that the reference figure does
// not depend on the choice: go test -run '^$' -bench KernelAllocator
// -count 4 ./bench/reference. A test binary's nexmark source poisons its
// recycled strings, so the figures are below bench nexmark's.
func BenchmarkKernelAllocator(b *testing.B) {
	const events = 2_000_000
	for _, q := range []string{"q1", "q2"} {
		for _, name := range []string{"go", "recycler"} {
			b.Run(q+"/"+name, func(b *testing.B) {
				var cpu float64
				for range b.N {
					var mem memory.Allocator = memory.NewGoAllocator()
					if name == "recycler" {
						mem = bufpool.New(0)
					}
					r, err := run(context.Background(), config{query: q, events: events, batch: 8192, mem: mem})
					if err != nil {
						b.Fatal(err)
					}
					cpu += r.CPU.Seconds()
				}
				b.ReportMetric(float64(events)*float64(b.N)/cpu, "events/cpu-s")
			})
		}
	}
}
