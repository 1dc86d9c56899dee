package state

import (
	"encoding/binary"
	"testing"
)

// BenchmarkTimers is a window operator's use of its timers: every key of
// a window registers the window's end (4 windows in flight, 50,000 keys
// each, a key registered by two rows), a checkpoint snapshots them, the
// watermark fires the oldest window. Per timer.
func BenchmarkTimers(b *testing.B) {
	const keys, windows = 50_000, 4
	tm, _ := NewTimers("win", "event", 128, true)
	var key [8]byte
	w := &nullWriter{}
	end := int64(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += keys {
		end += 10_000
		for k := 0; k < keys; k++ {
			binary.BigEndian.PutUint64(key[:], uint64(k*7919%keys))
			tm.Register(k%128, end+int64(windows)*10_000, key[:])
			tm.Register(k%128, end+int64(windows)*10_000, key[:])
		}
		id := end / 10_000
		if err := tm.Snapshot(id, w); err != nil {
			b.Fatal(err)
		}
		tm.Complete(id)
		if err := tm.Advance(end+10_000-1, func(int, int64, []byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

type nullWriter struct{ n int }

func (w *nullWriter) Put(k, v []byte) error { w.n++; return nil }
func (w *nullWriter) Delete(k []byte) error { w.n++; return nil }
