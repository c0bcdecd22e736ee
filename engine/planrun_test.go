package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
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
	"github.com/eaglet-dev/eaglet/state"
)

// planRunSeeds and planRunEdits size the model-based test: seeds edit
// sequences of edits each (README: "plan = run").
const planRunSeeds, planRunEdits = 12, 8

// planRunSpec is edited between runs the way researchers edit specs.
const planRunSpec = `version: 1
name: planrun
state: state.db
datasets:
  chat: {source: {{chat}}, format: messages, est_completion_tokens: 80}
{{datasets}}endpoints:
  target: {api: openai, urls: ["{{url}}/v1"], model: sim, concurrency: 8}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: {{cap}}, seed: 5}}
  - name: generate
    uses: generate
    needs: [cap]
    foreach: datasets
    with: {endpoint: target, max_tokens: 256, retries: 0, timeout: 1s, temperature: {{temp}}}
  - {name: filter, uses: filter, needs: [generate], foreach: datasets, with: {keep: "{{keep}}"}}
  - {name: merge, uses: merge, needs: [filter], with: {out: train.jsonl, shuffle_seed: 7}}
`

// world is the state of the edits: the spec's settings, the files on
// disk and the server.
type world struct {
	cap, temp, keep     string
	chatFile            string
	copy, code, fromSub bool
	down                bool
	chatLines           []string
}

func (w *world) spec(dir, data, url string) string {
	var ds strings.Builder
	if w.copy {
		// The same prompts again under another name: answered by reuse.
		ds.WriteString("  copy: {source: copy.jsonl, format: messages, est_completion_tokens: 80}\n")
	}
	if w.code {
		ds.WriteString("  code: {source: " + data + "/code.jsonl, format: sharegpt, est_completion_tokens: 80}\n")
	}
	return strings.NewReplacer("{{chat}}", w.chatFile, "{{datasets}}", ds.String(), "{{url}}", url,
		"{{cap}}", w.cap, "{{temp}}", w.temp, "{{keep}}", w.keep).Replace(planRunSpec)
}

// edit changes one thing at random and says what.
func (w *world) edit(r *rand.Rand, dir string) string {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	w.down = false
	switch r.IntN(9) {
	case 0:
		w.cap = pick("20", "40", "60", "80")
		return "cap " + w.cap
	case 1:
		w.temp = pick("0.5", "0.7", "0.9")
		return "temperature " + w.temp
	case 2:
		w.keep = pick("completion_tokens >= 16", "completion_tokens >= 60", "true")
		return "keep " + w.keep
	case 3:
		w.copy = !w.copy
		return fmt.Sprintf("copy dataset %v", w.copy)
	case 4:
		w.code = !w.code
		return fmt.Sprintf("code dataset %v", w.code)
	case 5:
		w.chatFile = pick("chat.jsonl", "renamed.jsonl", "sub/moved.jsonl")
		return "chat source " + w.chatFile
	case 6:
		r.Shuffle(len(w.chatLines), func(i, j int) { w.chatLines[i], w.chatLines[j] = w.chatLines[j], w.chatLines[i] })
		return "reorder chat lines"
	case 7:
		w.fromSub = !w.fromSub
		return fmt.Sprintf("run from a subdirectory %v", w.fromSub)
	}
	w.down = true
	return "server down"
}

// write puts the spec and the data files on disk.
func (w *world) write(t *testing.T, dir, data, url string) string {
	t.Helper()
	body := strings.Join(w.chatLines, "")
	for _, f := range []string{w.chatFile, "copy.jsonl"} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(w.spec(dir, data, url)), 0o644); err != nil {
		t.Fatal(err)
	}
	if w.fromSub {
		t.Chdir(filepath.Join(dir, "sub"))
		return "../spec.yaml"
	}
	t.Chdir(dir)
	return "spec.yaml"
}

// TestPlanEqualsRun edits a spec at random between runs (caps up and down,
// temperatures, filters, datasets added and removed, copies of a dataset,
// renamed, moved and reordered sources, the working directory, a server
// outage) and checks after each edit that plan said what the run then did:
// which instances run, how many requests reach the server (or, while it is
// down, how many records are tried), and how many records each instance
// ends with wherever plan counts rather than guesses. Only what follows new
// answers is left to estimates, since no plan can know answers unasked.
func TestPlanEqualsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("model-based: several runs per seed")
	}
	data, err := filepath.Abs("../specs/examples/data")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(data, "chat.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for seed := range planRunSeeds {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 60})})
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
			r := rand.New(rand.NewPCG(uint64(seed), 99))
			w := &world{cap: "40", temp: "0.7", keep: "completion_tokens >= 16", chatFile: "chat.jsonl",
				chatLines: strings.SplitAfter(strings.TrimSpace(string(src)), "\n")}
			w.chatLines[len(w.chatLines)-1] += "\n"
			var history []string
			for step := 0; step <= planRunEdits; step++ {
				what := "first run"
				if step > 0 {
					what = w.edit(r, dir)
				}
				history = append(history, what)
				path := w.write(t, dir, data, srv.URL)
				srv.Down.Store(w.down)
				checkPlanIsRun(t, path, srv, w.down, strings.Join(history, " / "))
			}
		})
	}
}

// checkPlanIsRun plans the spec at path, runs it, and checks the run did
// what plan said; it returns the requests and the reused answers plan
// counted for generate.
// cutBySharedBudget reports whether plan gives s fewer requests than it
// has records to do, under a budget its stage's instances share.
func cutBySharedBudget(s *engine.Step) bool {
	b, ok := s.Node.Stage.Options.(stages.Budgeted)
	if !ok || b.BudgetLimits() == nil || !b.BudgetLimits().Shared {
		return false
	}
	d := s.Decision
	if d.Then != nil {
		d = *d.Then
	}
	return d.Work != nil && s.Todo < d.Work.Todo
}

func checkPlanIsRun(t *testing.T, path string, srv *simtest.Counting, down bool, history string) (planned, planReused int) {
	t.Helper()
	p, err := engine.Load(path, enginetest.NoEnv)
	if err != nil {
		t.Fatalf("%s: load: %v", history, err)
	}
	store, err := state.Open(p.Spec.State)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	steps := map[*engine.Node]*engine.Step{}
	for _, s := range p.Plan(store, engine.Selection{}) {
		if s.Err != nil {
			t.Fatalf("%s: plan %s: %v", history, s.Node.ID, s.Err)
		}
		steps[s.Node] = s
	}
	// What follows new answers depends on them: plan can only guess it.
	guessed := map[*engine.Node]bool{}
	for _, n := range p.Nodes {
		for _, up := range n.Needs {
			if guessed[up] || (steps[up].Runs() && steps[up].Node.Stage.Kind.Name == "generate") {
				guessed[n] = true
			}
		}
	}
	results, _ := p.Run(context.Background(), store, engine.RunOptions{Log: &bytes.Buffer{}})
	requests, tried, reused := srv.Take(), 0, 0
	for _, res := range results {
		n, s := res.Node, steps[res.Node]
		if n.Stage.Kind.Name == "generate" {
			// Which of two datasets asking for one content sends the
			// request is a race; that it is sent once is not.
			planned += s.Todo
			tried += res.Processed - res.Reused
			reused += res.Reused
			planReused += s.Reused + s.Shared
		}
		if guessed[n] {
			continue
		}
		// Under one budget for every dataset, which instance sends the
		// budget's last requests is a race; how many are sent is not
		// (below). One that plan gives part of its records may find the
		// budget spent by a sibling and have nothing to do.
		if ran := res.Outcome != engine.UpToDate; ran != s.Runs() && (ran || !cutBySharedBudget(s)) {
			t.Errorf("%s: %s: plan said %q, the run %s (%v)", history, n.ID, s.Words(), res.Outcome, res.Err)
		}
		if !s.Estimate.Exact || res.Outcome == engine.Blocked {
			continue
		}
		if got, _ := store.CountOutputs([]string{n.ID}); got != s.Estimate.Records {
			t.Errorf("%s: %s ends with %d records; plan said %d (%s)", history, n.ID, got, s.Estimate.Records, s.Words())
		}
	}
	if !down && reused != planReused {
		t.Errorf("%s: the run reused %d answers; plan said %d", history, reused, planReused)
	}
	if !down && requests != planned {
		t.Errorf("%s: the server received %d requests; plan said %d", history, requests, planned)
	}
	if down && tried != planned {
		t.Errorf("%s: the run tried %d records with the server down; plan said %d", history, tried, planned)
	}
	return planned, planReused
}
