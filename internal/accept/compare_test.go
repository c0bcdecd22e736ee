package accept

import (
	"errors"
	"slices"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/sim"
)

// TestCompare_SecondDrafterOnTheSamePrompts: a better drafter measured on
// the same prompts goes measurably further, the estimate being the paired
// rows' difference; the figures are deterministic whatever the rows'
// order, and a drafter against itself differs by nothing.
func TestCompare_SecondDrafterOnTheSamePrompts(t *testing.T) {
	a := simRows(sim.Drafter{Quality: 0.6}, "drafter-a")
	b := simRows(sim.Drafter{Quality: 0.85}, "drafter-b")
	r := Resampling{Seed: 1}
	c, err := Compare(a, b, r)
	if err != nil {
		t.Fatal(err)
	}
	if want := Sum(b).AcceptLength() - Sum(a).AcceptLength(); c.Value != want || c.Pairs != len(a) || c.OnlyA != 0 || c.OnlyB != 0 {
		t.Errorf("comparison %+v, want a difference of %g over %d pairs", c, want, len(a))
	}
	if !(0 < c.Low && c.Low < c.Value && c.Value < c.High) || c.Level != 0.95 {
		t.Errorf("interval [%g, %g] at %g around %g: want above 0 and around the estimate", c.Low, c.High, c.Level, c.Value)
	}
	reversed := slices.Clone(b)
	slices.Reverse(reversed)
	if again, _ := Compare(a, reversed, r); again != c {
		t.Errorf("the rows' order changed the comparison: %+v, then %+v", c, again)
	}
	if other, _ := Compare(a, b, Resampling{Seed: 2}); other.Low == c.Low && other.High == c.High {
		t.Errorf("another seed gave the same interval [%g, %g]", c.Low, c.High)
	}
	narrow, _ := Compare(a, b, Resampling{Seed: 1, Level: 0.5})
	if !(narrow.Low > c.Low && narrow.High < c.High) {
		t.Errorf("a 50%% interval [%g, %g] is not inside the 95%% one [%g, %g]", narrow.Low, narrow.High, c.Low, c.High)
	}
	if self, _ := Compare(a, a, r); self.Value != 0 || self.Low != 0 || self.High != 0 {
		t.Errorf("a drafter against itself: %+v", self)
	}
}

func TestCompare_Pairing(t *testing.T) {
	row := func(prompt string, turn, tokens, verify int) Row {
		return Row{Prompt: prompt, Turn: turn, Sampling: "t0", Requests: 1, Measurement: Measurement{CompletionTokens: tokens, Verify: verify}}
	}
	a := []Row{row("p1", 1, 30, 10), row("p1", 2, 30, 10), row("p2", 1, 30, 10), row("p2", 1, 30, 10), row("only-a", 1, 30, 10)}
	b := []Row{row("p1", 1, 40, 10), row("p1", 2, 40, 10), row("p2", 1, 80, 20), row("only-b", 1, 30, 10), row("only-b", 2, 30, 10)}
	c, err := Compare(a, b, Resampling{Seed: 3, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	// p2's two rows in a are one measurement of it, summed.
	if c.Pairs != 3 || c.OnlyA != 1 || c.OnlyB != 2 || c.A.Rows != 4 || c.B.Rows != 3 || c.Value != 1 {
		t.Errorf("comparison %+v: want 3 pairs (4 rows of A, 3 of B), 1 and 2 unpaired, a difference of 1", c)
	}
	if _, err := Compare(a[:1], b[3:], Resampling{}); !errors.Is(err, ErrNoPairs) {
		t.Errorf("no shared prompt: error %v", err)
	}
}

// TestSpeedUp: against the baseline on the same prompts a drafter's speed-up
// is its throughput over the baseline's, faster as its drafts go further.
func TestSpeedUp(t *testing.T) {
	base := simRows(sim.Drafter{}, "")
	good := simRows(sim.Drafter{Quality: 0.85, Cost: 0.05}, "good")
	poor := simRows(sim.Drafter{Quality: 0.3, Cost: 0.05}, "poor")
	g, err := SpeedUp(base, good, Resampling{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	if want := Sum(good).Throughput() / Sum(base).Throughput(); g.Value != want || !(1 < g.Low && g.Low < g.Value && g.Value < g.High) {
		t.Errorf("speed-up %+v, want %g and an interval above 1 around it", g.Estimate, want)
	}
	if p, _ := SpeedUp(base, poor, Resampling{Seed: 4}); p.Value >= g.Value {
		t.Errorf("a poor drafter's speed-up %g, a good one's %g", p.Value, g.Value)
	}
}
