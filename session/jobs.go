package session

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/exec/state"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner"
)

// EngineVersion is recorded in checkpoint and savepoint metadata; the
// command sets it from its build version.
var EngineVersion = "devel"

// ckptSetup is a job's checkpointing: its store and runtime configuration.
type ckptSetup struct {
	store  *checkpoint.Store
	cfg    *exec.CheckpointConfig
	retain bool
}

// release closes the store when the job ends: checkpoints are removed when
// the job finished or was cancelled, unless RETAIN_ON_CANCELLATION; a failed
// job keeps them (as Flink), so that `run --from` can resume it. A job that
// keeps its checkpoints loses only its working state (taskowned/ is
// emptied, never restored from); a killed process leaves everything.
func (c *ckptSetup) release(status string) error {
	if status == "FAILED" || c.retain {
		return c.store.DiscardWorking()
	}
	return c.store.Discard()
}

// storeOptions are the options of a job's state store in dir.
func (s *Session) storeOptions(dir, jobID string) checkpoint.Options {
	o := s.Options
	opts := checkpoint.Options{Dir: dir, JobID: jobID, NumRetained: o.Int("state.checkpoints.num-retained"),
		AllowFallback: o.Bool(checkpoint.FallbackOption),
		Logf:          func(format string, args ...any) { fmt.Fprintf(s.cfg.Log, format+"\n", args...) }}
	// validated on SET
	opts.CompressionPerLevel, _ = checkpoint.ParseCompressionPerLevel(o.Get("state.backend.rocksdb.compression.per.level"))
	if b, err := state.ParseBackend(o.Get(state.OptBackendType)); err == nil && b == state.BackendPebble {
		// tiered keyed state reads its cold keys from the working DB: it
		// gets the block cache a spill DB would
		opts.CacheSize = state.SpillCacheSize(o.MemorySize(state.OptMemoryBudget))
	}
	return opts
}

// setupCheckpointing opens the state store of a new job when checkpointing
// is on or the job restores from execution.savepoint.path. Errors (bad
// options, a checkpoint that fails verification) are reported at submit.
func (s *Session) setupCheckpointing(jobID, name string, st parser.Statement, ph *planner.Physical) (*ckptSetup, error) {
	o := s.Options
	interval := o.Duration("execution.checkpointing.interval")
	from := o.Path("execution.savepoint.path")
	if interval == 0 && from == "" {
		return nil, nil
	}
	dir := o.Path("state.checkpoints.dir")
	if dir == "" {
		if from == "" {
			return nil, &parser.Error{Pos: st.Position(), Msg: "'execution.checkpointing.interval' is set but 'state.checkpoints.dir' is not: SET 'state.checkpoints.dir' = '/path/to/checkpoints'"}
		}
		dir = checkpointRootOf(from)
	}
	opts := s.storeOptions(dir, jobID)
	c := &ckptSetup{retain: strings.EqualFold(o.Get("execution.checkpointing.externalized-checkpoint-retention"), "RETAIN_ON_CANCELLATION")}
	c.cfg = &exec.CheckpointConfig{
		Interval:        interval,
		AtLeastOnce:     strings.EqualFold(o.Get("execution.checkpointing.mode"), "AT_LEAST_ONCE"),
		Timeout:         o.Duration("execution.checkpointing.timeout"),
		MinPause:        o.Duration("execution.checkpointing.min-pause"),
		TolerableFailed: o.Int("execution.checkpointing.tolerable-failed-checkpoints"),
		MaxConcurrent:   o.Int("execution.checkpointing.max-concurrent-checkpoints"),
		Unaligned:       o.Bool("execution.checkpointing.unaligned.enabled") || o.Bool("execution.checkpointing.unaligned"),
		AlignedTimeout:  o.Duration("execution.checkpointing.aligned-checkpoint-timeout"),
		FirstID:         1,
		Meta: map[string]string{
			"job_name":        name,
			"sql":             st.SQL(),
			"parallelism":     strconv.Itoa(o.Int("parallelism.default")),
			"max_parallelism": strconv.Itoa(o.Int("pipeline.max-parallelism")),
			"engine_version":  EngineVersion,
			"operators":       planner.OperatorsMeta(ph),
		},
	}
	c.cfg.Meta["plan_fingerprint"] = fmt.Sprintf("%x", sha256.Sum256([]byte(c.cfg.Meta["operators"])))[:16]
	var err error
	if from != "" {
		var info checkpoint.Info
		c.store, info, err = checkpoint.Restore(opts, from)
		if err != nil {
			return nil, &parser.Error{Pos: st.Position(), Msg: fmt.Sprintf("cannot restore from '%s' (execution.savepoint.path): %v", from, err)}
		}
		if mp := info.Meta["max_parallelism"]; mp != "" && mp != strconv.Itoa(o.Int("pipeline.max-parallelism")) {
			c.store.Discard()
			return nil, &parser.Error{Pos: st.Position(), Msg: fmt.Sprintf("'pipeline.max-parallelism' is %d but %s was taken with %s: the number of key groups cannot change on restore (keyed state is stored per key group); SET 'pipeline.max-parallelism' = '%s'",
				o.Int("pipeline.max-parallelism"), info.Path, mp, mp)}
		}
		// The new plan must be able to take the state over: every operator's
		// state restored or new; incompatible state refused, unclaimed state
		// refused unless execution.savepoint.ignore-unclaimed-state.
		if ops := info.Meta["operators"]; ops != "" {
			rep, err := planner.CheckUpgrade(ops, ph, s.ignoreUnclaimed())
			if err == nil {
				err = rep.Err()
			}
			if err != nil {
				c.store.Discard()
				return nil, &parser.Error{Pos: st.Position(), Msg: fmt.Sprintf("cannot restore from '%s': %v", from, err)}
			}
		}
		for _, why := range info.Skipped {
			fmt.Fprintf(s.cfg.Log, "job %s: skipped a newer checkpoint: %s\n", jobID, why)
		}
		fmt.Fprintf(s.cfg.Log, "job %s: restoring %s\n", jobID, info.Path)
		c.cfg.Restore = true
		c.cfg.FirstID = info.ID + 1
		c.cfg.Meta["restored_from"] = info.Path
	} else {
		c.store, err = checkpoint.Open(opts)
		if err != nil {
			return nil, &parser.Error{Pos: st.Position(), Msg: fmt.Sprintf("state.checkpoints.dir: %v", err)}
		}
	}
	c.cfg.Backend = c.store
	return c, nil
}

// checkpointRootOf returns the state.checkpoints.dir a checkpoint path lives
// in: <root>/<job-id>[/chk-<n>].
func checkpointRootOf(path string) string {
	p := filepath.Clean(path)
	if strings.HasPrefix(filepath.Base(p), "chk-") {
		p = filepath.Dir(p)
	}
	return filepath.Dir(p)
}

// observeCheckpoints makes the job's checkpoints visible (SHOW JOBS, the
// log) and then applies the test hook, which may wrap what is set here. It
// runs before the job's goroutine starts, in submission order.
func (s *Session) observeCheckpoints(j *job, ck *ckptSetup) {
	ck.cfg.OnComplete = func(info checkpoint.Info) {
		j.mu.Lock()
		j.info.Checkpoints++
		j.info.LastCheckpoint = info.ID
		j.mu.Unlock()
		if s.cfg.OnCheckpoint != nil {
			s.cfg.OnCheckpoint(j.info.ID, info)
		}
		if info.Kind == checkpoint.KindSavepoint {
			fmt.Fprintf(s.cfg.Log, "job %s: savepoint %d complete: %s (%d bytes)\n", j.info.ID, info.ID, info.Path, info.Size)
			return
		}
		fmt.Fprintf(s.cfg.Log, "job %s: checkpoint %d complete (%d bytes, %d written, sync %d ms, async %d ms)\n",
			j.info.ID, info.ID, info.Size, info.Written, info.SyncMS, info.AsyncMS)
	}
	ck.cfg.OnFailure = func(id int64, err error) {
		fmt.Fprintf(s.cfg.Log, "job %s: checkpoint %d failed: %v\n", j.info.ID, id, err)
	}
	if s.CheckpointTestHook != nil {
		s.CheckpointTestHook(ck.cfg) // last: it may wrap what the session set
	}
}

// runAttempts runs the job, restarting it after failures as the restart
// strategy allows; with checkpointing each restart restores the latest
// complete checkpoint (nothing lost, nothing counted twice).
func (s *Session) runAttempts(ctx context.Context, j *job, ph *planner.Physical, cfg exec.JobConfig, ck *ckptSetup, policy *restartPolicy) error {
	return exec.RunAttempts(ctx, ph, cfg, func(now time.Time, err error) (time.Duration, bool) {
		return policy.next(now)
	}, func(at exec.Attempt) {
		j.mu.Lock()
		j.info.Attempts++
		j.info.Failures = append(j.info.Failures, at.Err.Error())
		j.mu.Unlock()
		msg := "no checkpoint to restore: restarting from the beginning"
		if at.Restored {
			msg = fmt.Sprintf("restored checkpoint %d", at.From.ID)
			for _, why := range at.From.Skipped {
				fmt.Fprintf(s.cfg.Log, "job %s: skipped a newer checkpoint (%s): %s\n", j.info.ID, checkpoint.FallbackOption, why)
			}
		}
		fmt.Fprintf(s.cfg.Log, "job %s: attempt %d failed: %v; %s\n", j.info.ID, at.Number, at.Err, msg)
	})
}
