package session

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/streamsql/streamsql/checkpoint"
)

// This file holds the job-control tables: SHOW JOBS and SHOW CHECKPOINTS,
// and CheckpointsTable, which `streamsql checkpoints DIR` shares.

// showJobs is SHOW JOBS: one row per INSERT job (SELECT queries are left
// out), with its attempts (1 + restarts) and the cause of the last failed
// attempt that was followed by a restart.
func (s *Session) showJobs() *Result {
	r := &Result{Kind: ResultTable, Columns: []string{"job id", "job name", "status", "start time",
		"records in", "records out", "skipped records", "late records", "attempts", "last failure"}}
	for _, in := range s.Jobs() {
		if in.Name == "collect" {
			continue
		}
		// status is one word; the cause of a failure (the job's, else the
		// latest attempt's that was restarted) goes to "last failure",
		// shortened: DESCRIBE JOB and the log have it whole.
		last := ""
		switch n := len(in.Failures); {
		case in.Err != nil:
			last = shorten(in.Err.Error(), maxFailureWidth)
		case n > 0:
			last = shorten(in.Failures[n-1], maxFailureWidth)
		}
		r.Rows = append(r.Rows, []string{in.ID, in.Name, in.Status, in.StartTime.Format("2006-01-02 15:04:05.000"),
			fmt.Sprint(in.RecordsIn), fmt.Sprint(in.RecordsOut), fmt.Sprint(in.SkippedBad), fmt.Sprint(in.LateRecords),
			fmt.Sprint(in.Attempts), last})
	}
	return r
}

// maxFailureWidth bounds the "last failure" cell of SHOW JOBS; the whole
// message is in the log.
const maxFailureWidth = 60

// shorten returns the first line of s, cut to at most n runes with "...".
func shorten(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-3]) + "..."
}

// CheckpointColumns are the columns of SHOW CHECKPOINTS and of
// `streamsql checkpoints DIR`.
var CheckpointColumns = []string{"job id", "checkpoint id", "status", "completed at", "size", "incremental", "duration"}

// CheckpointsTable renders listed checkpoint directories as a table: one row
// per checkpoint, complete ones (status COMPLETED) with their completion
// time, total size, the bytes that checkpoint added (incremental) and its
// duration (synchronous + asynchronous part); chk-<n> directories without a
// valid _metadata as INCOMPLETE, which are never restored. Rows are ordered
// by job, then checkpoint id.
func CheckpointsTable(jobs []checkpoint.JobCheckpoints) *Result {
	r := &Result{Kind: ResultTable, Columns: CheckpointColumns}
	type row struct {
		id    int64
		cells []string
	}
	for _, j := range jobs {
		var rows []row
		for _, c := range j.Checkpoints {
			rows = append(rows, row{c.ID, []string{j.JobID, fmt.Sprint(c.ID), "COMPLETED",
				time.UnixMilli(c.TimeMS).Format("2006-01-02 15:04:05.000"),
				FormatBytes(c.Size), FormatBytes(c.Written), fmt.Sprintf("%d ms", c.SyncMS+c.AsyncMS)}})
		}
		for _, name := range j.Incomplete {
			id := int64(-1)
			if n, err := fmt.Sscanf(name, "chk-%d", &id); n != 1 || err != nil {
				id = -1
			}
			rows = append(rows, row{id, []string{j.JobID, strings.TrimPrefix(name, "chk-"), "INCOMPLETE", "", "", "", ""}})
		}
		sort.SliceStable(rows, func(a, b int) bool { return rows[a].id < rows[b].id })
		for _, x := range rows {
			r.Rows = append(r.Rows, x.cells)
		}
	}
	return r
}

// FormatBytes renders a byte count with a binary unit: "512 B", "1.5 KiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, u := float64(n)/unit, 0
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB"}
	for v >= unit && u < len(units)-1 {
		v /= unit
		u++
	}
	return fmt.Sprintf("%.1f %s", v, units[u])
}

// showCheckpoints is SHOW CHECKPOINTS: the checkpoints on disk of this
// session's jobs (running ones, and ended ones whose checkpoints were kept).
// Without a checkpointing job the table is empty.
func (s *Session) showCheckpoints() (*Result, error) {
	// Group the session's jobs by checkpoint root: one listing per root.
	roots := map[string]map[string]bool{}
	var order []string
	for _, in := range s.Jobs() {
		if in.CheckpointDir == "" {
			continue
		}
		root := filepath.Dir(filepath.Clean(in.CheckpointDir))
		if roots[root] == nil {
			roots[root] = map[string]bool{}
			order = append(order, root)
		}
		roots[root][filepath.Base(in.CheckpointDir)] = true
	}
	var mine []checkpoint.JobCheckpoints
	for _, root := range order {
		list, err := checkpoint.List(root)
		if err != nil {
			if errors.Is(err, iofs.ErrNotExist) {
				continue // every job of this root ended and its checkpoints were removed
			}
			return nil, err
		}
		for _, j := range list {
			if roots[root][j.JobID] {
				mine = append(mine, j)
			}
		}
	}
	return CheckpointsTable(mine), nil
}
