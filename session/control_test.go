package session

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/control"
	"github.com/streamsql/streamsql/parser"
)

// TestControlREST drives a session's jobs over the REST API: list,
// details, checkpoints, savepoint, stop with savepoint, cancel.
func TestControlREST(t *testing.T) {
	s, lw, mem := newLoggedSession(t)
	tmp := t.TempDir()
	ctl := NewControl(s)
	srv := control.NewServer(ctl, "")
	hs := httptest.NewServer(srv.Handler())
	defer func() {
		hs.Close()
		srv.Close()
		s.Close()
		mem.AssertSize(t, 0)
	}()
	c := &control.Client{URL: hs.URL}
	ctx := context.Background()

	id := unboundedJob(t, s, filepath.Join(tmp, "ck"))
	// A second job without checkpointing, and a SELECT (not listed).
	res := execAll(t, s, `RESET 'execution.checkpointing.interval';
CREATE TABLE plain (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '10');
CREATE TABLE hole (id BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO hole SELECT id FROM plain;
SELECT id FROM plain;`)
	plainID := res[3].JobID
	res[4].Stream.Cancel()
	for range res[4].Stream.Changes {
	}
	<-lw.waitFor("checkpoint 1 complete")

	ov, err := c.Overview(ctx)
	if err != nil || len(ov) != 2 || ov[0].ID != id || ov[0].Name != "insert-into_snk" || ov[0].State != "RUNNING" || ov[1].ID != plainID {
		t.Fatalf("overview: %+v %v", ov, err)
	}
	d, err := c.Job(ctx, id)
	if err != nil || d.Attempts != 1 || d.CheckpointDir == "" || d.Parallelism < 1 || d.SavepointDir != "" {
		t.Fatalf("details: %+v %v", d, err)
	}
	st, err := c.Checkpoints(ctx, id)
	if err != nil || st.Counts.Completed < 1 || st.Latest.Completed == nil || len(st.History) == 0 {
		t.Fatalf("checkpoints: %+v %v", st, err)
	}

	// Savepoint without a directory: no default in this session.
	rid, err := c.TriggerSavepoint(ctx, id, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Await(ctx, id, rid); err == nil || !strings.Contains(err.Error(), "state.savepoints.dir") {
		t.Fatalf("savepoint without a directory: %v", err)
	}
	// Savepoint of a job without checkpointing.
	if rid, err = c.TriggerSavepoint(ctx, plainID, filepath.Join(tmp, "sp"), false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Await(ctx, plainID, rid); err == nil || !strings.Contains(err.Error(), "takes no checkpoints") {
		t.Fatalf("savepoint without checkpointing: %v", err)
	}
	// A savepoint; then SET through Control (as the shell does) names the
	// default directory, which stop uses.
	rid, err = c.TriggerSavepoint(ctx, id, filepath.Join(tmp, "sp"), false)
	if err != nil {
		t.Fatal(err)
	}
	sp1, err := c.Await(ctx, id, rid)
	if err != nil || !strings.HasPrefix(sp1, filepath.Join(tmp, "sp", "savepoint-"+id[:6])) {
		t.Fatalf("savepoint: %q %v", sp1, err)
	}
	if _, err := os.Stat(filepath.Join(sp1, "_metadata")); err != nil {
		t.Fatal(err)
	}
	set, _ := parser.Parse("SET 'state.savepoints.dir' = '" + filepath.Join(tmp, "default") + "'")
	if _, err := ctl.Execute(ctx, set); err != nil {
		t.Fatal(err)
	}
	rid, err = c.TriggerStop(ctx, id, "", false)
	if err != nil {
		t.Fatal(err)
	}
	sp2, err := c.Await(ctx, id, rid)
	if err != nil || filepath.Dir(sp2) != filepath.Join(tmp, "default") {
		t.Fatalf("stop: %q %v", sp2, err)
	}
	d, err = c.Job(ctx, id)
	if err != nil || d.State != "FINISHED" || len(d.Savepoints) != 2 || d.Savepoints[0].Location != sp1 || d.Savepoints[1].Location != sp2 {
		t.Fatalf("after stop: %+v %v", d, err)
	}
	var ae *control.APIError
	if _, err := c.TriggerStop(ctx, id, "", false); !errors.As(err, &ae) || ae.Status != 409 {
		t.Fatalf("stopping a finished job: %v", err)
	}

	if err := c.Cancel(ctx, plainID); err != nil {
		t.Fatal(err)
	}
	if d, _ := c.Job(ctx, plainID); d.State != "CANCELED" {
		t.Fatalf("after cancel: %s", d.State)
	}
	// The SELECT's job is not reachable over the API.
	for _, in := range s.Jobs() {
		if in.Name == "collect" {
			if _, err := c.Job(ctx, in.ID); !errors.As(err, &ae) || ae.Status != 404 {
				t.Fatalf("SELECT job over REST: %v", err)
			}
		}
	}
}
