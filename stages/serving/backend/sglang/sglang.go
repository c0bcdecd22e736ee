// Package sglang is the client for SGLang's native POST /generate: token-id
// prompts in, text, output ids and meta_info out, streaming or not.
package sglang

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/json/jsontext"
	jsonv2 "encoding/json/v2"
	"fmt"
	"io"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
)

// Config shapes a Client. Its URLs are base URLs (http://host:30000), and
// its Model is only recorded: /generate serves one model.
type Config struct {
	pool.Server
	Stream bool
	// SamplingParams are extra sampling_params (min_p, repetition_penalty,
	// stop_token_ids, ...) sent with every request.
	SamplingParams map[string]any
}

// Client implements backend.Backend over /generate.
type Client struct {
	cfg  Config
	pool *pool.Pool
	auth pool.Auth
}

var _ backend.Backend = (*Client)(nil)

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	p, auth, err := cfg.Connect()
	if err != nil {
		return nil, fmt.Errorf("sglang: %w", err)
	}
	return &Client{cfg: cfg, pool: p, auth: auth}, nil
}

type request struct {
	InputIDs       []int          `json:"input_ids"`
	SamplingParams map[string]any `json:"sampling_params"`
	Stream         bool           `json:"stream"`
}

// response is one /generate body or stream event.
type response struct {
	Text      *string         `json:"text"`
	OutputIDs []int           `json:"output_ids"`
	MetaInfo  metaInfo        `json:"meta_info"`
	Error     json.RawMessage `json:"error"`
}

type metaInfo struct {
	FinishReason     *finishReason `json:"finish_reason"`
	PromptTokens     int           `json:"prompt_tokens"`
	CompletionTokens int           `json:"completion_tokens"`
	CachedTokens     int           `json:"cached_tokens"`
	// WeightVersion is the server's --weight-version when it answered:
	// weights updated in place mid-run change it.
	WeightVersion string `json:"weight_version"`
	// raw is the meta_info as sent, for a request that asks for it
	// (backend.Request.MetaInfo): the speculative-decoding figures.
	raw []byte
}

// UnmarshalJSONFrom decodes the fields generate reads, with the
// decoder's options (pool's leniency), and keeps the whole value.
func (m *metaInfo) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	type plain metaInfo
	if err := jsonv2.Unmarshal(v, (*plain)(m), dec.Options()); err != nil {
		return err
	}
	m.raw = append([]byte(nil), v...)
	return nil
}

// finishReason is SGLang's {"type": "stop"|"length"|"abort", "matched": id
// or string, "length": n, "message": ..., "status_code": n}.
type finishReason struct {
	Type       string          `json:"type"`
	Matched    json.RawMessage `json:"matched"`
	Message    string          `json:"message"`
	StatusCode int             `json:"status_code"`
}

// Generate sends req.InputIDs with an explicit max_new_tokens: SGLang's
// default of 128 would silently cut answers.
func (c *Client) Generate(ctx context.Context, req *backend.Request) (*conv.Generation, error) {
	if len(req.InputIDs) == 0 {
		return nil, &backend.Error{Kind: backend.Permanent, Msg: "sglang /generate needs the prompt's token ids: tokenize the dataset first"}
	}
	sp := map[string]any{"max_new_tokens": req.MaxTokens}
	for k, v := range c.cfg.SamplingParams {
		sp[k] = v
	}
	req.Sampling.Put(sp, "sampling_seed")
	body, err := json.Marshal(request{InputIDs: req.InputIDs, SamplingParams: sp, Stream: c.cfg.Stream})
	if err != nil {
		return nil, &backend.Error{Kind: backend.Permanent, Msg: "encode request: " + err.Error()}
	}
	var out *response
	err = c.pool.Post(ctx, "/generate", body, c.auth, func(r io.Reader) error {
		var err error
		if c.cfg.Stream {
			out, err = readStream(r, req.Progress)
			return err
		}
		out = new(response)
		return pool.Decode(r, out)
	})
	if err != nil {
		return nil, err
	}
	return c.generation(out, req)
}

// streamEvent is one /generate stream event, its ids kept as raw JSON:
// SGLang sends every id so far in each event, so only the last event's
// need decoding (parsing them all was a third of a streamed request's JSON).
type streamEvent struct {
	Text      *string        `json:"text"`
	OutputIDs jsontext.Value `json:"output_ids"`
	MetaInfo  metaInfo       `json:"meta_info"`
	Error     jsontext.Value `json:"error"`
}

// readStream folds /generate events into one response. SGLang sends the
// cumulative text and ids in every event by default and only the new ones
// with --incremental-streaming-output; an event whose ids number as many as
// its completion_tokens is cumulative, any other is a delta.
func readStream(r io.Reader, progress func(backend.Progress)) (*response, error) {
	var out response
	var text strings.Builder
	// last holds the ids of the last cumulative event, undecoded until a
	// delta follows or the stream ends; ev's buffers serve every event.
	var last jsontext.Value
	var ev streamEvent
	err := pool.Events(r, func(data []byte) error {
		ev = streamEvent{OutputIDs: ev.OutputIDs[:0], Error: ev.Error[:0]}
		if err := pool.Unmarshal(data, &ev); err != nil {
			return fmt.Errorf("invalid stream event: %w", err)
		}
		if len(ev.Error) > 0 && string(ev.Error) != "null" {
			return &backend.Error{Kind: backend.Retryable, Msg: "stream error: " + pool.Message(data)}
		}
		if countIDs(ev.OutputIDs) == ev.MetaInfo.CompletionTokens {
			last = append(last[:0], ev.OutputIDs...)
			out.OutputIDs = out.OutputIDs[:0]
			if ev.Text != nil {
				text.Reset()
				text.WriteString(*ev.Text)
			}
		} else {
			var err error
			if out.OutputIDs, err = appendIDs(out.OutputIDs, last); err != nil {
				return err
			}
			last = last[:0]
			if out.OutputIDs, err = appendIDs(out.OutputIDs, ev.OutputIDs); err != nil {
				return err
			}
			if ev.Text != nil {
				text.WriteString(*ev.Text)
			}
		}
		out.MetaInfo = ev.MetaInfo
		if progress != nil {
			progress(backend.Progress{Tokens: ev.MetaInfo.CompletionTokens, Exact: true, Chars: text.Len()})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out.MetaInfo.FinishReason == nil {
		return nil, pool.ErrTruncated
	}
	if out.OutputIDs, err = appendIDs(out.OutputIDs, last); err != nil {
		return nil, err
	}
	s := text.String()
	out.Text = &s
	return &out, nil
}

// countIDs counts the elements of a raw JSON array of token ids (numbers,
// so every comma separates two) without parsing them; null and absent are
// none.
func countIDs(raw jsontext.Value) int {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '[' || len(bytes.TrimSpace(raw[1:len(raw)-1])) == 0 {
		return 0
	}
	return bytes.Count(raw, []byte(",")) + 1
}

// appendIDs decodes a raw JSON array of token ids onto ids.
func appendIDs(ids []int, raw jsontext.Value) ([]int, error) {
	if len(raw) == 0 {
		return ids, nil
	}
	var more []int
	if err := pool.Unmarshal(raw, &more); err != nil {
		return ids, fmt.Errorf("invalid stream event: output_ids: %w", err)
	}
	return append(ids, more...), nil
}

func (c *Client) generation(r *response, req *backend.Request) (*conv.Generation, error) {
	fr := r.MetaInfo.FinishReason
	if fr == nil {
		return nil, &backend.Error{Kind: backend.Retryable, Msg: "response without finish_reason"}
	}
	if fr.Type == "abort" {
		e := &backend.Error{Kind: backend.Retryable, Status: fr.StatusCode, Msg: "aborted: " + fr.Message}
		if fr.StatusCode >= 400 && fr.StatusCode < 500 {
			e.Kind = backend.Permanent
		}
		return nil, e
	}
	var text string
	if r.Text != nil {
		text = *r.Text
	}
	g := &conv.Generation{
		FinishReason:     fr.Type,
		PromptTokens:     r.MetaInfo.PromptTokens,
		CompletionTokens: r.MetaInfo.CompletionTokens,
		CachedTokens:     r.MetaInfo.CachedTokens,
		MaxTokens:        req.MaxTokens,
		Model:            c.cfg.Model,
	}
	if v := r.MetaInfo.WeightVersion; v != "" {
		g.Served = &conv.Served{WeightVersion: v}
	}
	g.Reasoning, g.Content = pool.SplitThink(text, c.cfg.ThinkStart, c.cfg.ThinkEnd)
	matched := -1
	if len(fr.Matched) > 0 && json.Unmarshal(fr.Matched, &matched) != nil {
		matched = -1 // a stop string
	}
	g.OutputIDs = pool.TrimStop(r.OutputIDs, fr.Type, matched, c.cfg.StopTokenIDs, req.StopIDs)
	if req.MetaInfo != nil {
		req.MetaInfo(r.MetaInfo.raw)
	}
	return g, nil
}
