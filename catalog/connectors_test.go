package catalog

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func tbl(schema Schema, kv ...string) *Table {
	t := &Table{Name: "T", Schema: schema}
	for i := 0; i+1 < len(kv); i += 2 {
		t.Options = append(t.Options, Option{Key: kv[i], Value: kv[i+1]})
	}
	return t
}

func TestValidateTable(t *testing.T) {
	s := Schema{{Name: "id", Type: BigInt}, {Name: "name", Type: String}, {Name: "ts", Type: Timestamp}}
	one := Schema{{Name: "line", Type: String}}
	cases := []struct {
		name    string
		t       *Table
		key     string // expected OptionError.Key
		wantErr string // substring; "" = valid
	}{
		{"ok datagen", tbl(s, "connector", "datagen", "rows-per-second", "5", "fields.id.kind", "sequence", "fields.id.start", "1", "fields.id.end", "10", "fields.name.length", "5"), "", ""},
		{"no connector", tbl(s, "path", "x"), "", "has no 'connector' option (known connectors: blackhole, datagen, filesystem, nexmark, print, socket)"},
		{"unknown connector", tbl(s, "connector", "datagne"), "connector", "unknown connector 'datagne' (known connectors: blackhole, datagen, filesystem, nexmark, print, socket); did you mean 'datagen'?"},
		{"unknown key", tbl(s, "connector", "datagen", "rows-per-secnd", "1"), "rows-per-secnd", "unsupported option 'rows-per-secnd' for connector 'datagen'; did you mean 'rows-per-second'?"},
		{"unknown family key", tbl(s, "connector", "datagen", "fields.id.knd", "random"), "fields.id.knd", "did you mean 'fields.id.kind'?"},
		{"bad int", tbl(s, "connector", "datagen", "rows-per-second", "fast"), "rows-per-second", "invalid value 'fast' for option 'rows-per-second': expected a non-negative integer"},
		{"negative int", tbl(s, "connector", "datagen", "number-of-rows", "-1"), "number-of-rows", "expected a non-negative integer"},
		{"bad enum", tbl(s, "connector", "datagen", "fields.id.kind", "rnd"), "fields.id.kind", "expected one of 'random', 'sequence'"},
		{"bad column", tbl(s, "connector", "datagen", "fields.nme.kind", "random"), "fields.nme.kind", "refers to column 'nme', which is not a column of table 'T' (columns: id, name, ts); did you mean 'fields.name.kind'?"},
		{"seq needs end", tbl(s, "connector", "datagen", "fields.id.kind", "sequence", "fields.id.start", "1"), "fields.id.kind", "missing option 'fields.id.end'"},
		{"min on string", tbl(s, "connector", "datagen", "fields.name.min", "1"), "fields.name.min", "does not apply to column 'name' of type STRING"},
		{"length on bigint", tbl(s, "connector", "datagen", "fields.id.length", "1"), "fields.id.length", "length is for STRING columns"},
		{"min > max", tbl(s, "connector", "datagen", "fields.id.min", "10", "fields.id.max", "1"), "fields.id.min", "must not be greater than the max"},
		{"bad min", tbl(s, "connector", "datagen", "fields.id.min", "x"), "fields.id.min", "invalid value 'x' for option 'fields.id.min': expected a BIGINT value"},
		{"max-past", tbl(s, "connector", "datagen", "fields.ts.max-past", "5 min"), "", ""},
		{"bad duration", tbl(s, "connector", "datagen", "fields.ts.max-past", "5 parsecs"), "fields.ts.max-past", "unknown time unit 'parsecs'"},
		{"null-rate", tbl(s, "connector", "datagen", "fields.ts.null-rate", "1.5"), "fields.ts.null-rate", "expected a number between 0 and 1"},
		{"fs missing path", tbl(s, "connector", "filesystem", "format", "csv"), "path", "missing required option 'path' for connector 'filesystem'"},
		{"fs missing format", tbl(s, "connector", "filesystem", "path", "/tmp/x"), "format", "missing required option 'format' for connector 'filesystem' (one of 'csv', 'json')"},
		{"fs bad format", tbl(s, "connector", "filesystem", "path", "/tmp/x", "format", "avro"), "format", "expected one of 'csv', 'json'"},
		{"csv key with json", tbl(s, "connector", "filesystem", "path", "/x", "format", "json", "csv.field-delimiter", ";"), "csv.field-delimiter", "only valid with 'format' = 'csv'"},
		{"csv key ok", tbl(s, "connector", "filesystem", "path", "/x", "format", "csv", "csv.field-delimiter", `\t`, "csv.ignore-parse-errors", "TRUE"), "", ""},
		{"csv bad delimiter", tbl(s, "connector", "filesystem", "path", "/x", "format", "csv", "csv.field-delimiter", ";;"), "csv.field-delimiter", "expected a single character"},
		{"csv unknown key", tbl(s, "connector", "filesystem", "path", "/x", "format", "csv", "csv.field-delimeter", ";"), "csv.field-delimeter", "did you mean 'csv.field-delimiter'?"},
		{"format key on print", tbl(s, "connector", "print", "json.ignore-parse-errors", "true"), "json.ignore-parse-errors", "connector 'print' takes no 'format'"},
		{"rollover", tbl(s, "connector", "filesystem", "path", "/x", "format", "json", "sink.rolling-policy.rollover-interval", "10 s", "sink.rolling-policy.file-size", "1 mb"), "", ""},
		{"bad file-size", tbl(s, "connector", "filesystem", "path", "/x", "format", "json", "sink.rolling-policy.file-size", "big"), "sink.rolling-policy.file-size", "expected a memory size"},
		{"socket ok", tbl(one, "connector", "socket", "hostname", "localhost", "port", "9999"), "", ""},
		{"socket bad port", tbl(one, "connector", "socket", "hostname", "localhost", "port", "70000"), "port", "expected an integer between 0 and 65535"},
		{"socket needs string", tbl(s, "connector", "socket", "hostname", "localhost", "port", "1"), "connector", "needs exactly one STRING column"},
		{"socket with format", tbl(s, "connector", "socket", "hostname", "localhost", "port", "1", "format", "csv"), "", ""},
		{"print bool", tbl(s, "connector", "print", "standard-error", "yes"), "standard-error", "expected 'true' or 'false'"},
		{"duplicate", tbl(s, "connector", "print", "print-identifier", "a", "print-identifier", "b"), "print-identifier", "set twice"},
		{"blackhole", tbl(s, "connector", "blackhole"), "", ""},
		// combinations of format options that cannot work
		{"csv delimiter is the quote", tbl(s, "connector", "filesystem", "path", "/x", "format", "csv", "csv.field-delimiter", `"`), "csv.field-delimiter", `options 'csv.field-delimiter' and 'csv.quote-character' are both '"'`},
		{"csv quote is the delimiter", tbl(s, "connector", "filesystem", "path", "/x", "format", "csv", "csv.field-delimiter", ";", "csv.quote-character", ";"), "csv.quote-character", `are both ';'`},
		{"csv quote is the default delimiter", tbl(s, "connector", "filesystem", "path", "/x", "format", "csv", "csv.quote-character", ","), "csv.quote-character", `are both ','`},
		{"csv delimiter is the quote, quoting off", tbl(s, "connector", "filesystem", "path", "/x", "format", "csv", "csv.field-delimiter", `"`, "csv.disable-quote-character", "true"), "", ""},
		{"csv quote and no quote", tbl(s, "connector", "filesystem", "path", "/x", "format", "csv", "csv.quote-character", "'", "csv.disable-quote-character", "true"), "csv.disable-quote-character", "cannot be combined"},
		{"csv delimiter newline", tbl(s, "connector", "filesystem", "path", "/x", "format", "csv", "csv.field-delimiter", `\n`), "csv.field-delimiter", `cannot be a line break ('\n')`},
		{"csv quote newline", tbl(s, "connector", "filesystem", "path", "/x", "format", "csv", "csv.quote-character", `\r`), "csv.quote-character", "cannot be a line break"},
		{"csv escape is the delimiter", tbl(s, "connector", "filesystem", "path", "/x", "format", "csv", "csv.escape-character", ","), "csv.escape-character", "'csv.escape-character' and 'csv.field-delimiter' are both ','"},
		{"csv escape is the quote", tbl(s, "connector", "filesystem", "path", "/x", "format", "csv", "csv.escape-character", `"`), "csv.escape-character", "leave 'csv.escape-character' out"},
		{"csv escape ok", tbl(s, "connector", "filesystem", "path", "/x", "format", "csv", "csv.escape-character", `\\`), "", ""},
		{"csv null literal with delimiter", tbl(s, "connector", "filesystem", "path", "/x", "format", "csv", "csv.null-literal", "a,b"), "csv.null-literal", "contains the field delimiter ','"},
		{"csv null literal with delimiter, escaped", tbl(s, "connector", "filesystem", "path", "/x", "format", "csv", "csv.null-literal", "a,b", "csv.escape-character", `\\`), "", ""},
		{"csv null literal with newline", tbl(s, "connector", "filesystem", "path", "/x", "format", "csv", "csv.null-literal", "a\nb"), "csv.null-literal", "cannot contain a line break"},
		{"json fail and ignore", tbl(s, "connector", "filesystem", "path", "/x", "format", "json", "json.ignore-parse-errors", "true", "json.fail-on-missing-field", "TRUE"), "json.fail-on-missing-field", "cannot both be 'true'"},
		{"json fail and not ignore", tbl(s, "connector", "filesystem", "path", "/x", "format", "json", "json.ignore-parse-errors", "false", "json.fail-on-missing-field", "true"), "", ""},
		{"socket json fail and ignore", tbl(s, "connector", "socket", "hostname", "h", "port", "1", "format", "json", "json.fail-on-missing-field", "true", "json.ignore-parse-errors", "true"), "json.ignore-parse-errors", "cannot both be 'true'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateTable(c.t)
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, c.wantErr)
			}
			var oe *OptionError
			if !errors.As(err, &oe) {
				t.Fatalf("error %T is not an *OptionError", err)
			}
			if oe.Key != c.key {
				t.Fatalf("OptionError.Key = %q, want %q", oe.Key, c.key)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"1 s", time.Second, false}, {"1s", time.Second, false}, {"500ms", 500 * time.Millisecond, false},
		{"1 min", time.Minute, false}, {"2 MINUTES", 2 * time.Minute, false}, {"100", 100 * time.Millisecond, false},
		{" 3 h ", 3 * time.Hour, false}, {"1d", 24 * time.Hour, false}, {"10 µs", 10 * time.Microsecond, false},
		{"", 0, true}, {"s", 0, true}, {"1 parsec", 0, true}, {"-1 s", 0, true}, {"1.5 s", 0, true},
		{"99999999999999999999 s", 0, true}, {"9999999999999 d", 0, true},
	}
	for _, c := range cases {
		got, err := ParseDuration(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, err=%v", c.in, got, err, c.want, c.err)
		}
	}
}

func TestParseMemorySizeAndChar(t *testing.T) {
	for in, want := range map[string]int64{"128MB": 128 << 20, "1 kb": 1024, "10": 10, "2g": 2 << 30} {
		if got, err := ParseMemorySize(in); err != nil || got != want {
			t.Errorf("ParseMemorySize(%q) = %d, %v", in, got, err)
		}
	}
	for in, want := range map[string]byte{",": ',', `\t`: '\t', "|": '|', `\u0001`: 1, `'`: '\''} {
		if got, err := ParseChar(in); err != nil || got != want {
			t.Errorf("ParseChar(%q) = %d, %v", in, got, err)
		}
	}
	if _, err := ParseChar("ab"); err == nil {
		t.Error("ParseChar(ab) should fail")
	}
}

func TestCaps(t *testing.T) {
	src, sink, upd, ok := ConnectorCaps("datagen")
	if !ok || !src || sink || upd {
		t.Fatal("datagen caps")
	}
	src, sink, upd, ok = ConnectorCaps("print")
	if !ok || src || !sink || !upd {
		t.Fatal("print caps")
	}
	if _, _, _, ok := ConnectorCaps("kafka"); ok {
		t.Fatal("kafka is unknown")
	}
	csv := tbl(nil, "connector", "filesystem", "path", "/x", "format", "csv")
	js := tbl(nil, "connector", "filesystem", "path", "/x", "format", "json")
	if TableSinkAcceptsUpdates(csv) || !TableSinkAcceptsUpdates(js) {
		t.Fatal("filesystem updates depend on format")
	}
	if got := strings.Join(ConnectorNames(), ","); got != "blackhole,datagen,filesystem,nexmark,print,socket" {
		t.Fatal(got)
	}
}
