package endpoint

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/eaglet-dev/eaglet/stages/serving/answerlen"
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
	lengths answerlen.Ended
	// eps is the overflow probability accepted per decision.
	eps   float64
	draws int
	rng   *rand.Rand
	// ends is a buffer reused across decisions.
	ends []seqEnd
	// curve is the last fit, made when fitted answers had ended.
	curve  answerlen.Curve
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
	if p.lengths.Len() < predictMinDone {
		return false
	}
	p.refit(flights)
	return p.curve.Last() <= 0.5
}

// refit fits the length curve again when answers ended since the last
// fit: the running ones' progress moves it little between two ends.
func (p *kvPredict) refit(flights []inFlight) {
	if p.fitted == p.lengths.Len() {
		return
	}
	running := make([]float64, len(flights))
	for i, f := range flights {
		running[i] = f.tokens
	}
	p.curve, p.fitted = p.lengths.Fit(running).Trimmed(kmMinAtRisk), p.lengths.Len()
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
			row[i] = curve.Sample(f.tokens, p.rng.Float64(), f.maxTokens)
		}
		lens[d] = row
	}
	k := 0
	for k < most {
		over := 0
		for d := range lens {
			lens[d] = append(lens[d], curve.Sample(0, p.rng.Float64(), newMax))
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

// kmMinAtRisk is the fewest answers at risk (ended at a length or later,
// or running past it) for a decision's curve to step there.
const kmMinAtRisk = 10
