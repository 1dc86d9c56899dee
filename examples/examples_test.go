// Package examples holds the job files the README shows; the test runs
// each one, as `streamsql run` would from the repository's root.
package examples

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/session"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestExamples runs every examples/*.sql to its end and checks that it
// printed rows of Flink's changelog.
var firstInsert = regexp.MustCompile(`^([^ ]*> )?\+I\[`)

func TestExamples(t *testing.T) {
	files, _ := filepath.Glob("*.sql")
	if len(files) < 2 {
		t.Fatalf("%d example files", len(files))
	}
	if err := os.Chdir(".."); err != nil { // the examples' paths are relative to the repository
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join("examples", f))
			if err != nil {
				t.Fatal(err)
			}
			out := &lockedBuffer{}
			s := session.New(session.Config{Stdout: out})
			defer s.Close()
			stmts, err := parser.ParseScript(string(text))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for _, st := range stmts {
				if _, err := s.Execute(ctx, st); err != nil {
					t.Fatalf("%s: %v", st.SQL(), err)
				}
			}
			if err := s.WaitJobs(ctx); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out.b.String()), "\n")
			// the print connector prefixes [identifier:]subtask> at parallelism > 1
			if len(lines) < 10 || !firstInsert.MatchString(lines[0]) {
				t.Fatalf("%s printed %d lines: %q", f, len(lines), lines[:min(len(lines), 3)])
			}
		})
	}
}
