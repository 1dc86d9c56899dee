package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"time"
)

// startProfiles starts the profiles of `streamsql run --cpuprofile FILE
// --memprofile FILE --trace FILE` (any may be ""). The execution trace (go
// tool trace FILE: where goroutines block and cores idle) and the CPU
// profile cover the whole
// run. The heap profile is written when the run ends; so that its in-use
// samples show the job's state rather than the empty heap after it ended,
// a watcher also rewrites it whenever the live heap has grown by a tenth
// since the last write, so the file keeps the in-use heap at (about) its
// peak, and the end of the run only writes it again if nothing was
// written before. stop ends both and reports the first error; it also
// runs on an exit through a second signal.
func startProfiles(cpuFile, memFile, traceFile string) (stop func() error, err error) {
	var cpu, tr *os.File
	if traceFile != "" {
		if tr, err = os.Create(traceFile); err != nil {
			return nil, fmt.Errorf("--trace: %w", err)
		}
		if err := trace.Start(tr); err != nil {
			tr.Close()
			return nil, fmt.Errorf("--trace: %w", err)
		}
	}
	stopTrace := func() error {
		if tr == nil {
			return nil
		}
		trace.Stop()
		if err := tr.Close(); err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
		return nil
	}
	if cpuFile != "" {
		if cpu, err = os.Create(cpuFile); err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			stopTrace()
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
	}
	var w *heapWatch
	if memFile != "" {
		w = &heapWatch{file: memFile, done: make(chan struct{})}
		if err := w.write(); err != nil { // fail early on a bad path
			if cpu != nil {
				pprof.StopCPUProfile()
				cpu.Close()
			}
			stopTrace()
			return nil, fmt.Errorf("--memprofile: %w", err)
		}
		w.written = 0
		w.wg.Add(1)
		go w.run()
	}
	var once sync.Once
	var stopErr error
	end := func() error {
		once.Do(func() {
			stopErr = stopTrace()
			if cpu != nil {
				pprof.StopCPUProfile()
				if err := cpu.Close(); err != nil && stopErr == nil {
					stopErr = fmt.Errorf("--cpuprofile: %w", err)
				}
			}
			if w != nil {
				close(w.done)
				w.wg.Wait()
				if w.written == 0 {
					if err := w.write(); err != nil && stopErr == nil {
						stopErr = fmt.Errorf("--memprofile: %w", err)
					}
				}
			}
		})
		return stopErr
	}
	unhook := atExit(func() { end() })
	return func() error { unhook(); return end() }, nil
}

// heapWatch rewrites a heap profile as the live heap grows.
type heapWatch struct {
	file    string
	written uint64 // live heap at the last write (0: none yet)
	done    chan struct{}
	wg      sync.WaitGroup
}

func (w *heapWatch) run() {
	defer w.wg.Done()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
		}
		metrics.Read(sample)
		if live := sample[0].Value.Uint64(); live > w.written+w.written/10 {
			if w.write() == nil {
				w.written = live
			}
		}
	}
}

func (w *heapWatch) write() error {
	f, err := os.Create(w.file)
	if err != nil {
		return err
	}
	runtime.GC() // the in-use figures are as of the last GC
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
