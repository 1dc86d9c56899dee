package testwatch

import (
	"strings"
	"testing"
)

func TestReportNamesTheTest(t *testing.T) {
	done := make(chan struct{})
	started := make(chan struct{})
	go func() { close(started); blockedHelper(done) }()
	<-started
	r := Report(0)
	close(done)
	if !strings.Contains(r, "TestReportNamesTheTest") {
		t.Fatalf("report lacks the running test:\n%s", r)
	}
}

func blockedHelper(done chan struct{}) { <-done }
