package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamsql/streamsql/control"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/session"
)

// This file is job control across processes: the REST API and registry
// entry every shell and `run` process has, and the verbs list, savepoint,
// stop and cancel that use them.

// exitHooks run before the process exits through os.Exit (a second signal,
// SIGTERM in the shell), where deferred calls do not run: they remove the
// registry entry.
var exitHooks struct {
	mu  sync.Mutex
	fns map[int]func()
	n   int
}

// atExit registers fn; the returned function unregisters it.
func atExit(fn func()) (remove func()) {
	exitHooks.mu.Lock()
	defer exitHooks.mu.Unlock()
	if exitHooks.fns == nil {
		exitHooks.fns = map[int]func(){}
	}
	exitHooks.n++
	id := exitHooks.n
	exitHooks.fns[id] = fn
	return func() {
		exitHooks.mu.Lock()
		delete(exitHooks.fns, id)
		exitHooks.mu.Unlock()
	}
}

// runExitHooks runs (and clears) every registered hook.
func runExitHooks() {
	exitHooks.mu.Lock()
	fns := exitHooks.fns
	exitHooks.fns = nil
	exitHooks.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// controlPlane is a process's REST API and registry entry.
type controlPlane struct {
	ctl     *session.Control
	srv     *control.Server
	reg     *control.Registration
	log     io.Writer
	rest    map[string]string // rest.* options the server started with
	unhook  func()
	closeMu sync.Once
}

// restKeys are the options read when the REST API starts.
var restKeys = []string{"rest.address", "rest.port", "rest.token"}

// startControl starts the REST API of session s and registers the process.
// A configuration the API refuses (a non-loopback address without a token,
// a port in use) is an error; a registry that cannot be written only
// disables discovery, with a warning.
func startControl(s *session.Session, log io.Writer, command string) (*controlPlane, error) {
	o := s.Options
	cfg := control.Config{Address: o.Get("rest.address"), Port: o.Int("rest.port"), Token: o.Get("rest.token")}
	if cfg.Token == "" {
		cfg.Token = os.Getenv(control.TokenEnv)
	}
	cp := &controlPlane{ctl: session.NewControl(s), log: log, rest: map[string]string{}}
	for _, k := range restKeys {
		cp.rest[k] = o.Get(k)
	}
	srv, err := control.Start(cp.ctl, cfg)
	if err != nil {
		return nil, err
	}
	cp.srv = srv
	reg, err := control.DefaultRegistry().Register(control.Entry{URL: srv.URL(), TokenSHA256: control.HashToken(cfg.Token),
		Command: command, Version: versionString()})
	if err != nil {
		fmt.Fprintf(log, "[WARNING] 'streamsql list' will not find this process: %v\n", err)
	}
	cp.reg = reg
	cp.unhook = atExit(func() { _ = cp.reg.Remove() })
	if o.IsSet("rest.address") || o.IsSet("rest.port") || cfg.Token != "" {
		auth := "no token"
		if cfg.Token != "" {
			auth = "token " + control.Mask(cfg.Token)
		}
		fmt.Fprintf(log, "[INFO] REST API listening on %s (rest.address %s, %s)\n", srv.URL(), cfg.Address, auth)
	}
	return cp, nil
}

// close removes the registry entry and stops the API; idempotent.
func (cp *controlPlane) close() {
	if cp == nil {
		return
	}
	cp.closeMu.Do(func() {
		_ = cp.reg.Remove()
		cp.unhook()
		_ = cp.srv.Close()
	})
}

// execute runs a statement through the control view (or the session when
// there is no API), and warns when it sets a rest.* option too late.
func (cp *controlPlane) execute(s *session.Session, st parser.Statement) (*session.Result, error) {
	if cp == nil {
		return s.Execute(context.Background(), st)
	}
	res, err := cp.ctl.Execute(context.Background(), st)
	if x, ok := st.(*parser.Set); ok && err == nil && strings.HasPrefix(x.Key, "rest.") {
		fmt.Fprintf(cp.log, "[WARNING] '%s' takes effect when streamsql starts (give it with --set or in the -i file); the REST API keeps serving at %s\n", x.Key, cp.srv.URL())
	}
	return res, err
}

// verbContext ends when the user presses Ctrl-C or sends SIGTERM.
func verbContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// verbError reports a failed verb and returns exit status 1.
func verbError(e *env, verb string, err error) error {
	fmt.Fprintf(e.stderr, "streamsql %s: %v\n", verb, err)
	return exitCode(exitFailure)
}

const tokenHelp = `Local streamsql processes are found without configuration: each shell and
'streamsql run' registers its REST API under $XDG_RUNTIME_DIR/streamsql (or
<tmp>/streamsql-<uid>) and removes the entry on exit; entries of processes
that died are ignored and deleted. A process whose API requires a token
(rest.token) is reached with the token in ` + control.TokenEnv + `.`

const listLong = `List shows the jobs of every streamsql process (shell or 'streamsql run')
running on this machine under your user: the process id, job id, name,
status and start time. SELECT queries of a shell are not listed.

` + tokenHelp + `

Exit status: 0, 1 when the registry cannot be read.`

func newListCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the jobs of the streamsql processes on this machine",
		Long:  listLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := verbContext()
			defer cancel()
			procs, err := control.Discover(ctx, control.DefaultRegistry(), os.Getenv(control.TokenEnv))
			if err != nil {
				return verbError(e, "list", err)
			}
			var rows [][]string
			for _, p := range procs {
				if p.Err != nil {
					fmt.Fprintf(e.stderr, "streamsql list: %v\n", p.Err)
					continue
				}
				jobs := append([]control.JobOverview(nil), p.Jobs...)
				sort.SliceStable(jobs, func(i, j int) bool { return jobs[i].StartTime < jobs[j].StartTime })
				for _, j := range jobs {
					rows = append(rows, []string{strconv.Itoa(p.Entry.PID), j.ID, j.Name, j.State,
						time.UnixMilli(j.StartTime).Format("2006-01-02 15:04:05.000")})
				}
			}
			if len(rows) == 0 {
				_, err := fmt.Fprintln(e.stdout, "No running jobs.")
				return err
			}
			return writeBoxTable(e.stdout, []string{"pid", "job id", "job name", "status", "start time"}, rows)
		},
	}
}

// targetDir makes a savepoint directory given on the command line absolute:
// the process that writes it has its own working directory.
func targetDir(dir string) (string, error) {
	if dir == "" || strings.Contains(dir, "://") || strings.HasPrefix(dir, "file:") {
		return dir, nil
	}
	return filepath.Abs(dir)
}

const savepointLong = `Savepoint takes a savepoint of a running job of a local streamsql process
and prints its path; the job keeps running. DIR is where the savepoint
directory (savepoint-<job id prefix>-<random>) is created; without it, the
job's process uses its state.savepoints.dir. The job must have been
submitted with checkpointing on (execution.checkpointing.interval and
state.checkpoints.dir). Restore with 'streamsql run --from PATH'.

JOB-ID is the job's id as 'streamsql list' shows it, or a prefix of it that
matches one job.

` + tokenHelp + `

Exit status: 0 when the savepoint completed, 1 otherwise.`

func newSavepointCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "savepoint JOB-ID [DIR]",
		Short:   "Take a savepoint of a running job",
		Long:    savepointLong,
		Example: "  streamsql savepoint 4f1c0d2e9a8b7c6d5e4f3a2b1c0d9e8f /var/lib/streamsql/savepoints",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := ""
			if len(args) == 2 {
				var err error
				if dir, err = targetDir(args[1]); err != nil {
					return verbError(e, "savepoint", err)
				}
			}
			ctx, cancel := verbContext()
			defer cancel()
			c, _, job, err := control.FindJob(ctx, control.DefaultRegistry(), os.Getenv(control.TokenEnv), args[0])
			if err != nil {
				return verbError(e, "savepoint", err)
			}
			fmt.Fprintf(e.stderr, "Triggering savepoint for job %s.\n", job.ID)
			rid, err := c.TriggerSavepoint(ctx, job.ID, dir, false)
			if err != nil {
				return verbError(e, "savepoint", err)
			}
			fmt.Fprintf(e.stderr, "Waiting for response...\n")
			loc, err := c.Await(ctx, job.ID, rid)
			if err != nil {
				return verbError(e, "savepoint", fmt.Errorf("job %s: %v", job.ID, err))
			}
			fmt.Fprintf(e.stdout, "Savepoint completed. Path: %s\n", loc)
			return nil
		},
	}
}

const stopLong = `Stop stops a running job with a savepoint, as Flink's 'stop' does: sources
stop at a barrier, the savepoint completes, sinks commit and the job ends
FINISHED (a 'streamsql run' process whose jobs all ended then exits 0).
It prints the savepoint's path.

The savepoint goes into --savepoint DIR, or else the state.savepoints.dir of
the job's process; when neither is there, stop refuses (a job is never
stopped without a savepoint: use 'streamsql cancel' for that). With
--drain, the end of the input goes through the job before the savepoint, so
that every operator finishes as at the end of a bounded source: as in
Flink, the watermark goes to its maximum and every pending event-time
window fires before the savepoint. A drained savepoint is for ending a job
for good: a job resumed from it has emitted those windows, and one that gets
more rows for them emits them again (see docs/savepoints.md).

` + tokenHelp + `

Exit status: 0 when the job stopped with its savepoint, 1 otherwise.`

func newStopCmd(e *env) *cobra.Command {
	var dir string
	var drain bool
	cmd := &cobra.Command{
		Use:     "stop [--savepoint DIR] [--drain] JOB-ID",
		Short:   "Stop a job with a savepoint",
		Long:    stopLong,
		Example: "  streamsql stop --savepoint /var/lib/streamsql/savepoints 4f1c0d2e9a8b7c6d5e4f3a2b1c0d9e8f",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			target, err := targetDir(dir)
			if err != nil {
				return verbError(e, "stop", err)
			}
			ctx, cancel := verbContext()
			defer cancel()
			c, p, job, err := control.FindJob(ctx, control.DefaultRegistry(), os.Getenv(control.TokenEnv), args[0])
			if err != nil {
				return verbError(e, "stop", err)
			}
			if target == "" {
				d, err := c.Job(ctx, job.ID)
				if err != nil {
					return verbError(e, "stop", err)
				}
				if d.SavepointDir == "" {
					return verbError(e, "stop", fmt.Errorf("job %s: no savepoint directory: give --savepoint DIR (its process %d has no state.savepoints.dir)", job.ID, p.Entry.PID))
				}
			}
			fmt.Fprintf(e.stderr, "Suspending job %s.\n", job.ID)
			rid, err := c.TriggerStop(ctx, job.ID, target, drain)
			if err != nil {
				return verbError(e, "stop", err)
			}
			loc, err := c.Await(ctx, job.ID, rid)
			if err != nil {
				return verbError(e, "stop", fmt.Errorf("job %s: %v", job.ID, err))
			}
			fmt.Fprintf(e.stdout, "Savepoint completed. Path: %s\n", loc)
			return nil
		},
	}
	cmd.Flags().StringVarP(&dir, "savepoint", "p", "", "create the savepoint in this `DIR` (default: the job's state.savepoints.dir)")
	cmd.Flags().BoolVarP(&drain, "drain", "d", false, "send the end of the input through the job before the savepoint (windows would fire; streamsql has none yet)")
	return cmd
}

const cancelLong = `Cancel cancels a running job of a local streamsql process without a
savepoint and waits until it ended (CANCELED). Its checkpoints are deleted
unless the job set 'execution.checkpointing.externalized-checkpoint-retention'
= 'RETAIN_ON_CANCELLATION'. To keep the job's state, use 'streamsql stop'.

` + tokenHelp + `

Exit status: 0 when the job was cancelled, 1 otherwise.`

func newCancelCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel JOB-ID",
		Short: "Cancel a running job",
		Long:  cancelLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := verbContext()
			defer cancel()
			c, _, job, err := control.FindJob(ctx, control.DefaultRegistry(), os.Getenv(control.TokenEnv), args[0])
			if err != nil {
				return verbError(e, "cancel", err)
			}
			if err := c.Cancel(ctx, job.ID); err != nil {
				return verbError(e, "cancel", err)
			}
			fmt.Fprintf(e.stdout, "Cancelled job %s.\n", job.ID)
			return nil
		},
	}
}
