package expr

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// compiledRe is a regular expression with what lets most strings skip Go's
// backtracker, which tries every start position of a pattern without a
// literal prefix (Nexmark q21's '(&|^)channel_id=([^&]*)'), as RE2 and
// Hyperscan prefilter:
//   - req: literals every match contains (requiredLiterals); a string
//     lacking one cannot match (strings.Contains runs at memory speed);
//   - a window: where the pattern is a concatenation whose first literal
//     lit is preceded by parts at most before bytes wide, every match starts
//     at most before bytes ahead of lit's first occurrence, so the search
//     can begin there. tail is the pattern with ^ (start of text) made
//     never to match, for searching s[c:] with c > 0: it matches there
//     exactly what the pattern matches in s from c on. Patterns with
//     assertions that look back ((?m)^, \b, \B) get no window.
type compiledRe struct {
	re     *regexp.Regexp
	req    []string
	lit    string
	before int
	tail   *regexp.Regexp
}

func compileRe(p string) (compiledRe, error) {
	re, err := regexp.Compile(p)
	if err != nil {
		return compiledRe{}, err
	}
	c := compiledRe{re: re}
	if s, err := syntax.Parse(p, syntax.Perl); err == nil {
		c.req = requiredLiterals(s.Simplify())
	}
	if s, err := syntax.Parse(p, syntax.Perl); err == nil && s.Op == syntax.OpConcat && !looksBack(s) {
		for j, sub := range s.Sub {
			if sub.Op != syntax.OpLiteral {
				continue
			}
			if sub.Flags&syntax.FoldCase != 0 {
				break
			}
			w, bounded := 0, true
			for _, a := range s.Sub[:j] {
				n, ok := maxWidth(a)
				w, bounded = w+n, bounded && ok
			}
			if !bounded {
				break
			}
			neverAtStart(s)
			if tail, err := regexp.Compile(s.String()); err == nil && tail.NumSubexp() == re.NumSubexp() {
				c.lit, c.before, c.tail = string(sub.Rune), w, tail
			}
			break
		}
	}
	return c, nil
}

// search returns the regexp to run and the part of s to run it on (from
// off): s itself, or s from the window's start; ok false when s cannot
// match.
func (c *compiledRe) search(s string) (re *regexp.Regexp, sub string, off int, ok bool) {
	if c.tail != nil {
		i := strings.Index(s, c.lit)
		if i < 0 {
			return nil, "", 0, false
		}
		if off = i - c.before; off > 0 {
			re, sub = c.tail, s[off:]
		}
	}
	for _, l := range c.req {
		if l != c.lit && !strings.Contains(s, l) {
			return nil, "", 0, false
		}
	}
	if re == nil {
		return c.re, s, 0, true
	}
	return re, sub, off, true
}

// requiredLiterals returns literals that every string matching re
// contains (not necessarily all such literals: alternations and optional
// parts contribute none). Case-folded literals are left out.
func requiredLiterals(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 || len(re.Rune) == 0 {
			return nil
		}
		return []string{string(re.Rune)}
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiterals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiterals(re.Sub[0])
		}
	case syntax.OpConcat:
		// adjacent literals make one longer literal; every part's own
		// required literals stay required
		var out []string
		var run strings.Builder
		flush := func() {
			if run.Len() > 0 {
				out = append(out, run.String())
				run.Reset()
			}
		}
		for _, sub := range re.Sub {
			if sub.Op == syntax.OpLiteral && sub.Flags&syntax.FoldCase == 0 {
				run.WriteString(string(sub.Rune))
				continue
			}
			flush()
			out = append(out, requiredLiterals(sub)...)
		}
		flush()
		return out
	}
	return nil
}

// maxWidth is the most bytes (UTF-8) a match of re can take; false when
// unbounded.
func maxWidth(re *syntax.Regexp) (int, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpNoMatch, syntax.OpBeginLine, syntax.OpEndLine,
		syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0, true
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				n += utf8.UTFMax // another case may be longer
			} else {
				n += utf8.RuneLen(r)
			}
		}
		return n, true
	case syntax.OpCharClass: // ranges lo, hi: the widest rune is the last hi
		if n := len(re.Rune); n > 0 && re.Flags&syntax.FoldCase == 0 && utf8.RuneLen(re.Rune[n-1]) > 0 {
			return utf8.RuneLen(re.Rune[n-1]), true
		}
		return utf8.UTFMax, true
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		return utf8.UTFMax, true
	case syntax.OpCapture, syntax.OpQuest:
		return maxWidth(re.Sub[0])
	case syntax.OpRepeat:
		if re.Max < 0 {
			return 0, false
		}
		n, ok := maxWidth(re.Sub[0])
		return n * re.Max, ok
	case syntax.OpConcat, syntax.OpAlternate:
		total := 0
		for _, sub := range re.Sub {
			n, ok := maxWidth(sub)
			if !ok {
				return 0, false
			}
			if re.Op == syntax.OpConcat {
				total += n
			} else {
				total = max(total, n)
			}
		}
		return total, true
	}
	return 0, false // star, plus
}

// looksBack reports whether re has an assertion that reads the byte
// before its position: (?m)^, \b or \B.
func looksBack(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	for _, sub := range re.Sub {
		if looksBack(sub) {
			return true
		}
	}
	return false
}

// neverAtStart makes every start-of-text assertion of re never match.
func neverAtStart(re *syntax.Regexp) {
	if re.Op == syntax.OpBeginText {
		*re = syntax.Regexp{Op: syntax.OpNoMatch}
		return
	}
	for _, sub := range re.Sub {
		neverAtStart(sub)
	}
}
