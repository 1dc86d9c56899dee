package sqltests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/session"
)

// caseTimeout bounds one directive: a query over an unbounded source would
// otherwise never end. It is a safety net, not part of any expected output.
const caseTimeout = 2 * time.Minute

// variant is one configuration a file runs in.
type variant struct {
	Parallelism int
	BatchSize   int
}

func (v variant) String() string {
	return fmt.Sprintf("parallelism.default=%d execution.batch-size=%d", v.Parallelism, v.BatchSize)
}

// canonical is the configuration whose outputs are the golden text.
var canonical = variant{Parallelism: 1, BatchSize: 1}

// variants are the other configurations checked with Options.Variants.
var variants = []variant{
	{1, 7}, {1, 1024}, {4, 1}, {4, 7}, {4, 1024},
}

// result is what running one directive produced.
type result struct {
	// out is the directive's output, compared with the golden text.
	out string
	// cmp is the part of out that must not depend on the variant: final
	// tables of queries, folded print-sink output and job failures, folded
	// sink files. Empty when nothing is compared.
	cmp string
	// nocanon (crash variant) says cmp has a form of its own that cannot be
	// compared with the canonical run's (rewritten print sinks, wrapped
	// queries).
	nocanon bool
	// problems (crash variant) are failed checks of the case's jobs.
	problems []string
}

// lockedBuffer collects the print sink's output, written from job goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// take returns and clears what was written so far.
func (b *lockedBuffer) take() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	b.buf.Reset()
	return s
}

// fileRunner runs the directives of one test file, in order, in one session.
type fileRunner struct {
	v        variant
	tmp      string // $TMP
	testdata string // $TESTDATA
	printed  *lockedBuffer
	sess     *session.Session
	// crash is the crash variant's machinery (nil otherwise).
	crash         *crashState
	crashProblems []string // problems found by the current case
}

// newFileRunner starts a session for the file at path in variant v. mem, if
// not nil, is the session's allocator.
func newFileRunner(path, tmp string, v variant, mem memory.Allocator) (*fileRunner, error) {
	return newRunner(path, tmp, v, mem, nil)
}

// newRunner is newFileRunner, in the crash variant when crash is not nil.
func newRunner(path, tmp string, v variant, mem memory.Allocator, crash *crashState) (*fileRunner, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	r := &fileRunner{v: v, tmp: tmp, testdata: filepath.Dir(abs), printed: &lockedBuffer{}, crash: crash}
	cfg := session.Config{Stdout: r.printed}
	if crash != nil {
		cfg.Log = crash
	}
	r.sess = session.New(cfg)
	if crash != nil {
		r.sess.CheckpointTestHook = crash.hook
	}
	if mem != nil {
		r.sess.Mem = mem
	}
	if err := r.applyVariant(""); err != nil {
		return nil, err
	}
	return r, nil
}

// applyVariant sets the variant's options; key limits it to one key (after a
// RESET of that key), "" sets both.
func (r *fileRunner) applyVariant(key string) error {
	opts := [][2]string{
		{"parallelism.default", strconv.Itoa(r.v.Parallelism)},
		{"execution.batch-size", strconv.Itoa(r.v.BatchSize)},
	}
	if r.crash != nil {
		opts = append(opts, r.crash.options()...)
	}
	for _, kv := range opts {
		if key != "" && key != kv[0] {
			continue
		}
		if err := r.sess.Options.Set(kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

func (r *fileRunner) close() {
	_ = r.sess.Close()
}

// subst replaces $TMP and $TESTDATA in test text.
func (r *fileRunner) subst(s string) string {
	s = strings.ReplaceAll(s, "$TMP", r.tmp)
	return strings.ReplaceAll(s, "$TESTDATA", r.testdata)
}

// unsubst turns the directories back into $TMP and $TESTDATA in outputs, so
// that golden text does not depend on where the test runs.
func (r *fileRunner) unsubst(s string) string {
	type pair struct{ dir, name string }
	ps := []pair{{r.tmp, "$TMP"}, {r.testdata, "$TESTDATA"}}
	if r.crash != nil {
		ps = append(ps, pair{r.crash.outDir, "$CRASH"})
	}
	sort.Slice(ps, func(i, j int) bool { return len(ps[i].dir) > len(ps[j].dir) })
	for _, p := range ps {
		if p.dir != "" {
			s = strings.ReplaceAll(s, p.dir, p.name)
		}
	}
	return s
}

// run executes one directive.
func (r *fileRunner) run(c *ddCase) result {
	var res result
	r.crashProblems = nil
	defer func() { r.crashProblems = nil }()
	switch c.Cmd {
	case "exec":
		_, sortAll := c.arg("sort")
		res = r.exec(r.subst(c.Input), sortAll)
	case "query":
		_, wantErr := c.arg("error")
		_, finalOnly := c.arg("final")
		res = r.query(r.subst(c.Input), wantErr, finalOnly)
	case "files":
		a, ok := c.arg("dir")
		if !ok || len(a.Vals) != 1 {
			return result{out: "error: the files directive needs dir=<path>"}
		}
		res = r.files(r.subst(a.Vals[0]))
	case "write":
		a, ok := c.arg("path")
		if !ok || len(a.Vals) != 1 {
			return result{out: "error: the write directive needs path=<file>"}
		}
		res = r.write(r.subst(a.Vals[0]), c.Input)
	default:
		return result{out: fmt.Sprintf("error: unknown directive %q (known: exec, query, files, write)", c.Cmd)}
	}
	res.out = r.unsubst(res.out)
	res.cmp = r.unsubst(res.cmp)
	for _, p := range r.crashProblems {
		res.problems = append(res.problems, r.unsubst(p))
	}
	return res
}

// errLine renders an error as one output line.
func errLine(err error) string {
	return "error: " + strings.TrimSpace(err.Error())
}

// exec runs every statement of text, stopping at the first error; then it
// waits for the jobs it submitted and appends the print sink's output
// (sorted) and the jobs' failures.
func (r *fileRunner) exec(text string, sortAll bool) result {
	var out []string
	var jobIDs []string
	r.printed.take()
	stmts, err := parser.ParseScript(text)
	if err != nil {
		return result{out: errLine(err)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	nocanon := false
	for _, st := range stmts {
		if r.crash != nil {
			redirected, err := r.redirectPrint(ctx, st)
			if err != nil {
				out = append(out, errLine(err))
				break
			}
			nocanon = nocanon || redirected
		}
		res, err := r.sess.Execute(ctx, st)
		if err != nil {
			out = append(out, errLine(err))
			break
		}
		if r.crash != nil {
			r.crash.notePrint(st)
		}
		if rs, ok := st.(*parser.Reset); ok {
			// Keep the runner's parallelism and batch size: the
			// defaults depend on the machine.
			if err := r.applyVariant(rs.Key); err != nil {
				out = append(out, errLine(err))
				break
			}
		}
		if res.Kind == session.ResultJob {
			jobIDs = append(jobIDs, res.JobID)
			out = append(out, "job submitted: "+r.jobName(res.JobID))
			continue
		}
		s, _ := r.render(ctx, res)
		out = append(out, s)
	}
	var cmp []string
	if len(jobIDs) > 0 {
		if err := r.sess.WaitJobs(ctx); err != nil && ctx.Err() != nil {
			out = append(out, "error: jobs did not finish within "+caseTimeout.String())
		}
		printed := r.printed.take()
		if printed != "" {
			lines := splitLines(printed)
			folded := foldPrinted(lines)
			if sortAll {
				sort.Strings(lines)
			} else {
				// Group by sink (identifier and subtask prefix),
				// keeping each subtask's order.
				sort.SliceStable(lines, func(i, j int) bool { return printedPrefix(lines[i]) < printedPrefix(lines[j]) })
			}
			out = append(out, lines...)
			cmp = append(cmp, folded...)
		}
		if r.crash != nil {
			r.crashProblems = append(r.crashProblems, r.crash.afterJobs(r.sess, jobIDs)...)
			rows, err := r.takePrinted(ctx)
			if err != nil {
				rows = append(rows, errLine(err))
			}
			out = append(out, rows...)
			cmp = append(cmp, rows...)
		}
		for _, id := range jobIDs {
			for _, in := range r.sess.Jobs() {
				if in.ID == id && in.Err != nil {
					l := fmt.Sprintf("error: job %s failed: %v", in.Name, strings.TrimSpace(in.Err.Error()))
					out = append(out, l)
					cmp = append(cmp, l)
				}
			}
		}
	} else if r.crash != nil && len(r.crash.cloneNames) > 0 {
		if _, err := r.takePrinted(ctx); err != nil { // drop redirect tables of failed INSERTs
			out = append(out, errLine(err))
		}
	}
	return result{out: strings.Join(out, "\n"), cmp: cmpErr(strings.Join(cmp, "\n")), nocanon: nocanon}
}

func (r *fileRunner) jobName(id string) string {
	for _, in := range r.sess.Jobs() {
		if in.ID == id {
			return in.Name
		}
	}
	return "?"
}

// render turns a statement's result into text; for a stream it also
// returns the final table (the variant-independent part).
func (r *fileRunner) render(ctx context.Context, res *session.Result) (out, final string) {
	switch res.Kind {
	case session.ResultOK, session.ResultText:
		if res.Warning != "" {
			return res.Warning + "\n" + strings.TrimRight(res.Message, "\n"), ""
		}
		return strings.TrimRight(res.Message, "\n"), ""
	case session.ResultTable:
		// Trailing blanks (empty last cells) are trimmed.
		lines := []string{strings.TrimRight(strings.Join(res.Columns, " | "), " ")}
		for _, row := range res.Rows {
			lines = append(lines, strings.TrimRight(strings.Join(row, " | "), " "))
		}
		if len(res.Rows) == 0 {
			lines = append(lines, "(empty)")
		}
		return strings.Join(lines, "\n"), ""
	case session.ResultStream:
		return r.drain(ctx, res)
	case session.ResultJob:
		return "job submitted: " + r.jobName(res.JobID), ""
	case session.ResultQuit:
		return "quit", ""
	}
	return fmt.Sprintf("(result kind %d)", res.Kind), ""
}

// drain reads a SELECT's changelog to its end and renders it: the changelog
// (only when it holds more than inserts) and the folded final table.
func (r *fileRunner) drain(ctx context.Context, res *session.Result) (out, final string) {
	var changes []session.Change
	st := res.Stream
	timedOut := false
loop:
	for {
		select {
		case batch, ok := <-st.Changes:
			if !ok {
				break loop
			}
			changes = append(changes, batch...)
		case <-ctx.Done():
			timedOut = true
			st.Cancel()
			for range st.Changes {
			}
			break loop
		}
	}
	err := st.Err()
	if timedOut {
		msg := "error: query did not end within " + caseTimeout.String() + " (is a source unbounded?)"
		return msg, msg
	}
	if err != nil {
		l := errLine(err)
		return l, cmpErr(l)
	}
	var lines []string
	appendOnly := true
	for _, ch := range changes {
		if ch.Op != "+I" {
			appendOnly = false
		}
	}
	if !appendOnly {
		lines = append(lines, "changelog:")
		for _, ch := range changes {
			lines = append(lines, ch.Op+"["+strings.Join(changeValues(ch, "null"), ", ")+"]")
		}
	}
	fin := foldChanges(res.Columns, changes)
	lines = append(lines, "final:")
	lines = append(lines, fin...)
	return strings.Join(lines, "\n"), "final:\n" + strings.Join(fin, "\n")
}

func changeValues(ch session.Change, null string) []string {
	vals := make([]string, len(ch.Values))
	for i, v := range ch.Values {
		if v == nil {
			vals[i] = null
		} else {
			vals[i] = *v
		}
	}
	return vals
}

// foldChanges applies a changelog to an empty table: +I and +U add a row,
// -U and -D remove one equal row. It returns the header and the sorted rows
// (NULL as "NULL"), "(empty)" for no rows, and an error line for a
// retraction of a row that is not there.
func foldChanges(cols []string, changes []session.Change) []string {
	var rows []string
	var bad []string
	counts := map[string]int{}
	for _, ch := range changes {
		row := strings.Join(changeValues(ch, "NULL"), " | ")
		switch ch.Op {
		case "+I", "+U":
			counts[row]++
		case "-U", "-D":
			if counts[row] == 0 {
				bad = append(bad, fmt.Sprintf("error: %s of a row that is not in the table: %s", ch.Op, row))
				continue
			}
			counts[row]--
		default:
			bad = append(bad, fmt.Sprintf("error: unknown change kind %q", ch.Op))
		}
	}
	for row, n := range counts {
		for i := 0; i < n; i++ {
			rows = append(rows, row)
		}
	}
	sort.Strings(rows)
	out := []string{strings.Join(cols, " | ")}
	if len(rows) == 0 {
		out = append(out, "(empty)")
	}
	out = append(out, rows...)
	return append(out, bad...)
}

// subtaskPrefix matches the operator chain and subtask that runtime errors
// start with; which chain and subtask fail depends on the variant.
var subtaskPrefix = regexp.MustCompile(`(error: |failed: )[^\n]*?\(subtask \d+/\d+\): `)

// cmpErr is an error line in the form compared between variants.
func cmpErr(l string) string { return subtaskPrefix.ReplaceAllString(l, "$1") }

// query runs one statement (normally a SELECT) and renders its result.
func (r *fileRunner) query(text string, wantErr, finalOnly bool) result {
	stmts, err := parser.ParseScript(text)
	if err == nil && len(stmts) != 1 {
		err = fmt.Errorf("the query directive takes exactly one statement, found %d", len(stmts))
	}
	if err != nil {
		l := errLine(err)
		return result{out: l, cmp: l}
	}
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	if sel, ok := stmts[0].(*parser.Select); ok && r.crash != nil {
		if cmp, ok := r.wrapQuery(ctx, sel); ok {
			return result{out: cmp, cmp: cmp, nocanon: true}
		}
	}
	res, err := r.sess.Execute(ctx, stmts[0])
	if err != nil {
		l := errLine(err)
		return result{out: l, cmp: l}
	}
	out, final := r.render(ctx, res)
	if finalOnly && res.Kind == session.ResultStream && !strings.HasPrefix(out, "error: ") {
		out = final
	}
	if wantErr && !strings.HasPrefix(out, "error: ") {
		out = "expected an error, but the query succeeded:\n" + out
	}
	return result{out: out, cmp: final}
}

// partID matches the uuid-like id in part file names, which is derived from
// the sink's path (and so from $TMP).
var partID = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

var printPrefix = regexp.MustCompile(`^(?:([^>\[]*?):)?\d+> `)

// foldPrinted folds print-sink lines ("[id[:n]> ]+I[...]") into the rows
// that remain, so that outputs of different parallelism and batch sizes can
// be compared: a subtask number prefix is dropped, +I/+U add, -U/-D remove.
func foldPrinted(lines []string) []string {
	counts := map[string]int{}
	var bad []string
	for _, l := range lines {
		l = printPrefix.ReplaceAllString(l, "$1> ")
		l = strings.TrimPrefix(l, "> ")
		pre, rest := "", l
		if i := strings.Index(l, "> "); i >= 0 && !strings.Contains(l[:i], "[") {
			pre, rest = l[:i+2], l[i+2:]
		}
		op := ""
		if len(rest) >= 3 && rest[2] == '[' {
			op = rest[:2]
		}
		switch op {
		case "-U", "-D":
			key := pre + "+I" + rest[2:]
			if counts[key] == 0 {
				bad = append(bad, "error: retraction of a row not printed before: "+l)
				continue
			}
			counts[key]--
		case "+U":
			counts[pre+"+I"+rest[2:]]++
		default:
			counts[l]++
		}
	}
	var out []string
	for l, n := range counts {
		for i := 0; i < n; i++ {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return append(out, bad...)
}

// printedPrefix returns the "identifier[:n]> " prefix of a print-sink line.
func printedPrefix(l string) string {
	if i := strings.Index(l, "> "); i >= 0 && !strings.Contains(l[:i], "[") {
		return l[:i+2]
	}
	return ""
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// files lists the visible files under dir (names not starting with '.' or
// '_', at any depth) with their lines, sorted.
func (r *fileRunner) files(dir string) result {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			names = append(names, p)
		}
		return nil
	})
	if err != nil {
		l := errLine(err)
		return result{out: l, cmp: l}
	}
	sort.Strings(names)
	var out, all []string
	if len(names) == 0 {
		out = append(out, "(no files)")
	}
	for _, p := range names {
		data, err := os.ReadFile(p)
		if err != nil {
			out = append(out, errLine(err))
			continue
		}
		rel, _ := filepath.Rel(dir, p)
		lines := splitLines(string(data))
		sort.Strings(lines)
		out = append(out, partID.ReplaceAllString(filepath.ToSlash(rel), "<id>")+":")
		out = append(out, lines...)
		all = append(all, lines...)
	}
	return result{out: strings.Join(out, "\n"), cmp: strings.Join(foldFileLines(all), "\n")}
}

// foldFileLines folds sink file lines for the comparison between variants:
// JSON lines with an "op" field are applied as changes (the op removed),
// other lines are kept. The result is sorted.
func foldFileLines(lines []string) []string {
	counts := map[string]int{}
	var bad []string
	for _, l := range lines {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["op"] == nil {
			counts[l]++
			continue
		}
		var op string
		_ = json.Unmarshal(m["op"], &op)
		delete(m, "op")
		b, _ := json.Marshal(m) // keys sorted
		key := string(b)
		switch op {
		case "-U", "-D":
			if counts[key] == 0 {
				bad = append(bad, "error: retraction of a row not written before: "+l)
				continue
			}
			counts[key]--
		default:
			counts[key]++
		}
	}
	var out []string
	for l, n := range counts {
		for i := 0; i < n; i++ {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return append(out, bad...)
}

// write creates a file with the directive's input (plus a final newline).
func (r *fileRunner) write(path, text string) result {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return result{out: errLine(err)}
	}
	if text != "" {
		text += "\n"
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return result{out: errLine(err)}
	}
	return result{out: "ok"}
}
