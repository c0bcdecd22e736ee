package generate

import (
	"context"
	"fmt"
	"slices"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/dataset"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/stages/generate/budget"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
	"github.com/eaglet-dev/eaglet/stages/serving/endpoint"
)

// answerer asks an endpoint for a record's answers as the stage's options
// say: the last turn, or every assistant turn, each conditioned on the
// target's own earlier answers.
type answerer struct {
	opts      *Options
	ep        *endpoint.Endpoint
	client    *endpoint.Client
	maxTokens int
	// tok counts tokens a server did not report; nil when not configured.
	tok *tokenizer.Tokenizer
	// tmpl renders the turns after the first into token ids for an API
	// that takes ids; nil without a tokenizer that has a chat template.
	tmpl *chat.Template
	// stopIDs are the ids the model stops on, from its files (the stage's
	// tokenizer, else the tokenize stage's): trimmed from stopped answers.
	stopIDs []int
}

// render turns a conversation the tokenize stage did not see (a turn after
// the first) into prompt ids for an API that takes ids.
func (a *answerer) render(msgs []conv.Message, tools []conv.ToolDef) ([]int, error) {
	if a.tmpl == nil {
		return nil, &backend.Error{Kind: backend.Permanent, Msg: fmt.Sprintf("this record answers several turns and endpoint %s takes token ids, which the tokenize stage makes for the first turn only: set `tokenizer:` on the generate stage (the tokenize stage's model directory) so each later turn is rendered with its chat template", a.ep.Spec.Name)}
	}
	enc, err := a.tmpl.Encode(msgs, tools, true)
	if err != nil {
		return nil, &backend.Error{Kind: backend.Permanent, Msg: "render a later turn: " + err.Error()}
	}
	return enc.IDs, nil
}

// answers is how many answers converse asks for: the last turn, or each
// assistant turn with turns "all", plus one per queued user turn.
func (a *answerer) answers(rec *conv.Record) int {
	base, followUps := dataset.SplitTurns(rec.Prompt())
	n := 1 + len(followUps)
	if a.opts.Turns == "all" {
		for i, m := range base {
			if regenerated(i, m) || (a.opts.ToolTurns == "regenerate" && i > 0 && m.Role == conv.Assistant && len(m.ToolCalls) > 0) {
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
func (a *answerer) converse(ctx context.Context, rec *conv.Record, t *budget.Ticket, tl *endpoint.Tally, keep *answersSoFar) (*conv.Record, error) {
	base, followUps := dataset.SplitTurns(rec.Prompt())
	steps := 0
	var spent int
	var turns []conv.Turn
	// asked are the answers so far, in order; a record of several keeps
	// them in keep as they come, and takes those an interrupted run kept
	// before asking the rest.
	var asked []*conv.Generation
	// turn keeps an answer that a later one follows, at its place in the
	// conversation, with the ids it was given and produced.
	turn := func(at int, gen *conv.Generation, sent int) {
		turns = append(turns, conv.Turn{Message: at, FinishReason: gen.FinishReason, PromptTokens: gen.PromptTokens,
			CompletionTokens: gen.CompletionTokens, OutputIDs: gen.OutputIDs, SentIDs: sent, PromptIDs: gen.PromptIDs})
	}
	var lastSent int
	ask := func(msgs []conv.Message, ids []int) (*conv.Generation, error) {
		if ids == nil && a.ep.TakesIDs {
			var err error
			if ids, err = a.render(msgs, rec.Tools); err != nil {
				return nil, err
			}
		}
		steps++
		lastSent = len(ids)
		if gen, ok := keep.kept(steps); ok {
			asked = append(asked, gen)
			spent += gen.CompletionTokens
			return gen, nil
		}
		if keep != nil && len(asked) > 0 && stages.Stopping(ctx) {
			// The run is stopping and the answers so far are kept: the next
			// run asks the rest, rather than this one holding Ctrl-C for
			// every turn a long conversation has left.
			keep.flush()
			return nil, stages.ErrInterrupted
		}
		req := &backend.Request{Key: rec.Key, Messages: msgs, Tools: rec.Tools, InputIDs: ids,
			MaxTokens: a.maxTokens, StopIDs: a.stopIDs, ChatTemplateKwargs: a.opts.ChatTemplateKwargs, Sampling: backend.Sampling{
				Temperature: a.opts.Temperature, TopP: a.opts.TopP, TopK: a.opts.TopK, Stop: a.opts.Stop, Seed: a.opts.Seed}}
		if t != nil {
			done := spent
			req.Progress = func(p backend.Progress) { t.Update(done, p) }
			req.Sent = func() { t.SentNow(done) }
		}
		gen, err := a.client.Ask(ctx, req, tl)
		if err == nil && !a.ep.TakesIDs {
			gen.SentMessages = true
		}
		if err == nil {
			err = a.ep.TruncatedPrompt(gen, sentTokens(rec, msgs, ids, steps))
		}
		if err == nil {
			a.recount(gen)
			gen.MaxTokens = a.maxTokens
			spent += gen.CompletionTokens
			asked = append(asked, gen)
			keep.save(asked)
		}
		return gen, err
	}
	var convo []conv.Message
	// ended is the answer that ended the conversation early: the target
	// answered a source tool-call turn otherwise than the source did, so
	// the recorded tool results no longer follow.
	var ended *conv.Generation
	if a.opts.Turns == "all" {
		for _, m := range base {
			switch {
			case regenerated(len(convo), m):
				gen, err := ask(convo, nil)
				if err != nil {
					return nil, err
				}
				turn(len(convo), gen, lastSent)
				m = gen.Message()
			case a.opts.ToolTurns == "regenerate" && m.Role == conv.Assistant && len(m.ToolCalls) > 0 && len(convo) > 0:
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
	keep.drop()
	return &out, nil
}

// recount fills in the completion tokens a server did not report, with
// the target's tokenizer: the output ids when the server gave them, else the
// text (which re-tokenizes close to, not exactly as, the model produced it),
// plus the end-of-turn token when the answer stopped.
func (a *answerer) recount(gen *conv.Generation) {
	if gen.CompletionTokens > 0 || a.tok == nil {
		return
	}
	n := len(gen.OutputIDs)
	if n == 0 {
		n = a.tok.Count(gen.Reasoning, false) + a.tok.Count(gen.Content, false)
	}
	if gen.FinishReason == "stop" {
		n++
	}
	gen.CompletionTokens = n
}
