package expr

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/planner"
)

// likeKind classifies a pattern for a fast path.
type likeKind uint8

const (
	likeGeneral  likeKind = iota
	likeExact             // abc
	likePrefix            // abc%
	likeSuffix            // %abc
	likeContains          // %abc%
	likeAll               // % (matches everything)
)

// segItem is one element of a segment: a literal string or a run of '_'.
type segItem struct {
	lit  string
	anyN int // number of '_' (any single character)
}

// likePattern is a compiled LIKE pattern: segments separated by '%'.
type likePattern struct {
	kind     likeKind
	lit      string // for the fast paths
	segs     [][]segItem
	leadPct  bool // pattern starts with %
	trailPct bool // pattern ends with %
}

// compilePattern parses a LIKE pattern; escape is "" or one character.
func compilePattern(p, escape string) (*likePattern, error) {
	var esc rune = -1
	if escape != "" {
		r, size := utf8.DecodeRuneInString(escape)
		if size != len(escape) {
			return nil, fmt.Errorf("LIKE escape must be a single character, got %q", escape)
		}
		esc = r
	}
	lp := &likePattern{}
	var segs [][]segItem
	var cur []segItem
	var lit strings.Builder
	flushLit := func() {
		if lit.Len() > 0 {
			cur = append(cur, segItem{lit: lit.String()})
			lit.Reset()
		}
	}
	pctCount := 0
	hasUnderscore := false
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		i += size
		switch {
		case r == esc:
			if i >= len(p) {
				return nil, fmt.Errorf("LIKE pattern %q ends with the escape character", p)
			}
			r2, s2 := utf8.DecodeRuneInString(p[i:])
			if r2 != '%' && r2 != '_' && r2 != esc {
				return nil, fmt.Errorf("invalid escape sequence in LIKE pattern %q", p)
			}
			i += s2
			lit.WriteRune(r2)
		case r == '%':
			flushLit()
			segs = append(segs, cur)
			cur = nil
			pctCount++
			if i == size {
				lp.leadPct = true
			}
			if i == len(p) {
				lp.trailPct = true
			}
		case r == '_':
			flushLit()
			hasUnderscore = true
			if n := len(cur); n > 0 && cur[n-1].lit == "" {
				cur[n-1].anyN++
			} else {
				cur = append(cur, segItem{anyN: 1})
			}
		default:
			lit.WriteRune(r)
		}
	}
	flushLit()
	segs = append(segs, cur)
	lp.segs = segs
	if !hasUnderscore {
		single := func(s []segItem) (string, bool) {
			switch len(s) {
			case 0:
				return "", true
			case 1:
				return s[0].lit, true
			}
			return "", false
		}
		switch {
		case pctCount == 0:
			lp.kind = likeExact
			lp.lit, _ = single(segs[0])
		case pctCount == 1 && lp.trailPct && len(segs[0]) <= 1:
			lp.kind = likePrefix
			lp.lit, _ = single(segs[0])
		case pctCount == 1 && lp.leadPct && len(segs[1]) <= 1:
			lp.kind = likeSuffix
			lp.lit, _ = single(segs[1])
		case pctCount == 2 && lp.leadPct && lp.trailPct && len(segs[1]) <= 1:
			lp.kind = likeContains
			lp.lit, _ = single(segs[1])
		}
		if lp.kind != likeGeneral && lp.kind != likeExact && lp.lit == "" {
			lp.kind = likeAll
		}
	}
	return lp, nil
}

// match reports whether s matches the pattern.
func (lp *likePattern) match(s string) bool {
	switch lp.kind {
	case likeExact:
		return s == lp.lit
	case likePrefix:
		return strings.HasPrefix(s, lp.lit)
	case likeSuffix:
		return strings.HasSuffix(s, lp.lit)
	case likeContains:
		return strings.Contains(s, lp.lit)
	case likeAll:
		return true
	}
	segs := lp.segs
	if len(segs) == 1 {
		end, ok := matchSeg(s, 0, segs[0])
		return ok && end == len(s)
	}
	// first segment anchored at the start
	pos, ok := matchSeg(s, 0, segs[0])
	if !ok {
		return false
	}
	// middle segments: leftmost occurrence
	for _, seg := range segs[1 : len(segs)-1] {
		found := false
		for start := pos; start <= len(s); {
			if end, ok := matchSeg(s, start, seg); ok {
				pos, found = end, true
				break
			}
			if start == len(s) {
				break
			}
			_, size := utf8.DecodeRuneInString(s[start:])
			start += size
		}
		if !found {
			return false
		}
	}
	// last segment anchored at the end
	last := segs[len(segs)-1]
	for start := pos; start <= len(s); {
		if end, ok := matchSeg(s, start, last); ok && end == len(s) {
			return true
		}
		if start == len(s) {
			break
		}
		_, size := utf8.DecodeRuneInString(s[start:])
		start += size
	}
	return false
}

// matchSeg matches seg at byte position i of s and returns the end.
func matchSeg(s string, i int, seg []segItem) (int, bool) {
	for _, it := range seg {
		if it.lit != "" {
			if !strings.HasPrefix(s[i:], it.lit) {
				return 0, false
			}
			i += len(it.lit)
			continue
		}
		for k := 0; k < it.anyN; k++ {
			if i >= len(s) {
				return 0, false
			}
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
	}
	return i, true
}

// likeNode is [NOT] LIKE. A constant pattern (and escape) is compiled once;
// otherwise the last pattern seen is cached.
type likeNode struct {
	not   bool
	args  []operand
	fixed *likePattern
}

func compileLike(c *planner.Call, args []Evaluator) (Evaluator, error) {
	n := &likeNode{not: c.Fn == "not_like"}
	for _, a := range args {
		n.args = append(n.args, newOperand(a))
	}
	pc := n.args[1].c
	escC := len(n.args) < 3 || n.args[2].c != nil
	if pc != nil && escC {
		esc := ""
		if len(n.args) == 3 {
			esc = n.args[2].c.(*array.String).Value(0)
		}
		lp, err := compilePattern(pc.(*array.String).Value(0), esc)
		if err != nil {
			return nil, err
		}
		n.fixed = lp
	}
	return n, nil
}

func (n *likeNode) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	rows := int(rec.NumRows())
	ops := n.args
	if n.fixed != nil {
		ops = ops[:1]
	}
	arrs, err := evalArgs(ops, rec, mem)
	if err != nil {
		return nil, err
	}
	defer releaseAll(arrs)
	valid, vb := writableValidity(mem, rows, arrs...)
	buf, out := allocBits(mem, rows)
	s := newStrCol(arrs[0], n.args[0].c)
	if n.fixed != nil {
		for i := 0; i < rows; i++ {
			if bitutil.BitIsSet(vb, i) && n.fixed.match(s.get(i)) != n.not {
				bitutil.SetBit(out, i)
			}
		}
		return makeArray(arrow.FixedWidthTypes.Boolean, rows, valid, buf), nil
	}
	p := newStrCol(arrs[1], n.args[1].c)
	var e strCol
	if len(arrs) == 3 {
		e = newStrCol(arrs[2], n.args[2].c)
	}
	var lastP, lastE string
	var lp *likePattern
	for i := 0; i < rows; i++ {
		if !bitutil.BitIsSet(vb, i) || !p.valid(i) || (len(arrs) == 3 && !e.valid(i)) {
			bitutil.ClearBit(vb, i)
			continue
		}
		pat, esc := p.get(i), ""
		if len(arrs) == 3 {
			esc = e.get(i)
		}
		if lp == nil || pat != lastP || esc != lastE {
			if lp, err = compilePattern(pat, esc); err != nil {
				buf.Release()
				valid.Release()
				return nil, err
			}
			lastP, lastE = pat, esc
		}
		if lp.match(s.get(i)) != n.not {
			bitutil.SetBit(out, i)
		}
	}
	return makeArray(arrow.FixedWidthTypes.Boolean, rows, valid, buf), nil
}
