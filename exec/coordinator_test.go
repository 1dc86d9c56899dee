package exec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/streamsql/streamsql/checkpoint"
)

// scriptBackend records what the coordinator asks of the state store.
type scriptBackend struct {
	log        *[]string
	failCommit map[int64]bool
}

func (b scriptBackend) Commit(id int64, bufs []*checkpoint.Buffer) error {
	if b.failCommit[id] {
		*b.log = append(*b.log, fmt.Sprintf("store: commit %d fails", id))
		return errors.New("disk full")
	}
	*b.log = append(*b.log, fmt.Sprintf("store: commit %d (%d buffers)", id, len(bufs)))
	return nil
}
func (b scriptBackend) Persist(id int64, _ checkpoint.Kind, _ map[string]string) (checkpoint.Info, error) {
	*b.log = append(*b.log, fmt.Sprintf("store: persist chk-%d", id))
	return checkpoint.Info{ID: id, Kind: checkpoint.KindCheckpoint}, nil
}
func (b scriptBackend) Abort(id int64) error {
	*b.log = append(*b.log, fmt.Sprintf("store: abort %d", id))
	return nil
}
func (b scriptBackend) Reader() checkpoint.StateReader { return nil }
func (b scriptBackend) RestoreLatest() (checkpoint.Info, bool, error) {
	return checkpoint.Info{}, false, nil
}
func (b scriptBackend) PersistSavepoint(id int64, dir string, _ map[string]string) (checkpoint.Info, error) {
	*b.log = append(*b.log, fmt.Sprintf("store: persist savepoint %d", id))
	return checkpoint.Info{ID: id, Kind: checkpoint.KindSavepoint}, nil
}

// TestCoordinatorScripts runs testdata/coordinator: the coordinator's state
// machine driven by scripted triggers, acks, expiries and failures,
// printing what it tells the store, the subtasks and requesters.
//
//	coord subtasks=N sources=M tolerable=T   a new coordinator (slots 0..M-1 are sources)
//	trigger [savepoint] [stop] [final]       start a checkpoint (or savepoint)
//	ack slot=S id=I [err]                    subtask S acknowledges (or fails) checkpoint I
//	expire                                   every pending checkpoint's deadline passes
//	fail-commit id=I                         the store will fail to commit I
func TestCoordinatorScripts(t *testing.T) {
	var c *coordinator
	var log []string
	var boxes []*mailbox[ctlMsg]
	var backend scriptBackend
	var reqs []*SavepointRequest
	datadriven.RunTest(t, "testdata/coordinator", func(t *testing.T, d *datadriven.TestData) string {
		log = log[:0]
		var err error
		switch d.Cmd {
		case "coord":
			var n, srcs, tol int
			d.ScanArgs(t, "subtasks", &n)
			d.ScanArgs(t, "sources", &srcs)
			d.ScanArgs(t, "tolerable", &tol)
			backend = scriptBackend{log: &log, failCommit: map[int64]bool{}}
			cfg := &CheckpointConfig{Backend: backend, Timeout: time.Hour, TolerableFailed: tol,
				OnComplete: func(i checkpoint.Info) { log = append(log, fmt.Sprintf("completed %d (%s)", i.ID, i.Kind)) },
				OnFailure:  func(id int64, err error) { log = append(log, fmt.Sprintf("failed %d: %v", id, err)) }}
			c = newCoordinator(cfg)
			boxes = nil
			for i := 0; i < n; i++ {
				_, m := c.addSubtask(i < srcs)
				boxes = append(boxes, m)
			}
			return ""
		case "trigger":
			if d.HasArg("savepoint") {
				req := &SavepointRequest{Dir: "sp", Stop: d.HasArg("stop"), Done: make(chan SavepointResult, 1)}
				reqs = append(reqs, req)
				c.request(req)
			} else {
				c.trigger(trigger{final: d.HasArg("final")})
			}
		case "ack":
			var slot int
			var id int64
			d.ScanArgs(t, "slot", &slot)
			d.ScanArgs(t, "id", &id)
			a := ack{slot: slot, id: id, buf: checkpoint.NewBuffer()}
			if d.HasArg("err") {
				a.err = errors.New("snapshot failed")
			}
			err = c.onAck(a)
		case "expire":
			err = c.expire(time.Now().Add(2 * time.Hour))
		case "fail-commit":
			var id int64
			d.ScanArgs(t, "id", &id)
			backend.failCommit[id] = true
			return ""
		default:
			d.Fatalf(t, "unknown directive %s", d.Cmd)
		}
		out := append([]string(nil), log...)
		for i, m := range boxes {
			for {
				msg, ok := m.pop()
				if !ok {
					break
				}
				switch msg.kind {
				case ctlTrigger:
					kind := "checkpoint"
					if msg.tr.savepoint {
						kind = "savepoint"
					}
					if msg.tr.stop {
						kind += " (stop)"
					}
					if msg.tr.final {
						kind += " (final)"
					}
					out = append(out, fmt.Sprintf("subtask %d: trigger %s %d", i, kind, msg.tr.id))
				case ctlComplete:
					out = append(out, fmt.Sprintf("subtask %d: complete %d commit=%v", i, msg.id, msg.commit))
				case ctlAbort:
					out = append(out, fmt.Sprintf("subtask %d: abort %d", i, msg.id))
				case ctlShutdown:
					out = append(out, fmt.Sprintf("subtask %d: shutdown", i))
				}
			}
		}
		for _, r := range reqs {
			select {
			case res := <-r.Done:
				if res.Err != nil {
					out = append(out, "requester: savepoint failed: "+res.Err.Error())
				} else {
					out = append(out, fmt.Sprintf("requester: savepoint %d", res.Info.ID))
				}
			default:
			}
		}
		if err != nil {
			out = append(out, "attempt fails: "+err.Error())
		}
		if c.finalID != 0 {
			out = append(out, fmt.Sprintf("job ends after %d", c.finalID))
			c.finalID = 0
		}
		if len(out) == 0 {
			return ""
		}
		return strings.Join(out, "\n") + "\n"
	})
}

// TestUnalignedCheckpointsDoNotRunConcurrently: as in Flink, unaligned
// checkpoints run one at a time whatever max-concurrent-checkpoints says.
func TestUnalignedCheckpointsDoNotRunConcurrently(t *testing.T) {
	for _, c := range []struct {
		unaligned bool
		max, want int
	}{{false, 0, 1}, {false, 3, 3}, {true, 3, 1}, {true, 1, 1}} {
		cfg := &CheckpointConfig{Unaligned: c.unaligned, MaxConcurrent: c.max}
		if got := cfg.maxConcurrent(); got != c.want {
			t.Errorf("unaligned=%v max=%d: %d in flight, want %d", c.unaligned, c.max, got, c.want)
		}
	}
}
