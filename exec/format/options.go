package format

import (
	"strings"

	"github.com/streamsql/streamsql/catalog"
)

// CSVOptions are the 'csv.*' options of a table.
type CSVOptions struct {
	FieldDelimiter    byte // csv.field-delimiter, default ','
	Quote             byte // csv.quote-character, default '"'
	DisableQuote      bool // csv.disable-quote-character
	Escape            byte // csv.escape-character (valid when HasEscape)
	HasEscape         bool
	AllowComments     bool // csv.allow-comments: lines starting with '#' are skipped
	IgnoreParseErrors bool // csv.ignore-parse-errors
	// NullLiteral (csv.null-literal) is the unquoted text read as NULL and
	// written for NULL. Without it (Flink's default) NULL is written as an
	// empty field, and an empty field reads as "" for STRING and is an error
	// for other types, as in Flink.
	NullLiteral    string
	HasNullLiteral bool
}

// DefaultCSVOptions returns Flink's defaults.
func DefaultCSVOptions() CSVOptions { return CSVOptions{FieldDelimiter: ',', Quote: '"'} }

// CSVOptionsFromTable reads the csv.* options of t (validated by
// catalog.ValidateTable; malformed values are reported again here).
func CSVOptionsFromTable(t *catalog.Table) (CSVOptions, error) {
	o := DefaultCSVOptions()
	var err error
	char := func(key string, dst *byte) bool {
		v, ok := t.Option(key)
		if !ok || err != nil {
			return false
		}
		c, e := catalog.ParseChar(v)
		if e != nil {
			err = &catalog.OptionError{Key: key, Msg: "invalid value '" + v + "' for option '" + key + "': " + e.Error()}
			return false
		}
		*dst = c
		return true
	}
	boolean := func(key string, dst *bool) {
		v, ok := t.Option(key)
		if !ok || err != nil {
			return
		}
		b, e := catalog.ParseBool(v)
		if e != nil {
			err = &catalog.OptionError{Key: key, Msg: "invalid value '" + v + "' for option '" + key + "': expected 'true' or 'false'"}
			return
		}
		*dst = b
	}
	char("csv.field-delimiter", &o.FieldDelimiter)
	char("csv.quote-character", &o.Quote)
	o.HasEscape = char("csv.escape-character", &o.Escape)
	boolean("csv.disable-quote-character", &o.DisableQuote)
	boolean("csv.allow-comments", &o.AllowComments)
	boolean("csv.ignore-parse-errors", &o.IgnoreParseErrors)
	o.NullLiteral, o.HasNullLiteral = t.Option("csv.null-literal")
	if err == nil && (o.FieldDelimiter == '\n' || o.FieldDelimiter == '\r' || (!o.DisableQuote && o.FieldDelimiter == o.Quote)) {
		err = &catalog.OptionError{Key: "csv.field-delimiter", Msg: "option 'csv.field-delimiter' must differ from the quote character and from line breaks"}
	}
	return o, err
}

// JSONOptions are the 'json.*' options of a table.
type JSONOptions struct {
	ISOTimestamps      bool // json.timestamp-format.standard = 'ISO-8601' (default 'SQL')
	FailOnMissingField bool // json.fail-on-missing-field
	IgnoreParseErrors  bool // json.ignore-parse-errors
	IgnoreNullFields   bool // json.encode.ignore-null-fields: omit NULL columns when writing
}

// JSONOptionsFromTable reads the json.* options of t.
func JSONOptionsFromTable(t *catalog.Table) (JSONOptions, error) {
	var o JSONOptions
	var err error
	boolean := func(key string, dst *bool) {
		v, ok := t.Option(key)
		if !ok || err != nil {
			return
		}
		b, e := catalog.ParseBool(v)
		if e != nil {
			err = &catalog.OptionError{Key: key, Msg: "invalid value '" + v + "' for option '" + key + "': expected 'true' or 'false'"}
			return
		}
		*dst = b
	}
	boolean("json.fail-on-missing-field", &o.FailOnMissingField)
	boolean("json.ignore-parse-errors", &o.IgnoreParseErrors)
	boolean("json.encode.ignore-null-fields", &o.IgnoreNullFields)
	if v, ok := t.Option("json.timestamp-format.standard"); ok {
		switch strings.ToUpper(v) {
		case "SQL":
		case "ISO-8601":
			o.ISOTimestamps = true
		default:
			if err == nil {
				err = &catalog.OptionError{Key: "json.timestamp-format.standard", Msg: "invalid value '" + v + "' for option 'json.timestamp-format.standard': expected one of 'SQL', 'ISO-8601'"}
			}
		}
	}
	if o.FailOnMissingField && o.IgnoreParseErrors && err == nil {
		// Flink rejects this combination too.
		err = &catalog.OptionError{Key: "json.fail-on-missing-field", Msg: "options 'json.fail-on-missing-field' and 'json.ignore-parse-errors' cannot both be true"}
	}
	return o, err
}
