// Package sim is a deterministic fake target model. An answer's text,
// reasoning, tool call, finish reason and token counts are a pure function
// of the prompt, the model's seed and the request's max tokens, so the
// in-process backend and the simulated HTTP server give the same answer and
// tests can recompute what a stored response must be.
package sim

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

// Config shapes a Model. It is the one declaration of the simulated
// model's settings: an `api: sim` endpoint's options embed it, sim-server's
// flags are bound from it (Flags), and both take its defaults, which New
// also fills in for a field left zero, since none of them can be 0.
type Config struct {
	Seed uint64 `yaml:"seed" flag:"seed" doc:"seeds the answers: an answer is a pure function of prompt, seed and max tokens"`
	// MeanTokens is the mean natural completion length in sim tokens.
	MeanTokens int `yaml:"mean_tokens" flag:"mean-tokens" default:"300" doc:"mean answer length in tokens"`
	// Sigma is the lognormal shape of natural lengths: larger means a
	// longer tail.
	Sigma float64 `yaml:"sigma" flag:"sigma" default:"1" doc:"lognormal shape of answer lengths: larger, a longer tail"`
	// MaxLen caps natural lengths, as a model's context would.
	MaxLen int `yaml:"max_len" flag:"max-len" default:"32768" doc:"longest natural answer"`
	// Reasoning is the mean share of an answer spent thinking inside
	// <think>...</think>; 0 makes a non-thinking model.
	Reasoning float64 `yaml:"reasoning" flag:"reasoning" doc:"mean share of an answer spent thinking; 0: a model that does not think"`
	// Context, when set, is the context window: a prompt whose tokens plus
	// max tokens exceed it is rejected, as real servers do.
	Context int `yaml:"context" flag:"context" doc:"context window: prompt plus max tokens beyond it is rejected (400 over HTTP), as servers do; 0: unlimited"`
	// ToolCallRate is the chance of answering with a tool call when the
	// prompt offers tools.
	ToolCallRate float64 `yaml:"tool_call_rate" flag:"tool-call-rate" doc:"chance of a tool call when the prompt offers tools"`
	// EOS is the id an answer that stops ends on (default the sim's own,
	// 3): a real model's end-of-turn id (151645, Qwen3's <|im_end|>) makes
	// the output ids end as that model's do, for tests of the rows made
	// from them. An `api: sim` endpoint answers in sim tokens, so only the
	// HTTP server sets it.
	EOS int `yaml:"-" flag:"eos-id" doc:"id a stopped answer ends on, included in its output ids as SGLang and vLLM include it (0: the -tokenizer model's eos_token, else the sim's own, 3)"`
}

// Model answers prompts; it is immutable and safe for concurrent use.
type Model struct {
	cfg Config
	mu  float64 // lognormal location
}

// New returns a Model with cfg's defaults filled in for its zero fields.
func New(cfg Config) *Model {
	fillDefaults(&cfg)
	if cfg.EOS <= 0 {
		cfg.EOS = EOS
	}
	return &Model{cfg: cfg, mu: math.Log(float64(cfg.MeanTokens)) - cfg.Sigma*cfg.Sigma/2}
}

// Config returns the model's configuration with defaults filled in.
func (m *Model) Config() Config { return m.cfg }

// Prompt is what the model sees. An answer depends on Messages and Tools
// when Messages is set, else on IDs, else on Text: a chat request and a
// token-id request for the same conversation get different answers, since
// the sim cannot invert a real tokenizer.
type Prompt struct {
	Messages []conv.Message
	Tools    []conv.ToolDef
	IDs      []int
	Text     string
	// Rendered, when set, is the prompt as a real model's chat template and
	// tokenizer make it (sim-server -tokenizer): what the server counts
	// and reports. The answer stays a function of the rest.
	Rendered []int
}

// Options are per-request knobs.
type Options struct {
	// MaxTokens cuts the answer, which then finishes with "length"; 0 means
	// the model's MaxLen.
	MaxTokens int
	// NoThinking answers without reasoning, as chat_template_kwargs
	// {"enable_thinking": false} does for a thinking model.
	NoThinking bool
}

// Part says which part of an answer a token belongs to.
type Part uint8

// Parts of an answer, in the order they are produced.
const (
	PartThink     Part = iota // the <think> and </think> markers
	PartReasoning             // text between the markers
	PartContent               // the answer proper
	PartToolArgs              // a tool call's JSON arguments
	PartEnd                   // the end-of-turn token
)

// Token is one produced token.
type Token struct {
	Text string
	ID   int
	Part Part
}

// Answer is a complete generation.
type Answer struct {
	Tokens       []Token
	Reasoning    string
	Content      string
	ToolCalls    []conv.ToolCall
	FinishReason string // "stop", "length" or "tool_calls"
	PromptTokens int
}

// CompletionTokens counts every produced token, think markers and the
// end-of-turn token included, as servers count (and bill) them.
func (a *Answer) CompletionTokens() int { return len(a.Tokens) }

// OutputIDs returns the ids of the produced tokens without the end-of-turn
// token, whether the answer stopped or was cut: the form eaglet records.
func (a *Answer) OutputIDs() []int {
	ids := make([]int, 0, len(a.Tokens))
	for _, t := range a.Tokens {
		if t.Part != PartEnd {
			ids = append(ids, t.ID)
		}
	}
	return ids
}

// Generation converts the answer to the canonical record's form.
func (a *Answer) Generation(model string, maxTokens int) *conv.Generation {
	return &conv.Generation{
		Content:          a.Content,
		Reasoning:        a.Reasoning,
		ToolCalls:        a.ToolCalls,
		FinishReason:     a.FinishReason,
		PromptTokens:     a.PromptTokens,
		CompletionTokens: a.CompletionTokens(),
		OutputIDs:        a.OutputIDs(),
		MaxTokens:        maxTokens,
		Model:            model,
	}
}

// ContextError reports a prompt too long for the model's context.
type ContextError struct{ PromptTokens, MaxTokens, Context int }

func (e *ContextError) Error() string {
	return fmt.Sprintf("this model's maximum context length is %d tokens, but %d were requested (%d in the prompt, %d for the completion)",
		e.Context, e.PromptTokens+e.MaxTokens, e.PromptTokens, e.MaxTokens)
}

// Check returns a *ContextError when p with o does not fit the context.
func (m *Model) Check(p Prompt, o Options) error {
	if m.cfg.Context <= 0 {
		return nil
	}
	if n := p.tokens(); n+o.MaxTokens > m.cfg.Context {
		return &ContextError{PromptTokens: n, MaxTokens: o.MaxTokens, Context: m.cfg.Context}
	}
	return nil
}

// NaturalLength returns how many tokens the model would produce for p with
// no cap: the long-tailed length the scheduler and tests reason about.
func (m *Model) NaturalLength(p Prompt) int {
	r := rng{mix(m.cfg.Seed, p.key())}
	return m.length(&r)
}

func (m *Model) length(r *rng) int {
	n := int(math.Round(math.Exp(m.mu + m.cfg.Sigma*r.norm())))
	return max(1, min(n, m.cfg.MaxLen))
}

// Answer generates the model's answer to p.
func (m *Model) Answer(p Prompt, o Options) *Answer {
	key := mix(m.cfg.Seed, p.key())
	r := rng{key}
	natural := m.length(&r)
	limit := o.MaxTokens
	if limit <= 0 {
		limit = m.cfg.MaxLen
	}
	a := &Answer{PromptTokens: p.tokens(), FinishReason: "stop"}

	var tool *conv.ToolDef
	if len(p.Tools) > 0 && r.float() < m.cfg.ToolCallRate {
		tool = &p.Tools[r.intn(len(p.Tools))]
	}
	reasoning := 0
	if m.cfg.Reasoning > 0 && !o.NoThinking {
		share := min(0.95, m.cfg.Reasoning*(0.5+r.float()))
		// Leave room for both markers, one answer token and EOS.
		reasoning = min(int(float64(natural)*share), natural-4)
	}
	n := min(natural, limit)
	if natural > limit {
		a.FinishReason = "length"
	}
	stopping := a.FinishReason == "stop"
	if stopping {
		n-- // the last token is EOS
	}
	a.Tokens = make([]Token, 0, n)
	emit := func(text string, id int, part Part) bool {
		if len(a.Tokens) == n {
			return false
		}
		a.Tokens = append(a.Tokens, Token{Text: text, ID: id, Part: part})
		return true
	}

	if reasoning > 0 {
		emit(conv.ThinkStart, ThinkStart, PartThink)
		w := newWriter(mix(key, 1), true, false)
		for i := 0; i < reasoning && emit(w.next(), 0, PartReasoning); i++ {
		}
		emit(conv.ThinkEnd, ThinkEnd, PartThink)
	}
	var args []string
	if tool != nil {
		args = Pieces(toolArgs(mix(key, 3)))
		if len(a.Tokens)+len(args)+9 > limit {
			args, tool = nil, nil // the call would not fit: answer in prose
		} else {
			n = len(a.Tokens) + 8 + len(args)
			a.FinishReason, stopping = "tool_calls", true
		}
	}
	w := newWriter(mix(key, 2), false, true)
	for emit(w.next(), 0, PartContent) && (tool == nil || len(a.Tokens) < n-len(args)) {
	}
	for _, p := range args {
		emit(p, 0, PartToolArgs)
	}
	if k := len(a.Tokens) - 1; a.FinishReason == "stop" && k >= 0 && a.Tokens[k].Part == PartContent {
		a.Tokens[k].Text = "."
	}
	if stopping {
		a.Tokens = append(a.Tokens, Token{ID: m.cfg.EOS, Part: PartEnd})
	}

	var reason, content, argText []byte
	for i := range a.Tokens {
		t := &a.Tokens[i]
		if t.ID == 0 {
			t.ID = PieceID(t.Text)
		}
		switch t.Part {
		case PartReasoning:
			reason = append(reason, t.Text...)
		case PartContent:
			content = append(content, t.Text...)
		case PartToolArgs:
			argText = append(argText, t.Text...)
		}
	}
	a.Reasoning, a.Content = string(reason), string(content)
	if tool != nil {
		a.ToolCalls = []conv.ToolCall{{
			ID:        "call_" + hex16(key),
			Name:      tool.Name,
			Arguments: json.RawMessage(argText),
		}}
	}
	return a
}

// toolArgs returns a small JSON object of plausible arguments.
func toolArgs(seed uint64) string {
	w := newWriter(seed, false, false)
	q := ""
	for i := 0; i < 3+int(seed%5); i++ {
		q += w.next()
	}
	b, _ := json.Marshal(map[string]any{"query": q, "limit": 1 + seed%20})
	return string(b)
}

func hex16(v uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := range b {
		b[15-i] = digits[v&15]
		v >>= 4
	}
	return string(b[:])
}

// key hashes what the answer depends on.
func (p *Prompt) key() uint64 {
	h := fnv.New64a()
	var buf [8]byte
	put := func(s string) {
		binary.LittleEndian.PutUint64(buf[:], uint64(len(s)))
		h.Write(buf[:])
		h.Write([]byte(s))
	}
	switch {
	case len(p.Messages) > 0:
		put("messages")
		for _, m := range p.Messages {
			put(m.Role)
			put(m.Content)
			put(m.Reasoning)
			for _, c := range m.ToolCalls {
				put(c.Name)
				put(string(c.Arguments))
			}
		}
		for _, t := range p.Tools {
			put(t.Name)
		}
	case len(p.IDs) > 0:
		put("ids")
		for _, id := range p.IDs {
			binary.LittleEndian.PutUint64(buf[:], uint64(id))
			h.Write(buf[:])
		}
	default:
		put("text")
		put(p.Text)
	}
	return h.Sum64()
}

// TokenIDs returns the prompt as the sim tokenizes it: as many ids as it
// counts, with ids below the first word id framing the conversation (the
// chat template's special tokens), so a server can report them.
func (p *Prompt) TokenIDs() []int {
	switch {
	case p.Rendered != nil:
		return p.Rendered
	case len(p.Messages) > 0:
		ids := []int{4, 5, 6}
		for _, m := range p.Messages {
			ids = append(ids, 7, 8, 9, 10)
			ids = append(ids, Tokenize(m.Content)...)
			ids = append(ids, Tokenize(m.Reasoning)...)
			if t := framing(m); t != "" {
				ids = append(ids, Tokenize(t)...)
			}
		}
		if len(p.Tools) > 0 {
			ids = append(ids, Tokenize(toolsText(p.Tools))...)
		}
		return ids
	case len(p.IDs) > 0:
		return p.IDs
	}
	return Tokenize(p.Text)
}

// tokens counts the prompt as a chat template would: each message's text
// plus four tokens of framing, three for the generation prompt, and tool
// calls, tool results and tools as the template writes them (framing,
// toolsText).
func (p *Prompt) tokens() int {
	switch {
	case p.Rendered != nil:
		return len(p.Rendered)
	case len(p.Messages) > 0:
		n := 3
		for _, m := range p.Messages {
			n += 4 + Count(m.Content) + Count(m.Reasoning) + Count(framing(m))
		}
		if len(p.Tools) > 0 {
			n += Count(toolsText(p.Tools))
		}
		return n
	case len(p.IDs) > 0:
		return len(p.IDs)
	}
	return Count(p.Text)
}

// toolsPreamble is what a chat template writes around the tool definitions
// (Qwen's words; Llama's and DeepSeek's are as long): a real server's
// prompt_tokens counts it, so a client that renders the template counts
// it too, and a simulator that left it out read fewer tokens than the
// client sent, the sign of a prompt cut to the context.
const toolsPreamble = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
	"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n</tools>\n\n" +
	"For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
	"<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>"

// toolsText is the tools as a chat template renders them: the preamble and
// each definition as OpenAI's JSON, one a line.
func toolsText(tools []conv.ToolDef) string {
	b := []byte(toolsPreamble)
	for _, t := range tools {
		j, err := json.Marshal(struct {
			Type     string       `json:"type"`
			Function conv.ToolDef `json:"function"`
		}{"function", t})
		if err != nil { // parameters that are not JSON: count them as text
			j = []byte(t.Name + " " + t.Description + " " + string(t.Parameters))
		}
		b = append(append(b, '\n'), j...)
	}
	return string(b)
}

// framing is what a chat template writes around a message's tool calls,
// or around a tool's result (Qwen's tags; other templates' are as long).
func framing(m conv.Message) string {
	var b []byte
	for _, c := range m.ToolCalls {
		b = append(b, "<tool_call>\n{\"name\": \""...)
		b = append(b, c.Name...)
		b = append(b, "\", \"arguments\": "...)
		b = append(b, c.Arguments...)
		b = append(b, "}\n</tool_call>"...)
	}
	if m.Role == conv.Tool {
		b = append(b, "<tool_response>\n\n</tool_response>"...)
	}
	return string(b)
}
