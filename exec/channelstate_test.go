package exec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/internal/memtest"
)

// csTestBatch is a batch of one int64 column v holding vals.
func csTestBatch(mem memory.Allocator, ops []RowKind, vals ...int64) Batch {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues(vals, nil)
	col := b.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	return Batch{Rec: array.NewRecord(schema, []arrow.Array{col}, int64(len(vals))), Ops: ops}
}

// csDecode reads an entry's batch values.
func csDecode(t *testing.T, mem memory.Allocator, e csEntry) []int64 {
	t.Helper()
	r, err := ipc.NewReader(bytes.NewReader(e.ipc), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Next() {
		t.Fatal("no record in the entry's IPC stream")
	}
	return append([]int64(nil), r.Record().Column(0).(*array.Int64).Int64Values()...)
}

// csTestState records a header and a sequence of messages as the subtask
// does (appendCSHeader, appendCSMessage).
func csTestState(t *testing.T, mem memory.Allocator) []byte {
	t.Helper()
	state := appendCSHeader(nil, 3, []int{0, 0, 1}, []int64{NoWatermark, 7, -3}, []bool{false, true, false})
	var buf bytes.Buffer
	msgs := []struct {
		ch int
		m  Message
	}{
		{0, Message{Kind: MsgData, Batch: csTestBatch(mem, nil, 1, 2, 3)}},
		{2, Message{Kind: MsgWatermark, Watermark: 40}},
		{1, Message{Kind: MsgData, Batch: csTestBatch(mem, []RowKind{Insert, Delete}, 4, 5)}},
		{1, Message{Kind: MsgIdle}},
		{0, Message{Kind: MsgWatermark, Watermark: -1 << 40}},
	}
	for _, x := range msgs {
		var err error
		if state, err = appendCSMessage(state, x.ch, x.m, &buf, mem); err != nil {
			t.Fatal(err)
		}
		if x.m.Kind == MsgData {
			x.m.Batch.Rec.Release()
		}
	}
	if _, err := appendCSMessage(state, 0, Message{Kind: MsgBarrier}, &buf, mem); err == nil {
		t.Fatal("a barrier was recorded as channel state")
	}
	return state
}

// TestChannelStateRoundTrip: what a subtask records (header, batches with
// and without ops, watermarks, idleness) parses back as it was.
func TestChannelStateRoundTrip(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	s, err := parseChannelState(csTestState(t, mem), 2)
	if err != nil {
		t.Fatal(err)
	}
	if s.v1 || fmt.Sprint(s.inputs, s.wm, s.idle) != fmt.Sprint([]int{0, 0, 1}, []int64{NoWatermark, 7, -3}, []bool{false, true, false}) {
		t.Fatalf("header: v1=%v inputs %v wm %v idle %v", s.v1, s.inputs, s.wm, s.idle)
	}
	if par, _, ok := csParallelism(csTestState(t, mem)); !ok || par != 3 {
		t.Fatalf("csParallelism: %d %v", par, ok)
	}
	var got []string
	for _, e := range s.entries {
		switch e.kind {
		case csBatch:
			got = append(got, fmt.Sprintf("B ch%d in%d ops%v %v", e.ch, e.input, e.ops, csDecode(t, mem, e)))
		case csMark:
			got = append(got, fmt.Sprintf("W ch%d in%d %d", e.ch, e.input, e.wm))
		case csIdle:
			got = append(got, fmt.Sprintf("I ch%d in%d", e.ch, e.input))
		}
	}
	want := []string{"B ch0 in0 ops[] [1 2 3]", "W ch2 in1 40", fmt.Sprintf("B ch1 in0 ops%v [4 5]", []RowKind{Insert, Delete}), "I ch1 in0", fmt.Sprintf("W ch0 in0 %d", int64(-1<<40))}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("entries\n got %q\nwant %q", got, want)
	}
	// A batch without ops records none (all inserts).
	if s.entries[0].ops != nil {
		t.Fatalf("an all-insert batch came back with ops %v", s.entries[0].ops)
	}
}

// TestChannelStateVersion1: channel state written before watermarks were
// recorded (batches only, by input edge) is still read.
func TestChannelStateVersion1(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	var state []byte
	for i, in := range []int{1, 0} {
		b := csTestBatch(mem, nil, int64(i), int64(i+10))
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(b.Rec.Schema()), ipc.WithAllocator(mem))
		if err := w.Write(b.Rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b.Rec.Release()
		state = binary.AppendUvarint(state, uint64(in))
		state = binary.AppendUvarint(state, 0)
		state = binary.AppendUvarint(state, uint64(buf.Len()))
		state = append(state, buf.Bytes()...)
	}
	s, err := parseChannelState(state, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !s.v1 || len(s.entries) != 2 {
		t.Fatalf("v1=%v, %d entries", s.v1, len(s.entries))
	}
	for i, e := range s.entries {
		if e.kind != csBatch || e.ch != -1 || e.input != 1-i || fmt.Sprint(csDecode(t, mem, e)) != fmt.Sprint([]int64{int64(i), int64(i + 10)}) {
			t.Fatalf("entry %d: %+v", i, e)
		}
	}
	if _, _, ok := csParallelism(state); ok {
		t.Fatal("a version 1 state read as version 2")
	}
	if w, ok := s.combined(-1); !ok || w != NoWatermark {
		t.Fatalf("a version 1 stream holds the watermark at %d, %v; want NoWatermark", w, ok)
	}
	if _, err := parseChannelState(state, 1); !errors.Is(err, errCorruptCS) {
		t.Fatalf("an input edge the task does not have: %v", err)
	}
}

// TestChannelStateCorrupt: every truncation and every single-byte change of
// a channel state parses or fails with an error; never a panic, never an
// entry past the data.
func TestChannelStateCorrupt(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	state := csTestState(t, mem)
	full, err := parseChannelState(state, 2)
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for n := 2; n < len(state); n++ {
		s, err := parseChannelState(state[:n], 2)
		if err != nil {
			failed++
			continue
		}
		if len(s.entries) >= len(full.entries) {
			t.Fatalf("a state cut at %d of %d bytes parsed to %d entries", n, len(state), len(s.entries))
		}
	}
	if failed == 0 {
		t.Fatal("no truncation was refused")
	}
	for i := range state {
		for _, x := range []byte{0x01, 0x80, 0xFF} {
			c := append([]byte(nil), state...)
			c[i] ^= x
			if s, err := parseChannelState(c, 2); err == nil {
				for _, e := range s.entries {
					if e.ch >= len(s.inputs) || e.input >= 2 {
						t.Fatalf("byte %d ^ %#x: entry %+v out of range", i, x, e)
					}
				}
			}
		}
	}
	bad := append([]byte(nil), state...)
	bad[1] = 9
	if _, err := parseChannelState(bad, 2); err == nil || errors.Is(err, errCorruptCS) {
		t.Fatalf("an unknown version: %v", err)
	}
}

// TestMergeReplay: streams of several old subtasks (random channels,
// watermarks, idleness and batches) are merged: every batch is replayed
// once, in its stream's order, under a combined watermark no later than
// the one its own subtask had reached (the gate's running maximum); the
// watermarks handed on increase; at the end the combined watermark is the
// minimum of the streams' last ones.
func TestMergeReplay(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		const nInputs = 2
		nStreams := 1 + r.IntN(4)
		streams := make([]*csStream, nStreams)
		// own[s][k]: the watermark the stream's subtask had reached at its
		// k-th batch; final[s]: its instantaneous combined at the end.
		own := make([][]int64, nStreams)
		final := make([]int64, nStreams)
		nBatches := 0
		for si := range streams {
			n := 1 + r.IntN(3)
			s := &csStream{from: si, inputs: make([]int, n), wm: make([]int64, n), idle: make([]bool, n)}
			for c := range n {
				s.inputs[c] = r.IntN(nInputs)
				s.wm[c] = NoWatermark
				if r.IntN(3) > 0 {
					s.wm[c] = int64(r.IntN(50))
				}
				s.idle[c] = r.IntN(5) == 0
			}
			// Simulate the stream's gate to know what each batch met.
			wm, idle := append([]int64(nil), s.wm...), append([]bool(nil), s.idle...)
			inst := func() int64 {
				w, active, anyIdle := combineWatermarks(-1, nil, wm, idle, nil)
				if !active && !anyIdle {
					return NoWatermark
				}
				return w
			}
			reached := inst()
			for k := r.IntN(12); k > 0; k-- {
				c := r.IntN(n)
				e := csEntry{ch: c, input: s.inputs[c]}
				switch x := r.IntN(10); {
				case x < 5:
					e.kind, e.wm = csBatch, int64(nBatches) // the batch's id
					idle[c] = false
					own[si] = append(own[si], reached)
					nBatches++
				case x < 9:
					e.kind, e.wm = csMark, wm[c]+int64(r.IntN(30))-5 // sometimes behind
					wm[c], idle[c] = max(wm[c], e.wm), false
				default:
					e.kind = csIdle
					idle[c] = true
				}
				reached = max(reached, inst())
				s.entries = append(s.entries, e)
			}
			final[si] = inst()
			streams[si] = s
		}
		emitted, edges := NoWatermark, [nInputs]int64{NoWatermark, NoWatermark}
		next := make([]int, nStreams) // next batch index per stream
		seen := 0
		last, err := mergeReplay(streams, nInputs, mergeSink{
			batch: func(s *csStream, e csEntry) error {
				k := next[s.from]
				next[s.from]++
				seen++
				if k >= len(own[s.from]) {
					return fmt.Errorf("stream %d replayed more batches than it has", s.from)
				}
				if emitted > own[s.from][k] {
					return fmt.Errorf("stream %d batch %d (id %d) replayed under watermark %d, its subtask had reached %d", s.from, k, e.wm, emitted, own[s.from][k])
				}
				return nil
			},
			edge: func(in int, wm int64) error {
				if wm <= edges[in] {
					return fmt.Errorf("input %d watermark %d after %d", in, wm, edges[in])
				}
				edges[in] = wm
				return nil
			},
			watermark: func(wm int64) error {
				if wm <= emitted {
					return fmt.Errorf("watermark %d after %d", wm, emitted)
				}
				emitted = wm
				return nil
			},
		})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if seen != nBatches || last != emitted {
			t.Fatalf("seed %d: %d of %d batches replayed; returned watermark %d, handed on %d", seed, seen, nBatches, last, emitted)
		}
		lo := MaxWatermark
		for _, w := range final {
			lo = min(lo, w)
		}
		if emitted < lo {
			t.Fatalf("seed %d: the merged watermark ends at %d, below the streams' minimum %d", seed, emitted, lo)
		}
	}
}
