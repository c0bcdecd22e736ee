package generate_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
	"github.com/eaglet-dev/eaglet/stages"
)

// TestFatal_StopsSendingAndCountsWhatWasSent: a server refusing the API
// key refuses every request alike, so the endpoint stops at the first
// answer: no more than what was in flight reaches the server, and the
// run counts as sent exactly the requests the server received, not the
// records that failed without one.
func TestFatal_StopsSendingAndCountsWhatWasSent(t *testing.T) {
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 20}), APIKey: "the-right-key"})
	dir := t.TempDir()
	writePrompts(t, filepath.Join(dir, "prompts.jsonl"), 300)
	const concurrency = 4
	p, store := enginetest.Open(t, dir, fmt.Sprintf(`version: 1
name: fatal
state: state.db
datasets:
  d: {source: prompts.jsonl}
endpoints:
  e: {api: openai, urls: ["%s/v1"], model: sim, api_key: a-wrong-key, concurrency: %d}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 64}}
`, srv.URL, concurrency))
	results := enginetest.Run(t, p, store, nil)
	r := results["generate[d]"]
	received := srv.Count()
	if received == 0 || received > concurrency {
		t.Errorf("the server received %d requests; want 1 to %d (what was in flight when the first 401 came back)", received, concurrency)
	}
	if r.Requests != received {
		t.Errorf("the run counts %d requests sent; the server received %d", r.Requests, received)
	}
	if failed := enginetest.Count(t, store, "generate[d]", stages.Failed); failed != 300 {
		t.Errorf("%d records failed; want all 300, for the next run to retry", failed)
	}
}
