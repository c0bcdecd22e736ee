package generate_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
)

// TestOrder_LongestFirst: with order: longest_first the server receives
// the prompts whose source answers are longest first, so a run does not end
// waiting on a few long answers sent last.
func TestOrder_LongestFirst(t *testing.T) {
	var seen []int // source answer length of each prompt, as the server receives it
	url := serveRecording(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 20})}, func(body []byte) {
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		if json.Unmarshal(body, &req) == nil && len(req.Messages) > 0 {
			// The prompt says how long its source answer was.
			n, _ := strconv.Atoi(strings.TrimPrefix(req.Messages[0].Content, "answer length "))
			seen = append(seen, n)
		}
	})

	dir := t.TempDir()
	var b bytes.Buffer
	for i := range 40 {
		n := ((i*37)%41 + 1) * 50 // lengths 50..2050 in a scrambled order
		fmt.Fprintf(&b, `{"messages":[{"role":"user","content":"answer length %d"},{"role":"assistant","content":%q}]}`+"\n", n, strings.Repeat("x", n))
	}
	if err := os.WriteFile(filepath.Join(dir, "d.jsonl"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	p, store := enginetest.Open(t, dir, fmt.Sprintf(`version: 1
name: order
state: state.db
datasets:
  d: {source: d.jsonl}
endpoints:
  sim: {api: openai, urls: ["%s/v1"], concurrency: 1}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 64, order: longest_first}}
`, url))
	enginetest.Run(t, p, store, nil)
	if len(seen) != 40 {
		t.Fatalf("server saw %d prompts; want 40", len(seen))
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] > seen[i-1] {
			t.Fatalf("prompts arrived in the order %v; want longest source answer first", seen)
		}
	}
}

// serveRecording starts a sim server that hands every POST body to
// seen, one at a time, before answering it: tests check what the server
// received, at the protocol level.
func serveRecording(t *testing.T, cfg server.Config, seen func(body []byte)) string {
	t.Helper()
	hs := httptest.NewServer(recordingSim(t, cfg, seen))
	t.Cleanup(hs.Close)
	return hs.URL
}

// recordingSim is serveRecording's server, to serve as a test needs.
func recordingSim(t *testing.T, cfg server.Config, seen func(body []byte)) http.Handler {
	t.Helper()
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	var mu sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method == http.MethodPost { // not the endpoint's probe
			mu.Lock()
			seen(body)
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.ServeHTTP(w, r)
	})
}
