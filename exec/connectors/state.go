package connectors

import (
	"encoding/binary"
	"fmt"

	"github.com/streamsql/streamsql/exec"
)

var (
	_ exec.CheckpointedSource = (*Datagen)(nil)
	_ exec.CheckpointedSource = (*FileSource)(nil)
	_ exec.CheckpointedSource = (*SocketSource)(nil)
	_ exec.TwoPhaseSink       = (*FileSink)(nil)
)

// Checkpoint state of the connectors. Every state starts with two bytes:
//
//	byte 0: stateVersion (the encoding version, 1)
//	byte 1: the connector kind: 'G' datagen, 'F' file source, 'S' socket
//	        source, 'K' file sink
//
// followed by uvarint subtask and uvarint parallelism of the subtask that
// took it, then the connector's fields (see each SnapshotState/PreCommit).
// Integers are unsigned varints (epochs: signed varints), strings a uvarint
// length and the bytes. A state ends exactly after its last field.
const stateVersion byte = 1

const (
	kindDatagen    byte = 'G'
	kindFileSource byte = 'F'
	kindSocket     byte = 'S'
	kindFileSink   byte = 'K'
)

var kindNames = map[byte]string{
	kindDatagen: "datagen source", kindFileSource: "filesystem source",
	kindSocket: "socket source", kindFileSink: "filesystem sink",
}

func stateHeader(kind byte, subtask, parallelism int) []byte {
	b := make([]byte, 0, 32)
	b = append(b, stateVersion, kind)
	b = binary.AppendUvarint(b, uint64(subtask))
	return binary.AppendUvarint(b, uint64(parallelism))
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// stateReader decodes a state; the first error sticks.
type stateReader struct {
	b    []byte
	what string // connector name for messages
	err  error
}

// openState checks the header of state against the expected kind and the
// subtask restoring it.
func openState(state []byte, kind byte, subtask, parallelism int) (*stateReader, error) {
	what := kindNames[kind]
	if len(state) < 2 {
		return nil, fmt.Errorf("%s: cannot restore: the checkpoint state is empty or truncated (%d bytes)", what, len(state))
	}
	if state[0] != stateVersion {
		return nil, fmt.Errorf("%s: cannot restore: unsupported state format version %d (this build reads version %d)", what, state[0], stateVersion)
	}
	if state[1] != kind {
		other := kindNames[state[1]]
		if other == "" {
			other = fmt.Sprintf("unknown kind %q", state[1])
		}
		return nil, fmt.Errorf("%s: cannot restore the state of a %s", what, other)
	}
	r := &stateReader{b: state[2:], what: what}
	st, p := r.uint(), r.uint()
	if r.err != nil {
		return nil, r.err
	}
	if int(st) != subtask || int(p) != parallelism {
		return nil, fmt.Errorf("%s: cannot restore the state of subtask %d of %d into subtask %d of %d (changing the parallelism on restore is not supported)", what, st, p, subtask, parallelism)
	}
	return r, nil
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
