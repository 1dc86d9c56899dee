package connectors

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
)

// partitionCommitter decides, for all subtasks of one partitioned file
// sink in a job attempt, when a partition is committed (PartitionedSink).
// Each subtask reports, after each checkpoint's commit (and after a
// restore), its watermark as of that checkpoint and the partitions it
// wrote whose rows that checkpoint took. Once every subtask has reported,
// every report triggers a decision over the latest report of each
// subtask: the watermark is their minimum, the candidates their union (a
// subtask keeps reporting a partition until the committer committed it),
// and every candidate whose trigger holds is committed, in path order.
// Safe for concurrent use.
type partitionCommitter struct {
	mu       sync.Mutex
	root     string
	keys     []string
	pc       *catalog.PartitionCommit
	n        int // subtasks
	clock    exec.Clock
	latest   map[int]subtaskReport
	commits  map[string]int64 // partition -> the latest lastWrite committed
	count    int              // partitions committed (tests, metrics)
	warnings []string         // partitions whose time could not be extracted
}

type subtaskReport struct {
	wm    int64
	parts map[string]commitEntry
}

func newPartitionCommitter(root string, keys []string, pc *catalog.PartitionCommit, n int, clock exec.Clock) *partitionCommitter {
	return &partitionCommitter{root: root, keys: keys, pc: pc, n: n, clock: clock,
		latest: map[int]subtaskReport{}, commits: map[string]int64{}}
}

// committed reports whether the partition rel was committed with rows up
// to checkpoint lastWrite: its subtask can forget it.
func (c *partitionCommitter) committed(rel string, lastWrite int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.commits[rel]
	return ok && w >= lastWrite
}

// report records subtask's latest report and commits what is due.
func (c *partitionCommitter) report(subtask int, wm int64, parts map[string]commitEntry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.latest[subtask] = subtaskReport{wm: wm, parts: parts}
	if len(c.latest) < c.n {
		return nil
	}
	minWM := int64(exec.MaxWatermark)
	cand := map[string]commitEntry{}
	for _, r := range c.latest {
		minWM = min(minWM, r.wm)
		for rel, e := range r.parts {
			if old, ok := cand[rel]; ok {
				e.created = min(e.created, old.created)
				e.lastWrite = max(e.lastWrite, old.lastWrite)
			}
			cand[rel] = e
		}
	}
	rels := make([]string, 0, len(cand))
	for rel := range cand {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	now := c.clock.Now().UnixMilli()
	delay := c.pc.Delay.Milliseconds()
	for _, rel := range rels {
		e := cand[rel]
		if w, ok := c.commits[rel]; ok && w >= e.lastWrite {
			continue
		}
		if c.pc.PartitionTime {
			t, text, ok := c.pc.ExtractTime(c.keys, e.values) // values parsed when the partition was opened or restored
			if !ok {
				if len(c.warnings) < 100 {
					c.warnings = append(c.warnings, fmt.Sprintf("partition %s: '%s' does not match 'partition.time-extractor.timestamp-formatter'", rel, text))
				}
				continue
			}
			// Flink: the watermark passes the partition time plus the
			// delay. At the end of the input (the maximum watermark) every
			// partition is complete.
			if minWM != exec.MaxWatermark && minWM <= t+delay {
				continue
			}
		} else if minWM != exec.MaxWatermark && now < e.created+delay {
			continue
		}
		if err := c.commit(rel); err != nil {
			return err
		}
		c.commits[rel] = e.lastWrite
		c.count++
	}
	// Forget commits no subtask reports any more.
	for rel := range c.commits {
		if _, ok := cand[rel]; !ok {
			delete(c.commits, rel)
		}
	}
	return nil
}

// commit runs the commit policies on a partition: the success file, an
// empty file written once (Flink overwrites it on every commit; keeping the
// first one keeps the time the partition was complete: part files newer
// than it hold late rows).
func (c *partitionCommitter) commit(rel string) error {
	if c.pc.SuccessFile == "" {
		return nil
	}
	dir := filepath.Join(c.root, filepath.FromSlash(rel))
	f, err := os.OpenFile(filepath.Join(dir, c.pc.SuccessFile), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if os.IsExist(err) {
		return nil // committed before: the file keeps the first commit's time
	}
	if err != nil {
		return fmt.Errorf("filesystem sink: committing partition %s: %w", rel, err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("filesystem sink: committing partition %s: %w", rel, err)
	}
	return syncDir(dir)
}
