package expr

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

// Kernels of the time, regular-expression and SPLIT_INDEX functions
// (typed in planner/timefuncs.go). The field functions read TIMESTAMP(3)
// milliseconds (the planner casts other datetimes first). Patterns and
// date formats that are constants are compiled here, once.

// fixedCol reads a fixed-width operand row by row: a column or a constant.
type fixedCol[T any] struct {
	v    []T
	step int
	bits []byte
	off  int
	null bool
}

func newFixedCol[T any](a, c arrow.Array) fixedCol[T] {
	if a == nil {
		return fixedCol[T]{v: values[T](c), null: c.IsNull(0)}
	}
	b, off, an := bitsOf(a)
	return fixedCol[T]{v: values[T](a), step: 1, bits: b, off: off, null: an}
}

func (c *fixedCol[T]) get(i int) T { return c.v[i*c.step] }
func (c *fixedCol[T]) valid(i int) bool {
	return !c.null && (c.step == 0 || isValid(c.bits, c.off, i))
}

// binMap is f(a, b) over two fixed-width operands; NULL if either is.
type binMap[A, B, T any] struct {
	l, r operand
	dt   arrow.DataType
	f    func(A, B) T
}

func (n *binMap[A, B, T]) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	rows := int(rec.NumRows())
	arrs, err := evalArgs([]operand{n.l, n.r}, rec, mem)
	if err != nil {
		return nil, err
	}
	defer releaseAll(arrs)
	a := newFixedCol[A](arrs[0], n.l.c)
	b := newFixedCol[B](arrs[1], n.r.c)
	buf, out := allocFixed[T](mem, rows)
	vbuf, vb := allocBits(mem, rows)
	for i := 0; i < rows; i++ {
		if a.valid(i) && b.valid(i) {
			bitutil.SetBit(vb, i)
			out[i] = n.f(a.get(i), b.get(i))
		}
	}
	return makeArray(n.dt, rows, vbuf, buf), nil
}

func constString(ev Evaluator) (string, bool) {
	a := constArr(ev)
	if a == nil || a.IsNull(0) {
		return "", false
	}
	s, ok := a.(*array.String)
	if !ok {
		return "", false
	}
	return s.Value(0), true
}

func constInt32(ev Evaluator) (int32, bool) {
	a := constArr(ev)
	if a == nil || a.IsNull(0) || a.DataType().ID() != arrow.INT32 {
		return 0, false
	}
	return values[int32](a)[0], true
}

// fieldsOf breaks TIMESTAMP(3) milliseconds into calendar fields.
func fieldsOf(ms int64, f *catalog.Fields) {
	days := floorDiv(ms, msPerDay)
	rem := ms - days*msPerDay
	f.Year, f.Month, f.Day = civil(days)
	f.Hour, f.Minute, f.Second = int(rem/3_600_000), int(rem/60_000%60), int(rem/1000%60)
	f.Nanos = int(rem%1000) * 1e6
	f.DayOfYear = int(days-daysFromCivil(f.Year, 1, 1)) + 1
	f.DayOfWeek = int(floorMod(days+3, 7)) + 1 // 1970-01-01 was a Thursday; 1 = Monday
}

// isoWeek is the ISO-8601 week of the year of a date (days since the epoch).
func isoWeek(days int64) (year int64, week int) {
	dow := floorMod(days+3, 7) // 0 = Monday
	thursday := days - dow + 3
	y, _, _ := civil(thursday)
	week = int((thursday-daysFromCivil(y, 1, 1))/7) + 1
	return y, week
}

// extractFn returns the EXTRACT kernel of unit over milliseconds.
func extractFn(unit string) (func(int64) int64, error) {
	var f catalog.Fields
	switch unit {
	case "YEAR":
		return func(ms int64) int64 { y, _, _ := civil(floorDiv(ms, msPerDay)); return y }, nil
	case "QUARTER":
		return func(ms int64) int64 { _, m, _ := civil(floorDiv(ms, msPerDay)); return int64((m-1)/3 + 1) }, nil
	case "MONTH":
		return func(ms int64) int64 { _, m, _ := civil(floorDiv(ms, msPerDay)); return int64(m) }, nil
	case "DAY":
		return func(ms int64) int64 { _, _, d := civil(floorDiv(ms, msPerDay)); return int64(d) }, nil
	case "HOUR":
		return func(ms int64) int64 { return floorMod(ms, msPerDay) / 3_600_000 }, nil
	case "MINUTE":
		return func(ms int64) int64 { return floorMod(ms, 3_600_000) / 60_000 }, nil
	case "SECOND":
		return func(ms int64) int64 { return floorMod(ms, 60_000) / 1000 }, nil
	case "MILLISECOND":
		return func(ms int64) int64 { return floorMod(ms, 60_000) }, nil
	case "MICROSECOND":
		return func(ms int64) int64 { return floorMod(ms, 60_000) * 1000 }, nil
	case "NANOSECOND":
		return func(ms int64) int64 { return floorMod(ms, 60_000) * 1_000_000 }, nil
	case "DOW": // 1 = Sunday .. 7 = Saturday (Flink's DAYOFWEEK)
		return func(ms int64) int64 { return floorMod(floorDiv(ms, msPerDay)+4, 7) + 1 }, nil
	case "ISODOW": // 1 = Monday .. 7 = Sunday
		return func(ms int64) int64 { return floorMod(floorDiv(ms, msPerDay)+3, 7) + 1 }, nil
	case "DOY":
		return func(ms int64) int64 { fieldsOf(ms, &f); return int64(f.DayOfYear) }, nil
	case "WEEK":
		return func(ms int64) int64 { _, w := isoWeek(floorDiv(ms, msPerDay)); return int64(w) }, nil
	case "ISOYEAR":
		return func(ms int64) int64 { y, _ := isoWeek(floorDiv(ms, msPerDay)); return y }, nil
	case "EPOCH":
		return func(ms int64) int64 { return floorDiv(ms, 1000) }, nil
	case "DECADE":
		return func(ms int64) int64 { y, _, _ := civil(floorDiv(ms, msPerDay)); return floorDiv(y, 10) }, nil
	case "CENTURY":
		return func(ms int64) int64 {
			y, _, _ := civil(floorDiv(ms, msPerDay))
			if y > 0 {
				return (y + 99) / 100
			}
			return -((-y + 99) / 100)
		}, nil
	case "MILLENNIUM":
		return func(ms int64) int64 {
			y, _, _ := civil(floorDiv(ms, msPerDay))
			if y > 0 {
				return (y + 999) / 1000
			}
			return -((-y + 999) / 1000)
		}, nil
	}
	return nil, fmt.Errorf("unsupported EXTRACT unit %s", unit)
}

// floorFn returns FLOOR(ms TO unit) (ceil: CEIL).
func floorFn(unit string, ceil bool) (func(int64) int64, error) {
	var fl func(int64) int64
	if step, ok := map[string]int64{"MILLISECOND": 1, "SECOND": 1000, "MINUTE": 60_000, "HOUR": 3_600_000, "DAY": msPerDay}[unit]; ok {
		fl = func(ms int64) int64 { return floorDiv(ms, step) * step }
	} else {
		switch unit {
		case "WEEK": // weeks start on Sunday, as Calcite's
			fl = func(ms int64) int64 {
				d := floorDiv(ms, msPerDay)
				return (d - floorMod(d+4, 7)) * msPerDay
			}
		case "MONTH", "QUARTER", "YEAR":
			fl = func(ms int64) int64 {
				y, m, _ := civil(floorDiv(ms, msPerDay))
				switch unit {
				case "QUARTER":
					m = (m-1)/3*3 + 1
				case "YEAR":
					m = 1
				}
				return daysFromCivil(y, m, 1) * msPerDay
			}
		default:
			return nil, fmt.Errorf("unsupported unit %s", unit)
		}
	}
	if !ceil {
		return fl, nil
	}
	return func(ms int64) int64 {
		f := fl(ms)
		if f == ms {
			return ms
		}
		switch unit {
		case "MONTH":
			return addMonths(f, 1)
		case "QUARTER":
			return addMonths(f, 3)
		case "YEAR":
			return addMonths(f, 12)
		case "WEEK":
			return f + 7*msPerDay
		}
		return fl(ms) + map[string]int64{"MILLISECOND": 1, "SECOND": 1000, "MINUTE": 60_000, "HOUR": 3_600_000, "DAY": msPerDay}[unit]
	}, nil
}

func daysIn(y int64, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// addMonths adds n months to wall-clock milliseconds; a day past the end
// of the target month becomes its last day (as Flink, 2024-01-31 + 1
// MONTH = 2024-02-29).
func addMonths(ms int64, n int64) int64 {
	days := floorDiv(ms, msPerDay)
	rem := ms - days*msPerDay
	y, m, d := civil(days)
	t := y*12 + int64(m-1) + n
	ny, nm := floorDiv(t, 12), int(floorMod(t, 12))+1
	d = min(d, daysIn(ny, nm))
	return daysFromCivil(ny, nm, d)*msPerDay + rem
}

// monthsBetween is TIMESTAMPDIFF(MONTH, a, b): whole months from a to b.
func monthsBetween(a, b int64) int64 {
	ad, bd := floorDiv(a, msPerDay), floorDiv(b, msPerDay)
	ay, am, _ := civil(ad)
	by, bm, _ := civil(bd)
	n := (by-ay)*12 + int64(bm-am)
	// not a whole month yet: b's day-of-month and time before a's
	if n > 0 && addMonths(a, n) > b {
		n--
	} else if n < 0 && addMonths(a, n) < b {
		n++
	}
	return n
}

func (cp *compiler) compileTimeFn(c *planner.Call, args []Evaluator) (Evaluator, error) {
	dt := c.T.ArrowType()
	switch c.Fn {
	case "extract":
		unit, _ := constString(args[0])
		f, err := extractFn(unit)
		if err != nil {
			return nil, err
		}
		return &convNode[int64, int64]{arg: args[1], dt: dt, f: f}, nil
	case "floor_to", "ceil_to":
		unit, _ := constString(args[1])
		f, err := floorFn(unit, c.Fn == "ceil_to")
		if err != nil {
			return nil, err
		}
		return &convNode[int64, int64]{arg: args[0], dt: dt, f: f}, nil
	case "dt_add_ms", "dt_add_months":
		sign, _ := constInt32(args[2])
		loc, err := zoneArg(c, 3)
		if err != nil {
			return nil, err
		}
		return dtAdd(c.Fn == "dt_add_months", c.Args[0].Type(), newOperand(args[0]), newOperand(args[1]), int64(sign), loc, dt)
	case "iv_add", "iv_sub":
		sign := int64(1)
		if c.Fn == "iv_sub" {
			sign = -1
		}
		if c.T.Kind == catalog.KindIntervalYM {
			return &binMap[int32, int32, int32]{l: newOperand(args[0]), r: newOperand(args[1]), dt: dt, f: func(a, b int32) int32 { return a + int32(sign)*b }}, nil
		}
		return &binMap[int64, int64, int64]{l: newOperand(args[0]), r: newOperand(args[1]), dt: dt, f: func(a, b int64) int64 { return a + sign*b }}, nil
	case "ts_diff":
		unit, _ := constString(args[2])
		var f func(a, b int64) int32
		if step, ok := map[string]int64{"MILLISECOND": 1, "SECOND": 1000, "MINUTE": 60_000, "HOUR": 3_600_000, "DAY": msPerDay, "WEEK": 7 * msPerDay}[unit]; ok {
			f = func(a, b int64) int32 { return int32((b - a) / step) }
		} else {
			div := map[string]int64{"MONTH": 1, "QUARTER": 3, "YEAR": 12}[unit]
			if div == 0 {
				return nil, fmt.Errorf("unsupported TIMESTAMPDIFF unit %s", unit)
			}
			f = func(a, b int64) int32 { return int32(monthsBetween(a, b) / div) }
		}
		return &binMap[int64, int64, int32]{l: newOperand(args[0]), r: newOperand(args[1]), dt: dt, f: f}, nil
	case "current_timestamp", "proctime", "localtimestamp", "current_date", "current_time", "unix_timestamp":
		loc, err := zoneArg(c, 0)
		if err != nil {
			return nil, err
		}
		return &nowNode{fn: c.Fn, now: cp.now, loc: loc, dt: dt}, nil
	case "to_timestamp_ltz":
		p, _ := constInt32(args[1])
		mul := int64(1)
		if p == 0 {
			mul = 1000
		}
		return &convNode[int64, int64]{arg: args[0], dt: dt, f: func(v int64) int64 { return v * mul }}, nil
	case "date_format", "from_unixtime", "to_timestamp", "to_date", "unix_timestamp_str":
		return cp.compileFormatFn(c, args)
	case "regexp", "regexp_extract", "regexp_replace":
		return compileRegexp(c, args)
	case "split_index":
		return &splitIndexNode{args: []operand{newOperand(args[0]), newOperand(args[1]), newOperand(args[2])}}, nil
	case "field":
		idx, _ := constInt32(args[1])
		return &fieldNode{arg: args[0], idx: int(idx)}, nil
	}
	return nil, fmt.Errorf("unknown function %q", c.Fn)
}

// dtAdd builds datetime + amount * sign for DATE, TIME, TIMESTAMP(p) and
// TIMESTAMP_LTZ(p) (months in the zone's calendar).
func dtAdd(months bool, t catalog.Type, l, r operand, sign int64, loc *time.Location, dt arrow.DataType) (Evaluator, error) {
	upm := t.UnitsPerMilli()
	switch t.Kind {
	case catalog.KindDate:
		if months {
			return &binMap[int32, int32, int32]{l: l, r: r, dt: dt, f: func(d, n int32) int32 {
				return int32(addMonths(int64(d)*msPerDay, sign*int64(n)) / msPerDay)
			}}, nil
		}
		return &binMap[int32, int64, int32]{l: l, r: r, dt: dt, f: func(d int32, ms int64) int32 {
			return d + int32(sign*ms/msPerDay)
		}}, nil
	case catalog.KindTime:
		return &binMap[int32, int64, int32]{l: l, r: r, dt: dt, f: func(t int32, ms int64) int32 {
			return int32(floorMod(int64(t)+sign*ms, msPerDay))
		}}, nil
	case catalog.KindTimestamp:
		if months {
			return &binMap[int64, int32, int64]{l: l, r: r, dt: dt, f: func(v int64, n int32) int64 {
				ms := floorDiv(v, upm)
				return addMonths(ms, sign*int64(n))*upm + (v - ms*upm)
			}}, nil
		}
		return &binMap[int64, int64, int64]{l: l, r: r, dt: dt, f: func(v, ms int64) int64 { return v + sign*ms*upm }}, nil
	case catalog.KindTimestampLTZ:
		if months {
			return &binMap[int64, int32, int64]{l: l, r: r, dt: dt, f: func(v int64, n int32) int64 {
				ms := floorDiv(v, upm)
				local := ms + zoneOffsetMillis(ms, loc)
				return localToUTCMillis(addMonths(local, sign*int64(n)), loc)*upm + (v - ms*upm)
			}}, nil
		}
		return &binMap[int64, int64, int64]{l: l, r: r, dt: dt, f: func(v, ms int64) int64 { return v + sign*ms*upm }}, nil
	}
	return nil, fmt.Errorf("cannot add an interval to %s", t)
}

// nowNode is CURRENT_TIMESTAMP, LOCALTIMESTAMP, CURRENT_DATE, CURRENT_TIME
// and UNIX_TIMESTAMP(): the job's clock, read once per batch (every row of
// a batch is evaluated at the same instant). Not reproducible.
type nowNode struct {
	fn  string
	now func() time.Time
	loc *time.Location
	dt  arrow.DataType
}

func (n *nowNode) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	now := time.Now
	if n.now != nil {
		now = n.now
	}
	ms := now().UnixMilli()
	local := ms + zoneOffsetMillis(ms, n.loc)
	rows := int(rec.NumRows())
	switch n.fn {
	case "current_timestamp", "proctime":
		return fill(n.dt, ms, rows, mem), nil
	case "unix_timestamp":
		return fill(n.dt, floorDiv(ms, 1000), rows, mem), nil
	case "localtimestamp":
		return fill(n.dt, local, rows, mem), nil
	case "current_date":
		return fill(n.dt, int32(floorDiv(local, msPerDay)), rows, mem), nil
	}
	return fill(n.dt, int32(floorMod(local, msPerDay)/1000*1000), rows, mem), nil
}

// fieldNode reads field idx of a ROW: NULL where the row is NULL.
type fieldNode struct {
	arg Evaluator
	idx int
}

func (n *fieldNode) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	a, err := n.arg.Eval(rec, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	if a.DataType().ID() == arrow.NULL {
		return array.NewNull(a.Len()), nil
	}
	st := a.(*array.Struct)
	child := st.Field(n.idx)
	if st.NullN() == 0 {
		child.Retain()
		return child, nil
	}
	rows := st.Len()
	valid := andValidity(mem, rows, st, child)
	d := child.Data()
	bufs := append([]*memory.Buffer{valid}, d.Buffers()[1:]...)
	nulls := rows
	if valid != nil {
		nulls = rows - bitutil.CountSetBits(valid.Bytes(), 0, rows)
	}
	nd := array.NewData(d.DataType(), rows, bufs, d.Children(), nulls, d.Offset())
	if valid != nil {
		valid.Release()
	}
	out := array.MakeFromData(nd)
	nd.Release()
	return out, nil
}

// splitIndexNode is SPLIT_INDEX(s, delimiter, index): the index-th (from 0)
// piece of s, NULL when there is none (Flink).
type splitIndexNode struct{ args []operand }

func (n *splitIndexNode) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	rows := int(rec.NumRows())
	arrs, err := evalArgs(n.args, rec, mem)
	if err != nil {
		return nil, err
	}
	defer releaseAll(arrs)
	s, d := newStrCol(arrs[0], n.args[0].c), newStrCol(arrs[1], n.args[1].c)
	ix := newIntCol(arrs[2], n.args[2].c)
	so := newStrOut(mem, rows, 0)
	vbuf, vb := allocBits(mem, rows)
	for i := 0; i < rows; i++ {
		if !s.valid(i) || !d.valid(i) || !ix.valid(i) || ix.get(i) < 0 {
			so.appendEmpty()
			continue
		}
		str, delim, k := s.get(i), d.get(i), int(ix.get(i))
		piece, found := splitField(str, delim, k)
		if !found {
			so.appendEmpty()
			continue
		}
		bitutil.SetBit(vb, i)
		so.appendString(piece)
	}
	return so.finish(vbuf), nil
}

// splitField is field k (from 0) of str split at delim; false when str
// has fewer than k delimiters (an empty delimiter: str is field 0). A
// one-byte delimiter takes one pass counting them (fields are short: a
// loop beats a call of IndexByte per field, ~20 against ~33 ns a field of
// a URL); a longer one, strings.Index per field.
func splitField(str, delim string, k int) (string, bool) {
	switch len(delim) {
	case 0:
		return str, k == 0
	case 1:
		c, j, start := delim[0], 0, 0
		for i := 0; i < len(str); i++ {
			if str[i] == c {
				if j == k {
					return str[start:i], true
				}
				j++
				start = i + 1
			}
		}
		if j == k {
			return str[start:], true
		}
		return "", false
	}
	for j := 0; ; j++ {
		p := strings.Index(str, delim)
		if j == k {
			if p < 0 {
				return str, true
			}
			return str[:p], true
		}
		if p < 0 {
			return "", false
		}
		str = str[p+len(delim):]
	}
}

// regexpNode is REGEXP (a match anywhere), REGEXP_EXTRACT and
// REGEXP_REPLACE with Go's regexp (RE2: no back-references or
// look-around). A constant pattern is compiled once; a pattern column is
// compiled per distinct value in a batch.
type regexpNode struct {
	fn    string
	args  []operand
	re    *compiledRe // constant pattern
	repl  string      // constant replacement, translated
	hasRp bool
}

func compileRegexp(c *planner.Call, args []Evaluator) (Evaluator, error) {
	n := &regexpNode{fn: c.Fn}
	for _, a := range args {
		n.args = append(n.args, newOperand(a))
	}
	if p, ok := constString(args[1]); ok {
		re, err := compileRe(p)
		if err != nil {
			return nil, fmt.Errorf("invalid regular expression '%s': %v", p, err)
		}
		n.re = &re
	}
	if c.Fn == "regexp_replace" {
		if r, ok := constString(args[2]); ok {
			n.repl, n.hasRp = javaReplacement(r), true
		}
	}
	return n, nil
}

// javaReplacement translates Java's replacement syntax ($1, \$) to Go's
// (${1}, $$).
func javaReplacement(r string) string {
	var sb strings.Builder
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '\\' && i+1 < len(r):
			i++
			if r[i] == '$' {
				sb.WriteString("$$")
			} else {
				sb.WriteByte(r[i])
			}
		case c == '$' && i+1 < len(r) && r[i+1] >= '0' && r[i+1] <= '9':
			j := i + 1
			for j < len(r) && r[j] >= '0' && r[j] <= '9' {
				j++
			}
			sb.WriteString("${" + r[i+1:j] + "}")
			i = j - 1
		case c == '$':
			sb.WriteString("$$")
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

func (n *regexpNode) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	rows := int(rec.NumRows())
	arrs, err := evalArgs(n.args, rec, mem)
	if err != nil {
		return nil, err
	}
	defer releaseAll(arrs)
	s, p := newStrCol(arrs[0], n.args[0].c), newStrCol(arrs[1], n.args[1].c)
	var cache map[string]*compiledRe
	pattern := func(i int) (*compiledRe, error) {
		if n.re != nil {
			return n.re, nil
		}
		ps := p.get(i)
		if re, ok := cache[ps]; ok {
			return re, nil
		}
		re, err := compileRe(ps)
		if err != nil {
			return nil, fmt.Errorf("invalid regular expression '%s': %v", ps, err)
		}
		if cache == nil {
			cache = map[string]*compiledRe{}
		}
		cache[ps] = &re
		return &re, nil
	}
	vbuf, vb := allocBits(mem, rows)
	if n.fn == "regexp" {
		buf, out := allocBits(mem, rows)
		for i := 0; i < rows; i++ {
			if !s.valid(i) || !p.valid(i) {
				continue
			}
			re, err := pattern(i)
			if err != nil {
				buf.Release()
				vbuf.Release()
				return nil, err
			}
			bitutil.SetBit(vb, i)
			if r, sub, _, ok := re.search(s.get(i)); ok && r.MatchString(sub) {
				bitutil.SetBit(out, i)
			}
		}
		return makeArray(arrow.FixedWidthTypes.Boolean, rows, vbuf, buf), nil
	}
	so := newStrOut(mem, rows, 0)
	var third strCol
	var idx intCol
	has3 := len(arrs) == 3
	if has3 && n.fn == "regexp_replace" {
		third = newStrCol(arrs[2], n.args[2].c)
	} else if has3 {
		idx = newIntCol(arrs[2], n.args[2].c)
	}
	var dst []byte
	for i := 0; i < rows; i++ {
		ok := s.valid(i) && p.valid(i)
		if has3 {
			if n.fn == "regexp_replace" {
				ok = ok && third.valid(i)
			} else {
				ok = ok && idx.valid(i)
			}
		}
		if !ok {
			so.appendEmpty()
			continue
		}
		re, err := pattern(i)
		if err != nil {
			so.release()
			vbuf.Release()
			return nil, err
		}
		str := s.get(i)
		if n.fn == "regexp_replace" {
			repl := n.repl
			if !n.hasRp {
				repl = javaReplacement(third.get(i))
			}
			bitutil.SetBit(vb, i)
			r, sub, off, ok := re.search(str)
			if !ok {
				so.appendString(str) // no match: the string as it is
				continue
			}
			// every match lies in sub: the bytes before it stay
			so.appendString(str[:off] + r.ReplaceAllString(sub, repl))
			continue
		}
		g := 1
		if has3 {
			g = int(idx.get(i))
		}
		var m []int
		if r, sub, _, ok := re.search(str); ok {
			m, str = r.FindStringSubmatchIndex(sub), sub
		}
		if m == nil || g < 0 || 2*g+1 >= len(m) || m[2*g] < 0 {
			so.appendEmpty()
			continue
		}
		bitutil.SetBit(vb, i)
		dst = append(dst[:0], str[m[2*g]:m[2*g+1]]...)
		so.appendBytes(dst)
	}
	return so.finish(vbuf), nil
}
