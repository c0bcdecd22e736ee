package generate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/state"
)

// TestConverse_KeepsAnswersSoFar: a record of two questions (MT-Bench)
// whose second answer is not had (the run was killed, or the request
// failed) keeps its first answer: the next run asks only the second
// question, conditioned on the same first answer, and the record's
// answers are those a run without the interruption gives. --force asks
// both again.
func TestConverse_KeepsAnswersSoFar(t *testing.T) {
	sim, err := server.New(server.Config{Model: sim.New(sim.Config{Seed: 5, MeanTokens: 40})})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		refuse   bool
		asked    = map[int]int{} // requests by the number of messages sent
		firstAsk = map[string]int{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		mu.Lock()
		n := len(req.Messages)
		asked[n]++
		if n == 1 {
			firstAsk[req.Messages[0].Content]++
		}
		no := refuse && n > 1
		mu.Unlock()
		if no {
			http.Error(w, `{"error":{"message":"the second question is refused"}}`, http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); sim.Close() })
	take := func() (first, second int) {
		mu.Lock()
		defer mu.Unlock()
		first, second = asked[1], asked[3]
		clear(asked)
		return first, second
	}

	dir := t.TempDir()
	var b strings.Builder
	for i := range 12 {
		fmt.Fprintf(&b, `{"turns":["Question %d: name a river.","Now name a lake near it."]}`+"\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "mt.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := fmt.Sprintf(`version: 1
name: keep
state: state.db
datasets: {mt: {source: mt.jsonl}}
endpoints: {e: {api: openai, urls: ["%s/v1"], model: sim, concurrency: 4}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 200, retries: 0}}
`, srv.URL)
	// answers reads each record's conversation as answered: the messages
	// with the target's answers, and its last answer.
	answers := func(store *state.Store) map[string]string {
		t.Helper()
		out := map[string]string{}
		err := store.EachOutput(context.Background(), []string{"generate[mt]"}, func(r state.Row) error {
			var rec conv.Record
			if err := json.Unmarshal(r.Data, &rec); err != nil {
				return err
			}
			b, err := json.Marshal([]any{rec.Messages, rec.Generation.Content})
			out[r.Key] = string(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	// Every second question refused: each record fails after its first answer.
	refuse = true
	enginetest.OpenAndRun(t, dir, spec)
	if first, second := take(); first != 12 || second != 12 {
		t.Fatalf("first run: %d first and %d second questions asked; want 12 of each", first, second)
	}
	// The next run asks the second questions only.
	refuse = false
	enginetest.OpenAndRun(t, dir, spec)
	if first, second := take(); first != 0 || second != 12 {
		t.Errorf("second run: %d first and %d second questions asked; want only the 12 second ones", first, second)
	}
	// The answers are those of a run that was never interrupted.
	clean := t.TempDir()
	if err := os.WriteFile(filepath.Join(clean, "mt.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, cleanStore, _ := enginetest.OpenAndRun(t, clean, spec)
	take()
	_, kept := enginetest.Open(t, dir, spec)
	got, want := answers(kept), answers(cleanStore)
	if len(got) != 12 || len(want) != 12 {
		t.Fatalf("%d and %d answered records; want 12", len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("record %s after the interruption:\n%s\nwant, as without one:\n%s", k, got[k], w)
		}
	}
	// Nothing is kept once the records are answered: --force asks both
	// questions again.
	p, store := enginetest.Open(t, dir, spec)
	force := map[*engine.Node]bool{}
	for _, n := range enginetest.Stage(t, p, "generate", "mt") {
		force[n] = true
	}
	if _, err := p.Run(context.Background(), store, engine.RunOptions{Force: force, Log: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	if first, second := take(); first != 12 || second != 12 {
		t.Errorf("--force: %d first and %d second questions asked; want 12 of each", first, second)
	}
}

// TestConverse_StopsBetweenAnswers: once a run is told to stop (Ctrl-C),
// a record of several questions whose answers so far are kept asks no
// further question: the run ends when the requests in flight do, not when
// every conversation in flight has had all its answers, and the next run
// asks only the questions left.
func TestConverse_StopsBetweenAnswers(t *testing.T) {
	sim, err := server.New(server.Config{Model: sim.New(sim.Config{Seed: 6, MeanTokens: 30})})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		asked = map[int]int{} // requests by the number of messages sent
		stop  func()
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []json.RawMessage `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		mu.Lock()
		n := len(req.Messages)
		asked[n]++
		if n == 3 && stop != nil {
			// The first second question: the user presses Ctrl-C.
			stop()
			stop = nil
		}
		mu.Unlock()
		if n == 3 {
			time.Sleep(300 * time.Millisecond)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); sim.Close() })
	take := func() map[int]int {
		mu.Lock()
		defer mu.Unlock()
		out := maps.Clone(asked)
		clear(asked)
		return out
	}
	dir := t.TempDir()
	var b strings.Builder
	for i := range 8 {
		fmt.Fprintf(&b, `{"turns":["Question %d: name a river.","A lake near it?","And a mountain?"]}`+"\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "mt.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := fmt.Sprintf(`version: 1
name: stop
state: state.db
datasets: {mt: {source: mt.jsonl}}
endpoints: {e: {api: openai, urls: ["%s/v1"], model: sim, concurrency: 4}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 100}}
`, srv.URL)
	p, store := enginetest.Open(t, dir, spec)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mu.Lock()
	stop = cancel
	mu.Unlock()
	_, _ = p.Run(ctx, store, engine.RunOptions{Log: &bytes.Buffer{}})
	stopped := take()
	if stopped[5] != 0 {
		t.Errorf("after the stop the run asked %d third questions; want none: the records wait for the next run", stopped[5])
	}
	enginetest.Run(t, p, store, nil)
	rest := take()
	if stopped[1]+rest[1] != 8 || stopped[3]+rest[3] != 8 || rest[5] != 8 {
		t.Errorf("questions asked (by messages sent) in the stopped run %v and the next %v; want each of the 8 records' three questions once", stopped, rest)
	}
}
