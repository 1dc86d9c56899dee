package exec

import (
	"testing"

	"github.com/streamsql/streamsql/internal/testwatch"
)

// TestMain names a hung test at the end of the output (testwatch).
func TestMain(m *testing.M) {
	verifyBatchHashes = true // every batch's hashes are checked against HashKeys
	testwatch.Main(m)
}
