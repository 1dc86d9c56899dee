package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/session"
)

const runLong = `Run executes the statements of a SQL file in order, in one session:
DDL and SET configure the session, each INSERT (or EXECUTE STATEMENT SET)
submits a job, each SELECT prints its changelog to stdout in tableau mode
until it ends (with SET 'sql-client.execution.result-mode' = 'table', the
final table when it ends). When the file is done, run waits for every
submitted job to finish and prints one summary line per job to stderr:

  job <id> (<name>) FINISHED: N records in, M out[, K bad records skipped]

While jobs run, stderr also shows their checkpoints and restarts:

  job <id>: checkpoint 3 complete (41250 bytes, 2048 written, sync 1 ms, async 9 ms)
  job <id>: attempt 1 failed: <cause>; restored checkpoint 3

Restoring: --from PATH restores every job the file submits from a checkpoint
(the same as SET 'execution.savepoint.path' = 'PATH' at the top of the
file). PATH is a chk-<n> directory, or a job directory under
state.checkpoints.dir, meaning its latest complete checkpoint. Use it to
resume after the process was killed; 'streamsql checkpoints DIR' lists what
there is. Every file of the checkpoint is verified first: a missing,
truncated or corrupted file fails the INSERT (FILE:line:col: message naming
the file) with exit status 1.

Checking an upgrade: with --check, run starts nothing. It runs the file's
DDL and SET statements and prints, for each job (INSERT, EXECUTE STATEMENT
SET, SELECT), the upgrade report against the savepoint of --from: per
stateful operator RESTORED, NEW (starts empty), UNCLAIMED (state no
operator takes) or INCOMPATIBLE (with the difference), then the verdict.
It exits 0 when every job may restore and 1 when one is refused (as the
restore itself would be); --allow-non-restored-state accepts unclaimed
state here too.

Exit status: 0 when every job finished; 1 on the first error in the file
(printed as FILE:line:col: message) or when a job fails (FILE: job <id>
failed: <cause>); 2 for a bad command line; 130 after Ctrl-C (SIGINT) and
143 after SIGTERM, which cancel the running jobs first. Cancelling a job
deletes its checkpoints unless the file sets
'execution.checkpointing.externalized-checkpoint-retention' =
'RETAIN_ON_CANCELLATION'; a killed process (kill -9) leaves them in place.`

const runExample = `  # run a job file; the print sink writes to stdout
  streamsql run jobs/word_count.sql

  # the same
  streamsql -f jobs/word_count.sql

  # create shared tables first, run with 4 parallel subtasks
  streamsql run -i tables.sql -p 4 jobs/enrich.sql

  # set a session option from the command line
  streamsql run --set execution.batch-size=256 jobs/enrich.sql

  # resume a killed job from its latest complete checkpoint
  streamsql checkpoints /var/lib/streamsql/checkpoints
  streamsql run --from /var/lib/streamsql/checkpoints/4f1c0d2e9a8b7c6d5e4f3a2b1c0d9e8f jobs/counts.sql

  # or from one particular checkpoint
  streamsql run --from /var/lib/streamsql/checkpoints/4f1c0d2e9a8b7c6d5e4f3a2b1c0d9e8f/chk-42 jobs/counts.sql

  # profile a job (go tool pprof cpu.prof)
  streamsql run --cpuprofile cpu.prof --memprofile mem.prof jobs/enrich.sql

  # will a changed query take over a savepoint's state? (starts nothing)
  streamsql run --check --from /var/lib/streamsql/savepoints/savepoint-4f1c0d-0a1b2c3d4e5f jobs/counts_v2.sql`

func newRunCmd(e *env) *cobra.Command {
	var sf sessionFlags
	var check bool
	var cpuProfile, memProfile, traceFile string
	cmd := &cobra.Command{
		Use:     "run [flags] FILE.sql",
		Short:   "Run a SQL job file and wait for its jobs to finish",
		Long:    runLong,
		Example: runExample,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if check {
				return checkFile(e, args[0], &sf)
			}
			stop, err := startProfiles(cpuProfile, memProfile, traceFile)
			if err != nil {
				return usageError{err}
			}
			defer func() {
				if perr := stop(); perr != nil {
					fmt.Fprintf(e.stderr, "streamsql: %v\n", perr)
				}
			}()
			return runFile(e, args[0], &sf)
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to `FILE` (go tool pprof FILE)")
	cmd.Flags().StringVar(&traceFile, "trace", "", "write an execution trace of the whole run to `FILE`: where goroutines block and cores idle (go tool trace FILE)")
	cmd.Flags().StringVar(&memProfile, "memprofile", "", "write a heap profile to `FILE` taken near the run's largest live heap: what was in use then, and the allocations up to then (go tool pprof FILE)")
	cmd.Flags().BoolVar(&check, "check", false, "check every job of the file against the savepoint of --from and print the upgrade report, without starting anything (exit 0 if every job may restore, 1 if not)")
	return cmd
}

// checkFile is `streamsql run --check FILE`: it runs the file's DDL and
// SET statements, and for each job statement (INSERT, EXECUTE STATEMENT
// SET, SELECT) prints the upgrade report against the savepoint the job
// would restore from (--from, or the file's SET
// 'execution.savepoint.path'), honouring --allow-non-restored-state. No
// job starts and no REST API is served. Exit status 0 when every job may
// restore, 1 when one is refused or a statement fails.
func checkFile(e *env, file string, sf *sessionFlags) error {
	scripts, err := loadScripts(e, file, sf)
	if err != nil {
		return err
	}
	s, err := sf.newSession(e.stdout, newJobLog(e.stderr))
	if err != nil {
		return usageError{err}
	}
	defer s.Close()
	jobs, refused := 0, 0
scripts:
	for _, sc := range scripts {
		for _, st := range sc.stmts {
			switch st.(type) {
			case *parser.Quit:
				break scripts
			case *parser.CreateTable, *parser.CreateView, *parser.Drop, *parser.Set, *parser.Reset:
				if _, err := s.Execute(context.Background(), st); err != nil {
					fmt.Fprintln(e.stderr, fileError(sc.file, err, st))
					return exitCode(exitFailure)
				}
				continue
			case *parser.Insert, *parser.StatementSet, *parser.Select:
			default:
				continue // shows, explains and job control start nothing
			}
			from := s.Options.Get(savepointKey)
			if from == "" {
				fmt.Fprintln(e.stderr, fileError(sc.file, errors.New("--check: no savepoint to check against: give --from PATH (or SET '"+savepointKey+"')"), st))
				return exitCode(exitFailure)
			}
			rep, err := s.CheckUpgrade(from, st)
			if err != nil {
				fmt.Fprintln(e.stderr, fileError(sc.file, err, st))
				return exitCode(exitFailure)
			}
			jobs++
			pos := st.Position()
			fmt.Fprintf(e.stdout, "%s:%d:%d: %s\nSavepoint: %s\n%s", sc.file, pos.Line, pos.Col, firstLine(st.SQL()), from, rep.String())
			if rep.Err() != nil {
				refused++
			}
		}
	}
	switch {
	case refused > 0:
		fmt.Fprintf(e.stderr, "%s: %d of %s refused by the savepoint (see the report)\n", file, refused, plural(jobs, "job"))
		return exitCode(exitFailure)
	case jobs == 0:
		fmt.Fprintf(e.stderr, "%s: no job to check (no INSERT, EXECUTE STATEMENT SET or SELECT)\n", file)
	}
	return nil
}

// firstLine is the first line of a statement's text, shortened.
func firstLine(sql string) string {
	l, _, cut := strings.Cut(strings.TrimSpace(sql), "\n")
	if r := []rune(l); len(r) > 72 {
		l, cut = string(r[:72]), true
	}
	if cut {
		l += " ..."
	}
	return l
}

// script is a parsed SQL file.
type script struct {
	file  string
	stmts []parser.Statement
}

// loadScript reads and parses a SQL file, reporting problems to w.
func loadScript(w io.Writer, file string) (*script, error) {
	text, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(w, "streamsql: %v\n", err)
		return nil, exitCode(exitFailure)
	}
	stmts, err := parser.ParseScript(string(text))
	if err != nil {
		fmt.Fprintln(w, fileError(file, err, nil))
		return nil, exitCode(exitFailure)
	}
	return &script{file: file, stmts: stmts}, nil
}

// signalWatch turns SIGINT and SIGTERM into a closed channel and the exit
// status they call for. A second signal exits at once, in case cancelling
// the jobs hangs.
type signalWatch struct {
	ch     chan os.Signal
	done   chan struct{} // closed on the first signal
	stop   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	status int
}

func watchSignals() *signalWatch {
	sw := &signalWatch{ch: make(chan os.Signal, 2), done: make(chan struct{}), stop: make(chan struct{})}
	signal.Notify(sw.ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		for {
			select {
			case sig := <-sw.ch:
				code := exitSIGINT
				if sig == syscall.SIGTERM {
					code = exitSIGTERM
				}
				sw.mu.Lock()
				first := sw.status == 0
				if first {
					sw.status = code
				}
				sw.mu.Unlock()
				if !first {
					runExitHooks()
					os.Exit(code)
				}
				close(sw.done)
			case <-sw.stop:
				return
			}
		}
	}()
	return sw
}

func (sw *signalWatch) exitStatus() int {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.status
}

func (sw *signalWatch) close() {
	sw.once.Do(func() {
		signal.Stop(sw.ch)
		close(sw.stop)
	})
}

// runFile is `streamsql run FILE` (and `streamsql -f FILE`).
func runFile(e *env, file string, sf *sessionFlags) error {
	scripts, err := loadScripts(e, file, sf)
	if err != nil {
		return err
	}

	s, err := sf.newSession(e.stdout, newJobLog(e.stderr))
	if err != nil {
		return usageError{err}
	}
	defer s.Close()
	sw := watchSignals()
	defer sw.close()

	r := &scriptRunner{s: s, out: e.stdout, log: e.stderr, jobs: newJobWatcher(s, e.stderr),
		interrupt: sw.done, jobFile: map[string]string{}}
	for i, sc := range scripts {
		if i == len(scripts)-1 {
			// The REST API starts once the -i file configured the session.
			cp, err := startControl(s, e.stderr, "run "+file)
			if err != nil {
				fmt.Fprintf(e.stderr, "streamsql: %v\n", err)
				return exitCode(exitFailure)
			}
			defer cp.close()
			r.cp = cp
		}
		if err := r.exec(sc); err != nil {
			if errors.Is(err, errQuit) {
				break
			}
			if errors.Is(err, errInterrupted) {
				return r.interrupted(sw.exitStatus())
			}
			return err
		}
	}
	failed, interrupted := r.jobs.wait(sw.done)
	if interrupted {
		return r.interrupted(sw.exitStatus())
	}
	if failed != nil {
		return r.jobFailed(scripts[len(scripts)-1].file, failed)
	}
	return nil
}

var (
	errQuit        = errors.New("quit")
	errInterrupted = errors.New("interrupted")
)

// scriptRunner executes scripts in a session, printing results to out and
// job lifecycle lines and errors to log. It is shared by `run` and the
// shell's init file.
type scriptRunner struct {
	s         *session.Session
	out, log  io.Writer
	jobs      *jobWatcher
	interrupt <-chan struct{}
	jobFile   map[string]string // job id -> file that submitted it
	cp        *controlPlane     // the REST API, once started (nil before)
}

// exec runs the statements of sc. It returns errQuit after QUIT,
// errInterrupted when interrupted, and an exitCode after reporting an error.
func (r *scriptRunner) exec(sc *script) error {
	for _, st := range sc.stmts {
		select {
		case <-r.interrupt:
			return errInterrupted
		default:
		}
		res, err := r.cp.execute(r.s, st)
		if err != nil {
			fmt.Fprintln(r.log, fileError(sc.file, err, st))
			return exitCode(exitFailure)
		}
		switch res.Kind {
		case session.ResultQuit:
			return errQuit
		case session.ResultStream:
			terminated, err := presentQuery(r.out, res.Columns, res.Stream, r.interrupt, resultView(r.s))
			if err != nil {
				fmt.Fprintln(r.log, fileError(sc.file, fmt.Errorf("query failed: %w", err), st))
				return exitCode(exitFailure)
			}
			if terminated {
				return errInterrupted
			}
		case session.ResultJob:
			r.jobFile[res.JobID] = sc.file
			fmt.Fprintf(r.log, "job %s (%s) submitted\n", res.JobID, r.jobs.jobName(res.JobID))
		case session.ResultOK:
			// Acknowledgements would only clutter the output of a job file;
			// warnings go to the log.
			if res.Warning != "" {
				fmt.Fprintln(r.log, res.Warning)
			}
		default:
			if err := presentResult(r.out, res); err != nil {
				return err
			}
		}
		if f := r.jobs.poll(); f != nil {
			return r.jobFailed(sc.file, f)
		}
	}
	return nil
}

// jobFailed reports a failed job, cancels the others and returns exit status 1.
func (r *scriptRunner) jobFailed(file string, f *session.JobInfo) error {
	if src, ok := r.jobFile[f.ID]; ok {
		file = src
	}
	fmt.Fprintf(r.log, "%s: job %s failed: %v\n", file, f.ID, f.Err)
	_ = r.s.Close()
	r.jobs.poll()
	return exitCode(exitFailure)
}

// interrupted cancels every job after a signal and returns its exit status.
func (r *scriptRunner) interrupted(status int) error {
	if n := r.jobs.running(); n > 0 {
		fmt.Fprintf(r.log, "streamsql: interrupted, cancelling %s\n", plural(n, "running job"))
	}
	_ = r.s.Close()
	r.jobs.poll()
	if status == 0 {
		status = exitSIGINT
	}
	return exitCode(status)
}

// jobLog is the session's Log writer of `run`: it forwards job messages
// (checkpoints, failed attempts, restarts, restores) to w line by line, but
// drops the lifecycle lines that run reports itself ("started", which
// run prints as "submitted", and the final status, which run prints as a
// summary with record counts). Safe for concurrent use: jobs log from
// their own goroutines.
type jobLog struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func newJobLog(w io.Writer) *jobLog { return &jobLog{w: w} }

func (l *jobLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		line := l.buf[:i+1]
		if !lifecycleLine(string(line[:i])) {
			if _, err := l.w.Write(line); err != nil {
				l.buf = l.buf[i+1:]
				return len(p), err
			}
		}
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

// lifecycleLine reports the session's "job <id> (<name>) started" and
// "job <id> <STATUS>" lines.
func lifecycleLine(line string) bool {
	rest, ok := strings.CutPrefix(line, "job ")
	if !ok || len(rest) < 33 || rest[32] != ' ' {
		return false
	}
	rest = rest[33:]
	switch rest {
	case "FINISHED", "FAILED", "CANCELED":
		return true
	}
	return strings.HasPrefix(rest, "(") && strings.HasSuffix(rest, ") started")
}

// loadScripts parses the -i init file (if any) and FILE, in that order,
// before anything runs.
func loadScripts(e *env, file string, sf *sessionFlags) ([]*script, error) {
	var scripts []*script
	if sf.init != "" {
		sc, err := loadScript(e.stderr, sf.init)
		if err != nil {
			return nil, err
		}
		scripts = append(scripts, sc)
	}
	jobScript, err := loadScript(e.stderr, file)
	if err != nil {
		return nil, err
	}
	return append(scripts, jobScript), nil
}
