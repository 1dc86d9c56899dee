package reference

import (
	"math"
	"math/bits"

	"github.com/apache/arrow/go/v17/arrow"
)

// q5's HOP window: 10 s windows every 2 s; the watermark is the largest
// dateTime seen - 4 s - 1 ms (ddl_gen.sql, Flink's bounded
// out-of-orderness).
const (
	q5Slide   = 2_000
	q5Panes   = 5 // size / slide
	q5WmDelay = 4_000 + 1
)

// q5 is Nexmark q5: per HOP window the auctions whose bid count is the
// window's maximum (count >= the max count of the window, i.e. equal),
// emitted when the window fires.
//
// Bids are counted per auction per 2 s pane (an open-addressing table per
// pane); a window is the sum of its 5 panes, computed when it fires by a
// merge of the panes' entries sorted by auction (each pane is sorted once
// by a radix sort and reused by its 5 windows), in one pass that keeps
// the auctions with the largest sum so far.
//
// Event time as the engine's: the watermark assigner sees every event's
// dateTime (the CASE of ddl_gen.sql over event_type); a window [s, s+10 s)
// fires when its end - 1 <= the watermark, which advances after each batch
// and, before a row whose dateTime is <= the watermark the rows before it
// imply, first to that watermark (the engine cuts the batch there); a bid
// is late, dropped, when the last window of its pane has fired by that
// rule. The end of the input fires every window left.
type q5 struct {
	lay layout
	out func()

	maxTs int64 // largest dateTime seen (math.MinInt64: none)
	wm    int64 // watermark the windows fired at
	next  int64 // first window (by start pane) not fired yet

	panes []*q5Pane // live panes, by pane number ascending
	free  []*q5Pane
	cur   *q5Pane // the pane of the last bid

	heads [q5Panes][]q5Entry // merge cursors
	cand  []q5Entry          // auctions with the largest sum of the window

	// the output (reused): rows of the windows fired by the last batch
	Auction, Num []int64
	rows         int64
}

type q5Entry struct {
	key int64 // auction
	n   int64 // bids; 0: empty slot
}

type q5Pane struct {
	p      int64
	tab    []q5Entry
	shift  uint
	used   int
	sorted []q5Entry // tab's entries by key; valid unless dirty
	dirty  bool
}

func newQ5(lay layout) *q5 {
	return &q5{lay: lay, maxTs: math.MinInt64, wm: math.MinInt64, next: math.MinInt64}
}

func (k *q5) setOut(f func()) { k.out = f }
func (k *q5) outRows() int64  { return k.rows }

func (k *q5) process(rec arrow.Record) {
	kinds := k.lay.kinds(rec)
	n := len(kinds)
	pt := times(rec, k.lay.person, k.lay.pTime)[:n]
	at := times(rec, k.lay.auction, k.lay.aTime)[:n]
	bt := times(rec, k.lay.bid, k.lay.bTime)[:n]
	auc := int64s(rec, k.lay.bid, k.lay.bAuction)[:n]
	k.Auction, k.Num = k.Auction[:0], k.Num[:0]
	maxTs := k.maxTs
	for i, kd := range kinds {
		t := int64(bt[i])
		switch kd {
		case eventPerson:
			t = int64(pt[i])
		case eventAuction:
			t = int64(at[i])
		}
		if maxTs != math.MinInt64 && t <= maxTs-q5WmDelay {
			// behind the watermark of the rows before it: that watermark
			// is emitted (and windows fire) before this row
			k.fire(maxTs - q5WmDelay)
		}
		maxTs = max(maxTs, t)
		if kd != eventBid {
			continue
		}
		p := floorDiv(t, q5Slide)
		if (p+q5Panes)*q5Slide-1 <= k.wm { // its last window has fired
			continue
		}
		pn := k.cur
		if pn == nil || pn.p != p {
			pn = k.pane(p)
			k.cur = pn
		}
		pn.add(auc[i])
	}
	k.maxTs = maxTs
	if maxTs != math.MinInt64 {
		k.fire(maxTs - q5WmDelay)
	}
	if k.out != nil && len(k.Auction) > 0 {
		k.out()
	}
}

func (k *q5) finish() {
	k.Auction, k.Num = k.Auction[:0], k.Num[:0]
	k.fire(math.MaxInt64)
	if k.out != nil && len(k.Auction) > 0 {
		k.out()
	}
}

// pane returns pane p, made live if it is not.
func (k *q5) pane(p int64) *q5Pane {
	i := len(k.panes)
	for i > 0 && k.panes[i-1].p >= p {
		i--
	}
	if i < len(k.panes) && k.panes[i].p == p {
		return k.panes[i]
	}
	var pn *q5Pane
	if m := len(k.free); m > 0 {
		pn, k.free = k.free[m-1], k.free[:m-1]
		clear(pn.tab)
	} else {
		pn = &q5Pane{tab: make([]q5Entry, 1<<10), shift: 64 - 10}
	}
	pn.p, pn.used, pn.dirty = p, 0, true
	k.panes = append(k.panes, nil)
	copy(k.panes[i+1:], k.panes[i:])
	k.panes[i] = pn
	return pn
}

// fire emits the windows whose end - 1 <= wm (math.MaxInt64: all) and
// frees the panes no later window reads.
func (k *q5) fire(wm int64) {
	if wm <= k.wm {
		return
	}
	k.wm = wm
	if len(k.panes) == 0 {
		return
	}
	lo, hi := k.panes[0].p, k.panes[len(k.panes)-1].p
	last := hi // the last window (by start pane) that fires
	if wm != math.MaxInt64 {
		last = min(last, floorDiv(wm+1, q5Slide)-q5Panes)
	}
	first := max(k.next, lo-q5Panes+1)
	for s := first; s <= last; s++ {
		k.window(s)
	}
	if last+1 > k.next {
		k.next = last + 1
	}
	// panes before next belong to fired windows only
	d := 0
	for d < len(k.panes) && k.panes[d].p < k.next {
		if k.panes[d] == k.cur {
			k.cur = nil
		}
		k.free = append(k.free, k.panes[d])
		d++
	}
	if d > 0 {
		m := copy(k.panes, k.panes[d:])
		clear(k.panes[m:])
		k.panes = k.panes[:m]
	}
}

// window emits window [s, s+5) (panes): the auctions of the largest sum.
func (k *q5) window(s int64) {
	h := 0
	for _, pn := range k.panes {
		if pn.p >= s && pn.p < s+q5Panes && pn.used > 0 {
			k.heads[h] = pn.sortedEntries()
			h++
		}
	}
	if h == 0 {
		return
	}
	heads := k.heads[:h]
	cand := k.cand[:0]
	best := int64(0)
	for {
		// the smallest key among the heads and its sum
		key, any := int64(math.MaxInt64), false
		for _, e := range heads {
			if len(e) > 0 && (!any || e[0].key < key) {
				key, any = e[0].key, true
			}
		}
		if !any {
			break
		}
		sum := int64(0)
		for j, e := range heads {
			if len(e) > 0 && e[0].key == key {
				sum += e[0].n
				heads[j] = e[1:]
			}
		}
		if sum > best {
			best, cand = sum, cand[:0]
		}
		if sum == best {
			cand = append(cand, q5Entry{key: key, n: sum})
		}
	}
	for _, c := range cand {
		k.Auction = append(k.Auction, c.key)
		k.Num = append(k.Num, c.n)
	}
	k.rows += int64(len(cand))
	k.cand = cand
	for i := range k.heads {
		k.heads[i] = nil
	}
}

func q5Hash(a int64) uint64 { return uint64(a) * 0x9E3779B97F4A7C15 }

func (pn *q5Pane) add(a int64) {
	mask := uint64(len(pn.tab) - 1)
	h := q5Hash(a) >> pn.shift
	for {
		e := &pn.tab[h]
		if e.n == 0 {
			*e = q5Entry{key: a, n: 1}
			pn.used++
			pn.dirty = true
			if 2*pn.used > len(pn.tab) {
				pn.grow()
			}
			return
		}
		if e.key == a {
			e.n++
			pn.dirty = true
			return
		}
		h = (h + 1) & mask
	}
}

func (pn *q5Pane) grow() {
	old := pn.tab
	pn.tab = make([]q5Entry, 2*len(old))
	pn.shift--
	mask := uint64(len(pn.tab) - 1)
	for _, e := range old {
		if e.n == 0 {
			continue
		}
		h := q5Hash(e.key) >> pn.shift
		for pn.tab[h].n != 0 {
			h = (h + 1) & mask
		}
		pn.tab[h] = e
	}
}

// sortedEntries returns the pane's entries sorted by key: an LSD radix
// sort of key - min key, 11 bits a pass, as many passes as the keys'
// range needs.
func (pn *q5Pane) sortedEntries() []q5Entry {
	if !pn.dirty {
		return pn.sorted
	}
	pn.dirty = false
	if cap(pn.sorted) < 2*pn.used {
		pn.sorted = make([]q5Entry, 0, 2*pn.used)
	}
	a := pn.sorted[:0]
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, e := range pn.tab {
		if e.n != 0 {
			a = append(a, e)
			lo, hi = min(lo, e.key), max(hi, e.key)
		}
	}
	n := len(a)
	buf := pn.sorted[n : 2*n]
	span := uint64(hi) - uint64(lo)
	var count [1 << 11]int
	for shift := uint(0); shift < uint(bits.Len64(span)); shift += 11 {
		clear(count[:])
		for _, e := range a {
			count[((uint64(e.key)-uint64(lo))>>shift)&(1<<11-1)]++
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, e := range a {
			d := ((uint64(e.key) - uint64(lo)) >> shift) & (1<<11 - 1)
			buf[count[d]] = e
			count[d]++
		}
		a, buf = buf, a
	}
	// a is one of the two halves: keep the sorted entries at the front
	if n > 0 && &a[0] != &pn.sorted[:1][0] {
		copy(pn.sorted[:n], a)
	}
	pn.sorted = pn.sorted[:n]
	return pn.sorted
}
