package catalog

// Connector option schemas and their validation (CREATE TABLE ... WITH (...)).
//
// Each connector declares its option keys with Flink's spelling: exact keys
// ("rows-per-second") and per-column families written with a '#' where the
// column name goes ("fields.#.kind"). Format options ("csv.*", "json.*") are
// declared once per format and are accepted only by connectors that take a
// 'format' option, and only when that format is selected.
//
// ValidateTable checks keys, values, required options and the per-connector
// rules that span several options (e.g. a datagen sequence needs start and
// end). It never touches the outside world (no files, no sockets).

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// OptionError is a problem with one connector option. Key is the offending
// option key as written ("" when the problem is not about one key, e.g. a
// missing 'connector'), so that the caller can point at it in the SQL text.
type OptionError struct {
	Key string
	Msg string
}

func (e *OptionError) Error() string { return e.Msg }

// ValueKind is how an option's value is parsed.
type ValueKind uint8

const (
	ValString   ValueKind = iota // any text
	ValInt                       // an integer within [Min, Max]
	ValFloat                     // a floating-point number within [Min, Max]
	ValBool                      // true or false (case-insensitive)
	ValDuration                  // Flink's duration syntax, see ParseDuration
	ValEnum                      // one of Enum (case-insensitive)
	ValChar                      // a single character; backslash escapes allowed (\t, \\, \uXXXX)
	ValMemory                    // Flink's memory size syntax, see ParseMemorySize
	ValColumn                    // a value of the column's type (families only): number or timestamp literal
)

// OptionSpec describes one option key.
type OptionSpec struct {
	// Key is the exact key, or a family pattern with '#' standing for a
	// column name ("fields.#.min").
	Key      string
	Kind     ValueKind
	Enum     []string
	Min, Max float64 // ValInt/ValFloat bounds (both 0: unbounded)
	Required bool
	Default  string // documentation only; connectors apply their defaults
}

// ConnectorSpec is a connector's option schema and capabilities.
type ConnectorSpec struct {
	Name        string
	Source      bool
	Sink        bool
	SinkUpdates bool // the sink accepts -U/+U/-D rows (see also TableSinkAcceptsUpdates)
	Options     []OptionSpec
	// Check validates rules spanning several options; called after every
	// key and value passed the per-option checks.
	Check func(t *Table) error
}

// FormatNames are the formats the 'format' option accepts.
var FormatNames = []string{"csv", "json"}

var formatOptions = map[string][]OptionSpec{
	"csv": {
		{Key: "csv.field-delimiter", Kind: ValChar, Default: ","},
		{Key: "csv.disable-quote-character", Kind: ValBool, Default: "false"},
		{Key: "csv.quote-character", Kind: ValChar, Default: `"`},
		{Key: "csv.allow-comments", Kind: ValBool, Default: "false"},
		{Key: "csv.ignore-parse-errors", Kind: ValBool, Default: "false"},
		{Key: "csv.array-element-delimiter", Kind: ValString, Default: ";"},
		{Key: "csv.escape-character", Kind: ValChar},
		{Key: "csv.null-literal", Kind: ValString},
		{Key: "csv.write-bigdecimal-in-scientific-notation", Kind: ValBool, Default: "true"},
	},
	"json": {
		{Key: "json.fail-on-missing-field", Kind: ValBool, Default: "false"},
		{Key: "json.ignore-parse-errors", Kind: ValBool, Default: "false"},
		{Key: "json.timestamp-format.standard", Kind: ValEnum, Enum: []string{"SQL", "ISO-8601"}, Default: "SQL"},
		{Key: "json.map-null-key.mode", Kind: ValEnum, Enum: []string{"FAIL", "DROP", "LITERAL"}, Default: "FAIL"},
		{Key: "json.map-null-key.literal", Kind: ValString, Default: "null"},
		{Key: "json.encode.decimal-as-plain-number", Kind: ValBool, Default: "false"},
		{Key: "json.encode.ignore-null-fields", Kind: ValBool, Default: "false"},
	},
}

var connectorSpecs = map[string]*ConnectorSpec{}

func registerConnector(s *ConnectorSpec) {
	s.Options = append([]OptionSpec{{Key: "connector", Kind: ValString, Required: true}}, s.Options...)
	connectorSpecs[s.Name] = s
}

func init() {
	registerConnector(&ConnectorSpec{
		Name: "datagen", Source: true,
		Options: []OptionSpec{
			{Key: "rows-per-second", Kind: ValInt, Min: 0, Max: math.MaxInt64, Default: "10000"},
			{Key: "number-of-rows", Kind: ValInt, Min: 0, Max: math.MaxInt64},
			{Key: "seed", Kind: ValInt, Min: math.MinInt64, Max: math.MaxInt64, Default: "0"},
			{Key: "scan.parallelism", Kind: ValInt, Min: 1, Max: 1 << 15},
			{Key: "fields.#.kind", Kind: ValEnum, Enum: []string{"random", "sequence"}, Default: "random"},
			{Key: "fields.#.min", Kind: ValColumn},
			{Key: "fields.#.max", Kind: ValColumn},
			{Key: "fields.#.max-past", Kind: ValDuration, Default: "0"},
			{Key: "fields.#.length", Kind: ValInt, Min: 0, Max: 1 << 20, Default: "100"},
			{Key: "fields.#.var-len", Kind: ValBool, Default: "false"},
			{Key: "fields.#.start", Kind: ValColumn},
			{Key: "fields.#.end", Kind: ValColumn},
			{Key: "fields.#.null-rate", Kind: ValFloat, Min: 0, Max: 1, Default: "0.0"},
		},
		Check: checkDatagen,
	})
	// nexmark: the event generator of the Flink Nexmark benchmark, with its
	// option keys (nexmark-flink's NexmarkSourceOptions). The rate options
	// set event time (dateTime), not the speed: events are emitted as fast
	// as possible, as with Flink's default max-emit-speed.
	registerConnector(&ConnectorSpec{
		Name: "nexmark", Source: true,
		Options: []OptionSpec{
			{Key: "first-event.rate", Kind: ValInt, Min: 1, Max: 1e9, Default: "10000"},
			{Key: "next-event.rate", Kind: ValInt, Min: 1, Max: 1e9, Default: "10000"},
			{Key: "events.num", Kind: ValInt, Min: 0, Max: math.MaxInt64, Default: "0"},
			{Key: "person.proportion", Kind: ValInt, Min: 0, Max: 1e6, Default: "1"},
			{Key: "auction.proportion", Kind: ValInt, Min: 0, Max: 1e6, Default: "3"},
			{Key: "bid.proportion", Kind: ValInt, Min: 0, Max: 1e6, Default: "46"},
			{Key: "person.avg-size", Kind: ValMemory, Default: "200b"},
			{Key: "auction.avg-size", Kind: ValMemory, Default: "500b"},
			{Key: "bid.avg-size", Kind: ValMemory, Default: "100b"},
			{Key: "bid.hot-ratio.auctions", Kind: ValInt, Min: 1, Max: 1e6, Default: "2"},
			{Key: "bid.hot-ratio.bidders", Kind: ValInt, Min: 1, Max: 1e6, Default: "4"},
			{Key: "auction.hot-ratio.sellers", Kind: ValInt, Min: 1, Max: 1e6, Default: "4"},
			{Key: "rate.shape", Kind: ValEnum, Enum: []string{"SQUARE", "SINE"}, Default: "SQUARE"},
			{Key: "rate.period", Kind: ValDuration, Default: "10 min"},
			{Key: "rate.limited", Kind: ValBool, Default: "false"},
			{Key: "max-emit-speed", Kind: ValBool, Default: "true"},
			{Key: "keep-alive", Kind: ValBool, Default: "false"},
			{Key: "stop-at", Kind: ValInt, Min: -1, Max: math.MaxInt64, Default: "-1"},
			{Key: "seed", Kind: ValInt, Min: math.MinInt64, Max: math.MaxInt64, Default: "0"},
			{Key: "scan.parallelism", Kind: ValInt, Min: 1, Max: 1 << 15},
		},
		Check: checkNexmark,
	})
	registerConnector(&ConnectorSpec{
		Name: "filesystem", Source: true, Sink: true, SinkUpdates: true,
		Options: []OptionSpec{
			{Key: "path", Kind: ValString, Required: true},
			{Key: "format", Kind: ValEnum, Enum: FormatNames, Required: true},
			{Key: "sink.rolling-policy.file-size", Kind: ValMemory, Default: "128MB"},
			{Key: "sink.rolling-policy.rollover-interval", Kind: ValDuration, Default: "30 min"},
			{Key: "sink.rolling-policy.check-interval", Kind: ValDuration, Default: "1 min"},
			{Key: "sink.rolling-policy.inactivity-interval", Kind: ValDuration},
			{Key: "sink.parallelism", Kind: ValInt, Min: 1, Max: 1 << 15},
			{Key: "scan.parallelism", Kind: ValInt, Min: 1, Max: 1 << 15},
			{Key: "partition.default-name", Kind: ValString, Default: "__DEFAULT_PARTITION__"},
			{Key: "lookup.join.cache.ttl", Kind: ValDuration, Default: "60 min"},
			{Key: "sink.partition-commit.trigger", Kind: ValEnum, Enum: []string{"process-time", "partition-time"}, Default: "process-time"},
			{Key: "sink.partition-commit.delay", Kind: ValDuration, Default: "0 s"},
			{Key: "sink.partition-commit.policy.kind", Kind: ValString},
			{Key: "sink.partition-commit.success-file.name", Kind: ValString, Default: "_SUCCESS"},
			{Key: "sink.partition-commit.watermark-time-zone", Kind: ValString, Default: "UTC"},
			{Key: "partition.time-extractor.kind", Kind: ValEnum, Enum: []string{"default", "custom"}, Default: "default"},
			{Key: "partition.time-extractor.class", Kind: ValString},
			{Key: "partition.time-extractor.timestamp-pattern", Kind: ValString},
			{Key: "partition.time-extractor.timestamp-formatter", Kind: ValString, Default: "yyyy-MM-dd HH:mm:ss"},
		},
		Check: checkFilesystem,
	})
	registerConnector(&ConnectorSpec{
		Name: "socket", Source: true,
		Options: []OptionSpec{
			{Key: "hostname", Kind: ValString, Required: true},
			{Key: "port", Kind: ValInt, Min: 0, Max: 65535, Required: true},
			{Key: "byte-delimiter", Kind: ValInt, Min: 0, Max: 255, Default: "10"},
			{Key: "format", Kind: ValEnum, Enum: FormatNames},
		},
		Check: func(t *Table) error {
			if _, ok := t.Option("format"); ok {
				return nil
			}
			if len(t.Schema) != 1 || t.Schema[0].Type.Kind != KindString {
				return &OptionError{Key: "connector", Msg: fmt.Sprintf(
					"connector 'socket' without a 'format' option needs exactly one STRING column (one row per line), but table '%s' has columns (%s); add 'format' = 'csv' or 'json' to parse lines into columns",
					t.Name, schemaSummary(t.Schema))}
			}
			return nil
		},
	})
	registerConnector(&ConnectorSpec{
		Name: "print", Sink: true, SinkUpdates: true,
		Options: []OptionSpec{
			{Key: "print-identifier", Kind: ValString},
			{Key: "standard-error", Kind: ValBool, Default: "false"},
			{Key: "sink.parallelism", Kind: ValInt, Min: 1, Max: 1 << 15},
		},
	})
	registerConnector(&ConnectorSpec{Name: "blackhole", Sink: true, SinkUpdates: true})
}

func schemaSummary(s Schema) string {
	parts := make([]string, len(s))
	for i, c := range s {
		parts[i] = c.Name + " " + c.Type.String()
	}
	return strings.Join(parts, ", ")
}

// LookupConnector returns the spec of the named connector.
func LookupConnector(name string) (*ConnectorSpec, bool) {
	s, ok := connectorSpecs[name]
	return s, ok
}

// ConnectorNames returns the known connectors, sorted.
func ConnectorNames() []string {
	out := make([]string, 0, len(connectorSpecs))
	for n := range connectorSpecs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ConnectorCaps reports whether the connector can be a source, a sink, and
// whether its sink accepts updating input. ok is false for unknown names.
func ConnectorCaps(name string) (source, sink, sinkAcceptsUpdates bool, ok bool) {
	s, ok := connectorSpecs[name]
	if !ok {
		return false, false, false, false
	}
	return s.Source, s.Sink, s.SinkUpdates, true
}

// TableSinkAcceptsUpdates refines ConnectorCaps with the table's options: a
// filesystem sink accepts updating input only with 'format' = 'json' (each
// line then carries an "op" field); CSV has no place for the change kind.
func TableSinkAcceptsUpdates(t *Table) bool {
	_, _, upd, ok := ConnectorCaps(t.Connector())
	if !ok || !upd {
		return false
	}
	if t.Connector() == "filesystem" {
		return strings.EqualFold(t.OptionOr("format", ""), "json")
	}
	return true
}

// ValidateTable checks t's connector options. It returns the first problem
// found (in option order) as an *OptionError.
func ValidateTable(t *Table) error {
	name, ok := t.Option("connector")
	if !ok {
		return &OptionError{Msg: fmt.Sprintf("table '%s' has no 'connector' option (known connectors: %s)",
			t.Name, strings.Join(ConnectorNames(), ", "))}
	}
	spec, ok := connectorSpecs[name]
	if !ok {
		msg := fmt.Sprintf("unknown connector '%s' (known connectors: %s)", name, strings.Join(ConnectorNames(), ", "))
		if s := Suggest(name, ConnectorNames()); s != "" {
			msg += fmt.Sprintf("; did you mean '%s'?", s)
		}
		return &OptionError{Key: "connector", Msg: msg}
	}
	// The selected format, if the connector takes one.
	format := ""
	for _, o := range spec.Options {
		if o.Key == "format" {
			format, _ = t.Option("format")
			format = strings.ToLower(format)
		}
	}
	seen := map[string]bool{}
	for _, o := range t.Options {
		if seen[o.Key] {
			return &OptionError{Key: o.Key, Msg: fmt.Sprintf("option '%s' is set twice", o.Key)}
		}
		seen[o.Key] = true
		os, col, err := lookupOption(spec, t, o.Key, format)
		if err != nil {
			return err
		}
		if err := checkValue(os, col, o); err != nil {
			return err
		}
	}
	for _, os := range spec.Options {
		if os.Required {
			if _, ok := t.Option(os.Key); !ok {
				msg := fmt.Sprintf("missing required option '%s' for connector '%s'", os.Key, spec.Name)
				if os.Kind == ValEnum {
					msg += fmt.Sprintf(" (one of %s)", quoteList(os.Enum))
				}
				return &OptionError{Key: os.Key, Msg: msg}
			}
		}
	}
	if spec.Check != nil {
		if err := spec.Check(t); err != nil {
			return err
		}
	}
	switch format {
	case "csv":
		return checkCSV(t)
	case "json":
		return checkJSON(t)
	}
	return nil
}

// lastSet returns whichever of the keys comes last in t's options: the one
// that made a combination impossible, where an error points.
func lastSet(t *Table, keys ...string) string {
	last := ""
	for _, o := range t.Options {
		for _, k := range keys {
			if o.Key == k {
				last = k
			}
		}
	}
	return last
}

// showChar renders a one-byte option value for a message.
func showChar(c byte) string {
	switch c {
	case '\n':
		return `'\n'`
	case '\r':
		return `'\r'`
	case '\t':
		return `'\t'`
	}
	return "'" + string(c) + "'"
}

// checkCSV rejects csv.* combinations that cannot read or write a file
// (each value alone passed checkValue): records are lines, a field must be
// told apart from a quoted one and from an escape, and a null literal must
// be readable back.
func checkCSV(t *Table) error {
	char := func(key string, def byte) (byte, bool) {
		v, ok := t.Option(key)
		if !ok {
			return def, false
		}
		c, _ := ParseChar(v) // checked by checkValue
		return c, true
	}
	delim, _ := char("csv.field-delimiter", ',')
	quote, hasQuote := char("csv.quote-character", '"')
	esc, hasEsc := char("csv.escape-character", 0)
	disabled := false
	if v, ok := t.Option("csv.disable-quote-character"); ok {
		disabled, _ = ParseBool(v)
	}
	lineBreak := func(c byte) bool { return c == '\n' || c == '\r' }
	bad := func(key, msg string) error { return &OptionError{Key: key, Msg: msg} }
	switch {
	case disabled && hasQuote:
		k := lastSet(t, "csv.quote-character", "csv.disable-quote-character")
		return bad(k, "options 'csv.quote-character' and 'csv.disable-quote-character' = 'true' cannot be combined: set one of them")
	case lineBreak(delim):
		return bad("csv.field-delimiter", fmt.Sprintf("option 'csv.field-delimiter' cannot be a line break (%s): records are lines", showChar(delim)))
	case !disabled && lineBreak(quote):
		return bad("csv.quote-character", fmt.Sprintf("option 'csv.quote-character' cannot be a line break (%s): records are lines", showChar(quote)))
	case !disabled && delim == quote:
		k := lastSet(t, "csv.field-delimiter", "csv.quote-character")
		return bad(k, fmt.Sprintf("options 'csv.field-delimiter' and 'csv.quote-character' are both %s: set one of them to another character (or 'csv.disable-quote-character' = 'true')", showChar(delim)))
	case hasEsc && lineBreak(esc):
		return bad("csv.escape-character", fmt.Sprintf("option 'csv.escape-character' cannot be a line break (%s): records are lines", showChar(esc)))
	case hasEsc && esc == delim:
		k := lastSet(t, "csv.escape-character", "csv.field-delimiter")
		return bad(k, fmt.Sprintf("options 'csv.escape-character' and 'csv.field-delimiter' are both %s: set one of them to another character", showChar(esc)))
	case hasEsc && !disabled && esc == quote:
		k := lastSet(t, "csv.escape-character", "csv.quote-character")
		return bad(k, fmt.Sprintf("options 'csv.escape-character' and 'csv.quote-character' are both %s: a doubled quote already stands for a quote inside a quoted field; leave 'csv.escape-character' out", showChar(esc)))
	}
	if null, ok := t.Option("csv.null-literal"); ok {
		switch {
		case strings.ContainsAny(null, "\n\r"):
			return bad("csv.null-literal", "option 'csv.null-literal' cannot contain a line break: records are lines")
		case !hasEsc && strings.IndexByte(null, delim) >= 0:
			return bad("csv.null-literal", fmt.Sprintf("option 'csv.null-literal' ('%s') contains the field delimiter %s: it would be written as two fields and never read as NULL", null, showChar(delim)))
		}
	}
	return nil
}

// checkJSON rejects json.* combinations that contradict each other.
func checkJSON(t *Table) error {
	on := func(key string) bool {
		v, ok := t.Option(key)
		b, _ := ParseBool(v)
		return ok && b
	}
	if on("json.fail-on-missing-field") && on("json.ignore-parse-errors") {
		// As in Flink: a missing field would fail the job and be skipped at once.
		return &OptionError{Key: lastSet(t, "json.fail-on-missing-field", "json.ignore-parse-errors"),
			Msg: "options 'json.fail-on-missing-field' and 'json.ignore-parse-errors' cannot both be 'true': set one of them"}
	}
	return nil
}

// lookupOption finds the spec of key; for a family key it also returns the
// column it names.
func lookupOption(spec *ConnectorSpec, t *Table, key, format string) (*OptionSpec, *Column, error) {
	for i := range spec.Options {
		if spec.Options[i].Key == key {
			return &spec.Options[i], nil, nil
		}
	}
	// Families: prefix.#.suffix
	for i := range spec.Options {
		os := &spec.Options[i]
		hash := strings.IndexByte(os.Key, '#')
		if hash < 0 {
			continue
		}
		prefix, suffix := os.Key[:hash], os.Key[hash+1:]
		if !strings.HasPrefix(key, prefix) || !strings.HasSuffix(key, suffix) || len(key) <= len(prefix)+len(suffix) {
			continue
		}
		colName := key[len(prefix) : len(key)-len(suffix)]
		idx := t.Schema.Index(colName)
		if idx < 0 {
			msg := fmt.Sprintf("option '%s' refers to column '%s', which is not a column of table '%s' (columns: %s)",
				key, colName, t.Name, strings.Join(t.Schema.Names(), ", "))
			if s := Suggest(colName, t.Schema.Names()); s != "" {
				msg += fmt.Sprintf("; did you mean '%s%s%s'?", prefix, s, suffix)
			}
			return nil, nil, &OptionError{Key: key, Msg: msg}
		}
		return os, &t.Schema[idx], nil
	}
	// Format options.
	for fname, fopts := range formatOptions {
		if !strings.HasPrefix(key, fname+".") {
			continue
		}
		if !connectorTakesFormat(spec) {
			return nil, nil, &OptionError{Key: key, Msg: fmt.Sprintf(
				"option '%s' is a %s format option, but connector '%s' takes no 'format'", key, fname, spec.Name)}
		}
		for i := range fopts {
			if fopts[i].Key == key {
				if format != fname {
					return nil, nil, &OptionError{Key: key, Msg: fmt.Sprintf(
						"option '%s' is only valid with 'format' = '%s'", key, fname)}
				}
				return &fopts[i], nil, nil
			}
		}
		var keys []string
		for _, o := range fopts {
			keys = append(keys, o.Key)
		}
		msg := fmt.Sprintf("unsupported option '%s' for format '%s' (supported: %s)", key, fname, strings.Join(keys, ", "))
		if s := Suggest(key, keys); s != "" {
			msg = fmt.Sprintf("unsupported option '%s' for format '%s'; did you mean '%s'?", key, fname, s)
		}
		return nil, nil, &OptionError{Key: key, Msg: msg}
	}
	// Unknown: suggest among the connector's keys (families instantiated
	// with the key's middle part when possible) and the format's keys.
	var cands []string
	for _, os := range spec.Options {
		cands = append(cands, os.Key)
		if h := strings.IndexByte(os.Key, '#'); h >= 0 {
			if parts := strings.Split(key, "."); len(parts) >= 3 {
				cands = append(cands, os.Key[:h]+strings.Join(parts[1:len(parts)-1], ".")+os.Key[h+1:])
			}
		}
	}
	if fopts, ok := formatOptions[format]; ok {
		for _, o := range fopts {
			cands = append(cands, o.Key)
		}
	}
	msg := fmt.Sprintf("unsupported option '%s' for connector '%s'", key, spec.Name)
	if s := Suggest(key, cands); s != "" {
		msg += fmt.Sprintf("; did you mean '%s'?", s)
	} else {
		var keys []string
		for _, os := range spec.Options {
			keys = append(keys, os.Key)
		}
		msg += fmt.Sprintf(" (supported: %s)", strings.Join(keys, ", "))
	}
	return nil, nil, &OptionError{Key: key, Msg: msg}
}

func connectorTakesFormat(spec *ConnectorSpec) bool {
	for _, o := range spec.Options {
		if o.Key == "format" {
			return true
		}
	}
	return false
}

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = "'" + v + "'"
	}
	return strings.Join(q, ", ")
}

func badValue(o Option, accepted string) error {
	return &OptionError{Key: o.Key, Msg: fmt.Sprintf("invalid value '%s' for option '%s': expected %s", o.Value, o.Key, accepted)}
}

func checkValue(os *OptionSpec, col *Column, o Option) error {
	v := o.Value
	switch os.Kind {
	case ValString:
		return nil
	case ValInt:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || (os.Min != 0 || os.Max != 0) && (float64(n) < os.Min || float64(n) > os.Max) {
			return badValue(o, intRange(os))
		}
	case ValFloat:
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) || (os.Min != 0 || os.Max != 0) && (f < os.Min || f > os.Max) {
			return badValue(o, fmt.Sprintf("a number between %g and %g", os.Min, os.Max))
		}
	case ValBool:
		if _, err := ParseBool(v); err != nil {
			return badValue(o, "'true' or 'false'")
		}
	case ValDuration:
		if _, err := ParseDuration(v); err != nil {
			return badValue(o, "a duration such as '500ms', '1 s', '1 min', '2 h' ("+err.Error()+")")
		}
	case ValEnum:
		for _, e := range os.Enum {
			if strings.EqualFold(e, v) {
				return nil
			}
		}
		return badValue(o, "one of "+quoteList(os.Enum))
	case ValChar:
		if _, err := ParseChar(v); err != nil {
			return badValue(o, "a single character (escapes such as '\\t' are allowed)")
		}
	case ValMemory:
		if _, err := ParseMemorySize(v); err != nil {
			return badValue(o, "a memory size such as '128MB', '1 kb', '1048576' ("+err.Error()+")")
		}
	case ValColumn:
		return checkColumnValue(col, o)
	}
	return nil
}

func intRange(os *OptionSpec) string {
	switch {
	case os.Min == 0 && os.Max >= math.MaxInt64:
		return "a non-negative integer"
	case os.Min <= math.MinInt64 && os.Max >= math.MaxInt64:
		return "an integer"
	case os.Min == 0 && os.Max == 0:
		return "an integer"
	}
	return fmt.Sprintf("an integer between %d and %d", int64(os.Min), int64(os.Max))
}

// checkColumnValue checks a datagen bound (min/max/start/end) against the
// column's type.
func checkColumnValue(col *Column, o Option) error {
	v := strings.TrimSpace(o.Value)
	switch col.Type.Kind {
	case KindInt:
		if _, err := strconv.ParseInt(v, 10, 32); err != nil {
			return badValue(o, "an INT value (column '"+col.Name+"' is INT)")
		}
	case KindBigInt:
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return badValue(o, "a BIGINT value (column '"+col.Name+"' is BIGINT)")
		}
	case KindDouble, KindDecimal:
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return badValue(o, "a number (column '"+col.Name+"' is "+col.Type.String()+")")
		}
	case KindString:
		// sequence bounds of a STRING column are numbers rendered as text
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return badValue(o, "an integer (a STRING sequence counts with integers)")
		}
	default:
		return &OptionError{Key: o.Key, Msg: fmt.Sprintf("option '%s' does not apply to column '%s' of type %s", o.Key, col.Name, col.Type)}
	}
	return nil
}

// checkDatagen applies datagen's rules that depend on column types and on
// several options together.
func checkDatagen(t *Table) error {
	for _, c := range t.Schema {
		p := "fields." + c.Name + "."
		opt := func(s string) (string, string, bool) {
			for _, o := range t.Options {
				if strings.EqualFold(o.Key, p+s) || (strings.HasPrefix(o.Key, "fields.") && strings.HasSuffix(o.Key, "."+s) &&
					strings.EqualFold(o.Key[len("fields."):len(o.Key)-len(s)-1], c.Name)) {
					return o.Key, o.Value, true
				}
			}
			return p + s, "", false
		}
		kindKey, kind, _ := opt("kind")
		seq := strings.EqualFold(kind, "sequence")
		notFor := func(s, why string) error {
			if k, _, ok := opt(s); ok {
				return &OptionError{Key: k, Msg: fmt.Sprintf("option '%s' does not apply to column '%s' of type %s%s", k, c.Name, c.Type, why)}
			}
			return nil
		}
		if seq {
			switch c.Type.Kind {
			case KindInt, KindBigInt, KindDouble, KindDecimal, KindString:
			default:
				return &OptionError{Key: kindKey, Msg: fmt.Sprintf("datagen cannot generate a sequence for column '%s' of type %s (sequences: INT, BIGINT, DOUBLE, DECIMAL, STRING)", c.Name, c.Type)}
			}
			sk, sv, sok := opt("start")
			ek, ev, eok := opt("end")
			if !sok {
				return &OptionError{Key: kindKey, Msg: fmt.Sprintf("missing option '%s' for the datagen sequence of column '%s'", sk, c.Name)}
			}
			if !eok {
				return &OptionError{Key: kindKey, Msg: fmt.Sprintf("missing option '%s' for the datagen sequence of column '%s'", ek, c.Name)}
			}
			s, _ := strconv.ParseFloat(strings.TrimSpace(sv), 64)
			e, _ := strconv.ParseFloat(strings.TrimSpace(ev), 64)
			if s > e {
				return &OptionError{Key: ek, Msg: fmt.Sprintf("option '%s' (%s) must not be less than '%s' (%s)", ek, ev, sk, sv)}
			}
			for _, s := range []string{"min", "max", "length", "max-past", "var-len"} {
				if err := notFor(s, " as a sequence (use start and end)"); err != nil {
					return err
				}
			}
			continue
		}
		for _, s := range []string{"start", "end"} {
			if err := notFor(s, " with 'kind' = 'random' (start and end are for sequences)"); err != nil {
				return err
			}
		}
		numeric := c.Type.IsNumeric()
		if !numeric {
			for _, s := range []string{"min", "max"} {
				if err := notFor(s, " (min and max are for numeric columns)"); err != nil {
					return err
				}
			}
		}
		if c.Type.Kind != KindString {
			for _, s := range []string{"length", "var-len"} {
				if err := notFor(s, " (length is for STRING columns)"); err != nil {
					return err
				}
			}
		}
		if c.Type.Kind != KindTimestamp {
			if err := notFor("max-past", " (max-past is for TIMESTAMP columns)"); err != nil {
				return err
			}
		}
		if numeric {
			mink, minv, mok := opt("min")
			_, maxv, xok := opt("max")
			if mok && xok {
				lo, _ := strconv.ParseFloat(strings.TrimSpace(minv), 64)
				hi, _ := strconv.ParseFloat(strings.TrimSpace(maxv), 64)
				if lo > hi {
					return &OptionError{Key: mink, Msg: fmt.Sprintf("option '%s' (%s) must not be greater than the max (%s)", mink, minv, maxv)}
				}
			}
		}
		switch c.Type.Kind {
		case KindBoolean, KindInt, KindBigInt, KindDouble, KindDecimal, KindString, KindTimestamp:
		default:
			return &OptionError{Key: "connector", Msg: fmt.Sprintf("datagen cannot generate column '%s' of type %s", c.Name, c.Type)}
		}
	}
	return nil
}

// ParseBool parses a boolean option value (true/false, case-insensitive).
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("'%s' is not a boolean (true or false)", s)
}

// ParseChar parses a single-character option value. A backslash escape is
// accepted as Flink's CSV options do: \t, \n, \r, \\, \', \0 and \uXXXX.
// The result must fit one byte.
func ParseChar(s string) (byte, error) {
	r := []rune(s)
	var c rune
	switch {
	case len(r) == 1:
		c = r[0]
	case len(r) == 2 && r[0] == '\\':
		switch r[1] {
		case 't':
			c = '\t'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case '0':
			c = 0
		case '\\', '\'', '"':
			c = r[1]
		default:
			return 0, fmt.Errorf("unknown escape '%s'", s)
		}
	case len(r) == 6 && r[0] == '\\' && r[1] == 'u':
		n, err := strconv.ParseUint(string(r[2:]), 16, 16)
		if err != nil {
			return 0, fmt.Errorf("bad unicode escape '%s'", s)
		}
		c = rune(n)
	default:
		return 0, fmt.Errorf("'%s' is not a single character", s)
	}
	if c > 0x7f {
		return 0, fmt.Errorf("'%s' is not an ASCII character", s)
	}
	return byte(c), nil
}

var durationUnits = map[string]time.Duration{
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"h": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"min": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond,
	"millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"µs": time.Microsecond, "us": time.Microsecond, "micro": time.Microsecond, "micros": time.Microsecond,
	"microsecond": time.Microsecond, "microseconds": time.Microsecond,
	"ns": time.Nanosecond, "nano": time.Nanosecond, "nanos": time.Nanosecond,
	"nanosecond": time.Nanosecond, "nanoseconds": time.Nanosecond,
}

// ParseDuration parses Flink's duration syntax: a non-negative integer, optional
// whitespace, and an optional unit (case-insensitive): d/day(s), h/hour(s),
// min/minute(s), s/sec(s)/second(s), ms/milli(s)/millisecond(s),
// µs/us/micro(s)/microsecond(s), ns/nano(s)/nanosecond(s). Without a unit the
// number is milliseconds. Examples: "1 s", "1s", "500ms", "1 min", "100".
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty duration")
	}
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("duration '%s' does not start with a number", s)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("duration '%s' is too large", s)
	}
	unit := strings.ToLower(strings.TrimSpace(t[i:]))
	if unit == "" {
		unit = "ms"
	}
	u, ok := durationUnits[unit]
	if !ok {
		return 0, fmt.Errorf("unknown time unit '%s' (known: d, h, min, s, ms, us, ns and their long forms)", unit)
	}
	if n > math.MaxInt64/int64(u) {
		return 0, fmt.Errorf("duration '%s' is too large", s)
	}
	return time.Duration(n) * u, nil
}

var memoryUnits = map[string]int64{
	"": 1, "b": 1, "bytes": 1,
	"k": 1 << 10, "kb": 1 << 10, "kibibytes": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mebibytes": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gibibytes": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tebibytes": 1 << 40,
}

// ParseMemorySize parses Flink's memory size syntax: an integer and an
// optional unit (b, k/kb, m/mb, g/gb, t/tb; powers of 1024; case-insensitive).
func ParseMemorySize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("memory size '%s' does not start with a number", s)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("memory size '%s' is too large", s)
	}
	u, ok := memoryUnits[strings.ToLower(strings.TrimSpace(t[i:]))]
	if !ok {
		return 0, fmt.Errorf("unknown memory unit '%s' (known: b, kb, mb, gb, tb)", strings.TrimSpace(t[i:]))
	}
	if n > math.MaxInt64/u {
		return 0, fmt.Errorf("memory size '%s' is too large", s)
	}
	return n * u, nil
}

// checkNexmark: the proportions must make events; the options streamsql
// accepts for Flink's files but does not act on may not ask for what it
// cannot do.
// partitionCommitKeys are the options of a partitioned filesystem table.
var partitionCommitKeys = []string{"partition.default-name", "sink.partition-commit.trigger",
	"sink.partition-commit.delay", "sink.partition-commit.policy.kind",
	"sink.partition-commit.success-file.name", "sink.partition-commit.watermark-time-zone",
	"partition.time-extractor.kind", "partition.time-extractor.class",
	"partition.time-extractor.timestamp-pattern", "partition.time-extractor.timestamp-formatter"}

func checkFilesystem(t *Table) error {
	if v, _ := t.Option("path"); strings.TrimSpace(v) == "" {
		return &OptionError{Key: "path", Msg: "option 'path' of connector 'filesystem' must not be empty"}
	}
	if len(t.PartitionKeys) == 0 {
		for _, k := range partitionCommitKeys {
			if _, ok := t.Option(k); ok {
				return &OptionError{Key: k, Msg: fmt.Sprintf("option '%s' is only valid for a partitioned table (PARTITIONED BY (...))", k)}
			}
		}
		return nil
	}
	_, err := PartitionCommitFromTable(t)
	return err
}

// PartitionCommit is the partition commit configuration of a partitioned
// filesystem table (Flink's sink.partition-commit.* and
// partition.time-extractor.* options).
type PartitionCommit struct {
	// PartitionTime: the trigger is 'partition-time' (the watermark passes
	// the time extracted from the partition values plus Delay), else
	// 'process-time' (the clock passes the partition's creation plus Delay).
	PartitionTime bool
	Delay         time.Duration
	// SuccessFile is the name of the file written into a committed
	// partition ("" : no 'success-file' policy, nothing is written).
	SuccessFile string
	// Pattern is the timestamp pattern with $key references;
	// Formatter parses the result; Zone is the watermark's time zone.
	Pattern     string
	Formatter   *DateFormat
	Zone        *time.Location
	DefaultName string
}

// PartitionCommitFromTable reads and checks the partition commit options
// of a partitioned filesystem table.
func PartitionCommitFromTable(t *Table) (*PartitionCommit, error) {
	pc := &PartitionCommit{DefaultName: t.OptionOr("partition.default-name", "__DEFAULT_PARTITION__")}
	if strings.TrimSpace(pc.DefaultName) == "" {
		return nil, &OptionError{Key: "partition.default-name", Msg: "option 'partition.default-name' must not be empty"}
	}
	pc.PartitionTime = strings.EqualFold(t.OptionOr("sink.partition-commit.trigger", "process-time"), "partition-time")
	if v, ok := t.Option("sink.partition-commit.delay"); ok {
		d, err := ParseDuration(v)
		if err != nil {
			return nil, &OptionError{Key: "sink.partition-commit.delay", Msg: err.Error()}
		}
		pc.Delay = d
	}
	if v, ok := t.Option("sink.partition-commit.policy.kind"); ok {
		for _, k := range strings.Split(v, ",") {
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "success-file":
				pc.SuccessFile = t.OptionOr("sink.partition-commit.success-file.name", "_SUCCESS")
			case "metastore":
				return nil, &OptionError{Key: "sink.partition-commit.policy.kind", Msg: "partition commit policy 'metastore' needs a metastore (a Hive catalog), which streamsql does not have; use 'success-file'"}
			case "custom":
				return nil, &OptionError{Key: "sink.partition-commit.policy.kind", Msg: "partition commit policy 'custom' (a Java class) is not supported; use 'success-file'"}
			default:
				return nil, &OptionError{Key: "sink.partition-commit.policy.kind", Msg: fmt.Sprintf("unknown partition commit policy '%s' (expected 'success-file')", strings.TrimSpace(k))}
			}
		}
	}
	if name, ok := t.Option("sink.partition-commit.success-file.name"); ok {
		if strings.TrimSpace(name) == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
			return nil, &OptionError{Key: "sink.partition-commit.success-file.name", Msg: fmt.Sprintf("'%s' is not a file name", name)}
		}
	}
	if strings.EqualFold(t.OptionOr("partition.time-extractor.kind", "default"), "custom") {
		return nil, &OptionError{Key: "partition.time-extractor.kind", Msg: "partition time extractor 'custom' (a Java class) is not supported; use 'default' with 'partition.time-extractor.timestamp-pattern'"}
	}
	if _, ok := t.Option("partition.time-extractor.class"); ok {
		return nil, &OptionError{Key: "partition.time-extractor.class", Msg: "custom partition time extractors (Java classes) are not supported"}
	}
	pc.Pattern = t.OptionOr("partition.time-extractor.timestamp-pattern", "$"+t.PartitionKeys[0])
	for _, ref := range PatternRefs(pc.Pattern) {
		found := false
		for _, k := range t.PartitionKeys {
			if strings.EqualFold(k, ref) {
				found = true
			}
		}
		if !found {
			return nil, &OptionError{Key: "partition.time-extractor.timestamp-pattern", Msg: fmt.Sprintf("'$%s' is not a partition column (partition columns: %s)", ref, strings.Join(t.PartitionKeys, ", "))}
		}
	}
	f, err := CompileDateFormat(t.OptionOr("partition.time-extractor.timestamp-formatter", "yyyy-MM-dd HH:mm:ss"))
	if err != nil {
		return nil, &OptionError{Key: "partition.time-extractor.timestamp-formatter", Msg: err.Error()}
	}
	pc.Formatter = f
	zone, err := LoadZone(t.OptionOr("sink.partition-commit.watermark-time-zone", "UTC"))
	if err != nil {
		return nil, &OptionError{Key: "sink.partition-commit.watermark-time-zone", Msg: err.Error()}
	}
	pc.Zone = zone
	return pc, nil
}

// PatternRefs returns the $name references of a timestamp pattern, in
// order (a name is letters, digits and '_').
func PatternRefs(p string) []string {
	var out []string
	for i := 0; i < len(p); i++ {
		if p[i] != '$' {
			continue
		}
		j := refEnd(p, i+1)
		if j > i+1 {
			out = append(out, p[i+1:j])
		}
		i = j - 1
	}
	return out
}

// refEnd returns the end of the $name reference whose name starts at i.
func refEnd(p string, i int) int {
	for i < len(p) && (p[i] == '_' || p[i] >= '0' && p[i] <= '9' || p[i] >= 'a' && p[i] <= 'z' || p[i] >= 'A' && p[i] <= 'Z') {
		i++
	}
	return i
}

// ExtractTime extracts the partition's time (ms since the epoch) from
// its values (by partition column, unescaped): the pattern with every $key
// replaced, parsed with the formatter in the zone. ok is false when the
// text does not match the formatter.
func (pc *PartitionCommit) ExtractTime(keys, values []string) (int64, string, bool) {
	var sb strings.Builder
	p := pc.Pattern
	for i := 0; i < len(p); i++ {
		if p[i] != '$' {
			sb.WriteByte(p[i])
			continue
		}
		j := refEnd(p, i+1)
		name := p[i+1 : j]
		for k, key := range keys {
			if strings.EqualFold(key, name) {
				sb.WriteString(values[k])
			}
		}
		i = j - 1
	}
	text := sb.String()
	f := Fields{Year: 1970, Month: 1, Day: 1}
	if !pc.Formatter.Parse(text, &f) {
		return 0, text, false
	}
	t := time.Date(int(f.Year), time.Month(f.Month), f.Day, f.Hour, f.Minute, f.Second, f.Nanos, pc.Zone)
	return t.UnixMilli(), text, true
}

func checkNexmark(t *Table) error {
	var sum int64
	for _, k := range []string{"person.proportion", "auction.proportion", "bid.proportion"} {
		v, ok := t.Option(k)
		if !ok {
			v = map[string]string{"person.proportion": "1", "auction.proportion": "3", "bid.proportion": "46"}[k]
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		sum += n
	}
	if sum == 0 {
		return &OptionError{Key: "bid.proportion", Msg: "the person, auction and bid proportions are all 0: there is no event to generate"}
	}
	if v, ok := t.Option("rate.limited"); ok && strings.EqualFold(strings.TrimSpace(v), "true") {
		return &OptionError{Key: "rate.limited", Msg: "'rate.limited' = 'true' is not supported: the nexmark source emits as fast as possible (event time follows 'first-event.rate')"}
	}
	if v, ok := t.Option("max-emit-speed"); ok && strings.EqualFold(strings.TrimSpace(v), "false") {
		return &OptionError{Key: "max-emit-speed", Msg: "'max-emit-speed' = 'false' is not supported: the nexmark source emits as fast as possible (event time follows 'first-event.rate')"}
	}
	return nil
}
