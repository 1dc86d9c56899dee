package connectors

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
)

// NewSource returns one parallel instance (sc.Subtask of sc.Parallelism) of
// t's source connector.
func NewSource(t *catalog.Table, sc *exec.SourceContext) (exec.Source, error) {
	if err := catalog.ValidateTable(t); err != nil {
		return nil, err
	}
	src, _, _, _ := catalog.ConnectorCaps(t.Connector())
	if !src {
		return nil, fmt.Errorf("connector '%s' of table '%s' cannot be used as a source", t.Connector(), t.Name)
	}
	sc = normSourceContext(t, sc)
	switch t.Connector() {
	case "datagen":
		return newDatagen(t, sc)
	case "filesystem":
		return newFileSource(t, sc)
	case "socket":
		return newSocketSource(t, sc)
	case "nexmark":
		return newNexmark(t, sc)
	}
	return nil, fmt.Errorf("connector '%s' has no source implementation", t.Connector())
}

// NewSink returns one parallel instance of t's sink connector.
func NewSink(t *catalog.Table, sc *exec.SinkContext) (exec.Sink, error) {
	if err := catalog.ValidateTable(t); err != nil {
		return nil, err
	}
	_, sink, upd, _ := catalog.ConnectorCaps(t.Connector())
	if !sink {
		return nil, fmt.Errorf("connector '%s' of table '%s' cannot be used as a sink", t.Connector(), t.Name)
	}
	if sc.Updating && (!upd || !catalog.TableSinkAcceptsUpdates(t)) {
		msg := fmt.Sprintf("table '%s' (connector '%s') accepts only inserts, but the query produces updates (-U/+U/-D)", t.Name, t.Connector())
		if t.Connector() == "filesystem" {
			msg += "; use 'format' = 'json', which records the change kind in an \"op\" field"
		}
		return nil, fmt.Errorf("%s", msg)
	}
	if sc.Schema == nil {
		c := *sc
		c.Schema = t.Schema
		sc = &c
	}
	switch t.Connector() {
	case "print":
		return newPrintSink(t, sc)
	case "blackhole":
		return blackhole{}, nil
	case "filesystem":
		if len(t.PartitionKeys) > 0 {
			return newPartitionedSink(t, sc)
		}
		return newFileSink(t, sc)
	}
	return nil, fmt.Errorf("connector '%s' has no sink implementation", t.Connector())
}

func normSourceContext(t *catalog.Table, sc *exec.SourceContext) *exec.SourceContext {
	c := *sc
	if c.Schema == nil {
		c.Schema = t.Schema
	}
	if c.Parallelism < 1 {
		c.Parallelism = 1
	}
	if c.BatchSize < 1 {
		c.BatchSize = 1024
	}
	if c.SkippedRecords == nil {
		c.SkippedRecords = new(atomic.Int64)
	}
	if c.Table == nil {
		c.Table = t
	}
	return &c
}

// SourceParallelism is the parallelism of t's source: 1 for socket (one
// connection), 'scan.parallelism' when set, defaultP otherwise.
func SourceParallelism(t *catalog.Table, defaultP int) int {
	if t.Connector() == "socket" {
		return 1
	}
	if v, ok := t.Option("scan.parallelism"); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
			return n
		}
	}
	return defaultP
}

// SinkParallelism is the parallelism of t's sink: 'sink.parallelism' when
// set (print, filesystem), defaultP otherwise.
func SinkParallelism(t *catalog.Table, defaultP int) int {
	if v, ok := t.Option("sink.parallelism"); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
			return n
		}
	}
	return defaultP
}

func optInt(t *catalog.Table, key string, def int64) int64 {
	v, ok := t.Option(key)
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return def
	}
	return n
}

func optBool(t *catalog.Table, key string, def bool) bool {
	v, ok := t.Option(key)
	if !ok {
		return def
	}
	b, err := catalog.ParseBool(v)
	if err != nil {
		return def
	}
	return b
}

func optDuration(t *catalog.Table, key string, def time.Duration) time.Duration {
	v, ok := t.Option(key)
	if !ok {
		return def
	}
	d, err := catalog.ParseDuration(v)
	if err != nil {
		return def
	}
	return d
}

// fsPath is the filesystem connector's 'path' as a local path: a file://
// URI without its scheme (file:///tmp/x is /tmp/x), else as written.
func fsPath(t *catalog.Table) string {
	p := strings.TrimSpace(t.OptionOr("path", ""))
	if rest, ok := strings.CutPrefix(p, "file://"); ok {
		return rest
	}
	return p
}
