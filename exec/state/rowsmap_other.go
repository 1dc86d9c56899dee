//go:build !unix

package state

import "errors"

// canMapRows: this platform keeps every chunk of rows in memory.
const canMapRows = false

func mapRows(string, ...[]byte) ([]byte, error) {
	return nil, errors.New("state: mapped rows are not supported on this platform")
}

func unmapRows([]byte) {}
