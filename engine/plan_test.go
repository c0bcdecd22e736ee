package engine_test

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
)

// weightsSpec has two datasets generated on the simulator and merged;
// tests fill in a's extra settings, the merge weights and what merge needs.
const weightsSpec = `version: 1
name: weights
state: state.db
datasets:
  a: {source: {{data}}/chat.jsonl, format: messages, est_completion_tokens: 300{{a}}}
  b: {source: {{data}}/code.jsonl, format: sharegpt, est_completion_tokens: 200}
endpoints:
  sim: {api: sim, concurrency: 4, options: {seed: 3, mean_tokens: 120}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {endpoint: sim, max_tokens: 400}}
  - {name: all, uses: filter, needs: [generate], with: {keep: "true"}}
  - {name: merge, uses: merge, needs: [{{needs}}], with: {out: train.jsonl, weights: {{weights}}}}
`

func TestPlan_MergeWeights(t *testing.T) {
	tests := []struct {
		name, a, weights, needs string
		// wa and wb are the weights the estimate should apply.
		wa, wb float64
		note   string
	}{
		{"merge weights", "", "{a: 2, b: 0.5}", "generate", 2, 0.5, "(a ×2, b ×0.5; writes train.jsonl)"},
		{"dataset weight", ", weight: 3", "{}", "generate", 3, 1, "(a ×3; writes train.jsonl)"},
		{"merge weight over dataset weight", ", weight: 3", "{a: 0}", "generate", 0, 1, "(a ×0; writes train.jsonl)"},
		// A stage over all datasets mixes them, so the split is lost.
		{"input not split by dataset", "", "{a: 2, b: 0.5}", "all", 1, 1, "(weights not applied"},
	}
	data, err := filepath.Abs("../specs/examples/data")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := strings.NewReplacer("{{data}}", data, "{{a}}", tt.a, "{{weights}}", tt.weights, "{{needs}}", tt.needs).Replace(weightsSpec)
			p, store := enginetest.Open(t, t.TempDir(), spec)
			steps := map[string]*engine.Step{}
			for _, s := range p.Plan(store, nil) {
				if s.Err != nil {
					t.Fatalf("plan %s: %v", s.Node.ID, s.Err)
				}
				steps[s.Node.ID] = s
			}
			a, b, merge := steps["generate[a]"].Estimate, steps["generate[b]"].Estimate, steps["merge"]
			if a.Records == 0 || a.CompletionTokens == 0 || b.Records == 0 || b.CompletionTokens == 0 {
				t.Fatalf("generate estimates a=%+v b=%+v; want records and tokens in both", a, b)
			}
			wantRecords := tt.wa*float64(a.Records) + tt.wb*float64(b.Records)
			wantTokens := tt.wa*float64(a.CompletionTokens) + tt.wb*float64(b.CompletionTokens)
			// Each dataset's share is rounded on its own.
			if got := float64(merge.Estimate.Records); math.Abs(got-wantRecords) > 1 {
				t.Errorf("merge records = %v; want %v (a=%d, b=%d)", got, wantRecords, a.Records, b.Records)
			}
			if got := float64(merge.Estimate.CompletionTokens); math.Abs(got-wantTokens) > 1 {
				t.Errorf("merge completion tokens = %v; want %v (a=%d, b=%d)", got, wantTokens, a.CompletionTokens, b.CompletionTokens)
			}
			if merge.NewTokens != 0 {
				t.Errorf("merge adds %d new tokens; repeated records are not generated", merge.NewTokens)
			}
			if !strings.Contains(merge.Action, tt.note) {
				t.Errorf("merge action = %q; want it to contain %q", merge.Action, tt.note)
			}
		})
	}
}

func TestPlan_InputErrorPointsAtOption(t *testing.T) {
	data, err := filepath.Abs("../specs/examples/data")
	if err != nil {
		t.Fatal(err)
	}
	spec := `version: 1
name: e
state: state.db
datasets:
  chat: {source: ` + data + `/chat.jsonl, format: messages}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: "input.records - 1000"}}
`
	dir := t.TempDir()
	p, store := enginetest.Open(t, dir, spec)
	// Validation knows no input, so it leaves the expression to the plan.
	if err := p.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	steps := p.Plan(store, nil)
	s := steps[len(steps)-1]
	if s.Err == nil {
		t.Fatalf("plan of %s: %s; want an error", s.Node.ID, s.Action)
	}
	want := `spec.yaml:8:82: cap[chat]: max_samples evaluates to -860; want 0 or more
    |   - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: "input.records - 1000"}}
    |                                                                                  ^`
	if got := strings.ReplaceAll(s.Err.Error(), dir+"/", ""); got != want {
		t.Errorf("error:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(s.Action, "\n") || !strings.HasPrefix(s.Action, "error: ") {
		t.Errorf("action %q; want the error's first line", s.Action)
	}
}
