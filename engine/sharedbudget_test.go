package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
	"github.com/eaglet-dev/eaglet/state"
)

// sharedBudgetSpec has one budget for every dataset of generate.
const sharedBudgetSpec = `version: 1
name: shared
state: state.db
datasets:
{{datasets}}endpoints:
  target: {api: openai, urls: ["{{url}}/v1"], model: sim, concurrency: 16}
stages:
  - {name: load, uses: load, foreach: datasets}
  - name: generate
    uses: generate
    needs: [load]
    foreach: datasets
    with: {endpoint: target, max_tokens: 64, retries: 0, budget: {samples: {{samples}}, scope: stage}}
`

// TestPlanEqualsRun_SharedBudgetRenamed: under one budget for every
// dataset, a dataset renamed since its answers were made keeps them, as
// plan says, even when a sibling reaches its first request long before
// the renamed one has read its input. Answers found again cost nothing:
// they take the budget before new requests do, as plan counts them, not
// after a sibling spent it on requests (the run reused 146 of 156 in a
// user trial and paid for 15 new answers).
func TestPlanEqualsRun_SharedBudgetRenamed(t *testing.T) {
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 20})})
	dir := t.TempDir()
	t.Chdir(dir)
	// The renamed dataset is long, so its load takes a while; the new
	// one is short and reaches generate at once.
	var big, small bytes.Buffer
	for i := range 3_000 {
		fmt.Fprintf(&big, `{"messages":[{"role":"user","content":"long question %d"}]}`+"\n", i)
	}
	for i := range 40 {
		fmt.Fprintf(&small, `{"messages":[{"role":"user","content":"short question %d"}]}`+"\n", i)
	}
	for name, b := range map[string][]byte{"big.jsonl": big.Bytes(), "small.jsonl": small.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write := func(datasets string, samples int) string {
		spec := strings.NewReplacer("{{datasets}}", datasets, "{{url}}", srv.URL, "{{samples}}", fmt.Sprint(samples)).
			Replace(sharedBudgetSpec)
		path := filepath.Join(dir, "spec.yaml")
		if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ds := func(name, file string) string {
		return "  " + name + ": {source: " + file + ", format: messages, est_completion_tokens: 20}\n"
	}

	first := write(ds("x", "big.jsonl"), 30)
	run := func(path string) (requests, reused, planned, planReused int) {
		t.Helper()
		p, err := engine.Load(path, enginetest.NoEnv)
		if err != nil {
			t.Fatal(err)
		}
		store, err := state.Open(p.Spec.State)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		for _, s := range p.Plan(store, engine.Selection{}) {
			if s.Err != nil {
				t.Fatalf("plan %s: %v", s.Node.ID, s.Err)
			}
			if s.Node.Stage.Kind.Name == "generate" {
				planned += s.Todo
				planReused += s.Reused + s.Shared
			}
		}
		results, err := p.Run(context.Background(), store, engine.RunOptions{Log: &bytes.Buffer{}})
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range results {
			if res.Node.Stage.Kind.Name == "generate" {
				reused += res.Reused
			}
		}
		return srv.Take(), reused, planned, planReused
	}
	if requests, _, _, _ := run(first); requests != 30 {
		t.Fatalf("first run sent %d requests; want the budget's 30", requests)
	}
	// Renamed, beside a new dataset, with room for 10 more answers.
	requests, reused, planned, planReused := run(write(ds("renamed", "big.jsonl")+ds("fresh", "small.jsonl"), 40))
	if planReused != 30 || planned != 10 {
		t.Fatalf("plan: %d reused, %d to ask; want 30 and 10", planReused, planned)
	}
	if reused != planReused || requests != planned {
		t.Errorf("the run reused %d answers and sent %d requests; plan said %d and %d", reused, requests, planReused, planned)
	}
}
