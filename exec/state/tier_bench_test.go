package state

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/streamsql/streamsql/checkpoint"
)

// peakRSS is the process's peak resident set size (VmHWM) in bytes.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return -1
}

func envInt(name string, def int64) int64 {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err == nil {
			return n
		}
	}
	return def
}

// BenchmarkStateTier puts join-state shaped entries (16-byte key, 40-byte
// value, in random order over 64 key groups) into a KV under a memory
// budget, checkpointing into a real checkpoint store (Snapshot into a
// Buffer, Commit into the working Pebble DB, Persist as chk-<n>) every
// STATE_TIER_EVERY keys, then reads random keys back. It reports peak RSS
// (VmHWM), insert and read throughput, and checkpoint sizes and
// durations. Knobs (environment): STATE_TIER_KEYS (20000000),
// STATE_TIER_EVERY (1000000), STATE_TIER_BUDGET_MB (1024),
// STATE_TIER_BACKEND (rocksdb), STATE_TIER_GOMEMLIMIT_MB (3/4 of the
// budget). See docs/benchmarks.md.
func BenchmarkStateTier(b *testing.B) {
	nKeys := envInt("STATE_TIER_KEYS", 20_000_000)
	every := envInt("STATE_TIER_EVERY", 1_000_000)
	budget := envInt("STATE_TIER_BUDGET_MB", 1024) << 20
	backend := os.Getenv("STATE_TIER_BACKEND")
	if backend == "" {
		backend = "rocksdb"
	}
	const maxP = 64
	// A deployment bounds Go's heap with GOMEMLIMIT (else the collector
	// lets it grow to twice the live data): the limit is what the budget
	// leaves beside Pebble's native memory (cache and memtables, a quarter
	// of it) and the checkpoint buffers. STATE_TIER_GOMEMLIMIT_MB=0: none.
	if lim := envInt("STATE_TIER_GOMEMLIMIT_MB", budget>>20*3/4); lim > 0 {
		old := debug.SetMemoryLimit(lim << 20)
		defer debug.SetMemoryLimit(old)
	}
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		store, err := checkpoint.Open(checkpoint.Options{Dir: dir, JobID: "0123456789abcdef0123456789abcdef", NumRetained: 1})
		if err != nil {
			b.Fatal(err)
		}
		kv, err := NewKV(Options{OpID: "join-left", MaxParallelism: maxP, Checkpointing: true,
			Backend: backend, MemoryBudget: budget, SpillDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		buf := checkpoint.NewBuffer()
		var id int64
		var ck struct {
			n                          int
			snap, commit, persist, max time.Duration
			written, size              int64
			lastBuf                    int
		}
		checkpointNow := func() {
			id++
			t0 := time.Now()
			if err := kv.Snapshot(id, buf); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			ck.lastBuf = buf.Bytes()
			if err := store.Commit(id, []*checkpoint.Buffer{buf}); err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			info, err := store.Persist(id, checkpoint.KindCheckpoint, nil)
			if err != nil {
				b.Fatal(err)
			}
			t3 := time.Now()
			kv.Complete(id)
			ck.n++
			ck.snap += t1.Sub(t0)
			ck.commit += t2.Sub(t1)
			ck.persist += t3.Sub(t2)
			ck.max = max(ck.max, t3.Sub(t0))
			ck.written += info.Written
			ck.size = info.Size
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			fmt.Fprintf(os.Stderr, "Go heap in use %d MiB, heap sys %d MiB, buffer cap %d MiB; ", ms.HeapInuse>>20, ms.HeapSys>>20, ck.lastBuf>>20)
			fmt.Fprintf(os.Stderr, "chk-%d: %d hot keys, snapshot %v (%.1f MiB), commit %v, persist %v, written %.1f MiB, size %.1f MiB, tier %+v, peak RSS %d MiB",
				id, kv.Stats().Hot, t1.Sub(t0).Round(time.Millisecond), float64(ck.lastBuf)/(1<<20), t2.Sub(t1).Round(time.Millisecond),
				t3.Sub(t2).Round(time.Millisecond), float64(info.Written)/(1<<20), float64(info.Size)/(1<<20), kv.Stats(), peakRSS()>>20)
			fmt.Fprintln(os.Stderr)
		}
		keyOf := func(dst []byte, i int64) ([]byte, int) {
			var raw [16]byte
			h := xxhash.Sum64(binary.BigEndian.AppendUint64(raw[:0], uint64(i)))
			binary.BigEndian.PutUint64(raw[:8], h)
			binary.BigEndian.PutUint64(raw[8:], uint64(i))
			return Key(dst, []byte("l"), raw[:]), int(h % maxP)
		}
		val := make([]byte, 40)
		var k []byte
		b.ResetTimer()
		start := time.Now()
		for j := int64(0); j < nKeys; j++ {
			var kg int
			k, kg = keyOf(k, j)
			binary.BigEndian.PutUint64(val, uint64(j))
			kv.Put(kg, k, val)
			if (j+1)%every == 0 {
				checkpointNow()
			}
		}
		insert := time.Since(start)
		// one more small checkpoint: 1000 updates of random old keys
		for j := int64(0); j < 1000; j++ {
			var kg int
			k, kg = keyOf(k, (j*7919)%nKeys)
			kv.Put(kg, k, val)
		}
		checkpointNow()
		small := ck.lastBuf
		// random reads
		const reads = 200_000
		start = time.Now()
		for j := int64(0); j < reads; j++ {
			k, _ = keyOf(k, int64(xxhash.Sum64String(strconv.FormatInt(j, 10))%uint64(nKeys)))
			if _, ok := kv.Get(-1, k); !ok {
				b.Fatalf("key %d lost", j)
			}
		}
		read := time.Since(start)
		b.StopTimer()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		st := kv.Stats()
		b.ReportMetric(float64(nKeys)/insert.Seconds(), "keys/s")
		b.ReportMetric(float64(reads)/read.Seconds(), "reads/s")
		b.ReportMetric(float64(peakRSS())/(1<<20), "peakRSS-MiB")
		b.ReportMetric(float64(ck.written)/float64(ck.n)/(1<<20), "ckpt-written-MiB")
		b.ReportMetric(float64(ck.size)/(1<<20), "ckpt-size-MiB")
		b.ReportMetric(float64((ck.snap+ck.commit+ck.persist)/time.Duration(ck.n))/1e6, "ckpt-ms")
		b.ReportMetric(float64(ck.max)/1e6, "ckpt-max-ms")
		fmt.Fprintf(os.Stderr, "state tier: backend %s, %d keys, budget %d MiB: insert %.0f keys/s (%v), reads %.0f/s; "+
			"%d checkpoints: mean snapshot %v, commit %v, persist %v, max total %v; mean written %.1f MiB, final size %.1f MiB, "+
			"last (1000 updates) snapshot %d bytes; tier %+v; peak RSS %d MiB, Go heap in use %d MiB\n",
			backend, nKeys, budget>>20, float64(nKeys)/insert.Seconds(), insert.Round(time.Millisecond), float64(reads)/read.Seconds(),
			ck.n, (ck.snap / time.Duration(ck.n)).Round(time.Millisecond), (ck.commit / time.Duration(ck.n)).Round(time.Millisecond),
			(ck.persist / time.Duration(ck.n)).Round(time.Millisecond), ck.max.Round(time.Millisecond),
			float64(ck.written)/float64(ck.n)/(1<<20), float64(ck.size)/(1<<20), small, st, peakRSS()>>20, ms.HeapInuse>>20)
		if err := kv.Close(); err != nil {
			b.Fatal(err)
		}
		if err := store.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
