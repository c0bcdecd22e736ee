package generate_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/state"
)

// spent adds up the done outcomes of instances: prompt and completion tokens.
func spent(t *testing.T, store *state.Store, ids ...string) (prompt, completion int64) {
	t.Helper()
	for _, id := range ids {
		counts, err := store.Counts(id)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range counts {
			if c.Status == 0 {
				prompt += c.PromptTokens
				completion += c.CompletionTokens
			}
		}
	}
	return prompt, completion
}

// TestBudget_Scopes: a stage-wide budget is one pot shared by every
// dataset, each getting a fair part of it; a dollars budget prices prompt
// and completion tokens with the endpoint's price.
func TestBudget_Scopes(t *testing.T) {
	cases := []struct {
		name   string
		budget string
		check  func(t *testing.T, prompt, completion [2]int64)
	}{
		{"stage", "{completion_tokens: 150_000, scope: stage}", func(t *testing.T, _, c [2]int64) {
			total := c[0] + c[1]
			if total > 151_500 || total < 140_000 {
				t.Errorf("datasets spent %d completion tokens together; want 150,000 (-7%% to +1%%)", total)
			}
			for i, n := range c {
				if float64(n) < 0.35*float64(total) {
					t.Errorf("dataset %d got %d of %d tokens; want a fair half", i, n, total)
				}
			}
		}},
		{"dollars per dataset", "{dollars: 0.25}", func(t *testing.T, p, c [2]int64) {
			for i := range p {
				usd := (float64(p[i])*1.0 + float64(c[i])*3.0) / 1e6
				if usd > 0.2525 || usd < 0.23 {
					t.Errorf("dataset %d spent $%.4f; want $0.25 (-8%% to +1%%)", i, usd)
				}
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := t.TempDir()
				// Distinct prompts: each dataset pays for its own answers.
				writePromptsAbout(t, filepath.Join(dir, "a.jsonl"), 600, "idea")
				writePromptsAbout(t, filepath.Join(dir, "b.jsonl"), 600, "notion")
				p, store := enginetest.Open(t, dir, fmt.Sprintf(`version: 1
name: scopes
state: state.db
datasets:
  a: {source: a.jsonl, est_completion_tokens: 500}
  b: {source: b.jsonl, est_completion_tokens: 500}
endpoints:
  sim: {api: sim, concurrency: 60, price: {input: 1.0, output: 3.0}, options: {seed: 5, mean_tokens: 500, speed: 5000}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 4096, budget: %s}}
`, tc.budget))
				enginetest.Run(t, p, store, nil)
				var prompt, completion [2]int64
				for i, ds := range []string{"a", "b"} {
					prompt[i], completion[i] = spent(t, store, "generate["+ds+"]")
				}
				t.Logf("prompt tokens %v, completion tokens %v", prompt, completion)
				tc.check(t, prompt, completion)
			})
		})
	}
}
