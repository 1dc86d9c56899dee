package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/streamsql/streamsql/session"
)

func main() {
	session.EngineVersion = strings.Fields(strings.TrimPrefix(versionString(), "streamsql "))[0]
	os.Exit(runMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// exitCode is returned by a command that has already reported what went
// wrong and only needs the process to exit with this status.
type exitCode int

func (c exitCode) Error() string { return "exit status " + strconv.Itoa(int(c)) }

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1   // bad SQL, failed job, unreadable file
	exitUsage   = 2   // bad flags or arguments
	exitSIGINT  = 130 // 128 + SIGINT
	exitSIGTERM = 143 // 128 + SIGTERM
)

// env is the process's standard streams (tests substitute their own).
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// sessionFlags configure the session of the shell and of `run`. Flags added
// later (e.g. restoring from a savepoint) belong here, so that both entry
// points get them; apply is the one place that turns them into session state.
type sessionFlags struct {
	init        string   // -i: SQL file run before anything else
	parallelism int      // -p: parallelism.default (0: keep the default)
	sets        []string // --set key=value, repeatable
	from        string   // --from: execution.savepoint.path
	// --allow-non-restored-state: execution.savepoint.ignore-unclaimed-state
	allowNonRestored bool
}

// ignoreUnclaimedKey is the session option --allow-non-restored-state sets.
const ignoreUnclaimedKey = "execution.savepoint.ignore-unclaimed-state"

// savepointKey is the session option --from sets.
const savepointKey = "execution.savepoint.path"

func (f *sessionFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&f.init, "init", "i", "", "run this SQL `file` first (DDL, SET); an error in it aborts with exit status 1")
	fl.IntVarP(&f.parallelism, "parallelism", "p", 0, "default parallelism of jobs (same as SET 'parallelism.default')")
	fl.StringArrayVar(&f.sets, "set", nil, "set a session option, as `key=value` (repeatable; same as SET 'key' = 'value')")
	fl.BoolVarP(&f.allowNonRestored, "allow-non-restored-state", "n", false, "restore even if the savepoint holds state no operator of the job claims (that state is dropped); same as SET '"+ignoreUnclaimedKey+"' = 'true'")
	fl.StringVar(&f.from, "from", "", "restore jobs from this checkpoint: a chk-<n> `dir`ectory, or a job directory (its latest complete checkpoint); same as SET 'execution.savepoint.path'")
}

// newSession returns a session configured by the flags. The print sink
// writes to stdout, job lifecycle messages (checkpoints, restarts) go to log.
func (f *sessionFlags) newSession(stdout, log io.Writer) (*session.Session, error) {
	s := session.New(session.Config{Stdout: stdout, Log: log})
	if f.parallelism < 0 {
		return nil, fmt.Errorf("--parallelism must be at least 1, got %d", f.parallelism)
	}
	if f.parallelism > 0 {
		if err := s.Options.Set("parallelism.default", strconv.Itoa(f.parallelism)); err != nil {
			return nil, fmt.Errorf("--parallelism: %v", err)
		}
	}
	for _, kv := range f.sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--set %q: expected key=value", kv)
		}
		if err := s.Options.Set(strings.TrimSpace(k), strings.TrimSpace(v)); err != nil {
			return nil, fmt.Errorf("--set %q: %v", kv, err)
		}
	}
	if f.allowNonRestored {
		if err := s.Options.Set(ignoreUnclaimedKey, "true"); err != nil {
			return nil, fmt.Errorf("--allow-non-restored-state: %v", err)
		}
	}
	if f.from != "" {
		if s.Options.IsSet(savepointKey) && s.Options.Get(savepointKey) != f.from {
			return nil, fmt.Errorf("--from %s and --set %s=%s disagree: give one of them", f.from, savepointKey, s.Options.Get(savepointKey))
		}
		if err := s.Options.Set(savepointKey, f.from); err != nil {
			return nil, fmt.Errorf("--from %q: %v", f.from, err)
		}
	}
	return s, nil
}

const rootLong = `streamsql runs continuous SQL queries over streams, with Flink's SQL dialect:
tables backed by connectors (datagen, filesystem, socket, nexmark, print,
blackhole), filters and projections, GROUP BY aggregations and DISTINCT, event
time (WATERMARK FOR), PROCTIME() and windows (TUMBLE, HOP, CUMULATE, SESSION,
window TopN and deduplication), joins (regular, interval, window, lookup),
TopN, deduplication and OVER aggregations, UNION/INTERSECT/EXCEPT, WITH,
VALUES, ORDER BY ... LIMIT and subqueries, partitioned filesystem tables, the
SPLIT table function, and INSERT jobs with checkpoints and savepoints
(docs/sql.md lists what is not supported).

Without arguments it starts an interactive shell. Statements end with ';' and
may span several lines; Tab completes keywords and table names; Ctrl-C cancels
a running query (or clears the line), Ctrl-L clears the screen, Ctrl-D or
QUIT; leaves. Type HELP; in the shell for the statements it understands.
SET 'sql-client.execution.result-mode' = 'table' (or 'changelog') shows a
query's result as a table redrawn in place instead of scrolling changes.

With -f FILE (the same as 'streamsql run FILE') it runs a job file instead.
'streamsql checkpoints DIR' lists the checkpoints jobs left in DIR, and
--from restores jobs from one of them (see 'streamsql help run').

Every shell and run process serves a REST API (rest.address, default
127.0.0.1; rest.port, default any free port) for job control from other
processes: 'streamsql list', 'savepoint', 'stop' and 'cancel'.`

const rootExample = `  # interactive shell
  streamsql

  # create the tables of init.sql, then start the shell
  streamsql -i init.sql

  # run a job file and wait for its jobs to finish
  streamsql -f jobs/word_count.sql

  # pipe statements into the shell
  echo "SHOW TABLES;" | streamsql`

func newRootCmd(e *env) *cobra.Command {
	var sf sessionFlags
	var file string
	root := &cobra.Command{
		Use:           "streamsql [-i init.sql] [-f file.sql]",
		Short:         "A streaming SQL engine with a Flink-compatible SQL surface",
		Long:          rootLong,
		Example:       rootExample,
		Args:          noArgs,
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file != "" {
				return runFile(e, file, &sf)
			}
			return runShell(e, &sf)
		},
	}
	root.Flags().StringVarP(&file, "file", "f", "", "run this SQL `file` as 'streamsql run' does, instead of starting the shell")
	sf.register(root)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newRunCmd(e), newCheckpointsCmd(e), newListCmd(e), newSavepointCmd(e), newStopCmd(e),
		newCancelCmd(e), newTestCmd(e), newVersionCmd(e), newBenchCmd(e))
	return root
}

// noArgs rejects positional arguments of the root command with a hint.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("unknown command %q (to run a SQL file: streamsql run %s)", args[0], args[0])}
	}
	return nil
}

// usageError is a mistake in the command line; it exits with status 2.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }

// runMain runs the command line args and returns the exit status.
func runMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRootCmd(e)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var code exitCode
	if errors.As(err, &code) {
		return int(code)
	}
	// Cobra's own errors (unknown command or flag, wrong number of
	// arguments) and usageError.
	fmt.Fprintf(stderr, "streamsql: %v\nRun 'streamsql --help' for usage.\n", err)
	return exitUsage
}
