package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
)

// errStop ends a stream that a fault has already broken.
var errStop = errors.New("stream broken by a fault")

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatRequest struct {
	Model               string            `json:"model"`
	Messages            []chatMessage     `json:"messages"`
	Tools               []conv.OpenAITool `json:"tools"`
	MaxTokens           *int              `json:"max_tokens"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	Stream              bool              `json:"stream"`
	StreamOptions       *streamOptions    `json:"stream_options"`
	ChatTemplateKwargs  map[string]any    `json:"chat_template_kwargs"`
	ReturnTokenIDs      bool              `json:"return_token_ids"`
	Temperature         *float64          `json:"temperature"`
	// ReturnMetaInfo asks SGLang's chat route for each choice's
	// meta_info, the speculation's figures included; streams refuse it.
	ReturnMetaInfo bool            `json:"return_meta_info"`
	Prompt         json.RawMessage `json:"prompt"` // completions only
}

// chatMessage is a request's message; vLLM and OpenRouter spell
// reasoning "reasoning".
type chatMessage struct {
	conv.OpenAIMessage
	Reasoning string `json:"reasoning,omitempty"`
}

// messages converts the wire messages back to the canonical form, so the
// sim answers a chat request exactly as the in-process backend answers the
// same conversation.
func (req *chatRequest) messages() ([]conv.Message, []conv.ToolDef, error) {
	msgs := make([]conv.Message, len(req.Messages))
	for i, m := range req.Messages {
		content, err := contentText(m.Content)
		if err != nil {
			return nil, nil, err
		}
		msgs[i] = conv.Message{Role: m.Role, Content: content, Reasoning: m.ReasoningContent,
			ToolCallID: m.ToolCallID, Name: m.Name}
		if m.Reasoning != "" {
			msgs[i].Reasoning = m.Reasoning
		}
		for _, c := range m.ToolCalls {
			msgs[i].ToolCalls = append(msgs[i].ToolCalls, conv.ToolCall{
				ID: c.ID, Name: c.Function.Name, Arguments: json.RawMessage(c.Function.Arguments)})
		}
	}
	tools := make([]conv.ToolDef, len(req.Tools))
	for i, t := range req.Tools {
		tools[i] = t.Function
	}
	return msgs, tools, nil
}

// contentText accepts a string, null, or a list of text parts.
func contentText(content any) (string, error) {
	switch c := content.(type) {
	case nil:
		return "", nil
	case string:
		return c, nil
	case []any:
		var b strings.Builder
		for _, p := range c {
			part, ok := p.(map[string]any)
			if !ok {
				return "", errors.New("content must be a string or a list of text parts")
			}
			text, _ := part["text"].(string)
			b.WriteString(text)
		}
		return b.String(), nil
	}
	return "", errors.New("content must be a string or a list of text parts")
}

func (req *chatRequest) maxTokens(def int) int {
	switch {
	case req.MaxCompletionTokens != nil:
		return *req.MaxCompletionTokens
	case req.MaxTokens != nil:
		return *req.MaxTokens
	}
	return def
}

func usage(a *sim.Answer, n int) map[string]any {
	reasoning := 0
	for _, t := range a.Tokens[:n] {
		if t.Part == sim.PartReasoning || t.Part == sim.PartThink {
			reasoning++
		}
	}
	return map[string]any{
		"prompt_tokens": a.PromptTokens, "completion_tokens": n, "total_tokens": a.PromptTokens + n,
		"completion_tokens_details": map[string]any{"reasoning_tokens": reasoning},
	}
}

// chat serves POST /v1/chat/completions. Without max_tokens the answer is
// capped only by the model, as chat endpoints have no default cap.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	f, ok := s.readRequest(w, r, &req, true)
	if !ok {
		return
	}
	if req.Stream && req.ReturnMetaInfo {
		s.badRequest(w, true, "return_meta_info is not supported with streaming. Please set stream=false when using return_meta_info=true.")
		return
	}
	msgs, tools, err := req.messages()
	if err != nil || len(msgs) == 0 {
		s.badRequest(w, true, "messages: a non-empty list of messages is required")
		return
	}
	maxTokens := req.maxTokens(0)
	prompt := sim.Prompt{Messages: msgs, Tools: tools}
	a, ok := s.answer(w, true, &prompt,
		sim.Options{MaxTokens: maxTokens, NoThinking: thinkingOff(req.ChatTemplateKwargs)})
	if !ok {
		return
	}
	if maxTokens == 0 {
		maxTokens = s.cfg.Model.Config().MaxLen
	}
	c := &chatOutput{s: s, a: a, req: &req, id: newID("chatcmpl", a), created: time.Now().Unix(),
		spec: s.speculate(&prompt, a, req.Temperature), maxTokens: maxTokens}
	if req.ReturnTokenIDs {
		c.promptIDs = prompt.TokenIDs()
	}
	if !req.Stream {
		if err := s.produce(r.Context(), a, c.spec, maxTokens, func(int) error { return nil }); err != nil {
			return
		}
		s.finished(a, c.spec)
		writeBody(w, f, c.full(f))
		return
	}
	c.stream(w, r, f, maxTokens)
}

type chatOutput struct {
	s       *Server
	a       *sim.Answer
	req     *chatRequest
	id      string
	created int64
	// promptIDs are reported with return_token_ids, as vLLM does: in the
	// body, or in a stream's first event.
	promptIDs  []int
	sentPrompt bool
	// spec is the answer's speculation, nil without a drafter.
	spec      *sim.Speculation
	maxTokens int
}

func (c *chatOutput) frame(object string, choices []map[string]any) map[string]any {
	f := map[string]any{"id": c.id, "object": object, "created": c.created, "model": c.s.cfg.Name, "choices": choices}
	if p := c.s.cfg.Stack.Provider; p != "" {
		f["provider"] = p
	}
	if c.promptIDs != nil && !c.sentPrompt {
		f["prompt_token_ids"] = c.promptIDs
		c.sentPrompt = object == "chat.completion.chunk"
	}
	return f
}

func (c *chatOutput) toolCalls() []conv.OpenAIToolCall {
	var out []conv.OpenAIToolCall
	for i, tc := range c.a.ToolCalls {
		out = append(out, conv.OpenAIToolCall{Index: &i, ID: tc.ID, Type: "function",
			Function: conv.OpenAIFunction{Name: tc.Name, Arguments: string(tc.Arguments)}})
	}
	return out
}

// full renders the non-streaming response.
func (c *chatOutput) full(f fault) map[string]any {
	msg := map[string]any{"role": "assistant", "content": c.a.Content}
	switch c.s.cfg.Reasoning {
	case ReasoningInline:
		if c.a.Reasoning != "" || len(c.a.Tokens) > 0 && c.a.Tokens[0].ID == sim.ThinkStart {
			msg["content"] = c.inline()
		}
	default:
		if c.a.Reasoning != "" {
			msg[c.s.cfg.Reasoning] = c.a.Reasoning
		}
	}
	if tc := c.toolCalls(); tc != nil {
		msg["tool_calls"] = tc
	}
	choice := map[string]any{"index": 0, "message": msg, "finish_reason": c.a.FinishReason, "logprobs": nil}
	if c.req.ReturnTokenIDs {
		choice["token_ids"] = ids(c.a.Tokens)
	}
	if c.req.ReturnMetaInfo {
		choice["meta_info"] = c.metaInfo()
	}
	out := c.frame("chat.completion", []map[string]any{choice})
	out["usage"] = usage(c.a, len(c.a.Tokens))
	if f == faultStreamError {
		choice["finish_reason"] = "error"
		out["error"] = map[string]any{"code": 502, "message": "Provider returned error"}
	}
	return out
}

// metaInfo is the choice's meta_info as SGLang returns it: /generate's,
// whose finish_reason the tool-call parser has rewritten in place when the
// answer called a tool.
func (c *chatOutput) metaInfo() map[string]any {
	o := &generateOutput{a: c.a, rid: c.id, maxTokens: c.maxTokens, eos: c.s.cfg.Model.Config().EOS, spec: c.spec, weightVersion: c.s.cfg.Stack.WeightVersion}
	finish := o.finishReason()
	if c.a.FinishReason == "tool_calls" {
		finish = map[string]any{"type": "tool_calls", "matched": nil}
	}
	return o.metaInfo(len(c.a.Tokens), finish, true)
}

// inline renders reasoning and content as a model without a reasoning
// parser emits them.
func (c *chatOutput) inline() string {
	var b strings.Builder
	for _, t := range c.a.Tokens {
		if t.Part != sim.PartToolArgs {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func ids(ts []sim.Token) []int {
	out := make([]int, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

// stream sends the answer as chat.completion.chunk events: one delta per
// run of reasoning, content or tool-call tokens, the finish reason, then
// usage when asked for, then [DONE].
func (c *chatOutput) stream(w http.ResponseWriter, r *http.Request, f fault, maxTokens int) {
	e := startSSE(w)
	if c.s.cfg.Comments {
		e.raw(": OPENROUTER PROCESSING\n\n")
	}
	includeUsage := c.req.StreamOptions != nil && c.req.StreamOptions.IncludeUsage
	withUsage := func(m map[string]any) map[string]any {
		if includeUsage {
			m["usage"] = nil
		}
		return m
	}
	e.event(withUsage(c.frame("chat.completion.chunk", []map[string]any{{
		"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}, "finish_reason": nil, "logprobs": nil}})))
	errEvent := c.frame("chat.completion.chunk", []map[string]any{{
		"index": 0, "delta": map[string]any{"content": ""}, "finish_reason": "error"}})
	errEvent["error"] = map[string]any{"code": "server_error", "message": "Provider disconnected unexpectedly"}

	sent, toolStarted := 0, false
	var pending []int // ids of tokens with no text of their own
	err := c.s.produce(r.Context(), c.a, c.spec, maxTokens, func(n int) error {
		if e.streamFault(f, n, len(c.a.Tokens), errEvent) {
			return errStop
		}
		for sent < n {
			part := c.a.Tokens[sent].Part
			var text strings.Builder
			runIDs := pending
			pending = nil
			for sent < n && c.a.Tokens[sent].Part == part {
				text.WriteString(c.a.Tokens[sent].Text)
				runIDs = append(runIDs, c.a.Tokens[sent].ID)
				sent++
			}
			delta := map[string]any{}
			switch {
			case part == sim.PartEnd || part == sim.PartThink && c.s.cfg.Reasoning != ReasoningInline:
				pending = runIDs
				continue
			case part == sim.PartReasoning && c.s.cfg.Reasoning != ReasoningInline:
				delta[c.s.cfg.Reasoning] = text.String()
			case part == sim.PartToolArgs:
				call := conv.OpenAIToolCall{Index: new(int), Function: conv.OpenAIFunction{Arguments: text.String()}}
				if !toolStarted {
					tc := c.a.ToolCalls[0]
					call.ID, call.Type, call.Function.Name = tc.ID, "function", tc.Name
					toolStarted = true
				}
				delta["tool_calls"] = []conv.OpenAIToolCall{call}
			default:
				delta["content"] = text.String()
			}
			choice := map[string]any{"index": 0, "delta": delta, "finish_reason": nil, "logprobs": nil}
			if c.req.ReturnTokenIDs {
				choice["token_ids"] = runIDs
			}
			if err := e.event(withUsage(c.frame("chat.completion.chunk", []map[string]any{choice}))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return
	}
	c.s.finished(c.a, c.spec)
	choice := map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": c.a.FinishReason, "logprobs": nil}
	if c.req.ReturnTokenIDs {
		choice["token_ids"] = append([]int{}, pending...)
	}
	e.event(withUsage(c.frame("chat.completion.chunk", []map[string]any{choice})))
	if includeUsage {
		last := c.frame("chat.completion.chunk", []map[string]any{})
		last["usage"] = usage(c.a, len(c.a.Tokens))
		e.event(last)
	}
	e.done()
}
