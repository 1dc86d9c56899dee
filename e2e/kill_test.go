package e2e

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/streamsql/streamsql/checkpoint"
)

// Sizes of the kill tests: large enough that a run lasts for several
// 50 ms checkpoints (the GROUP BY reads about 10 M rows a second on two
// cores since issue 11's session 9), small enough for the whole package to
// stay under about four minutes on two cores (most of it the SQLite
// oracle over the 8 M rows).
const (
	killRows   = 8_000_000
	killKeys   = 10_000
	badLines   = 1_234 // Proof 9: lines the CSV source must skip, exactly
	wantKills  = 5
	runTimeout = 30 * time.Second // safety net for one process, never reached when all is well
	dataSeed   = 20261130
)

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// streamsqlBin builds the streamsql binary once per test process.
func streamsqlBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "streamsql-e2e-bin-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "streamsql")
		cmd := exec.Command("go", "build", "-o", binPath, "github.com/streamsql/streamsql/cmd/streamsql")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/streamsql: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// dataset is the generated input: good rows (key "k<n>", value), and a copy
// with bad lines mixed in.
type dataset struct {
	good, bad string // CSV files
	nBad      int
}

// agg is one key's result: COUNT(*), SUM(v).
type agg struct{ N, S int64 }

// genData writes the CSV files into dir (seeded, so every run sees the
// same data).
func genData(t *testing.T, dir string) dataset {
	t.Helper()
	d := dataset{good: filepath.Join(dir, "in.csv"), bad: filepath.Join(dir, "in_bad.csv"), nBad: badLines}
	if err := writeData(d); err != nil {
		t.Fatal(err)
	}
	return d
}

func writeData(d dataset) error {
	gf, err := os.Create(d.good)
	if err != nil {
		return err
	}
	defer gf.Close()
	bf, err := os.Create(d.bad)
	if err != nil {
		return err
	}
	defer bf.Close()
	g, b := bufio.NewWriterSize(gf, 1<<20), bufio.NewWriterSize(bf, 1<<20)
	rng := rand.New(rand.NewSource(dataSeed))
	// Bad lines go at distinct random positions among the good ones.
	badAt := map[int]bool{}
	for len(badAt) < d.nBad {
		badAt[rng.Intn(killRows)] = true
	}
	bad := []string{"k%d,not-a-number", "k%d,1,2", "k%d", "k%d,9223372036854775808"}
	var line []byte
	for i := 0; i < killRows; i++ {
		if badAt[i] {
			fmt.Fprintf(b, bad[rng.Intn(len(bad))]+"\n", rng.Intn(killKeys))
		}
		line = line[:0]
		line = append(line, 'k')
		line = strconv.AppendInt(line, int64(rng.Intn(killKeys)), 10)
		line = append(line, ',')
		line = strconv.AppendInt(line, int64(rng.Intn(1000)), 10)
		line = append(line, '\n')
		g.Write(line)
		b.Write(line)
	}
	if err := g.Flush(); err != nil {
		return err
	}
	if err := b.Flush(); err != nil {
		return err
	}
	if err := gf.Sync(); err != nil {
		return err
	}
	return bf.Sync()
}

// sqliteOracle imports the good CSV into SQLite and runs the job's query
// there: SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k.
func sqliteOracle(path string) (map[string]agg, error) {
	dir, err := os.MkdirTemp("", "streamsql-e2e-sqlite-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", filepath.Join(dir, "oracle.db"))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	for _, s := range []string{"PRAGMA journal_mode = OFF", "PRAGMA synchronous = OFF", "CREATE TABLE src (k TEXT NOT NULL, v INTEGER NOT NULL)"} {
		if _, err := db.Exec(s); err != nil {
			return nil, fmt.Errorf("%s: %w", s, err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tx, err := db.Begin()
	if err != nil {
		return nil, err
	}
	ins, err := tx.Prepare("INSERT INTO src (k, v) VALUES (?, ?)")
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		k, v, ok := strings.Cut(sc.Text(), ",")
		iv, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("%s:%d: not a good line: %q", path, n, sc.Text())
		}
		if _, err := ins.Exec(k, iv); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	rows, err := db.Query("SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]agg{}
	for rows.Next() {
		var k string
		var a agg
		if err := rows.Scan(&k, &a.N, &a.S); err != nil {
			return nil, err
		}
		out[k] = a
	}
	return out, rows.Err()
}

// startOracle computes the oracle in the background; the function it
// returns waits for it.
func startOracle(d dataset) (wait func(t *testing.T) map[string]agg) {
	var oracle map[string]agg
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		oracle, err = sqliteOracle(d.good)
	}()
	return func(t *testing.T) map[string]agg {
		t.Helper()
		<-done
		if err != nil {
			t.Fatalf("SQLite oracle: %v", err)
		}
		return oracle
	}
}

// killCase is one variant of the kill test.
type killCase struct {
	name        string
	atLeastOnce bool // Proof 7
	badInput    bool // Proof 9
	seed        int64
}

// process is one `streamsql run` process and what it printed.
type process struct {
	cmd    *exec.Cmd
	lines  chan string // stderr, line by line; closed at EOF
	stderr []string
	jobID  string
}

var (
	reSubmitted  = regexp.MustCompile(`^job ([0-9a-f]{32}) \(insert-into_out\) submitted$`)
	reCheckpoint = regexp.MustCompile(`^job ([0-9a-f]{32}): checkpoint (\d+) complete`)
	reSummary    = regexp.MustCompile(`^job ([0-9a-f]{32}) \(insert-into_out\) FINISHED: (\d+) records in, (\d+) out(?:, (\d+) bad records? skipped)?$`)
)

func start(t *testing.T, ctx context.Context, bin, dir string, args ...string) *process {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Stdout = nil // the job prints nothing
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	return p
}

// next returns the next stderr line; ok is false at EOF.
func (p *process) next() (string, bool) {
	l, ok := <-p.lines
	if ok {
		p.stderr = append(p.stderr, l)
		if m := reSubmitted.FindStringSubmatch(l); m != nil {
			p.jobID = m[1]
		}
	}
	return l, ok
}

func (p *process) tail() string {
	s := p.stderr
	if len(s) > 15 {
		s = s[len(s)-15:]
	}
	return strings.Join(s, "\n")
}

// kill sends SIGKILL and reaps the process.
func (p *process) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill -9: %v", err)
	}
	for l := range p.lines { // drain to EOF so Wait can return
		p.stderr = append(p.stderr, l)
	}
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if err == nil {
		t.Fatalf("the run ended by itself (exit 0) before the kill: the input is too small for the kill schedule\n%s", p.tail())
	}
	if !errors.As(err, &ee) || ee.ExitCode() != -1 {
		t.Fatalf("the process was not killed by the signal: %v\n%s", err, p.tail())
	}
}

// jobFile writes the job of the kill tests.
func jobFile(t *testing.T, dir, input string, kc killCase) (path, root, out string) {
	t.Helper()
	root, out = filepath.Join(dir, "checkpoints"), filepath.Join(dir, "out")
	mode := "EXACTLY_ONCE"
	if kc.atLeastOnce {
		mode = "AT_LEAST_ONCE"
	}
	extra := ""
	if kc.badInput {
		extra = ", 'csv.ignore-parse-errors' = 'true'"
	}
	q := func(s string) string { return strings.ReplaceAll(s, "'", "''") }
	// Batches of 1024 rows (not the default 8192) and checkpoints every
	// 50 ms: the kill schedule (runKilled) kills after the first or second
	// checkpoint of a run, and five runs must not reach the end of the
	// input; smaller batches also put more barriers between more batches.
	sqlText := fmt.Sprintf(`SET 'execution.checkpointing.interval' = '50 ms';
SET 'execution.batch-size' = '1024';
SET 'execution.checkpointing.mode' = '%s';
SET 'state.checkpoints.dir' = '%s';
CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv'%s);
CREATE TABLE out (k STRING, n BIGINT, s BIGINT) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');
INSERT INTO out SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k;
`, mode, q(root), q(input), extra, q(out))
	path = filepath.Join(dir, "job.sql")
	if err := os.WriteFile(path, []byte(sqlText), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, root, out
}

// latestComplete returns the job's complete checkpoints (ascending).
func completeOf(t *testing.T, root, jobID string) []checkpoint.Info {
	t.Helper()
	jobs, err := checkpoint.List(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.JobID == jobID {
			return j.Checkpoints
		}
	}
	return nil
}

// summary is the final line of a finished run.
type summary struct {
	in, out, skipped int64
}

// runKilled runs the job, kills it wantKills times (each time after at
// least one new complete checkpoint, at a seeded random moment), resumes
// it with --from each time and lets the last run finish.
func runKilled(t *testing.T, bin, dir, jobPath, root string, seed int64) (kills int, final summary, finalJob string) {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	from := ""
	for run := 0; ; run++ {
		ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
		defer cancel()
		args := []string{"run", "-p", "2"}
		if from != "" {
			args = append(args, "--from", from)
		}
		args = append(args, jobPath)
		p := start(t, ctx, bin, dir, args...)
		// Kill after the target-th checkpoint of this run, plus a random
		// delay (a kill may land inside the next checkpoint). Short enough
		// that five runs do not reach the end of the input: at-least-once
		// (no alignment) reads about 2.5 M rows a second on two cores, and
		// a run that finishes before its kill fails the test.
		target := 1 + rng.Intn(2)
		delay := time.Duration(rng.Intn(50)) * time.Millisecond
		seen := 0
		killed := false
		for !killed {
			l, ok := p.next()
			if !ok {
				break
			}
			m := reCheckpoint.FindStringSubmatch(l)
			if m == nil || m[1] != p.jobID || kills >= wantKills {
				continue
			}
			if seen++; seen < target {
				continue
			}
			// The line is printed after _metadata was durably written.
			cks := completeOf(t, root, p.jobID)
			if len(cks) == 0 {
				t.Fatalf("run %d: %q printed, but %s holds no complete checkpoint", run, l, filepath.Join(root, p.jobID))
			}
			if from != "" {
				rf := cks[len(cks)-1].Meta["restored_from"]
				if !strings.HasPrefix(rf, from) {
					t.Fatalf("run %d: started with --from %s, but its checkpoint says restored_from = %q", run, from, rf)
				}
			}
			time.Sleep(delay) // the random moment of the kill, not a wait for an event
			p.kill(t)
			killed = true
		}
		if killed {
			kills++
			if cks := completeOf(t, root, p.jobID); len(cks) == 0 {
				t.Fatalf("run %d: killed after a checkpoint, but no complete checkpoint is left in %s", run, filepath.Join(root, p.jobID))
			}
			from = filepath.Join(root, p.jobID)
			continue
		}
		err := p.cmd.Wait()
		if ctx.Err() != nil {
			t.Fatalf("run %d (%s) did not end within %v (killed): the job hangs\n%s", run, strings.Join(args, " "), runTimeout, p.tail())
		}
		if err != nil {
			t.Fatalf("run %d (%s): %v\n%s", run, strings.Join(args, " "), err, p.tail())
		}
		if kills < wantKills {
			t.Fatalf("the job finished after %d kills, want %d: make the input larger\n%s", kills, wantKills, p.tail())
		}
		for _, l := range p.stderr {
			if m := reSummary.FindStringSubmatch(l); m != nil {
				final.in, _ = strconv.ParseInt(m[2], 10, 64)
				final.out, _ = strconv.ParseInt(m[3], 10, 64)
				if m[4] != "" {
					final.skipped, _ = strconv.ParseInt(m[4], 10, 64)
				}
				return kills, final, p.jobID
			}
		}
		t.Fatalf("no summary line from the last run:\n%s", p.tail())
	}
}

// foldOutput reads the committed (visible) files of the sink and applies
// the changelog: +I/+U add a row, -U/-D remove one equal row (as a
// multiset, so the order of the files does not matter). It returns the
// rows left per key and the number of retractions of rows that were never
// committed.
func foldOutput(t *testing.T, dir string) (map[string][]agg, int) {
	t.Helper()
	type row struct {
		k string
		a agg
	}
	counts := map[row]int{}
	missing := 0
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Op string `json:"op"`
		K  string `json:"k"`
		N  int64  `json:"n"`
		S  int64  `json:"s"`
	}
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "_") {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			rec.Op = ""
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatalf("%s: %v: %q", e.Name(), err, sc.Text())
			}
			r := row{rec.K, agg{rec.N, rec.S}}
			switch rec.Op {
			case "+I", "+U":
				counts[r]++
			case "-U", "-D":
				counts[r]-- // files are read in any order: negative until its +I/+U is read
			default:
				t.Fatalf("%s: unknown op %q", e.Name(), rec.Op)
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string][]agg{}
	for r, n := range counts {
		if n < 0 {
			missing -= n
		}
		for i := 0; i < n; i++ {
			out[r.k] = append(out[r.k], r.a)
		}
	}
	return out, missing
}

// checkRetained is Proof 8: after the job finished, its own checkpoint
// directory is gone, and what the killed runs left holds only complete,
// retained checkpoints plus what a kill can interrupt: at most one
// checkpoint in flight. Shared files referenced by no _metadata are
// counted; they may only come from a checkpoint (or a prune) that the kill
// interrupted.
func checkRetained(t *testing.T, root, finalJob string, killedJobs int) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, finalJob)); !os.IsNotExist(err) {
		t.Errorf("the finished job's checkpoint directory is still there (stat: %v)", err)
	}
	jobs, err := checkpoint.List(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != killedJobs {
		t.Errorf("%d job directories in %s, want %d (one per killed run)", len(jobs), root, killedJobs)
	}
	orphans, incomplete := 0, 0
	for _, j := range jobs {
		if len(j.Checkpoints) == 0 || len(j.Checkpoints) > 2 {
			t.Errorf("%s: %d complete checkpoints, want 1 (num-retained) or 2 (killed while pruning)", j.Dir, len(j.Checkpoints))
		}
		if len(j.Incomplete) > 1 {
			t.Errorf("%s: incomplete checkpoints %v: a kill interrupts at most one", j.Dir, j.Incomplete)
		}
		incomplete += len(j.Incomplete)
		refs := map[string]bool{}
		for _, c := range j.Checkpoints {
			for _, p := range metadataFiles(t, filepath.Join(c.Path, "_metadata")) {
				refs[filepath.Clean(p)] = true
			}
		}
		ents, err := os.ReadDir(filepath.Join(j.Dir, "shared"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range ents {
			if !refs[filepath.Join("shared", e.Name())] {
				n++
			}
		}
		if n > 0 && len(j.Incomplete) == 0 && len(j.Checkpoints) < 2 {
			// Possible only when the kill landed between removing an old
			// checkpoint's _metadata and its shared files; logged.
			t.Logf("%s: %d unreferenced shared file(s) without an interrupted checkpoint", j.Dir, n)
		}
		orphans += n
	}
	t.Logf("checkpoint root after the kills: %d job directories, %d incomplete checkpoint(s), %d unreferenced shared file(s)", len(jobs), incomplete, orphans)
}

// metadataFiles returns the files a _metadata references (relative to its
// job directory).
func metadataFiles(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Body struct {
			Files []struct {
				Path string `json:"path"`
			} `json:"files"`
		} `json:"body"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, f := range doc.Body.Files {
		out = append(out, f.Path)
	}
	return out
}

// TestKillResume is Proofs 2, 7, 8 and 9: a GROUP BY job over a large CSV
// file is killed with SIGKILL at least five times at random moments,
// resumed with --from after each kill, and its folded committed output
// equals SQLite's answer (exactly once), or never counts less (at least
// once); bad lines skipped with ignore-parse-errors are counted once.
func TestKillResume(t *testing.T) {
	if testing.Short() {
		t.Skip("kill tests build the binary and process millions of rows")
	}
	bin := streamsqlBin(t)
	began := time.Now()
	d := genData(t, t.TempDir())
	wantOracle := startOracle(d)
	t.Cleanup(func() { wantOracle(t) }) // the import reads the data: let it end before the data goes
	t.Logf("generated %d rows (+%d bad lines) in %v", killRows, d.nBad, time.Since(began).Round(time.Millisecond))
	for _, kc := range []killCase{
		{name: "exactly-once", seed: 1},
		{name: "at-least-once", atLeastOnce: true, seed: 2},
		{name: "ignore-parse-errors", badInput: true, seed: 3},
	} {
		t.Run(kc.name, func(t *testing.T) {
			dir := t.TempDir()
			input := d.good
			if kc.badInput {
				input = d.bad
			}
			jobPath, root, outDir := jobFile(t, dir, input, kc)
			began := time.Now()
			kills, final, finalJob := runKilled(t, bin, dir, jobPath, root, kc.seed)
			t.Logf("%d rows, %d kills, %v; last run: %d records in, %d out, %d skipped",
				killRows, kills, time.Since(began).Round(time.Millisecond), final.in, final.out, final.skipped)
			if kills < wantKills {
				t.Fatalf("%d kills, want at least %d", kills, wantKills)
			}
			if final.in <= 0 || final.in >= killRows {
				t.Errorf("the last run read %d records: a run restored from a checkpoint reads fewer than all %d", final.in, killRows)
			}
			if kc.badInput && final.skipped != int64(d.nBad) {
				t.Errorf("%d bad records skipped across %d kills, want exactly %d (the bad lines of the input)", final.skipped, kills, d.nBad)
			}
			if !kc.badInput && final.skipped != 0 {
				t.Errorf("%d bad records skipped, want 0", final.skipped)
			}
			got, missing := foldOutput(t, outDir)
			if missing > 0 {
				t.Errorf("%d retraction(s) of rows that were never committed", missing)
			}
			want := wantOracle(t)
			compare(t, got, want, kc.atLeastOnce)
			checkRetained(t, root, finalJob, kills)
		})
	}
}

// compare checks the folded output against the oracle: one row per key,
// equal (exactly once) or with COUNT never below the oracle's (at least
// once).
func compare(t *testing.T, got map[string][]agg, want map[string]agg, atLeastOnce bool) {
	t.Helper()
	var bad []string
	over := 0
	for k, w := range want {
		rows := got[k]
		switch {
		case len(rows) != 1:
			bad = append(bad, fmt.Sprintf("%s: %d rows %v, want one: %v", k, len(rows), rows, w))
		case atLeastOnce:
			if rows[0].N < w.N || rows[0].S < w.S {
				bad = append(bad, fmt.Sprintf("%s: got %+v, fewer than SQLite's %+v", k, rows[0], w))
			} else if rows[0] != w {
				over++
			}
		case rows[0] != w:
			bad = append(bad, fmt.Sprintf("%s: got %+v, SQLite says %+v", k, rows[0], w))
		}
	}
	for k, rows := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, fmt.Sprintf("%s: %v, a key SQLite does not have", k, rows))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		if len(bad) > 20 {
			bad = append(bad[:20], fmt.Sprintf("... and %d more", len(bad)-20))
		}
		t.Errorf("%d of %d keys differ from SQLite:\n%s", len(bad), len(want), strings.Join(bad, "\n"))
	}
	if atLeastOnce {
		t.Logf("at-least-once: %d of %d keys counted some records more than once", over, len(want))
	}
}
