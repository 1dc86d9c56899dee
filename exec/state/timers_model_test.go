package state

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/streamsql/streamsql/checkpoint"
)

// timerModel is the reference: a set of (key group, timestamp, key); Advance
// fires the smallest due timer, (timestamp, key group, key) order, again and
// again.
type timerModel map[timerID]bool

type timerID struct {
	kg  int
	ts  int64
	key string
}

func (m timerModel) sorted() []timerID {
	ids := make([]timerID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := ids[i], ids[j]
		if a.ts != b.ts {
			return a.ts < b.ts
		}
		if a.kg != b.kg {
			return a.kg < b.kg
		}
		return a.key < b.key
	})
	return ids
}

// stateKey is the timer's key in the checkpointed state.
func (id timerID) stateKey(opID string) string {
	b := checkpoint.KeyedPrefix(opID+"/timers/event", id.kg)
	b = binary.BigEndian.AppendUint64(b, uint64(id.ts)^(1<<63))
	return string(append(b, id.key...))
}

// TestTimersAgainstModel runs seeded random schedules of registers,
// deletes, advances (whose fires register later timers and delete others),
// snapshots with completes and aborts (some notified late, some after their
// delta reached the working DB) and restores of the committed state into
// random key-group ranges (a rescale), and checks the fired sequence, Len,
// Next and the committed state after every completed checkpoint against
// the model. Timers registered and removed between two snapshots are
// written by none.
func TestTimersAgainstModel(t *testing.T) {
	const maxP = 8
	for seed := int64(1); seed <= 120; seed++ {
		r := rand.New(rand.NewSource(seed))
		tm, _ := NewTimers("op", "event", maxP, true)
		m := timerModel{}
		committed := store{}
		var lastCommitted timerModel = timerModel{}
		type inflight struct {
			id   int64
			rec  *recorder
			snap timerModel
		}
		var pend []inflight
		stale := false // the working DB holds an aborted checkpoint's delta
		nextID := int64(1)
		randID := func() timerID {
			// Few timestamps, many keys a timestamp (window ends), some negative.
			return timerID{kg: r.Intn(maxP), ts: int64(r.Intn(12)-2) * 10, key: fmt.Sprintf("k%d", r.Intn(20))}
		}
		clock := int64(-100)
		for step := 0; step < 400; step++ {
			switch op := r.Intn(20); {
			case op < 9:
				id := randID()
				if id.ts <= clock { // timers are set in the future
					id.ts = clock + 1 + int64(r.Intn(30))
				}
				tm.Register(id.kg, id.ts, []byte(id.key))
				m[id] = true
			case op < 12:
				var id timerID
				if len(m) > 0 && r.Intn(4) > 0 {
					ids := m.sorted()
					id = ids[r.Intn(len(ids))]
				} else {
					id = randID()
				}
				tm.Delete(id.kg, id.ts, []byte(id.key))
				delete(m, id)
			case op < 15:
				upTo := clock + int64(r.Intn(40))
				clock = upTo
				var got, want []timerID
				// The model fires the smallest due timer; a fire may register
				// a later timer and delete one, the same in both.
				effects := map[timerID][2]timerID{}
				effect := func(id timerID) [2]timerID {
					if e, ok := effects[id]; ok {
						return e
					}
					e := [2]timerID{
						{kg: id.kg, ts: id.ts + 5 + int64(r.Intn(20)), key: id.key + "+"},
						randID(),
					}
					effects[id] = e
					return e
				}
				for {
					ids := m.sorted()
					if len(ids) == 0 || ids[0].ts > upTo {
						break
					}
					id := ids[0]
					delete(m, id)
					want = append(want, id)
					if id.kg%3 == 0 {
						e := effect(id)
						m[e[0]] = true
						delete(m, e[1])
					}
				}
				err := tm.Advance(upTo, func(kg int, ts int64, key []byte) error {
					id := timerID{kg, ts, string(key)}
					got = append(got, id)
					if kg%3 == 0 {
						e := effect(id)
						tm.Register(e[0].kg, e[0].ts, []byte(e[0].key))
						tm.Delete(e[1].kg, e[1].ts, []byte(e[1].key))
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("seed %d step %d: Advance(%d) fired\n%v\nwant\n%v", seed, step, upTo, got, want)
				}
			case op < 17:
				rec := &recorder{s: store{}}
				if err := tm.Snapshot(nextID, rec); err != nil {
					t.Fatal(err)
				}
				snap := timerModel{}
				for id := range m {
					snap[id] = true
				}
				pend = append(pend, inflight{nextID, rec, snap})
				nextID++
			case op < 19 && len(pend) > 0:
				// Notify the oldest in-flight checkpoint (late notifications
				// are allowed: a newer snapshot may be in flight too).
				p := pend[0]
				pend = pend[1:]
				if r.Intn(3) == 0 {
					// An abort after the commit step leaves the aborted
					// delta in the working DB: the next checkpoints must
					// still bring it to the right state.
					if r.Intn(2) == 0 {
						replay(committed, p.rec)
						stale = true
					}
					tm.Abort(p.id)
				} else {
					tm.Complete(p.id)
					replay(committed, p.rec)
					lastCommitted = p.snap
					stale = false
					if len(pend) == 0 {
						want := store{}
						for id := range lastCommitted {
							want[id.stateKey("op")] = ""
						}
						if !same(committed, want) {
							t.Fatalf("seed %d step %d: after checkpoint %d the state has %d timers, want %d", seed, step, p.id, len(committed), len(want))
						}
					}
				}
			default:
				if len(pend) > 0 || stale {
					continue
				}
				// Restore the committed state at a random split.
				want := store{}
				for id := range lastCommitted {
					want[id.stateKey("op")] = ""
				}
				if !same(committed, want) {
					t.Fatalf("seed %d step %d: committed state has %d timers, want %d", seed, step, len(committed), len(want))
				}
				cut := r.Intn(maxP + 1)
				a, _ := NewTimers("op", "event", maxP, true)
				b, _ := NewTimers("op", "event", maxP, true)
				if err := a.Restore(scanStore(committed), 0, cut); err != nil {
					t.Fatal(err)
				}
				if err := b.Restore(scanStore(committed), cut, maxP); err != nil {
					t.Fatal(err)
				}
				if a.Len()+b.Len() != len(lastCommitted) {
					t.Fatalf("seed %d: restored %d+%d timers, want %d", seed, a.Len(), b.Len(), len(lastCommitted))
				}
				// Continue from the restored state (both halves merged back).
				tm, _ = NewTimers("op", "event", maxP, true)
				if err := tm.Restore(scanStore(committed), 0, maxP); err != nil {
					t.Fatal(err)
				}
				m = timerModel{}
				for id := range lastCommitted {
					m[id] = true
				}
			}
			if tm.Len() != len(m) {
				t.Fatalf("seed %d step %d: Len %d, want %d", seed, step, tm.Len(), len(m))
			}
			next, ok := tm.Next()
			if ids := m.sorted(); ok != (len(ids) > 0) || ok && next != ids[0].ts {
				t.Fatalf("seed %d step %d: Next = %d, %v; model %v", seed, step, next, ok, ids)
			}
		}
	}
}
