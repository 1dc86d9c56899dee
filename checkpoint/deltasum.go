package checkpoint

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble"
)

// Checksums of the deltas as Commit writes them.
//
// Persist records every new table file with its size and CRC-32C, which
// it read back from the file; most new files are Commit's deltas (a
// join's rows: hundreds of MB a checkpoint), whose bytes Commit has just
// written through tableWritable. So tableWritable sums what it writes,
// Commit notes each delta's (first key, size, sum), the working DB's
// TableIngested event names the file each delta became (matched by its
// smallest key and its size), and Persist takes the sum of such a file
// instead of reading it. A file with no noted sum (compaction and flush
// outputs, a match that failed) is read as before.
type deltaSums struct {
	mu      sync.Mutex
	written []deltaSum          // deltas written, not yet ingested
	byName  map[string]deltaSum // ingested deltas by table file name ("000123.sst")
}

type deltaSum struct {
	first []byte // the delta's first key
	size  int64
	crc   uint32
	id    int64 // the checkpoint that wrote it
}

// wrote notes a delta written by checkpoint id.
func (d *deltaSums) wrote(id int64, first []byte, size int64, crc uint32) {
	d.mu.Lock()
	d.written = append(d.written, deltaSum{first: bytes.Clone(first), size: size, crc: crc, id: id})
	d.mu.Unlock()
}

// ingested is the working DB's TableIngested event: each ingested table
// whose smallest key and size are those of a written delta takes its sum.
func (d *deltaSums) ingested(info pebble.TableIngestInfo) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, t := range info.Tables {
		for i, w := range d.written {
			if w.size == int64(t.Size) && bytes.Equal(w.first, t.Smallest.UserKey) {
				if d.byName == nil {
					d.byName = map[string]deltaSum{}
				}
				d.byName[fmt.Sprintf("%s.sst", t.FileNum)] = w
				d.written = append(d.written[:i], d.written[i+1:]...)
				break
			}
		}
	}
}

// dropWritten forgets the deltas written and not ingested (a Commit that
// failed, or whose Ingest did not name them).
func (d *deltaSums) dropWritten() {
	d.mu.Lock()
	d.written = d.written[:0]
	d.mu.Unlock()
}

// take returns the sum of table file name, if noted, and forgets it.
func (d *deltaSums) take(name string) (deltaSum, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.byName[name]
	if ok {
		delete(d.byName, name)
	}
	return s, ok
}

// prune forgets the sums of deltas of checkpoints up to id (Persist of
// id has taken those of its files; the others were compacted away).
func (d *deltaSums) prune(id int64) {
	d.mu.Lock()
	for n, s := range d.byName {
		if s.id <= id {
			delete(d.byName, n)
		}
	}
	d.mu.Unlock()
}

// reset forgets everything (a new working DB).
func (d *deltaSums) reset() {
	d.mu.Lock()
	d.written, d.byName = nil, nil
	d.mu.Unlock()
}
