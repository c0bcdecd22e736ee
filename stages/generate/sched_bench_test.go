package generate_test

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
)

// BenchmarkScheduling runs three datasets of long-tailed answers against a
// simulated server whose KV cache holds about 45 sequences (as for a 1T
// model on 8 GPUs), and reports the server's output tokens/s and the work
// it recomputed after preemptions, for: the datasets one after another at a
// fixed concurrency of 150 (what hand-written scripts do), all at once at
// 150, all at once at the cache's 45, and all at once with concurrency: auto.
//
//	go test ./stages/generate -run '^$' -bench Scheduling -benchtime 1x
func BenchmarkScheduling(b *testing.B) {
	cases := []struct {
		name        string
		concurrency string
		sequential  bool
	}{
		{"fixed150-sequential", "150", true},
		{"fixed150-together", "150", false},
		{"fixed45-together", "45", false},
		{"auto-together", "auto", false},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				srv, err := server.New(server.Config{Model: sim.New(sim.Config{Seed: 2, MeanTokens: 1500, Sigma: 1}),
					Speed: 2000, KVTokens: 45 * 1600, Slowdown: 0.2, MaxRunning: 256})
				if err != nil {
					b.Fatal(err)
				}
				hs := httptest.NewServer(srv)
				b.Cleanup(func() { hs.Close(); srv.Close() })
				dir := b.TempDir()
				for _, ds := range []string{"a", "b", "c"} {
					writePrompts(b, filepath.Join(dir, ds+".jsonl"), 200)
				}
				spec := fmt.Sprintf(`version: 1
name: sched
state: state.db
datasets:
  a: {source: a.jsonl}
  b: {source: b.jsonl}
  c: {source: c.jsonl}
endpoints:
  sim: {api: openai, urls: ["%s/v1"], concurrency: %s, max_concurrency: 400, options: {stream: true}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 16384}}
`, hs.URL, c.concurrency)
				p, store := enginetest.Open(b, dir, spec)
				enginetest.Run(b, p, store, enginetest.Stage(b, p, "load", ""))
				start := time.Now()
				groups := [][]*engine.Node{enginetest.Stage(b, p, "generate", "")}
				if c.sequential {
					groups = nil
					for _, ds := range []string{"a", "b", "c"} {
						groups = append(groups, enginetest.Stage(b, p, "generate", ds))
					}
				}
				for _, g := range groups {
					enginetest.Run(b, p, store, g)
				}
				took := time.Since(start)
				st := srv.Stats()
				b.ReportMetric(float64(st.CompletionTokens)/took.Seconds(), "tokens/s")
				b.ReportMetric(float64(st.Retractions), "preemptions")
				b.ReportMetric(float64(st.RecomputedTokens), "recomputed-tokens")
				b.ReportMetric(float64(st.PeakRunning), "peak-running")
			}
		})
	}
}
