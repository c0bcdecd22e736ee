package generate_test

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
)

// BenchmarkScheduling runs the shape of a real run where concurrency 150
// met a KV cache that fits about 45 answers: three datasets of 300 prompts,
// answers of 3,500 tokens on average (lognormal, sigma 1, max 16,384), a
// cache of 159,277 tokens, at most 256 sequences decoding at 50 tokens/s
// each, 0.2% slower per other sequence, prefilling 8,000 tokens/s while
// decoding waits, in simulated time 50 times real.
// The server admits and retracts as SGLang does (internal/sim/server), so
// too many requests in flight cost recomputed prefixes. It reports output
// tokens per simulated second (sim-tokens/s) and preemptions for fixed
// concurrencies around the point where preemptions begin and for
// concurrency: auto with and without the server's /metrics, streaming (and
// with metrics, not streaming), and how full each keeps the server: its
// mean batch and KV usage until all but the last 150 answers are in, and
// the seconds after (the tail).
//
//	go test ./stages/generate -run '^$' -bench Scheduling -benchtime 1x
//
// EAGLET_BENCH_SCHED picks cases by name (comma-separated substrings).
func BenchmarkScheduling(b *testing.B) {
	const timeScale = 50
	cases := []struct{ name, concurrency, options string }{
		{"fixed32", "32", "stream: true"},
		{"fixed38", "38", "stream: true"},
		{"fixed45", "45", "stream: true"},
		{"fixed64", "64", "stream: true"},
		{"fixed96", "96", "stream: true"},
		{"fixed150", "150", "stream: true"},
		{"auto-latency", "auto", "stream: true, metrics: off"},
		{"auto-metrics", "auto", "stream: true"},
		{"auto-metrics-unstreamed", "auto", "stream: false"},
	}
	for _, c := range cases {
		if pick := os.Getenv("EAGLET_BENCH_SCHED"); pick != "" && !matchesAny(c.name, pick) {
			continue
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				srv, err := server.New(server.Config{Model: sim.New(sim.Config{Seed: 2, MeanTokens: 3500, Sigma: 1, MaxLen: 16384}),
					Speed: 50 * timeScale, PrefillSpeed: 8000 * timeScale, KVTokens: 159_277, MaxRunning: 256, Slowdown: 0.002 * 256})
				if err != nil {
					b.Fatal(err)
				}
				hs := httptest.NewServer(srv)
				b.Cleanup(func() { hs.Close(); srv.Close() })
				dir := b.TempDir()
				for _, ds := range []string{"a", "b", "c"} {
					// Distinct prompts: a run shares the answer to a prompt two
					// datasets both hold.
					var rows bytes.Buffer
					for i := range 300 {
						fmt.Fprintf(&rows, `{"messages":[{"role":"user","content":"Dataset %s, question %d: explain idea %d in detail."}]}`+"\n", ds, i, i*7)
					}
					if err := os.WriteFile(filepath.Join(dir, ds+".jsonl"), rows.Bytes(), 0o644); err != nil {
						b.Fatal(err)
					}
				}
				spec := fmt.Sprintf(`version: 1
name: sched
state: state.db
datasets:
  a: {source: a.jsonl}
  b: {source: b.jsonl}
  c: {source: c.jsonl}
endpoints:
  sim: {api: openai, urls: ["%s/v1"], concurrency: %s, max_concurrency: 400, options: {%s}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 16384}}
`, hs.URL, c.concurrency, c.options)
				p, store := enginetest.Open(b, dir, spec)
				enginetest.Run(b, p, store, enginetest.Stage(b, p, "load", ""))
				start := time.Now()
				stop := make(chan struct{})
				sampled := make(chan [4]float64)
				go func() {
					// The server's batch and cache, sampled every 20 ms until all
					// but the last 150 answers are in, say how full each setting
					// keeps it; the rest of the run (tail-s) is the longest
					// answers ending, however many were in flight.
					var n, running, usage, tail float64
					t := time.NewTicker(20 * time.Millisecond)
					defer t.Stop()
					for {
						select {
						case <-stop:
							sampled <- [4]float64{n, running, usage, tail}
							return
						case <-t.C:
							st := srv.Stats()
							if st.Completed >= 750 {
								if tail == 0 {
									tail = time.Since(start).Seconds()
								}
								continue
							}
							n++
							running += float64(st.Running)
							usage += float64(st.KVUsed) / 159_277
						}
					}
				}()
				enginetest.Run(b, p, store, enginetest.Stage(b, p, "generate", ""))
				took := time.Since(start)
				close(stop)
				s := <-sampled
				st := srv.Stats()
				b.ReportMetric(float64(st.CompletionTokens)/took.Seconds()/timeScale, "sim-tokens/s")
				b.ReportMetric(float64(st.Retractions), "preemptions")
				b.ReportMetric(float64(st.RecomputedTokens), "recomputed-tokens")
				b.ReportMetric(float64(st.PeakRunning), "peak-running")
				b.ReportMetric(float64(st.Completed), "answers")
				if s[0] > 0 {
					b.ReportMetric(s[1]/s[0], "mean-running")
					b.ReportMetric(s[2]/s[0], "mean-kv-usage")
					b.ReportMetric(took.Seconds()-s[3], "tail-s")
				}
			}
		})
	}
}

func matchesAny(name, picks string) bool {
	for p := range strings.SplitSeq(picks, ",") {
		if p != "" && strings.Contains(name, p) {
			return true
		}
	}
	return false
}
