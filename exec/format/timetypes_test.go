package format

import (
	"github.com/streamsql/streamsql/internal/memtest"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/streamsql/streamsql/catalog"
)

func TestDateTimeText(t *testing.T) {
	sec, ns := SplitUnits(-1, 1_000_000) // 1 µs before the epoch
	for _, tc := range []struct {
		style Style
		prec  int
		want  string
	}{
		{StyleSQL, 6, "1969-12-31 23:59:59.999999"},
		{StyleSQL, 0, "1969-12-31 23:59:59"},
		{StylePrint, 6, "1969-12-31T23:59:59.999999"},
		{StyleFormatSQL, 6, "1969-12-31 23:59:59.999999"},
		{StyleFormatISO, 6, "1969-12-31T23:59:59.999999"},
	} {
		if got := string(AppendDateTime(nil, sec, ns, tc.prec, tc.style)); got != tc.want {
			t.Errorf("style %d: %s, want %s", tc.style, got, tc.want)
		}
	}
	tokyo, _ := catalog.LoadZone("Asia/Tokyo")
	for style, want := range map[Style]string{StyleSQL: "1970-01-01 09:00:00.000", StylePrint: "1970-01-01T00:00:00Z", StyleFormatSQL: "1970-01-01 00:00:00Z"} {
		if got := string(AppendInstant(nil, 0, 0, 3, tokyo, style)); got != want {
			t.Errorf("instant style %d: %s, want %s", style, got, want)
		}
	}
	if got := string(AppendIntervalDT(nil, -90061001)); got != "-1 01:01:01.001" {
		t.Errorf("interval: %s", got)
	}
	if got := string(AppendTime(nil, 3723004, 3, StylePrint)); got != "01:02:03.004" {
		t.Errorf("time: %s", got)
	}
	if got := string(AppendJavaFloat(nil, 0.1)); got != "0.1" {
		t.Errorf("float: %s", got)
	}
	_ = time.UTC
}

func TestJSONNestedRow(t *testing.T) {
	mem := memtest.NewChecked()
	defer mem.AssertSize(t, 0)
	inner := catalog.Row(catalog.Column{Name: "city", Type: catalog.String}, catalog.Column{Name: "zip", Type: catalog.Int})
	schema := catalog.Schema{
		{Name: "id", Type: catalog.BigInt},
		{Name: "p", Type: catalog.Row(catalog.Column{Name: "name", Type: catalog.String}, catalog.Column{Name: "ts", Type: catalog.TimestampP(6)}, catalog.Column{Name: "addr", Type: inner})},
		{Name: "d", Type: catalog.Date},
	}
	rb := array.NewRecordBuilder(mem, schema.Arrow())
	defer rb.Release()
	dec, err := NewJSONDecoder(schema, JSONOptions{}, rb)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`{"id": 1, "p": {"name": "ann", "ts": "2024-01-01 10:00:00.123456", "addr": {"city": "Oslo", "zip": 150, "x": [1]}}, "d": "2024-01-02"}`,
		`{"id": 2, "p": null}`,
		`{"p": {"NAME": "bob"}, "id": 3}`,
	} {
		if _, err := dec.Decode([]byte(line)); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	}
	_, err = dec.Decode([]byte(`{"id": 4, "p": {"addr": {"zip": "x"}}}`))
	if err == nil || !strings.Contains(err.Error(), `column "p.addr.zip"`) {
		t.Fatalf("nested error: %v", err)
	}
	rec := rb.NewRecord()
	defer rec.Release()
	if rec.NumRows() != 3 {
		t.Fatalf("%d rows", rec.NumRows())
	}
	var got []string
	for i := 0; i < 3; i++ {
		got = append(got, FormatValue(rec.Column(1), i)+" "+FormatValue(rec.Column(2), i))
	}
	want := "(ann, 2024-01-01 10:00:00.123456, (Oslo, 150)) 2024-01-02|NULL NULL|(bob, NULL, NULL) NULL"
	if strings.Join(got, "|") != want {
		t.Errorf("got %s\nwant %s", strings.Join(got, "|"), want)
	}
	// the encoder writes nested objects back
	enc := NewJSONEncoder(schema.Names(), JSONOptions{})
	enc.Reset(rec)
	if line := string(enc.AppendRow(nil, 0, "")); line != `{"id":1,"p":{"name":"ann","ts":"2024-01-01 10:00:00.123456","addr":{"city":"Oslo","zip":150}},"d":"2024-01-02"}`+"\n" {
		t.Errorf("encoded %s", line)
	}
}
