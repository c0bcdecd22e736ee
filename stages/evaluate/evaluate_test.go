package evaluate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/accept"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/stages/evaluate"
	"github.com/eaglet-dev/eaglet/state"

	_ "github.com/eaglet-dev/eaglet/stages/all"
)

// model is the target every server of a test serves: the drafters
// change how fast its answers come, never what they are.
var model = sim.Config{Seed: 11, MeanTokens: 60}

// simServer serves the target with drafter d (none: the baseline) and
// counts the generations it was asked for.
type simServer struct {
	url   string
	asked atomic.Int64
	d     sim.Drafter
	hook  atomic.Pointer[hook]
}

func serve(t *testing.T, d sim.Drafter) *simServer {
	t.Helper()
	s, err := server.New(server.Config{Model: sim.New(model), Drafter: d})
	if err != nil {
		t.Fatal(err)
	}
	ss := &simServer{d: d}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			n := ss.asked.Add(1)
			if h := ss.hook.Load(); h != nil && n >= h.n {
				h.once.Do(h.fn)
			}
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { hs.Close(); s.Close() })
	ss.url = hs.URL
	return ss
}

// drafterDir writes a drafter's files: what identifies it.
func drafterDir(t *testing.T, dir, name string, quality float64) string {
	t.Helper()
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{"architectures": ["LlamaForCausalLMEagle3"], "eaglet_sim": {"draft_quality": %g}}`, quality)
	if err := os.WriteFile(filepath.Join(d, sim.DrafterConfig), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

// questions writes n questions of each dataset.
func questions(t *testing.T, dir string, n int, datasets ...string) {
	t.Helper()
	for _, ds := range datasets {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `{"messages":[{"role":"user","content":"%s question %d: %s"}]}`+"\n", ds, i, strings.Repeat("why ", i%5))
		}
		if err := os.WriteFile(filepath.Join(dir, ds+".jsonl"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type fixture struct {
	dir              string
	v1, v2, base     *simServer
	measure          string
	datasets         []string
	group, maxTokens int
}

func newFixture(t *testing.T, measure string) *fixture {
	dir := t.TempDir()
	f := &fixture{dir: dir, measure: measure, datasets: []string{"chat", "code"}, group: 4, maxTokens: 120,
		v1: serve(t, sim.Drafter{Quality: 0.55, Tokens: 3}), v2: serve(t, sim.Drafter{Quality: 0.85, Tokens: 3}),
		base: serve(t, sim.Drafter{})}
	drafterDir(t, dir, "v1", 0.55)
	drafterDir(t, dir, "v2", 0.85)
	questions(t, dir, 6, f.datasets...)
	return f
}

func (f *fixture) spec() string {
	var ds strings.Builder
	for _, d := range f.datasets {
		fmt.Fprintf(&ds, "  %s: {source: %s.jsonl, format: messages}\n", d, d)
	}
	return fmt.Sprintf(`version: 1
name: eval
state: state.db
datasets:
%sendpoints:
  spec-v1: {api: openai, urls: ["%s/v1"], model: sim, concurrency: 8}
  spec-v2: {api: openai, urls: ["%s/v1"], model: sim, concurrency: 8}
  target: {api: openai, urls: ["%s/v1"], model: sim, concurrency: 8}
stages:
  - {name: load, uses: load, foreach: datasets}
  - name: evaluate
    uses: evaluate
    needs: [load]
    with:
      drafters:
        - {name: v1, endpoint: spec-v1, files: v1}
        - {name: v2, endpoint: spec-v2, files: v2}
      baseline: target
      max_tokens: %d
      measure: %s
      group: %d
      out: evaluation.json
`, ds.String(), f.v1.url, f.v2.url, f.base.url, f.maxTokens, f.measure, f.group)
}

func (f *fixture) asked() [3]int64 {
	return [3]int64{f.v1.asked.Load(), f.v2.asked.Load(), f.base.asked.Load()}
}

// run runs the spec and returns the stage's rows by drafter name.
func (f *fixture) run(t *testing.T) map[string][]accept.Row {
	t.Helper()
	_, store, results := enginetest.OpenAndRun(t, f.dir, f.spec())
	if r := results["evaluate"]; r == nil || r.Err != nil {
		t.Fatalf("evaluate: %+v", r)
	}
	return rowsOf(t, store)
}

func rowsOf(t *testing.T, store *state.Store) map[string][]accept.Row {
	t.Helper()
	rows, err := store.Evaluations().Rows("evaluate")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]accept.Row{}
	for _, r := range rows {
		out[r.Name] = append(out[r.Name], r)
	}
	return out
}

// want is what the sim-server decodes for the prompt of question i of
// dataset ds with drafter d.
func want(ds string, i, maxTokens int, d sim.Drafter) (sim.Speculation, int) {
	m := sim.New(model)
	p := sim.Prompt{Messages: []conv.Message{{Role: conv.User, Content: fmt.Sprintf("%s question %d: %s", ds, i, strings.Repeat("why ", i%5))}}}
	a := m.Answer(p, sim.Options{MaxTokens: maxTokens})
	return m.Speculate(d, p, a, 0), a.CompletionTokens()
}

// TestEvaluate_PerRequest: each row holds what the server reported of its
// request (SGLang's meta_info), the report's breakdowns add up to its
// totals, the better drafter wins on the same prompts, and a rerun with
// nothing changed sends no request.
func TestEvaluate_PerRequest(t *testing.T) {
	f := newFixture(t, "requests")
	rows := f.run(t)
	for name, srv := range map[string]*simServer{"v1": f.v1, "v2": f.v2} {
		if len(rows[name]) != 12 {
			t.Fatalf("%s: %d rows; want 12 (6 prompts of 2 datasets)", name, len(rows[name]))
		}
		byPrompt := map[string]accept.Row{}
		for _, r := range rows[name] {
			byPrompt[r.Dataset+"/"+r.Prompt] = r
		}
		for _, r := range rows[name] {
			if r.Requests != 1 || !r.Counted || r.Drafter == "" || r.Turn != 1 || r.Sampling != "temperature=0" {
				t.Fatalf("%s: row %+v", name, r)
			}
		}
		// Match rows to prompts by their measurement: each prompt's
		// speculation is the server's, exactly.
		matched := 0
		for _, ds := range f.datasets {
			for i := range 6 {
				sp, tokens := want(ds, i, f.maxTokens, srv.d)
				for _, r := range rows[name] {
					if r.Dataset == ds && r.Verify == sp.Verify && r.Accepted == sp.Accepted && r.Drafted == sp.Drafted && r.CompletionTokens == tokens {
						matched++
						break
					}
				}
			}
		}
		if matched != 12 {
			t.Errorf("%s: %d of 12 rows hold what the server decoded for a prompt", name, matched)
		}
	}
	for _, r := range rows["baseline"] {
		if r.Verify != 0 || r.Drafter != "" || r.CompletionTokens == 0 {
			t.Fatalf("baseline row %+v; want tokens and no verify step", r)
		}
	}
	rep := readReport(t, f.dir)
	for _, s := range rep.Sides {
		for _, b := range [][]evaluate.Line{s.ByDataset, s.ByTurn, s.ByContext} {
			var sum evaluate.Figures
			for _, l := range b {
				sum.CompletionTokens += l.CompletionTokens
				sum.Verify += l.Verify
				sum.Requests += l.Requests
			}
			if sum.CompletionTokens != s.Total.CompletionTokens || sum.Verify != s.Total.Verify || sum.Requests != s.Total.Requests {
				t.Errorf("%s: breakdown %+v does not add up to the total %+v", s.Name, b, s.Total)
			}
		}
	}
	gain := comparison(t, rep, "acceptance_length_gain", "v2")
	if gain.Pairs != 12 || gain.Low <= 0 {
		t.Errorf("v2 against v1: %+v; want a gain whose interval is above 0 on 12 pairs", gain)
	}
	for _, name := range []string{"v1", "v2"} {
		if c := comparison(t, rep, "speed_up", name); c.Pairs != 12 {
			t.Errorf("%s over the baseline: %+v; want 12 pairs", name, c)
		}
	}

	before := f.asked()
	f.run(t)
	if got := f.asked(); got != before {
		t.Errorf("a rerun with nothing changed asked the servers %v more times", [3]int64{got[0] - before[0], got[1] - before[1], got[2] - before[2]})
	}
}

// TestEvaluate_RetrainedDrafter: a drafter whose files changed is measured
// anew; the others' rows are found in the results table.
func TestEvaluate_RetrainedDrafter(t *testing.T) {
	f := newFixture(t, "requests")
	first := f.run(t)
	before := f.asked()
	drafterDir(t, f.dir, "v2", 0.9) // retrained: other files
	second := f.run(t)
	got := f.asked()
	if got[0] != before[0] || got[2] != before[2] || got[1]-before[1] != 12 {
		t.Errorf("after v2 was retrained the servers were asked %v more times; want [0 12 0]", [3]int64{got[0] - before[0], got[1] - before[1], got[2] - before[2]})
	}
	if first["v2"][0].Drafter == second["v2"][0].Drafter {
		t.Error("v2's identity did not change with its files")
	}
}

// TestEvaluate_Groups: from vLLM's counters, each group's figure is the
// sum over its requests of what the server decoded, and groups keep to
// one dataset, so the figures by dataset are exact.
func TestEvaluate_Groups(t *testing.T) {
	f := newFixture(t, "auto") // auto: the openai endpoints export vllm:spec_decode counters
	rows := f.run(t)
	for name, srv := range map[string]*simServer{"v1": f.v1, "v2": f.v2} {
		verify, accepted := map[string]int{}, map[string]int{}
		requests := 0
		for _, r := range rows[name] {
			if !strings.HasPrefix(r.Prompt, "group ") || r.Requests > f.group {
				t.Fatalf("%s: row %+v is not a group of up to %d", name, r, f.group)
			}
			verify[r.Dataset] += r.Verify
			accepted[r.Dataset] += r.Accepted
			requests += r.Requests
		}
		if requests != 12 || len(rows[name]) != 4 {
			t.Fatalf("%s: %d rows of %d requests; want groups of 4 and 2 in each of 2 datasets", name, len(rows[name]), requests)
		}
		for _, ds := range f.datasets {
			wv, wa := 0, 0
			for i := range 6 {
				sp, _ := want(ds, i, f.maxTokens, srv.d)
				wv, wa = wv+sp.Verify, wa+sp.Accepted
			}
			if verify[ds] != wv || accepted[ds] != wa {
				t.Errorf("%s %s: groups sum to %d verify steps, %d accepted; the server decoded %d, %d", name, ds, verify[ds], accepted[ds], wv, wa)
			}
		}
	}
	rep := readReport(t, f.dir)
	if c := comparison(t, rep, "acceptance_length_gain", "v2"); c.Pairs != 4 {
		t.Errorf("v2 against v1 paired %d groups; want 4 (the same groups on both sides)", c.Pairs)
	}
	before := f.asked()
	f.run(t)
	if got := f.asked(); got != before {
		t.Errorf("a rerun asked the servers again: %v then %v", before, got)
	}
}

func readReport(t *testing.T, dir string) evaluate.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "evaluation.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep evaluate.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func comparison(t *testing.T, rep evaluate.Report, figure, b string) evaluate.Comparison {
	t.Helper()
	for _, c := range rep.Comparisons {
		if c.Figure == figure && c.B == b {
			return c
		}
	}
	t.Fatalf("no %s of %s in %+v", figure, b, rep.Comparisons)
	return evaluate.Comparison{}
}

// TestEvaluate_PlanSendsNothing: plan prices the evaluation and calls no
// server, before a run and after one.
func TestEvaluate_PlanSendsNothing(t *testing.T) {
	f := newFixture(t, "auto")
	p, store := enginetest.Open(t, f.dir, f.spec())
	for _, s := range p.Plan(store, engine.Selection{}) {
		if s.Err != nil {
			t.Fatalf("%s: %v", s.Node.ID, s.Err)
		}
		if s.Node.ID == "evaluate" && (s.Todo != 12 || !strings.Contains(strings.Join(s.Notes, " "), "up to 36 requests")) {
			t.Errorf("plan of evaluate: %q; want its price (12 prompts, 3 sides)", s.Notes)
		}
	}
	if got := f.asked(); got != [3]int64{} {
		t.Errorf("plan asked the servers %v times", got)
	}
}

// TestEvaluate_ClosesTheLoop: the latest evaluation's acceptance is there
// for the next data version's expressions, by dataset too, and plan shows
// what it would do with it; before any evaluation it is unmeasured.
func TestEvaluate_ClosesTheLoop(t *testing.T) {
	f := newFixture(t, "requests")
	// Twice the prompts where the drafter accepts less than v2 does over all.
	capped := f.spec() + `  - name: more
    uses: cap
    needs: [load]
    foreach: datasets
    with:
      max_samples: "!acceptance.measured ? 1 : (acceptance.dataset[dataset.name] ?? 9) < acceptance.length ? 6 : 3"
`
	p, store := enginetest.Open(t, f.dir, capped)
	records := func() map[string]int {
		out := map[string]int{}
		for _, s := range p.Plan(store, engine.Selection{Nodes: enginetest.Stage(t, p, "more", "")}) {
			if strings.HasPrefix(s.Node.ID, "more[") {
				out[s.Node.ID] = s.Estimate.Records
			}
		}
		return out
	}
	if got := records(); got["more[chat]"] != 1 || got["more[code]"] != 1 {
		t.Fatalf("before an evaluation: %v; want 1 record each", got)
	}
	enginetest.Run(t, p, store, enginetest.Stage(t, p, "evaluate", ""))
	rep := readReport(t, f.dir)
	var v2 evaluate.Side
	for _, s := range rep.Sides {
		if s.Name == "v2" {
			v2 = s
		}
	}
	want := map[string]int{}
	for _, l := range v2.ByDataset {
		want["more["+l.Label+"]"] = 3
		if l.AcceptLength < v2.Total.AcceptLength {
			want["more["+l.Label+"]"] = 6
		}
	}
	if got := records(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the evaluation (v2 by dataset %+v): plan caps %v; want %v", v2.ByDataset, got, want)
	}
}

// TestEvaluate_Interrupted: a run stopped midway keeps what it measured;
// the next run asks only for the rest.
func TestEvaluate_Interrupted(t *testing.T) {
	f := newFixture(t, "requests")
	p, store := enginetest.Open(t, f.dir, f.spec())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := f.v1.stopAfter(5, cancel)
	defer stop()
	if _, err := p.Run(ctx, store, engine.RunOptions{Log: io.Discard}); err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	kept, err := store.Evaluations().Rows("evaluate")
	if err != nil {
		t.Fatal(err)
	}
	// Rows of a run stopped early are the stage's, not yet claimed.
	all := 0
	for _, s := range []string{"evaluate", ""} {
		rows, _ := store.Evaluations().Rows(s)
		all += len(rows)
	}
	if all == 0 || all >= 36 {
		t.Fatalf("the stopped run kept %d rows (%d the stage's); want some of 36", all, len(kept))
	}
	// A request the stopped run had on its way may still arrive.
	before := f.asked()
	for quiet := time.Now(); time.Since(quiet) < 200*time.Millisecond; time.Sleep(10 * time.Millisecond) {
		if now := f.asked(); now != before {
			before, quiet = now, time.Now()
		}
	}
	enginetest.Run(t, p, store, nil)
	got := f.asked()
	sent := got[0] + got[1] + got[2] - before[0] - before[1] - before[2]
	if sent != int64(36-all) {
		t.Errorf("the rerun sent %d requests; %d of 36 were kept, so want %d", sent, all, 36-all)
	}
}

// stopAfter calls stop once the server has been asked n times.
func (s *simServer) stopAfter(n int64, stop func()) func() {
	s.hook.Store(&hook{n: n, fn: stop})
	return func() { s.hook.Store(nil) }
}

type hook struct {
	n    int64
	fn   func()
	once sync.Once
}

// TestEvaluate_TurnsAll: with turns: all, each assistant turn of a
// conversation is a prompt from its exact prefix, measured as its turn.
func TestEvaluate_TurnsAll(t *testing.T) {
	f := newFixture(t, "requests")
	f.datasets = []string{"agent"}
	var b strings.Builder
	for i := range 4 {
		fmt.Fprintf(&b, `{"messages":[{"role":"user","content":"task %d"},{"role":"assistant","content":"step one of %d"},`+
			`{"role":"user","content":"go on"},{"role":"assistant","content":"done"}]}`+"\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "agent.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := strings.Replace(f.spec(), "      measure: requests\n", "      measure: requests\n      turns: all\n", 1)
	_, store, results := enginetest.OpenAndRun(t, f.dir, spec)
	if r := results["evaluate"]; r.Err != nil {
		t.Fatal(r.Err)
	}
	turns := map[int]int{}
	for _, r := range rowsOf(t, store)["v1"] {
		turns[r.Turn]++
	}
	if turns[1] != 4 || turns[2] != 4 || len(turns) != 2 {
		t.Errorf("v1's rows by turn: %v; want 4 of turn 1 and 4 of turn 2", turns)
	}
	if got := f.v1.asked.Load(); got != 8 {
		t.Errorf("v1's server was asked %d times; want 8 (2 turns of 4 conversations)", got)
	}
}

// TestEvaluate_AutoAfterRequests: rows stored per request for some of the
// prompts do not mix into an evaluation that auto then reads per group
// (the servers export vLLM's counters): it holds each prompt once.
func TestEvaluate_AutoAfterRequests(t *testing.T) {
	f := newFixture(t, "requests")
	f.datasets = []string{"chat"}
	f.run(t) // half the prompts stored per request
	f.datasets, f.measure = []string{"chat", "code"}, "auto"
	rows := f.run(t)
	for _, name := range []string{"v1", "v2"} {
		requests := 0
		for _, r := range rows[name] {
			if !strings.HasPrefix(r.Prompt, "group ") {
				t.Fatalf("%s: row %+v measured per request in an evaluation read per group", name, r)
			}
			requests += r.Requests
		}
		if requests != 12 {
			t.Errorf("%s: rows of %d requests; want each of the 12 prompts once", name, requests)
		}
	}
	rep := readReport(t, f.dir)
	for _, s := range rep.Sides {
		if s.Total.Requests != 12 {
			t.Errorf("%s: the report counts %d requests; want 12", s.Name, s.Total.Requests)
		}
	}
}

// TestEvaluate_SGLangGenerate: over SGLang's native /generate (token ids
// from the tokenize stage) each row is one request's meta_info, and the
// rows of a drafter sum to what its server counted over all of them.
func TestEvaluate_SGLangGenerate(t *testing.T) {
	f := newFixture(t, "auto")
	qwen3, err := filepath.Abs("../../internal/tokenizer/testdata/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	spec := f.spec()
	spec = strings.ReplaceAll(spec, "{api: openai, urls: [\""+f.v1.url+"/v1\"]", "{api: sglang, urls: [\""+f.v1.url+"\"]")
	spec = strings.ReplaceAll(spec, "{api: openai, urls: [\""+f.v2.url+"/v1\"]", "{api: sglang, urls: [\""+f.v2.url+"\"]")
	spec = strings.ReplaceAll(spec, "{api: openai, urls: [\""+f.base.url+"/v1\"]", "{api: sglang, urls: [\""+f.base.url+"\"]")
	spec = strings.Replace(spec, "    needs: [load]\n    with:\n      drafters:",
		"    needs: [tok]\n    with:\n      drafters:", 1)
	spec = strings.Replace(spec, "  - name: evaluate\n",
		"  - {name: tok, uses: tokenize, needs: [load], foreach: datasets, with: {tokenizer: "+qwen3+"}}\n  - name: evaluate\n", 1)
	if strings.Count(spec, "api: sglang") != 3 || !strings.Contains(spec, "needs: [tok]") {
		t.Fatalf("the spec is not over /generate:\n%s", spec)
	}
	_, store, results := enginetest.OpenAndRun(t, f.dir, spec)
	if r := results["evaluate"]; r == nil || r.Err != nil {
		t.Fatalf("evaluate: %+v", r)
	}
	rows := rowsOf(t, store)
	for name, srv := range map[string]*simServer{"v1": f.v1, "v2": f.v2} {
		var sum accept.Counters
		for _, r := range rows[name] {
			if r.Requests != 1 || !r.Counted || r.Verify == 0 || r.ContextTokens == 0 {
				t.Fatalf("%s: row %+v; want one request's figures", name, r)
			}
			sum.Drafts += r.Verify
			sum.Accepted += r.Accepted
			sum.DraftTokens += r.Drafted
		}
		got, err := accept.Scrape(t.Context(), http.DefaultClient, srv.url+"/metrics", "")
		if err != nil {
			t.Fatal(err)
		}
		if len(rows[name]) != 12 || got.Drafts != sum.Drafts || got.Accepted != sum.Accepted || got.DraftTokens != sum.DraftTokens {
			t.Errorf("%s: %d rows summing to %+v; the server counted %+v", name, len(rows[name]), sum, got)
		}
	}
}

// TestEvaluate_OneSideDown: a drafter whose server answers nothing fails
// the stage, naming it, while the other sides are measured and kept; once
// it answers, the next run asks only for its prompts.
func TestEvaluate_OneSideDown(t *testing.T) {
	f := newFixture(t, "requests")
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer down.Close()
	good := f.v1.url
	f.v1.url = down.URL
	p, store := enginetest.Open(t, f.dir, f.spec())
	results, _ := p.Run(context.Background(), store, engine.RunOptions{Log: io.Discard})
	var failed error
	for _, r := range results {
		if r.Node.ID == "evaluate" {
			failed = r.Err
		}
	}
	if failed == nil || !strings.Contains(failed.Error(), "v1 at temperature=0") {
		t.Fatalf("evaluate with v1's server down: %v; want a failure naming v1", failed)
	}
	kept, err := store.Evaluations().Rows("evaluate")
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 24 {
		t.Errorf("%d rows kept; want the baseline's and v2's 24", len(kept))
	}
	f.v1.url = good
	before := f.asked()
	f.run(t)
	got := f.asked()
	if got[0]-before[0] != 12 || got[1] != before[1] || got[2] != before[2] {
		t.Errorf("the rerun asked %v more; want only v1's 12", [3]int64{got[0] - before[0], got[1] - before[1], got[2] - before[2]})
	}
}
