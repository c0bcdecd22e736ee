package engine_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
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
			for _, s := range p.Plan(store, engine.Selection{}) {
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
			if !strings.Contains(merge.Words(), tt.note) {
				t.Errorf("merge action = %q; want it to contain %q", merge.Words(), tt.note)
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
	steps := p.Plan(store, engine.Selection{})
	s := steps[len(steps)-1]
	if s.Err == nil {
		t.Fatalf("plan of %s: %s; want an error", s.Node.ID, s.Words())
	}
	want := `spec.yaml:8:82: cap[chat]: max_samples evaluates to -860; want 0 or more
    |   - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: "input.records - 1000"}}
    |                                                                                  ^`
	if got := strings.ReplaceAll(s.Err.Error(), dir+"/", ""); got != want {
		t.Errorf("error:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(s.Words(), "\n") || !strings.HasPrefix(s.Words(), "error: ") {
		t.Errorf("action %q; want the error's first line", s.Words())
	}
}

// TestPlan_RaisedCapCountsNewWorkOnce: after a cap is raised, each row
// shows the instance's whole output (what is kept plus what the run adds),
// so a filter that keeps everything matches its generate row, and only the
// generate rows add new tokens.
func TestPlan_RaisedCapCountsNewWorkOnce(t *testing.T) {
	dir := t.TempDir()
	runSpec(t, writeSpec(t, dir, map[string]string{"keep": "true"}))
	before := planByID(t, writeSpec(t, dir, map[string]string{"keep": "true"}))
	after := planByID(t, writeSpec(t, dir, map[string]string{"keep": "true", "cap": "80"}))
	// 30 more records each, priced at the mean of the 50 answers so far:
	// not chat's est_completion_tokens 300 nor, for code, which has no
	// estimate, the sim's mean_tokens 120, guesses made before anything ran.
	mean := func(id string, guesses ...int64) int64 {
		soFar := before[id].Estimate
		if soFar.Records != 50 {
			t.Fatalf("%s holds %d answers; want 50", id, soFar.Records)
		}
		m := (soFar.CompletionTokens + 25) / 50
		for _, g := range guesses {
			if m == g {
				t.Fatalf("%s's answers average the guess %d: the test cannot tell which priced the new records", id, g)
			}
		}
		return m
	}
	newChat, newCode := 30*mean("generate[chat]", 300, 120), 30*mean("generate[code]", 120)
	tests := []struct {
		id                string
		records           int
		completion, added int64
	}{
		{"generate[chat]", 80, before["generate[chat]"].Estimate.CompletionTokens + newChat, newChat},
		{"filter[chat]", 80, before["filter[chat]"].Estimate.CompletionTokens + newChat, 0},
		{"generate[code]", 80, before["generate[code]"].Estimate.CompletionTokens + newCode, newCode},
		{"filter[code]", 80, before["filter[code]"].Estimate.CompletionTokens + newCode, 0},
		{"merge", 160, before["merge"].Estimate.CompletionTokens + newChat + newCode, 0},
	}
	var added int64
	for _, s := range after {
		if s.Runs() {
			added += s.NewTokens
		}
	}
	if added != newChat+newCode {
		t.Errorf("the run adds %d completion tokens; want %d, counted once", added, newChat+newCode)
	}
	for _, tt := range tests {
		s := after[tt.id]
		if !s.Runs() || s.Estimate.Records != tt.records || s.Estimate.CompletionTokens != tt.completion || s.NewTokens != tt.added {
			t.Errorf("%s: run %v, %d records, %d completion tokens, %d new (%s); want run, %d records, %d tokens, %d new",
				tt.id, s.Runs(), s.Estimate.Records, s.Estimate.CompletionTokens, s.NewTokens, s.Words(), tt.records, tt.completion, tt.added)
		}
	}
}

// planByID plans the spec at path against its store.
func planByID(t *testing.T, path string) map[string]*engine.Step {
	t.Helper()
	p, err := engine.Load(path, enginetest.NoEnv)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	store, err := state.Open(p.Spec.State)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	steps := map[string]*engine.Step{}
	for _, s := range p.Plan(store, engine.Selection{}) {
		if s.Err != nil {
			t.Fatalf("plan %s: %v", s.Node.ID, s.Err)
		}
		steps[s.Node.ID] = s
	}
	return steps
}

// budgetSpec generates answers for two datasets under a budget;
// est_completion_tokens of 200 makes chat's 140 records 28,000 tokens and
// code's 110 records 22,000.
const budgetSpec = `version: 1
name: budget
state: state.db
datasets:
  chat: {source: {{data}}/chat.jsonl, format: messages, est_completion_tokens: 200}
  code: {source: {{data}}/code.jsonl, format: sharegpt, est_completion_tokens: 200}
endpoints:
  sim: {api: sim, concurrency: 4, options: {seed: 3, mean_tokens: 200}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {endpoint: sim, max_tokens: 400, budget: {{budget}}}}
`

func writeBudgetSpec(t *testing.T, dir, budget string) string {
	t.Helper()
	data, err := filepath.Abs("../specs/examples/data")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "spec.yaml")
	spec := strings.NewReplacer("{{data}}", data, "{{budget}}", budget).Replace(budgetSpec)
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPlan_BudgetShares: a stage-wide budget is shared by the stage's
// instances, each cut in proportion to its estimate; a per-dataset one cuts
// only the instances that exceed it.
func TestPlan_BudgetShares(t *testing.T) {
	tests := []struct {
		name, budget string
		// completion is each instance's expected completion tokens, and
		// note what its action should end with.
		completion map[string]int64
		note       map[string]string
	}{
		{"per dataset", "{completion_tokens: 25_000}",
			map[string]int64{"generate[chat]": 25_000, "generate[code]": 22_000},
			map[string]string{"generate[chat]": "will run: never ran; 140 of 140 records to do (the budget allows 89% of them)", "generate[code]": "will run: never ran; 110 of 110 records to do"}},
		{"stage", "{completion_tokens: 25_000, scope: stage}",
			map[string]int64{"generate[chat]": 14_000, "generate[code]": 11_000},
			map[string]string{"generate[chat]": "will run: never ran; 140 of 140 records to do (the stage's budget allows 50% of them)", "generate[code]": "will run: never ran; 110 of 110 records to do (the stage's budget allows 50% of them)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps := planByID(t, writeBudgetSpec(t, t.TempDir(), tt.budget))
			for id, want := range tt.completion {
				s := steps[id]
				if got := s.Estimate.CompletionTokens; got < want-1 || got > want {
					t.Errorf("%s: %d completion tokens; want %d", id, got, want)
				}
				if s.NewTokens != s.Estimate.CompletionTokens {
					t.Errorf("%s: %d new tokens; want all %d", id, s.NewTokens, s.Estimate.CompletionTokens)
				}
				if s.Words() != tt.note[id] {
					t.Errorf("%s: action %q; want %q", id, s.Words(), tt.note[id])
				}
			}
		})
	}
}

// TestPlan_SpentBudgetIsUpToDate: records skipped for a budget that is
// spent are no work to do, or the plan would never settle; once the budget
// is raised they are.
func TestPlan_SpentBudgetIsUpToDate(t *testing.T) {
	dir := t.TempDir()
	const budget = "{completion_tokens: 6000}"
	path := writeBudgetSpec(t, dir, budget)
	runSpec(t, path)
	spent := countStatus(t, dir, stages.Done)
	// A second run does nothing more: the budget admits no request.
	runSpec(t, path)
	if got := countStatus(t, dir, stages.Done); got != spent {
		t.Fatalf("a second run took generate[chat] from %d done records to %d; want none more", spent, got)
	}
	spec := mustReadString(t, path)
	tests := []struct {
		name, budget string
		run          bool
		action       string
	}{
		{"spent", budget, false, "up to date (%d records skipped for budget; raise the budget to continue)"},
		{"raised", "{completion_tokens: 9000}", true, "will run: %d of 140 records to do (the budget allows "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			skipped := countStatus(t, dir, stages.Skipped)
			p, store := enginetest.Open(t, dir, strings.Replace(spec, budget, tt.budget, 1))
			for _, s := range p.Plan(store, engine.Selection{}) {
				if s.Node.ID != "generate[chat]" {
					continue
				}
				if want := fmt.Sprintf(tt.action, skipped); s.Runs() != tt.run || !strings.HasPrefix(s.Words(), want) {
					t.Errorf("generate[chat]: run %v, %q; want run %v, %q", s.Runs(), s.Words(), tt.run, want)
				}
			}
		})
	}
}

// countStatus counts generate[chat]'s records of a status in dir's store.
func countStatus(t *testing.T, dir string, status stages.Status) int {
	t.Helper()
	store, err := state.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	return enginetest.Count(t, store, "generate[chat]", status)
}

func mustReadString(t *testing.T, path string) string {
	t.Helper()
	return string(mustRead(t, path))
}

// TestPlan_FinishedRunPricedFromEveryAnswer: a run that finished kept
// every answer, so the records a raised cap adds are priced at the mean of
// all of them, however long each request took; only a run stopped early
// prices from the answers sent early enough that none was lost in flight.
// The simulator answers at 1,000 tokens/s on synctest's clock, so the
// requests take time, the same every run.
func TestPlan_FinishedRunPricedFromEveryAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		slow := func(settings map[string]string) string {
			path := writeSpec(t, dir, settings)
			spec := strings.Replace(mustReadString(t, path), "mean_tokens: 120}", "mean_tokens: 120, speed: 1000}", 1)
			if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
				t.Fatal(err)
			}
			return path
		}
		runSpec(t, slow(nil))
		before := planByID(t, slow(nil))
		after := planByID(t, slow(map[string]string{"cap": "80"}))
		for _, id := range []string{"generate[chat]", "generate[code]"} {
			soFar := before[id].Estimate
			if want := 30 * ((soFar.CompletionTokens + 25) / 50); after[id].NewTokens != want {
				t.Errorf("%s: the 30 new records are priced at %d tokens; want %d, at the mean of the 50 answers (%d tokens)",
					id, after[id].NewTokens, want, soFar.CompletionTokens)
			}
		}
	})
}
