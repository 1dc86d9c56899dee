package checkpoint

import "encoding/binary"

// Key subspaces of the state store. Every key starts with one tag byte.
const (
	tagInternal byte = 0x00 // the store's own keys (checkpoint id)
	tagKeyed    byte = 0x01 // [opID][keyGroup][key]
	tagSubtask  byte = 0x02 // [opID][subtask]: non-keyed per-subtask state
)

// keyCheckpointID holds the id of the last committed checkpoint (8 bytes,
// big endian). Readers never see the internal subspace.
var keyCheckpointID = []byte{tagInternal, 'c', 'k', 'p', 't'}

// appendOpID appends a length-prefixed operator id, so that no operator's
// keys are a prefix of another's ("a" vs "ab").
func appendOpID(dst []byte, opID string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(opID)))
	return append(dst, opID...)
}

// KeyedPrefix is the prefix of every key of keyed state of operator opID in
// key group keyGroup: [0x01][len(opID)][opID][keyGroup as 4 bytes BE]. The
// operator appends its own encoded key; scanning the prefix returns that key
// group's state in key order.
func KeyedPrefix(opID string, keyGroup int) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(opID)+4)
	b = append(b, tagKeyed)
	b = appendOpID(b, opID)
	return binary.BigEndian.AppendUint32(b, uint32(keyGroup))
}

// OperatorPrefix is the prefix of all keyed state of operator opID (every
// key group).
func OperatorPrefix(opID string) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(opID))
	b = append(b, tagKeyed)
	return appendOpID(b, opID)
}

// SubtaskKey is the key of the non-keyed state (source offsets, sink
// transactions) of parallel subtask `subtask` of operator opID. It lives in
// its own subspace, apart from keyed state.
func SubtaskKey(opID string, subtask int) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(opID)+4)
	b = append(b, tagSubtask)
	b = appendOpID(b, opID)
	return binary.BigEndian.AppendUint32(b, uint32(subtask))
}

// prefixEnd returns the smallest key greater than every key with prefix p,
// or nil when there is none (p is empty or all 0xff).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
