package endpoint

import "math"

// kvControl sets concurrency: auto from what the server says of its load,
// to keep it just short of preempting. A server that runs out of KV cache
// retracts (SGLang) or preempts (vLLM) sequences and recomputes their whole
// prefix, so the throughput a higher concurrency seems to buy is paid for
// in recomputation, and latency only shows it late. The cache in use per
// running sequence, though, says how many sequences fit: the limit is
// kept under running × target / usage, grows by at most one per finished
// request (a round of answers doubles it, as TCP's slow start), and falls
// when the server queues. Each preemption lowers the target usage and cuts
// the limit by a tenth; the target creeps back up by 0.05 a round of
// answers without one, so it settles just under where preemptions begin.
type kvControl struct {
	target    float64
	preempted float64
	seen      bool
	// filling is the start, while the cache is under a third of the
	// target and nothing was preempted: the limit grows by one per finished
	// request. After, it grows by two per round of answers, since the
	// answers admitted last have yet to grow to their length and the
	// usage read now understates what they will hold.
	filling bool
	// regain is the level a preemption cut the limit from, less a
	// twentieth: the limit grows back to it by one per finished request,
	// since the cut only waits for the overflowing answers to end.
	regain float64
	// took and took2 average the durations of finished requests and
	// their squares, for the mean age of requests running in steady state.
	took, took2 float64
	finishedN   int
}

const (
	// startTarget is the KV usage aimed at first: answers grow, so a cache
	// filled at admission time overflows as they lengthen.
	startTarget = 0.85
	minTarget   = 0.4
	maxTarget   = 0.95
	// targetStep is how much a preemption lowers the target, and a round
	// of answers without one raises it.
	targetStep = 0.05
)

func newKVControl() *kvControl { return &kvControl{target: startTarget, filling: true} }

// finished learns a finished request's duration.
func (c *kvControl) finished(seconds float64) {
	c.finishedN++
	a := math.Max(1/float64(c.finishedN), 0.02)
	c.took += a * (seconds - c.took)
	c.took2 += a * (seconds*seconds - c.took2)
}

// maturity is how much more cache the running requests will hold on
// average once the batch is in its steady state than now, taken from
// their ages: a request holds cache in proportion to its age, and in a
// steady state the mean age of those running is E[T²]/2E[T] over their
// durations T. At the start every request is young and the cache looks
// emptier than it will be.
func (c *kvControl) maturity(age float64) float64 {
	if c.finishedN < 10 || age <= 0 || c.took <= 0 {
		return 1
	}
	return math.Min(3, math.Max(1, c.took2/(2*c.took)/age))
}

// next returns the limit after a load reading; completed is how many
// requests finished since the last reading and age the mean age of those
// in flight, in seconds.
func (c *kvControl) next(limit, maxLimit float64, completed int, age float64, l serverLoad) float64 {
	if !c.seen {
		c.seen, c.preempted = true, l.preempted
	}
	if l.preempted > c.preempted {
		c.preempted, c.filling = l.preempted, false
		c.target = math.Max(minTarget, c.target-targetStep)
		level := math.Min(limit, math.Max(l.running, 1))
		c.regain = level * 0.95
		return math.Max(1, level*0.9)
	}
	if l.preempted < c.preempted {
		// The server restarted: its counter did too.
		c.preempted = l.preempted
	}
	c.target = math.Min(maxTarget, c.target+targetStep*float64(completed)/math.Max(limit, 1))
	ceiling := maxLimit
	if l.usage > 0 && l.running > 0 {
		ceiling = l.running * c.target / (l.usage * c.maturity(age))
	}
	if l.queued > math.Max(2, l.running/10) {
		// The server holds requests back: more would only wait there,
		// and be admitted on its terms, not ours. A request or two is
		// always between arriving and the next scheduler step.
		ceiling = math.Min(ceiling, l.running+1)
	}
	if limit > ceiling {
		// Running sequences keep their cache until they end; admitting
		// none is all a client can do, so a lower limit is reached by
		// attrition and need not fall faster than a tenth a reading.
		return math.Max(1, math.Max(ceiling, limit*0.9))
	}
	if c.filling && l.usage >= c.target/3 {
		c.filling = false
	}
	grow := float64(completed)
	if !c.filling && limit >= c.regain {
		grow *= 2 / math.Max(limit, 1)
	}
	return math.Min(math.Min(limit+grow, ceiling), maxLimit)
}
