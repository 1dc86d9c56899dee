package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// binary is the streamsql binary built once by TestMain; the end-to-end
// tests run it as a subprocess.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "streamsql-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "streamsql")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building streamsql: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what a run of the binary produced.
type result struct {
	code           int
	stdout, stderr string
}

// run runs the binary with args and stdin in dir, with a private HOME.
func run(t *testing.T, dir, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_STATE_HOME=")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %v: %v", args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// seqSource is a bounded datagen table of the ids 1..3.
const seqSource = `CREATE TABLE src (id BIGINT) WITH (
  'connector' = 'datagen', 'number-of-rows' = '3',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '3'
);
`

const printJob = seqSource + `CREATE TABLE out (id BIGINT, twice BIGINT) WITH ('connector' = 'print');
INSERT INTO out SELECT id, id * 2 FROM src;
`

func TestRun(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"job.sql": printJob,
		"syntax.sql": "-- line 1\nCREATE TABLE t (a INT) WITH ('connector' = 'blackhole');\n" +
			"SELECT a FROM t WHERE;\n",
		"unknown.sql": "\n\nINSERT INTO nowhere SELECT 1;\n",
		"select.sql":  seqSource + "SELECT id FROM src;\n",
		"init.sql":    seqSource,
		"uses_init.sql": `CREATE TABLE out (id BIGINT) WITH ('connector' = 'print');
INSERT INTO out SELECT id FROM src;`,
		"badopt.sql": "CREATE TABLE t (a INT) WITH ('connector' = 'datagen', 'rows-per-second' = 'fast');\n",
		"flinkopts.sql": "SET 'table.exec.mini-batch.enabled' = 'true';\nSET 'table.exec.mini-batch.enabled' = 'true';\n" +
			"SET 'table.exec.sink.not-null-enforcer' = 'DROP';\n" + printJob,
		"data.csv": "1\nabc\n3\n",
		"fail.sql": `CREATE TABLE src (id INT) WITH ('connector' = 'filesystem', 'path' = 'data.csv', 'format' = 'csv');
CREATE TABLE out (id INT) WITH ('connector' = 'print');
INSERT INTO out SELECT id FROM src;
`,
		"skip.sql": `CREATE TABLE src (id INT) WITH ('connector' = 'filesystem', 'path' = 'data.csv', 'format' = 'csv',
  'csv.ignore-parse-errors' = 'true');
CREATE TABLE out (id INT) WITH ('connector' = 'print');
INSERT INTO out SELECT id FROM src;
`,
	})
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     []string // lines that must appear, in this order
		stderr     []string // substrings of stderr
		stderrHead string   // stderr prefix
		stderrOnce []string // substrings that stderr holds exactly once
	}{
		{
			name:   "print job",
			args:   []string{"run", "-p", "1", "job.sql"},
			stdout: []string{"+I[1, 2]", "+I[2, 4]", "+I[3, 6]"},
			stderr: []string{"(insert-into_out) submitted", "(insert-into_out) FINISHED: 3 records in, 3 out"},
		},
		{
			name:   "Flink options without effect warn once and run",
			args:   []string{"run", "-p", "1", "flinkopts.sql"},
			stdout: []string{"+I[1, 2]", "+I[2, 4]", "+I[3, 6]"},
			stderr: []string{"[WARNING] streamsql accepts Flink's option 'table.exec.mini-batch.enabled' but does not act on it",
				"[WARNING] streamsql accepts Flink's option 'table.exec.sink.not-null-enforcer'", "(insert-into_out) FINISHED"},
			stderrOnce: []string{"option 'table.exec.mini-batch.enabled'"},
		},
		{
			name:   "-f is run",
			args:   []string{"-p", "1", "-f", "job.sql"},
			stdout: []string{"+I[1, 2]", "+I[2, 4]", "+I[3, 6]"},
		},
		{
			name:       "syntax error on line 3",
			args:       []string{"run", "syntax.sql"},
			code:       1,
			stderrHead: "syntax.sql:3:",
		},
		{
			name:       "unknown table",
			args:       []string{"run", "unknown.sql"},
			code:       1,
			stderrHead: "unknown.sql:3:",
			stderr:     []string{"nowhere"},
		},
		{
			name:       "bad connector option",
			args:       []string{"run", "badopt.sql"},
			code:       1,
			stderrHead: "badopt.sql:1:",
			stderr:     []string{"rows-per-second"},
		},
		{
			name: "select prints a tableau",
			args: []string{"run", "-p", "1", "select.sql"},
			stdout: []string{
				"+----+------------+",
				"| op |         id |",
				"+----+------------+",
				"| +I |          1 |",
				"| +I |          2 |",
				"| +I |          3 |",
				"+----+------------+",
				"Received a total of 3 rows",
			},
		},
		{
			name:   "init file then job",
			args:   []string{"run", "-p", "1", "-i", "init.sql", "uses_init.sql"},
			stdout: []string{"+I[1]", "+I[2]", "+I[3]"},
		},
		{
			name:       "error in the init file",
			args:       []string{"run", "-i", "syntax.sql", "job.sql"},
			code:       1,
			stderrHead: "syntax.sql:3:",
		},
		{
			name:   "job failure",
			args:   []string{"run", "-p", "1", "fail.sql"},
			code:   1,
			stderr: []string{"FAILED: ", "fail.sql: job ", " failed: ", "abc"},
		},
		{
			name:   "bad records skipped",
			args:   []string{"run", "-p", "1", "skip.sql"},
			stdout: []string{"+I[1]", "+I[3]"},
			stderr: []string{"FINISHED: 2 records in, 2 out, 1 bad record skipped"},
		},
		{
			name:   "missing file",
			args:   []string{"run", "nope.sql"},
			code:   1,
			stderr: []string{"nope.sql"},
		},
		{
			name:   "bad --set",
			args:   []string{"run", "--set", "parallelism.defualt=2", "job.sql"},
			code:   2,
			stderr: []string{"unknown option 'parallelism.defualt'", "did you mean 'parallelism.default'"},
		},
		{
			name:   "no file",
			args:   []string{"run"},
			code:   2,
			stderr: []string{"accepts 1 arg"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, dir, "", tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			assertLinesInOrder(t, r.stdout, tc.stdout)
			for _, s := range tc.stderr {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
				}
			}
			for _, s := range tc.stderrOnce {
				if n := strings.Count(r.stderr, s); n != 1 {
					t.Errorf("stderr holds %q %d times, want once:\n%s", s, n, r.stderr)
				}
			}
			if !strings.HasPrefix(r.stderr, tc.stderrHead) {
				t.Errorf("stderr does not start with %q:\n%s", tc.stderrHead, r.stderr)
			}
		})
	}
}

// assertLinesInOrder checks that want are lines of out, in this order.
func assertLinesInOrder(t *testing.T, out string, want []string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	i := 0
	for _, l := range lines {
		if i < len(want) && l == want[i] {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("output lacks line %q (after %q):\n%s", want[i], want[:i], out)
	}
}

func TestRunSignals(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"forever.sql": `CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '20');
CREATE TABLE out (id BIGINT) WITH ('connector' = 'print');
INSERT INTO out SELECT id FROM src;
`,
		"select.sql": `CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '20');
SELECT id FROM src;
`,
	})
	tests := []struct {
		name   string
		file   string
		sig    syscall.Signal
		code   int
		stdout string // must appear after the signal
		stderr string
	}{
		{"SIGINT cancels jobs", "forever.sql", syscall.SIGINT, 130, "", "CANCELED"},
		{"SIGTERM cancels jobs", "forever.sql", syscall.SIGTERM, 143, "", "CANCELED"},
		{"SIGINT ends a query", "select.sql", syscall.SIGINT, 130, "Query terminated, received a total of", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(binary, "run", "-p", "1", tc.file)
			cmd.Dir = dir
			var errOut bytes.Buffer
			cmd.Stderr = &errOut
			pipe, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait for the first output line: the job is running.
			rd := bufio.NewReader(pipe)
			if _, err := rd.ReadString('\n'); err != nil {
				t.Fatalf("no output: %v; stderr:\n%s", err, errOut.String())
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(rd)
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
				t.Fatalf("exit: %v, want status %d; stderr:\n%s", err, tc.code, errOut.String())
			}
			if !strings.Contains(string(rest), tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, rest)
			}
			if !strings.Contains(errOut.String(), tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, errOut.String())
			}
		})
	}
}

func TestHelp(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name  string
		args  []string
		want  []string
		lacks []string // claims the docs contradict
	}{
		{"root", []string{"--help"}, []string{"run", "checkpoints", "test", "version", "help", "Examples:", "--init", "--file", "--from", "joins (regular, interval, window, lookup)"}, []string{"Joins, ORDER"}},
		{"stop --help", []string{"stop", "--help"}, []string{"--drain", "every pending event-time\nwindow fires", "for ending a job\nfor good"}, []string{"do not drain"}},
		{"help run", []string{"help", "run"}, []string{"streamsql run", "Examples:", "FILE:line:col", "130"}, nil},
		{"run --help", []string{"run", "--help"}, []string{"streamsql run", "--parallelism", "--init", "--from", "chk-<n>", "RETAIN_ON_CANCELLATION", "run --from /"}, nil},
		{"checkpoints --help", []string{"checkpoints", "--help"}, []string{"streamsql checkpoints DIR", "INCOMPLETE", "incremental", "Examples:"}, nil},
		{"test --help", []string{"test", "--help"}, []string{"--rewrite", "--verbose", "--no-variants", "Examples:"}, nil},
		{"help version", []string{"help", "version"}, []string{"streamsql version"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, dir, "", tc.args...)
			if r.code != 0 {
				t.Fatalf("exit status %d; stderr:\n%s", r.code, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("help lacks %q:\n%s", w, r.stdout)
				}
			}
			for _, w := range tc.lacks {
				if strings.Contains(r.stdout, w) {
					t.Errorf("help says %q:\n%s", w, r.stdout)
				}
			}
		})
	}
}

func TestVersionAndUsage(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"version"}, 0, "streamsql ", ""},
		{[]string{"--version"}, 0, "streamsql ", ""},
		{[]string{"bogus.sql"}, 2, "", "streamsql run bogus.sql"},
		{[]string{"--bogus"}, 2, "", "unknown flag: --bogus"},
		{[]string{"test"}, 2, "", "requires at least 1 arg"},
		{[]string{"test", "missing.sqltest"}, 1, "", "missing.sqltest"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := run(t, dir, "", tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit status %d, want %d; stderr:\n%s", r.code, tc.code, r.stderr)
			}
			if !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("stdout %q (want %q), stderr %q (want %q)", r.stdout, tc.stdout, r.stderr, tc.stderr)
			}
		})
	}
}

func TestShellPiped(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"init.sql": seqSource,
		"bad.sql":  "SHOW TABLES;\nCREATE TABLE;\n",
	})
	tests := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout []string
		stderr []string
	}{
		{
			name:  "show tables",
			stdin: "SHOW TABLES;\n",
			stdout: []string{
				"Empty set",
			},
		},
		{
			name: "ddl, multi-line statements, comments, last statement without ';'",
			stdin: "-- a comment line\n" + seqSource + "SHOW\n  TABLES;\n\n" +
				"CREATE TABLE out (id BIGINT) WITH ('connector' = 'blackhole'); SHOW TABLES;\nDESCRIBE src",
			stdout: []string{
				"[INFO] Execute statement succeeded.",
				"+------------+",
				"| table name |",
				"+------------+",
				"|        src |",
				"+------------+",
				"1 row in set",
				"[INFO] Execute statement succeeded.",
				"|        out |",
				"|        src |",
				"2 rows in set",
				"| name |   type | null | key | extras | watermark |",
				"|   id | BIGINT | TRUE |     |        |           |",
			},
		},
		{
			name:  "errors are reported and the shell goes on",
			stdin: "SELECT * FROM nowhere;\nSHOW TABLES;\n",
			code:  1,
			stdout: []string{
				"Empty set",
			},
			stderr: []string{"[ERROR] Could not execute SQL statement. Reason:", "1:15: ", "nowhere"},
		},
		{
			// Piped input is a script: a position is a line of the whole
			// input, not of the statement (the second reported 1:1).
			name:   "positions are lines of the whole input",
			stdin:  "SHOW TABLES;\n\n-- comment\nSELECT 1; SELECT x\n  FROM nowhere;\n",
			code:   1,
			stdout: []string{"Empty set", "Received a total of 1 row"},
			stderr: []string{"5:8: table or view 'nowhere' not found"},
		},
		{
			name:   "select streams until the end of input",
			args:   []string{"-p", "1"},
			stdin:  seqSource + "SELECT id\nFROM src;\n",
			stdout: []string{"| op |         id |", "| +I |          1 |", "| +I |          3 |", "Received a total of 3 rows"},
		},
		{
			name:   "jobs finish before a piped shell exits",
			args:   []string{"-p", "1"},
			stdin:  printJob,
			stdout: []string{"+I[1, 2]", "+I[2, 4]", "+I[3, 6]"},
			stderr: []string{"FINISHED: 3 records in, 3 out"},
		},
		{
			name:   "quit stops reading",
			stdin:  "SHOW TABLES;\nquit\nSHOW JOBS;\n",
			stdout: []string{"Empty set"},
		},
		{
			name:   "init file",
			args:   []string{"-i", "init.sql"},
			stdin:  "SHOW TABLES;\n",
			stdout: []string{"|        src |", "1 row in set"},
		},
		{
			name:   "error in the init file aborts",
			args:   []string{"-i", "bad.sql"},
			stdin:  "SHOW TABLES;\n",
			code:   1,
			stderr: []string{"bad.sql:2:"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, dir, tc.stdin, tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			assertLinesInOrder(t, r.stdout, tc.stdout)
			for _, s := range tc.stderr {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
				}
			}
			if strings.Contains(r.stdout, mainPrompt) {
				t.Errorf("a piped shell printed a prompt:\n%s", r.stdout)
			}
		})
	}
}

// TestRunProfiles: run --cpuprofile and --memprofile write pprof files
// (gzipped protocol buffers) for a job, and a profile path that cannot be
// created is a usage error naming the flag, before anything runs.
func TestRunProfiles(t *testing.T) {
	dir := writeFiles(t, map[string]string{"job.sql": `CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '2000000', 'rows-per-second' = '100000000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '2000000');
CREATE TABLE out (id BIGINT, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out SELECT MOD(id, 1000), COUNT(*) FROM src GROUP BY MOD(id, 1000);
`})
	r := run(t, dir, "", "run", "--cpuprofile", "cpu.prof", "--memprofile", "mem.prof", "job.sql")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, f := range []string{"cpu.prof", "mem.prof"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if len(data) < 100 || data[0] != 0x1f || data[1] != 0x8b {
			t.Fatalf("%s is not a pprof profile (%d bytes)", f, len(data))
		}
	}
	r = run(t, dir, "", "run", "--memprofile", filepath.Join(dir, "missing", "mem.prof"), "job.sql")
	if r.code != 2 || !strings.Contains(r.stderr, "--memprofile") || strings.Contains(r.stderr, "submitted") {
		t.Fatalf("exit %d, stderr %q; want a usage error naming --memprofile before any job", r.code, r.stderr)
	}
	// an execution trace (go tool trace's header) of a short job
	small := writeFiles(t, map[string]string{"small.sql": `CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '1000',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '1000');
CREATE TABLE out (id BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out SELECT id FROM src;
`})
	r = run(t, small, "", "run", "--trace", "run.trace", "small.sql")
	if r.code != 0 {
		t.Fatalf("--trace: exit %d: %s", r.code, r.stderr)
	}
	if data, err := os.ReadFile(filepath.Join(small, "run.trace")); err != nil || len(data) < 100 || !bytes.HasPrefix(data, []byte("go 1.")) {
		t.Fatalf("run.trace is not an execution trace (%d bytes, %v)", len(data), err)
	}
	r = run(t, small, "", "run", "--trace", filepath.Join(small, "missing", "t.trace"), "small.sql")
	if r.code != 2 || !strings.Contains(r.stderr, "--trace") || strings.Contains(r.stderr, "submitted") {
		t.Fatalf("exit %d, stderr %q; want a usage error naming --trace before any job", r.code, r.stderr)
	}
}
