package sqltests

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/session"
)

// The crash variant (Options.Crash) runs a file three times more, at parallelism 2
// and batch size 7, with checkpointing on in lockstep (a checkpoint after
// every source batch, so the number and place of barriers do not depend on
// timing) and a restart strategy allowing one restart:
//
//   - pass 1 runs every job without a crash and counts its checkpoints N;
//   - pass 2 runs the file again in a fresh session and fails every job that
//     finished in pass 1 right after checkpoint k, k drawn from a seeded RNG
//     in [1, N]; the session restores checkpoint k and the job continues;
//   - pass 3 does the same with unaligned checkpoints (and other crash
//     points): the restored channel state holds the in-flight records and
//     watermarks.
//
// Every case of passes 2 and 3 must give pass 1's output, and every job planned to
// crash must have crashed once (two attempts) and restored a checkpoint.
// Cases whose output pass 1 shares with the canonical run (files written by
// filesystem sinks, job failures) are also compared with the canonical run.
//
// Two things change the file's statements in both passes, because the
// engine checkpoints only INSERT jobs and the print sink is at-least-once
// (a restore prints rows again): an INSERT into a print table writes to a
// JSON filesystem table with the same columns in a directory of its own
// instead (its folded files stand for the printed rows), and a query's
// SELECT runs as INSERT INTO a JSON filesystem sink whose folded files
// stand for the final table. A query that cannot be wrapped (e.g. it fails
// to plan) runs as a plain SELECT.
var crashVariant = variant{Parallelism: 2, BatchSize: 7}

// crashSeed is the RNG seed of a file's crash points: stable per file name.
func crashSeed(path string) int64 {
	h := fnv.New64a()
	h.Write([]byte(filepath.Base(path)))
	return int64(h.Sum64() & (1<<63 - 1))
}

// crashJob is what a job did in a crash pass.
type crashJob struct {
	name     string
	status   string
	attempts int
	last     int64 // latest completed checkpoint
	failures []string
}

// crashState is a fileRunner's crash-variant machinery: the session's
// checkpoint hook and log, and the rewritten sinks.
type crashState struct {
	pass   int     // 1: count checkpoints, 2 and 3: crash
	plan   []int64 // passes 2 and 3: FailAfter per job (in submission order); 0: none
	ckDir  string  // state.checkpoints.dir
	outDir string  // rewritten print sinks and wrapped queries write here
	// unaligned: unaligned checkpoints; inFlight counts the in-flight
	// batches the pass's restored jobs replayed.
	unaligned bool
	inFlight  int64

	mu       sync.Mutex
	cfgs     []*exec.CheckpointConfig // per job, in submission order
	index    map[string]int           // job id -> submission index
	restored map[string]bool          // job id -> the log said it restored a checkpoint
	jobs     map[int]crashJob         // submission index -> outcome
	logBuf   []byte
	logLines []string // the session's log (for failure reports)

	printTables map[string]*parser.CreateTable // lower-case name -> its CREATE TABLE
	clones      int                            // redirect tables so far (names)
	cloneNames  []string                       // redirect tables of the current case
	queries     int                            // wrapped queries so far (names)
}

func newCrashState(pass int, plan []int64) (*crashState, error) {
	dir, err := os.MkdirTemp("", "sqltest-crash-")
	if err != nil {
		return nil, err
	}
	return &crashState{
		pass: pass, plan: plan,
		ckDir: filepath.Join(dir, "checkpoints"), outDir: dir,
		index: map[string]int{}, restored: map[string]bool{}, jobs: map[int]crashJob{},
		printTables: map[string]*parser.CreateTable{},
	}, nil
}

func (c *crashState) cleanup() { _ = os.RemoveAll(c.outDir) }

// options are the session options of the crash variant; RESET restores them.
func (c *crashState) options() [][2]string {
	return [][2]string{
		{"execution.checkpointing.unaligned.enabled", strconv.FormatBool(c.unaligned)},
		// Any interval turns checkpointing on; TriggerEveryBatch replaces the timer.
		{"execution.checkpointing.interval", "1 min"},
		{"state.checkpoints.dir", c.ckDir},
		{"restart-strategy.type", "fixed-delay"},
		{"restart-strategy.fixed-delay.attempts", "1"},
		{"restart-strategy.fixed-delay.delay", "0 ms"},
	}
}

// hook is the session's CheckpointTestHook: lockstep checkpoints, and in
// pass 2 the planned crash.
func (c *crashState) hook(cfg *exec.CheckpointConfig) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := len(c.cfgs)
	c.cfgs = append(c.cfgs, cfg)
	cfg.TriggerEveryBatch = true
	if c.pass > 1 && i < len(c.plan) {
		cfg.FailAfter = c.plan[i]
	}
	if b, ok := cfg.Backend.(interface{ JobDir() string }); ok {
		c.index[filepath.Base(b.JobDir())] = i
	}
}

var (
	logAttemptFailed = regexp.MustCompile(`^job ([0-9a-f]{32}): attempt \d+ failed: `)
	logRestored      = regexp.MustCompile(`^job ([0-9a-f]{32}): .*restored checkpoint \d+`)
)

// Write receives the session's log. After the injected crash it clears the
// job's FailAfter: the restarted attempt's checkpoint ids continue after
// the crash point, so an uncleared FailAfter would fail it again. The log
// line is written by the job's goroutine between two attempts, so the
// write cannot race with a running coordinator.
func (c *crashState) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logBuf = append(c.logBuf, p...)
	for {
		i := bytes.IndexByte(c.logBuf, '\n')
		if i < 0 {
			break
		}
		line := string(c.logBuf[:i])
		c.logBuf = c.logBuf[i+1:]
		c.logLines = append(c.logLines, line)
		if m := logAttemptFailed.FindStringSubmatch(line); m != nil {
			if i, ok := c.index[m[1]]; ok {
				c.cfgs[i].FailAfter = 0
			}
		}
		if m := logRestored.FindStringSubmatch(line); m != nil {
			c.restored[m[1]] = true
		}
	}
	return len(p), nil
}

// notePrint records the print tables a statement creates or drops (after
// it succeeded), so that INSERTs into them can be redirected.
func (c *crashState) notePrint(st parser.Statement) {
	switch x := st.(type) {
	case *parser.CreateTable:
		for _, o := range x.Options {
			if strings.EqualFold(o.Key, "connector") && strings.EqualFold(o.Value, "print") {
				ct := *x
				c.printTables[strings.ToLower(x.Name)] = &ct
				return
			}
		}
		delete(c.printTables, strings.ToLower(x.Name))
	case *parser.Drop:
		if strings.EqualFold(x.Kind, "TABLE") {
			delete(c.printTables, strings.ToLower(x.Name))
		}
	}
}

// redirectPrint makes every INSERT of st into a print table write to a new
// JSON filesystem table of the same columns instead (see the comment at
// the top; one table per INSERT because two jobs must not share a
// filesystem sink's directory). It reports whether it redirected any.
func (r *fileRunner) redirectPrint(ctx context.Context, st parser.Statement) (bool, error) {
	c := r.crash
	var ins []*parser.Insert
	switch x := st.(type) {
	case *parser.Insert:
		ins = []*parser.Insert{x}
	case *parser.StatementSet:
		ins = x.Inserts
	}
	redirected := false
	for _, in := range ins {
		ct, ok := c.printTables[strings.ToLower(in.Table)]
		if !ok {
			continue
		}
		c.clones++
		clone := *ct
		clone.Name = fmt.Sprintf("zz_crash_print_%d", c.clones)
		clone.IfNotExists = false
		pos := ct.Pos
		if len(ct.Options) > 0 {
			pos = ct.Options[0].KeyPos
		}
		dir := filepath.Join(c.outDir, "print", strings.ToLower(ct.Name), strconv.Itoa(c.clones))
		clone.Options = []parser.Option{
			{Key: "connector", Value: "filesystem", KeyPos: pos, ValuePos: pos},
			{Key: "path", Value: dir, KeyPos: pos, ValuePos: pos},
			{Key: "format", Value: "json", KeyPos: pos, ValuePos: pos},
		}
		if _, err := r.sess.Execute(ctx, &clone); err != nil {
			return redirected, fmt.Errorf("crash variant: cannot redirect the print table %s: %w", ct.Name, err)
		}
		c.cloneNames = append(c.cloneNames, clone.Name)
		in.Table = clone.Name
		redirected = true
	}
	return redirected, nil
}

// takePrinted returns the folded rows written to every redirected print
// table ("name> {json}"), then drops the redirect tables and their files so
// that the next case starts empty. Call it after the case's jobs ended.
func (r *fileRunner) takePrinted(ctx context.Context) ([]string, error) {
	c := r.crash
	for _, n := range c.cloneNames {
		st, err := parser.Parse("DROP TABLE IF EXISTS " + n)
		if err == nil {
			_, err = r.sess.Execute(ctx, st)
		}
		if err != nil {
			return nil, err
		}
	}
	c.cloneNames = nil
	root := filepath.Join(c.outDir, "print")
	ents, err := os.ReadDir(root)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var out []string
	for _, e := range ents { // sorted by name
		lines, err := visibleLines(filepath.Join(root, e.Name()))
		if err != nil {
			return nil, err
		}
		for _, l := range foldFileLines(lines) {
			out = append(out, e.Name()+"> "+l)
		}
	}
	return out, os.RemoveAll(root)
}

// visibleLines returns the lines of the visible files under dir (none if
// dir does not exist).
func visibleLines(dir string) ([]string, error) {
	var all []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && p == dir {
				return filepath.SkipDir
			}
			return err
		}
		if p != dir && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		all = append(all, splitLines(string(data))...)
		return nil
	})
	return all, err
}

// afterJobs records what the jobs of a case did and checks them: in pass 2
// every planned crash happened once and was followed by a restore; a
// finished job left no checkpoint directory behind. It returns the
// problems found.
func (c *crashState) afterJobs(sess *session.Session, ids []string) []string {
	infos := map[string]session.JobInfo{}
	for _, in := range sess.Jobs() {
		infos[in.ID] = in
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var problems []string
	for _, id := range ids {
		in, ok := infos[id]
		i, hooked := c.index[id]
		if !ok || !hooked {
			problems = append(problems, fmt.Sprintf("job %s: not checkpointed in the crash variant", id))
			continue
		}
		c.jobs[i] = crashJob{name: in.Name, status: in.Status, attempts: in.Attempts, last: in.LastCheckpoint, failures: in.Failures}
		if in.Status == "FINISHED" && in.CheckpointDir != "" {
			if _, err := os.Stat(in.CheckpointDir); err == nil {
				problems = append(problems, fmt.Sprintf("job %s finished but left its checkpoint directory %s", in.Name, in.CheckpointDir))
			}
		}
		if c.pass < 2 || i >= len(c.plan) || c.plan[i] == 0 {
			continue
		}
		k := c.plan[i]
		crashed := len(in.Failures) > 0 && strings.Contains(in.Failures[0], exec.ErrInjectedCrash.Error())
		if in.Attempts != 2 || !crashed || !c.restored[id] {
			problems = append(problems, fmt.Sprintf(
				"job %s: the crash after checkpoint %d did not happen as planned: %d attempt(s), restored %v, failures %q",
				in.Name, k, in.Attempts, c.restored[id], in.Failures))
		}
	}
	return problems
}

// planCrashes draws each finished job's crash point from rng: k in [1, N]
// for a job that finished in pass 1 after N checkpoints without a restart.
func planCrashes(jobs map[int]crashJob, n int, rng *rand.Rand) []int64 {
	plan := make([]int64, n)
	for i := 0; i < n; i++ {
		j, ok := jobs[i]
		if ok && j.status == "FINISHED" && j.attempts == 1 && j.last >= 1 {
			plan[i] = 1 + rng.Int63n(j.last)
		}
	}
	return plan
}

// wrapQuery runs a SELECT as INSERT INTO a JSON filesystem sink with the
// query's columns and returns the folded committed files (and the job's
// failure). ok is false when the query cannot be wrapped (then nothing of
// the wrapper is left in the catalog).
func (r *fileRunner) wrapQuery(ctx context.Context, sel *parser.Select) (cmp string, ok bool) {
	c := r.crash
	c.queries++
	n := c.queries
	view := fmt.Sprintf("zz_crash_query_%d", n)
	sink := fmt.Sprintf("zz_crash_sink_%d", n)
	dir := filepath.Join(c.outDir, "query", strconv.Itoa(n))
	run := func(sql string) (*session.Result, error) {
		st, err := parser.Parse(sql)
		if err != nil {
			return nil, err
		}
		return r.sess.Execute(ctx, st)
	}
	drop := func() {
		_, _ = run("DROP TABLE IF EXISTS " + sink)
		_, _ = run("DROP TEMPORARY VIEW IF EXISTS " + view)
	}
	if _, err := run("CREATE TEMPORARY VIEW " + view + " AS " + sel.SQL()); err != nil {
		return "", false
	}
	desc, err := run("DESCRIBE " + view)
	if err != nil || desc.Kind != session.ResultTable || len(desc.Rows) == 0 {
		drop()
		return "", false
	}
	var cols []string
	for i, row := range desc.Rows {
		typ := row[1]
		if j := strings.Index(typ, " *"); j >= 0 { // *ROWTIME*, *PROCTIME*
			typ = typ[:j]
		}
		cols = append(cols, fmt.Sprintf("c%d %s", i, typ))
	}
	ddl := fmt.Sprintf("CREATE TABLE %s (%s) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json')",
		sink, strings.Join(cols, ", "), strings.ReplaceAll(dir, "'", "''"))
	if _, err := run(ddl); err != nil {
		drop()
		return "", false
	}
	res, err := run("INSERT INTO " + sink + " SELECT * FROM " + view)
	if err != nil || res.Kind != session.ResultJob {
		drop()
		return "", false
	}
	var out []string
	if err := r.sess.WaitJobs(ctx); err != nil && ctx.Err() != nil {
		out = append(out, "error: jobs did not finish within "+caseTimeout.String())
	}
	r.crashProblems = append(r.crashProblems, c.afterJobs(r.sess, []string{res.JobID})...)
	lines, err := visibleLines(dir)
	if err != nil {
		out = append(out, errLine(err))
	}
	out = append(out, foldFileLines(lines)...)
	for _, in := range r.sess.Jobs() {
		if in.ID == res.JobID && in.Err != nil {
			out = append(out, "error: query failed: "+strings.TrimSpace(in.Err.Error()))
		}
	}
	drop()
	return cmpErr(strings.Join(out, "\n")), true
}
