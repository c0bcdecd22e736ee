// Package generate is the stage that has the target model answer each
// record's prompt through an endpoint, with retries, and keeps the answer.
package generate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/dataset"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/stages/generate/backend"
)

func init() {
	stages.Register(stages.Define("generate",
		"regenerate the last assistant turn with the target model behind an endpoint",
		check, newGenerate))
}

// Options of generate. Sampling settings change the answers, so they are
// part of the fingerprint; the endpoint's name, retries and timeout are not.
type Options struct {
	Endpoint string `yaml:"endpoint" fp:"-"`
	// MaxTokens caps each answer (an expression; default 4096). It is always
	// sent: servers' own defaults are as low as 16 tokens.
	MaxTokens   specs.Expr `yaml:"max_tokens" eval:"int"`
	Temperature *float64   `yaml:"temperature"`
	TopP        *float64   `yaml:"top_p"`
	TopK        *int       `yaml:"top_k"`
	Stop        []string   `yaml:"stop"`
	Seed        *int       `yaml:"seed"`
	// Retries is how many times a retryable failure is tried again (default 5).
	Retries *int `yaml:"retries" fp:"-"`
	// Timeout is how long a request may go without a sign of life, as a Go
	// duration ("10m"; default 30m): with streaming, the time since the
	// last token; without, the whole request.
	Timeout string `yaml:"timeout" fp:"-"`
	// Tokenizer, when set, counts the tokens of answers whose server did not
	// report usage (a model directory, as for the tokenize stage).
	Tokenizer string `yaml:"tokenizer" fp:"-"`
	// Turns is "last" (regenerate the final assistant turn; the default)
	// or "all" (regenerate every assistant turn in order, each conditioned
	// on the target's own earlier answers).
	Turns string `yaml:"turns"`
	// ToolTurns is "keep" (assistant turns with tool calls stay as the
	// source wrote them, with their recorded results; the default) or
	// "regenerate" (with turns: all, the target answers them too: when it
	// calls the same functions the recorded results follow its calls,
	// otherwise its answer ends the conversation).
	ToolTurns string `yaml:"tool_turns"`
	// Order is "" (the store's order) or "longest_first": records whose
	// source answer is longest go first, so the run does not end waiting on
	// a few long answers started last.
	Order string `yaml:"order" fp:"-"`
	// Share weighs this instance's part of the endpoint's capacity against
	// other instances using it (an expression; default 1).
	Share specs.Expr `yaml:"share" fp:"-" eval:"number"`
	// Budget stops sending requests before a limit is crossed; records not
	// sent are skipped (budget) and sent by a later run with a larger budget.
	Budget *BudgetOptions `yaml:"budget" fp:"-"`
	// Target generates until the record stages after this one (its
	// filters) have accepted a number of answers; records not needed are
	// skipped (target reached) and sent by a later run with a larger one.
	Target *TargetOptions `yaml:"target" fp:"-"`
	// ChatTemplateKwargs go to the chat template: sent with chat requests
	// (over the endpoint's options) and used for the stage's own renders.
	// They default to those of the tokenize stage generate reads from.
	ChatTemplateKwargs map[string]any `yaml:"chat_template_kwargs"`
	// Date pins the day the stage's own renders print (as tokenize's date:,
	// which is the default).
	Date string `yaml:"date"`
}

// The values of Options' enum options, declared once for their check and
// their listing.
var (
	turnsValues     = specs.Values("last", "all")
	toolTurnsValues = specs.Values("keep", "regenerate")
	orderValues     = specs.Values("longest_first")
)

const defaultMaxTokens = 4096

func check(spec *specs.Spec, st *specs.Stage, opts *Options) error {
	var names []string
	for _, e := range spec.Endpoints {
		names = append(names, e.Name)
	}
	switch {
	case opts.Endpoint == "" && len(names) == 1:
		opts.Endpoint = names[0]
	case opts.Endpoint == "":
		return &specs.Error{Pos: st.Pos, Msg: fmt.Sprintf("stage %s: generate needs `endpoint:` (one of %v)", st.Name, names)}
	case spec.Endpoint(opts.Endpoint) == nil:
		return &specs.Error{Pos: st.OptionPos("endpoint"), Msg: fmt.Sprintf("stage %s: unknown endpoint %q%s; endpoints: %v", st.Name, opts.Endpoint, specs.Suggest(opts.Endpoint, names), names)}
	}
	ep := spec.Endpoint(opts.Endpoint)
	// Every problem of the stage is reported at once.
	var errs *multierror.Error
	bad := func(pos specs.Pos, format string, args ...any) {
		errs = multierror.Append(errs, &specs.Error{Pos: pos, Msg: fmt.Sprintf("stage %s: ", st.Name) + fmt.Sprintf(format, args...)})
	}
	if opts.Timeout != "" {
		if d, err := time.ParseDuration(opts.Timeout); err != nil || d <= 0 {
			bad(st.OptionPos("timeout"), "timeout %q is not a positive duration like 90s or 10m", opts.Timeout)
		}
	}
	if opts.Retries != nil && *opts.Retries < 0 {
		bad(st.OptionPos("retries"), "retries is %d; use 0 or more", *opts.Retries)
	}
	enum := func(e specs.Enum, label, got string, path ...string) {
		if err := e.Check(st, label, got, path...); err != nil {
			errs = multierror.Append(errs, err)
		}
	}
	enum(orderValues, "order", opts.Order)
	// Servers reject these anyway, but only once the run is under way,
	// and a temperature of 7 would be answered with noise where they do not.
	if t := opts.Temperature; t != nil && (*t < 0 || *t > 2) {
		bad(st.OptionPos("temperature"), "temperature is %v; use 0 to 2", *t)
	}
	if p := opts.TopP; p != nil && (*p <= 0 || *p > 1) {
		bad(st.OptionPos("top_p"), "top_p is %v; use more than 0, at most 1", *p)
	}
	if k := opts.TopK; k != nil && *k < 1 && *k != -1 {
		bad(st.OptionPos("top_k"), "top_k is %d; use 1 or more, or -1 for no limit", *k)
	}
	enum(turnsValues, "turns", opts.Turns)
	enum(toolTurnsValues, "tool_turns", opts.ToolTurns)
	if opts.ToolTurns == "regenerate" && opts.Turns != "all" {
		bad(st.OptionPos("tool_turns"), "tool_turns: regenerate answers the source's tool-call turns among every assistant turn; it needs turns: all")
	}
	if b := opts.Budget; b != nil {
		if b.Tolerance != nil && (*b.Tolerance < 0 || *b.Tolerance > 1) {
			bad(st.OptionPos("budget", "tolerance"), "budget tolerance is %v; use a fraction of the limit from 0 to 1 (0.01 accepts 1%% over)", *b.Tolerance)
		}
		enum(scopeValues, "budget scope", b.Scope, "budget", "scope")
		if b.CompletionTokens.IsZero() && b.TotalTokens.IsZero() && b.Samples.IsZero() && b.Dollars.IsZero() {
			bad(st.OptionPos("budget"), "budget needs at least one of completion_tokens, total_tokens, samples, dollars")
		}
		if !b.Dollars.IsZero() && ep.Price == nil {
			bad(st.OptionPos("budget", "dollars"), "a dollars budget needs `price:` on endpoint %s", opts.Endpoint)
		}
	}
	if tg := opts.Target; tg != nil {
		if tg.Accepted.IsZero() {
			bad(st.OptionPos("target"), "target needs `accepted:` (the number of answers the filters after generate must accept)")
		}
		if a := tg.EstAcceptance; a != nil && (*a <= 0 || *a > 1) {
			bad(st.OptionPos("target", "est_acceptance"), "est_acceptance is %v; use the share of answers expected to pass the filters, above 0 and at most 1", *a)
		}
	}
	if _, ok := specs.LookupAPI(ep.API); !ok {
		return errs.ErrorOrNil() // the API is reported by the spec's own checks
	}
	e, err := newEndpoint(spec, ep, nil)
	if err != nil {
		var se *specs.Error
		var me *multierror.Error
		if !errors.As(err, &se) && !errors.As(err, &me) {
			err = &specs.Error{Pos: ep.Pos, Msg: err.Error()}
		}
		errs = multierror.Append(errs, err) // positioned inside the endpoint's options
	} else {
		if opts.Turns == "all" && opts.Tokenizer == "" && e.takesIDs {
			bad(st.OptionPos("turns"), "turns: all on endpoint %s, which takes token ids, needs `tokenizer:` on the stage to render each turn", ep.Name)
		}
		if err := inheritTemplate(spec, st, opts, e); err != nil {
			errs = multierror.Append(errs, err)
		}
	}
	if opts.Date != "" {
		if _, err := chat.ParseDate(opts.Date); err != nil {
			bad(st.OptionPos("date"), "%v", err)
		}
	}
	return errs.ErrorOrNil()
}

// Generate asks an endpoint for each record's answer.
type Generate struct {
	opts      *Options
	ep        *endpoint
	ds        *specs.Dataset
	maxTokens int
	retries   int
	timeout   time.Duration
	log       func(string, ...any)
	budget    *budget
	quota     *quota
	// used counts the tokens answered in this run, for Progress.
	usedPrompt, usedCompletion atomic.Int64
	// tok counts tokens a server did not report; nil when not configured.
	tok *tokenizer.Tokenizer
	// tmpl renders the turns after the first into token ids for an API
	// that takes ids; nil without a tokenizer that has a chat template.
	tmpl  *chat.Template
	id    string
	share float64
	// limits are the resolved budget limits, for Estimate.
	limits []*limit
	usage  func() (stages.Usage, error)
}

var (
	_ stages.EndpointUser  = (*Options)(nil)
	_ stages.Mapper        = (*Generate)(nil)
	_ stages.Progressor    = (*Generate)(nil)
	_ stages.Prioritizer   = (*Generate)(nil)
	_ stages.Fingerprinter = (*Generate)(nil)
	_ stages.Costly        = (*Generate)(nil)
	_ stages.Spender       = (*Generate)(nil)
	_ stages.Estimator     = (*Generate)(nil)
)

func newGenerate(inst *stages.Instance, o *Options) (stages.Stage, error) {
	v, err := inst.Shared.Get("endpoint:"+o.Endpoint, func() (any, error) {
		return newEndpoint(inst.Spec, inst.Spec.Endpoint(o.Endpoint), inst.Shared.Log)
	})
	if err != nil {
		return nil, err
	}
	g := &Generate{opts: o, ep: v.(*endpoint), ds: inst.Dataset, maxTokens: defaultMaxTokens, retries: 5,
		timeout: 30 * time.Minute, log: inst.Log, id: inst.ID, share: 1}
	if !o.Share.IsZero() {
		g.share = o.Share.Float()
		if !(g.share > 0) || math.IsInf(g.share, 0) { // !(> 0) refuses NaN too
			return nil, o.Share.Errorf("share evaluates to %v; want a finite number above 0", g.share)
		}
	}
	if !o.MaxTokens.IsZero() {
		g.maxTokens = o.MaxTokens.Int()
		if g.maxTokens < 1 {
			return nil, o.MaxTokens.Errorf("max_tokens evaluates to %d; want at least 1", g.maxTokens)
		}
	}
	if o.Retries != nil {
		g.retries = *o.Retries
	}
	if o.Timeout != "" {
		g.timeout, _ = time.ParseDuration(o.Timeout)
	}
	if o.Tokenizer != "" {
		dir := inst.Spec.Resolve(o.Tokenizer)
		v, err := inst.Shared.Get("tokenizer-only:"+dir, func() (any, error) { return tokenizer.Load(dir) })
		if err != nil {
			return nil, fmt.Errorf("tokenizer %s: %w", dir, err)
		}
		g.tok = v.(*tokenizer.Tokenizer)
		if g.ep.takesIDs {
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
		if err := g.setQuota(inst); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// setBudget builds the instance's budget, or joins the stage's shared one.
func (g *Generate) setBudget(inst *stages.Instance) error {
	o := g.opts.Budget
	var err error
	if g.limits, err = g.ep.limits(o); err != nil {
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
	expected := g.ep.meanTokens
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
		return newBudget(g.limits, tol, newLengthModel(min(expected, g.maxTokens), g.maxTokens), g.usage), nil
	})
	if err != nil {
		return err
	}
	g.budget = v.(*budget)
	return nil
}

// Reuse keeps an answer the engine found again (same prompt content and
// options) if the budget has room for it, as if generated now.
func (g *Generate) Reuse(out *conv.Record) (stages.Outcome, error) {
	if g.quota != nil {
		reached, err := g.quota.reached(context.Background())
		switch {
		case err != nil:
			return stages.Outcome{}, err
		case reached:
			return stages.Outcome{Status: stages.Skipped, Reason: reasonQuota}, nil
		}
	}
	if g.budget != nil && out.Generation != nil {
		gen := out.Generation
		ok, err := g.budget.takeKnown(gen.PromptTokens, max(gen.CompletionTokens, gen.TotalCompletionTokens))
		switch {
		case err != nil:
			return stages.Outcome{}, err
		case !ok:
			return stages.Outcome{Status: stages.Skipped, Reason: "budget"}, nil
		}
	}
	if g.quota != nil {
		// Kept: within the quota, a found answer counts like a new one.
		g.quota.countKnown(context.Background(), out)
	}
	return stages.Outcome{Status: stages.Done, Record: out}, nil
}

// EndpointName is the endpoint the stage sends to (validation fills in the
// only one when the spec names none).
func (o *Options) EndpointName() string { return o.Endpoint }

// DefaultConcurrency is the endpoint's concurrency.
func (g *Generate) DefaultConcurrency() int { return g.ep.concurrency }

// Fingerprint names the model that answers, so pointing a stage at another
// model regenerates while moving a server to another URL does not.
func (g *Generate) Fingerprint() (string, error) { return g.ep.identity, nil }

// Process asks for the answer once the budget lets the request go.
func (g *Generate) Process(ctx context.Context, rec *conv.Record) (stages.Outcome, error) {
	if stages.Stopping(ctx) {
		return stages.Outcome{}, stages.ErrInterrupted
	}
	if c, n := g.ep.spec.Context, exactPromptTokens(rec); c > 0 && n >= c {
		// The server would refuse it, or worse cut it and answer the rest.
		return stages.Outcome{Status: stages.Skipped, Reason: fmt.Sprintf("prompt longer than endpoint %s's context (%d tokens)", g.ep.spec.Name, c)}, nil
	}
	if send, err := g.admitQuota(ctx); err != nil {
		return stages.Outcome{}, err
	} else if !send {
		return stages.Outcome{Status: stages.Skipped, Reason: reasonQuota}, nil
	}
	var t *ticket
	prompt := promptTokens(rec)
	if g.budget != nil {
		var err error
		t, err = g.budget.admit(ctx, prompt, g.answers(rec))
		if err != nil && g.quota != nil {
			g.quota.finish(false, false)
		}
		if errors.Is(err, ErrBudgetExhausted) {
			return stages.Outcome{Status: stages.Skipped, Reason: "budget"}, nil
		}
		if err != nil {
			return stages.Outcome{}, err
		}
	}
	tl := &tally{}
	out, err := g.converse(ctx, rec, t, tl)
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
			t.finish(0, -1)
		} else {
			gen := out.Generation
			if gen.PromptTokens > 0 {
				prompt = gen.PromptTokens
			}
			t.finish(prompt, max(gen.CompletionTokens, gen.TotalCompletionTokens))
		}
	}
	if errors.Is(err, stages.ErrInterrupted) || (err != nil && ctx.Err() != nil) {
		return stages.Outcome{}, err
	}
	if err != nil {
		// A failure keeps what it cost, so status can say what was tried.
		return stages.Outcome{Status: stages.Failed, Reason: err.Error(), Requests: tl.requests, Retries: tl.retries}, nil
	}
	return stages.Outcome{Status: stages.Done, Record: out, Requests: tl.requests, Retries: tl.retries}, nil
}

// tally counts what one record's requests took.
type tally struct {
	requests int
	retries  map[string]int
}

// retried counts a failure that is tried again, by its kind.
func (tl *tally) retried(err error) {
	if tl.retries == nil {
		tl.retries = map[string]int{}
	}
	tl.retries[retryKind(err)]++
}

// retryKind groups failures for people: "http 503", "network: EOF",
// "network: connection refused", or a message's first words.
func retryKind(err error) string {
	var be *backend.Error
	if errors.As(err, &be) && be.Status != 0 {
		return fmt.Sprintf("http %d", be.Status)
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "post ") || strings.HasPrefix(msg, "read response of ") {
		// "post URL: dial tcp ADDR: connect: connection refused": the URL
		// and address vary, the last words say what happened.
		return "network: " + msg[strings.LastIndex(msg, ": ")+2:]
	}
	kind, _, _ := strings.Cut(msg, ":")
	return kind
}

// Spent is what the answers of this run cost at the endpoint's price.
func (g *Generate) Spent() float64 {
	p := g.ep.spec.Price
	if p == nil {
		return 0
	}
	return (float64(g.usedPrompt.Load())*p.Input + float64(g.usedCompletion.Load())*p.Output) / 1e6
}

// render turns a conversation the tokenize stage did not see (a turn after
// the first) into prompt ids for an API that takes ids.
func (g *Generate) render(msgs []conv.Message, tools []conv.ToolDef) ([]int, error) {
	if g.tmpl == nil {
		return nil, &backend.Error{Kind: backend.Permanent, Msg: fmt.Sprintf("this record answers several turns and endpoint %s takes token ids, which the tokenize stage makes for the first turn only: set `tokenizer:` on the generate stage (the tokenize stage's model directory) so each later turn is rendered with its chat template", g.ep.spec.Name)}
	}
	enc, err := g.tmpl.Encode(msgs, tools, true)
	if err != nil {
		return nil, &backend.Error{Kind: backend.Permanent, Msg: "render a later turn: " + err.Error()}
	}
	return enc.IDs, nil
}

// answers is how many answers converse asks for: the last turn, or each
// assistant turn with turns "all", plus one per queued user turn.
func (g *Generate) answers(rec *conv.Record) int {
	base, followUps := dataset.SplitTurns(rec.Prompt())
	n := 1 + len(followUps)
	if g.opts.Turns == "all" {
		for i, m := range base {
			if regenerated(i, m) || (g.opts.ToolTurns == "regenerate" && i > 0 && m.Role == conv.Assistant && len(m.ToolCalls) > 0) {
				n++
			}
		}
	}
	return n
}

// splice keeps the target's answer to a source tool-call turn when it
// calls the same functions in the same order: its calls take the source's
// call ids, so the recorded tool results that follow answer them. ok is
// false when the target answered otherwise.
func splice(gen *conv.Generation, src conv.Message) (conv.Message, bool) {
	m := gen.Message()
	if len(m.ToolCalls) != len(src.ToolCalls) {
		return m, false
	}
	m.ToolCalls = slices.Clone(m.ToolCalls)
	for i, c := range m.ToolCalls {
		if c.Name != src.ToolCalls[i].Name {
			return m, false
		}
		m.ToolCalls[i].ID = src.ToolCalls[i].ID
	}
	return m, true
}

// regenerated says whether turns: all answers message m, at position i of
// the conversation, anew: an assistant turn with something before it.
// Tool-calling turns stay as the source has them: the tool results that
// follow belong to those calls.
func regenerated(i int, m conv.Message) bool {
	return m.Role == conv.Assistant && len(m.ToolCalls) == 0 && i > 0
}

// converse produces the record's answers: the last assistant turn, every
// assistant turn in order when turns is "all", and the answers to user
// turns queued after the first (MT-Bench), each conditioned on the target's
// own earlier answers.
func (g *Generate) converse(ctx context.Context, rec *conv.Record, t *ticket, tl *tally) (*conv.Record, error) {
	base, followUps := dataset.SplitTurns(rec.Prompt())
	steps := 0
	var spent int
	var turns []conv.Turn
	// turn keeps an answer that a later one follows, at its place in the
	// conversation, with the ids it was given and produced.
	turn := func(at int, gen *conv.Generation, sent int) {
		turns = append(turns, conv.Turn{Message: at, FinishReason: gen.FinishReason, PromptTokens: gen.PromptTokens,
			CompletionTokens: gen.CompletionTokens, OutputIDs: gen.OutputIDs, SentIDs: sent})
	}
	var lastSent int
	ask := func(msgs []conv.Message, ids []int) (*conv.Generation, error) {
		if ids == nil && g.ep.takesIDs {
			var err error
			if ids, err = g.render(msgs, rec.Tools); err != nil {
				return nil, err
			}
		}
		steps++
		lastSent = len(ids)
		req := &backend.Request{Key: rec.Key, Messages: msgs, Tools: rec.Tools, InputIDs: ids,
			MaxTokens: g.maxTokens, ChatTemplateKwargs: g.opts.ChatTemplateKwargs, Sampling: backend.Sampling{
				Temperature: g.opts.Temperature, TopP: g.opts.TopP, TopK: g.opts.TopK, Stop: g.opts.Stop, Seed: g.opts.Seed}}
		if t != nil {
			done := spent
			req.Progress = func(p backend.Progress) { t.update(done, p) }
			req.Sent = func() { t.sentNow(done) }
		}
		gen, err := g.ask(ctx, req, tl)
		if err == nil {
			err = truncatedPrompt(gen, sentTokens(rec, msgs, ids, steps), g.ep.spec.Name)
		}
		if err == nil {
			g.recount(gen)
			gen.MaxTokens = g.maxTokens
			spent += gen.CompletionTokens
		}
		return gen, err
	}
	var convo []conv.Message
	// ended is the answer that ended the conversation early: the target
	// answered a source tool-call turn otherwise than the source did, so
	// the recorded tool results no longer follow.
	var ended *conv.Generation
	if g.opts.Turns == "all" {
		for _, m := range base {
			switch {
			case regenerated(len(convo), m):
				gen, err := ask(convo, nil)
				if err != nil {
					return nil, err
				}
				turn(len(convo), gen, lastSent)
				m = gen.Message()
			case g.opts.ToolTurns == "regenerate" && m.Role == conv.Assistant && len(m.ToolCalls) > 0 && len(convo) > 0:
				gen, err := ask(convo, nil)
				if err != nil {
					return nil, err
				}
				spliced, ok := splice(gen, m)
				if !ok {
					ended = gen
					break
				}
				turn(len(convo), gen, lastSent)
				m = spliced
			}
			if ended != nil {
				break
			}
			convo = append(convo, m)
		}
	} else {
		convo = append(convo, base...)
	}
	gen := ended
	if gen == nil {
		ids := rec.PromptIDs
		if steps > 0 || len(followUps) > 0 {
			// The tokenized prompt was made of another conversation.
			ids = nil
		}
		var err error
		if gen, err = ask(convo, ids); err != nil {
			return nil, err
		}
		for _, f := range followUps {
			turn(len(convo), gen, lastSent)
			convo = append(convo, gen.Message(), f)
			if gen, err = ask(convo, nil); err != nil {
				return nil, err
			}
		}
	}
	out := *rec
	if ended != nil {
		// The answer ends the conversation where it was given.
		out.Messages = convo
	}
	if steps > 1 {
		out.Messages = convo
		gen.TotalCompletionTokens = spent
		gen.Turns = turns
	}
	out.Generation = gen
	return &out, nil
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
	if g.ep.spec.Price != nil {
		parts = append(parts, fmt.Sprintf("$%.2f this run", g.Spent()))
	}
	if g.ep.lim.auto != nil {
		// What `auto` settled on is the figure to put in the next spec.
		parts = append(parts, fmt.Sprintf("concurrency %d (auto, endpoint %s)", g.ep.lim.current(), g.ep.spec.Name))
	}
	return strings.Join(parts, "  ")
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

// recount fills in the completion tokens a server did not report, with
// the target's tokenizer: the output ids when the server gave them, else the
// text (which re-tokenizes close to, not exactly as, the model produced it),
// plus the end-of-turn token when the answer stopped.
func (g *Generate) recount(gen *conv.Generation) {
	if gen.CompletionTokens > 0 || g.tok == nil {
		return
	}
	n := len(gen.OutputIDs)
	if n == 0 {
		n = g.tok.Count(gen.Reasoning, false) + g.tok.Count(gen.Content, false)
	}
	if gen.FinishReason == "stop" {
		n++
	}
	gen.CompletionTokens = n
}

// promptTokens is the prompt's length: counted by tokenize, else guessed
// from its characters (about four per token).
func promptTokens(rec *conv.Record) int {
	if rec.PromptTokens > 0 {
		return rec.PromptTokens
	}
	if len(rec.PromptIDs) > 0 {
		return len(rec.PromptIDs)
	}
	chars := 0
	for _, m := range rec.Prompt() {
		chars += len(m.Content)
	}
	return chars/4 + 1
}

// ask makes one request, retrying what may succeed on a second try.
func (g *Generate) ask(ctx context.Context, req *backend.Request, tl *tally) (*conv.Generation, error) {
	var outage time.Duration
	for attempt := 0; ; attempt++ {
		gen, err := g.ep.generate(ctx, g.id, g.share, req, g.timeout)
		var be *backend.Error
		if notSent := errors.As(err, &be) && be.NotSent; !notSent {
			tl.requests++
		}
		if err == nil {
			return gen, nil
		}
		kind, wait := backend.Classify(err)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.As(err, &be) && be.NotSent {
			// The endpoint is resting after failures; waiting for it is not
			// an attempt, so an outage shorter than the request timeout
			// delays records without failing them. A longer one fails them
			// at once, the later records too, so a dead server ends the run
			// in about the timeout instead of a wait per record; each record
			// still tries, so one of them probes the server back in.
			down := g.ep.downFor()
			if outage >= g.timeout || down >= g.timeout {
				return nil, fmt.Errorf("endpoint %s out of service: no URL answered for %s; %w", g.ep.spec.Name, max(outage, down).Round(time.Second), err)
			}
			wait = min(wait, g.timeout-max(outage, down))
			attempt--
			outage += wait
		} else if kind != backend.Retryable || g.retries == 0 {
			return nil, err
		} else if attempt >= g.retries {
			// Say the retries are spent, or the next morning's reader
			// cannot tell a flaky server from one that never answered.
			// The kind before the first colon stays first: progress lines
			// and status group failures by it.
			kind, rest, _ := strings.Cut(err.Error(), ": ")
			return nil, &attemptsError{msg: fmt.Sprintf("%s (%d attempts): %s", kind, attempt+1, rest), err: err}
		}
		if kind == backend.Retryable && !(be != nil && be.NotSent) {
			tl.retried(err)
		}
		if wait == 0 {
			wait = backoff(attempt)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-stages.StopChan(ctx):
			// The run is stopping: no new attempt; the next run tries again.
			return nil, stages.ErrInterrupted
		}
	}
}

// attemptsError is a retryable failure that outlived its retries; it keeps
// the last error for its kind.
type attemptsError struct {
	msg string
	err error
}

func (e *attemptsError) Error() string { return e.msg }
func (e *attemptsError) Unwrap() error { return e.err }

// backoff is exponential with full jitter, from 0.5 s up to 30 s.
func backoff(attempt int) time.Duration {
	d := min(500*time.Millisecond<<attempt, 30*time.Second)
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

// Estimate predicts tokens, time and cost from the dataset's expected
// answer length, the endpoint's throughput and its price. It leaves a
// budget to the plan, saying what is left of it and what the records would
// spend: a stage-wide budget is shared with the other datasets' estimates.
func (g *Generate) Estimate(in stages.Estimate) (stages.Estimate, error) {
	in, note, err := g.quotaEstimate(in)
	if err != nil {
		return in, err
	}
	out := in
	if note != "" {
		out.Note = note
	}
	per := g.ep.meanTokens
	if g.ds != nil && g.ds.EstCompletionTokens > 0 {
		per = g.ds.EstCompletionTokens
	}
	per = min(per, g.maxTokens)
	out.CompletionTokens = int64(in.Records) * int64(per)
	if tps := g.ep.spec.TokensPerSecond; tps > 0 {
		out.Seconds = float64(out.CompletionTokens) / tps
	}
	if p := g.ep.spec.Price; p != nil {
		out.Dollars = (float64(out.PromptTokens)*p.Input + float64(out.CompletionTokens)*p.Output) / 1e6
	}
	out.Bytes = in.Bytes + out.CompletionTokens*4
	out.Exact = false
	if len(g.limits) == 0 || in.Records == 0 {
		return out, nil
	}
	var used stages.Usage
	if g.usage != nil {
		var err error
		if used, err = g.usage(); err != nil {
			return out, fmt.Errorf("budget: read earlier usage: %w", err)
		}
	}
	// Ask the budget whether it would send a request, as a run's first
	// request does: near its end the margin it keeps for long answers
	// admits none, and a plan promising work no run does would never settle.
	exhausted := false
	t, err := g.budget.admit(context.Background(), int(in.PromptTokens/int64(in.Records)), 1)
	switch {
	case errors.Is(err, ErrBudgetExhausted):
		exhausted = true
	case err != nil:
		return out, err
	default:
		t.finish(0, -1) // never sent: costs and teaches nothing
	}
	for _, l := range g.limits {
		left := 0.0
		if !exhausted {
			left = l.max - l.cost(int(used.PromptTokens), float64(used.CompletionTokens), used.Records)
		}
		out.Limits = append(out.Limits, stages.Limit{
			Budget: struct {
				b    *budget
				name string
			}{g.budget, l.name},
			Left: max(left, 0),
			Need: l.cost(int(out.PromptTokens), float64(out.CompletionTokens), int64(out.Records)),
		})
	}
	return out, nil
}
