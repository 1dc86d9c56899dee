package connectors

import (
	"math"
	"math/bits"
	"strconv"
)

// The Nexmark event generator: the distributions of the reference
// generator of the Flink Nexmark benchmark (github.com/nexmark/nexmark,
// described in ../shared/design/nexmark.md), made deterministic: every
// random choice of event n comes from a generator seeded by (seed, n), so
// event n is the same whichever subtask produces it, at any parallelism and
// after any restore. Event numbers are a single timeline (event n happens
// at baseTime + n * 1000 / first-event.rate ms) split among the subtasks
// as interleaved sequences, so the events do not depend on the parallelism.

const (
	nexFirstAuctionID  = 1000
	nexFirstPersonID   = 1000
	nexFirstCategoryID = 10
	nexNumCategories   = 5
	nexPersonIDLead    = 10
	nexAuctionIDLead   = 10
	nexHotSellerRatio  = 100 // the first of every 100 people is a hot seller
	nexHotAuctionRatio = 100
	nexHotBidderRatio  = 100
	nexHotChannels     = 4
	nexChannels        = 10_000
	nexMinStringLength = 3
	nexExtraPoolSize   = 1 << 20
)

var (
	nexStates     = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	nexCities     = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	nexFirstNames = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	nexLastNames  = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	nexHotNames   = [nexHotChannels]string{"Google", "Facebook", "Baidu", "Apple"}
)

// nexConfig is what the generator is told (the connector's options).
type nexConfig struct {
	seed                                uint64
	personProp, auctionProp, bidProp    int64
	total                               int64   // sum of the proportions
	delayUs                             float64 // microseconds of event time between events
	baseTime                            int64   // event time of event 0, ms since the epoch
	personSize, auctionSize, bidSize    int     // average bytes of an event
	hotAuctions, hotBidders, hotSellers int     // 1 in n is not hot
	inFlightAuctions, activePeople      int64
	numEvents                           int64 // 0: unbounded
}

// nexKind is the kind of an event: event_type of the Flink DDL.
type nexKind int32

const (
	nexPerson nexKind = iota
	nexAuction
	nexBid
)

func (c *nexConfig) kind(n int64) nexKind {
	switch rem := n % c.total; {
	case rem < c.personProp:
		return nexPerson
	case rem < c.personProp+c.auctionProp:
		return nexAuction
	}
	return nexBid
}

// timestamp is the event time of event n (ms).
func (c *nexConfig) timestamp(n int64) int64 {
	return c.baseTime + int64(float64(n)*c.delayUs)/1000
}

// lastPerson is the base-0 id of the last person created by event n (the
// current one if n creates a person).
func (c *nexConfig) lastPerson(n int64) int64 {
	epoch, off := n/c.total, n%c.total
	if off >= c.personProp {
		off = c.personProp - 1
	}
	return epoch*c.personProp + off
}

// lastAuction is the base-0 id of the last auction created by event n.
func (c *nexConfig) lastAuction(n int64) int64 {
	epoch, off := n/c.total, n%c.total
	switch {
	case off < c.personProp:
		epoch--
		off = c.auctionProp - 1
	case off >= c.personProp+c.auctionProp:
		off = c.auctionProp - 1
	default:
		off -= c.personProp
	}
	return epoch*c.auctionProp + off
}

// nexRand is the random source of one event: splitmix64 seeded by
// (seed, event number).
type nexRand struct{ s uint64 }

func newNexRand(seed uint64, n int64) nexRand {
	return nexRand{s: mix(seed ^ (uint64(n)+1)*golden)}
}

func (r *nexRand) next() uint64 {
	r.s += golden
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a uniform int in [0, n), n > 0.
func (r *nexRand) intn(n int64) int64 {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int64(hi)
}

func (r *nexRand) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// nextPerson returns a random base-0 person id among the active people
// (plus a few not created yet).
func (c *nexConfig) nextPerson(n int64, r *nexRand) int64 {
	people := c.lastPerson(n) + 1
	active := min(people, c.activePeople)
	return people - active + r.intn(active+nexPersonIDLead)
}

// nextAuction returns a random base-0 auction id among those likely to be
// in flight (plus a few not created yet).
func (c *nexConfig) nextAuction(n int64, r *nexRand) int64 {
	last := c.lastAuction(n)
	lo := max(last-c.inFlightAuctions, 0)
	return lo + r.intn(last-lo+1+nexAuctionIDLead)
}

// nexPrice is the reference generator's round(10^(6u) * 100), u uniform
// in [0, 1), computed as exp(6u ln 10): five times faster than math.Pow
// and the same prices (TestNexmarkPriceFormula compares them).
func nexPrice(r *nexRand) int64 {
	return nexPriceOf(r.float() * (6 * math.Ln10))
}

// nexPriceOf is round(math.Exp(x) * 100) for x in [0, 6 ln 10), from a
// cheaper approximation z of exp(x) * 100 (nexExp100: a table and a
// polynomial, relative error below nexExpTol): where z is farther than
// its error bound from the nearest half-integer, z and math.Exp(x) * 100
// round to the same integer; else (about 1 draw in 10^6) the price is
// math.Exp's. TestNexmarkFastPrice compares the two on draws and on
// inputs placed at the rounding boundaries.
func nexPriceOf(x float64) int64 {
	z := nexExp100(x) // >= 100
	if f := z - float64(int64(z)); math.Abs(f-0.5) > z*nexExpTol {
		// z + 0.5 is exact here (z's ulp is far below the margin),
		// and the conversion truncates: floor(z + 0.5), no branch
		return int64(z + 0.5)
	}
	return int64(math.Round(math.Exp(x) * 100))
}

// nexExpTol bounds the relative error of nexExp100 against the exact
// exp(x) * 100 plus that of math.Exp(x) * 100 (a few ulps each: 1e-14 is
// about 45 ulps).
const nexExpTol = 1e-14

// nexExp2Tab[j] is 100 * 2^(j/256).
var nexExp2Tab = func() (t [256]float64) {
	for j := range t {
		t[j] = 100 * math.Exp2(float64(j)/256)
	}
	return t
}()

// nexExp100 approximates exp(x) * 100, x in [0, 700): x = k ln2/256 + r
// with |r| <= ln2/512, exp(x) = 2^(k/256) exp(r), exp(r) by its Taylor
// polynomial of degree 4 (truncation below r^5/120 < 4e-17, a fifth of
// an ulp).
func nexExp100(x float64) float64 {
	const (
		// ln 2 / 256 in two parts (fdlibm's ln2Hi, ln2Lo over 256): k *
		// ln2Hi256 is exact for the k here
		ln2Hi256 = 6.93147180369123816490e-01 / 256
		ln2Lo256 = 1.90821492927058770002e-10 / 256
		inv      = 256 / math.Ln2
	)
	k := int(x*inv + 0.5)
	fk := float64(k)
	r := (x - fk*ln2Hi256) - fk*ln2Lo256
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24))))
	scale := math.Float64frombits(uint64(1023+k>>8) << 52)
	return nexExp2Tab[k&255] * scale * p
}

// appendString appends a random string of 3 to maxLen-1 letters, some of
// them special (1 in 13), without spaces at its ends.
func nexString(dst []byte, r *nexRand, maxLen int, special byte) []byte {
	start := len(dst)
	for n := nexMinStringLength + r.intn(int64(maxLen-nexMinStringLength)); n > 0; n-- {
		if r.intn(13) == 0 {
			dst = append(dst, special)
		} else {
			dst = append(dst, byte('a'+r.intn(26)))
		}
	}
	if special != ' ' {
		return dst
	}
	s := dst[start:]
	i, j := 0, len(s)
	for i < j && s[i] == ' ' {
		i++
	}
	for j > i && s[j-1] == ' ' {
		j--
	}
	n := copy(dst[start:], s[i:j])
	return dst[:start+n]
}

// nexExtra returns the padding that makes an event of size cur average
// avg bytes: a slice of the pool of random letters.
func nexExtra(pool []byte, r *nexRand, cur, avg int) []byte {
	if cur > avg {
		return nil
	}
	avg -= cur
	delta := int(math.Round(float64(avg) * 0.2))
	size := avg - delta
	if delta > 0 {
		size += int(r.intn(int64(2 * delta)))
	}
	off := int(r.intn(int64(len(pool) - size)))
	return pool[off : off+size]
}

// nexTables are what the generator draws from that depends only on the
// seed: the pool of padding letters, the hot channels' URLs and the other
// channels with their URLs.
type nexTables struct {
	pool        []byte
	hotURLs     [nexHotChannels]string
	channels    [nexChannels]string
	channelURLs [nexChannels]string
}

func newNexTables(seed uint64) *nexTables {
	t := &nexTables{pool: make([]byte, nexExtraPoolSize)}
	r := nexRand{s: mix(seed ^ 0x6e65786d61726b)}
	for i := range t.pool {
		t.pool[i] = byte('a' + r.intn(26))
	}
	url := func() string {
		b := []byte("https://www.nexmark.com/")
		for i := 0; i < 3; i++ {
			b = append(nexString(b, &r, 5, '_'), '/')
		}
		return string(append(b, "item.htm?query=1"...))
	}
	for i := range t.hotURLs {
		t.hotURLs[i] = url()
	}
	for i := range t.channels {
		t.channels[i] = "channel-" + strconv.Itoa(i)
		u := url()
		if r.intn(10) > 0 {
			rev := int32(bits.Reverse32(uint32(i)))
			if rev < 0 {
				rev = -rev
			}
			u += "&channel_id=" + strconv.Itoa(int(rev))
		}
		t.channelURLs[i] = u
	}
	return t
}
