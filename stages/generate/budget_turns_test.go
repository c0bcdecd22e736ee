package generate_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
)

// TestBudget_MultiTurn: a record with two questions (MT-Bench) is one
// admission but two answers. A stage budget shared with a one-question
// dataset must price it as two answers, whatever the one-question answers
// taught the length model, and not take it as done once it passes
// max_tokens; and stay under its limit.
func TestBudget_MultiTurn(t *testing.T) {
	for _, tc := range []struct {
		name        string
		one, mt     int
		maxTokens   int
		budget      int
		concurrency int
	}{
		{"answers past max_tokens", 400, 400, 512, 60_000, 60},
		// The review's setting: one-question answers teach the model, and
		// the MT-Bench records admitted meanwhile are two answers each.
		{"mostly one-question", 400, 120, 2048, 50_000, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One run's overshoot depends on which of the answers ending at
			// one instant the workers see first, which is the scheduler's
			// to decide: priced right, -4.4% to +4.3% on most orderings,
			// and on rare ones +12.9% (seed 2, 1 of 480 runs: the stage
			// scope's overshoot the budget review measured). What the
			// user is promised is the spread over seeds, so the test
			// asserts that: the mean of six seeds under +1%, and no run
			// past +15%. Priced as one answer, the stage spent a mean of
			// +5.2% over the same seeds, +12.3% at worst.
			var sum float64
			const seeds = 6
			for seed := 1; seed <= seeds; seed++ {
				over := multiTurnOvershoot(t, tc.one, tc.mt, tc.maxTokens, tc.budget, tc.concurrency, seed)
				if over > 0.15 || over < -0.10 {
					t.Errorf("seed %d: spent %+.1f%% of the budget; want -10%% to +15%%", seed, 100*over)
				}
				sum += over
			}
			if mean := sum / seeds; mean > 0.01 {
				t.Errorf("spent %+.2f%% over the budget on average over %d seeds; want at most +1%%", 100*mean, seeds)
			}
		})
	}
}

// multiTurnOvershoot runs the MT-Bench stage budget once, in virtual time,
// and returns the share of the budget spent beyond it.
func multiTurnOvershoot(t *testing.T, one, mt, maxTokens, budget, concurrency, seed int) (over float64) {
	t.Helper()
	t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			dir := t.TempDir()
			var b bytes.Buffer
			for i := range mt {
				fmt.Fprintf(&b, `{"messages":[{"role":"user","content":"First question %d."},{"role":"user","content":"Follow-up %d: go deeper."}]}`+"\n", i, i)
			}
			if err := os.WriteFile(filepath.Join(dir, "mt.jsonl"), b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			writePrompts(t, filepath.Join(dir, "one.jsonl"), one)
			// In virtual time (the bubble's clock) the simulator's 250
			// tokens/s a sequence take no wall time, and the clock
			// stands still while the client works: it always sees
			// answers grow before they finish, which in real time a
			// client starved of CPU (the full suite at load average 8)
			// did not, and spent 2.8% over once.
			p, store := enginetest.Open(t, dir, fmt.Sprintf(`version: 1
name: mt
state: state.db
datasets:
  one: {source: one.jsonl, est_completion_tokens: 300}
  mt: {source: mt.jsonl, est_completion_tokens: 300}
endpoints:
  sim: {api: sim, concurrency: %d, options: {seed: %d, mean_tokens: 300, speed: 250}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: %d, budget: {completion_tokens: %d, scope: stage}}}
`, concurrency, seed, maxTokens, budget))
			enginetest.Run(t, p, store, nil)
			_, c := spent(t, store, "generate[mt]", "generate[one]")
			over = float64(c-int64(budget)) / float64(budget)
			t.Logf("spent %d completion tokens (%+.2f%%)", c, 100*over)
		})
	})
	return over
}
