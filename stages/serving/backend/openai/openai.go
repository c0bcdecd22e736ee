// Package openai is the client for OpenAI-compatible servers (vLLM, SGLang,
// OpenRouter): POST /chat/completions with messages, or /completions with a
// token-id prompt, streaming or not.
package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
)

// Config shapes a Client. Its URLs end in /v1 (https://openrouter.ai/api/v1).
type Config struct {
	pool.Server
	// Completions uses /completions with req.InputIDs as the prompt.
	Completions bool
	Stream      bool
	// ReturnTokenIDs asks vLLM and SGLang for the completion's token ids.
	ReturnTokenIDs bool
	// ChatTemplateKwargs turn thinking on or off: {"enable_thinking": false}
	// for Qwen, {"thinking": true} for Kimi and DeepSeek.
	ChatTemplateKwargs map[string]any
	// Extra fields merged into every request body (reasoning, provider, ...).
	Extra map[string]any
}

// Client implements backend.Backend over the OpenAI API.
type Client struct {
	cfg  Config
	pool *pool.Pool
	auth pool.Auth
	path string
}

var _ backend.Backend = (*Client)(nil)

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	p, auth, err := cfg.Connect()
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	c := &Client{cfg: cfg, pool: p, auth: auth, path: "/chat/completions"}
	if cfg.Completions {
		c.path = "/completions"
	}
	return c, nil
}

// Generate sends req with max_tokens always set: /completions defaults to
// 16 tokens and chat has no cap at all.
func (c *Client) Generate(ctx context.Context, req *backend.Request) (*conv.Generation, error) {
	body, err := c.body(req)
	if err != nil {
		return nil, err
	}
	var res *result
	err = c.pool.Post(ctx, c.path, body, c.auth, func(r io.Reader) error {
		var err error
		if c.streams(req) {
			res, err = readStream(r, req.Progress)
		} else {
			res, err = readBody(r)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return c.generation(res, req)
}

func (c *Client) body(req *backend.Request) ([]byte, error) {
	b := map[string]any{"model": c.cfg.Model, "max_tokens": req.MaxTokens}
	for k, v := range c.cfg.Extra {
		b[k] = v
	}
	if c.cfg.Completions {
		if len(req.InputIDs) == 0 {
			return nil, &backend.Error{Kind: backend.Permanent, Msg: "/completions needs the prompt's token ids: tokenize the dataset first"}
		}
		b["prompt"] = req.InputIDs
	} else {
		b["messages"] = conv.WireMessages(req.Messages)
		if len(req.Tools) > 0 {
			b["tools"] = conv.ToolsToOpenAI(req.Tools)
		}
		if kw := mergeKwargs(c.cfg.ChatTemplateKwargs, req.ChatTemplateKwargs); kw != nil {
			b["chat_template_kwargs"] = kw
		}
	}
	req.Sampling.Put(b, "seed")
	if c.cfg.ReturnTokenIDs {
		b["return_token_ids"] = true
	}
	if c.streams(req) {
		b["stream"] = true
		b["stream_options"] = map[string]any{"include_usage": true}
	}
	if req.MetaInfo != nil && !c.cfg.Completions {
		b["return_meta_info"] = true
	}
	out, err := json.Marshal(b)
	if err != nil {
		return nil, &backend.Error{Kind: backend.Permanent, Msg: "encode request: " + err.Error()}
	}
	return out, nil
}

// mergeKwargs returns the request's kwargs over the endpoint's.
func mergeKwargs(base, over map[string]any) map[string]any {
	if len(over) == 0 {
		return base
	}
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// streams reports whether req is sent as a stream: as the endpoint says,
// unless it asks for SGLang's meta_info, which SGLang refuses to stream.
func (c *Client) streams(req *backend.Request) bool {
	return c.cfg.Stream && (req.MetaInfo == nil || c.cfg.Completions)
}

func (c *Client) generation(r *result, req *backend.Request) (*conv.Generation, error) {
	switch r.finish {
	case "":
		return nil, &backend.Error{Kind: backend.Retryable, Msg: "response without finish_reason"}
	case "error":
		return nil, &backend.Error{Kind: backend.Retryable, Msg: "generation failed: " + r.errMsg}
	}
	g := &conv.Generation{
		Content:          r.content.String(),
		Reasoning:        r.reasoning.String(),
		FinishReason:     r.finish,
		PromptTokens:     r.usage.PromptTokens,
		CompletionTokens: r.usage.CompletionTokens,
		MaxTokens:        req.MaxTokens,
		Model:            c.cfg.Model,
		OutputIDs:        pool.TrimStop(r.ids, r.finish, r.stopID, c.cfg.StopTokenIDs, req.StopIDs),
		PromptIDs:        r.promptIDs,
		CutsPrompts:      r.cutsPrompts,
	}
	if d := r.usage.PromptTokensDetails; d != nil {
		g.CachedTokens = d.CachedTokens
	}
	if r.provider != "" {
		g.Served = &conv.Served{Provider: r.provider}
	}
	if g.CompletionTokens == 0 && r.ids != nil {
		g.CompletionTokens = len(r.ids)
	}
	if g.Reasoning == "" {
		g.Reasoning, g.Content = pool.SplitThink(g.Content, c.cfg.ThinkStart, c.cfg.ThinkEnd)
	}
	for _, tc := range r.tools {
		g.ToolCalls = append(g.ToolCalls, serverCall(tc.id, tc.name, tc.args.String()))
	}
	if req.MetaInfo != nil {
		req.MetaInfo(r.metaInfo)
	}
	return g, nil
}

// serverCall is a call the server returned, its arguments text kept as the
// server wrote it: the store writes Arguments back compacted and with
// HTML escaped ("<" as \u003c), so a template that prints arguments as
// text, and the rows handoff writes, get that text from ArgumentsText.
// Text that is not JSON is kept as a JSON string rather than lost.
func serverCall(id, name, text string) conv.ToolCall {
	c := conv.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(text)}
	if !json.Valid(c.Arguments) {
		c.Arguments, _ = json.Marshal(text)
	}
	// Text the store writes back the same needs no copy.
	if stored, _ := json.Marshal(c.Arguments); string(stored) != text {
		c.ArgumentsText = text
	}
	return c
}
