// Package report builds eaglet's HTML report of a run from its state
// store: length histograms, outcomes, throughput over time, budget burn,
// drafters' acceptance and a sample of the records to browse, as one
// self-contained page (inline SVG, a little inline JS, nothing fetched).
// It only reads the store, in short queries, so it can run beside the run
// that writes it.
package report

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/eaglet-dev/eaglet/state"
)

// Input is what the report needs to know of the spec: its instances, in
// the pipeline's order, and which of them send requests.
type Input struct {
	Spec, SpecPath, StatePath string
	Instances                 []Instance
	// Live marks a page served during a run: it refreshes its charts.
	Live bool
	// SampleSize is how many records the browser holds over all datasets
	// (default 1,000).
	SampleSize int
	// SpecFP identifies the spec as it is now, to tell whether the
	// recorded plan was made for it.
	SpecFP string
	// Launched are the endpoints whose servers eaglet launched, as the
	// last run that launched them left them.
	Launched []Launched
	// Evaluations are the evaluate stages' options the report needs,
	// by instance; a stage left out gets the defaults.
	Evaluations map[string]Evaluation
}

// Launched is what the servers eaglet launched for one endpoint did.
type Launched struct {
	Endpoint string
	Replicas []Replica
	// GPUHours are the replicas' uptime times their GPUs; Dollars prices
	// them at the launch's gpu_hour_price (0: none set).
	GPUHours, Dollars float64
}

// Replica is one launched server's state, restarts and uptime.
type Replica struct {
	Index    int
	State    string
	Restarts int
	Uptime   time.Duration
}

// Instance is one stage instance of the spec.
type Instance struct {
	ID, Stage, Dataset string
	// Endpoint names the endpoint an instance sends requests to; only
	// such instances (generate) have lengths, timing and cost.
	Endpoint string
	// Price is the endpoint's, in dollars per million tokens; nil if unpriced.
	Price *Price
	// Upstream lists the instances it reads.
	Upstream []string
	// EstCompletion is its dataset's est_completion_tokens (0: not given).
	EstCompletion int
	// Budget is its budget, nil without one.
	Budget *Budget
}

// Price is dollars per million prompt and completion tokens.
type Price struct{ Input, Output float64 }

// Page is the report's model, what the template renders.
type Page struct {
	Title, SpecPath, StatePath string
	Generated                  time.Time
	Live                       bool
	Summary                    []Fact
	// Sections are "all datasets" first, then one per request-sending instance.
	Sections []Section
	// Timeline holds the charts over time of the latest run, empty before
	// any timed answer; TimelineTitle says when that run began.
	Timeline      []Chart
	TimelineTitle string
	// Records is the browser's sample, as JSON for the page's script.
	Records json.RawMessage
	// Datasets and Finishes fill the browser's filters.
	Datasets, Finishes []string
	// Sampled counts the records in the browser, Total the answers.
	Sampled, Total int
	// Answering says the spec has a stage that sends requests.
	Answering bool
	// Plan compares the last recorded plan with what ran since; nil when
	// nothing sends requests.
	Plan *PlanTable
	// PlanHead names the figures of the plan's rows.
	PlanHead []string
	// Launched is the table of the launched endpoints' replicas.
	Launched []Launched
	// Acceptance is the drafters' figures, an evaluate stage and sampling
	// each; empty without an evaluation.
	Acceptance []Acceptance
}

// Fact is one figure of the summary.
type Fact struct{ Label, Value string }

// Section is the charts of one dataset (or of all).
type Section struct {
	ID, Title string
	Facts     []Fact
	Charts    []Chart
}

// Build reads the store and makes the page.
func Build(ctx context.Context, st *state.Store, in Input) (*Page, error) {
	p := &Page{Title: in.Spec, SpecPath: in.SpecPath, StatePath: in.StatePath, Generated: time.Now(), Live: in.Live, Launched: in.Launched}
	var gens []Instance
	for _, i := range in.Instances {
		if i.Endpoint != "" {
			gens = append(gens, i)
		}
	}
	p.Answering = len(gens) > 0
	outcomes, err := readOutcomes(ctx, st, in.Instances)
	if err != nil {
		return nil, err
	}
	sample := in.SampleSize
	if sample <= 0 {
		sample = 1000
	}
	var all datasetFigures
	all.maxTokens = -1
	var sections []Section
	var recs []record
	for _, g := range gens {
		f, err := readDataset(ctx, st, g)
		if err != nil {
			return nil, err
		}
		rs, err := sampleRecords(ctx, st, g, sample/len(gens))
		if err != nil {
			return nil, err
		}
		recs = append(recs, rs...)
		f.maxTokens = maxTokensOf(rs)
		all.add(f)
		sections = append(sections, f.section(g.ID, g.ID, outcomes.of(in.Instances, g.Dataset)))
	}
	if len(gens) > 1 {
		sections = append([]Section{all.section("all", "all datasets", outcomes.of(in.Instances, ""))}, sections...)
	}
	p.Sections = sections
	if p.Acceptance, err = acceptance(st, in); err != nil {
		return nil, err
	}
	p.Summary = summary(in, gens, outcomes, &all)
	limits, err := budgetLimits(gens, outcomes)
	if err != nil {
		return nil, err
	}
	p.Summary = append(p.Summary, budgetFacts(limits, outcomes)...)
	if p.Answering {
		if p.Plan, err = planTable(ctx, st, in, gens, outcomes, p.Generated); err != nil {
			return nil, err
		}
		p.PlanHead = planHead
	}
	if p.TimelineTitle, p.Timeline, err = timeline(ctx, st, gens, estimate(gens, outcomes), limits, outcomes); err != nil {
		return nil, err
	}
	p.Sampled, p.Total = len(recs), all.done
	seenDS, seenFin := map[string]bool{}, map[string]bool{}
	for _, r := range recs {
		seenDS[r.Dataset], seenFin[r.Finish] = true, true
	}
	p.Datasets, p.Finishes = slices.Sorted(maps.Keys(seenDS)), slices.Sorted(maps.Keys(seenFin))
	if recs == nil {
		recs = []record{}
	}
	if p.Records, err = json.Marshal(recs); err != nil {
		return nil, fmt.Errorf("report: encode records: %w", err)
	}
	return p, nil
}

// datasetFigures are the lengths and finish reasons of one request-sending
// instance, or of all of them added up.
type datasetFigures struct {
	completion, prompt  []state.ValueCount
	maxTokens           int // -1 before the first, 0 when mixed
	finishes            map[string]int
	done                int
	promptTok, complTok int64
}

func readDataset(ctx context.Context, st *state.Store, g Instance) (datasetFigures, error) {
	var f datasetFigures
	var err error
	if f.completion, err = st.TokenCounts(ctx, g.ID, true); err != nil {
		return f, err
	}
	if f.prompt, err = st.TokenCounts(ctx, g.ID, false); err != nil {
		return f, err
	}
	if f.finishes, err = st.FinishCounts(ctx, g.ID); err != nil {
		return f, err
	}
	for _, c := range f.completion {
		f.done += c.N
		f.complTok += int64(c.Value) * int64(c.N)
	}
	for _, c := range f.prompt {
		f.promptTok += int64(c.Value) * int64(c.N)
	}
	return f, nil
}

func (a *datasetFigures) add(f datasetFigures) {
	a.completion = append(a.completion, f.completion...)
	a.prompt = append(a.prompt, f.prompt...)
	switch {
	case a.maxTokens < 0:
		a.maxTokens = f.maxTokens
	case a.maxTokens != f.maxTokens:
		a.maxTokens = 0
	}
	if a.finishes == nil {
		a.finishes = map[string]int{}
	}
	for k, v := range f.finishes {
		a.finishes[k] += v
	}
	a.done += f.done
	a.promptTok += f.promptTok
	a.complTok += f.complTok
}

func (f *datasetFigures) section(id, title string, o outcomeBars) Section {
	compl := Bin(f.completion, max(f.maxTokens, 0))
	prompt := Bin(f.prompt, 0)
	s := Section{ID: id, Title: title}
	s.Facts = []Fact{{"answers", count(int64(f.done))}, {"completion tokens", count(f.complTok)},
		{"prompt tokens", count(f.promptTok)}}
	if f.done > 0 {
		s.Facts = append(s.Facts, Fact{"mean answer", fmt.Sprintf("%.0f tokens", float64(f.complTok)/float64(f.done))})
	}
	if compl.MaxTokens > 0 {
		s.Facts = append(s.Facts, Fact{"cut at max_tokens", fmt.Sprintf("%.1f%% (%d of %d)", 100*compl.CutShare(), compl.Cut, compl.Total)})
	}
	s.Charts = append(s.Charts,
		histChart("completion-"+id, "completion tokens", compl),
		histChart("prompt-"+id, "prompt tokens", prompt),
		barChart("finish-"+id, "finish reasons", labelled(f.finishes, "(none)")),
		barChart("outcomes-"+id, "outcomes: done, dropped by rule, skipped, failed by kind", o.bars()))
	return s
}

func labelled(m map[string]int, empty string) []bar {
	var out []bar
	for k, v := range m {
		if k == "" {
			k = empty
		}
		out = append(out, bar{Label: k, N: v})
	}
	sortBars(out)
	return out
}

func count(n int64) string {
	switch {
	case n >= 10_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 100_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// summary is the page's headline: records, tokens, cost so far and
// projected, and what is left.
func summary(in Input, gens []Instance, o outcomeCounts, all *datasetFigures) []Fact {
	facts := []Fact{{"answers", count(int64(all.done))}, {"completion tokens", count(all.complTok)},
		{"prompt tokens", count(all.promptTok)}}
	var spent, projected float64
	priced := false
	left := 0
	for _, g := range gens {
		c := o[g.ID]
		todo := max(o.input(g)-c.done-c.dropped-c.failed-c.skipped, 0) + c.failed + c.skipped
		left += todo
		if g.Price == nil {
			continue
		}
		priced = true
		cost := (float64(c.promptTok)*g.Price.Input + float64(c.complTok)*g.Price.Output) / 1e6
		spent += cost
		projected += cost
		if c.done > 0 {
			projected += cost / float64(c.done) * float64(todo)
		}
	}
	if priced {
		facts = append(facts, Fact{"cost so far", fmt.Sprintf("$%.2f", spent)}, Fact{"projected", fmt.Sprintf("$%.2f", projected)})
	}
	facts = append(facts, Fact{"records left", count(int64(left))})
	return facts
}

// estimate is what the plan expects the answers to cost in completion
// tokens: each dataset's input records times its est_completion_tokens, or
// times the mean answer so far where none is given.
func estimate(gens []Instance, o outcomeCounts) float64 {
	est := 0.0
	for _, g := range gens {
		per := float64(g.EstCompletion)
		if c := o[g.ID]; per == 0 && c.done > 0 {
			per = float64(c.complTok) / float64(c.done)
		}
		est += per * float64(o.input(g))
	}
	return est
}

// failureKind is what a failure reason starts with, as progress lines
// group them: "http 500 (6 attempts): ..." is "http 500".
func failureKind(reason string) string {
	kind, _, _ := strings.Cut(reason, ": ")
	if i := strings.Index(kind, " ("); i > 0 {
		kind = kind[:i]
	}
	return kind
}
