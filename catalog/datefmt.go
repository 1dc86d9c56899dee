package catalog

import (
	"fmt"
	"strconv"
	"strings"
)

// DateFormat is a compiled Java SimpleDateFormat-style pattern (Flink's
// DATE_FORMAT, TO_TIMESTAMP, TO_DATE, UNIX_TIMESTAMP, FROM_UNIXTIME
// formats: 'yyyy-MM-dd HH:mm:ss'). It lives here because the planner
// checks constant patterns and exec/expr runs them; compile once, then
// Append and Parse per value without allocating.
//
// Letters: y (year: yy two digits), M (MM, MMM Jan, MMMM January), d, D
// (day of year), H (0-23), h (1-12), a (AM/PM), m, s, S (fraction of a
// second: as many digits as letters), E (EEE Mon, EEEE Monday), u (day of
// week, 1 = Monday); 'text' is literal (” is a quote); other letters
// are errors; other characters are literal.
type DateFormat struct {
	elems []dfElem
}

type dfElem struct {
	letter byte // 0: literal
	n      int
	lit    string
}

var monthNames = [...]string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
var dayNames = [...]string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

// CompileDateFormat compiles a pattern; the error names the offending
// letter.
func CompileDateFormat(p string) (*DateFormat, error) {
	f := &DateFormat{}
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\'':
			j := i + 1
			var sb strings.Builder
			for {
				if j >= len(p) {
					return nil, fmt.Errorf("unterminated quote at character %d", i+1)
				}
				if p[j] == '\'' {
					if j+1 < len(p) && p[j+1] == '\'' {
						sb.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				sb.WriteByte(p[j])
				j++
			}
			if j == i+1 {
				sb.WriteByte('\'') // '' is a quote
			}
			f.elems = append(f.elems, dfElem{lit: sb.String()})
			i = j + 1
		case (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
			j := i
			for j < len(p) && p[j] == c {
				j++
			}
			if !strings.ContainsRune("yMdDHhamsSEu", rune(c)) {
				return nil, fmt.Errorf("unsupported pattern letter '%c' at character %d", c, i+1)
			}
			if c == 'S' && j-i > 9 {
				return nil, fmt.Errorf("at most 9 fraction digits (S) at character %d", i+1)
			}
			f.elems = append(f.elems, dfElem{letter: c, n: j - i})
			i = j
		default:
			j := i
			for j < len(p) && p[j] != '\'' && !((p[j] >= 'a' && p[j] <= 'z') || (p[j] >= 'A' && p[j] <= 'Z')) {
				j++
			}
			f.elems = append(f.elems, dfElem{lit: p[i:j]})
			i = j
		}
	}
	return f, nil
}

// DateOnly reports whether the pattern formats only fields of the date
// (year, month, day, day of year, day of week): every instant of a day
// formats the same.
func (df *DateFormat) DateOnly() bool {
	for _, e := range df.elems {
		if e.letter != 0 && !strings.ContainsRune("yMdDEu", rune(e.letter)) {
			return false
		}
	}
	return true
}

// Fields is a broken-down wall-clock date-time.
type Fields struct {
	Year                 int64
	Month, Day           int // 1-based
	Hour, Minute, Second int
	Nanos                int
	DayOfYear, DayOfWeek int // DayOfWeek: 1 = Monday .. 7 = Sunday
}

func appendPadded(dst []byte, v int64, n int) []byte {
	if v < 0 {
		dst = append(dst, '-')
		v = -v
	}
	var buf [20]byte
	s := strconv.AppendInt(buf[:0], v, 10)
	for k := len(s); k < n; k++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// Append formats f.
func (df *DateFormat) Append(dst []byte, f *Fields) []byte {
	for _, e := range df.elems {
		switch e.letter {
		case 0:
			dst = append(dst, e.lit...)
		case 'y':
			if e.n == 2 {
				dst = appendPadded(dst, f.Year%100, 2)
			} else {
				dst = appendPadded(dst, f.Year, e.n)
			}
		case 'M':
			switch {
			case e.n >= 4:
				dst = append(dst, monthNames[f.Month-1]...)
			case e.n == 3:
				dst = append(dst, monthNames[f.Month-1][:3]...)
			default:
				dst = appendPadded(dst, int64(f.Month), e.n)
			}
		case 'd':
			dst = appendPadded(dst, int64(f.Day), e.n)
		case 'D':
			dst = appendPadded(dst, int64(f.DayOfYear), e.n)
		case 'H':
			dst = appendPadded(dst, int64(f.Hour), e.n)
		case 'h':
			h := f.Hour % 12
			if h == 0 {
				h = 12
			}
			dst = appendPadded(dst, int64(h), e.n)
		case 'a':
			if f.Hour < 12 {
				dst = append(dst, "AM"...)
			} else {
				dst = append(dst, "PM"...)
			}
		case 'm':
			dst = appendPadded(dst, int64(f.Minute), e.n)
		case 's':
			dst = appendPadded(dst, int64(f.Second), e.n)
		case 'S':
			div := 100_000_000
			for k := 0; k < e.n; k++ {
				dst = append(dst, byte('0'+f.Nanos/div%10))
				div /= 10
			}
		case 'E':
			if e.n >= 4 {
				dst = append(dst, dayNames[f.DayOfWeek-1]...)
			} else {
				dst = append(dst, dayNames[f.DayOfWeek-1][:3]...)
			}
		case 'u':
			dst = appendPadded(dst, int64(f.DayOfWeek), e.n)
		}
	}
	return dst
}

// numeric reports whether e reads digits.
func (e dfElem) numeric() bool {
	return e.letter != 0 && e.letter != 'a' && e.letter != 'E' && !(e.letter == 'M' && e.n >= 3)
}

// Parse reads s with the pattern into f (fields not in the pattern keep
// their values: set defaults first). ok is false when s does not match.
func (df *DateFormat) Parse(s string, f *Fields) bool {
	p := 0
	pm, hasAmPm, h12 := false, false, -1
	for k, e := range df.elems {
		if e.letter == 0 {
			if !strings.HasPrefix(s[p:], e.lit) {
				return false
			}
			p += len(e.lit)
			continue
		}
		if e.letter == 'a' {
			switch {
			case len(s)-p >= 2 && strings.EqualFold(s[p:p+2], "AM"):
			case len(s)-p >= 2 && strings.EqualFold(s[p:p+2], "PM"):
				pm = true
			default:
				return false
			}
			hasAmPm = true
			p += 2
			continue
		}
		if (e.letter == 'M' && e.n >= 3) || e.letter == 'E' {
			names := monthNames[:]
			if e.letter == 'E' {
				names = dayNames[:]
			}
			found := false
			for i, nm := range names {
				for _, cand := range []string{nm, nm[:3]} {
					if len(s)-p >= len(cand) && strings.EqualFold(s[p:p+len(cand)], cand) {
						if e.letter == 'M' {
							f.Month = i + 1
						}
						p += len(cand)
						found = true
						break
					}
				}
				if found {
					break
				}
			}
			if !found {
				return false
			}
			continue
		}
		// numbers: fixed width when the next element is a number too
		maxW := 10
		if k+1 < len(df.elems) && df.elems[k+1].numeric() || e.letter == 'S' {
			maxW = max(e.n, 1)
		}
		start := p
		var v int64
		for p < len(s) && p-start < maxW && s[p] >= '0' && s[p] <= '9' {
			v = v*10 + int64(s[p]-'0')
			p++
		}
		if p == start || (e.letter == 'S' && p-start != e.n) {
			return false
		}
		switch e.letter {
		case 'y':
			if e.n == 2 && p-start == 2 {
				v += 2000
			}
			f.Year = v
		case 'M':
			f.Month = int(v)
		case 'd':
			f.Day = int(v)
		case 'D':
			f.DayOfYear = int(v)
		case 'H':
			f.Hour = int(v)
		case 'h':
			h12 = int(v)
		case 'm':
			f.Minute = int(v)
		case 's':
			f.Second = int(v)
		case 'S':
			n := int(v)
			for d := p - start; d < 9; d++ {
				n *= 10
			}
			f.Nanos = n
		case 'u':
			f.DayOfWeek = int(v)
		}
	}
	if p != len(s) {
		return false
	}
	if h12 >= 0 {
		if h12 < 1 || h12 > 12 {
			return false
		}
		f.Hour = h12 % 12
		if hasAmPm && pm {
			f.Hour += 12
		}
	} else if hasAmPm && pm && f.Hour < 12 {
		f.Hour += 12
	}
	return f.Month >= 1 && f.Month <= 12 && f.Day >= 1 && f.Day <= 31 && f.Hour < 24 && f.Minute < 60 && f.Second < 60
}
