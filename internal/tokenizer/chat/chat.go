// Package chat renders a model's own Jinja chat template over canonical
// conversations and tokenizes the result, marking the tokens the assistant
// generated, as EAGLE-3 trainers expect.
package chat

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
)

// Template is a compiled chat template bound to its tokenizer. It is safe
// for concurrent use.
type Template struct {
	tmpl *jinja.Template
	src  string
	tok  *tokenizer.Tokenizer
	vars map[string]jinja.Value
	ends []string // end-of-turn token strings, longest first
	// stops are the ids the model ends an answer with (StopIDs).
	stops []int
	form  form
}

// ErrNoTemplate means neither the tokenizer's config nor the caller gave a
// chat template.
var ErrNoTemplate = errors.New("no chat template")

// ErrMaskUnaligned means the loss mask could not be placed: the template
// does not render a conversation's prefixes as prefixes of the whole.
var ErrMaskUnaligned = errors.New("loss mask: template output is not prefix-stable")

type options struct {
	source string
	now    func() time.Time
	vars   map[string]any
	kwargs map[string]json.RawMessage
}

// An Option configures New.
type Option func(*options)

// WithSource renders src instead of the tokenizer's own chat template.
func WithSource(src string) Option { return func(o *options) { o.source = src } }

// WithNow pins the clock strftime_now reads (templates print today's date
// into system prompts), so renders are reproducible.
func WithNow(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithVar passes an extra template variable, as apply_chat_template's
// keyword arguments do (enable_thinking, reasoning_effort, ...). value is
// a bool, int, float64, string or JSON-like []any / map[string]any.
func WithVar(name string, value any) Option {
	return func(o *options) {
		if o.vars == nil {
			o.vars = map[string]any{}
		}
		o.vars[name] = value
	}
}

// WithKwargs passes apply_chat_template's keyword arguments (chat_template_kwargs:
// enable_thinking, reasoning_effort, thinking, ...), each value JSON, decoded
// as Python's json.loads would (1 an int, 1.0 a float, key order kept).
func WithKwargs(kwargs map[string]json.RawMessage) Option {
	return func(o *options) { o.kwargs = kwargs }
}

// Reserved names the template gets from the conversation itself; a kwarg
// of that name is an error, as in transformers.
var reserved = []string{"messages", "tools", "documents", "add_generation_prompt"}

// endOfTurn lists the tokens known to close an assistant turn.
var endOfTurn = []string{"<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|end|>", "<|return|>", "<|call|>",
	"<｜end▁of▁sentence｜>", "<end_of_turn>", "</s>", "<|endoftext|>"}

// New compiles the tokenizer's chat template (or WithSource's).
func New(tok *tokenizer.Tokenizer, opts ...Option) (*Template, error) {
	o := options{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	cfg := tok.Config()
	src := o.source
	if src == "" {
		src = cfg.ChatTemplate
	}
	if src == "" {
		return nil, ErrNoTemplate
	}
	tmpl, err := jinja.Compile(pyFilterSource(src))
	if err != nil {
		return nil, templateError(src, err)
	}
	t := &Template{tmpl: tmpl, src: src, tok: tok, vars: map[string]jinja.Value{}}
	for name, s := range map[string]string{"bos_token": cfg.BOSToken, "eos_token": cfg.EOSToken, "pad_token": cfg.PadToken, "unk_token": cfg.UnkToken} {
		if s != "" {
			t.vars[name] = jinja.NewString(s)
		}
	}
	now := o.now
	t.vars["strftime_now"] = jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), fmt.Errorf("strftime_now: want one format string")
		}
		return jinja.NewString(strftime(args[0].AsString(), now())), nil
	})
	for name, v := range o.vars {
		t.vars[name] = jinja.FromGoValue(v)
	}
	for name, raw := range o.kwargs {
		if slices.Contains(reserved, name) {
			return nil, fmt.Errorf("template kwarg %q: the template gets %s from the conversation", name, name)
		}
		v, err := jsonValue(raw)
		if err != nil {
			return nil, fmt.Errorf("template kwarg %q: %w", name, err)
		}
		t.vars[name] = v
	}
	for name, v := range pyCallables {
		t.vars[name] = v
	}
	t.form = formOf(src)
	seen := map[string]bool{}
	for _, s := range append([]string{cfg.EOSToken}, endOfTurn...) {
		if _, ok := tok.TokenID(s); ok && s != "" && !seen[s] {
			seen[s] = true
			t.ends = append(t.ends, s)
		}
	}
	t.stops = StopIDs(tok)
	return t, nil
}

// StopIDs lists the ids the model ends an answer with: the end-of-turn
// tokens the template closes turns with, the tokenizer's eos_token and
// generation_config.json's eos_token_id. A server may or may not include
// the one it stopped on in the output ids it returns; recorded answers
// never do, so the end-of-turn the template writes is there once.
func (t *Template) StopIDs() []int { return t.stops }

// StopIDs is Template.StopIDs for a tokenizer without a chat template: its
// eos_token, the known end-of-turn tokens it has, and
// generation_config.json's eos_token_id.
func StopIDs(tok *tokenizer.Tokenizer) []int {
	var ids []int
	add := func(id int) {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	for _, s := range append([]string{tok.Config().EOSToken}, endOfTurn...) {
		if id, ok := tok.TokenID(s); ok && s != "" {
			add(id)
		}
	}
	for _, id := range tok.Config().EOSTokenIDs {
		add(id)
	}
	return ids
}

// PrintsDate reports whether the template prints the date (strftime_now),
// so its renders depend on the day unless the clock is pinned.
func (t *Template) PrintsDate() bool { return strings.Contains(t.src, "strftime_now") }

// Render returns the template's text for a conversation. With
// addGenerationPrompt the text ends where the assistant's answer begins.
func (t *Template) Render(messages []conv.Message, tools []conv.ToolDef, addGenerationPrompt bool) (string, error) {
	return t.render(messages, tools, addGenerationPrompt, -1)
}

// render is Render with messages[answer] (none when -1) given as the
// server's answer (messageValue).
func (t *Template) render(messages []conv.Message, tools []conv.ToolDef, addGenerationPrompt bool, answer int) (string, error) {
	data := make(map[string]jinja.Value, len(t.vars)+3)
	for k, v := range t.vars {
		data[k] = v
	}
	msgs := make([]jinja.Value, len(messages))
	for i, m := range messages {
		v, err := messageValue(m, t.form, i == answer)
		if err != nil {
			return "", fmt.Errorf("message %d: %w", i, err)
		}
		msgs[i] = v
	}
	data["messages"] = jinja.NewList(msgs)
	data["tools"] = jinja.None()
	if len(tools) > 0 {
		list := make([]jinja.Value, len(tools))
		for i, tl := range tools {
			v, err := toolValue(tl)
			if err != nil {
				return "", err
			}
			list[i] = v
		}
		data["tools"] = jinja.NewList(list)
	}
	data["add_generation_prompt"] = jinja.NewBool(addGenerationPrompt)
	out, err := t.tmpl.RenderValues(data)
	if err != nil {
		return "", templateError(t.src, err)
	}
	return out, nil
}

// PromptIDs renders the conversation with the generation prompt and
// returns its token ids: what the model is given to answer.
func (t *Template) PromptIDs(messages []conv.Message, tools []conv.ToolDef) ([]int, error) {
	text, err := t.Render(messages, tools, true)
	if err != nil {
		return nil, err
	}
	return t.tok.Encode(text, false), nil
}

// Encoded is a rendered, tokenized conversation.
type Encoded struct {
	Text string
	IDs  []int
	// LossMask is 1 for each token the assistant generated, its end-of-turn
	// token included, and 0 for the rest.
	LossMask []int
}

// Encode renders and tokenizes a conversation and marks the assistant's
// tokens. Templates already hold the BOS token, so none is added.
func (t *Template) Encode(messages []conv.Message, tools []conv.ToolDef, addGenerationPrompt bool) (*Encoded, error) {
	text, err := t.Render(messages, tools, addGenerationPrompt)
	if err != nil {
		return nil, err
	}
	spans, err := t.assistantSpans(messages, tools, text)
	if err != nil {
		return nil, err
	}
	ids := t.tok.Encode(text, false)
	mask, err := t.maskTokens(text, ids, spans)
	if err != nil {
		return nil, err
	}
	return &Encoded{Text: text, IDs: ids, LossMask: mask}, nil
}

// assistantSpans returns the byte ranges of text the assistant generated.
// An answer starts where the generation prompt of the conversation before
// it ends, and stops after the last end-of-turn token before the next
// non-assistant message starts (or, when the template renders history
// differently from a last turn, after the first end-of-turn token).
func (t *Template) assistantSpans(messages []conv.Message, tools []conv.ToolDef, text string) ([][2]int, error) {
	var spans [][2]int
	for k, m := range messages {
		if m.Role != conv.Assistant {
			continue
		}
		prompt, err := t.Render(messages[:k], tools, true)
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(text, prompt) {
			return nil, fmt.Errorf("message %d: %w", k, ErrMaskUnaligned)
		}
		start := len(prompt)
		next := k + 1
		for next < len(messages) && messages[next].Role == conv.Assistant {
			next++
		}
		limit := -1
		if upto, err := t.Render(messages[:next], tools, false); err == nil && strings.HasPrefix(text, upto) && len(upto) >= start {
			limit = len(upto)
		}
		end := -1
		if limit >= 0 {
			end = t.lastEnd(text[start:limit])
		}
		if end < 0 {
			end = t.firstEnd(text[start:])
		}
		if end < 0 {
			if limit < 0 {
				return nil, fmt.Errorf("message %d: no end-of-turn token: %w", k, ErrMaskUnaligned)
			}
			end = limit - start
		}
		spans = append(spans, [2]int{start, start + end})
	}
	return spans, nil
}

// lastEnd returns the offset just past the last end-of-turn token in s, or -1.
func (t *Template) lastEnd(s string) int {
	best := -1
	for _, e := range t.ends {
		if i := strings.LastIndex(s, e); i >= 0 && i+len(e) > best {
			best = i + len(e)
		}
	}
	return best
}

// firstEnd returns the offset just past the first end-of-turn token in s, or -1.
func (t *Template) firstEnd(s string) int {
	best, at := -1, len(s)+1
	for _, e := range t.ends {
		if i := strings.Index(s, e); i >= 0 && i < at {
			best, at = i+len(e), i
		}
	}
	return best
}

// maskTokens marks the tokens overlapping any span. Token boundaries come
// from the bytes each token stands for; when those do not spell the text
// (a normalizer changed it, or SentencePiece's ▁), the text is encoded in
// pieces cut at the span edges, accepted only if that matches ids.
func (t *Template) maskTokens(text string, ids []int, spans [][2]int) ([]int, error) {
	mask := make([]int, len(ids))
	if len(spans) == 0 {
		return mask, nil
	}
	if bounds, ok := t.tokenBounds(text, ids); ok {
		si := 0
		for i, b := range bounds {
			for si < len(spans) && spans[si][1] <= b[0] {
				si++
			}
			if si < len(spans) && b[1] > spans[si][0] && b[0] < spans[si][1] {
				mask[i] = 1
			}
		}
		return mask, nil
	}
	var pieced []int
	pieced, mask = pieced[:0], mask[:0]
	at := 0
	for _, sp := range spans {
		before := t.tok.Encode(text[at:sp[0]], false)
		inside := t.tok.Encode(text[sp[0]:sp[1]], false)
		pieced = append(append(pieced, before...), inside...)
		for range before {
			mask = append(mask, 0)
		}
		for range inside {
			mask = append(mask, 1)
		}
		at = sp[1]
	}
	rest := t.tok.Encode(text[at:], false)
	pieced = append(pieced, rest...)
	for range rest {
		mask = append(mask, 0)
	}
	if len(pieced) != len(ids) {
		return nil, ErrMaskUnaligned
	}
	for i := range ids {
		if pieced[i] != ids[i] {
			return nil, ErrMaskUnaligned
		}
	}
	return mask, nil
}

// tokenBounds returns each token's byte range in text when the tokens'
// bytes concatenate to exactly text, allowing for the space SentencePiece
// tokenizers put before each run of text (their "▁" prefix).
func (t *Template) tokenBounds(text string, ids []int) ([][2]int, bool) {
	bounds := make([][2]int, len(ids))
	at := 0
	for i, id := range ids {
		b := t.tok.TokenBytes(id)
		if !strings.HasPrefix(text[at:], b) && strings.HasPrefix(b, " ") {
			b = b[1:]
		}
		if !strings.HasPrefix(text[at:], b) {
			return nil, false
		}
		bounds[i] = [2]int{at, at + len(b)}
		at += len(b)
	}
	return bounds, at == len(text)
}

// Answer is the last message of a conversation, an assistant turn, as the
// template renders it after its context.
type Answer struct {
	// Prompt is the context rendered with the generation prompt: what the
	// model was given.
	Prompt string
	// Text follows Prompt: the answer as rendered (reasoning included
	// where the template renders it), up to and with its end-of-turn marker.
	Text string
	// End is the end-of-turn marker Text ends with, "" when the template
	// writes none the tokenizer knows.
	End string
}

// RenderAnswer renders messages, whose last is an assistant turn the
// server returned, split where the model's answer starts and where its
// turn ends. The answer's tool-call arguments are the server's text for
// templates that print text (Qwen3's string branch, DeepSeek-V3's
// concatenation) and the object parsed from it for the others. Text after
// the end-of-turn marker (a newline before the next turn) belongs to no
// one and is left out. It fails with ErrMaskUnaligned when the context's
// render is not a prefix of the whole.
func (t *Template) RenderAnswer(messages []conv.Message, tools []conv.ToolDef) (*Answer, error) {
	n := len(messages)
	if n == 0 || messages[n-1].Role != conv.Assistant {
		return nil, fmt.Errorf("render answer: the conversation does not end with an assistant turn")
	}
	full, err := t.render(messages, tools, false, n-1)
	if err != nil {
		return nil, err
	}
	prompt, err := t.Render(messages[:n-1], tools, true)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(full, prompt) {
		return nil, fmt.Errorf("message %d: %w", n-1, ErrMaskUnaligned)
	}
	rest := full[len(prompt):]
	a := &Answer{Prompt: prompt, Text: rest}
	if end := t.lastEnd(rest); end >= 0 {
		a.Text = rest[:end]
		for _, e := range t.ends {
			if strings.HasSuffix(a.Text, e) {
				a.End = e
				break
			}
		}
	}
	return a, nil
}

// Tokens tokenizes text with the template's tokenizer, adding no special
// tokens (templates write their own).
func (t *Template) Tokens(text string) []int { return t.tok.Encode(text, false) }

// Hash identifies the template's source, for manifests.
func (t *Template) Hash() string {
	h := sha256.Sum256([]byte(t.src))
	return hex.EncodeToString(h[:12])
}

// Tokenizer is the tokenizer the template encodes with.
func (t *Template) Tokenizer() *tokenizer.Tokenizer { return t.tok }
