package expr

import (
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/planner"
)

// formatFn is DATE_FORMAT, FROM_UNIXTIME (formatting) and TO_TIMESTAMP,
// TO_DATE, UNIX_TIMESTAMP(s, fmt) (parsing) with Java-style patterns,
// translated once per distinct pattern (once at compile time when the
// pattern is a constant).
type formatFn struct {
	fn   string
	args []operand
	df   *catalog.DateFormat // constant pattern
	loc  *time.Location
	dt   arrow.DataType
}

func (cp *compiler) compileFormatFn(c *planner.Call, args []Evaluator) (Evaluator, error) {
	n := &formatFn{fn: c.Fn, dt: c.T.ArrowType(), loc: time.UTC}
	for _, a := range args[:2] {
		n.args = append(n.args, newOperand(a))
	}
	if p, ok := constString(args[1]); ok {
		df, err := catalog.CompileDateFormat(p)
		if err != nil {
			return nil, fmt.Errorf("bad format '%s': %v", p, err)
		}
		n.df = df
	}
	if c.Fn == "from_unixtime" || c.Fn == "unix_timestamp_str" {
		loc, err := zoneArg(c, 2)
		if err != nil {
			return nil, err
		}
		n.loc = loc
	}
	return n, nil
}

func (n *formatFn) Eval(rec arrow.Record, mem memory.Allocator) (arrow.Array, error) {
	rows := int(rec.NumRows())
	arrs, err := evalArgs(n.args, rec, mem)
	if err != nil {
		return nil, err
	}
	defer releaseAll(arrs)
	if n.fn == "date_format" && n.df != nil && n.df.DateOnly() && arrs[0] != nil {
		return n.formatDays(arrs[0], rows, mem), nil
	}
	pat := newStrCol(arrs[1], n.args[1].c)
	var cache map[string]*catalog.DateFormat
	format := func(i int) (*catalog.DateFormat, error) {
		if n.df != nil {
			return n.df, nil
		}
		p := pat.get(i)
		if df, ok := cache[p]; ok {
			return df, nil
		}
		df, err := catalog.CompileDateFormat(p)
		if err != nil {
			return nil, fmt.Errorf("bad format '%s': %v", p, err)
		}
		if cache == nil {
			cache = map[string]*catalog.DateFormat{}
		}
		cache[p] = df
		return df, nil
	}
	vbuf, vb := allocBits(mem, rows)
	var f catalog.Fields
	switch n.fn {
	case "date_format", "from_unixtime":
		v := newFixedCol[int64](arrs[0], n.args[0].c)
		so := newStrOut(mem, rows, rows*20)
		var dst []byte
		// a constant pattern of date fields only ('yyyy-MM-dd') formats
		// a day once: rows of the same day reuse the text
		memo := n.df != nil && n.df.DateOnly()
		lastDay := int64(math.MinInt64)
		for i := 0; i < rows; i++ {
			if !v.valid(i) || !pat.valid(i) {
				so.appendEmpty()
				continue
			}
			df, err := format(i)
			if err != nil {
				so.release()
				vbuf.Release()
				return nil, err
			}
			ms := v.get(i)
			if n.fn == "from_unixtime" {
				ms *= 1000
				ms += zoneOffsetMillis(ms, n.loc)
			}
			if day := floorDiv(ms, msPerDay); !memo || day != lastDay {
				fieldsOf(ms, &f)
				dst = df.Append(dst[:0], &f)
				lastDay = day
			}
			bitutil.SetBit(vb, i)
			so.appendBytes(dst)
		}
		return so.finish(vbuf), nil
	}
	s := newStrCol(arrs[0], n.args[0].c)
	var buf *memory.Buffer
	var i64 []int64
	var i32 []int32
	if n.fn == "to_date" {
		buf, i32 = allocFixed[int32](mem, rows)
	} else {
		buf, i64 = allocFixed[int64](mem, rows)
	}
	for i := 0; i < rows; i++ {
		if !s.valid(i) || !pat.valid(i) {
			continue
		}
		df, err := format(i)
		if err != nil {
			buf.Release()
			vbuf.Release()
			return nil, err
		}
		f = catalog.Fields{Year: 1970, Month: 1, Day: 1}
		if !df.Parse(s.get(i), &f) || f.Day > daysIn(f.Year, f.Month) {
			continue // NULL, as Flink
		}
		days := daysFromCivil(f.Year, f.Month, f.Day)
		ms := days*msPerDay + int64(f.Hour)*3_600_000 + int64(f.Minute)*60_000 + int64(f.Second)*1000 + int64(f.Nanos/1e6)
		bitutil.SetBit(vb, i)
		switch n.fn {
		case "to_date":
			i32[i] = int32(days)
		case "to_timestamp":
			i64[i] = ms
		default: // unix_timestamp_str
			i64[i] = floorDiv(localToUTCMillis(ms, n.loc), 1000)
		}
	}
	return makeArray(n.dt, rows, vbuf, buf), nil
}

// formatDays is DATE_FORMAT(ts, pattern) of a constant pattern of date
// fields only over a column ts: every instant of a day formats the same,
// so a day's text is formatted once and copied to each row of the day
// (a row of the day before's checks two bounds, no division). NULL in,
// NULL out.
func (n *formatFn) formatDays(ts arrow.Array, rows int, mem memory.Allocator) arrow.Array {
	vals := values[int64](ts)
	vbits, voff, _ := bitsOf(ts)
	so := newStrOut(mem, rows, rows*10)
	var text []byte
	var f catalog.Fields
	lo, hi := int64(1), int64(0) // the day of text: [lo, hi)
	for i := 0; i < rows; {
		if !isValid(vbits, voff, i) {
			so.appendEmpty()
			i++
			continue
		}
		ms := vals[i]
		if ms < lo || ms >= hi {
			day := floorDiv(ms, msPerDay)
			lo, hi = day*msPerDay, day*msPerDay+msPerDay
			fieldsOf(ms, &f)
			text = n.df.Append(text[:0], &f)
			so.grow(len(text) * (rows - i)) // no growth until the next day
		}
		// the run of valid rows of this day: the text written once, then
		// copied from what the run wrote (doubling), its ends computed
		j := i + 1
		for j < rows && vals[j] >= lo && vals[j] < hi && isValid(vbits, voff, j) {
			j++
		}
		at := len(so.data)
		so.data = append(so.data, text...)
		for k := len(text); k < len(text)*(j-i); k *= 2 {
			so.data = append(so.data, so.data[at:at+min(k, len(text)*(j-i)-k)]...)
		}
		for k := i; k < j; k++ {
			at += len(text)
			so.offs = append(so.offs, int32(at))
		}
		i = j
	}
	return so.finish(andValidity(mem, rows, ts))
}
