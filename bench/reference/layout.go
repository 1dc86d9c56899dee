package reference

import (
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
)

// eventBid is the event_type of a bid (ddl_views.sql: the bid view is
// event_type = 2).
const (
	eventPerson  = 0
	eventAuction = 1
	eventBid     = 2
)

// layout is where the kernels find their columns in the source's batches:
// resolved by name once, from the table's schema.
type layout struct {
	kind, person, auction, bid               int // columns
	pTime, aTime                             int // fields of person and auction
	bAuction, bBidder, bPrice, bTime, bExtra int // fields of bid
}

func layoutOf(s *arrow.Schema) (layout, error) {
	var l layout
	if s == nil {
		return l, nil
	}
	var err error
	col := func(name string) int {
		for i, f := range s.Fields() {
			if strings.EqualFold(f.Name, name) {
				return i
			}
		}
		if err == nil {
			err = fmt.Errorf("reference: the nexmark table has no column %s", name)
		}
		return -1
	}
	field := func(c int, name string) int {
		if c < 0 {
			return -1
		}
		st, ok := s.Field(c).Type.(*arrow.StructType)
		if ok {
			for i, f := range st.Fields() {
				if strings.EqualFold(f.Name, name) {
					return i
				}
			}
		}
		if err == nil {
			err = fmt.Errorf("reference: column %s has no field %s", s.Field(c).Name, name)
		}
		return -1
	}
	l.kind, l.person, l.auction, l.bid = col("event_type"), col("person"), col("auction"), col("bid")
	l.pTime, l.aTime = field(l.person, "dateTime"), field(l.auction, "dateTime")
	l.bAuction, l.bBidder, l.bPrice = field(l.bid, "auction"), field(l.bid, "bidder"), field(l.bid, "price")
	l.bTime, l.bExtra = field(l.bid, "dateTime"), field(l.bid, "extra")
	return l, err
}

// The typed columns of a batch (per batch: one type assertion each, no
// per-row interface call).

func (l *layout) kinds(rec arrow.Record) []int32 {
	return rec.Column(l.kind).(*array.Int32).Int32Values()
}

func field(rec arrow.Record, col, f int) arrow.Array {
	return rec.Column(col).(*array.Struct).Field(f)
}

func int64s(rec arrow.Record, col, f int) []int64 {
	return field(rec, col, f).(*array.Int64).Int64Values()
}

func times(rec arrow.Record, col, f int) []arrow.Timestamp {
	return field(rec, col, f).(*array.Timestamp).TimestampValues()
}

// floorDiv is a / b rounded down (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}
