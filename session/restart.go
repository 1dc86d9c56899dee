package session

import (
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/streamsql/streamsql/catalog"
)

// restartPolicy decides, after a failed attempt, whether and when the job
// restarts. Flink's strategies and keys (restart-strategy.*).
type restartPolicy struct {
	kind     string
	attempts int // fixed-delay: restarts allowed; exponential: before giving up
	delay    time.Duration
	// exponential-delay
	initial, maxBackoff, resetAfter time.Duration
	multiplier, jitter              float64
	current                         time.Duration
	lastFailure                     time.Time
	// failure-rate
	maxFailures int
	interval    time.Duration
	failures    []time.Time

	restarts int
}

func newRestartPolicy(o *catalog.Options, checkpointing bool) *restartPolicy {
	kind := strings.ToLower(o.Get("restart-strategy.type"))
	switch kind {
	case "":
		kind = "none"
		if checkpointing {
			kind = "exponential-delay" // Flink's default when checkpointing is on
		}
	case "off", "disable":
		kind = "none"
	case "fixeddelay":
		kind = "fixed-delay"
	case "exponentialdelay":
		kind = "exponential-delay"
	case "failurerate":
		kind = "failure-rate"
	}
	p := &restartPolicy{kind: kind}
	switch kind {
	case "fixed-delay":
		p.attempts = o.Int("restart-strategy.fixed-delay.attempts")
		p.delay = o.Duration("restart-strategy.fixed-delay.delay")
	case "exponential-delay":
		p.attempts = o.Int("restart-strategy.exponential-delay.attempts-before-reset-backoff")
		p.initial = o.Duration("restart-strategy.exponential-delay.initial-backoff")
		p.maxBackoff = o.Duration("restart-strategy.exponential-delay.max-backoff")
		p.resetAfter = o.Duration("restart-strategy.exponential-delay.reset-backoff-threshold")
		p.multiplier = o.Float("restart-strategy.exponential-delay.backoff-multiplier")
		p.jitter = o.Float("restart-strategy.exponential-delay.jitter-factor")
	case "failure-rate":
		p.maxFailures = o.Int("restart-strategy.failure-rate.max-failures-per-interval")
		p.interval = o.Duration("restart-strategy.failure-rate.failure-rate-interval")
		p.delay = o.Duration("restart-strategy.failure-rate.delay")
	}
	return p
}

// next reports whether to restart after a failure at now, and after how long.
func (p *restartPolicy) next(now time.Time) (time.Duration, bool) {
	switch p.kind {
	case "fixed-delay":
		if p.restarts >= p.attempts {
			return 0, false
		}
		p.restarts++
		return p.delay, true
	case "exponential-delay":
		// Running long enough without a failure resets the backoff.
		if !p.lastFailure.IsZero() && now.Sub(p.lastFailure) >= p.resetAfter {
			p.current, p.restarts = 0, 0
		}
		p.lastFailure = now
		if p.restarts >= p.attempts {
			return 0, false
		}
		p.restarts++
		if p.current == 0 {
			p.current = p.initial
		} else {
			p.current = time.Duration(math.Min(float64(p.current)*p.multiplier, float64(p.maxBackoff)))
		}
		d := p.current
		if p.jitter > 0 && d > 0 {
			d += time.Duration((rand.Float64()*2 - 1) * p.jitter * float64(d))
		}
		return d, true
	case "failure-rate":
		keep := p.failures[:0]
		for _, t := range p.failures {
			if now.Sub(t) < p.interval {
				keep = append(keep, t)
			}
		}
		p.failures = append(keep, now)
		if len(p.failures) > p.maxFailures {
			return 0, false
		}
		p.restarts++
		return p.delay, true
	}
	return 0, false
}
