package catalog

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // zone names resolve the same on every machine
)

var zoneCache sync.Map // name -> *time.Location

// LoadZone resolves a table.local-time-zone value: an IANA zone name
// (Europe/Berlin), UTC, Z, or a fixed offset written GMT+08:00, UTC-5,
// +08:00 (as Flink's ZoneId accepts). "" is UTC.
func LoadZone(name string) (*time.Location, error) {
	name = strings.TrimSpace(name)
	if name == "" || strings.EqualFold(name, "UTC") || name == "Z" || strings.EqualFold(name, "GMT") {
		return time.UTC, nil
	}
	if l, ok := zoneCache.Load(name); ok {
		return l.(*time.Location), nil
	}
	loc, err := loadZone(name)
	if err != nil {
		return nil, err
	}
	zoneCache.Store(name, loc)
	return loc, nil
}

func loadZone(name string) (*time.Location, error) {
	off := name
	for _, p := range []string{"GMT", "UTC", "UT"} {
		if len(off) > len(p) && strings.EqualFold(off[:len(p)], p) && (off[len(p)] == '+' || off[len(p)] == '-') {
			off = off[len(p):]
			break
		}
	}
	if off[0] == '+' || off[0] == '-' {
		sign := 1
		if off[0] == '-' {
			sign = -1
		}
		hs, ms, _ := strings.Cut(off[1:], ":")
		h, err1 := strconv.Atoi(hs)
		m := 0
		var err2 error
		if ms != "" {
			m, err2 = strconv.Atoi(ms)
		}
		if err1 != nil || err2 != nil || h > 18 || m > 59 || len(hs) > 2 {
			return nil, fmt.Errorf("invalid time zone offset '%s' (expected e.g. GMT+08:00)", name)
		}
		return time.FixedZone(name, sign*(h*3600+m*60)), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone '%s' (expected an IANA name such as 'Europe/Berlin', or an offset such as 'GMT+08:00')", name)
	}
	return loc, nil
}
