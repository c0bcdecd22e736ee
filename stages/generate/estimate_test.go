package generate_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
	"github.com/eaglet-dev/eaglet/stages"
)

// TestEstimate_PricedFromAnswersSoFar: a dataset without
// est_completion_tokens on a real API is first priced at the endpoint's
// default (1,000 tokens a record); once it has answers, plan prices the
// records left at their mean: the ones a raised cap adds, and every record
// a changed option redoes (at the lengths they had before the change).
// A budget that holds them all then cuts nothing, as the run will not.
func TestEstimate_PricedFromAnswersSoFar(t *testing.T) {
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 4, MeanTokens: 150, Sigma: 0.5})})
	dir := t.TempDir()
	writePrompts(t, filepath.Join(dir, "prompts.jsonl"), 200)
	spec := func(cap int, temperature float64, est ...int) string {
		estimate := ""
		if len(est) > 0 {
			estimate = fmt.Sprintf(", est_completion_tokens: %d", est[0])
		}
		return fmt.Sprintf(`version: 1
name: estimate
state: state.db
datasets:
  d: {source: prompts.jsonl%s}
endpoints:
  e: {api: openai, urls: ["%s/v1"], model: sim, concurrency: 8, price: {input: 1, output: 2}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: %d, seed: 1}}
  - {name: generate, uses: generate, needs: [cap], foreach: datasets, with: {max_tokens: 2000, temperature: %v, budget: {completion_tokens: 40000}}}
`, estimate, srv.URL, cap, temperature)
	}
	plan := func(s string) (records int, tokens, prompt int64, action string) {
		t.Helper()
		p, store := enginetest.Open(t, dir, s)
		for _, st := range p.Plan(store, engine.Selection{}) {
			if st.Err != nil {
				t.Fatalf("plan %s: %v", st.Node.ID, st.Err)
			}
			if st.Node.ID == "generate[d]" {
				return st.Estimate.Records, st.NewTokens, st.Estimate.PromptTokens, st.Words()
			}
		}
		t.Fatal("no generate[d] in the plan")
		return 0, 0, 0, ""
	}

	// Nothing ran: 1,000 tokens a record, so the budget seems to cut the
	// 60 records to 40, and plan says the length is a guess and the cost
	// has no prompt tokens (no tokenize stage, no est_prompt_tokens).
	const guessed = "answers guessed at 1000 tokens and the cost leaves out prompt tokens: set est_completion_tokens and est_prompt_tokens on dataset d"
	if n, tokens, _, action := plan(spec(60, 0.5)); n != 40 || tokens != 40_000 || !strings.Contains(action, "budget allows") || !strings.Contains(action, guessed) {
		t.Errorf("first plan: %d records, %d new tokens, %q; want 40 records, the budget's 40,000 tokens, and %q", n, tokens, action, guessed)
	}
	p, store := enginetest.Open(t, dir, spec(60, 0.5))
	enginetest.Run(t, p, store, nil)
	prompts, spent := spent(t, store, "generate[d]")
	mean, meanPrompt := (spent+30)/60, (prompts+30)/60
	if mean > 300 || meanPrompt == 0 {
		t.Fatalf("60 answers took %d completion and %d prompt tokens; want about 150 each, and prompts counted", spent, prompts)
	}
	srv.Take()

	tests := []struct {
		name    string
		spec    string
		records int
		redo    int64
	}{
		{"raised cap", spec(100, 0.5), 100, 40},
		{"changed temperature", spec(60, 0.9), 60, 60},
		// 60 answers measured beat the spec's guess, and so do the 60 a
		// changed option redoes.
		{"raised cap, est_completion_tokens in the spec", spec(100, 0.5, 1000), 100, 40},
		{"changed temperature, est_completion_tokens in the spec", spec(60, 0.9, 1000), 60, 60},
	}
	// The raised cap's 40 new prompts are priced at the server's count of
	// the first 60's.
	if _, _, prompt, _ := plan(spec(100, 0.5)); prompt != prompts+40*meanPrompt {
		t.Errorf("raised cap: %d prompt tokens; want %d kept and %d for the 40 new", prompt, prompts, 40*meanPrompt)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, tokens, _, action := plan(tt.spec)
			if want := tt.redo * mean; n != tt.records || tokens != want || strings.Contains(action, "budget allows") || strings.Contains(action, "guessed") || strings.Contains(action, "leaves out") {
				t.Errorf("%d records, %d new tokens, %q; want %d records, %d new tokens (%d at the mean of %d so far), nothing cut",
					n, tokens, action, tt.records, want, tt.redo, mean)
			}
		})
	}
	if n := srv.Take(); n != 0 {
		t.Errorf("plan sent %d requests; want none", n)
	}
}

// TestEstimate_PricesEveryAnswer: est_completion_tokens is the length of
// one answer, and a run answers an MT-Bench record's second question, and
// with turns: all every assistant turn of a conversation. Plan must price
// those answers, as the run spends them, not one a record.
func TestEstimate_PricesEveryAnswer(t *testing.T) {
	dir := t.TempDir()
	var mt, chats strings.Builder
	for i := range 100 {
		fmt.Fprintf(&mt, `{"turns":["Question %d: explain a sorting algorithm.","Now compare it with one other, briefly."]}`+"\n", i)
		fmt.Fprintf(&chats, `{"messages":[{"role":"user","content":"Hello %d, tell me about rivers."},{"role":"assistant","content":"Rivers flow."},{"role":"user","content":"And lakes?"},{"role":"assistant","content":"Lakes stay."},{"role":"user","content":"And seas?"},{"role":"assistant","content":"Seas are salty."}]}`+"\n", i)
	}
	for name, body := range map[string]string{"mt.jsonl": mt.String(), "chats.jsonl": chats.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, store := enginetest.Open(t, dir, `version: 1
name: answers
state: state.db
datasets:
  mt: {source: mt.jsonl, est_completion_tokens: 300}
  chats: {source: chats.jsonl, est_completion_tokens: 300}
endpoints:
  sim: {api: sim, concurrency: 16, options: {seed: 3, mean_tokens: 300}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 4096, turns: all}}
`)
	planned := map[string]int64{}
	for _, st := range p.Plan(store, engine.Selection{}) {
		if st.Err != nil {
			t.Fatalf("plan %s: %v", st.Node.ID, st.Err)
		}
		planned[st.Node.ID] = st.NewTokens
	}
	enginetest.Run(t, p, store, nil)
	for _, tc := range []struct {
		id      string
		answers int64
	}{{"generate[mt]", 2}, {"generate[chats]", 3}} {
		if want := 100 * tc.answers * 300; planned[tc.id] != want {
			t.Errorf("%s: planned %d completion tokens; want 100 records × %d answers × 300 = %d", tc.id, planned[tc.id], tc.answers, want)
		}
		_, got := spent(t, store, tc.id)
		if r := float64(planned[tc.id]) / float64(got); r < 0.75 || r > 1.33 {
			t.Errorf("%s: planned %d completion tokens, the run spent %d (%.2fx)", tc.id, planned[tc.id], got, r)
		}
	}
}

// TestEstimate_TimeAtTheMeasuredPace: before any answer plan prices time
// at the spec's tokens_per_second, saying so; once answers came, at the
// pace they came at (the store's throughput of the stage's answers), which
// replaces the guess, and no request is sent for it.
func TestEstimate_TimeAtTheMeasuredPace(t *testing.T) {
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 4, MeanTokens: 80, Sigma: 0.3}), Speed: 2000})
	dir := t.TempDir()
	writePrompts(t, filepath.Join(dir, "prompts.jsonl"), 100)
	spec := func(cap int) string {
		return fmt.Sprintf(`version: 1
name: pace
state: state.db
datasets:
  d: {source: prompts.jsonl, est_completion_tokens: 80}
endpoints:
  e: {api: openai, urls: ["%s/v1"], model: sim, concurrency: 8, tokens_per_second: 1000000}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: %d, seed: 1}}
  - {name: generate, uses: generate, needs: [cap], foreach: datasets, with: {max_tokens: 400}}
`, srv.URL, cap)
	}
	plan := func(s string) *engine.Step {
		t.Helper()
		p, store := enginetest.Open(t, dir, s)
		for _, st := range p.Plan(store, engine.Selection{}) {
			if st.Node.ID == "generate[d]" {
				return st
			}
		}
		t.Fatal("no generate[d] in the plan")
		return nil
	}
	first := plan(spec(40))
	if e := first.Estimate; e.Pace != stages.PaceStated || e.Rate != 1e6 || e.Seconds != float64(e.CompletionTokens)/1e6 {
		t.Errorf("before any answer: %v s at %v tokens/s (%s); want the stated 1M tokens/s", e.Seconds, e.Rate, e.Pace)
	}
	p, store := enginetest.Open(t, dir, spec(40))
	enginetest.Run(t, p, store, nil)
	tps, n, err := store.ThroughputOf(context.Background(), []string{"generate[d]"}, 5000)
	if err != nil || n != 40 || tps <= 0 || tps > 100_000 {
		t.Fatalf("throughput of the 40 answers: %v tokens/s over %d (%v)", tps, n, err)
	}
	srv.Take()
	next := plan(spec(100))
	e := next.Estimate
	if e.Pace != stages.PaceMeasured || e.Rate != tps || math.Abs(e.Seconds-float64(next.NewTokens)/tps) > 1e-6*e.Seconds {
		t.Errorf("after 40 answers: %v s for %d new tokens at %v tokens/s (%s); want them at the %v tokens/s measured", e.Seconds, next.NewTokens, e.Rate, e.Pace, tps)
	}
	if n := srv.Take(); n != 0 {
		t.Errorf("plan sent %d requests; want none", n)
	}
}
