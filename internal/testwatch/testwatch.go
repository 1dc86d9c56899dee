// Package testwatch makes a hung test diagnosable from the end of the
// output. When `go test` times out it prints the running tests first and
// then every goroutine's stack, so a CI log that keeps only its tail loses
// the names. Main arms a watchdog shortly before -test.timeout: it prints,
// last, the goroutines that run test code (their frames in this module
// only), then exits with status 2.
package testwatch

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Main runs the tests of m under the watchdog: call it from TestMain.
// Each of checks runs after tests that passed; one that fails fails the
// package (a package-wide invariant the tests exercise in passing).
func Main(m *testing.M, checks ...func() error) {
	flag.Parse()
	if d := timeout(); d > 0 {
		margin := min(d/10, 30*time.Second)
		t := time.AfterFunc(d-margin, func() {
			fmt.Fprint(os.Stderr, Report(d-margin))
			os.Exit(2)
		})
		defer t.Stop()
	}
	code := m.Run()
	for _, c := range checks {
		if err := c(); code == 0 && err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func timeout() time.Duration {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return 0
	}
	d, _ := time.ParseDuration(f.Value.String())
	return d
}

// Report is the watchdog's text: the goroutines whose stacks hold a
// _test.go frame, each cut down to this module's frames.
func Report(after time.Duration) string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\ntestwatch: tests still running after %v; goroutines in test code:\n", after)
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "_test.go:") {
			continue
		}
		lines := strings.Split(g, "\n")
		sb.WriteString(lines[0] + "\n")
		for i := 1; i+1 < len(lines); i += 2 {
			if strings.Contains(lines[i], "streamsql/") {
				sb.WriteString("  " + strings.TrimSpace(lines[i]) + " " + strings.TrimSpace(lines[i+1]) + "\n")
			}
		}
	}
	return sb.String()
}
