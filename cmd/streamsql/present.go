package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/session"
)

// presentResult prints a result that is complete when Execute returns
// (everything but ResultStream and ResultQuit).
func presentResult(w io.Writer, res *session.Result) error {
	if res.Warning != "" {
		if _, err := fmt.Fprintln(w, res.Warning); err != nil {
			return err
		}
	}
	switch res.Kind {
	case session.ResultTable:
		return writeBoxTable(w, res.Columns, res.Rows)
	case session.ResultOK, session.ResultText, session.ResultJob:
		if res.Message == "" {
			return nil
		}
		_, err := fmt.Fprintln(w, res.Message)
		return err
	}
	return nil
}

// presentStream prints a SELECT's changelog in tableau mode until the query
// ends, fails, or interrupt is closed (then it cancels the query). It
// reports whether the query was terminated by the user and the query's
// failure, if any.
func presentStream(w io.Writer, cols []string, st *session.Stream, interrupt <-chan struct{}) (terminated bool, err error) {
	tb := newTableau(w, cols)
	for {
		select {
		case batch, ok := <-st.Changes:
			if !ok {
				err := st.Err()
				if errors.Is(err, context.Canceled) {
					return true, tb.finish(true)
				}
				if err != nil {
					tb.abort()
					return false, err
				}
				return false, tb.finish(false)
			}
			if werr := tb.write(batch); werr != nil {
				cancelStream(st)
				return false, werr
			}
		case <-interrupt:
			cancelStream(st)
			return true, tb.finish(true)
		}
	}
}

// cancelStream cancels the query and waits until its changes channel is
// closed, discarding what is still in flight.
func cancelStream(st *session.Stream) {
	st.Cancel()
	for range st.Changes {
	}
	_ = st.Err()
}

// abort closes the table after a failure, without a row count.
func (t *tableau) abort() {
	if t.started {
		writeBorder(&t.buf, t.widths)
		_ = t.flush()
	}
}

// positionOf returns where err happened: the *parser.Error's position, or
// the statement's start for other errors.
func positionOf(err error, st parser.Statement) (parser.Pos, string) {
	var perr *parser.Error
	if errors.As(err, &perr) {
		return perr.Pos, perr.Msg
	}
	if st != nil {
		return st.Position(), err.Error()
	}
	return parser.Pos{Line: 1, Col: 1}, err.Error()
}

// fileError renders "FILE:line:col: message".
func fileError(file string, err error, st parser.Statement) string {
	pos, msg := positionOf(err, st)
	return fmt.Sprintf("%s:%d:%d: %s", file, pos.Line, pos.Col, msg)
}

// shellError renders an error the way Flink's SQL client does, with the
// position in the text the user entered.
func shellError(err error, st parser.Statement) string {
	var perr *parser.Error
	reason := err.Error()
	if errors.As(err, &perr) {
		reason = perr.Error()
	} else if st != nil {
		reason = fmt.Sprintf("%s: %s", st.Position(), err)
	}
	return "[ERROR] Could not execute SQL statement. Reason:\n" + reason
}

// jobWatcher reports the end of jobs: one summary line per job, once.
// SELECT queries (session jobs named "collect") report through the tableau
// instead and are skipped.
type jobWatcher struct {
	s  *session.Session
	w  io.Writer
	mu sync.Mutex // guards reported and announced
	// reported: jobs whose summary was printed; announced: failed jobs
	// announced while the shell waited at its prompt.
	reported, announced map[string]bool
}

func newJobWatcher(s *session.Session, w io.Writer) *jobWatcher {
	return &jobWatcher{s: s, w: w, reported: map[string]bool{}, announced: map[string]bool{}}
}

// announceFailures starts announcing, on w, every job of the session that
// fails from now on (SELECTs excepted: their failure ends their own output):
//
//	[ERROR] Job <id> (<name>) failed: <cause>
//
// so that a background INSERT job that fails is not noticed only by a later
// SHOW JOBS. It checks every interval; stop ends it.
func (jw *jobWatcher) announceFailures(w io.Writer, interval time.Duration) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				jw.announce(w)
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// announce prints the failures not announced yet.
func (jw *jobWatcher) announce(w io.Writer) {
	for _, in := range jw.s.Jobs() {
		if in.Status != "FAILED" || in.Name == collectJobName {
			continue
		}
		jw.mu.Lock()
		seen := jw.announced[in.ID]
		jw.announced[in.ID] = true
		jw.mu.Unlock()
		if !seen {
			fmt.Fprintf(w, "[ERROR] Job %s (%s) failed: %v\n", in.ID, in.Name, in.Err)
		}
	}
}

// collectJobName is the name the session gives the job of a SELECT.
const collectJobName = "collect"

// jobName returns the name of the job with the given id.
func (jw *jobWatcher) jobName(id string) string {
	for _, in := range jw.s.Jobs() {
		if in.ID == id {
			return in.Name
		}
	}
	return "?"
}

// running counts the jobs that have not ended.
func (jw *jobWatcher) running() int {
	n := 0
	for _, in := range jw.s.Jobs() {
		if in.Status == "RUNNING" && in.Name != collectJobName {
			n++
		}
	}
	return n
}

// poll prints a summary for every job that ended since the last poll and
// returns the first of them that failed.
func (jw *jobWatcher) poll() (failed *session.JobInfo) {
	jw.mu.Lock()
	defer jw.mu.Unlock()
	for _, in := range jw.s.Jobs() {
		if in.Status == "RUNNING" || in.Name == collectJobName || jw.reported[in.ID] {
			continue
		}
		jw.reported[in.ID] = true
		fmt.Fprintln(jw.w, jobSummary(in))
		if in.Status == "FAILED" && failed == nil {
			in := in
			failed = &in
		}
	}
	return failed
}

// jobSummary is "job <id> (<name>) FINISHED: N records in, M out[, K bad
// records skipped]".
func jobSummary(in session.JobInfo) string {
	s := fmt.Sprintf("job %s (%s) %s: %d records in, %d out", in.ID, in.Name, in.Status, in.RecordsIn, in.RecordsOut)
	if in.SkippedBad > 0 {
		s += ", " + plural(int(in.SkippedBad), "bad record") + " skipped"
	}
	return s
}

// pollInterval is how often wait looks for jobs that ended while others are
// still running (the session reports only the end of all of them).
const pollInterval = 100 * time.Millisecond

// wait waits until every job has ended, printing summaries as they end. It
// returns early with the failed job when one fails, or with interrupted
// when interrupt is closed.
func (jw *jobWatcher) wait(interrupt <-chan struct{}) (failed *session.JobInfo, interrupted bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	all := make(chan struct{})
	go func() {
		_ = jw.s.WaitJobs(ctx) // failures are read from Jobs by poll
		close(all)
	}()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-all:
			return jw.poll(), false
		case <-tick.C:
			if f := jw.poll(); f != nil {
				return f, false
			}
		case <-interrupt:
			return nil, true
		}
	}
}
