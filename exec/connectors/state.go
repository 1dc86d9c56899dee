package connectors

import (
	"encoding/binary"
	"fmt"

	"github.com/streamsql/streamsql/exec"
)

var (
	_ exec.SplitSource      = (*Datagen)(nil)
	_ exec.SplitSource      = (*FileSource)(nil)
	_ exec.RescalableSource = (*SocketSource)(nil)
	_ exec.RescalableSink   = (*FileSink)(nil)
	_ exec.RescalableSink   = (*PartitionedSink)(nil)
	_ exec.WatermarkSink    = (*PartitionedSink)(nil)
)

// Checkpoint state of the connectors. Every state starts with two bytes:
//
//	byte 0: the encoding version of the connector's state (stateVersions)
//	byte 1: the connector kind: 'G' datagen, 'F' file source, 'S' socket
//	        source, 'K' file sink, 'N' nexmark source,
//	        'P' partitioned file sink
//
// followed by uvarint subtask and uvarint parallelism of the subtask that
// took it, then the connector's fields (see each SnapshotState/PreCommit).
// Integers are unsigned varints (epochs: signed varints), strings a uvarint
// length and the bytes. A state ends exactly after its last field.
//
// Versions: 1 is the first encoding of every kind; datagen and the file
// source write version 2 (lists of splits, for rescaling), the file sink
// version 3 (2: with its directory, for a changed path; 3: with the part id
// of its files, which differs per job) and the partitioned file sink
// version 2 (with the part id), and all still read the older versions. A
// restore refuses versions newer than this build writes.
const stateVersion byte = 1

const (
	kindDatagen    byte = 'G'
	kindFileSource byte = 'F'
	kindSocket     byte = 'S'
	kindFileSink   byte = 'K'
	kindNexmark    byte = 'N'
	kindPartSink   byte = 'P'
)

// stateVersions is the version each kind writes (and the newest it reads).
var stateVersions = map[byte]byte{
	kindDatagen: 2, kindFileSource: 2, kindSocket: stateVersion, kindFileSink: 3, kindNexmark: 1, kindPartSink: 2,
}

var kindNames = map[byte]string{
	kindDatagen: "datagen source", kindFileSource: "filesystem source",
	kindSocket: "socket source", kindFileSink: "filesystem sink", kindNexmark: "nexmark source", kindPartSink: "filesystem sink",
}

func stateHeader(kind byte, subtask, parallelism int) []byte {
	b := make([]byte, 0, 32)
	b = append(b, stateVersions[kind], kind)
	b = binary.AppendUvarint(b, uint64(subtask))
	return binary.AppendUvarint(b, uint64(parallelism))
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// stateReader decodes a state; the first error sticks. version, subtask
// and parallelism come from the header.
type stateReader struct {
	b           []byte
	what        string // connector name for messages
	err         error
	version     byte
	subtask     int
	parallelism int
}

// readState checks the header of state against the expected kind and a
// supported version and returns a reader positioned after it.
func readState(state []byte, kind byte) (*stateReader, error) {
	what := kindNames[kind]
	if len(state) < 2 {
		return nil, fmt.Errorf("%s: cannot restore: the checkpoint state is empty or truncated (%d bytes)", what, len(state))
	}
	if v := stateVersions[kind]; state[0] < 1 || state[0] > v {
		return nil, fmt.Errorf("%s: cannot restore: unsupported state format version %d (this build reads versions 1 to %d)", what, state[0], v)
	}
	if state[1] != kind {
		other := kindNames[state[1]]
		if other == "" {
			other = fmt.Sprintf("unknown kind %q", state[1])
		}
		return nil, fmt.Errorf("%s: cannot restore the state of a %s", what, other)
	}
	r := &stateReader{b: state[2:], what: what, version: state[0]}
	st, p := r.uint(), r.uint()
	if r.err == nil && (p == 0 || st >= p || p > 1<<31) {
		r.fail()
	}
	if r.err != nil {
		return nil, r.err
	}
	r.subtask, r.parallelism = int(st), int(p)
	return r, nil
}

// openState reads the header of a state restored by the subtask that took
// it (same index and parallelism).
func openState(state []byte, kind byte, subtask, parallelism int) (*stateReader, error) {
	r, err := readState(state, kind)
	if err != nil {
		return nil, err
	}
	if r.subtask != subtask || r.parallelism != parallelism {
		return nil, fmt.Errorf("%s: cannot restore the state of subtask %d of %d into subtask %d of %d (a state of another parallelism is taken over with RestoreStates)", r.what, r.subtask, r.parallelism, subtask, parallelism)
	}
	return r, nil
}

// openGiven is openStates over the non-empty ones of states (a rescaled
// subtask may get empty states of old subtasks that had nothing).
func openGiven(states [][]byte, kind byte, subtask, parallelism int) ([]*stateReader, error) {
	var given [][]byte
	for _, st := range states {
		if len(st) > 0 {
			given = append(given, st)
		}
	}
	return openStates(given, kind, subtask, parallelism)
}

// openStates reads the headers of the states of an earlier run that
// subtask (of parallelism) takes over: they must come from distinct
// subtasks of one earlier parallelism, each old subtask i going to new
// subtask i mod parallelism, so that every old state has one owner.
func openStates(states [][]byte, kind byte, subtask, parallelism int) ([]*stateReader, error) {
	rs := make([]*stateReader, 0, len(states))
	seen := make(map[int]bool, len(states))
	for _, st := range states {
		r, err := readState(st, kind)
		if err != nil {
			return nil, err
		}
		switch {
		case len(rs) > 0 && r.parallelism != rs[0].parallelism:
			return nil, fmt.Errorf("%s: cannot restore: the states come from different parallelisms (%d and %d)", r.what, rs[0].parallelism, r.parallelism)
		case seen[r.subtask]:
			return nil, fmt.Errorf("%s: cannot restore: the state of subtask %d of %d is given twice", r.what, r.subtask, r.parallelism)
		case r.subtask%parallelism != subtask:
			return nil, fmt.Errorf("%s: cannot take over the state of subtask %d of %d in subtask %d of %d (old subtask i belongs to new subtask i mod %d)", r.what, r.subtask, r.parallelism, subtask, parallelism, parallelism)
		}
		seen[r.subtask] = true
		rs = append(rs, r)
	}
	return rs, nil
}

// openAllStates reads the headers of the states of every subtask of an
// earlier run (given by old subtask index, as a SplitSource gets them):
// state i must be old subtask i's, all of one parallelism, none missing.
func openAllStates(states [][]byte, kind byte) ([]*stateReader, error) {
	rs := make([]*stateReader, 0, len(states))
	for i, st := range states {
		r, err := readState(st, kind)
		if err != nil {
			return nil, err
		}
		switch {
		case r.parallelism != len(states):
			return nil, fmt.Errorf("%s: cannot restore: the checkpoint has %d subtask states of a run at parallelism %d", r.what, len(states), r.parallelism)
		case r.subtask != i:
			return nil, fmt.Errorf("%s: cannot restore: the state of subtask %d of %d is stored as subtask %d's", r.what, r.subtask, r.parallelism, i)
		}
		rs = append(rs, r)
	}
	return rs, nil
}

func (r *stateReader) fail() {
	if r.err == nil {
		r.err = fmt.Errorf("%s: cannot restore: the checkpoint state is corrupted", r.what)
	}
}

func (r *stateReader) uint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

// int reads a uvarint that must fit a non-negative int64.
func (r *stateReader) int() int64 {
	v := r.uint()
	if v > 1<<62 {
		r.fail()
		return 0
	}
	return int64(v)
}

func (r *stateReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *stateReader) str() string {
	n := r.uint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.fail()
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// count reads a list length; each element takes at least min bytes, so a
// corrupted length cannot make the caller allocate much.
func (r *stateReader) count(min int) int {
	n := r.uint()
	if r.err == nil && n > uint64(len(r.b)/min) {
		r.fail()
		return 0
	}
	return int(n)
}

// end returns the first error, or an error when bytes are left over.
func (r *stateReader) end() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail()
	}
	return r.err
}
