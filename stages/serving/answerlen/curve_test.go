package answerlen

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLengthCurve_CountsRunningAsCensored: Kaplan-Meier over ended
// answers, with the running ones at risk up to their tokens so far.
func TestLengthCurve_CountsRunningAsCensored(t *testing.T) {
	var m Ended
	for _, n := range []float64{300, 100, 200} {
		m.Add(n)
	}
	c := m.Fit([]float64{250})
	// At 100: 1 of 4 at risk ends; at 200: 1 of 3; at 300 the running
	// answer (past 250 only) is no longer counted at risk: 1 of 1.
	for _, tt := range []struct{ at, want float64 }{
		{50, 1}, {100, 0.75}, {150, 0.75}, {200, 0.5}, {299, 0.5}, {300, 0},
	} {
		if got := c.Survival(tt.at); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("survival(%v) = %v; want %v", tt.at, got, tt.want)
		}
	}
	// An answer running at 150 ends at 200 a third of the time (the
	// survival falls from 0.75 to 0.5 there), else at 300.
	n200 := 0
	for i := range 1000 {
		switch l := c.Sample(150, (float64(i)+0.5)/1000, 1e6); l {
		case 200:
			n200++
		case 300:
		default:
			t.Fatalf("sample after 150 = %v; want 200 or 300", l)
		}
	}
	if n200 != 333 {
		t.Errorf("%d of 1000 draws after 150 end at 200; want 333", n200)
	}
}

// TestFitLogNormal_Censored: answers that ended early are the short ones;
// counting the running ones as censored recovers the lengths' lognormal,
// which the ended ones alone understate.
func TestFitLogNormal_Censored(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const mu, sigma = 8.0, 1.0
	var ended, running []float64
	for range 2000 {
		l := math.Exp(mu + sigma*rng.NormFloat64())
		// Started at random times over the last 6,000 tokens' worth.
		if age := 6000 * rng.Float64(); l <= age {
			ended = append(ended, l)
		} else {
			running = append(running, age)
		}
	}
	gotMu, gotSigma := fitLogNormal(ended, running)
	if math.Abs(gotMu-mu) > 0.1 || math.Abs(gotSigma-sigma) > 0.1 {
		t.Errorf("fit with censoring: mu %.3f sigma %.3f; want %v and %v", gotMu, gotSigma, mu, sigma)
	}
	naive, _ := fitLogNormal(ended, nil)
	if naive > mu-0.5 {
		t.Errorf("ended answers alone gave mu %.3f: the test's censoring is too light to matter", naive)
	}
}

// TestLengthCurve_RunsOnPastTheLongest: an answer running past every
// ended one is drawn from the fitted lognormal's tail above its tokens:
// never shorter than it is, never over its cap, and longer by a share of
// what it ran (lognormal answers that ran long tend to run on).
func TestLengthCurve_RunsOnPastTheLongest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var m Ended
	for range 300 {
		m.Add(math.Min(3000, math.Exp(6+rng.NormFloat64())))
	}
	c := m.Fit([]float64{5000})
	sum := 0.0
	for i := range 1000 {
		l := c.Sample(5000, (float64(i)+0.5)/1000, 16384)
		if l < 5000 || l > 16384 {
			t.Fatalf("drew %v for an answer at 5,000 capped at 16,384", l)
		}
		sum += l
	}
	if mean := sum / 1000; mean < 5500 {
		t.Errorf("mean %v drawn for an answer at 5,000; want it to run on", mean)
	}
}
