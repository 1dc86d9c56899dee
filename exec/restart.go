package exec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/planner"
)

// UnrecoverableError is a failure that a restart cannot fix (the state to
// restore does not fit the job: a source file shorter than its offset, a
// changed parallelism...): RunAttempts does not retry it.
type UnrecoverableError struct{ Err error }

func (e *UnrecoverableError) Error() string { return e.Err.Error() }
func (e *UnrecoverableError) Unwrap() error { return e.Err }

// Restarter decides whether a failed attempt is restarted, and after how
// long (a restart strategy).
type Restarter func(now time.Time, err error) (delay time.Duration, again bool)

// Attempt describes a restart, for logs and SHOW JOBS.
type Attempt struct {
	Number   int   // the attempt that failed (1 = first)
	Err      error // why
	Restored bool  // a checkpoint was restored for the next attempt
	From     checkpoint.Info
}

// RunAttempts runs the job until it succeeds, is cancelled, or restart
// refuses another attempt (then the last failure is returned). Before each
// new attempt the state backend is reset to its latest complete checkpoint
// and every subtask restores from it (sources seek to their offsets, sinks
// complete pending commits and drop later output): nothing is lost and
// nothing counted twice. Without checkpointing a restart starts from
// scratch.
func RunAttempts(ctx context.Context, plan *planner.Physical, cfg JobConfig, restart Restarter, onRestart func(Attempt)) error {
	for n := 1; ; n++ {
		if cfg.Metrics != nil {
			cfg.Metrics.Skipped.Store(0) // restored sources add their counts back
		}
		if cfg.Metrics != nil { // counts are per attempt, as Flink's
			cfg.Metrics.RecordsIn.Store(0)
			cfg.Metrics.RecordsOut.Store(0)
		}
		err := RunJob(ctx, plan, cfg)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var unrecoverable *UnrecoverableError
		if errors.As(err, &unrecoverable) {
			return err
		}
		if errors.Is(err, ErrInjectedCrash) {
			cfg.Checkpoint.FailAfter = 0 // an injected crash fires once
		}
		delay, again := restart(time.Now(), err)
		if !again {
			return err
		}
		at := Attempt{Number: n, Err: err}
		if ck := cfg.Checkpoint; ck != nil {
			info, ok, rerr := ck.Backend.RestoreLatest()
			if rerr != nil {
				return errors.Join(err, fmt.Errorf("restoring the latest checkpoint: %w", rerr))
			}
			ck.Restore = ok || ck.Restore // a job started from a savepoint keeps restoring it
			ck.FirstID = ck.LastID + 1
			at.Restored, at.From = ok, info
		}
		if onRestart != nil {
			onRestart(at)
		}
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		}
	}
}
