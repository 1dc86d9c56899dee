package sqltests

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/datadriven"
)

// ddCase is one directive of a test file, read the way datadriven reads it.
type ddCase struct {
	Line     int    // 1-based line of the directive
	Cmd      string // first word of the directive line
	Args     []datadriven.CmdArg
	Input    string // trimmed text between the directive and "----"
	Expected string // text after "----" (each line ends in "\n")

	// pre is every line of the file from the end of the previous case up to
	// and including this case's input, as written (comments and blank lines
	// included), so that a rewrite reproduces them.
	pre string
}

// ddFile is a parsed test file.
type ddFile struct {
	Name  string
	Cases []ddCase
	tail  string // lines after the last case
}

// fullCmd renders the directive line as datadriven does.
func (c *ddCase) fullCmd() string {
	f := []string{c.Cmd}
	for _, a := range c.Args {
		f = append(f, a.String())
	}
	return strings.Join(f, " ")
}

// hasArg reports whether the directive carries argument key.
func (c *ddCase) arg(key string) (datadriven.CmdArg, bool) {
	for _, a := range c.Args {
		if a.Key == key {
			return a, true
		}
	}
	return datadriven.CmdArg{}, false
}

// parseDD reads text in datadriven's format: a directive line (which may be
// continued with a trailing '\'), input lines up to a "----" line, then the
// expected output up to a blank line, or, when the output starts with a
// second "----" line, up to a pair of "----" lines. Lines starting with '#'
// outside a case are comments.
func parseDD(name, text string) (*ddFile, error) {
	lines := strings.Split(text, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	f := &ddFile{Name: name}
	var pending strings.Builder
	emit := func(s string) {
		pending.WriteString(s)
		pending.WriteByte('\n')
	}
	i := 0
	next := func() (string, bool) {
		if i >= len(lines) {
			return "", false
		}
		i++
		return lines[i-1], true
	}
	for {
		line, ok := next()
		if !ok {
			break
		}
		emit(line)
		lineNo := i
		dir := strings.TrimSpace(line)
		if strings.HasPrefix(dir, "#") {
			continue
		}
		for strings.HasSuffix(dir, `\`) {
			more, ok := next()
			if !ok {
				break
			}
			emit(more)
			dir = strings.TrimSuffix(dir, `\`) + " " + strings.TrimSpace(more)
		}
		cmd, args, err := datadriven.ParseLine(dir)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, lineNo, err)
		}
		if cmd == "" {
			continue
		}
		c := ddCase{Line: lineNo, Cmd: cmd, Args: args}
		var in strings.Builder
		sep := false
		for {
			l, ok := next()
			if !ok {
				break
			}
			if l == "----" {
				sep = true
				break
			}
			emit(l)
			in.WriteString(l)
			in.WriteByte('\n')
		}
		c.Input = strings.TrimSpace(in.String())
		c.pre = pending.String()
		pending.Reset()
		if sep {
			exp, err := readExpected(next)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %v", name, lineNo, err)
			}
			c.Expected = exp
		}
		f.Cases = append(f.Cases, c)
	}
	f.tail = pending.String()
	return f, nil
}

func readExpected(next func() (string, bool)) (string, error) {
	var b strings.Builder
	line, ok := next()
	if !ok {
		return "", nil
	}
	if line == "----" {
		// Blank lines allowed; ends at two "----" lines in a row.
		for {
			l, ok := next()
			if !ok {
				break
			}
			if l == "----" {
				l2, ok := next()
				if !ok {
					b.WriteString(l + "\n")
					break
				}
				if l2 == "----" {
					if l3, ok := next(); ok && l3 != "" {
						return "", fmt.Errorf("non-blank line after end of double ---- separator section")
					}
					break
				}
				b.WriteString(l + "\n" + l2 + "\n")
				continue
			}
			b.WriteString(l + "\n")
		}
		return b.String(), nil
	}
	for strings.TrimSpace(line) != "" {
		b.WriteString(line + "\n")
		if line, ok = next(); !ok {
			break
		}
	}
	return b.String(), nil
}

// normOutput makes an actual output comparable with Expected: non-empty
// output ends in exactly one newline added if missing (as datadriven does).
func normOutput(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

// render writes the file back with the given outputs (one per case), in
// datadriven's rewrite layout.
func (f *ddFile) render(outputs []string) string {
	var b strings.Builder
	for i, c := range f.Cases {
		b.WriteString(c.pre)
		b.WriteString("----\n")
		out := normOutput(outputs[i])
		if hasBlankLine(out) {
			b.WriteString("----\n")
			b.WriteString(out)
			b.WriteString("----\n----\n\n")
		} else {
			b.WriteString(out)
			b.WriteString("\n")
		}
	}
	b.WriteString(f.tail)
	s := b.String()
	if strings.HasSuffix(s, "\n\n") {
		s = s[:len(s)-1]
	}
	return s
}

func hasBlankLine(s string) bool {
	if s == "" {
		return false
	}
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if strings.TrimSpace(l) == "" {
			return true
		}
	}
	return false
}
