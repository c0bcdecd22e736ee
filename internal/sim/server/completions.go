package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/eaglet-dev/eaglet/internal/sim"
)

// completionsDefaultMaxTokens is the OpenAI (and SGLang) /v1/completions
// default output cap.
const completionsDefaultMaxTokens = 16

// completions serves POST /v1/completions with a text or token-id prompt.
// No reasoning parser runs here: thinking stays inline in the text.
func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	f, ok := s.readRequest(w, r, &req, true)
	if !ok {
		return
	}
	var p sim.Prompt
	if json.Unmarshal(req.Prompt, &p.Text) != nil || p.Text == "" {
		if json.Unmarshal(req.Prompt, &p.IDs) != nil || len(p.IDs) == 0 {
			s.badRequest(w, true, "prompt: a string or a list of token ids is required (batches are not simulated)")
			return
		}
	}
	maxTokens := req.maxTokens(completionsDefaultMaxTokens)
	a, ok := s.answer(w, true, &p, sim.Options{MaxTokens: maxTokens})
	if !ok {
		return
	}
	sp := s.speculate(&p, a, req.Temperature)
	id, created := newID("cmpl", a), time.Now().Unix()
	frame := func(choices []map[string]any) map[string]any {
		return map[string]any{"id": id, "object": "text_completion", "created": created, "model": s.cfg.Name, "choices": choices}
	}
	choice := func(ts []sim.Token, finish any) map[string]any {
		var b strings.Builder
		for _, t := range ts {
			b.WriteString(t.Text)
		}
		c := map[string]any{"index": 0, "text": b.String(), "logprobs": nil, "finish_reason": finish}
		if req.ReturnTokenIDs {
			c["token_ids"] = ids(ts)
		}
		return c
	}

	if !req.Stream {
		if err := s.produce(r.Context(), a, sp, maxTokens, func(int) error { return nil }); err != nil {
			return
		}
		s.finished(a, sp)
		out := frame([]map[string]any{choice(a.Tokens, a.FinishReason)})
		out["usage"] = usage(a, len(a.Tokens))
		writeBody(w, f, out)
		return
	}

	e := startSSE(w)
	if s.cfg.Comments {
		e.raw(": OPENROUTER PROCESSING\n\n")
	}
	errEvent := frame([]map[string]any{{"index": 0, "text": "", "finish_reason": "error"}})
	errEvent["error"] = map[string]any{"code": "server_error", "message": "Provider disconnected unexpectedly"}
	sent := 0
	err := s.produce(r.Context(), a, sp, maxTokens, func(n int) error {
		if e.streamFault(f, n, len(a.Tokens), errEvent) {
			return errStop
		}
		var finish any
		if n == len(a.Tokens) {
			finish = a.FinishReason
		}
		from := sent
		sent = n
		return e.event(frame([]map[string]any{choice(a.Tokens[from:n], finish)}))
	})
	if err != nil {
		return
	}
	s.finished(a, sp)
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		last := frame([]map[string]any{})
		last["usage"] = usage(a, len(a.Tokens))
		e.event(last)
	}
	e.done()
}
