package planner

import (
	"errors"
	"fmt"
	"strings"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/parser"
)

// Table options: the checks CREATE TABLE and OPTIONS hints share.
//
// ValidateTable is catalog.ValidateTable plus the checks that catalog does
// not make yet; CREATE TABLE (package session) and dynamic table options
// (/*+ OPTIONS(...) */ hints, merged by withDynamicOptions) both call it, so
// that a hint is validated exactly like the WITH clause it amends.

// ValidateTable checks t's connector options; a problem with one option is
// a *catalog.OptionError naming its key.
func ValidateTable(t *catalog.Table) error {
	if _, ok := t.Option("connector"); !ok {
		// Keys are case-sensitive, as in Flink: 'Connector' is not 'connector'.
		for _, o := range t.Options {
			if strings.EqualFold(o.Key, "connector") {
				return &catalog.OptionError{Key: o.Key, Msg: fmt.Sprintf("unknown option '%s'; did you mean 'connector'? (option keys are case-sensitive)", o.Key)}
			}
		}
	}
	if err := catalog.ValidateTable(t); err != nil {
		return err
	}
	if t.Connector() == "filesystem" {
		if p, _ := t.Option("path"); hasRemoteScheme(p) {
			scheme := p[:strings.Index(p, "://")]
			return &catalog.OptionError{Key: "path", Msg: fmt.Sprintf("'path' = '%s': the filesystem connector reads and writes local files only; the '%s' file system is not supported", p, scheme)}
		}
	}
	return nil
}

// hasRemoteScheme reports whether path is a URI of a file system other
// than the local one (s3://, hdfs://, gs://, ...).
func hasRemoteScheme(path string) bool {
	i := strings.Index(path, "://")
	if i <= 0 {
		return false
	}
	scheme := path[:i]
	for _, c := range scheme {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return !strings.EqualFold(scheme, "file")
}

// withDynamicOptions returns a copy of t whose options are t's WITH options
// with opts (an OPTIONS hint written at hintPos) merged over them: a key in
// both takes the hint's value, a new key is added. The result is validated
// like CREATE TABLE; an error points at the hint's option, or at the hint
// when the problem comes from the combination.
func withDynamicOptions(t *catalog.Table, opts []parser.Option, hintPos parser.Pos) (*catalog.Table, error) {
	out := *t
	out.Options = append([]catalog.Option(nil), t.Options...)
	for _, o := range opts {
		if o.Key == "connector" {
			return nil, &parser.Error{Pos: o.KeyPos, Msg: fmt.Sprintf("an OPTIONS hint cannot change the 'connector' of table '%s'", t.Name)}
		}
		replaced := false
		for i := range out.Options {
			if out.Options[i].Key == o.Key {
				out.Options[i].Value = o.Value
				replaced = true
			}
		}
		if !replaced {
			out.Options = append(out.Options, catalog.Option{Key: o.Key, Value: o.Value})
		}
	}
	if err := ValidateTable(&out); err != nil {
		var oe *catalog.OptionError
		if errors.As(err, &oe) {
			for _, o := range opts {
				if o.Key == oe.Key {
					return nil, &parser.Error{Pos: o.KeyPos, Msg: err.Error()}
				}
			}
		}
		return nil, &parser.Error{Pos: hintPos, Msg: fmt.Sprintf("table '%s' with the options of its OPTIONS hint: %v", t.Name, err)}
	}
	return &out, nil
}
