package checkpoint

import (
	"testing"

	"github.com/streamsql/streamsql/internal/testwatch"
)

// TestMain names a hung test at the end of the output (testwatch).
func TestMain(m *testing.M) { testwatch.Main(m) }
