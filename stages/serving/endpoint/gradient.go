package endpoint

import "math"

// gradient adapts a concurrency limit on the time per generated token, in
// the manner of TCP Vegas and Netflix's gradient limiter: the fastest
// recent time per token is the server's unloaded speed; while more requests
// in flight keep tokens within 10% of it the limit grows, and when the
// server starts to queue or preempt, tokens slow down and the limit shrinks
// in proportion.
type gradient struct {
	// shortD and shortT average recent durations and token counts apart,
	// so the ratio is weighted by tokens: a ten-token answer's fixed
	// overhead must not read as a slow server.
	shortD, shortT float64
	baseline       float64
	n              int
	// probing is the start: like TCP's slow start, the limit grows by one
	// per completed request (doubling each round) until tokens first slow.
	probing bool
	// peak is the highest limit since the baseline was set, and low counts
	// completions since the limit fell under half of it: if halving the
	// load did not bring tokens back to the baseline, the server itself
	// got slower (another tenant, longer contexts) and the baseline is
	// relearned, as BBR re-measures its minimum RTT; otherwise a 25-hour
	// run would sit at a concurrency of 4 after a server slowdown.
	peak float64
	low  int
	// ceiling is where the server last preempted (0: never), less a
	// tenth; quiet counts completions during which stalls are not news.
	ceiling float64
	quiet   int
}

const (
	shortWindow = 20.0
	// slack is the slowdown per token accepted before backing off.
	slack = 1.1
	// relearnAfter is how many completions at under half the peak limit
	// show that backing off did not help: enough for the short averages to
	// have forgotten the load before the back-off.
	relearnAfter = 3 * shortWindow
)

func (g *gradient) observe(limit, maxLimit, seconds, tokens float64) float64 {
	if g.quiet > 0 {
		g.quiet--
	}
	next := g.step(limit, maxLimit, seconds, tokens)
	if g.ceiling > 0 && next > limit && next > g.ceiling {
		// Over the level where the server last preempted: one more slot
		// a round of answers, as TCP grows past its slow-start threshold.
		next = math.Max(math.Max(limit, g.ceiling), math.Min(next, limit+1/limit))
	}
	return next
}

// stalled backs the limit off by a tenth when a streamed answer went
// silent while it ran: the server preempted it, a cost the time per token
// does not show (the others decode as fast as before). Further stalls
// during the next half round of answers are the same event.
func (g *gradient) stalled(limit float64) float64 {
	if g.quiet > 0 {
		return limit
	}
	g.probing = false
	g.ceiling = math.Max(1, limit*0.9)
	g.quiet = int(limit / 2)
	return g.ceiling
}

func (g *gradient) step(limit, maxLimit, seconds, tokens float64) float64 {
	g.n++
	if g.n == 1 {
		g.shortD, g.shortT = seconds, tokens
	}
	g.shortD += (seconds - g.shortD) / shortWindow
	g.shortT += (tokens - g.shortT) / shortWindow
	short := g.shortD / g.shortT
	if g.n < int(shortWindow) {
		if g.probing {
			return math.Min(limit+1, maxLimit)
		}
		return limit
	}
	// The baseline is the fastest speed seen, and does not drift up with
	// the recent speed: a rising baseline would ratchet the limit upward
	// while the server queues. It is only relearned below.
	if g.baseline == 0 || short < g.baseline {
		g.baseline = short
	}
	g.peak = math.Max(g.peak, limit)
	if limit < g.peak/2 {
		g.low++
	} else {
		g.low = 0
	}
	if g.low >= relearnAfter && short > slack*g.baseline {
		g.baseline, g.peak, g.low = short, limit, 0
		g.probing = true
	}
	grad := math.Max(0.5, math.Min(1, slack*g.baseline/short))
	if g.probing {
		if grad >= 1 {
			return math.Min(limit+1, maxLimit)
		}
		g.probing = false
	}
	next := limit*grad + math.Sqrt(limit)
	next = limit*0.9 + next*0.1
	return math.Max(1, math.Min(next, maxLimit))
}
