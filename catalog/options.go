package catalog

import (
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// OptionDef describes one session option (SET 'key' = 'value'), with
// Flink's key names.
type OptionDef struct {
	Key         string
	Default     func() string
	Description string
	// Check validates a value; the error says what is accepted.
	Check func(v string) error
	// Secret values are never shown: SET lists them masked and errors do
	// not repeat them.
	Secret bool
}

// mask shows at most the first 4 characters of a secret.
func mask(v string) string {
	if v == "" {
		return ""
	}
	if len(v) <= 4 {
		return "****"
	}
	return v[:4] + "****"
}

func intAtLeast(min int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < min {
			return fmt.Errorf("expected an integer >= %d", min)
		}
		return nil
	}
}

func enumOf(vals ...string) func(string) error {
	return func(v string) error {
		for _, x := range vals {
			if strings.EqualFold(v, x) {
				return nil
			}
		}
		return fmt.Errorf("expected one of %s", strings.Join(vals, ", "))
	}
}

// ParseCompressionList parses state.backend.rocksdb.compression.per.level:
// a ';'-separated list of the compressions the Pebble state backend has,
// returned in upper case (nil for an empty value; checkpoint maps them to
// Pebble's). Flink's others are errors that say so.
func ParseCompressionList(v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []string
	for i, f := range strings.Split(v, ";") {
		switch name := strings.ToUpper(strings.TrimSpace(f)); name {
		case "NO_COMPRESSION", "SNAPPY_COMPRESSION", "ZSTD_COMPRESSION":
			out = append(out, name)
		case "ZLIB_COMPRESSION", "BZLIB2_COMPRESSION", "LZ4_COMPRESSION", "LZ4HC_COMPRESSION", "XPRESS_COMPRESSION", "DISABLE_COMPRESSION_OPTION":
			return nil, fmt.Errorf("level %d: %s is not available in the Pebble state backend: use NO_COMPRESSION, SNAPPY_COMPRESSION or ZSTD_COMPRESSION", i, name)
		default:
			return nil, fmt.Errorf("level %d: unknown compression %q: want NO_COMPRESSION, SNAPPY_COMPRESSION or ZSTD_COMPRESSION, separated by ';'", i, strings.TrimSpace(f))
		}
	}
	return out, nil
}

func compressionList(v string) error {
	_, err := ParseCompressionList(v)
	return err
}

func durationCheck(v string) error {
	d, err := parseFlinkDuration(v)
	if err != nil {
		return err
	}
	if d <= 0 {
		return fmt.Errorf("expected a positive duration")
	}
	return nil
}

func durationOrZero(v string) error {
	_, err := parseFlinkDuration(v)
	return err
}

func memorySizeCheck(v string) error {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	n, err := ParseMemorySize(v)
	if err != nil {
		return err
	}
	if n <= 0 {
		return fmt.Errorf("expected a positive memory size")
	}
	return nil
}

func pathCheck(v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("expected a directory path or file:// URI")
	}
	if i := strings.Index(v, "://"); i >= 0 && !strings.HasPrefix(v, "file://") {
		return fmt.Errorf("only local paths and file:// URIs are supported, not %s", v[:i+3])
	}
	return nil
}

func intBetween(lo, hi int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("expected an integer between %d and %d", lo, hi)
		}
		return nil
	}
}

func floatAtLeast(min float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < min {
			return fmt.Errorf("expected a number >= %g", min)
		}
		return nil
	}
}

func floatBetween(lo, hi float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < lo || f > hi {
			return fmt.Errorf("expected a number between %g and %g", lo, hi)
		}
		return nil
	}
}

// MaxKeyGroups is the upper bound of pipeline.max-parallelism, Flink's
// (2^15): a key group must fit the 16 bits the runtime keeps per group.
const MaxKeyGroups = 1 << 15

func maxParallelismCheck(v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > MaxKeyGroups {
		return fmt.Errorf("expected an integer between 1 and %d (the number of key groups; %d is the upper bound, as in Flink)", MaxKeyGroups, MaxKeyGroups)
	}
	return nil
}

// SessionOptions lists the options a session accepts.
var SessionOptions = []OptionDef{
	{Key: "parallelism.default", Default: func() string { return strconv.Itoa(runtime.NumCPU()) },
		Description: "parallel subtasks of each operator (default: number of CPUs)", Check: intAtLeast(1)},
	{Key: "pipeline.max-parallelism", Default: func() string { return "128" },
		Description: "number of key groups (1 to 32768); the upper bound of parallelism", Check: maxParallelismCheck},
	{Key: "pipeline.name", Default: func() string { return "" },
		Description: "name of the next submitted job", Check: func(string) error { return nil }},
	{Key: "execution.batch-size", Default: func() string { return "8192" },
		Description: "rows per Arrow record batch", Check: intAtLeast(1)},
	{Key: "execution.batch-linger", Default: func() string { return "200 ms" },
		Description: "flush a partial batch after this long", Check: durationCheck},
	{Key: "table.local-time-zone", Default: func() string { return "UTC" },
		Description: "zone of TIMESTAMP_LTZ values and of CURRENT_DATE/LOCALTIMESTAMP (an IANA name such as Europe/Berlin, or GMT+08:00); UTC unless set (Flink's default is the system zone; streamsql's is deterministic)",
		Check:       func(v string) error { _, err := LoadZone(v); return err }},
	{Key: "execution.runtime-mode", Default: func() string { return "streaming" },
		Description: "only streaming is supported", Check: enumOf("streaming")},
	// Checkpointing and recovery (Flink's keys).
	{Key: "execution.checkpointing.interval", Default: func() string { return "" },
		Description: "take a checkpoint this often; unset means checkpointing is off", Check: durationCheck},
	{Key: "execution.checkpointing.mode", Default: func() string { return "EXACTLY_ONCE" },
		Description: "EXACTLY_ONCE (aligned barriers) or AT_LEAST_ONCE (no alignment)", Check: enumOf("EXACTLY_ONCE", "AT_LEAST_ONCE")},
	{Key: "execution.checkpointing.timeout", Default: func() string { return "10 min" },
		Description: "a checkpoint not complete after this long is aborted", Check: durationCheck},
	{Key: "execution.checkpointing.min-pause", Default: func() string { return "0 ms" },
		Description: "minimal pause between the end of a checkpoint and the start of the next", Check: durationOrZero},
	{Key: "execution.checkpointing.max-concurrent-checkpoints", Default: func() string { return "1" },
		Description: "periodic checkpoints in flight at once (savepoints and the final checkpoint are not counted); 1 with unaligned checkpoints, as in Flink", Check: intAtLeast(1)},
	{Key: "pipeline.auto-watermark-interval", Default: func() string { return "200 ms" },
		Description: "emit a source's watermark after a batch when this long passed since the last one (0: after every batch); rows behind the watermark always get it first (docs/windows.md)",
		Check:       durationOrZero},
	{Key: "table.exec.source.idle-timeout", Default: func() string { return "0 ms" },
		Description: "a source subtask that produced no rows for this long (processing time) is marked idle: it stops holding back the watermark downstream until its next row (0: never idle; docs/windows.md)",
		Check:       durationOrZero},
	{Key: "table.exec.state.ttl", Default: func() string { return "0 ms" },
		Description: "keyed state (group aggregation) not updated for longer than this (processing time) is dropped without a retraction, as in Flink; 0 keeps it forever",
		Check:       durationOrZero},
	{Key: "state.backend.type", Default: func() string { return "hashmap" },
		Description: "where keyed state of joins, TopN and window ranking lives: hashmap (in memory) or rocksdb (also 'pebble': hot keys in memory within state.backend.rocksdb.memory.fixed-per-slot, cold keys in a local Pebble DB; docs/state.md)",
		Check:       enumOf("hashmap", "rocksdb", "pebble")},
	{Key: "state.backend.rocksdb.memory.fixed-per-slot", Default: func() string { return "" },
		Description: "memory of each stateful operator subtask's rocksdb state (hot cache, Pebble block cache and memtables), Flink's memory size syntax ('1 gb'); unset: 512 mb",
		Check:       memorySizeCheck},
	{Key: "state.backend.rocksdb.localdir", Default: func() string { return "" },
		Description: "directory of the rocksdb backend's local files (one spill directory per operator subtask, deleted when it closes); unset: the system temporary directory",
		Check:       pathCheck},
	{Key: "state.backend.rocksdb.compression.per.level", Default: func() string { return "" },
		Description: "compression of the checkpointed state's table files per LSM level, ';'-separated: NO_COMPRESSION, SNAPPY_COMPRESSION or ZSTD_COMPRESSION (level 0, where each checkpoint's delta goes, takes the first; deeper levels the last given). Unset: SNAPPY_COMPRESSION, but a delta whose sample Snappy would not shrink by a third is written uncompressed (docs/state.md)",
		Check:       compressionList},
	{Key: "execution.checkpointing.unaligned.enabled", Default: func() string { return "false" },
		Description: "true: checkpoint barriers overtake the batches queued at each operator's input, which are stored with the checkpoint (channel state) and replayed on restore; checkpoints complete fast under backpressure and stay exactly-once. Savepoints and the final checkpoint stay aligned",
		Check:       enumOf("true", "false")},
	{Key: "execution.checkpointing.unaligned", Default: func() string { return "false" },
		Description: "older name of execution.checkpointing.unaligned.enabled", Check: enumOf("true", "false")},
	{Key: "execution.checkpointing.aligned-checkpoint-timeout", Default: func() string { return "0 ms" },
		Description: "an aligned checkpoint whose alignment at an operator takes longer turns unaligned there (0: never)", Check: durationOrZero},
	{Key: "execution.checkpointing.tolerable-failed-checkpoints", Default: func() string { return "0" },
		Description: "consecutive failed checkpoints tolerated before the job fails", Check: intAtLeast(0)},
	{Key: "execution.checkpointing.restore-fallback", Default: func() string { return "false" },
		Description: "true: when the newest complete checkpoint of a job directory fails verification, restore an older one (its sinks may have committed the newer one: duplicates possible); false: fail",
		Check:       enumOf("true", "false")},
	{Key: "execution.checkpointing.externalized-checkpoint-retention", Default: func() string { return "DELETE_ON_CANCELLATION" },
		Description: "whether checkpoints survive a cancelled or finished job", Check: enumOf("DELETE_ON_CANCELLATION", "RETAIN_ON_CANCELLATION", "NO_EXTERNALIZED_CHECKPOINTS")},
	{Key: "state.checkpoints.dir", Default: func() string { return "" },
		Description: "directory (path or file:// URI) for checkpoints: <dir>/<job-id>/chk-<n>", Check: pathCheck},
	{Key: "state.checkpoints.num-retained", Default: func() string { return "1" },
		Description: "complete checkpoints kept per job", Check: intAtLeast(1)},
	{Key: "state.savepoints.dir", Default: func() string { return "" },
		Description: "default directory of savepoints: <dir>/savepoint-<job id prefix>-<random>", Check: pathCheck},
	{Key: "execution.savepoint.path", Default: func() string { return "" },
		Description: "restore the next job from this checkpoint (chk-<n> or job directory)", Check: pathCheck},
	{Key: "restart-strategy.type", Default: func() string { return "" },
		Description: "none, fixed-delay, exponential-delay or failure-rate (default: exponential-delay with checkpointing, none without)",
		Check:       enumOf("none", "off", "disable", "fixed-delay", "fixeddelay", "exponential-delay", "exponentialdelay", "failure-rate", "failurerate")},
	{Key: "restart-strategy.fixed-delay.attempts", Default: func() string { return "1" },
		Description: "restarts before the job fails", Check: intAtLeast(0)},
	{Key: "restart-strategy.fixed-delay.delay", Default: func() string { return "1 s" },
		Description: "delay before each restart", Check: durationOrZero},
	{Key: "restart-strategy.exponential-delay.initial-backoff", Default: func() string { return "1 s" },
		Description: "delay before the first restart", Check: durationOrZero},
	{Key: "restart-strategy.exponential-delay.max-backoff", Default: func() string { return "1 min" },
		Description: "upper bound of the delay", Check: durationOrZero},
	{Key: "restart-strategy.exponential-delay.backoff-multiplier", Default: func() string { return "1.5" },
		Description: "delay growth per restart", Check: floatAtLeast(1)},
	{Key: "restart-strategy.exponential-delay.reset-backoff-threshold", Default: func() string { return "1 h" },
		Description: "running this long without failure resets the delay", Check: durationCheck},
	{Key: "restart-strategy.exponential-delay.jitter-factor", Default: func() string { return "0.1" },
		Description: "random part of the delay (0 to 1)", Check: floatBetween(0, 1)},
	{Key: "restart-strategy.exponential-delay.attempts-before-reset-backoff", Default: func() string { return "2147483647" },
		Description: "restarts before the job fails", Check: intAtLeast(0)},
	{Key: "restart-strategy.failure-rate.max-failures-per-interval", Default: func() string { return "1" },
		Description: "failures tolerated within the interval", Check: intAtLeast(1)},
	{Key: "restart-strategy.failure-rate.failure-rate-interval", Default: func() string { return "1 min" },
		Description: "the interval of the failure rate", Check: durationCheck},
	{Key: "restart-strategy.failure-rate.delay", Default: func() string { return "1 s" },
		Description: "delay before each restart", Check: durationOrZero},
	{Key: "table.optimizer.reuse-source-enabled", Default: func() string { return "true" },
		Description: "statements of a statement set that read the same table with the same options share one source task (the table is read once)", Check: enumOf("true", "false")},
	{Key: "table.optimizer.agg-phase-strategy", Default: func() string { return "AUTO" },
		Description: "how a GROUP BY aggregation runs: TWO_PHASE folds each batch into one partial row per key before the shuffle (LocalGroupAggregate, then GlobalGroupAggregate: fewer rows cross the exchange, a hot key is spread); ONE_PHASE shuffles every row; AUTO is TWO_PHASE where the input is shuffled between parallel subtasks and every aggregate merges exactly (COUNT, integer or DECIMAL SUM/AVG, MIN/MAX over an insert-only input)",
		Check:       enumOf("AUTO", "ONE_PHASE", "TWO_PHASE")},
	{Key: "table.optimizer.reuse-sub-plan-enabled", Default: func() string { return "true" },
		Description: "an aggregation the statements compute more than once over the same input is planned, run and checkpointed once", Check: enumOf("true", "false")},
	{Key: "execution.savepoint.ignore-unclaimed-state", Default: func() string { return "false" },
		Description: "restore even when the savepoint holds state of operators the job no longer has (that state is dropped)", Check: enumOf("true", "false")},
	// The REST API of the process (job control: streamsql list, savepoint,
	// stop, cancel). They take effect when the process starts (--set, -i).
	{Key: "rest.address", Default: func() string { return "127.0.0.1" },
		Description: "address the REST API binds to; any non-loopback address requires rest.token", Check: func(v string) error {
			if strings.TrimSpace(v) == "" {
				return fmt.Errorf("expected a host name or IP address")
			}
			return nil
		}},
	{Key: "rest.port", Default: func() string { return "0" },
		Description: "port of the REST API (0: any free port; the job registry tells local clients)", Check: intBetween(0, 65535)},
	{Key: "rest.token", Default: func() string { return "" }, Secret: true,
		Description: "bearer token the REST API requires (at least 16 characters; default: $STREAMSQL_REST_TOKEN)", Check: func(v string) error {
			if v != "" && len(v) < 16 {
				return fmt.Errorf("expected at least 16 characters")
			}
			return nil
		}},
	{Key: "sql-client.execution.result-mode", Default: func() string { return "tableau" },
		Description: "how the shell shows SELECT results: tableau (changelog rows) or table (final table at the end)", Check: enumOf("tableau", "table", "changelog")},
	{Key: "sql-client.execution.max-table-result.rows", Default: func() string { return "1000000" },
		Description: "rows a SELECT keeps for the final table view", Check: intAtLeast(1)},
}

// Options is a session's option values. Keys are case-sensitive, as in Flink.
type Options struct {
	set    map[string]string
	warned map[string]bool // Flink-only keys already warned about (see flinkoptions.go)
}

// NewOptions returns options at their defaults.
func NewOptions() *Options { return &Options{set: map[string]string{}, warned: map[string]bool{}} }

func lookupDef(key string) (*OptionDef, bool) {
	for i := range SessionOptions {
		if SessionOptions[i].Key == key {
			return &SessionOptions[i], true
		}
	}
	return nil, false
}

// OptionKeys returns every known key.
func OptionKeys() []string {
	keys := make([]string, len(SessionOptions))
	for i, d := range SessionOptions {
		keys[i] = d.Key
	}
	return keys
}

// Set validates and sets key. Errors name the key, and for an unknown key
// suggest the closest known one. A Flink key that streamsql accepts without
// acting on it (see flinkoptions.go) is set too; SetNotice tells about it.
func (o *Options) Set(key, value string) error {
	_, err := o.SetNotice(key, value)
	return err
}

// SetNotice is Set, and also returns a warning for a key that streamsql
// accepts but does not act on: the first time that key is set in these
// options, "" afterwards and for every other key.
func (o *Options) SetNotice(key, value string) (notice string, err error) {
	if _, known := lookupDef(key); known {
		return "", o.setKnown(key, value)
	}
	if ig, ok := lookupIgnored(key); ok {
		if err := ig.check(value); err != nil {
			return "", fmt.Errorf("invalid value '%s' for option '%s': %v", value, key, err)
		}
		o.set[key] = value
		if o.warned[key] {
			return "", nil
		}
		o.warned[key] = true
		return fmt.Sprintf("streamsql accepts Flink's option '%s' but does not act on it: %s", key, ig.why), nil
	}
	return "", o.setKnown(key, value)
}

func (o *Options) setKnown(key, value string) error {
	d, ok := lookupDef(key)
	if !ok {
		msg := fmt.Sprintf("unknown option '%s'", key)
		if s := Suggest(key, append(OptionKeys(), exactIgnoredKeys()...)); s != "" {
			msg += fmt.Sprintf("; did you mean '%s'?", s)
		}
		return fmt.Errorf("%s (SET lists the known options)", msg)
	}
	if err := d.Check(value); err != nil {
		shown := value
		if d.Secret {
			shown = mask(value)
		}
		return fmt.Errorf("invalid value '%s' for option '%s': %v", shown, key, err)
	}
	o.set[key] = value
	return nil
}

// Reset restores key (or every option when key is "") to its default.
func (o *Options) Reset(key string) error {
	if key == "" {
		o.set = map[string]string{}
		return nil
	}
	if _, ok := lookupIgnored(key); ok {
		delete(o.set, key)
		return nil
	}
	if _, ok := lookupDef(key); !ok {
		msg := fmt.Sprintf("unknown option '%s'", key)
		if s := Suggest(key, OptionKeys()); s != "" {
			msg += fmt.Sprintf("; did you mean '%s'?", s)
		}
		return fmt.Errorf("%s", msg)
	}
	delete(o.set, key)
	return nil
}

// Get returns the value of key (its default when unset).
func (o *Options) Get(key string) string {
	if v, ok := o.set[key]; ok {
		return v
	}
	if d, ok := lookupDef(key); ok {
		return d.Default()
	}
	return ""
}

// IsSet reports whether key was set in this session.
func (o *Options) IsSet(key string) bool { _, ok := o.set[key]; return ok }

// Float returns a number option (validated on Set).
// Bool returns a true/false option (any case, spaces around ignored).
func (o *Options) Bool(key string) bool {
	return strings.EqualFold(strings.TrimSpace(o.Get(key)), "true")
}

func (o *Options) Float(key string) float64 {
	f, _ := strconv.ParseFloat(strings.TrimSpace(o.Get(key)), 64)
	return f
}

// Path returns a path option with a file:// prefix removed.
func (o *Options) Path(key string) string {
	return strings.TrimPrefix(strings.TrimSpace(o.Get(key)), "file://")
}

// Int returns an integer option (validated on Set).
func (o *Options) Int(key string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(o.Get(key)))
	return n
}

// Duration returns a duration option (validated on Set).
func (o *Options) Duration(key string) time.Duration {
	d, _ := parseFlinkDuration(o.Get(key))
	return d
}

// MemorySize returns a memory size option in bytes (validated on Set; 0
// when unset or empty).
func (o *Options) MemorySize(key string) int64 {
	n, _ := ParseMemorySize(o.Get(key))
	return n
}

// List returns (key, value) pairs of every option, and of the Flink keys
// without effect that were set, sorted by key.
func (o *Options) List() [][2]string {
	var out [][2]string
	for _, d := range SessionOptions {
		v := o.Get(d.Key)
		if d.Secret {
			v = mask(v)
		}
		out = append(out, [2]string{d.Key, v})
	}
	for k, v := range o.set {
		if _, known := lookupDef(k); known {
			continue
		}
		if _, ok := lookupIgnored(k); ok {
			out = append(out, [2]string{k, v})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// parseFlinkDuration parses Flink's duration syntax: a number with an
// optional unit (ms, s, min, h, d and their long forms), spaces allowed;
// a bare number is milliseconds.
func parseFlinkDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("expected a duration such as '500 ms', '1 s', '1 min'")
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("expected a duration such as '500 ms', '1 s', '1 min'")
	}
	unit := strings.TrimSpace(t[i:])
	var u time.Duration
	switch unit {
	case "", "ms", "milli", "millis", "millisecond", "milliseconds":
		u = time.Millisecond
	case "s", "sec", "secs", "second", "seconds":
		u = time.Second
	case "min", "m", "minute", "minutes":
		u = time.Minute
	case "h", "hour", "hours":
		u = time.Hour
	case "d", "day", "days":
		u = 24 * time.Hour
	case "us", "micro", "micros", "microsecond", "microseconds":
		u = time.Microsecond
	case "ns", "nano", "nanos", "nanosecond", "nanoseconds":
		u = time.Nanosecond
	default:
		return 0, fmt.Errorf("unknown duration unit '%s' (use ms, s, min, h or d)", unit)
	}
	return time.Duration(n) * u, nil
}
