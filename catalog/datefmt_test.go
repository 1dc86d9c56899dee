package catalog

import (
	"strings"
	"testing"
)

func TestDateFormat(t *testing.T) {
	f := Fields{Year: 2024, Month: 3, Day: 5, Hour: 14, Minute: 7, Second: 9, Nanos: 45_000_000, DayOfYear: 65, DayOfWeek: 2}
	for p, want := range map[string]string{
		"yyyy-MM-dd HH:mm:ss":   "2024-03-05 14:07:09",
		"yy/M/d h:mm a":         "24/3/5 2:07 PM",
		"EEE, dd MMM yyyy":      "Tue, 05 Mar 2024",
		"EEEE MMMM D u":         "Tuesday March 65 2",
		"HH:mm:ss.SSS":          "14:07:09.045",
		"'at' HH 'o''clock' ''": "at 14 o'clock '",
		"yyyyMMddHHmmssSSSSSS":  "20240305140709045000",
	} {
		df, err := CompileDateFormat(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if got := string(df.Append(nil, &f)); got != want {
			t.Errorf("%s: %q, want %q", p, got, want)
		}
	}
	for _, bad := range []string{"yyyy-MM-dd Q", "'open", "SSSSSSSSSS"} {
		if _, err := CompileDateFormat(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	parse := func(p, s string) (Fields, bool) {
		df, err := CompileDateFormat(p)
		if err != nil {
			t.Fatal(err)
		}
		f := Fields{Year: 1970, Month: 1, Day: 1}
		ok := df.Parse(s, &f)
		return f, ok
	}
	if f, ok := parse("yyyyMMdd", "20240305"); !ok || f.Year != 2024 || f.Month != 3 || f.Day != 5 {
		t.Errorf("yyyyMMdd: %+v %v", f, ok)
	}
	if f, ok := parse("d/M/yyyy h:mm a", "5/3/2024 2:07 pm"); !ok || f.Hour != 14 || f.Minute != 7 {
		t.Errorf("12-hour: %+v %v", f, ok)
	}
	if f, ok := parse("dd MMM yyyy", "05 Mar 2024"); !ok || f.Month != 3 {
		t.Errorf("MMM: %+v %v", f, ok)
	}
	for _, s := range []string{"2024-13-01", "2024-03-05x", "2024-3", "24-03-05"} {
		if _, ok := parse("yyyy-MM-dd", s); ok && !strings.HasPrefix(s, "24-") {
			t.Errorf("%s parsed", s)
		}
	}
}

func TestLoadZone(t *testing.T) {
	for _, z := range []string{"", "UTC", "Z", "Europe/Berlin", "GMT+08:00", "UTC-5", "+05:30"} {
		if _, err := LoadZone(z); err != nil {
			t.Errorf("%s: %v", z, err)
		}
	}
	for _, z := range []string{"Mars/Base", "GMT+25:00", "+1:99"} {
		if _, err := LoadZone(z); err == nil {
			t.Errorf("%s: no error", z)
		}
	}
}
