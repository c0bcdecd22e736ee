package answerlen

import (
	"math"
	"slices"
	"sort"
)

// Ended learns how long answers run from those that ended. Model fits a
// lognormal for an expectation; draws of lengths are better made from
// the ended ones themselves, which follow a distribution that is not
// lognormal (a spike at max_tokens, several datasets' mixture) better
// than any fit.
type Ended struct {
	done []float64 // sorted
}

// Add learns an answer that ended at tokens.
func (m *Ended) Add(tokens float64) {
	i, _ := slices.BinarySearch(m.done, tokens)
	m.done = slices.Insert(m.done, i, tokens)
}

// Len is how many answers ended.
func (m *Ended) Len() int { return len(m.done) }

// Curve is the Kaplan-Meier survival of answer lengths, with running
// answers as censored observations (an answer running at 5,000 tokens is
// one that runs past 5,000: leaving it out would bias the lengths short,
// since short answers end first), and beyond the longest ended answer a
// lognormal fitted to the same censored data.
type Curve struct {
	at, surv  []float64 // survival just after each distinct ended length
	risk      []float64 // answers at risk at each
	mu, sigma float64
}

// Trimmed is the curve cut where fewer than least answers are at risk:
// too few answers that long to say how many run longer (the longest
// ended alone drops the survival to 0, and a decision drew every running
// answer as ending by it), so the lognormal goes on from there.
func (c Curve) Trimmed(least float64) Curve {
	n := len(c.risk)
	for n > 0 && c.risk[n-1] < least {
		n--
	}
	c.at, c.surv, c.risk = c.at[:n], c.surv[:n], c.risk[:n]
	return c
}

// Last is the survival after the curve's last step: the share of answers
// known to run past the longest it steps at (1 when it has no step).
func (c Curve) Last() float64 {
	if len(c.surv) == 0 {
		return 1
	}
	return c.surv[len(c.surv)-1]
}

// Fit makes the curve from the ended lengths and the running ones'
// tokens so far.
func (m *Ended) Fit(running []float64) Curve {
	cens := slices.Clone(running)
	slices.Sort(cens)
	var c Curve
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

// Survival is the chance an answer runs past tokens.
func (c Curve) Survival(tokens float64) float64 {
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

// Sample draws the length of an answer now at tokens, from u uniform in
// [0,1), capped at limit.
func (c Curve) Sample(tokens, u, limit float64) float64 {
	if tokens >= limit {
		return limit
	}
	// The length whose survival is the u-th part of the way down from
	// the survival at tokens: the curve conditioned on running past it.
	s0 := c.Survival(tokens)
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
