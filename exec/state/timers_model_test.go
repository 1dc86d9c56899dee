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

func (a timerID) less(b timerID) bool {
	if a.ts != b.ts {
		return a.ts < b.ts
	}
	if a.kg != b.kg {
		return a.kg < b.kg
	}
	return a.key < b.key
}

// min is the first timer in firing order (ok false: none).
func (m timerModel) min() (first timerID, ok bool) {
	for id := range m {
		if !ok || id.less(first) {
			first, ok = id, true
		}
	}
	return first, ok
}

func (m timerModel) sorted() []timerID {
	ids := make([]timerID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].less(ids[j]) })
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
			case op == 0 && r.Intn(8) == 0:
				// A burst (the radix sorts of a large bucket and change
				// set): hundreds of timers at one time, keys of up to 40
				// bytes sharing long prefixes, some registered twice.
				ts := clock + 1 + int64(r.Intn(20))
				for i := 0; i < 300+r.Intn(100); i++ {
					kg := []int{1, 2, 4, 5, 7}[r.Intn(5)] // fires that register none (no chains: the model is slow)
					id := timerID{kg: kg, ts: ts,
						key: fmt.Sprintf("%0*d", 1+r.Intn(40), r.Intn(500))}
					tm.Register(id.kg, id.ts, []byte(id.key))
					m[id] = true
				}
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
				// A third effect acts on a timer due at the same time and not
				// fired yet: deletes it (it must not fire) or registers it
				// again (a no-op: it must fire once).
				effects := map[timerID][3]timerID{}
				effect := func(id timerID) [3]timerID {
					if e, ok := effects[id]; ok {
						return e
					}
					e := [3]timerID{
						{kg: id.kg, ts: id.ts + 5 + int64(r.Intn(20)), key: id.key + "+"},
						randID(),
					}
					var same []timerID
					for o := range m {
						if o.ts == id.ts && o != e[1] { // (a timer deleted and set again during the fire fires after its bucket)
							same = append(same, o)
						}
					}
					sort.Slice(same, func(i, j int) bool { return same[i].less(same[j]) })
					if len(same) > 0 {
						e[2] = same[r.Intn(len(same))]
					}
					effects[id] = e
					return e
				}
				sameTS := func(id timerID, e timerID, register, deleteIt func(timerID)) {
					if e.key == "" {
						return
					}
					if id.key < "k1" {
						register(e)
					} else {
						deleteIt(e)
					}
				}
				for {
					id, ok := m.min()
					if !ok || id.ts > upTo {
						break
					}
					delete(m, id)
					want = append(want, id)
					if id.kg%3 == 0 {
						e := effect(id)
						m[e[0]] = true
						delete(m, e[1])
						sameTS(id, e[2], func(x timerID) { m[x] = true }, func(x timerID) { delete(m, x) })
					}
				}
				err := tm.Advance(upTo, func(kg int, ts int64, key []byte) error {
					id := timerID{kg, ts, string(key)}
					got = append(got, id)
					if kg%3 == 0 {
						e := effect(id)
						tm.Register(e[0].kg, e[0].ts, []byte(e[0].key))
						tm.Delete(e[1].kg, e[1].ts, []byte(e[1].key))
						sameTS(id, e[2], func(x timerID) { tm.Register(x.kg, x.ts, []byte(x.key)) },
							func(x timerID) { tm.Delete(x.kg, x.ts, []byte(x.key)) })
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
				// A snapshot writes its keys in order, each once (the
				// checkpoint merges sorted runs).
				for i := 1; i < len(rec.ops); i++ {
					if rec.ops[i-1][4:] >= rec.ops[i][4:] {
						t.Fatalf("seed %d step %d: snapshot writes out of order: %s then %s", seed, step, rec.ops[i-1], rec.ops[i])
					}
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
			if first, any := m.min(); ok != any || ok && next != first.ts {
				t.Fatalf("seed %d step %d: Next = %d, %v; model %v", seed, step, next, ok, m.sorted())
			}
		}
	}
}
