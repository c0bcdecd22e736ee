// Package answerlen models how long answers run, for the budget and for
// concurrency: auto alike: what a running answer has produced so far
// (Pace), and the lengths answers end at, learned from those that ended
// with the running ones counted as censored (Model fits a lognormal for
// an expectation, Curve keeps the ended lengths for draws).
package answerlen

import "math"

// Model learns the distribution of completion lengths, to predict how
// long a request will end up given how long it is so far. Lengths go into
// log-spaced buckets; a prior shaped like a lognormal around the expected
// length stands in until real answers arrive.
//
// Answers that finish first are the short ones, so a model fitted on
// finished answers alone underestimates the tail exactly when it matters,
// near the end of a budget with the long answers still running. The running
// requests are therefore counted as censored observations (longer than
// their progress so far), Kaplan-Meier style.
type Model struct {
	count   [lengthBuckets]float64
	max     int
	priorMu float64
}

// priorSigma is the lognormal shape assumed before answers say otherwise;
// LLM answer lengths are typically this heavy-tailed.
const priorSigma = 1.0

const lengthBuckets = 64

func bucketOf(n int) int {
	if n < 1 {
		return 0
	}
	return min(int(math.Log2(float64(n))*3)+1, lengthBuckets-1)
}

// NewModel returns a model of answers expected at expected tokens, capped
// at maxTokens, before any has ended.
func NewModel(expected, maxTokens int) *Model {
	if expected < 1 {
		expected = 1
	}
	mu := math.Log(float64(expected)) - priorSigma*priorSigma/2
	m := &Model{max: maxTokens, priorMu: mu}
	// 16 pseudo-answers at lognormal quantiles around the expectation.
	for i := range 16 {
		q := (float64(i) + 0.5) / 16
		v := math.Exp(mu + priorSigma*math.Sqrt2*math.Erfinv(2*q-1))
		m.Add(int(math.Min(v, float64(maxTokens))))
	}
	return m
}

// Add learns an answer that ended at n tokens.
func (m *Model) Add(n int) {
	m.count[bucketOf(n)]++
}

// Dist is a lognormal length distribution, capped at max tokens.
type Dist struct {
	mu, sigma, max float64
	// The terms of after that do not depend on progress, set by prepare:
	// admission asks after for every request in flight.
	am, capped, e1, e2, phi1, phi2 float64
}

func phi(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

func (d *Dist) prepare() {
	mu, s := d.mu, d.sigma
	d.am = (math.Log(d.max) - mu) / s
	d.capped = phi(-d.am) // P(L > max)
	d.e1, d.phi1 = math.Exp(mu+s*s/2), phi(s-d.am)
	d.e2, d.phi2 = math.Exp(2*mu+2*s*s), phi(2*s-d.am)
}

// Distribution fits a lognormal to the finished answers and the progress
// of running ones: a weighted probit regression of the Kaplan-Meier curve,
// ln(length) against the normal quantile of the share finished by then. A
// parametric tail matters: near the end of a budget the answers still
// running are the long ones, and their remaining length is what an
// empirical histogram knows least about. Two quantiles (median and 90th
// percentile) were tried first; near the censoring edge they drifted enough
// (sigma 0.93 for a true 1.0) to let 1.5% overshoots through.
func (m *Model) Distribution(running []int) Dist {
	var censored [lengthBuckets]float64
	for _, p := range running {
		censored[bucketOf(p)]++
	}
	var atRisk float64
	for b := range lengthBuckets {
		atRisk += m.count[b] + censored[b]
	}
	d := Dist{max: float64(m.max), mu: m.priorMu, sigma: priorSigma}
	surv := 1.0
	var sw, sx, sy, sxx, sxy, fMax, greenwood float64
	for b := range lengthBuckets {
		if atRisk <= 0 {
			break
		}
		if c := m.count[b]; c > 0 {
			surv *= 1 - c/atRisk
			if atRisk > c {
				greenwood += c / (atRisk * (atRisk - c))
			}
			if f := 1 - surv; f > 0.01 && f < 0.99 && greenwood > 0 {
				fMax = f
				_, hi := bucketBounds(b)
				x := math.Sqrt2 * math.Erfinv(2*f-1)
				y := math.Log(hi)
				// Inverse variance of the point's probit (Greenwood's
				// variance of the curve): the many short answers that
				// finish first must not outweigh the few long ones.
				density := math.Exp(-x*x/2) / math.Sqrt(2*math.Pi)
				w := density * density / (surv * surv * greenwood)
				sw += w
				sx += w * x
				sy += w * y
				sxx += w * x * x
				sxy += w * x * y
			}
		}
		atRisk -= m.count[b] + censored[b]
	}
	if sw > 0 {
		mx, my := sx/sw, sy/sw
		if fMax < 0.5 {
			// Only the short answers are in: a slope fitted on them alone
			// says little about the tail. Keep the prior's shape and place
			// it by what is known.
			d.mu = my - d.sigma*mx
		} else if vx := sxx/sw - mx*mx; vx > 1e-3 {
			if sigma := (sxy/sw - mx*my) / vx; sigma > 0.05 {
				d.sigma = sigma
				d.mu = my - sigma*mx
			}
		}
	}
	d.prepare()
	return d
}

// Records returns the mean and variance of what a record of k answers
// will produce in all, each answer p tokens along: k answers' worth, with
// their lengths taken as moving together (k² the variance), which errs on
// the side of the budget.
func (d *Dist) Records(p, k int) (mean, variance float64) {
	m, v := d.after(p)
	return float64(k) * m, float64(k*k) * v
}

// after returns the mean and variance of the final length of an answer
// that has produced p tokens so far: moments of the lognormal conditioned
// on exceeding p and capped at max.
func (d *Dist) after(p int) (mean, variance float64) {
	pf := math.Max(float64(p), 0.5)
	if pf >= d.max {
		return d.max, 0
	}
	s := d.sigma
	ap := (math.Log(pf) - d.mu) / s
	tail := phi(-ap) // P(L > p)
	if tail < 1e-12 {
		return math.Min(pf*1.25+1, d.max), pf * pf / 4
	}
	m1 := d.e1*(phi(s-ap)-d.phi1) + d.max*d.capped
	m2 := d.e2*(phi(2*s-ap)-d.phi2) + d.max*d.max*d.capped
	mean = m1 / tail
	variance = math.Max(m2/tail-mean*mean, 0)
	return math.Min(math.Max(mean, pf), d.max), variance
}

// bucketBounds returns the lengths bucket b holds, [lo, hi).
func bucketBounds(b int) (lo, hi float64) {
	if b == 0 {
		return 0, 1
	}
	return math.Exp2(float64(b-1) / 3), math.Exp2(float64(b) / 3)
}
