package session

import (
	"strings"
	"testing"
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
	for k, v := range map[string]string{
		"state.backend.type":                          "forst",
		"state.backend.rocksdb.memory.fixed-per-slot": "lots",
	} {
		if err := s.Options.Set(k, v); err == nil || !strings.Contains(err.Error(), k) {
			t.Fatalf("SET '%s' = '%s': %v", k, v, err)
		}
	}
}
