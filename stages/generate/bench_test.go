package generate_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/stages/generate/sim"
	"github.com/eaglet-dev/eaglet/stages/generate/sim/server"
	"github.com/eaglet-dev/eaglet/stages/generate/sim/simtest"
	"github.com/eaglet-dev/eaglet/state"
)

// BenchmarkGenerate_RequestsPerSecond measures what the engine sustains end
// to end (dispatch, HTTP to the sim server, checkpoint) with 1,000 requests
// in flight and answers at instant speed. EAGLET_BENCH_REQUESTS sets the
// number of prompts (default 20,000):
//
//	go test ./stages/generate -run '^$' -bench RequestsPerSecond -benchtime 1x
func BenchmarkGenerate_RequestsPerSecond(b *testing.B) {
	n := 20_000
	if v := os.Getenv("EAGLET_BENCH_REQUESTS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	for _, api := range []string{"openai", "openai-stream"} {
		b.Run(api, func(b *testing.B) {
			url := simtest.Serve(b, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 50})})
			dir := b.TempDir()
			writePrompts(b, filepath.Join(dir, "prompts.jsonl"), n)
			for i := 0; b.Loop(); i++ {
				spec := fmt.Sprintf(`version: 1
name: rps
state: state%d.db
datasets:
  d: {source: prompts.jsonl}
endpoints:
  sim: {api: openai, urls: ["%s/v1"], concurrency: 1000, options: {stream: %t}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, concurrency: 1000, with: {max_tokens: 256}}
`, i, url, api == "openai-stream")
				path := filepath.Join(dir, "spec.yaml")
				os.WriteFile(path, []byte(spec), 0o644)
				p, err := engine.Load(path, func(string) (string, bool) { return "", false })
				if err != nil {
					b.Fatal(err)
				}
				store, err := state.Open(p.Spec.State)
				if err != nil {
					b.Fatal(err)
				}
				// Load first, so the clock measures generation alone.
				loads, _ := p.Select("load", "", false)
				if _, err := p.Run(context.Background(), store, engine.RunOptions{Nodes: loads, Log: &bytes.Buffer{}}); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				results, err := p.Run(context.Background(), store, engine.RunOptions{Log: &bytes.Buffer{}})
				if err != nil {
					b.Fatal(err)
				}
				store.Close()
				for _, r := range results {
					if r.Node.ID == "generate[d]" {
						b.ReportMetric(float64(r.Processed)/time.Since(start).Seconds(), "requests/s")
					}
				}
			}
		})
	}
}

// BenchmarkGenerate_QueuedPrompts runs the in-process simulator at instant
// speed over many queued prompts and reports throughput and the process's
// peak memory, which must not grow with the queue: pending records are read
// from the store page by page. EAGLET_BENCH_QUEUED sets the number of
// prompts (default 1,000,000):
//
//	go test ./stages/generate -run '^$' -bench QueuedPrompts -benchtime 1x
func BenchmarkGenerate_QueuedPrompts(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("EAGLET_BENCH_QUEUED"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	dir := b.TempDir()
	writePrompts(b, filepath.Join(dir, "prompts.jsonl"), n)
	for i := 0; b.Loop(); i++ {
		spec := fmt.Sprintf(`version: 1
name: queued
state: state%d.db
datasets:
  d: {source: prompts.jsonl}
endpoints:
  sim: {api: sim, concurrency: 1000, options: {mean_tokens: 20}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 64}}
`, i)
		path := filepath.Join(dir, "spec.yaml")
		os.WriteFile(path, []byte(spec), 0o644)
		p, err := engine.Load(path, func(string) (string, bool) { return "", false })
		if err != nil {
			b.Fatal(err)
		}
		store, err := state.Open(p.Spec.State)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		results, err := p.Run(context.Background(), store, engine.RunOptions{Log: &bytes.Buffer{}})
		if err != nil {
			b.Fatal(err)
		}
		store.Close()
		for _, r := range results {
			if r.Node.ID == "generate[d]" {
				b.ReportMetric(float64(r.Processed)/time.Since(start).Seconds(), "records/s")
			}
		}
	}
	b.ReportMetric(peakRSSMiB(), "peak-MiB")
}

// peakRSSMiB reads the process's high-water resident memory (Linux).
func peakRSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			kb, _ := strconv.Atoi(strings.Fields(line)[1])
			return float64(kb) / 1024
		}
	}
	return 0
}
