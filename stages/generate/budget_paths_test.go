package generate_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
)

// TestBudget_EveryAPIPath runs a completion-token budget against eaglet's
// sim server over HTTP on each way an answer can come back: SGLang's
// /generate streaming (token counts in every event), chat streaming with
// token ids, chat streaming without them, and chat not streaming. The
// server decodes in a continuous batch and puts at least 16 tokens in a
// stream event, as a real server does under load or with a stream interval,
// so counting events as tokens would make running answers look 16 times
// shorter than they are. TestBudget_OvershootDistribution covers many seeds
// in virtual time; this checks the real clients and wire formats.
func TestBudget_EveryAPIPath(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about 10 s of simulated generation per path")
	}
	tokDir, err := filepath.Abs("../../internal/tokenizer/testdata/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, endpoint string }{
		{"sglang generate stream", `api: sglang, urls: [%q], options: {stream: true}`},
		{"chat stream with token ids", `api: openai, urls: ["%s/v1"], options: {stream: true, return_token_ids: true}`},
		{"chat stream", `api: openai, urls: ["%s/v1"], options: {stream: true}`},
		{"chat not streaming", `api: openai, urls: ["%s/v1"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := simtest.Serve(t, server.Config{Model: sim.New(sim.Config{Seed: 11, MeanTokens: 1000, Sigma: 1}),
				Speed: 1500, MaxRunning: 256, Slowdown: 0.2, StreamInterval: 16})
			dir := t.TempDir()
			writePrompts(t, filepath.Join(dir, "prompts.jsonl"), 1000)
			const limit = 300_000
			p, store := enginetest.Open(t, dir, fmt.Sprintf(`version: 1
name: paths
state: state.db
datasets:
  d: {source: prompts.jsonl, est_completion_tokens: 1000}
endpoints:
  sim: {`+tc.endpoint+`, concurrency: 60}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: tokenize, uses: tokenize, needs: [load], foreach: datasets, with: {tokenizer: %s}}
  - name: generate
    uses: generate
    needs: [tokenize]
    foreach: datasets
    with: {max_tokens: 8192, budget: {completion_tokens: %d}}
`, url, tokDir, limit))
			enginetest.Run(t, p, store, nil)
			spent, skipped := spentOn(t, store, "generate[d]")
			over := float64(spent-limit) / limit
			t.Logf("%s: spent %d of %d (%+.2f%%), %d skipped", tc.name, spent, limit, 100*over, skipped)
			if over > 0.01 {
				t.Errorf("spent %d completion tokens, %.2f%% over the budget; want under 1%%", spent, 100*over)
			}
			if over < -0.06 || skipped == 0 {
				t.Errorf("spent %d completion tokens (%+.2f%%), %d skipped; the budget should be nearly used and stop the run", spent, 100*over, skipped)
			}
		})
	}
}
