package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// upgradeKey is the grouping key of the upgrade tests' jobs.
var upgradeKey = fmt.Sprintf("CONCAT('k', CAST(MOD(id, %d) AS STRING))", rescaleKeys)

// upgradeJob writes a job over rescaleJob's source: ddl creates its sink,
// insert is its statement.
func upgradeJob(t *testing.T, dir, name, ddl, insert string) string {
	t.Helper()
	return writeFile(t, dir, name, fmt.Sprintf(`SET 'execution.checkpointing.interval' = '100 ms';
SET 'state.checkpoints.dir' = %s;
CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence',
  'fields.id.start' = '1', 'fields.id.end' = '%d', 'rows-per-second' = '%d');
%s;
%s;
`, sqlQuote(filepath.Join(dir, "checkpoints")), rescaleRows, rescaleRate, ddl, insert))
}

// jsonSink is the DDL of a json filesystem sink.
func jsonSink(table, columns, path string) string {
	return fmt.Sprintf("CREATE TABLE %s (%s) WITH ('connector' = 'filesystem', 'path' = %s, 'format' = 'json')", table, columns, sqlQuote(path))
}

// removedOutJob writes the job without the aggregation: every row goes to
// the sink raw at dir/out-removed.
func removedOutJob(t *testing.T, dir string) string {
	t.Helper()
	return upgradeJob(t, dir, "removed.sql", jsonSink("raw", "k STRING, id BIGINT", filepath.Join(dir, "out-removed")),
		fmt.Sprintf("INSERT INTO raw SELECT %s, id FROM src", upgradeKey))
}

// countedLines counts the lines of the committed files in dir.
func countedLines(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "_") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		n += bytes.Count(data, []byte("\n"))
	}
	return n
}

// TestUpgrade is Proof 4: a job stopped with a savepoint is restored by
// changed queries. Each compatible change (a projection or a filter after
// the aggregation, a stateless step before it, another sink) passes
// `run --check` and restores: its counts continue from the savepoint's
// values to SQLite's totals. An incompatible change (the grouping key's
// type, the aggregate) is refused by --check and by the restore with the
// report naming the operator; a removed aggregation is refused, then
// accepted with --allow-non-restored-state.
func TestUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	isolateRegistry(t)
	dir := t.TempDir()
	spDir := filepath.Join(dir, "savepoints")
	counts := fmt.Sprintf("SELECT /*+ UID('counts') */ %s AS k, COUNT(*) AS n, SUM(id) AS s FROM src", upgradeKey)
	group := " GROUP BY " + upgradeKey
	cols := "k STRING, n BIGINT, s BIGINT"

	// The original job, stopped with a savepoint after two checkpoints.
	baseOut := filepath.Join(dir, "out-base")
	base := startRun(t, "original", dir, "run", "-p", "2",
		upgradeJob(t, dir, "base.sql", jsonSink("out", cols, baseOut), "INSERT INTO out "+counts+group))
	id := base.job()
	base.waitFor("taking two checkpoints", func(lines []string) bool { return checkpointsSeen(lines) >= 2 })
	sp := savepointPath(t, mustCLI(t, dir, "stop", "--savepoint", spDir, id))
	if code := base.wait(); code != 0 {
		t.Fatalf("the original job exited %d after stop\n%s", code, base.tail())
	}
	readBefore := recordsIn(t, base)
	atSavepoint, clean := committed(t, baseOut)
	if !clean || len(atSavepoint) == 0 {
		t.Fatalf("the original job's committed output at the savepoint is not one row per key (%d keys)", len(atSavepoint))
	}
	oracle := rescaleOracle(t)
	t.Logf("savepoint %s after %d of %d rows (%d keys)", filepath.Base(sp), readBefore, rescaleRows, len(atSavepoint))

	same := func(m map[string]agg) map[string]agg { return m }
	compatible := []struct {
		name, table, out, insert string
		view                     func(map[string]agg) map[string]agg // what the change does to the rows
	}{
		{"projection after the aggregation", "out", "out-projection",
			"INSERT INTO out SELECT k, n, s * 2 FROM (" + counts + group + ") AS t",
			func(m map[string]agg) map[string]agg {
				out := map[string]agg{}
				for k, a := range m {
					out[k] = agg{a.N, 2 * a.S}
				}
				return out
			}},
		{"filter after the aggregation", "out", "out-filter",
			"INSERT INTO out SELECT k, n, s FROM (" + counts + group + ") AS t WHERE k <> 'k7'",
			func(m map[string]agg) map[string]agg {
				out := map[string]agg{}
				for k, a := range m {
					if k != "k7" {
						out[k] = a
					}
				}
				return out
			}},
		{"stateless step added", "out", "out-stateless",
			"INSERT INTO out " + counts + " WHERE id > 0" + group, same},
		{"other sink", "totals", "out-sink",
			"INSERT INTO totals " + counts + group, same},
	}
	runs := make([]*runProc, len(compatible))
	for i, c := range compatible {
		job := upgradeJob(t, dir, fmt.Sprintf("compatible-%d.sql", i), jsonSink(c.table, cols, filepath.Join(dir, c.out)), c.insert)
		r := mustCLI(t, dir, "run", "--check", "--from", sp, job)
		if !strings.Contains(r.stdout, "RESTORED") || !strings.Contains(r.stdout, "[id=counts]") || !strings.Contains(r.stdout, "COMPATIBLE:") {
			t.Errorf("%s: run --check does not report the aggregation restored:\n%s", c.name, r.stdout)
		}
		runs[i] = startRun(t, c.name, dir, "run", "-p", "3", "--from", sp, job)
	}

	// Incompatible changes: refused by --check and by the restore, with
	// the report naming the operator.
	incompatible := []struct{ name, ddl, insert, diff string }{
		{"grouping key type changed", jsonSink("outb", "k BIGINT, n BIGINT, s BIGINT", filepath.Join(dir, "out-keytype")),
			"INSERT INTO outb SELECT /*+ UID('counts') */ MOD(id, 1000), COUNT(*), SUM(id) FROM src GROUP BY MOD(id, 1000)",
			"grouping key 1 ($f0) was STRING, now INT"},
		{"aggregate changed", jsonSink("out", cols, filepath.Join(dir, "out-aggregate")),
			fmt.Sprintf("INSERT INTO out SELECT /*+ UID('counts') */ %s, COUNT(*), MAX(id) FROM src%s", upgradeKey, group),
			"accumulator 2 was SUM(BIGINT)"},
	}
	for i, c := range incompatible {
		job := upgradeJob(t, dir, fmt.Sprintf("incompatible-%d.sql", i), c.ddl, c.insert)
		r := cli(t, dir, "run", "--check", "--from", sp, job)
		if r.code != 1 || !strings.Contains(r.stdout, "INCOMPATIBLE") || !strings.Contains(r.stdout, "[id=counts]") ||
			!strings.Contains(r.stdout, c.diff) || !strings.Contains(r.stdout, "REFUSED") {
			t.Errorf("%s: run --check exit %d, want 1 and a report naming the operator and %q:\n%s%s", c.name, r.code, c.diff, r.stdout, r.stderr)
		}
		r = cli(t, dir, "run", "--from", sp, job)
		if r.code != 1 || !strings.Contains(r.stderr, "INCOMPATIBLE") || !strings.Contains(r.stderr, "[id=counts]") || !strings.Contains(r.stderr, c.diff) {
			t.Errorf("%s: restore exit %d, want 1 and the report naming the operator and %q:\n%s", c.name, r.code, c.diff, r.stderr)
		}
		if strings.Contains(r.stderr, "submitted") {
			t.Errorf("%s: a refused job was submitted:\n%s", c.name, r.stderr)
		}
	}

	// --check needs a savepoint to check against.
	if r := cli(t, dir, "run", "--check", removedOutJob(t, dir)); r.code != 1 || !strings.Contains(r.stderr, "give --from PATH") {
		t.Errorf("run --check without --from: exit %d, want 1 asking for --from:\n%s", r.code, r.stderr)
	}

	// A removed aggregation: its state is unclaimed. Refused, then
	// accepted with --allow-non-restored-state; the source's state is
	// still restored, so the job reads only the rows after the savepoint.
	removedOut := filepath.Join(dir, "out-removed")
	removed := removedOutJob(t, dir)
	r := cli(t, dir, "run", "--check", "--from", sp, removed)
	if r.code != 1 || !strings.Contains(r.stdout, "UNCLAIMED") || !strings.Contains(r.stdout, "[id=counts]") {
		t.Errorf("removed aggregation: run --check exit %d, want 1 and UNCLAIMED [id=counts]:\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, dir, "run", "--from", sp, removed)
	if r.code != 1 || !strings.Contains(r.stderr, "unclaimed") || !strings.Contains(r.stderr, "[id=counts]") {
		t.Errorf("removed aggregation: restore exit %d, want 1 and the unclaimed state named:\n%s", r.code, r.stderr)
	}
	if r := mustCLI(t, dir, "run", "--check", "--allow-non-restored-state", "--from", sp, removed); !strings.Contains(r.stdout, "COMPATIBLE:") {
		t.Errorf("removed aggregation with --allow-non-restored-state: run --check says:\n%s", r.stdout)
	}
	rm := startRun(t, "removed aggregation", dir, "run", "-p", "2", "--allow-non-restored-state", "--from", sp, removed)

	// The compatible runs end with SQLite's totals, and each retracted
	// exactly the values the savepoint held: the counts continued.
	for i, c := range compatible {
		p := runs[i]
		if code := p.wait(); code != 0 {
			t.Errorf("%s: exit %d\n%s", c.name, code, p.tail())
			continue
		}
		got, retracted := foldSigned(t, filepath.Join(dir, c.out))
		if d := diffAggs(got, c.view(oracle)); d != "" {
			t.Errorf("%s: final results differ from SQLite's:\n%s", c.name, d)
		}
		if d := diffAggs(retracted, c.view(atSavepoint)); d != "" {
			t.Errorf("%s: did not continue from the savepoint's values:\n%s", c.name, d)
		}
	}
	if code := rm.wait(); code != 0 {
		t.Fatalf("removed aggregation with --allow-non-restored-state: exit %d\n%s", code, rm.tail())
	}
	if n := countedLines(t, removedOut); n != rescaleRows-int(readBefore) {
		t.Errorf("removed aggregation: %d rows written, want the %d rows after the savepoint", n, rescaleRows-int(readBefore))
	}
}
