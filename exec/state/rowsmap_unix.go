//go:build unix

package state

import (
	"fmt"
	"os"
	"syscall"
)

// canMapRows: this platform maps chunks of rows to files (mapRows).
const canMapRows = true

// mapRows writes parts one after another to a new file in dir and maps
// the file read-only. The file is removed at once: the mapping keeps its
// pages until unmapRows, and a process that dies leaves nothing behind.
func mapRows(dir string, parts ...[]byte) ([]byte, error) {
	f, err := os.CreateTemp(dir, "rows-*.chunk")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	size := 0
	for _, p := range parts {
		if _, err := f.Write(p); err != nil {
			return nil, err
		}
		size += len(p)
	}
	if size == 0 {
		return nil, fmt.Errorf("state: an empty chunk of rows")
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", f.Name(), err)
	}
	return mem, nil
}

func unmapRows(mem []byte) { _ = syscall.Munmap(mem) }
