package generate_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
)

// TestRetry_HonoursRetryAfter: a server answering 429 with Retry-After is
// asked again no sooner than it said, not at the client's own backoff.
func TestRetry_HonoursRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var arrivals []time.Time
		url := serveInBubble(t, recordingSim(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 10}),
			Faults: server.Faults{Seed: 1, RateLimit: 0.99, RetryAfter: 300 * time.Millisecond}},
			func([]byte) { arrivals = append(arrivals, time.Now()) }))
		dir := t.TempDir()
		writePrompts(t, filepath.Join(dir, "prompts.jsonl"), 1)
		p, store := enginetest.Open(t, dir, fmt.Sprintf(`version: 1
name: retry
state: state.db
datasets:
  d: {source: prompts.jsonl}
endpoints:
  sim: {api: openai, urls: ["%s/v1"], concurrency: 1}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 16, retries: 3}}
`, url))
		enginetest.Run(t, p, store, nil)
		// With these seeds every try is refused: the first and three retries,
		// and the reason says the retries were spent.
		if len(arrivals) != 4 {
			t.Fatalf("server saw %d requests; want the first and its 3 retries", len(arrivals))
		}
		counts, err := store.Counts("generate[d]")
		if err != nil {
			t.Fatal(err)
		}
		if len(counts) != 1 || !strings.HasPrefix(counts[0].Reason, "http 429 (4 attempts): ") {
			t.Errorf("counts %+v; want the record failed after 4 attempts, saying so", counts)
		}
		for i := 1; i < len(arrivals); i++ {
			// The sim sends Retry-After: 0.3. The client's own backoff (random
			// up to 0.5, 1, 2 s) would land outside these bounds nine times in ten.
			if gap := arrivals[i].Sub(arrivals[i-1]); gap < 290*time.Millisecond || gap > time.Second {
				t.Errorf("retry %d came %s after the 429; want the 300ms Retry-After, not the client's own backoff", i, gap)
			}
		}
	})
}
