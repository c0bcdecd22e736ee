package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/eaglet-dev/eaglet/state"
)

// TestUsage_FinishedIsAFairSample: a run killed four minutes in, with 64
// requests always in flight (answers lognormal, mean 1,000 tokens, at 50
// tokens/s), keeps the answers that finished, which run short: the long
// ones were still in flight. The answers sent before the longest could
// have been in flight at the end give the true mean back.
func TestUsage_FinishedIsAFairSample(t *testing.T) {
	const (
		slots, pace, maxTokens = 64, 50.0, 4096
		killMs                 = 240_000
		sigma                  = 0.8
	)
	mu := math.Log(1000) - sigma*sigma/2
	// The true mean of the capped lengths, from many draws of one stream.
	r := rand.New(rand.NewPCG(7, 7))
	var trueSum, trueN float64
	for range 200_000 {
		trueSum += math.Min(math.Exp(mu+sigma*r.NormFloat64()), maxTokens)
		trueN++
	}
	truth := trueSum / trueN

	store, err := state.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var items []state.Item
	var naiveSum float64
	for slot := range slots {
		for at := int64(0); ; {
			tokens := int(math.Min(math.Exp(mu+sigma*r.NormFloat64()), maxTokens))
			done := at + int64(float64(tokens)/pace*1000)
			if done > killMs {
				break // in flight when the run was killed: lost
			}
			items = append(items, state.Item{Key: fmt.Sprintf("k%d-%d", slot, at), FP: "fp", CompletionTokens: tokens, Sent: at + 1, Finished: done + 1})
			naiveSum += float64(tokens)
			at = done
		}
	}
	if err := store.Commit("generate[d]", items); err != nil {
		t.Fatal(err)
	}
	naive := naiveSum / float64(len(items))
	n, tokens, err := finished(store, "generate[d]", maxTokens)
	if err != nil {
		t.Fatal(err)
	}
	fair := float64(tokens) / float64(n)
	t.Logf("true mean %.0f; all %d finished answers %.0f (%+.1f%%); the %d sent early enough %.0f (%+.1f%%)",
		truth, len(items), naive, 100*(naive/truth-1), n, fair, 100*(fair/truth-1))
	if naive/truth > 0.95 {
		t.Fatalf("the finished answers' mean is %.0f of a true %.0f: the test's kill does not bias it", naive, truth)
	}
	if math.Abs(fair/truth-1) > 0.04 || n < 300 {
		t.Errorf("the fair sample: %d answers, mean %.0f; want within 4%% of %.0f", n, fair, truth)
	}
}
