package sqltests

import (
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/cockroachdb/datadriven"
)

// Ext is the extension of test files found in directories.
const Ext = ".sqltest"

// Options controls RunFiles and RunTest.
type Options struct {
	// Rewrite replaces each case's expected output by the canonical run's
	// output (review the diff!).
	Rewrite bool
	// Variants also runs every file at parallelism 1 and 4 with batch
	// sizes 1, 7 and 1024 and checks that final tables, folded print-sink
	// output and folded sink files equal the canonical run's.
	Variants bool
	// Crash also runs every file in the crash variant (parallelism 2,
	// batch size 7, checkpoints after every source batch): once without a
	// crash, counting each job's checkpoints N, then with every job failed
	// right after checkpoint k (k in [1, N], from an RNG seeded by the file
	// name) and restored from it; the outputs must be equal, and each crash
	// must have happened (see crash.go). `streamsql test --crash`.
	Crash bool
	// InFlightRestored, when set, is added the batches of in-flight data
	// (unaligned checkpoints' channel state) the crash variant's restored
	// jobs replayed.
	InFlightRestored *atomic.Int64
	// Verbose prints every case with its output.
	Verbose bool
	// Out receives PASS/FAIL lines and diffs (RunFiles; default os.Stdout).
	Out io.Writer

	// newAlloc, when set (by tests), gives each session its allocator.
	newAlloc func() memory.Allocator
}

func (o *Options) alloc() memory.Allocator {
	if o.newAlloc == nil {
		return nil
	}
	return o.newAlloc()
}

// ListFiles expands paths: a file is taken as is, a directory contributes
// every *.sqltest file below it (recursively), sorted.
func ListFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(q string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), Ext) && !strings.HasPrefix(d.Name(), ".") {
				found = append(found, q)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	return files, nil
}

// RunFiles runs test files (see ListFiles for directories) without the
// testing package, as `streamsql test` does. It prints "PASS file" or, per
// failing case, "FAIL file:line: directive" and a diff to opts.Out. failed
// counts failing cases (a variant mismatch counts as one); err reports a
// file that cannot be read, parsed or rewritten.
func RunFiles(paths []string, opts Options) (failed int, err error) {
	if opts.Out == nil {
		opts.Out = os.Stdout
	}
	files, err := ListFiles(paths)
	if err != nil {
		return 0, err
	}
	for _, f := range files {
		n, err := runFile(f, opts)
		failed += n
		if err != nil {
			return failed, err
		}
		if n == 0 {
			fmt.Fprintf(opts.Out, "PASS %s\n", f)
		}
	}
	return failed, nil
}

// runAll runs every case of file in variant v in a fresh session and temp dir.
func runAll(path string, file *ddFile, v variant, opts *Options, each func(i int, c *ddCase, res result)) error {
	tmp, err := os.MkdirTemp("", "sqltest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	r, err := newFileRunner(path, tmp, v, opts.alloc())
	if err != nil {
		return err
	}
	defer r.close()
	for i := range file.Cases {
		c := &file.Cases[i]
		each(i, c, r.run(c))
	}
	return nil
}

func runFile(path string, opts Options) (failed int, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	file, err := parseDD(path, string(data))
	if err != nil {
		return 0, err
	}
	outs := make([]string, len(file.Cases))
	cmps := make([]string, len(file.Cases))
	err = runAll(path, file, canonical, &opts, func(i int, c *ddCase, res result) {
		outs[i], cmps[i] = normOutput(res.out), res.cmp
		if opts.Verbose {
			fmt.Fprintf(opts.Out, "%s:%d: %s\n%s\n----\n%s\n", path, c.Line, c.fullCmd(), c.Input, outs[i])
		}
		if !opts.Rewrite && outs[i] != c.Expected {
			failed++
			fmt.Fprintf(opts.Out, "FAIL %s:%d: %s\n%s", path, c.Line, c.fullCmd(), lineDiff(c.Expected, outs[i]))
		}
	})
	if err != nil {
		return failed, err
	}
	if opts.Rewrite {
		if text := file.render(outs); text != string(data) {
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				return failed, err
			}
		}
	}
	if opts.Crash {
		err := runCrash(path, file, cmps, &opts, func(c *ddCase, msg string) {
			failed++
			fmt.Fprintf(opts.Out, "FAIL %s:%d: %s (crash variant)\n%s\n", path, c.Line, c.fullCmd(), msg)
		})
		if err != nil {
			return failed, err
		}
	}
	if !opts.Variants {
		return failed, nil
	}
	for _, v := range variants {
		err := runAll(path, file, v, &opts, func(i int, c *ddCase, res result) {
			if res.cmp != cmps[i] {
				failed++
				fmt.Fprintf(opts.Out, "FAIL %s:%d: %s (variant %s differs from %s)\n%s",
					path, c.Line, c.fullCmd(), v, canonical, lineDiff(cmps[i], res.cmp))
			}
		})
		if err != nil {
			return failed, err
		}
	}
	return failed, nil
}

// RunTest runs the test file (or every *.sqltest file under the directory)
// at path as subtests, through datadriven.RunTest, so `go test -rewrite`
// regenerates expected outputs. With opts.Variants every file also runs in
// each variant as a subtest.
func RunTest(t *testing.T, path string, opts Options) {
	t.Helper()
	if opts.Rewrite {
		if err := flag.Set("rewrite", "true"); err != nil {
			t.Fatal(err)
		}
	}
	files, err := ListFiles([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		if rel, err := filepath.Rel(path, f); err == nil && rel != "." {
			name = rel
		}
		t.Run(strings.TrimSuffix(filepath.ToSlash(name), Ext), func(t *testing.T) {
			runTestFile(t, f, &opts)
		})
	}
}

func runTestFile(t *testing.T, path string, opts *Options) {
	r, err := newFileRunner(path, t.TempDir(), canonical, opts.alloc())
	if err != nil {
		t.Fatal(err)
	}
	var cmps []string
	func() {
		defer r.close()
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			c := ddCase{Cmd: td.Cmd, Args: td.CmdArgs, Input: td.Input}
			res := r.run(&c)
			cmps = append(cmps, res.cmp)
			return res.out
		})
	}()
	if (!opts.Variants && !opts.Crash) || t.Failed() {
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	file, err := parseDD(path, string(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) != len(cmps) {
		t.Fatalf("%s: read %d cases, datadriven ran %d", path, len(file.Cases), len(cmps))
	}
	if opts.Crash {
		t.Run("crash", func(t *testing.T) {
			err := runCrash(path, file, cmps, opts, func(c *ddCase, msg string) {
				t.Errorf("%s:%d: %s\n%s\n%s", path, c.Line, c.fullCmd(), c.Input, msg)
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	if !opts.Variants {
		return
	}
	for _, v := range variants {
		t.Run(fmt.Sprintf("p=%d,batch=%d", v.Parallelism, v.BatchSize), func(t *testing.T) {
			err := runAll(path, file, v, opts, func(i int, c *ddCase, res result) {
				if res.cmp != cmps[i] {
					t.Errorf("%s:%d: %s\n%s\nvariant %s differs from %s:\n%s",
						path, c.Line, c.fullCmd(), c.Input, v, canonical, lineDiff(cmps[i], res.cmp))
				}
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// runCrash runs file in the crash variant (see crash.go): pass 1 without a
// crash, compared with the canonical outputs canon where comparable; pass 2
// with the crashes planned from pass 1, compared with pass 1. fail reports
// a failing case.
func runCrash(path string, file *ddFile, canon []string, opts *Options, fail func(c *ddCase, msg string)) error {
	c1, err := newCrashState(1, nil)
	if err != nil {
		return err
	}
	defer c1.cleanup()
	pass1 := make([]string, len(file.Cases))
	err = runCrashPass(path, file, c1, opts, func(i int, c *ddCase, res result) {
		pass1[i] = res.cmp
		for _, p := range res.problems {
			fail(c, "pass 1 (checkpoints, no crash): "+p)
		}
		if !res.nocanon && res.cmp != canon[i] {
			fail(c, fmt.Sprintf("pass 1 (checkpoints, no crash, %s) differs from %s:\n%s", crashVariant, canonical, lineDiff(canon[i], res.cmp)))
		}
	})
	if err != nil || len(c1.cfgs) == 0 {
		return err
	}
	seed := crashSeed(path)
	// Pass 2 crashes with aligned checkpoints, pass 3 (its own crash
	// points) with unaligned ones: the restored channel state must give
	// the same output.
	if err := runCrashAgainst(path, file, pass1, c1, 2, seed, opts, fail); err != nil {
		return err
	}
	return runCrashAgainst(path, file, pass1, c1, 3, seed+1, opts, fail)
}

// runCrashAgainst runs crash pass 2 (aligned checkpoints) or 3 (unaligned)
// with crash points drawn from seed and compares it with pass 1.
func runCrashAgainst(path string, file *ddFile, pass1 []string, c1 *crashState, pass int, seed int64, opts *Options, fail func(c *ddCase, msg string)) error {
	unaligned, mode := pass == 3, "aligned"
	if unaligned {
		mode = "unaligned"
	}
	plan := planCrashes(c1.jobs, len(c1.cfgs), rand.New(rand.NewSource(seed)))
	var points []string
	for i, k := range plan {
		if k > 0 {
			points = append(points, fmt.Sprintf("%s after checkpoint %d of %d", c1.jobs[i].name, k, c1.jobs[i].last))
		}
	}
	desc := fmt.Sprintf("%s checkpoints, seed %d, crashes: %s", mode, seed, strings.Join(points, "; "))
	if opts.Verbose && opts.Out != nil {
		fmt.Fprintf(opts.Out, "%s: crash variant: %s\n", path, desc)
	}
	c2, err := newCrashState(pass, plan)
	if err != nil {
		return err
	}
	defer c2.cleanup()
	c2.unaligned = unaligned
	err = runCrashPass(path, file, c2, opts, func(i int, c *ddCase, res result) {
		for _, p := range res.problems {
			fail(c, fmt.Sprintf("pass %d (crash, %s checkpoints): %s", pass, mode, p))
		}
		want, got := pass1[i], res.cmp
		if _, ok := c.arg("error"); ok {
			// a failing query's rows before its error depend on timing: a
			// run with crashes may commit rows the run without never
			// shows before the error ends it; the error must be the same
			want, got = errorLines(want), errorLines(got)
		}
		if got != want {
			fail(c, fmt.Sprintf("the run with crashes (%s) differs from the run without:\n%s", desc, lineDiff(want, got)))
		}
	})
	if unaligned && opts.InFlightRestored != nil {
		opts.InFlightRestored.Add(c2.inFlight)
	}
	return err
}

// errorLines are the lines of a case's output that report an error.
func errorLines(out string) string {
	var errs []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "error: ") {
			errs = append(errs, l)
		}
	}
	return strings.Join(errs, "\n")
}

// runCrashPass runs every case of file in a fresh crash-variant session.
func runCrashPass(path string, file *ddFile, cs *crashState, opts *Options, each func(i int, c *ddCase, res result)) error {
	tmp, err := os.MkdirTemp("", "sqltest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	r, err := newRunner(path, tmp, crashVariant, opts.alloc(), cs)
	if err != nil {
		return err
	}
	defer r.close()
	for i := range file.Cases {
		c := &file.Cases[i]
		each(i, c, r.run(c))
	}
	for _, j := range r.sess.Jobs() {
		cs.inFlight += j.InFlightRestored
	}
	return nil
}
