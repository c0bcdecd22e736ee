package engine_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
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

	if planned, _ := checkPlanIsRun(t, write(ds("x", "big.jsonl"), 30), srv, false, "first run"); planned != 30 {
		t.Fatalf("first run: plan said %d requests; want the budget's 30", planned)
	}
	// Renamed, beside a new dataset, with room for 10 more answers: the
	// run must do what plan says (checkPlanIsRun), and plan must say it
	// keeps the 30 answers paid for.
	path := write(ds("renamed", "big.jsonl")+ds("fresh", "small.jsonl"), 40)
	if planned, planReused := checkPlanIsRun(t, path, srv, false, "renamed beside a new dataset"); planReused != 30 || planned != 10 {
		t.Errorf("plan: %d reused, %d to ask; want 30 and 10", planReused, planned)
	}
}
