package exec

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/planner"
)

// countState is a memState that counts point and range deletions.
type countState struct {
	memState
	dels, ranges int
}

func (c *countState) Delete(k []byte) error { c.dels++; return c.memState.Delete(k) }
func (c *countState) DeleteRange(lo, hi []byte) error {
	c.ranges++
	return c.memState.DeleteRange(lo, hi)
}

func (m memState) clone() memState {
	c := memState{}
	for k, v := range m {
		c[k] = v
	}
	return c
}

// slotKeys lists the keyed state of operator op in m.
func (m memState) slotKeys(op string) []string {
	var ks []string
	p := string(checkpoint.OperatorPrefix(op))
	for k := range m {
		if strings.HasPrefix(k, p) {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

// toFormat1 rewrites the format 2 slots of op in m (value version v2, key
// after the key group's prefix: 8 bytes of end, then the rest) as format
// 1 ones (version v1; the rest, then the end in 8 big-endian bytes when
// endLast) and returns how many it rewrote.
func (m memState) toFormat1(op string, v1, v2 byte, endLast bool) int {
	p := len(checkpoint.KeyedPrefix(op, 0))
	n := 0
	for _, k := range m.slotKeys(op) {
		v := m[k]
		if len(v) == 0 || v[0] != v2 {
			continue
		}
		kb := []byte(k)
		nk := append(bytes.Clone(kb[:p]), kb[p+8:]...)
		if endLast {
			end := int64(binary.BigEndian.Uint64(kb[p:p+8]) ^ (1 << 63))
			nk = binary.BigEndian.AppendUint64(nk, uint64(end))
		}
		delete(m, k)
		m[string(nk)] = append([]byte{v1}, v[1:]...)
		n++
	}
	return n
}

// windowRangeInput is 3 rounds of 40 keys, each round 10 s of event time
// later, with watermarks that fire the rounds one by one.
func windowRangeInput(mem memory.Allocator, round int) Batch {
	var rows [][3]int64
	for k := int64(0); k < 40; k++ {
		rows = append(rows, [3]int64{k, int64(round)*10_000 + 1000 + 50*k, k})
	}
	return winTestBatch(mem, rows...)
}

// TestWindowFiresDeleteByRange: the slots of fired slices leave the
// checkpointed state as range deletions, not a tombstone each, for
// TUMBLE, HOP and CUMULATE; a snapshot whose checkpoint aborted is
// followed by one that deletes them again; a job restored from each
// checkpoint emits what the uninterrupted one does.
func TestWindowFiresDeleteByRange(t *testing.T) {
	specs := map[string]planner.WindowSpec{
		"tumble":   {Kind: planner.Tumble, Size: 10_000},
		"hop":      {Kind: planner.Hop, Size: 10_000, Slide: 5_000},
		"cumulate": {Kind: planner.Cumulate, Size: 10_000, Slide: 5_000},
	}
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			op := winTestOp(t, mem, &Metrics{}, spec, 0, 1)
			defer op.Close()
			out := &rowsOut{}
			store := memState{} // the committed state
			states := map[int]memState{}
			var pointDels, rangeDels int
			for round := 0; round < 3; round++ {
				if err := op.ProcessBatch(0, windowRangeInput(mem, round), out); err != nil {
					t.Fatal(err)
				}
				if err := op.ProcessWatermark(int64(round)*10_000+999, out); err != nil {
					t.Fatal(err)
				}
				id := int64(2*round + 1)
				if round == 2 { // a checkpoint whose snapshot never reaches the store
					lost := &countState{memState: store.clone()}
					if err := op.Snapshot(id, lost); err != nil {
						t.Fatal(err)
					}
					if err := op.NotifyAborted(id); err != nil {
						t.Fatal(err)
					}
					id++
				}
				cs := &countState{memState: store}
				if err := op.Snapshot(id, cs); err != nil {
					t.Fatal(err)
				}
				if err := op.NotifyComplete(id); err != nil {
					t.Fatal(err)
				}
				pointDels += cs.dels
				rangeDels += cs.ranges
				states[round] = store.clone()
				if want := op.tbl.Len(); len(store.slotKeys("w")) != want {
					t.Fatalf("round %d: %d slots in the state, %d live", round, len(store.slotKeys("w")), want)
				}
			}
			if pointDels != 0 || rangeDels == 0 {
				t.Fatalf("%d point and %d range deletions of fired slots", pointDels, rangeDels)
			}
			// the rest of the input after each checkpoint, uninterrupted and restored
			rest := func(op *windowAgg) []string {
				o := &rowsOut{}
				if err := op.ProcessBatch(0, windowRangeInput(mem, 3), o); err != nil {
					t.Fatal(err)
				}
				if err := op.ProcessWatermark(MaxWatermark, o); err != nil {
					t.Fatal(err)
				}
				slices.Sort(o.rows)
				return o.rows
			}
			want := rest(op)
			if len(want) == 0 {
				t.Fatal("no windows fired at the end")
			}
			r := winTestOp(t, mem, &Metrics{}, spec, 0, 1)
			defer r.Close()
			if err := r.Restore(states[2]); err != nil {
				t.Fatal(err)
			}
			if got := rest(r); !slices.Equal(got, want) {
				t.Fatalf("restored: %v, want %v", got, want)
			}
		})
	}
}

// TestWindowRestoresOldKeyLayout: slots checkpointed in the format 1 key
// layout (group key, then the slice end) are restored, fire as the
// uninterrupted job's, and the next snapshot replaces them with format 2
// keys (deleting the old ones).
func TestWindowRestoresOldKeyLayout(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	spec := planner.WindowSpec{Kind: planner.Hop, Size: 10_000, Slide: 5_000}
	op := winTestOp(t, mem, &Metrics{}, spec, 0, 1)
	defer op.Close()
	out := &rowsOut{}
	if err := op.ProcessBatch(0, windowRangeInput(mem, 0), out); err != nil {
		t.Fatal(err)
	}
	if err := op.ProcessBatch(0, windowRangeInput(mem, 1), out); err != nil {
		t.Fatal(err)
	}
	if err := op.ProcessWatermark(9_999, out); err != nil {
		t.Fatal(err)
	}
	st := memState{}
	if err := op.Snapshot(1, st); err != nil {
		t.Fatal(err)
	}
	// the same state in format 1: key group prefix, group key, slice end
	old := st.clone()
	if old.toFormat1("w", windowStateV1, windowStateV2, true) == 0 {
		t.Fatal("no slot to convert")
	}
	r := winTestOp(t, mem, &Metrics{}, spec, 0, 1)
	defer r.Close()
	if err := r.Restore(old); err != nil {
		t.Fatal(err)
	}
	rest := func(op *windowAgg, st checkpoint.StateWriter) []string {
		o := &rowsOut{}
		if err := op.ProcessBatch(0, windowRangeInput(mem, 2), o); err != nil {
			t.Fatal(err)
		}
		if err := op.ProcessWatermark(15_000, o); err != nil {
			t.Fatal(err)
		}
		if st != nil {
			if err := op.Snapshot(2, st); err != nil {
				t.Fatal(err)
			}
		}
		if err := op.ProcessWatermark(MaxWatermark, o); err != nil {
			t.Fatal(err)
		}
		slices.Sort(o.rows)
		return o.rows
	}
	want := rest(op, nil)
	if got := rest(r, old); !slices.Equal(got, want) {
		t.Fatalf("restored from format 1: %v, want %v", got, want)
	}
	live := 0
	for _, k := range old.slotKeys("w") {
		if v := old[k]; len(v) == 0 || v[0] != windowStateV2 {
			t.Fatalf("a format %d slot is left: %x", v[0], k)
		}
		live++
	}
	if live == 0 {
		t.Fatal("no slot left to check")
	}
}
