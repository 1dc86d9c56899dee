package session

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/streamsql/streamsql/checkpoint"
	"github.com/streamsql/streamsql/exec"
)

// The job-level golden savepoint: the word count of testdata/wordcount
// stopped with a savepoint at a fixed point (lockstep checkpoints: a barrier
// after every source batch; the stop is requested when checkpoint 2
// completes and taken in place of the next barrier). It is checked in under
// testdata/savepoint-wordcount-v1 with the changelog printed before it.
// Every test run (1) restores it and finishes the count, which must fold,
// with the changelog before the savepoint, into the counts of the input
// (computed here independently), and (2) takes the savepoint again and
// compares its state files byte for byte with the checked-in ones.
//
// A change of a state encoding fails (2): then bump the version (a new
// directory) and regenerate with -update-golden, keeping the old directory
// if the old format must still restore.

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/savepoint-wordcount-v1")

const goldenWC = "testdata/savepoint-wordcount-v1"

func wordCountScript(ckDir, restore string) string {
	s := `
SET 'parallelism.default' = '2';
SET 'execution.batch-size' = '3';
SET 'execution.checkpointing.interval' = '1 h';
SET 'state.checkpoints.dir' = '` + ckDir + `';
SET 'restart-strategy.type' = 'none';
`
	if restore != "" {
		s += "SET 'execution.savepoint.path' = '" + restore + "';\n"
	}
	return s + `
CREATE TABLE lines (line STRING) WITH ('connector' = 'filesystem', 'path' = 'testdata/wordcount/lines.txt',
  'format' = 'csv', 'csv.field-delimiter' = '|');
CREATE TABLE counts (word STRING, cnt BIGINT) WITH ('connector' = 'print');
INSERT INTO counts
SELECT /*+ UID('word-count') */ LOWER(word) AS word, COUNT(*) AS cnt FROM lines, LATERAL TABLE(SPLIT(line, ' ')) AS T(word) GROUP BY LOWER(word);`
}

// takeGoldenSavepoint runs the word count until its stop-with-savepoint and
// returns the savepoint's directory and the changelog printed before it.
func takeGoldenSavepoint(t *testing.T, spRoot string) (string, string) {
	s, out, mem := newTestSession(t)
	defer mem.AssertSize(t, 0)
	defer s.Close()
	done := make(chan exec.SavepointResult, 1)
	s.CheckpointTestHook = func(c *exec.CheckpointConfig) {
		c.TriggerEveryBatch = true
		req := make(chan *exec.SavepointRequest, 1)
		c.Requests = req
		onComplete := c.OnComplete
		c.OnComplete = func(info checkpoint.Info) {
			onComplete(info)
			if info.ID == 2 {
				req <- &exec.SavepointRequest{Dir: spRoot, Stop: true, Done: done}
			}
		}
	}
	execAll(t, s, wordCountScript(t.TempDir(), ""))
	if err := s.WaitJobs(context.Background()); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if st := s.Jobs()[0].Status; st != "FINISHED" {
		t.Fatalf("job %s after its stop-with-savepoint", st)
	}
	return res.Info.Path, out.String()
}

// stateFiles reads every file of a savepoint but its _metadata (which
// holds times and the job id), by relative path.
func stateFiles(t *testing.T, dir string) map[string]string {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "_metadata" {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func goldenSavepointDir(t *testing.T) string {
	dirs, _ := filepath.Glob(filepath.Join(goldenWC, "savepoint-*"))
	if len(dirs) != 1 {
		t.Fatalf("want one savepoint in %s, found %v (regenerate with -update-golden)", goldenWC, dirs)
	}
	return dirs[0]
}

func TestGoldenWordCountSavepointBytesAreStable(t *testing.T) {
	if *updateGolden {
		if err := os.RemoveAll(goldenWC); err != nil {
			t.Fatal(err)
		}
		sp, before := takeGoldenSavepoint(t, goldenWC)
		if err := os.WriteFile(filepath.Join(goldenWC, "before.txt"), []byte(before), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", sp)
		return
	}
	golden := stateFiles(t, goldenSavepointDir(t))
	for run := 0; run < 2; run++ {
		sp, _ := takeGoldenSavepoint(t, t.TempDir())
		got := stateFiles(t, sp)
		if len(got) == 0 || len(got) != len(golden) {
			t.Fatalf("run %d: state files %v, golden %v", run, keys(got), keys(golden))
		}
		for name, b := range golden {
			if got[name] != b {
				t.Fatalf("run %d: %s differs from the golden savepoint's (%d vs %d bytes): a state encoding changed; see this test's comment", run, name, len(got[name]), len(b))
			}
		}
	}
}

func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

var printedRow = regexp.MustCompile(`^(?:\d+> )?([+-][IUD])\[(.*), (\d+)\]$`)

// foldPrinted folds print-sink lines into word -> count, failing on a
// retraction of a row that is not there.
func foldPrinted(t *testing.T, fold map[string]int, text string) {
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if l == "" {
			continue
		}
		m := printedRow.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("unexpected print line %q", l)
		}
		row := m[2] + "=" + m[3]
		if m[1] == "+I" || m[1] == "+U" {
			fold[row]++
		} else if fold[row]--; fold[row] < 0 {
			t.Fatalf("retraction of a row not printed before: %q", l)
		}
	}
}

func TestGoldenWordCountSavepointRestores(t *testing.T) {
	sp := goldenSavepointDir(t)
	before, err := os.ReadFile(filepath.Join(goldenWC, "before.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s, out, mem := newTestSession(t)
	defer mem.AssertSize(t, 0)
	defer s.Close()
	execAll(t, s, wordCountScript(t.TempDir(), sp))
	if err := s.WaitJobs(context.Background()); err != nil {
		t.Fatal(err)
	}
	if info := s.Jobs()[0]; info.Status != "FINISHED" {
		t.Fatalf("restored job %s: %v", info.Status, info.Failures)
	}
	fold := map[string]int{}
	foldPrinted(t, fold, string(before))
	foldPrinted(t, fold, out.String())
	// The oracle: the words of the input, counted here.
	data, err := os.ReadFile("testdata/wordcount/lines.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, w := range strings.Fields(string(data)) {
		want[strings.ToLower(w)]++
	}
	var got, exp []string
	for row, n := range fold {
		if n > 0 {
			got = append(got, fmt.Sprintf("%s x%d", row, n))
		}
	}
	for w, c := range want {
		exp = append(exp, fmt.Sprintf("%s=%d x1", w, c))
	}
	sort.Strings(got)
	sort.Strings(exp)
	if strings.Join(got, "\n") != strings.Join(exp, "\n") {
		t.Fatalf("folded output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(exp, "\n"))
	}
	if strings.TrimSpace(out.String()) == "" || strings.Count(string(before), "\n") < 5 {
		t.Fatal("the savepoint's cut is not in the middle of the input")
	}
}
