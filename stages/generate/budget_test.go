package generate_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	_ "github.com/eaglet-dev/eaglet/stages/all"
	"github.com/eaglet-dev/eaglet/state"
)

// writePrompts writes n distinct one-question conversations.
func writePrompts(t testing.TB, path string, n int) {
	t.Helper()
	writePromptsAbout(t, path, n, "idea")
}

// writePromptsAbout writes n prompts about a topic: datasets written with
// different topics share no prompt, so none is answered for the other.
func writePromptsAbout(t testing.TB, path string, n int, topic string) {
	t.Helper()
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, `{"messages":[{"role":"user","content":"Question number %d: explain %s %d in detail."}]}`+"\n", i, topic, i*7)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runBudget(t *testing.T, dir string, budget string, extra string) (completion int64, skipped int, took time.Duration) {
	t.Helper()
	spec := fmt.Sprintf(`version: 1
name: budget
state: state.db
datasets:
  d: {source: prompts.jsonl, est_completion_tokens: 2000}
endpoints:
  sim: {api: sim, concurrency: 150, options: {seed: 7, mean_tokens: 2000, sigma: 1, speed: 2000}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - name: generate
    uses: generate
    needs: [load]
    foreach: datasets
    concurrency: 150
    with: {max_tokens: 16384, budget: {completion_tokens: %s %s}}
`, budget, extra)
	p, store := enginetest.Open(t, dir, spec)
	start := time.Now()
	enginetest.Run(t, p, store, nil)
	took = time.Since(start)
	completion, skipped = spentOn(t, store, "generate[d]")
	return completion, skipped, took
}

// spentOn returns the completion tokens an instance's done records spent
// and how many records it skipped.
func spentOn(t *testing.T, store *state.Store, instance string) (completion int64, skipped int) {
	t.Helper()
	counts, err := store.Counts(instance)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range counts {
		switch c.Status {
		case 0:
			completion += c.CompletionTokens
		case 2:
			skipped += c.N
		}
	}
	return completion, skipped
}

// TestBudget_OvershootBelowOnePercent runs the setting: a
// 1,000,000-token budget at concurrency 150 with long-tailed answers of
// 2,000 tokens on average, produced at 2,000 tokens/s per request, on the
// bubble's clock: about 15 s of it, and under a second of the wall's.
func TestBudget_OvershootBelowOnePercent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		writePrompts(t, filepath.Join(dir, "prompts.jsonl"), 1500)
		const limit = 1_000_000
		got, skipped, took := runBudget(t, dir, "1_000_000", "")
		over := float64(got-limit) / limit
		t.Logf("budget 1M at concurrency 150, mean 2000: spent %d (%+.2f%%), %d skipped, %s", got, 100*over, skipped, took)
		if over > 0.01 {
			t.Errorf("spent %d completion tokens, %.2f%% over the budget; want under 1%%", got, 100*over)
		}
		if over < -0.05 {
			t.Errorf("spent %d completion tokens, %.2f%% under the budget; the budget should be nearly used", got, -100*over)
		}
		if skipped == 0 {
			t.Error("no record was skipped for budget")
		}
		// Raising the budget continues from there: the earlier answers count.
		more, skipped2, _ := runBudget(t, dir, "1_100_000", "")
		if more <= got || float64(more) > 1.1e6*1.01 || skipped2 >= skipped {
			t.Errorf("after raising the budget to 1.1M: spent %d (was %d), %d skipped (was %d)", more, got, skipped2, skipped)
		}
	})
}
