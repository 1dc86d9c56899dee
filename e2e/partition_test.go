package e2e

import (
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/bench/nexmark"
)

// TestKillPartitionedSink kills (SIGKILL) a job writing a partitioned
// filesystem table, Nexmark q10 over the benchmark's DDL (bids partitioned by day and
// minute, committed by partition time with a success file), five times at
// seeded random moments and resumes it each time from its latest
// checkpoint. Its committed output must be exactly the rows of an
// uninterrupted export of the same bids, each in the directory of its day
// and minute, and every partition must have its success file.
func TestKillPartitionedSink(t *testing.T) {
	if testing.Short() {
		t.Skip("kill tests build the binary and process millions of rows")
	}
	bin := streamsqlBin(t)
	dir := t.TempDir()
	root, out := filepath.Join(dir, "checkpoints"), filepath.Join(dir, "out")
	q := func(s string) string { return strings.ReplaceAll(s, "'", "''") }
	// enough events that five runs, each killed after one or two
	// checkpoints (100 ms apart), do not reach the end of the input (16 M
	// were all read by four runs once the engine passed ~5 M events/s)
	const events = 48_000_000
	ddl, err := nexmark.DDL(map[string]string{"TPS": "8000", "EVENTS_NUM": fmt.Sprint(events)})
	if err != nil {
		t.Fatal(err)
	}
	source := ddl + "\n"
	job := fmt.Sprintf(`SET 'execution.checkpointing.interval' = '100 ms';
SET 'state.checkpoints.dir' = '%s';
SET 'pipeline.auto-watermark-interval' = '0 ms';
%s
CREATE TABLE out (auction BIGINT, bidder BIGINT, price BIGINT, ts TIMESTAMP(3), dt STRING, hm STRING) PARTITIONED BY (dt, hm) WITH (
  'connector' = 'filesystem', 'path' = '%s', 'format' = 'csv',
  'sink.partition-commit.trigger' = 'partition-time', 'sink.partition-commit.delay' = '1 min',
  'sink.partition-commit.policy.kind' = 'success-file',
  'partition.time-extractor.timestamp-pattern' = '$dt $hm:00');
INSERT INTO out SELECT auction, bidder, price, `+"`dateTime`"+`, DATE_FORMAT(`+"`dateTime`"+`, 'yyyy-MM-dd'), DATE_FORMAT(`+"`dateTime`"+`, 'HH:mm') FROM bid WHERE MOD(auction, 10) = 0 AND MOD(bidder, 5) = 0;
`, q(root), source, q(out))
	jobPath := filepath.Join(dir, "job.sql")
	if err := os.WriteFile(jobPath, []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	// The oracle: the same rows exported in one uninterrupted run, with
	// their day and minute computed here from the timestamp text.
	exportDir := filepath.Join(dir, "export")
	export := source + fmt.Sprintf(`CREATE TABLE out (auction BIGINT, bidder BIGINT, price BIGINT, ts TIMESTAMP(3)) WITH (
  'connector' = 'filesystem', 'path' = '%s', 'format' = 'csv');
INSERT INTO out SELECT auction, bidder, price, `+"`dateTime`"+` FROM bid WHERE MOD(auction, 10) = 0 AND MOD(bidder, 5) = 0;
`, q(exportDir))
	exportPath := filepath.Join(dir, "export.sql")
	if err := os.WriteFile(exportPath, []byte(export), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", exportPath)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("export: %v\n%s", err, b)
	}
	var want []string
	files, _ := filepath.Glob(filepath.Join(exportDir, "part-*"))
	for _, f := range files {
		for _, rec := range readCSVFile(t, f) {
			ts := rec[3]
			want = append(want, strings.Join(append(rec, ts[:10], ts[11:16]), ","))
		}
	}
	sort.Strings(want)
	if len(want) < 20000 {
		t.Fatalf("the export has %d rows: too few to check", len(want))
	}

	kills, final, _ := runKilled(t, bin, dir, jobPath, root, 11)
	if kills < wantKills {
		t.Fatalf("%d kills, want at least %d", kills, wantKills)
	}
	if final.in <= 0 || final.in >= events {
		t.Errorf("the last run read %d records: a run restored from a checkpoint reads fewer than all", final.in)
	}
	var got []string
	parts := 0
	dts, _ := filepath.Glob(filepath.Join(out, "dt=*"))
	for _, dtDir := range dts {
		hms, _ := filepath.Glob(filepath.Join(dtDir, "hm=*"))
		for _, pdir := range hms {
			parts++
			dt := strings.TrimPrefix(filepath.Base(dtDir), "dt=")
			hm := strings.ReplaceAll(strings.TrimPrefix(filepath.Base(pdir), "hm="), "%3A", ":")
			if _, err := os.Stat(filepath.Join(pdir, "_SUCCESS")); err != nil {
				t.Errorf("partition %s has no success file: %v", pdir, err)
			}
			if hidden, _ := filepath.Glob(filepath.Join(pdir, ".part-*")); len(hidden) > 0 {
				t.Errorf("partition %s keeps uncommitted files %v", pdir, hidden)
			}
			files, _ := filepath.Glob(filepath.Join(pdir, "part-*"))
			for _, f := range files {
				for _, rec := range readCSVFile(t, f) {
					got = append(got, strings.Join(append(rec, dt, hm), ","))
				}
			}
		}
	}
	sort.Strings(got)
	t.Logf("%d kills; %d partitions, %d rows; last run read %d records", kills, parts, len(got), final.in)
	if parts < 3 {
		t.Errorf("%d partitions: the input spans too few minutes to check", parts)
	}
	for i := 0; i < len(got) || i < len(want); i++ {
		switch {
		case i >= len(got):
			t.Fatalf("%d rows, want %d: missing %s", len(got), len(want), want[i])
		case i >= len(want):
			t.Fatalf("%d rows, want %d: extra %s", len(got), len(want), got[i])
		case got[i] != want[i]:
			t.Fatalf("row %d: got %s, want %s", i, got[i], want[i])
		}
	}
}

func readCSVFile(t *testing.T, file string) [][]string {
	t.Helper()
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	recs, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
