package openai

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
)

// result accumulates a response, whole or streamed.
type result struct {
	content, reasoning strings.Builder
	tools              []*toolCall
	ids                []int
	promptIDs          []int
	finish             string
	// stopID is the stop token id the server says it matched (vLLM's
	// stop_reason, SGLang's matched_stop), or -1.
	stopID int
	// cutsPrompts marks a server known to cut over-long prompts (ollama).
	cutsPrompts bool
	errMsg      string
	usage       usage
	// metaInfo is SGLang's meta_info of a chat choice, asked for with
	// return_meta_info.
	metaInfo []byte
	// provider is who answered behind a router (OpenRouter's "provider").
	provider string
}

type toolCall struct {
	id, name string
	args     strings.Builder
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// message is a chat message or delta, or a completions choice's text.
// Reasoning arrives as reasoning_content (SGLang, older vLLM) or reasoning
// (vLLM, OpenRouter).
type message struct {
	Content          *string               `json:"content"`
	ReasoningContent *string               `json:"reasoning_content"`
	Reasoning        *string               `json:"reasoning"`
	ToolCalls        []conv.OpenAIToolCall `json:"tool_calls"`
}

type choice struct {
	Message      *message `json:"message"`
	Delta        *message `json:"delta"`
	Text         *string  `json:"text"`
	FinishReason *string  `json:"finish_reason"`
	TokenIDs     []int    `json:"token_ids"`
	// StopReason (vLLM) and MatchedStop (SGLang) name what stopped the
	// answer: a token id, a stop string, or null for the model's EOS.
	StopReason  json.RawMessage `json:"stop_reason"`
	MatchedStop json.RawMessage `json:"matched_stop"`
	// MetaInfo is SGLang's, with return_meta_info: its speculative
	// decoding figures.
	MetaInfo json.RawMessage `json:"meta_info"`
}

type body struct {
	Choices []choice `json:"choices"`
	// PromptTokenIDs come with return_token_ids: in the body, or in a
	// stream's first event.
	PromptTokenIDs []int           `json:"prompt_token_ids"`
	Usage          *usage          `json:"usage"`
	Error          json.RawMessage `json:"error"`
	Object         string          `json:"object"`
	Message        string          `json:"message"`
	// SystemFingerprint is "fp_ollama" on ollama, which cuts over-long
	// prompts to its context where vLLM and SGLang refuse them.
	SystemFingerprint string `json:"system_fingerprint"`
	// Provider names the provider OpenRouter routed the request to, in
	// the body and in every stream event.
	Provider string `json:"provider"`
}

func readBody(r io.Reader) (*result, error) {
	var b body
	if err := pool.Decode(r, &b); err != nil {
		return nil, err
	}
	res := &result{stopID: -1}
	if err := res.add(&b); err != nil {
		return nil, err
	}
	return res, nil
}

// readStream folds chat.completion.chunk or text_completion events into a
// result, reporting progress: exact from token ids or usage when the server
// sends them, else the text so far and one token per event that carried
// some. Servers put several tokens in one event under load (vLLM's
// stream interval, SGLang's batching), so the event count is only a lower
// bound; the budget estimates tokens from the text.
func readStream(r io.Reader, progress func(backend.Progress)) (*result, error) {
	res := &result{stopID: -1}
	events, chars := 0, 0
	err := pool.Events(r, func(data []byte) error {
		var b body
		if err := pool.Unmarshal(data, &b); err != nil {
			return fmt.Errorf("invalid stream event: %w", err)
		}
		if err := res.add(&b); err != nil {
			return err
		}
		if n := res.chars(); n > chars {
			chars = n
			events++
		}
		if progress != nil {
			p := backend.Progress{Tokens: events, Chars: chars}
			switch {
			case res.ids != nil:
				p.Tokens, p.Exact = len(res.ids), true
			case b.Usage != nil && b.Usage.CompletionTokens > 0:
				p.Tokens, p.Exact = b.Usage.CompletionTokens, true
			}
			progress(p)
		}
		if res.finish == "error" {
			return pool.Done
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// chars is the length of the text received: content, reasoning and tool
// call arguments.
func (res *result) chars() int {
	n := res.content.Len() + res.reasoning.Len()
	for _, t := range res.tools {
		n += t.args.Len()
	}
	return n
}

// add folds one body or event into the result.
func (res *result) add(b *body) error {
	if len(b.Error) > 0 && string(b.Error) != "null" || b.Object == "error" {
		msg := b.Message
		if msg == "" {
			msg = pool.Message([]byte(`{"error":` + string(b.Error) + `}`))
		}
		// An error inside a 200 body or stream (OpenRouter, vLLM mid-stream):
		// the work is lost and worth sending again.
		res.finish, res.errMsg = "error", msg
		return nil
	}
	if b.Usage != nil {
		res.usage = *b.Usage
	}
	if b.Provider != "" {
		res.provider = b.Provider
	}
	if b.SystemFingerprint == "fp_ollama" {
		res.cutsPrompts = true
	}
	if b.PromptTokenIDs != nil {
		res.promptIDs = b.PromptTokenIDs
	}
	for _, ch := range b.Choices {
		m := ch.Message
		if m == nil {
			m = ch.Delta
		}
		if ch.Text != nil {
			res.content.WriteString(*ch.Text)
		}
		if m != nil {
			if err := res.addMessage(m); err != nil {
				return err
			}
		}
		if ch.TokenIDs != nil {
			res.ids = append(res.ids, ch.TokenIDs...)
			if res.ids == nil {
				res.ids = []int{}
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			res.finish = *ch.FinishReason
		}
		if len(ch.MetaInfo) > 0 && string(ch.MetaInfo) != "null" {
			res.metaInfo = ch.MetaInfo
		}
		for _, raw := range []json.RawMessage{ch.StopReason, ch.MatchedStop} {
			var id int
			if len(raw) > 0 && json.Unmarshal(raw, &id) == nil {
				res.stopID = id
			}
		}
	}
	return nil
}

func (res *result) addMessage(m *message) error {
	if m.Content != nil {
		res.content.WriteString(*m.Content)
	}
	if m.ReasoningContent != nil {
		res.reasoning.WriteString(*m.ReasoningContent)
	} else if m.Reasoning != nil {
		res.reasoning.WriteString(*m.Reasoning)
	}
	for i, tc := range m.ToolCalls {
		idx := i
		if tc.Index != nil {
			idx = *tc.Index
		}
		if idx < 0 || idx > 1000 {
			return &backend.Error{Kind: backend.Retryable, Msg: fmt.Sprintf("tool call index %d out of range", idx)}
		}
		for len(res.tools) <= idx {
			res.tools = append(res.tools, &toolCall{})
		}
		t := res.tools[idx]
		if tc.ID != "" {
			t.id = tc.ID
		}
		if tc.Function.Name != "" {
			t.name = tc.Function.Name
		}
		t.args.WriteString(tc.Function.Arguments)
	}
	return nil
}
