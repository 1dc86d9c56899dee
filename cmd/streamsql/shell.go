package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/chzyer/readline"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/session"
)

// Prompts: the first line of a statement, and its continuation lines.
const (
	mainPrompt = "streamsql> "
	contPrompt = "       > "
)

// errInterrupt is returned by a lineReader when the user pressed Ctrl-C at
// the prompt.
var errInterrupt = errors.New("interrupt")

// lineReader reads the shell's input one line at a time.
type lineReader interface {
	// ReadLine returns the next line without its newline; errInterrupt
	// after Ctrl-C, io.EOF at the end of the input (Ctrl-D).
	ReadLine(prompt string) (string, error)
	// AddHistory records a submitted statement.
	AddHistory(entry string)
	Close() error
}

// ttyReader reads from a terminal with line editing, history and completion.
type ttyReader struct{ rl *readline.Instance }

func (t *ttyReader) ReadLine(prompt string) (string, error) {
	t.rl.SetPrompt(prompt)
	line, err := t.rl.Readline()
	if errors.Is(err, readline.ErrInterrupt) {
		return "", errInterrupt
	}
	return line, err
}

func (t *ttyReader) AddHistory(entry string) { _ = t.rl.SaveHistory(entry) }
func (t *ttyReader) Close() error            { return t.rl.Close() }

// pipeReader reads lines from a non-terminal input (a pipe or a file); it
// prints no prompts.
type pipeReader struct{ r *bufio.Reader }

func (p *pipeReader) ReadLine(string) (string, error) {
	line, err := p.r.ReadString('\n')
	if err == io.EOF && line != "" {
		return line, nil // the last line had no newline; EOF comes next time
	}
	return strings.TrimRight(line, "\r\n"), err
}

func (p *pipeReader) AddHistory(string) {}
func (p *pipeReader) Close() error      { return nil }

// isTerminal reports whether the shell talks to a terminal: stdin and
// stdout are the process's own and both are terminals.
func isTerminal(e *env) bool {
	in, ok1 := e.stdin.(*os.File)
	out, ok2 := e.stdout.(*os.File)
	return ok1 && ok2 && readline.IsTerminal(int(in.Fd())) && readline.IsTerminal(int(out.Fd()))
}

// historyPath returns where the shell keeps its history:
// $XDG_STATE_HOME/streamsql/history, or ~/.streamsql_history.
func historyPath() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "streamsql", "history")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".streamsql_history")
}

// prepareHistory creates the history file's directory and checks that the
// file can be written.
func prepareHistory(path string) error {
	if path == "" {
		return errors.New("no home directory")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// historyEntry turns a (multi-line) statement into one history line; only
// line breaks and the indentation around them change.
func historyEntry(text string) string {
	var parts []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " ")
}

// completer completes SQL keywords and the names of tables and views.
type completer struct {
	names func() []string // live names from the catalog; may be nil
}

func isWordRune(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// Do implements readline.AutoCompleter: it returns the suffixes that
// complete the word before pos, and the word's length.
func (c *completer) Do(line []rune, pos int) ([][]rune, int) {
	if pos > len(line) {
		pos = len(line)
	}
	start := pos
	for start > 0 && isWordRune(line[start-1]) {
		start--
	}
	word := string(line[start:pos])
	if word == "" || inStringLiteral(line[:start]) {
		return nil, 0
	}
	upper := strings.ToUpper(word)
	lowerCase := word == strings.ToLower(word)
	seen := map[string]bool{}
	var out [][]rune
	add := func(cand string) {
		if len(cand) <= len(word) || seen[cand] {
			return
		}
		seen[cand] = true
		out = append(out, []rune(cand[len(word):]))
	}
	if c.names != nil {
		for _, n := range c.names() {
			if strings.HasPrefix(strings.ToUpper(n), upper) {
				add(word + n[len(word):])
			}
		}
	}
	for _, kw := range parser.Keywords {
		if strings.HasPrefix(kw, upper) {
			if lowerCase {
				kw = strings.ToLower(kw)
			}
			add(word + kw[len(word):])
		}
	}
	return out, len([]rune(word))
}

// inStringLiteral reports whether text ends inside a '...' literal.
func inStringLiteral(text []rune) bool {
	n := 0
	for _, r := range text {
		if r == '\'' {
			n++
		}
	}
	return n%2 == 1
}

// shell is the interactive (or piped) SQL shell.
type shell struct {
	s           *session.Session
	in          lineReader
	out         io.Writer // results
	errOut      io.Writer // errors: out in a terminal, stderr otherwise
	log         io.Writer // job summaries and notices (stderr)
	interactive bool
	notify      io.Writer // announcements while the prompt waits (failed jobs)
	jobs        *jobWatcher
	failed      bool          // a statement or job failed (exit status 1 in pipe mode)
	cp          *controlPlane // the REST API

	mu        sync.Mutex
	streaming chan struct{} // closed by a signal to cancel the running query
	status    int           // exit status requested by SIGTERM
}

const banner = `%s
Streaming SQL with Flink's dialect. Statements end with ';'.
Type HELP; for the statements, QUIT; or Ctrl-D to leave. Tab completes,
Ctrl-C cancels a running query or clears the line, Ctrl-L clears the screen.

`

// runShell is `streamsql` without -f.
func runShell(e *env, sf *sessionFlags) error {
	var initScript *script
	if sf.init != "" {
		sc, err := loadScript(e.stderr, sf.init)
		if err != nil {
			return err
		}
		initScript = sc
	}
	sh := &shell{interactive: isTerminal(e), log: e.stderr}
	comp := &completer{}
	var sinkOut io.Writer
	if sh.interactive {
		cfg := &readline.Config{
			Prompt:                 mainPrompt,
			AutoComplete:           comp,
			DisableAutoSaveHistory: true,
			HistorySearchFold:      true,
			InterruptPrompt:        "^C",
			EOFPrompt:              "quit",
		}
		if p := historyPath(); p != "" {
			if err := prepareHistory(p); err != nil {
				fmt.Fprintf(e.stderr, "[WARNING] Command history is disabled: %v\n", err)
			} else {
				cfg.HistoryFile = p
			}
		}
		cfg.FuncFilterInputRune = clearScreenFilter(e.stdout)
		rl, err := readline.NewEx(cfg)
		if err != nil {
			fmt.Fprintf(e.stderr, "streamsql: cannot start the line editor: %v\n", err)
			return exitCode(exitFailure)
		}
		// Results are written between prompts, straight to stdout; the
		// print sink writes at any time, so through readline, which
		// redraws the prompt around it.
		sh.in, sh.out, sh.errOut, sinkOut = &ttyReader{rl: rl}, e.stdout, e.stdout, rl.Stdout()
	} else {
		sh.in, sh.out, sh.errOut, sinkOut = &pipeReader{r: bufio.NewReader(e.stdin)}, e.stdout, e.stderr, e.stdout
	}
	defer sh.in.Close()

	s, err := sf.newSession(sinkOut, io.Discard)
	if err != nil {
		return usageError{err}
	}
	defer s.Close()
	sh.s = s
	sh.notify = sinkOut
	sh.jobs = newJobWatcher(s, e.stderr)
	comp.names = func() []string { return append(s.Catalog.TableNames(), s.Catalog.ViewNames()...) }

	if initScript != nil {
		if err := sh.runInit(initScript); err != nil {
			return err
		}
	}
	cp, err := startControl(s, e.stderr, "shell")
	if err != nil {
		fmt.Fprintf(e.stderr, "streamsql: %v\n", err)
		return exitCode(exitFailure)
	}
	defer cp.close()
	sh.cp = cp
	if sh.interactive {
		fmt.Fprintf(sh.out, banner, versionString())
		stop := sh.jobs.announceFailures(sh.notify, pollInterval)
		defer stop()
	}
	return sh.loop()
}

// clearScreenFilter makes Ctrl-L clear the screen: readline's own Ctrl-L
// only moves the cursor home (ESC [ H) before redrawing the prompt, which
// leaves the old text on screen.
func clearScreenFilter(w io.Writer) func(rune) (rune, bool) {
	return func(r rune) (rune, bool) {
		if r == readline.CharCtrlL {
			_, _ = io.WriteString(w, "\033[H\033[2J")
		}
		return r, true
	}
}

// runInit runs the -i file; an error in it aborts (as in Flink's SQL client).
func (sh *shell) runInit(sc *script) error {
	sw := watchSignals()
	defer sw.close()
	r := &scriptRunner{s: sh.s, out: sh.out, log: sh.log, jobs: sh.jobs, interrupt: sw.done, jobFile: map[string]string{}}
	err := r.exec(sc)
	switch {
	case err == nil || errors.Is(err, errQuit):
		return nil
	case errors.Is(err, errInterrupted):
		return r.interrupted(sw.exitStatus())
	}
	return err
}

// handleSignals routes SIGINT and SIGTERM: they cancel a streaming query;
// otherwise SIGINT is ignored in a terminal (Ctrl-C at the prompt reaches
// readline as a key, not a signal) and ends a piped shell, and SIGTERM ends
// the shell.
func (sh *shell) handleSignals() (stop func()) {
	ch := make(chan os.Signal, 2)
	done := make(chan struct{})
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		for {
			select {
			case sig := <-ch:
				code := exitSIGINT
				if sig == syscall.SIGTERM {
					code = exitSIGTERM
				}
				sh.mu.Lock()
				streaming := sh.streaming
				if streaming != nil {
					sh.streaming = nil
					if code == exitSIGTERM {
						sh.status = code
					}
				}
				sh.mu.Unlock()
				switch {
				case streaming != nil:
					close(streaming)
				case code == exitSIGTERM || !sh.interactive:
					sh.in.Close()
					_ = sh.s.Close()
					runExitHooks()
					os.Exit(code)
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}

// loop reads statements until QUIT or the end of the input.
func (sh *shell) loop() error {
	stop := sh.handleSignals()
	defer stop()
	var buf strings.Builder
	lineNo, first := 0, 1 // lines read; the line the buffer starts at
	for {
		prompt := mainPrompt
		if buf.Len() > 0 {
			prompt = contPrompt
		}
		line, err := sh.in.ReadLine(prompt)
		if err == nil {
			lineNo++
		}
		switch {
		case errors.Is(err, errInterrupt):
			buf.Reset()
			continue
		case errors.Is(err, io.EOF):
			if !sh.interactive && strings.TrimSpace(buf.String()) != "" {
				if quit := sh.execute(buf.String(), first); quit {
					return sh.exit()
				}
			}
			return sh.exitAtEOF()
		case err != nil:
			fmt.Fprintf(sh.log, "streamsql: reading input: %v\n", err)
			return exitCode(exitFailure)
		}
		if buf.Len() == 0 && strings.TrimSpace(line) == "" {
			continue
		}
		if buf.Len() == 0 {
			first = lineNo
		}
		buf.WriteString(line)
		buf.WriteByte('\n')
		text := buf.String()
		if !parser.Complete(text) {
			// Only comments so far: nothing to continue.
			if stmts, err := parser.ParseScript(text); err == nil && len(stmts) == 0 {
				buf.Reset()
			}
			continue
		}
		buf.Reset()
		sh.in.AddHistory(historyEntry(text))
		if quit := sh.execute(text, first); quit {
			return sh.exit()
		}
	}
}

// execute runs the statements of one submitted buffer, which starts at line
// first of the input, and reports whether the shell should exit. Piped
// input is a script: positions are lines of the whole input. In a terminal
// they count from the buffer the user just entered.
func (sh *shell) execute(text string, first int) (quit bool) {
	if sh.interactive {
		first = 1
	}
	stmts, err := parser.ParseScriptAt(text, first)
	if err != nil {
		sh.reportError(err, nil)
		return false
	}
	for _, st := range stmts {
		res, err := sh.cp.execute(sh.s, st)
		if err != nil {
			sh.reportError(err, st)
			return false
		}
		switch res.Kind {
		case session.ResultQuit:
			return true
		case session.ResultStream:
			if sh.stream(res, st) {
				return true
			}
		default:
			if err := presentResult(sh.out, res); err != nil {
				fmt.Fprintf(sh.log, "streamsql: writing output: %v\n", err)
				return true
			}
		}
	}
	return false
}

// stream shows a SELECT's changelog until it ends or the user presses
// Ctrl-C. It reports whether the shell should exit (SIGTERM).
func (sh *shell) stream(res *session.Result, st parser.Statement) (quit bool) {
	interrupt := make(chan struct{})
	sh.mu.Lock()
	sh.streaming = interrupt
	sh.mu.Unlock()
	_, err := presentQuery(sh.out, res.Columns, res.Stream, interrupt, sh.viewConfig())
	sh.mu.Lock()
	sh.streaming = nil
	status := sh.status
	sh.mu.Unlock()
	if err != nil {
		sh.reportError(err, st)
	}
	return status != 0
}

// viewConfig is how the shell shows a SELECT's result, from the session's
// sql-client.execution.* options.
func (sh *shell) viewConfig() viewConfig {
	vc := resultView(sh.s)
	vc.live = sh.interactive
	vc.size = func() (int, int) {
		w, h, err := readline.GetSize(int(os.Stdout.Fd()))
		if err != nil {
			return 0, 0
		}
		return w, h
	}
	return vc
}

func (sh *shell) reportError(err error, st parser.Statement) {
	sh.failed = true
	fmt.Fprintln(sh.errOut, shellError(err, st))
}

// exit ends the shell after QUIT or Ctrl-D, cancelling running jobs.
func (sh *shell) exit() error {
	if n := sh.jobs.running(); n > 0 {
		fmt.Fprintf(sh.log, "[INFO] Cancelling %s.\n", plural(n, "running job"))
	}
	if sh.interactive {
		fmt.Fprintln(sh.out, "Shutting down the session...")
	}
	_ = sh.s.Close()
	if sh.interactive {
		fmt.Fprintln(sh.out, "done.")
	}
	sh.mu.Lock()
	status := sh.status
	sh.mu.Unlock()
	if status != 0 {
		return exitCode(status)
	}
	if !sh.interactive && sh.failed {
		return exitCode(exitFailure)
	}
	return nil
}

// exitAtEOF ends the shell at the end of its input. Piped input is a
// script: its jobs run to completion first (Ctrl-C cancels them).
func (sh *shell) exitAtEOF() error {
	if sh.interactive || sh.jobs.running() == 0 {
		return sh.exit()
	}
	interrupt := make(chan struct{})
	sh.mu.Lock()
	sh.streaming = interrupt // a signal now cancels the wait
	sh.mu.Unlock()
	failed, interrupted := sh.jobs.wait(interrupt)
	switch {
	case interrupted:
		_ = sh.s.Close()
		sh.jobs.poll()
		sh.mu.Lock()
		status := sh.status
		sh.mu.Unlock()
		if status == 0 {
			status = exitSIGINT
		}
		return exitCode(status)
	case failed != nil:
		fmt.Fprintf(sh.log, "streamsql: job %s failed: %v\n", failed.ID, failed.Err)
		sh.failed = true
	}
	return sh.exit()
}
