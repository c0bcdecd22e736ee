package generate

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
	// filling is the start, while the cache is under half the target
	// and nothing was preempted: the limit grows by one per finished
	// request. After, it grows by two per round of answers, since the
	// answers admitted last have yet to grow to their length and the
	// usage read now understates what they will hold.
	filling bool
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

// next returns the limit after a load reading; completed is how many
// requests finished since the last reading.
func (c *kvControl) next(limit, maxLimit float64, completed int, l serverLoad) float64 {
	if !c.seen {
		c.seen, c.preempted = true, l.preempted
	}
	if l.preempted > c.preempted {
		c.preempted, c.filling = l.preempted, false
		c.target = math.Max(minTarget, c.target-targetStep)
		return math.Max(1, math.Min(limit, math.Max(l.running, 1))*0.9)
	}
	if l.preempted < c.preempted {
		// The server restarted: its counter did too.
		c.preempted = l.preempted
	}
	c.target = math.Min(maxTarget, c.target+targetStep*float64(completed)/math.Max(limit, 1))
	ceiling := maxLimit
	if l.usage > 0 && l.running > 0 {
		ceiling = l.running * c.target / l.usage
	}
	if l.queued > 0 {
		// The server holds requests back: more would only wait there,
		// and be admitted on its terms, not ours.
		ceiling = math.Min(ceiling, l.running+1)
	}
	if limit > ceiling {
		// Running sequences keep their cache until they end; admitting
		// none is all a client can do, so a lower limit is reached by
		// attrition and need not fall faster than a tenth a reading.
		return math.Max(1, math.Max(ceiling, limit*0.9))
	}
	if c.filling && l.usage >= c.target/2 {
		c.filling = false
	}
	grow := float64(completed)
	if !c.filling {
		grow *= 2 / math.Max(limit, 1)
	}
	return math.Min(math.Min(limit+grow, ceiling), maxLimit)
}
