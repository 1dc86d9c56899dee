package connectors

import (
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Generator CPU accounting, for benchmarks that report the generator's CPU
// apart from the engine's (issue 11: "the generator's CPU measured and shown
// separately"). Off unless MeasureGeneratorCPU turned it on: reading a
// thread's CPU clock is a system call, two per batch.
var (
	genCPUOn      atomic.Bool
	genCPUNanos   atomic.Int64 // measured batches
	genCPUBatches atomic.Int64
	genCPUMissed  atomic.Int64 // batches whose reading was unusable
)

// MeasureGeneratorCPU turns on the accounting of the CPU time the nexmark
// and datagen sources spend building batches (the random draws and the
// writing of the Arrow buffers; not what runs downstream of emit) and
// returns a function that reads the total so far. A batch is timed with the
// calling thread's CPU clock; when the goroutine moved to another thread in
// between (the reading is negative or larger than the wall time it took) the
// batch counts as the mean of the measured ones.
func MeasureGeneratorCPU() (total func() time.Duration) {
	genCPUOn.Store(true)
	return func() time.Duration {
		n, b, m := genCPUNanos.Load(), genCPUBatches.Load(), genCPUMissed.Load()
		if b > 0 && m > 0 {
			n += n / b * m
		}
		return time.Duration(n)
	}
}

// genTimer times one batch's generation; the zero value does nothing.
type genTimer struct {
	cpu, wall int64
}

func startGen() genTimer {
	if !genCPUOn.Load() {
		return genTimer{}
	}
	return genTimer{cpu: threadCPU(), wall: time.Now().UnixNano()}
}

func (t genTimer) stop() {
	if t.wall == 0 {
		return
	}
	d, w := threadCPU()-t.cpu, time.Now().UnixNano()-t.wall
	if d < 0 || d > w+int64(time.Millisecond) {
		genCPUMissed.Add(1)
		return
	}
	genCPUNanos.Add(d)
	genCPUBatches.Add(1)
}

func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}
