package generate_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/stages/serving/pipenet"
)

// TestTimeout_CountsFromLastToken: answers that stream for longer than the
// timeout but never fall silent for that long must complete on the first
// attempt; a timeout on the whole request would cut every one of them.
func TestTimeout_CountsFromLastToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		writePrompts(t, filepath.Join(dir, "prompts.jsonl"), 8)
		// About 60 tokens at 75 tokens/s: 0.8 s an answer, with progress every
		// 20 ms, against a 300 ms timeout and no retries.
		p, store := enginetest.Open(t, dir, `version: 1
name: timeout
state: state.db
datasets:
  d: {source: prompts.jsonl}
endpoints:
  sim: {api: sim, concurrency: 8, options: {seed: 3, mean_tokens: 60, sigma: 0.1, speed: 75}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 256, timeout: 300ms, retries: 0}}
`)
		enginetest.Run(t, p, store, nil)
		counts, err := store.Counts("generate[d]")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range counts {
			if c.Status != 0 {
				t.Errorf("%d records ended with status %d (%s); want all done", c.N, c.Status, c.Reason)
			}
		}
	})
}

// TestTimeout_SilentServer: a server that accepts a request and never
// answers costs the timeout, then the record fails with the reason.
func TestTimeout_SilentServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		url := serveCountingSim(t, server.Config{Model: sim.New(sim.Config{Seed: 1}), Faults: server.Faults{Seed: 1, Hang: 0.99}}).URL
		dir := t.TempDir()
		writePrompts(t, filepath.Join(dir, "prompts.jsonl"), 2)
		p, store := enginetest.Open(t, dir, fmt.Sprintf(`version: 1
name: silent
state: state.db
datasets:
  d: {source: prompts.jsonl}
endpoints:
  sim: {api: openai, urls: ["%s/v1"], options: {stream: true}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 64, timeout: 200ms, retries: 0}}
`, url))
		enginetest.Run(t, p, store, nil)
		counts, err := store.Counts("generate[d]")
		if err != nil {
			t.Fatal(err)
		}
		if len(counts) != 1 || counts[0].Status != 3 || counts[0].N != 2 || counts[0].Reason != "nothing received for 200ms" {
			t.Errorf("counts %+v; want both records failed: nothing received for 200ms", counts)
		}
	})
}

// TestEndpoint_DeadServer: against a server that refuses connections, or
// one whose every streamed generation hangs while its health answers (not
// streaming, nothing tells a hung server from one whose first answers take
// long before some answer has come), the log says
// which URL is out of service and why, and once every URL has been out
// longer than the timeout, records fail at once saying so (the URL once)
// instead of each waiting out the pool's rest, up to a minute a record, or
// the timeout of each attempt: the run ends in about the timeout (plus the
// 20 s the watchdog takes to find a hung server).
func TestEndpoint_DeadServer(t *testing.T) {
	for _, tc := range []struct {
		name, url string
		stream    bool
		n         int
		timeout   time.Duration
		// log is what the run's one line on the URL going out of service
		// says, and named what the records' reason must name once.
		log   []string
		named string
	}{
		{"refusing", "http://127.0.0.1:1/v1", false, 40, time.Second,
			[]string{"endpoint target: http://127.0.0.1:1/v1 out of service for 2s after 3 failures in a row: ", "connection refused"},
			"http://127.0.0.1:1/v1/chat/completions"},
		{"hung", "http://hung/v1", true, 20, 2 * time.Minute,
			[]string{"endpoint target: http://hung/v1 out of service: no token in 10s, nor to a one-token request in 10s; probing in 2s, backing off to 1m0s; it is the endpoint's only URL: requests wait for it to come back, up to their timeout"},
			"http://hung/v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if tc.name == "refusing" {
					// Connections refused for real, through a client made in the bubble.
					tr := &http.Transport{}
					defer tr.CloseIdleConnections()
					useClient(t, &http.Client{Transport: tr})
				} else {
					hung, err := server.New(server.Config{Model: sim.New(sim.Config{Seed: 5}), Faults: server.Faults{HangAll: true}})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(hung.Close)
					useClient(t, pipenet.ServeHosts(t, map[string]http.Handler{"hung": hung}))
				}
				dir := t.TempDir()
				writePrompts(t, filepath.Join(dir, "prompts.jsonl"), tc.n)
				p, store := enginetest.Open(t, dir, fmt.Sprintf(`version: 1
name: dead
state: state.db
datasets:
  d: {source: prompts.jsonl}
endpoints:
  target: {api: openai, urls: [%q], concurrency: 8, options: {stream: %t}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 8, timeout: %s}}
`, tc.url, tc.stream, tc.timeout))
				var log bytes.Buffer
				start := time.Now()
				p.Run(context.Background(), store, engine.RunOptions{Log: &log})
				took := time.Since(start)
				if strings.Count(log.String(), "out of service") != 1 {
					t.Errorf("log:\n%s\nwant one line saying the URL is out of service", log.String())
				}
				for _, want := range tc.log {
					if !strings.Contains(log.String(), want) {
						t.Errorf("log:\n%s\nwant a line saying the URL is out of service and why: %s", log.String(), want)
					}
				}
				counts, err := store.Counts("generate[d]")
				if err != nil {
					t.Fatal(err)
				}
				if len(counts) != 1 || counts[0].Status != 3 || counts[0].N != tc.n ||
					!strings.HasPrefix(counts[0].Reason, "endpoint target out of service: no URL answered for ") ||
					strings.Count(counts[0].Reason, tc.named) != 1 {
					t.Errorf("counts %+v; want all %d failed for the endpoint being out of service, naming the URL once", counts, tc.n)
				}
				if limit := tc.timeout + 30*time.Second; took > limit {
					t.Errorf("a dead endpoint took %s to fail %d records with a %s timeout", took, tc.n, tc.timeout)
				}
			})
		})
	}
}
