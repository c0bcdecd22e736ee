package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/state"
)

// TestBuild_PlanVersusActual: a plan recorded between two runs is
// compared with the answers of the second only, says its age, and says
// the spec changed when the report's spec is not the plan's.
func TestBuild_PlanVersusActual(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	second := t0.Add(time.Hour)
	st, in := synthStore(t, synthRun{n: 200, start: t0, gap: 50 * time.Millisecond},
		synthRun{n: 100, start: second, gap: 100 * time.Millisecond})
	body, _ := json.Marshal(RecordedPlan{Steps: []PlanStep{
		{Instance: "load[a]", Records: 300, Exact: true},
		{Instance: "generate[a]", Run: true, Records: 300, Todo: 100, CompletionTokens: 60_000, Seconds: 12, Dollars: 0.25},
		{Instance: "generate[b]", Run: true, Records: 300, Todo: 100, CompletionTokens: 60_000, Seconds: 20, Dollars: 0.25}}})
	made := second.Add(-time.Minute)
	if err := st.SavePlan(context.Background(), state.Plan{Made: made, SpecFP: "v1", Body: body}, time.Second); err != nil {
		t.Fatal(err)
	}
	in.SpecFP = "v1"
	p, err := Build(context.Background(), st, in)
	if err != nil {
		t.Fatal(err)
	}
	pt := p.Plan
	if pt == nil || pt.Changed || !strings.Contains(pt.Title, made.Format("2006-01-02 15:04:05")) || !strings.Contains(pt.Title, "made for the spec as it is") {
		t.Fatalf("plan table %+v", pt)
	}
	if len(pt.Rows) != 3 || pt.Rows[2].Instance != "all" {
		t.Fatalf("rows %+v; want both generate instances and all", pt.Rows)
	}
	sp, err := st.AnswersSince(context.Background(), []string{"generate[a]"}, made.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	want := []PlanCell{{"~300", "300"}, {"100", "100"}, {"60000", count(sp.CompletionTokens)}, {"12s", "12s"},
		{"$0.25", fmt.Sprintf("$%.2f", priced(&Price{Input: 0.6, Output: 2.5}, sp.PromptTokens, sp.CompletionTokens))}}
	if !reflect.DeepEqual(pt.Rows[0].Cells, want) {
		t.Errorf("generate[a]: %+v\nwant %+v (the second run: 100 answers sent 100 ms apart, each taking 2 s: 11.9 s)", pt.Rows[0].Cells, want)
	}
	if c := pt.Rows[2].Cells; c[1] != (PlanCell{"200", "200"}) || c[3].Plan != "20s" {
		t.Errorf("all: %+v; want 200 requests each way and the longest instance's time", c)
	}

	in.SpecFP = "v2"
	if p, err = Build(context.Background(), st, in); err != nil {
		t.Fatal(err)
	}
	if !p.Plan.Changed || !strings.Contains(p.Plan.Title, "it has changed since") {
		t.Errorf("the spec changed, the title says %q", p.Plan.Title)
	}
	var buf bytes.Buffer
	if err := p.Render(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `id="plan-vs-actual" data-changed="true"`) || !strings.Contains(buf.String(), `<tr data-instance="generate[b]">`) {
		t.Error("the page has no plan versus actual table marked changed")
	}
}

// TestBuild_BudgetBurnDown: each budget limit is shown as spent of its
// own limit, a stage-wide one once over all its instances, and drawn over
// time as a share of the limit against the limit itself.
func TestBuild_BudgetBurnDown(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	st, in := synthStore(t, synthRun{n: 200, start: t0, gap: 50 * time.Millisecond},
		synthRun{n: 100, start: t0.Add(time.Hour), gap: 100 * time.Millisecond})
	var inputs []int
	for i := range in.Instances {
		switch in.Instances[i].ID {
		case "generate[a]":
			// A limit on the input, as `samples: input.records + 100` would be.
			in.Instances[i].Budget = &Budget{Limits: func(x specs.InputInfo) (map[string]float64, error) {
				inputs = append(inputs, x.Records)
				return map[string]float64{"samples": float64(x.Records + 100)}, nil
			}}
		case "generate[b]":
			in.Instances[i].Budget = &Budget{Limits: func(specs.InputInfo) (map[string]float64, error) {
				return map[string]float64{"dollars": 10}, nil
			}}
		}
	}
	p, err := Build(context.Background(), st, in)
	if err != nil {
		t.Fatal(err)
	}
	facts := map[string]string{}
	for _, f := range p.Summary {
		facts[f.Label] = f.Value
	}
	if got := facts["budget generate[a] samples"]; got != "300 of 400 (75%)" || !reflect.DeepEqual(inputs, []int{300}) {
		t.Errorf("samples budget: %q, evaluated on inputs %v; want 300 of 400 (75%%) on 300", got, inputs)
	}
	if got := facts["budget generate[b] dollars"]; !strings.HasSuffix(got, "of $10.00 ("+fmt.Sprint(int(0.5+100*dollarsOf(t, st, "generate[b]")/10))+"%)") {
		t.Errorf("dollars budget: %q", got)
	}
	var burn Chart
	for _, c := range p.Timeline {
		if c.ID == "budget" {
			burn = c
		}
	}
	if !strings.Contains(string(burn.SVG), `data-series="3"`) || !strings.Contains(string(burn.SVG), "generate[a] samples (400)") {
		t.Errorf("budget chart: %s", burn.SVG)
	}
	// Spent before the window (the first run's 200) starts the line at
	// 50%; it ends at what the budget has spent, 300 of 400.
	outcomes, err := readOutcomes(context.Background(), st, in.Instances)
	if err != nil {
		t.Fatal(err)
	}
	limits, _ := budgetLimits([]Instance{in.Instances[1]}, outcomes)
	tl, err := binTimeline(context.Background(), st, []string{"generate[a]"}, map[string]string{"generate[a]": "target"},
		t0.Add(time.Hour).UnixMilli(), t0.Add(time.Hour+time.Minute).UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	if ss := budgetSeries(limits, tl, outcomes); len(ss) != 1 || ss[0].Points[0] < 50 || ss[0].Points[0] > 51 || ss[0].Points[len(ss[0].Points)-1] != 75 {
		t.Errorf("samples spent over time: %+v; want from 50%% (and the first bin's) to 75%%", ss)
	}

	for i := range in.Instances {
		if in.Instances[i].Budget != nil {
			in.Instances[i].Budget = &Budget{Shared: true, Limits: func(specs.InputInfo) (map[string]float64, error) {
				return map[string]float64{"completion_tokens": 1e9}, nil
			}}
		}
	}
	if p, err = Build(context.Background(), st, in); err != nil {
		t.Fatal(err)
	}
	var shared []string
	for _, f := range p.Summary {
		if strings.HasPrefix(f.Label, "budget ") {
			shared = append(shared, f.Label)
		}
	}
	if !reflect.DeepEqual(shared, []string{"budget generate (all datasets) completion_tokens"}) {
		t.Errorf("a stage-wide budget shows as %q; want it once", shared)
	}
}

func dollarsOf(t *testing.T, st *state.Store, id string) float64 {
	t.Helper()
	c, err := st.AnswerCounts(context.Background(), id)
	if err != nil || len(c) == 0 {
		t.Fatal(err)
	}
	return priced(&Price{Input: 0.6, Output: 2.5}, c[0].PromptTokens, c[0].CompletionTokens)
}

// TestTokensOf keeps the ids at the boundary of prompt and answer, where
// the loss mask turns on, within maxIDs.
func TestTokensOf(t *testing.T) {
	ids := func(n, from int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = from + i
		}
		return out
	}
	for _, tt := range []struct {
		prompt, answer                   int
		keptPrompt, earlier, kept, later int
	}{
		{10, 20, 10, 0, 20, 0},
		{1000, 1000, 128, 872, 128, 872},
		{1000, 10, 246, 754, 10, 0},
		{20, 1000, 20, 0, 236, 764},
	} {
		v := tokensOf(ids(tt.prompt, 0), &conv.Generation{OutputIDs: ids(tt.answer, 100_000), CompletionTokens: tt.answer})
		if len(v.Prompt) != tt.keptPrompt || v.Earlier != tt.earlier || len(v.Answer) != tt.kept || v.Later != tt.later || v.Supervised != tt.answer {
			t.Errorf("%d prompt, %d answer ids: kept %d (+%d earlier) and %d (+%d later), %d supervised",
				tt.prompt, tt.answer, len(v.Prompt), v.Earlier, len(v.Answer), v.Later, v.Supervised)
		}
		if v.Prompt[len(v.Prompt)-1] != tt.prompt-1 || v.Answer[0] != 100_000 {
			t.Errorf("%d prompt, %d answer ids: the boundary is not kept: ...%d | %d...", tt.prompt, tt.answer, v.Prompt[len(v.Prompt)-1], v.Answer[0])
		}
	}
	if v := tokensOf(ids(10, 0), &conv.Generation{CompletionTokens: 42}); v.Answer != nil || v.Supervised != 42 {
		t.Errorf("no ids from the server: %+v; want none and 42 supervised", v)
	}
	if v := tokensOf(nil, &conv.Generation{OutputIDs: ids(5, 0)}); v != nil {
		t.Errorf("no tokenizer stage: %+v; want no ids", v)
	}
	if v := tokensOf(ids(10, 0), &conv.Generation{OutputIDs: ids(5, 0), Turns: []conv.Turn{{Message: 1}}}); v != nil {
		t.Errorf("a record answered turn by turn: %+v; want no ids (its prompt ids are not its last answer's context)", v)
	}
}
