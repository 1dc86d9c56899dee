package catalog

import (
	"fmt"
	"strings"
)

// Flink options that streamsql accepts but does not act on. Flink users put
// them in every job file (tuning of Flink's own runtime and optimizer); a
// job file must not abort on them, and the user must learn that they have
// no effect: SET stores the value (SET lists it) and gives a warning once
// per key and session. Values are checked as Flink would (a boolean key
// takes 'true' or 'false'), so a typo in a value is still an error.
//
// Keys that would change what a query computes or where its data goes if
// they were ignored (execution.checkpointing.dir, Flink 1.20's name for
// state.checkpoints.dir, say) are not here: they stay unknown, an error.

// ignoredOption is an accepted key without effect; why says what streamsql
// does instead (it completes the warning).
type ignoredOption struct {
	key   string
	check func(string) error
	why   string
}

func boolCheck(v string) error {
	_, err := ParseBool(v)
	if err != nil {
		return fmt.Errorf("expected 'true' or 'false'")
	}
	return nil
}

func anyValue(string) error { return nil }

const (
	whyBatches   = "streamsql always processes whole Arrow batches of 'execution.batch-size' rows, flushed after 'execution.batch-linger'"
	whyOptimizer = "streamsql's planner has no such optimizer setting"
	whyRuntime   = "it tunes Flink's runtime, which streamsql does not have"
)

var ignoredOptions = []ignoredOption{
	{"table.exec.mini-batch.enabled", boolCheck, whyBatches},
	{"table.exec.mini-batch.allow-latency", durationOrZero, whyBatches},
	{"table.exec.mini-batch.size", intAtLeast(-1), whyBatches},
	{"table.exec.sink.not-null-enforcer", enumOf("ERROR", "DROP"), "streamsql has no NOT NULL enforcer for sinks"},
	{"table.exec.sink.type-length-enforcer", enumOf("IGNORE", "TRIM_PAD"), "values are written as they are"},
	{"table.exec.sink.upsert-materialize", enumOf("NONE", "AUTO", "FORCE"), "sinks get the changelog as the query produces it"},
	{"table.exec.sink.keyed-shuffle", enumOf("NONE", "AUTO", "FORCE"), "sinks get their input as the planner distributes it"},
	{"table.exec.source.cdc-events-duplicate", boolCheck, "there are no CDC sources"},
	{"table.exec.resource.default-parallelism", intAtLeast(-1), "set 'parallelism.default' instead"},
	{"table.exec.legacy-cast-behaviour", enumOf("ENABLED", "DISABLED"), "CAST follows Flink's current rules"},
	{"table.exec.simplify-operator-name-enabled", boolCheck, "operator names are streamsql's own"},
	{"table.exec.emit.early-fire.enabled", boolCheck, "windows emit once, when the watermark passes their end"},
	{"table.exec.emit.early-fire.delay", durationOrZero, "windows emit once, when the watermark passes their end"},
	{"table.exec.emit.late-fire.enabled", boolCheck, "windows emit once, when the watermark passes their end"},
	{"table.exec.emit.late-fire.delay", durationOrZero, "windows emit once, when the watermark passes their end"},
	{"table.exec.emit.allow-lateness", durationOrZero, "late rows are dropped (docs/windows.md)"},
	{"table.exec.window-agg.buffer-size-limit", intAtLeast(1), "window state is not buffered"},
	{"table.exec.async-lookup.buffer-capacity", intAtLeast(1), "lookup joins read an in-memory copy of the table: no asynchronous lookups"},
	{"table.exec.async-lookup.timeout", durationOrZero, "lookup joins read an in-memory copy of the table: no asynchronous lookups"},
	{"table.exec.interval-join.min-cleanup-interval", durationOrZero, "interval joins drop state as the watermark passes it, with no cleanup timer to tune"},
	{"table.exec.uid.generation", anyValue, "operator ids are derived from the plan's structure (see the UID hint)"},
	{"table.exec.uid.format", anyValue, "operator ids are derived from the plan's structure (see the UID hint)"},
	{"table.exec.disabled-operators", anyValue, whyOptimizer},
	{"table.dml-sync", boolCheck, "INSERT returns once the job is submitted"},
	{"table.sql-dialect", enumOf("default"), "only Flink's default dialect is parsed"},
	{"table.generated-code.max-length", intAtLeast(1), "no code is generated"},
	{"table.display.max-column-width", intAtLeast(1), "the shell has no such setting"},
	{"sql-client.display.max-column-width", intAtLeast(1), "the shell has no such setting"},
	{"sql-client.verbose", boolCheck, "the shell has no verbose mode"},
	{"pipeline.operator-chaining", boolCheck, "stateless operators are always fused into one task"},
	{"pipeline.operator-chaining.enabled", boolCheck, "stateless operators are always fused into one task"},
	{"pipeline.object-reuse", boolCheck, whyRuntime},
	{"pipeline.auto-generate-uids", boolCheck, "operator ids are derived from the plan's structure (see the UID hint)"},
	{"pipeline.global-job-parameters", anyValue, whyRuntime},
	{"pipeline.jars", anyValue, "streamsql runs no user code"},
	{"pipeline.classpaths", anyValue, "streamsql runs no user code"},
	{"execution.buffer-timeout", anyValue, "set 'execution.batch-linger' instead"},
	{"execution.checkpointing.checkpoints-after-tasks-finish.enabled", boolCheck, "a final checkpoint is always taken when a bounded job ends"},
	{"execution.checkpointing.snapshot-compression", boolCheck, "checkpoints are written by Pebble, with its own compression"},
	{"state.backend", anyValue, "set 'state.backend.type' instead"},
	{"state.backend.incremental", boolCheck, "checkpoints are always incremental"},
	{"state.backend.local-recovery", boolCheck, "a restore reads the checkpoint directory"},
	{"state.checkpoint-storage", anyValue, "checkpoints go to 'state.checkpoints.dir'"},
}

// ignoredFamilies are prefixes whose every key is accepted without effect.
var ignoredFamilies = []ignoredOption{
	{"table.optimizer.", anyValue, whyOptimizer},
	{"state.backend.rocksdb.", anyValue, "the 'rocksdb' state backend is a Pebble tier tuned by 'state.backend.rocksdb.memory.fixed-per-slot', 'state.backend.rocksdb.localdir' and 'state.backend.rocksdb.compression.per.level' only"},
}

func lookupIgnored(key string) (*ignoredOption, bool) {
	for i := range ignoredOptions {
		if ignoredOptions[i].key == key {
			return &ignoredOptions[i], true
		}
	}
	for i := range ignoredFamilies {
		if strings.HasPrefix(key, ignoredFamilies[i].key) && len(key) > len(ignoredFamilies[i].key) {
			return &ignoredFamilies[i], true
		}
	}
	return nil, false
}

// IgnoredOptionKeys returns the keys accepted without effect, and the
// families as "prefix*".
func IgnoredOptionKeys() []string {
	var keys []string
	for _, o := range ignoredOptions {
		keys = append(keys, o.key)
	}
	for _, o := range ignoredFamilies {
		keys = append(keys, o.key+"*")
	}
	return keys
}

func exactIgnoredKeys() []string {
	keys := make([]string, len(ignoredOptions))
	for i, o := range ignoredOptions {
		keys[i] = o.key
	}
	return keys
}
