package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

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

// TestFinished_OnlyAfterAStop: the fair sample is for a run stopped early;
// once a run finished after the last answer did, none was lost in flight,
// so finished gives none and the mean of every answer stands.
func TestFinished_OnlyAfterAStop(t *testing.T) {
	// 200 tokens/s: a 400-token answer takes 3 s (×1.5), so the answers
	// sent by 7 s, a and b, are the fair sample.
	items := []state.Item{
		{Key: "a", FP: "fp", CompletionTokens: 100, Sent: 1_000, Finished: 2_000},
		{Key: "b", FP: "fp", CompletionTokens: 100, Sent: 2_000, Finished: 3_000},
		{Key: "c", FP: "fp", CompletionTokens: 400, Sent: 9_000, Finished: 10_000},
	}
	tests := []struct {
		name     string
		inst     *state.Instance
		n, token int64
	}{
		{"killed in its first run", nil, 2, 200},
		{"left running", &state.Instance{Status: state.StatusRunning}, 2, 200},
		{"stopped after an earlier run finished", &state.Instance{Status: state.StatusRunning, FinishedAt: time.UnixMilli(5_000)}, 2, 200},
		{"finished after its last answer", &state.Instance{Status: state.StatusDone, FinishedAt: time.UnixMilli(10_000)}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, err := state.Open(filepath.Join(t.TempDir(), "s.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			if err := store.Commit("generate[d]", items); err != nil {
				t.Fatal(err)
			}
			if tt.inst != nil {
				tt.inst.ID = "generate[d]"
				if err := store.PutInstance(tt.inst); err != nil {
					t.Fatal(err)
				}
			}
			if n, tokens, err := finished(store, "generate[d]", 400); err != nil || n != tt.n || tokens != tt.token {
				t.Errorf("finished = %d answers, %d tokens, %v; want %d, %d", n, tokens, err, tt.n, tt.token)
			}
		})
	}
}
