package generate

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"
)

// kvPredict decides concurrency: auto from each running request's own
// future, not the cache's aggregate. A request holds its prompt and every
// token it has produced until it ends; the client knows how far each is
// (streamed tokens, or its age times the decode rate) and learns how long
// answers run from the ones that ended. Sending one more request is safe
// when, over draws of how long each running answer will still run, the
// cache they will hold together (each growing a token a step until it
// ends) overflows in at most a fraction eps of the draws. Lognormal answer
// lengths make the cache a fixed batch holds swing by a quarter; this
// fills it while the running answers are young or ending and holds back
// while long ones are growing, which a limit on the count cannot.
type kvPredict struct {
	lengths endedLengths
	// eps is the overflow probability accepted per decision.
	eps   float64
	draws int
	rng   *rand.Rand
	// ends is a buffer reused across decisions.
	ends []seqEnd
	// curve is the last fit, made when fitted answers had ended.
	curve  lengthCurve
	fitted int
}

// inFlight is what the client knows of one request in flight: the tokens
// it has produced (streamed, or estimated from its age) and its cap.
type inFlight struct {
	tokens, maxTokens float64
}

// kvState is the server as a decision sees it: the cache's size in tokens,
// the prompt tokens a request holds on average, and the requests in flight.
type kvState struct {
	capacity, overhead float64
	flights            []inFlight
}

const (
	// predictDraws is the Monte Carlo sample per decision: a standard
	// error under 1% on a 2% chance, in about a millisecond for 50
	// requests in flight.
	predictDraws = 256
	// predictEps is the overflow chance accepted for one more request:
	// decisions are many (every 20 ms), and 5% let a preemption through
	// every few hundred answers.
	predictEps = 0.02
	// predictMinDone is how many answers must have ended before their
	// lengths are trusted.
	predictMinDone = 10
	// predictMaxStep bounds the requests one decision adds: the next
	// decision sees them running.
	predictMaxStep = 4
	// predictEvery spaces decisions: in between, a request that ends is
	// replaced, as with a fixed limit.
	predictEvery = 20 * time.Millisecond
)

func newKVPredict(seed uint64) *kvPredict {
	return &kvPredict{eps: predictEps, draws: predictDraws, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// ready says whether enough answers ended to decide by their lengths,
// with these requests in flight: at least predictMinDone, and half of all
// answers known to end by the longest that ended (its Kaplan-Meier
// survival at most a half). Until the median is seen the first answers to
// end are the short ones, and the running ones, all young, say too
// little of how long the rest will run: a fit then took answers for
// short and let the batch overflow.
func (p *kvPredict) ready(flights []inFlight) bool {
	if len(p.lengths.done) < predictMinDone {
		return false
	}
	p.refit(flights)
	return len(p.curve.surv) > 0 && p.curve.surv[len(p.curve.surv)-1] <= 0.5
}

// refit fits the length curve again when answers ended since the last
// fit: the running ones' progress moves it little between two ends.
func (p *kvPredict) refit(flights []inFlight) {
	if p.fitted == len(p.lengths.done) {
		return
	}
	running := make([]float64, len(flights))
	for i, f := range flights {
		running[i] = f.tokens
	}
	p.curve, p.fitted = p.lengths.fit(running).trimmed(kmMinAtRisk), len(p.lengths.done)
}

// room returns how many more requests (up to most) may be sent now: the
// largest k for which the running ones and k new ones overflow the cache
// in at most eps of the draws.
func (p *kvPredict) room(st kvState, newMax float64, most int) int {
	if st.capacity <= 0 {
		return 0
	}
	p.refit(st.flights)
	curve := p.curve
	// Common draws for every k: the running requests' lengths are drawn
	// once, the new ones' appended, so a larger k never looks safer by
	// luck.
	n := len(st.flights)
	lens := make([][]float64, p.draws)
	for d := range lens {
		row := make([]float64, n, n+most)
		for i, f := range st.flights {
			row[i] = curve.sample(f.tokens, p.rng.Float64(), f.maxTokens)
		}
		lens[d] = row
	}
	k := 0
	for k < most {
		over := 0
		for d := range lens {
			lens[d] = append(lens[d], curve.sample(0, p.rng.Float64(), newMax))
			if p.peak(st, lens[d]) > st.capacity {
				over++
			}
		}
		if float64(over) > p.eps*float64(p.draws) {
			break
		}
		k++
	}
	return k
}

// seqEnd is one request in a draw: the steps until it ends and the
// cache it holds now.
type seqEnd struct{ rem, held float64 }

// peak is the most cache the requests will hold at once with the given
// lengths, the first len(st.flights) at their current tokens and the rest
// new: every one grows a token a step until it ends, so the total peaks
// just before one of them ends.
func (p *kvPredict) peak(st kvState, lens []float64) float64 {
	p.ends = p.ends[:0]
	for i, l := range lens {
		cur := 0.0
		if i < len(st.flights) {
			cur = st.flights[i].tokens
		}
		p.ends = append(p.ends, seqEnd{rem: math.Max(0, l-cur), held: st.overhead + cur})
	}
	slices.SortFunc(p.ends, func(a, b seqEnd) int { return cmp.Compare(a.rem, b.rem) })
	// Going back from the last to end: what those still running at the
	// j-th end hold now, and how many they are.
	suffix, best := 0.0, 0.0
	for j := len(p.ends) - 1; j >= 0; j-- {
		suffix += p.ends[j].held
		best = math.Max(best, suffix+float64(len(p.ends)-j)*p.ends[j].rem)
	}
	return best
}

// endedLengths learns how long answers run from those that ended. The
// budget's lengthModel fits a lognormal for an expectation; decisions here
// draw lengths, and the ended ones themselves follow a distribution that
// is not lognormal (a spike at max_tokens, several datasets' mixture)
// better than any fit.
type endedLengths struct {
	done []float64 // sorted
}

func (m *endedLengths) add(tokens float64) {
	i, _ := slices.BinarySearch(m.done, tokens)
	m.done = slices.Insert(m.done, i, tokens)
}

// lengthCurve is the Kaplan-Meier survival of answer lengths, with
// running answers as censored observations (an answer running at 5,000
// tokens is one that runs past 5,000: leaving it out would bias the
// lengths short, since short answers end first), and beyond the longest
// ended answer a lognormal fitted to the same censored data.
type lengthCurve struct {
	at, surv  []float64 // survival just after each distinct ended length
	risk      []float64 // answers at risk at each
	mu, sigma float64
}

// kmMinAtRisk is the fewest answers at risk (ended at a length or later,
// or running past it) for a decision's curve to step there.
const kmMinAtRisk = 10

// trimmed is the curve cut where fewer than least answers are at risk:
// too few answers that long to say how many run longer (the longest
// ended alone drops the survival to 0, and a decision drew every running
// answer as ending by it), so the lognormal goes on from there.
func (c lengthCurve) trimmed(least float64) lengthCurve {
	n := len(c.risk)
	for n > 0 && c.risk[n-1] < least {
		n--
	}
	c.at, c.surv, c.risk = c.at[:n], c.surv[:n], c.risk[:n]
	return c
}

// fit makes the curve from the ended lengths and the running ones'
// tokens so far.
func (m *endedLengths) fit(running []float64) lengthCurve {
	cens := slices.Clone(running)
	slices.Sort(cens)
	var c lengthCurve
	s := 1.0
	ci := 0
	for i := 0; i < len(m.done); {
		t := m.done[i]
		j := i
		for j < len(m.done) && m.done[j] == t {
			j++
		}
		for ci < len(cens) && cens[ci] < t {
			ci++
		}
		// At risk: ended at t or later, and running at t or beyond.
		atRisk := float64(len(m.done)-i) + float64(len(cens)-ci)
		s *= 1 - float64(j-i)/atRisk
		c.at = append(c.at, t)
		c.surv = append(c.surv, s)
		c.risk = append(c.risk, atRisk)
		i = j
	}
	c.mu, c.sigma = fitLogNormal(m.done, cens)
	return c
}

// fitLogNormal estimates a lognormal's parameters from exact and
// right-censored values by expectation-maximisation on their logarithms.
func fitLogNormal(exact, censored []float64) (mu, sigma float64) {
	var xs, cs []float64
	for _, v := range exact {
		xs = append(xs, math.Log(math.Max(v, 1)))
	}
	for _, v := range censored {
		if v >= 1 {
			cs = append(cs, math.Log(v))
		}
	}
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mu += x
	}
	mu /= float64(len(xs))
	for _, x := range xs {
		sigma += (x - mu) * (x - mu)
	}
	sigma = math.Max(0.1, math.Sqrt(sigma/float64(len(xs))))
	n := float64(len(xs) + len(cs))
	for range 30 {
		s1, s2 := 0.0, 0.0
		for _, x := range xs {
			s1 += x
			s2 += x * x
		}
		for _, a := range cs {
			alpha := (a - mu) / sigma
			tail := 0.5 * math.Erfc(alpha/math.Sqrt2)
			if tail < 1e-12 {
				// Far past the fitted lengths: it is about its bound.
				s1 += a
				s2 += a * a
				continue
			}
			mills := math.Exp(-alpha*alpha/2) / math.Sqrt(2*math.Pi) / tail
			s1 += mu + sigma*mills
			s2 += mu*mu + sigma*sigma + sigma*(a+mu)*mills
		}
		mu = s1 / n
		sigma = math.Max(0.1, math.Sqrt(math.Max(0, s2/n-mu*mu)))
	}
	return mu, sigma
}

// survival is the chance an answer runs past tokens.
func (c lengthCurve) survival(tokens float64) float64 {
	// The survival after the last ended length at or before tokens.
	i, found := slices.BinarySearch(c.at, tokens)
	if found {
		return c.surv[i]
	}
	if i == 0 {
		return 1
	}
	return c.surv[i-1]
}

// sample draws the length of an answer now at tokens, from u uniform in
// [0,1), capped at limit.
func (c lengthCurve) sample(tokens, u, limit float64) float64 {
	if tokens >= limit {
		return limit
	}
	// The length whose survival is the u-th part of the way down from
	// the survival at tokens: the curve conditioned on running past it.
	s0 := c.survival(tokens)
	target := s0 * (1 - u)
	from, _ := slices.BinarySearch(c.at, math.Nextafter(tokens, math.Inf(1)))
	// surv does not increase: the first length past tokens down to target.
	if i := from + sort.Search(len(c.surv)-from, func(j int) bool { return c.surv[from+j] <= target }); i < len(c.at) {
		return math.Min(limit, c.at[i])
	}
	// Past the longest ended answer: the lognormal's tail above it, as
	// far into it as target is into the survival left there.
	above, last := tokens, s0
	if len(c.at) > 0 {
		above = math.Max(above, c.at[len(c.at)-1])
		last = math.Min(s0, c.surv[len(c.surv)-1])
	}
	if c.sigma <= 0 || last <= 0 {
		return limit
	}
	v := math.Max(0, (last-target)/last)
	lo := 0.5 * math.Erfc(-(math.Log(math.Max(above, 1))-c.mu)/(c.sigma*math.Sqrt2))
	q := math.Min(lo+(1-lo)*v, 1-1e-12)
	return math.Min(limit, math.Max(above, math.Exp(c.mu+c.sigma*math.Sqrt2*math.Erfinv(2*q-1))))
}
