package parser

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
)

// IntervalFunc is the function name (lower-case, as in FuncCallExpr.FnName.L)
// by which the pre-lexer replaces an INTERVAL literal in an expression:
//
//	INTERVAL '5' SECOND   ->  __ssql_interval('5000', 'SECOND')
//
// Use IntervalOf rather than reading the arguments.
const IntervalFunc = "__ssql_interval"

// Interval is the value of an INTERVAL literal. Year-month intervals
// (YEAR, MONTH, YEAR TO MONTH) count months; all others count milliseconds.
type Interval struct {
	YearMonth bool
	Months    int64
	Millis    int64
	// Unit is the normalized unit: SECOND, MINUTE, HOUR, DAY, MONTH, YEAR or
	// "<unit> TO <unit>" (e.g. "DAY TO SECOND").
	Unit string
}

func (iv Interval) String() string {
	if iv.YearMonth {
		return fmt.Sprintf("INTERVAL %d MONTH", iv.Months)
	}
	return fmt.Sprintf("INTERVAL %d MILLISECOND", iv.Millis)
}

// IntervalOf reports whether e is an INTERVAL literal rewritten by the
// pre-lexer, and returns its value.
func IntervalOf(e ast.ExprNode) (Interval, bool) {
	fc, ok := e.(*ast.FuncCallExpr)
	if !ok || fc.FnName.L != IntervalFunc || len(fc.Args) != 2 {
		return Interval{}, false
	}
	v, ok1 := fc.Args[0].(ast.ValueExpr)
	u, ok2 := fc.Args[1].(ast.ValueExpr)
	if !ok1 || !ok2 {
		return Interval{}, false
	}
	n, err := strconv.ParseInt(v.GetString(), 10, 64)
	if err != nil {
		return Interval{}, false
	}
	iv := Interval{Unit: u.GetString()}
	iv.YearMonth = isYearMonthUnit(iv.Unit)
	if iv.YearMonth {
		iv.Months = n
	} else {
		iv.Millis = n
	}
	return iv, true
}

// FrameInterval returns the interval of a window frame bound written as
// `RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW` (the pre-lexer
// leaves those to TiDB's grammar, which keeps the literal and a unit).
func FrameInterval(fb *ast.FrameBound) (Interval, error) {
	if fb == nil || fb.Expr == nil {
		return Interval{}, fmt.Errorf("frame bound has no INTERVAL")
	}
	v, ok := fb.Expr.(ast.ValueExpr)
	if !ok {
		return Interval{}, fmt.Errorf("frame bound INTERVAL must be a literal")
	}
	unit, ok := frameUnitNames[fb.Unit]
	if !ok {
		return Interval{}, fmt.Errorf("unsupported INTERVAL unit in window frame")
	}
	return parseIntervalValue(v.GetString(), unit)
}

var frameUnitNames = map[ast.TimeUnitType]string{
	ast.TimeUnitSecond:       "SECOND",
	ast.TimeUnitMinute:       "MINUTE",
	ast.TimeUnitHour:         "HOUR",
	ast.TimeUnitDay:          "DAY",
	ast.TimeUnitMonth:        "MONTH",
	ast.TimeUnitYear:         "YEAR",
	ast.TimeUnitYearMonth:    "YEAR TO MONTH",
	ast.TimeUnitDayHour:      "DAY TO HOUR",
	ast.TimeUnitDayMinute:    "DAY TO MINUTE",
	ast.TimeUnitDaySecond:    "DAY TO SECOND",
	ast.TimeUnitHourMinute:   "HOUR TO MINUTE",
	ast.TimeUnitHourSecond:   "HOUR TO SECOND",
	ast.TimeUnitMinuteSecond: "MINUTE TO SECOND",
}

// tidbUnit is TiDB's spelling of a normalized unit (DAY TO SECOND -> DAY_SECOND).
func tidbUnit(unit string) string { return strings.ReplaceAll(unit, " TO ", "_") }

func isYearMonthUnit(u string) bool { return u == "YEAR" || u == "MONTH" || u == "YEAR TO MONTH" }

// singularUnit maps a unit word (plural accepted, as Flink does) to its
// singular upper-case form, or "".
func singularUnit(w string) string {
	w = strings.ToUpper(w)
	switch w {
	case "SECOND", "MINUTE", "HOUR", "DAY", "MONTH", "YEAR":
		return w
	case "SECONDS", "MINUTES", "HOURS", "DAYS", "MONTHS", "YEARS":
		return w[:len(w)-1]
	}
	return ""
}

var compoundUnits = map[string]bool{
	"YEAR TO MONTH": true, "DAY TO HOUR": true, "DAY TO MINUTE": true, "DAY TO SECOND": true,
	"HOUR TO MINUTE": true, "HOUR TO SECOND": true, "MINUTE TO SECOND": true,
}

var unitMillis = map[string]int64{"SECOND": 1000, "MINUTE": 60_000, "HOUR": 3_600_000, "DAY": 86_400_000}

// parseIntervalValue parses the literal text of an INTERVAL in unit.
func parseIntervalValue(text, unit string) (Interval, error) {
	iv := Interval{Unit: unit, YearMonth: isYearMonthUnit(unit)}
	s := strings.TrimSpace(text)
	neg := false
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		neg = s[0] == '-'
		s = strings.TrimSpace(s[1:])
	}
	bad := func() (Interval, error) {
		return Interval{}, fmt.Errorf("invalid INTERVAL value '%s' for unit %s", text, unit)
	}
	if s == "" {
		return bad()
	}
	// Fields and their units, leading field first.
	var seps string
	var units []string
	switch unit {
	case "YEAR TO MONTH":
		seps, units = "-", []string{"YEAR", "MONTH"}
	case "DAY TO HOUR":
		seps, units = " ", []string{"DAY", "HOUR"}
	case "DAY TO MINUTE":
		seps, units = " :", []string{"DAY", "HOUR", "MINUTE"}
	case "DAY TO SECOND":
		seps, units = " ::", []string{"DAY", "HOUR", "MINUTE", "SECOND"}
	case "HOUR TO MINUTE":
		seps, units = ":", []string{"HOUR", "MINUTE"}
	case "HOUR TO SECOND":
		seps, units = "::", []string{"HOUR", "MINUTE", "SECOND"}
	case "MINUTE TO SECOND":
		seps, units = ":", []string{"MINUTE", "SECOND"}
	default:
		units = []string{unit}
	}
	fields := make([]string, 0, len(units))
	rest := s
	for _, sep := range seps {
		i := strings.IndexRune(rest, sep)
		if i < 0 {
			return bad()
		}
		fields = append(fields, rest[:i])
		rest = strings.TrimLeft(rest[i+1:], " ")
	}
	fields = append(fields, rest)
	limits := map[string]int64{"MONTH": 12, "HOUR": 24, "MINUTE": 60, "SECOND": 60}
	var total int64
	for i, f := range fields {
		u := units[i]
		frac := int64(0)
		if u == "SECOND" {
			if dot := strings.IndexByte(f, '.'); dot >= 0 {
				fs := f[dot+1:]
				f = f[:dot]
				if len(fs) == 0 || len(fs) > 3 || !allDigits(fs) {
					return bad()
				}
				for len(fs) < 3 {
					fs += "0"
				}
				frac, _ = strconv.ParseInt(fs, 10, 64)
			}
		}
		if !allDigits(f) || len(f) == 0 || len(f) > 12 {
			return bad()
		}
		n, _ := strconv.ParseInt(f, 10, 64)
		if i > 0 && n >= limits[u] {
			return bad()
		}
		if iv.YearMonth {
			if u == "YEAR" {
				n *= 12
			}
			total += n
		} else {
			total += n*unitMillis[u] + frac
		}
	}
	if neg {
		total = -total
	}
	if iv.YearMonth {
		iv.Months = total
	} else {
		iv.Millis = total
	}
	return iv, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}
