package exec

import (
	"fmt"
	"testing"

	"github.com/streamsql/streamsql/internal/testwatch"
)

// TestMain names a hung test at the end of the output (testwatch).
func TestMain(m *testing.M) {
	verifyBatchHashes = true // every batch's hashes are checked against HashKeys
	testwatch.Main(m, func() error {
		if n := batchHashMismatches.Load(); n != 0 {
			return fmt.Errorf("%d batches came with hashes other than their keys' (verifyBatchHashes)", n)
		}
		return nil
	})
}
