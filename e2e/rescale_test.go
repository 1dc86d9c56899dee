package e2e

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/checkpoint"
)

// Sizes of the rescale test: the generator is rate limited, so that a run
// lasts about three seconds and the stops land mid-stream.
const (
	rescaleRows = 60_000
	rescaleKeys = 1_000
	rescaleRate = 20_000 // rows per second, for the whole job
)

// rescaleJob writes a bounded, rate-limited GROUP BY job over about
// rescaleKeys keys into the json sink out.
func rescaleJob(t *testing.T, dir, name, ckDir, out string) string {
	t.Helper()
	return writeFile(t, dir, name, fmt.Sprintf(`SET 'execution.checkpointing.interval' = '100 ms';
SET 'state.checkpoints.dir' = %s;
CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence',
  'fields.id.start' = '1', 'fields.id.end' = '%d', 'rows-per-second' = '%d');
CREATE TABLE out (k STRING, n BIGINT, s BIGINT) WITH ('connector' = 'filesystem', 'path' = %s, 'format' = 'json');
INSERT INTO out SELECT CONCAT('k', CAST(MOD(id, %d) AS STRING)), COUNT(*), SUM(id) FROM src
GROUP BY CONCAT('k', CAST(MOD(id, %d) AS STRING));
`, sqlQuote(ckDir), rescaleRows, rescaleRate, sqlQuote(out), rescaleKeys, rescaleKeys))
}

// rescaleOracle asks SQLite for the answer of rescaleJob.
func rescaleOracle(t *testing.T) map[string]agg {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "oracle.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(fmt.Sprintf(`WITH RECURSIVE seq(id) AS (SELECT 1 UNION ALL SELECT id + 1 FROM seq WHERE id < %d)
SELECT 'k' || (id %% %d), COUNT(*), SUM(id) FROM seq GROUP BY 1`, rescaleRows, rescaleKeys))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]agg{}
	for rows.Next() {
		var k string
		var a agg
		if err := rows.Scan(&k, &a.N, &a.S); err != nil {
			t.Fatal(err)
		}
		out[k] = a
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	reCheckpointAny = regexp.MustCompile(`^job [0-9a-f]{32}: checkpoint (\d+) complete`)
	reRecordsIn     = regexp.MustCompile(`^job [0-9a-f]{32} \([^)]*\) FINISHED: (\d+) records in`)
)

// checkpointsSeen counts the checkpoint completions a run printed.
func checkpointsSeen(lines []string) int {
	n := 0
	for _, l := range lines {
		if reCheckpointAny.MatchString(l) {
			n++
		}
	}
	return n
}

// recordsIn returns the records in of a FINISHED run's summary.
func recordsIn(t *testing.T, p *runProc) int64 {
	t.Helper()
	m := reRecordsIn.FindStringSubmatch(p.summaryLine())
	if m == nil {
		t.Fatalf("%s: no FINISHED summary:\n%s", p.name, p.tail())
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// TestRescale is Proof 2: a job stopped with a savepoint at parallelism 2
// is restored at 5, stopped with a savepoint again and restored at 1, which
// runs to the end. Its folded output equals an uninterrupted run's and
// SQLite's, with exactly one row per key, and the three runs together read
// every generated row exactly once (each split owned by one subtask).
func TestRescale(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	isolateRegistry(t)
	dir := t.TempDir()
	spDir := filepath.Join(dir, "savepoints")
	out, refOut := filepath.Join(dir, "out"), filepath.Join(dir, "out-uninterrupted")
	job := rescaleJob(t, dir, "job.sql", filepath.Join(dir, "checkpoints"), out)
	ref := startRun(t, "uninterrupted", dir, "run", "-p", "2",
		rescaleJob(t, dir, "ref.sql", filepath.Join(dir, "checkpoints-ref"), refOut))
	oracle := rescaleOracle(t)

	total := rescaleRuns(t, dir, job, spDir, rescaleRows, true)
	if total != rescaleRows {
		t.Errorf("the three runs read %d records in all, want each of the %d rows exactly once", total, rescaleRows)
	}
	if code := ref.wait(); code != 0 {
		t.Fatalf("the uninterrupted run exited %d\n%s", code, ref.tail())
	}
	got, clean := committed(t, out)
	if !clean {
		t.Errorf("the rescaled job's output is not exactly one row per key")
	}
	want, refClean := committed(t, refOut)
	if !refClean {
		t.Errorf("the uninterrupted run's output is not exactly one row per key")
	}
	if len(oracle) != rescaleKeys {
		t.Fatalf("SQLite has %d keys, want %d", len(oracle), rescaleKeys)
	}
	if d := diffAggs(want, oracle); d != "" {
		t.Errorf("the uninterrupted run differs from SQLite:\n%s", d)
	}
	if d := diffAggs(got, oracle); d != "" {
		t.Errorf("the rescaled job (-p 2, 5, 1) differs from SQLite:\n%s", d)
	}
}

// rescaleRuns runs job at parallelism 2, stops it with a savepoint after two
// checkpoints, restores it at 5, stops it again and restores it at 1, which
// runs to the end. It returns the records the three runs read in all;
// rows is what the job's sources generate (each stop must land before it
// is all read). checkMaxPar (the GROUP BY job) also tries a refused restore
// with another pipeline.max-parallelism and checks that each restore
// switches the aggregation's phases (two at p5, one at p1).
func rescaleRuns(t *testing.T, dir, job, spDir string, rows int64, checkMaxPar bool) int64 {
	t.Helper()
	var total int64
	from := ""
	for i, par := range []int{2, 5, 1} {
		args := []string{"run", "-p", strconv.Itoa(par)}
		if from != "" {
			args = append(args, "--from", from)
		}
		if from != "" && checkMaxPar {
			// The savepoint was taken by the other plan of the
			// aggregation: table.optimizer.agg-phase-strategy AUTO splits
			// it into a local and a global phase where its input is
			// shuffled (p2, p5) and keeps one phase at p1; the state
			// restores across the switch (the upgrade report names the
			// operator that claims it).
			r := mustCLI(t, dir, append(append([]string{}, args...), "--check", job)...)
			want := "RESTORED      GlobalGroupAggregate("
			if par == 1 {
				want = "RESTORED      GroupAggregate("
			}
			if !strings.Contains(r.stdout, want) {
				t.Errorf("run --check -p %d --from %s: want %q in the upgrade report:\n%s", par, filepath.Base(from), want, r.stdout)
			}
		}
		if i == 2 && checkMaxPar {
			// The number of key groups cannot change on restore: a
			// different pipeline.max-parallelism is refused, saying why.
			r := cli(t, dir, append(append([]string{}, args...), "--set", "pipeline.max-parallelism=64", job)...)
			if r.code != 1 || !strings.Contains(r.stderr, "'pipeline.max-parallelism' is 64") || !strings.Contains(r.stderr, "key groups") {
				t.Errorf("restore with another pipeline.max-parallelism: exit %d, want 1 and a message naming it:\n%s", r.code, r.stderr)
			}
		}
		p := startRun(t, fmt.Sprintf("run %d (-p %d)", i+1, par), dir, append(args, job)...)
		id := p.job()
		if from != "" {
			if m := p.waitLine(reRestoring); m[2] != from {
				t.Fatalf("%s restores %s, want %s", p.name, m[2], from)
			}
		}
		if i == 2 {
			if code := p.wait(); code != 0 {
				t.Fatalf("%s exited %d\n%s", p.name, code, p.tail())
			}
			n := recordsIn(t, p)
			total += n
			t.Logf("%s ran to the end: %d records in", p.name, n)
			break
		}
		// Stop after two checkpoints of this run: some of the input read
		// and committed, most of it still to come.
		p.waitFor("taking two checkpoints", func(lines []string) bool { return checkpointsSeen(lines) >= 2 })
		from = savepointPath(t, mustCLI(t, dir, "stop", "--savepoint", spDir, id))
		if code := p.wait(); code != 0 {
			t.Fatalf("%s exited %d after stop, want 0\n%s", p.name, code, p.tail())
		}
		n := recordsIn(t, p)
		if n <= 0 || n >= rows {
			t.Fatalf("%s read %d records before the stop: want some but not all of %d", p.name, n, rows)
		}
		total += n
		// The savepoint records the parallelism it was taken at; its
		// keyed state is stored by key group, independent of it.
		if info, err := checkpoint.ReadSavepointMeta(from); err != nil {
			t.Fatal(err)
		} else if info.Meta["parallelism"] != strconv.Itoa(par) {
			t.Errorf("%s: the savepoint records parallelism %q, want %d", p.name, info.Meta["parallelism"], par)
		}
		t.Logf("%s stopped with %s after %d records", p.name, filepath.Base(from), n)
	}
	return total
}
