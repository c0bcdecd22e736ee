// Package generate is the stage that has the target model answer each
// record's prompt through an endpoint, with retries, and keeps the answer.
package generate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/stages/generate/budget"
	"github.com/eaglet-dev/eaglet/stages/serving/endpoint"
)

func init() {
	stages.Register(stages.Define("generate",
		"regenerate the last assistant turn with the target model behind an endpoint",
		check, newGenerate))
}

// Generate asks an endpoint for each record's answer.
type Generate struct {
	answerer
	ds     *specs.Dataset
	budget *budget.Budget
	quota  *quota
	// used counts the tokens answered in this run, for Progress.
	usedPrompt, usedCompletion atomic.Int64
	// limits are the resolved budget limits, for Estimate.
	limits []*budget.Limit
	usage  func() (stages.Usage, error)
	// answered reports this instance's live answers so far, so a plan
	// prices the records left at their mean; nil when nothing has run.
	answered func() (stages.Usage, error)
	// throughput is the pace the stage's answers came at so far, for the
	// plan's time; nil before any run.
	throughput func() (float64, int, error)
	// kept holds the answers of records of several answers an
	// interrupted run had.
	kept *keptTurns
}

var (
	_ stages.EndpointUser  = (*Options)(nil)
	_ stages.Mapper        = (*Generate)(nil)
	_ stages.Progressor    = (*Generate)(nil)
	_ stages.Prioritizer   = (*Generate)(nil)
	_ stages.Fingerprinter = (*Generate)(nil)
	_ stages.Costly        = (*Generate)(nil)
	_ stages.Rationed      = (*Generate)(nil)
	_ stages.Spender       = (*Generate)(nil)
	_ stages.Estimator     = (*Generate)(nil)
	_ stages.Releaser      = (*Generate)(nil)
)

func newGenerate(inst *stages.Instance, o *Options) (stages.Stage, error) {
	ep, err := endpoint.Shared(inst, o.Endpoint)
	if err != nil {
		return nil, err
	}
	g := &Generate{answerer: answerer{opts: o, ep: ep, maxTokens: o.MaxTokens.Int()}, ds: inst.Dataset, kept: &keptTurns{inst: inst}}
	share := o.Share.Float()
	if !(share > 0) || math.IsInf(share, 0) { // !(> 0) refuses NaN too
		return nil, o.Share.Errorf("share evaluates to %v; want a finite number above 0", share)
	}
	if g.maxTokens < 1 {
		return nil, o.MaxTokens.Errorf("max_tokens evaluates to %d; want at least 1", g.maxTokens)
	}
	// A server refuses prompt plus max_tokens beyond its context: with
	// max_tokens alone past it, every request of the run would be refused.
	if c := inst.Spec.Endpoint(o.Endpoint).Context; c > 0 && g.maxTokens >= c {
		return nil, o.MaxTokens.Errorf("max_tokens evaluates to %d, but endpoint %s's context is %d tokens, prompt and answer together: no prompt would fit; lower max_tokens or raise the endpoint's context", g.maxTokens, o.Endpoint, c)
	}
	timeout, _ := time.ParseDuration(o.Timeout) // checked
	g.client = &endpoint.Client{Endpoint: ep, Instance: inst.ID, Share: share, Timeout: timeout, Retries: *o.Retries}
	if inst.Usage != nil {
		g.answered = func() (stages.Usage, error) { return inst.Usage([]string{inst.ID}) }
	}
	if inst.Throughput != nil {
		// The endpoint's pace for the stage as a whole: its instances
		// share it, so each one's time at the whole pace adds up.
		g.throughput = func() (float64, int, error) { return inst.Throughput(inst.Siblings) }
	}
	if err := g.setStopIDs(inst); err != nil {
		return nil, err
	}
	if o.Tokenizer != "" {
		dir := inst.Spec.Resolve(o.Tokenizer)
		if g.tok, err = inst.Shared.Tokenizer(dir); err != nil {
			return nil, err
		}
		if g.ep.TakesIDs {
			if g.tmpl, err = chat.Pinned(g.tok, "", o.Date, o.ChatTemplateKwargs, inst.Shared.Now); err != nil {
				return nil, &specs.Error{Pos: inst.Stage.OptionPos("tokenizer"), Msg: fmt.Sprintf("tokenizer %s: %v", dir, err)}
			}
		}
	}
	if o.Budget != nil {
		if err := g.setBudget(inst); err != nil {
			return nil, err
		}
	}
	if o.Target != nil {
		if g.quota, err = targetQuota(inst, o.Target); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// setStopIDs learns the ids the model stops on from the model's own files:
// the stage's tokenizer, else that of the tokenize stage it reads from. An
// instance with neither trims only what the server names and the
// endpoint's stop_token_ids; the handoff trims again with its tokenizer.
func (g *Generate) setStopIDs(inst *stages.Instance) error {
	dir := g.opts.Tokenizer
	if dir == "" {
		up := inst.Spec.Upstream(inst.Stage, "tokenize")
		if up == nil {
			return nil
		}
		var theirs struct {
			Tokenizer string `yaml:"tokenizer"`
		}
		// The tokenize stage reports its own options' errors.
		_ = inst.Spec.Decode(up.With, &theirs)
		if dir = theirs.Tokenizer; dir == "" {
			return nil
		}
	}
	dir = inst.Spec.Resolve(dir)
	tok, err := inst.Shared.Tokenizer(dir)
	if err != nil {
		return err
	}
	g.stopIDs = chat.StopIDs(tok)
	return nil
}

// setBudget builds the instance's budget, or joins the stage's shared one.
func (g *Generate) setBudget(inst *stages.Instance) error {
	o := g.opts.Budget
	var err error
	if g.limits, err = budget.Limits(o, g.ep.Spec.Price); err != nil {
		return err
	}
	for _, x := range []struct {
		name string
		e    specs.Expr
	}{{"completion_tokens", o.CompletionTokens}, {"total_tokens", o.TotalTokens}, {"samples", o.Samples}, {"dollars", o.Dollars}} {
		if v := x.e.Float(); !x.e.IsZero() && (!(v >= 0) || math.IsInf(v, 0)) {
			return x.e.Errorf("budget %s evaluates to %v; want a finite number, 0 or more", x.name, v)
		}
	}
	ids := []string{inst.ID}
	key := "budget:" + inst.ID
	if o.Scope == "stage" {
		key, ids = "budget:"+inst.Stage.Name, inst.Siblings
	}
	if inst.Usage != nil {
		g.usage = func() (stages.Usage, error) { return inst.Usage(ids) }
	}
	tol := 0.0
	if o.Tolerance != nil {
		tol = *o.Tolerance
	}
	expected := g.ep.MeanTokens
	if g.ds != nil && g.ds.EstCompletionTokens > 0 {
		expected = g.ds.EstCompletionTokens
	}
	if o.Scope == "stage" {
		// One model for every dataset: start it from all of them, not
		// from whichever instance happens to build it first.
		sum, n := 0, 0
		for _, ds := range inst.Spec.Datasets {
			if ds.EstCompletionTokens > 0 {
				sum, n = sum+ds.EstCompletionTokens, n+1
			}
		}
		if n > 0 {
			expected = sum / n
		}
	}
	v, err := inst.Shared.Get(key, func() (any, error) {
		return budget.New(g.limits, tol, expected, g.maxTokens, g.usage), nil
	})
	if err != nil {
		return err
	}
	g.budget = v.(*budget.Budget)
	return nil
}

// Rationed reports a budget or a target: either may leave out an answer
// found again once it is spent or reached.
func (g *Generate) Rationed() bool { return g.opts.Budget != nil || g.opts.Target != nil }

// Reuse keeps an answer the engine found again (same prompt content and
// options) if the budget has room for it, as if generated now; with wait,
// once the requests in flight leave it room.
func (g *Generate) Reuse(ctx context.Context, out *conv.Record, wait bool) (stages.Outcome, error) {
	if g.quota != nil {
		reached, err := g.quota.reached(ctx)
		switch {
		case err != nil:
			return stages.Outcome{}, err
		case reached:
			return stages.Outcome{Status: stages.Skipped, Reason: reasonQuota}, nil
		}
	}
	if g.budget != nil && out.Generation != nil {
		gen := out.Generation
		ok, err := g.budget.TakeKnown(ctx, gen.PromptTokens, max(gen.CompletionTokens, gen.TotalCompletionTokens), wait)
		switch {
		case err != nil:
			return stages.Outcome{}, err
		case !ok:
			return stages.Outcome{Status: stages.Skipped, Reason: stages.ReasonBudget}, nil
		}
	}
	if g.quota != nil {
		// Kept: within the quota, a found answer counts like a new one.
		g.quota.countKnown(ctx, out)
	}
	return stages.Outcome{Status: stages.Done, Record: out}, nil
}

// DefaultConcurrency is the endpoint's concurrency.
func (g *Generate) DefaultConcurrency() int { return g.ep.Concurrency }

// Fingerprint names the model that answers, so pointing a stage at another
// model regenerates while moving a server to another URL does not.
func (g *Generate) Fingerprint() (string, error) { return g.ep.Identity, nil }

// Release tells the endpoint this instance is done with it in the run,
// so the last instance using servers eaglet launched stops them, and
// keeps what the servers did for status.
func (g *Generate) Release() {
	g.ep.Release()
	endpoint.KeepReplicas(g.ep, g.kept.inst.Checkpoints)
}

// Process asks for the answer once the budget lets the request go.
func (g *Generate) Process(ctx context.Context, rec *conv.Record) (stages.Outcome, error) {
	if stages.Stopping(ctx) {
		return stages.Outcome{}, stages.ErrInterrupted
	}
	if c, n := g.ep.Spec.Context, exactPromptTokens(rec); c > 0 && n >= c {
		// The server would refuse it, or worse cut it and answer the rest.
		return stages.Outcome{Status: stages.Skipped, Reason: fmt.Sprintf("prompt longer than endpoint %s's context (%d tokens)", g.ep.Spec.Name, c)}, nil
	}
	if g.quota != nil {
		// Wait until the quota lets the record be sent; once the target
		// is met it is skipped.
		if send, err := g.quota.admit(ctx); err != nil {
			return stages.Outcome{}, err
		} else if !send {
			return stages.Outcome{Status: stages.Skipped, Reason: reasonQuota}, nil
		}
	}
	var t *budget.Ticket
	prompt := promptTokens(rec)
	answers := g.answers(rec)
	// A record of several answers takes those an interrupted run kept.
	keep := g.kept.of(rec, answers)
	if g.budget != nil {
		var err error
		t, err = g.budget.Admit(ctx, prompt, answers, keep.known())
		if err != nil && g.quota != nil {
			g.quota.finish(false, false)
		}
		if errors.Is(err, budget.ErrExhausted) {
			return stages.Outcome{Status: stages.Skipped, Reason: stages.ReasonBudget}, nil
		}
		if err != nil {
			return stages.Outcome{}, err
		}
	}
	tl := &endpoint.Tally{}
	// Servers eaglet launches start once a record is about to be sent.
	err := g.ep.Launch(ctx)
	var out *conv.Record
	if err == nil {
		out, err = g.converse(ctx, rec, t, tl, keep)
	}
	if g.quota != nil {
		if err == nil {
			out.Key = rec.Key
			g.quota.finish(true, g.quota.accepts(ctx, out))
		} else {
			g.quota.finish(false, false)
		}
	}
	if err == nil {
		g.usedPrompt.Add(int64(out.Generation.PromptTokens))
		g.usedCompletion.Add(int64(max(out.Generation.CompletionTokens, out.Generation.TotalCompletionTokens)))
	}
	if t != nil {
		if err != nil {
			t.Finish(0, -1)
		} else {
			gen := out.Generation
			if gen.PromptTokens > 0 {
				prompt = gen.PromptTokens
			}
			t.Finish(prompt, max(gen.CompletionTokens, gen.TotalCompletionTokens))
		}
	}
	if errors.Is(err, stages.ErrInterrupted) || (err != nil && ctx.Err() != nil) {
		return stages.Outcome{}, err
	}
	if err != nil {
		// A failure keeps what it cost, so status can say what was tried.
		return stages.Outcome{Status: stages.Failed, Reason: err.Error(), Requests: tl.Requests, Retries: tl.Retries}, nil
	}
	return stages.Outcome{Status: stages.Done, Record: out, Requests: tl.Requests, Retries: tl.Retries}, nil
}

// Spent is what the answers of this run cost at the endpoint's price.
func (g *Generate) Spent() float64 {
	p := g.ep.Spec.Price
	if p == nil {
		return 0
	}
	return (float64(g.usedPrompt.Load())*p.Input + float64(g.usedCompletion.Load())*p.Output) / 1e6
}

// Progress shows the budget used and the cost so far.
func (g *Generate) Progress() string {
	var parts []string
	if g.budget != nil {
		parts = append(parts, g.budget.String())
	}
	if g.quota != nil {
		parts = append(parts, g.quota.String())
	}
	if g.ep.Spec.Price != nil {
		parts = append(parts, fmt.Sprintf("$%.2f this run", g.Spent()))
	}
	if n, ok := g.ep.AutoConcurrency(); ok {
		// What `auto` settled on is the figure to put in the next spec.
		parts = append(parts, fmt.Sprintf("concurrency %d (auto, endpoint %s)", n, g.ep.Spec.Name))
	}
	return strings.Join(parts, "  ")
}

// Left is how many more records the stage expects to finish: what the
// budget still allows (all its datasets' together with scope: stage) or
// the target still needs, whichever is fewer; -1 with neither, or before
// an answer has said what one costs.
func (g *Generate) Left() int {
	left := -1
	if g.budget != nil {
		left = g.budget.RecordsLeft()
	}
	if g.quota != nil {
		if n := g.quota.answersLeft(); n >= 0 && (left < 0 || n < left) {
			left = n
		}
	}
	return left
}

// Prioritize says whether records are sent longest expected answer first.
func (g *Generate) Prioritize() bool { return g.opts.Order == "longest_first" }

// Priority is the expected length of the answer: the length of the answer
// the source gives (answers to the same prompt tend to be alike in size),
// else the prompt's, which long tasks also tend to have.
func (g *Generate) Priority(rec *conv.Record) float64 {
	if n := len(rec.Messages); n > 0 && rec.Messages[n-1].Role == conv.Assistant {
		m := rec.Messages[n-1]
		return float64(len(m.Content)+len(m.Reasoning)) / 4
	}
	return float64(promptTokens(rec))
}
