package reference

import (
	"math"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/streamsql/streamsql/exec"
)

const msPerDay = 86_400_000

// q17 is Nexmark q17: per (auction, DATE_FORMAT(dateTime, 'yyyy-MM-dd'))
// the bid count, the counts of price < 10000, 10000 <= price < 1000000
// and price >= 1000000, MIN, MAX, AVG (BIGINT: sum / count truncated, as
// the engine's and Flink's AVG of BIGINT) and SUM of price, as an updating
// stream with the engine's granularity: per input batch, each key the
// batch touched emits -U (its row before the batch) and +U (after), or +I
// when the batch created it (the count always changes, so no pair is
// dropped as unchanged).
//
// State is one open-addressing table from (auction, day) to a dense group
// id and one array of groups (all of a group's fields in one struct, so a
// row's update touches one or two cache lines). The day is the UTC day
// number of dateTime (TIMESTAMP(3) has no zone); its text is formatted
// once per distinct day, and a group refers to it by index.
type q17 struct {
	lay layout
	out func()

	groups [][]q17Group // chunks of q17Chunk groups: growing copies nothing
	ngroup int32
	tab    []q17Entry
	shift  uint // 64 - log2(len(tab))

	epoch   uint32
	touched []int32    // groups touched by the batch, in first-touch order
	old     []q17Group // each touched group as it was before the batch
	days    [][]byte   // day texts, by index
	dayIdx  map[int64]int32
	lastDay int64 // day number of dayRef
	dayRef  int32

	// the output batch (reused)
	Auction                                   []int64
	Day                                       []byte
	DayOff                                    []int32
	Total, Rank1, Rank2, Rank3, Min, Max, Avg []int64
	Sum                                       []int64
	Ops                                       []exec.RowKind
	rows                                      int64
}

const q17ChunkBits = 12

func (k *q17) group(g int32) *q17Group {
	return &k.groups[g>>q17ChunkBits][g&(1<<q17ChunkBits-1)]
}

type q17Group struct {
	auction           int64
	count, c1, c2, c3 int64
	min, max, sum     int64
	day               int32 // index into q17.days
	mark              uint32
}

// q17Entry is a slot of the table; slot is the group id + 1 (0: empty).
type q17Entry struct {
	auction int64
	day     int32
	slot    int32
}

func newQ17(lay layout) *q17 {
	k := &q17{lay: lay, dayIdx: map[int64]int32{}, lastDay: math.MinInt64}
	k.tab = make([]q17Entry, 1<<10)
	k.shift = 64 - 10
	return k
}

func (k *q17) setOut(f func()) { k.out = f }
func (k *q17) outRows() int64  { return k.rows }
func (k *q17) finish()         {}

func q17Hash(a int64, d int32) uint64 {
	return (uint64(a) ^ uint64(uint32(d))<<40) * 0x9E3779B97F4A7C15
}

// lookup returns the group of (a, d), created when new.
func (k *q17) lookup(a int64, d int32) int32 {
	mask := uint64(len(k.tab) - 1)
	h := q17Hash(a, d) >> k.shift
	for {
		e := &k.tab[h]
		if e.slot == 0 {
			g := k.ngroup
			if g&(1<<q17ChunkBits-1) == 0 {
				k.groups = append(k.groups, make([]q17Group, 1<<q17ChunkBits))
			}
			k.ngroup++
			*k.group(g) = q17Group{auction: a, day: d, min: math.MaxInt64, max: math.MinInt64}
			*e = q17Entry{auction: a, day: d, slot: g + 1}
			if 2*int(k.ngroup) > len(k.tab) {
				k.grow()
			}
			return g
		}
		if e.auction == a && e.day == d {
			return e.slot - 1
		}
		h = (h + 1) & mask
	}
}

func (k *q17) grow() {
	old := k.tab
	k.tab = make([]q17Entry, 2*len(old))
	k.shift--
	mask := uint64(len(k.tab) - 1)
	for _, e := range old {
		if e.slot == 0 {
			continue
		}
		h := q17Hash(e.auction, e.day) >> k.shift
		for k.tab[h].slot != 0 {
			h = (h + 1) & mask
		}
		k.tab[h] = e
	}
}

// day returns the index of the text of day number dn.
func (k *q17) day(dn int64) int32 {
	if i, ok := k.dayIdx[dn]; ok {
		return i
	}
	i := int32(len(k.days))
	k.days = append(k.days, time.UnixMilli(dn*msPerDay).UTC().AppendFormat(nil, "2006-01-02"))
	k.dayIdx[dn] = i
	return i
}

func (k *q17) process(rec arrow.Record) {
	kinds := k.lay.kinds(rec)
	auc := int64s(rec, k.lay.bid, k.lay.bAuction)
	prc := int64s(rec, k.lay.bid, k.lay.bPrice)
	ts := times(rec, k.lay.bid, k.lay.bTime)
	n := len(kinds)
	auc, prc, ts = auc[:n], prc[:n], ts[:n]

	k.epoch++
	if k.epoch == 0 { // wrapped: no group may look touched
		for _, c := range k.groups {
			for i := range c {
				c[i].mark = 0
			}
		}
		k.epoch = 1
	}
	epoch := k.epoch
	touched, old := k.touched[:0], k.old[:0]
	for i, kd := range kinds {
		if kd != eventBid {
			continue
		}
		if dn := floorDiv(int64(ts[i]), msPerDay); dn != k.lastDay {
			k.dayRef, k.lastDay = k.day(dn), dn
		}
		g := k.lookup(auc[i], k.dayRef)
		grp := k.group(g)
		if grp.mark != epoch {
			grp.mark = epoch
			touched = append(touched, g)
			old = append(old, *grp)
		}
		p := prc[i]
		grp.count++
		grp.c1 += int64(b2i(p < 10000))
		grp.c2 += int64(b2i(p >= 10000 && p < 1000000))
		grp.c3 += int64(b2i(p >= 1000000))
		grp.min = min(grp.min, p)
		grp.max = max(grp.max, p)
		grp.sum += p
	}
	k.touched, k.old = touched, old
	if len(touched) == 0 {
		return
	}
	k.emit()
}

// emit writes the changelog of the batch: per touched group -U old, +U
// new, or +I.
func (k *q17) emit() {
	m := len(k.touched)
	for i := range k.old {
		m += b2i(k.old[i].count > 0)
	}
	if cap(k.Auction) < m {
		c := 2 * m
		k.Auction, k.Total, k.Rank1, k.Rank2 = make([]int64, c), make([]int64, c), make([]int64, c), make([]int64, c)
		k.Rank3, k.Min, k.Max, k.Avg, k.Sum = make([]int64, c), make([]int64, c), make([]int64, c), make([]int64, c), make([]int64, c)
		k.DayOff, k.Ops = make([]int32, c+1), make([]exec.RowKind, c)
	}
	k.Auction, k.Total, k.Rank1, k.Rank2 = k.Auction[:m], k.Total[:m], k.Rank1[:m], k.Rank2[:m]
	k.Rank3, k.Min, k.Max, k.Avg, k.Sum = k.Rank3[:m], k.Min[:m], k.Max[:m], k.Avg[:m], k.Sum[:m]
	k.DayOff, k.Ops = k.DayOff[:m+1], k.Ops[:m]
	k.Day = k.Day[:0]
	k.DayOff[0] = 0
	w := 0
	put := func(g *q17Group, op exec.RowKind) {
		k.Auction[w], k.Total[w], k.Rank1[w], k.Rank2[w], k.Rank3[w] = g.auction, g.count, g.c1, g.c2, g.c3
		k.Min[w], k.Max[w], k.Avg[w], k.Sum[w] = g.min, g.max, g.sum/g.count, g.sum
		k.Day = append(k.Day, k.days[g.day]...)
		k.DayOff[w+1] = int32(len(k.Day))
		k.Ops[w] = op
		w++
	}
	for i, g := range k.touched {
		if o := &k.old[i]; o.count > 0 {
			put(o, exec.UpdateBefore)
			put(k.group(g), exec.UpdateAfter)
		} else {
			put(k.group(g), exec.Insert)
		}
	}
	k.rows += int64(m)
	if k.out != nil {
		k.out()
	}
}
