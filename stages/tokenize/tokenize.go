// Package tokenize is the stage that renders each record's prompt with the
// target model's chat template and tokenizes it with the target's own
// tokenizer, so generation can send token ids and plans know prompt sizes.
package tokenize

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
)

func init() {
	stages.Register(stages.Define("tokenize",
		"render prompts with the target's chat template and tokenize them (prompt ids, prompt token counts)",
		check, newTokenize))
}

// Options of tokenize.
type Options struct {
	// Tokenizer is a model directory (tokenizer.json, tokenizer_config.json)
	// or a tokenizer file, relative to the spec.
	Tokenizer string `yaml:"tokenizer" doc:"model directory or file"`
	// ChatTemplate overrides the tokenizer's own chat template (a Jinja file).
	ChatTemplate string `yaml:"chat_template" doc:"a Jinja file overriding the model's"`
	// MaxPromptTokens drops prompts longer than this (an expression; 0: no limit).
	MaxPromptTokens specs.Expr `yaml:"max_prompt_tokens" eval:"int" doc:"expression; longer prompts are dropped with the reason"`
	// Date is the day, YYYY-MM-DD, templates that print today's date
	// (strftime_now) render; such templates need it, so a rerun on another
	// day renders the same ids. Part of the fingerprint.
	Date string `yaml:"date" doc:"YYYY-MM-DD, the day templates that print the date render; required by such templates"`
	// ChatTemplateKwargs are passed to the template as apply_chat_template's
	// kwargs (enable_thinking, reasoning_effort, thinking). Part of the fingerprint.
	ChatTemplateKwargs map[string]any `yaml:"chat_template_kwargs" doc:"{enable_thinking: false}, {reasoning_effort: high}, ..."`
}

func check(spec *specs.Spec, st *specs.Stage, opts *Options) error {
	if opts.Tokenizer == "" {
		return &specs.Error{Pos: st.Pos, Msg: fmt.Sprintf("stage %s: tokenize needs `tokenizer:` (a model directory with tokenizer.json)", st.Name)}
	}
	for _, f := range []struct{ key, path string }{{"tokenizer", opts.Tokenizer}, {"chat_template", opts.ChatTemplate}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(spec.Resolve(f.path)); err != nil {
			return &specs.Error{Pos: st.OptionPos(f.key), Msg: fmt.Sprintf("stage %s: %s: %v", st.Name, f.key, err)}
		}
	}
	if opts.Date != "" {
		if _, err := chat.ParseDate(opts.Date); err != nil {
			return &specs.Error{Pos: st.OptionPos("date"), Msg: fmt.Sprintf("stage %s: %v", st.Name, err)}
		}
	}
	if _, err := chat.KwargsOf(opts.ChatTemplateKwargs); err != nil {
		return &specs.Error{Pos: st.OptionPos("chat_template_kwargs"), Msg: fmt.Sprintf("stage %s: %v", st.Name, err)}
	}
	return nil
}

// Tokenize fills in each record's prompt ids.
type Tokenize struct {
	max   int
	paths []string
	// load makes the template, with the tokenizer it loads, once the
	// stage runs (Start): an up-to-date run need not load it.
	load     func() (*chat.Template, error)
	loadOnce sync.Once
	tmpl     *chat.Template
	loadErr  error
}

var (
	_ stages.Mapper        = (*Tokenize)(nil)
	_ stages.Fingerprinter = (*Tokenize)(nil)
	_ stages.Starter       = (*Tokenize)(nil)
)

func newTokenize(inst *stages.Instance, o *Options) (stages.Stage, error) {
	if n := o.MaxPromptTokens.Int(); n < 0 {
		return nil, o.MaxPromptTokens.Errorf("max_prompt_tokens evaluates to %d; want 0 (no limit) or more", n)
	}
	dir := inst.Spec.Resolve(o.Tokenizer)
	tpl := inst.Spec.Resolve(o.ChatTemplate)
	t := &Tokenize{max: o.MaxPromptTokens.Int(), paths: []string{dir}}
	if tpl != "" {
		t.paths = append(t.paths, tpl)
	}
	t.load = func() (*chat.Template, error) {
		// Half a second for a 150k vocabulary: once per run, shared
		// with the handoff reading the same directory.
		tok, err := inst.Shared.Tokenizer(dir)
		if err != nil {
			return nil, err
		}
		src := ""
		if tpl != "" {
			b, err := os.ReadFile(tpl)
			if err != nil {
				return nil, err
			}
			src = string(b)
		}
		tmpl, err := chat.Pinned(tok, src, o.Date, o.ChatTemplateKwargs, inst.Shared.Now)
		if err != nil {
			return nil, &specs.Error{Pos: inst.Stage.Pos, Msg: err.Error()}
		}
		return tmpl, nil
	}
	return t, nil
}

// Start loads the tokenizer and makes the template, once; the engine
// calls it before the stage runs, and Process does if none did.
func (t *Tokenize) Start() error {
	t.loadOnce.Do(func() { t.tmpl, t.loadErr = t.load() })
	return t.loadErr
}

// Fingerprint hashes the tokenizer and template files: another tokenizer
// means other ids, so everything downstream is redone.
func (t *Tokenize) Fingerprint() (string, error) { return tokenizer.FilesHash(t.paths...) }

// Process renders the prompt with the generation prompt and tokenizes it.
func (t *Tokenize) Process(_ context.Context, rec *conv.Record) (stages.Outcome, error) {
	if err := t.Start(); err != nil {
		return stages.Outcome{}, err
	}
	ids, err := t.tmpl.PromptIDs(rec.Prompt(), rec.Tools)
	if err != nil {
		return stages.Outcome{}, err
	}
	if t.max > 0 && len(ids) > t.max {
		return stages.Outcome{Status: stages.Dropped, Reason: fmt.Sprintf("prompt over max_prompt_tokens (%d)", t.max)}, nil
	}
	out := *rec
	out.PromptIDs, out.PromptTokens = ids, len(ids)
	return stages.Outcome{Status: stages.Done, Record: &out}, nil
}
