package reference

import (
	"math/bits"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
)

// q1 is Nexmark q1: every bid's auction, bidder, 0.908 * price as
// DECIMAL(23, 3) (the unscaled value price * 908, as 16-byte decimal128),
// dateTime and extra (bytes and offsets copied).
//
// The nexmark batches hold runs of bids (46 of every 50 events), so the
// kernel copies each run's columns with one copy per column and its extra
// strings with one copy of their bytes.
type q1 struct {
	lay layout
	out func()

	auction, bidder []int64
	price           []decimal128.Num
	dateTime        []arrow.Timestamp
	extra           []byte
	extraOff        []int32 // rows+1 offsets into extra
	n               int     // rows of the current output batch
	rows            int64
}

func (k *q1) setOut(f func()) { k.out = f }
func (k *q1) outRows() int64  { return k.rows }
func (k *q1) finish()         {}

func (k *q1) process(rec arrow.Record) {
	kinds := k.lay.kinds(rec)
	auc := int64s(rec, k.lay.bid, k.lay.bAuction)
	bdr := int64s(rec, k.lay.bid, k.lay.bBidder)
	prc := int64s(rec, k.lay.bid, k.lay.bPrice)
	ts := times(rec, k.lay.bid, k.lay.bTime)
	ex := field(rec, k.lay.bid, k.lay.bExtra).(*array.String)
	offs := ex.ValueOffsets() // len(kinds)+1
	data := ex.ValueBytes()   // from offs[0]
	base := offs[0]

	n := len(kinds)
	if cap(k.auction) < n {
		k.auction, k.bidder = make([]int64, n), make([]int64, n)
		k.price, k.dateTime = make([]decimal128.Num, n), make([]arrow.Timestamp, n)
		k.extraOff = make([]int32, n+1)
	}
	k.auction, k.bidder = k.auction[:n], k.bidder[:n]
	k.price, k.dateTime, k.extraOff = k.price[:n], k.dateTime[:n], k.extraOff[:n+1]
	k.extra = k.extra[:0]
	k.extraOff[0] = 0
	w := 0
	for i := 0; i < n; {
		if kinds[i] != eventBid {
			i++
			continue
		}
		j := i + 1
		for j < n && kinds[j] == eventBid {
			j++
		}
		copy(k.auction[w:], auc[i:j])
		copy(k.bidder[w:], bdr[i:j])
		copy(k.dateTime[w:], ts[i:j])
		dst := k.price[w : w+j-i]
		for r, p := range prc[i:j] {
			// the signed 128-bit product p * 908
			hi, lo := bits.Mul64(uint64(p), 908)
			if p < 0 {
				hi -= 908
			}
			dst[r] = decimal128.New(int64(hi), lo)
		}
		shift := int32(len(k.extra)) - (offs[i] - base)
		k.extra = append(k.extra, data[offs[i]-base:offs[j]-base]...)
		do := k.extraOff[w+1 : w+1+j-i]
		for r, o := range offs[i+1 : j+1] {
			do[r] = o - base + shift
		}
		w += j - i
		i = j
	}
	k.n = w
	k.auction, k.bidder, k.price, k.dateTime = k.auction[:w], k.bidder[:w], k.price[:w], k.dateTime[:w]
	k.extraOff = k.extraOff[:w+1]
	k.rows += int64(w)
	if k.out != nil && w > 0 {
		k.out()
	}
}

// q2 is Nexmark q2: (auction, price) of the bids whose auction is a
// multiple of 123. Rows are written unconditionally and kept by advancing
// the output position (no branch on the filter).
type q2 struct {
	lay layout
	out func()

	auction, price []int64
	rows           int64
}

func (k *q2) setOut(f func()) { k.out = f }
func (k *q2) outRows() int64  { return k.rows }
func (k *q2) finish()         {}

func (k *q2) process(rec arrow.Record) {
	kinds := k.lay.kinds(rec)
	auc := int64s(rec, k.lay.bid, k.lay.bAuction)
	prc := int64s(rec, k.lay.bid, k.lay.bPrice)
	n := len(kinds)
	if cap(k.auction) < n {
		k.auction, k.price = make([]int64, n), make([]int64, n)
	}
	oa, op := k.auction[:n], k.price[:n]
	auc, prc = auc[:n], prc[:n]
	w := 0
	for i, kd := range kinds {
		a := auc[i]
		oa[w], op[w] = a, prc[i]
		w += b2i(kd == eventBid && a%123 == 0) // w <= i: the write stays in range
	}
	k.auction, k.price = oa[:w], op[:w]
	k.rows += int64(w)
	if k.out != nil && w > 0 {
		k.out()
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
