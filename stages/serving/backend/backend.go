// Package backend defines how the generate stage talks to a model: one
// request in, one answer out, with errors that say whether and when to retry.
// Each API (the in-process simulator, SGLang's /generate, OpenAI-compatible
// chat and completions) implements Backend in its own package.
package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

// Backend generates one answer. Implementations are safe for concurrent use.
// A returned error is an *Error when the backend can classify it; anything
// else is treated as retryable.
type Backend interface {
	Generate(ctx context.Context, req *Request) (*conv.Generation, error)
}

// Request is one generation request.
type Request struct {
	// Key is the record key, sent along for tracing (never part of the prompt).
	Key      string
	Messages []conv.Message
	Tools    []conv.ToolDef
	// InputIDs is the tokenized prompt, for APIs that take token ids.
	InputIDs []int
	// MaxTokens is the output cap; always sent, since servers' defaults are tiny.
	MaxTokens int
	// StopIDs are the ids the model stops on, from its own files (the
	// tokenizer's eos, generation_config's eos_token_id, the template's
	// end-of-turn): trimmed from the end of an answer that stopped, as
	// servers differ in whether the output ids they return include it.
	StopIDs []int
	Sampling
	// ChatTemplateKwargs go to the server's chat template with a chat
	// request, over the backend's own (enable_thinking, reasoning_effort).
	ChatTemplateKwargs map[string]any
	// Progress, when set, is called with what a streaming answer has shown
	// each time it grows. A non-streaming answer shows nothing until it is
	// whole.
	Progress func(Progress)
	// Sent, when set, is called each time the request leaves for the
	// server, once per attempt: how long an answer has been running says
	// how far it is when nothing streams.
	Sent func()
	// MetaInfo, when set, is called with the answered request's meta_info
	// as the server sent it (SGLang's, where speculative decoding reports
	// its verify steps and accepted drafts), or nil when it sent none. A
	// chat request then asks for it (return_meta_info) and does not
	// stream: SGLang returns it only to a request without a stream.
	MetaInfo func(raw []byte)
}

// Sampling is how a request samples; nil and empty fields are left to the
// server.
type Sampling struct {
	Temperature *float64
	TopP        *float64
	TopK        *int
	Stop        []string
	Seed        *int
}

// Put sets the parameters that are set in m, a request body or SGLang's
// sampling_params, in the names both APIs use; the seed goes under seedKey
// ("seed" for OpenAI, "sampling_seed" for SGLang).
func (s Sampling) Put(m map[string]any, seedKey string) {
	if s.Temperature != nil {
		m["temperature"] = *s.Temperature
	}
	if s.TopP != nil {
		m["top_p"] = *s.TopP
	}
	if s.TopK != nil {
		m["top_k"] = *s.TopK
	}
	if len(s.Stop) > 0 {
		m["stop"] = s.Stop
	}
	if s.Seed != nil {
		m[seedKey] = *s.Seed
	}
}

// Progress is what a streaming answer has shown so far.
type Progress struct {
	// Tokens is the completion tokens produced so far: the count when
	// Exact (token ids or usage in the stream), else a lower bound, one
	// per stream event, since a server may put several tokens in one.
	Tokens int
	Exact  bool
	// Chars is the text received so far (reasoning, content and tool
	// arguments), from which tokens are estimated when they are not exact.
	Chars int
}

// Kind classifies a failed request.
type Kind int

// Kinds of failure; Retryable ones are sent again after a backoff.
const (
	Retryable Kind = iota // connection error, timeout, 5xx, truncated body
	Permanent             // 4xx such as a prompt longer than the context
	Fatal                 // nothing will succeed: credits exhausted, bad key
)

// Error is a classified backend failure.
type Error struct {
	Kind Kind
	// Status is the HTTP status, or 0.
	Status int
	// RetryAfter is the server's requested wait, or 0.
	RetryAfter time.Duration
	// NotSent marks a request that never left (every URL is resting after
	// failures): waiting for it is not a failed attempt.
	NotSent bool
	// Moved marks a request cancelled because its URL was taken out of
	// service as hung: it is sent again at once to another URL, and is not
	// a failed attempt.
	Moved bool
	Msg   string
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("http %d: %s", e.Status, e.Msg)
	}
	return e.Msg
}

// Classify returns the kind of err and the wait the server asked for.
func Classify(err error) (Kind, time.Duration) {
	var be *Error
	if errors.As(err, &be) {
		return be.Kind, be.RetryAfter
	}
	if errors.Is(err, context.Canceled) {
		return Permanent, 0
	}
	return Retryable, 0
}
