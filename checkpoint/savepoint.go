package checkpoint

import "errors"

// PersistSavepoint writes the committed state of checkpoint id as a
// self-contained savepoint in a new directory under dir.
//
// Placeholder until the canonical savepoint format lands (issue 4).
func (s *Store) PersistSavepoint(id int64, dir string, meta map[string]string) (Info, error) {
	return Info{}, errors.New("savepoints are not implemented yet")
}
