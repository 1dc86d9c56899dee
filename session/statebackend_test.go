package session

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble"
)

// TestStateBackendOptions: SET of the state backend keys reaches the job
// configuration (and so every operator's OpContext.KVOptions); bad values
// are errors naming the key.
func TestStateBackendOptions(t *testing.T) {
	s := New(Config{Stdout: &strings.Builder{}})
	cfg := s.jobConfig(nil)
	if cfg.StateBackend != "hashmap" || cfg.StateMemory != 0 || cfg.StateDir != "" {
		t.Fatalf("defaults: %q %d %q", cfg.StateBackend, cfg.StateMemory, cfg.StateDir)
	}
	dir := t.TempDir()
	for k, v := range map[string]string{
		"state.backend.type":                          "rocksdb",
		"state.backend.rocksdb.memory.fixed-per-slot": "1 gb",
		"state.backend.rocksdb.localdir":              "file://" + dir,
	} {
		if err := s.Options.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	cfg = s.jobConfig(nil)
	if cfg.StateBackend != "rocksdb" || cfg.StateMemory != 1<<30 || cfg.StateDir != dir {
		t.Fatalf("set: %q %d %q", cfg.StateBackend, cfg.StateMemory, cfg.StateDir)
	}
	if got := s.storeOptions("/ck", "j").CompressionPerLevel; got != nil {
		t.Fatalf("compression per level unset: %v", got)
	}
	if err := s.Options.Set("state.backend.rocksdb.compression.per.level", "NO_COMPRESSION;SNAPPY_COMPRESSION"); err != nil {
		t.Fatal(err)
	}
	if got := s.storeOptions("/ck", "j").CompressionPerLevel; fmt.Sprint(got) != fmt.Sprint([]pebble.Compression{pebble.NoCompression, pebble.SnappyCompression}) {
		t.Fatalf("compression per level set: %v", got)
	}
	for k, v := range map[string]string{
		"state.backend.type":                          "forst",
		"state.backend.rocksdb.memory.fixed-per-slot": "lots",
		"state.backend.rocksdb.compression.per.level": "LZ4_COMPRESSION",
	} {
		if err := s.Options.Set(k, v); err == nil || !strings.Contains(err.Error(), k) {
			t.Fatalf("SET '%s' = '%s': %v", k, v, err)
		}
	}
}
