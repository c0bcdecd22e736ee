package server

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/sim"
)

// generateRequest is the part of SGLang's GenerateReqInput the sim reads.
type generateRequest struct {
	Text           json.RawMessage `json:"text"`
	InputIDs       json.RawMessage `json:"input_ids"`
	SamplingParams struct {
		MaxNewTokens *int     `json:"max_new_tokens"`
		Temperature  *float64 `json:"temperature"`
	} `json:"sampling_params"`
	Stream bool            `json:"stream"`
	RID    json.RawMessage `json:"rid"`
}

// sglangDefaultMaxNewTokens is SGLang's default output cap on /generate.
const sglangDefaultMaxNewTokens = 128

// generate serves SGLang's POST /generate for a single prompt. The text is
// the raw completion (no reasoning parser runs on /generate, so thinking
// stays inline) and output_ids end with the end-of-turn id when the answer
// stopped, which finish_reason.matched names. With a drafter the final
// meta_info reports the speculation, as SGLang reports it when the
// request finishes.
func (s *Server) generate(w http.ResponseWriter, r *http.Request) {
	var req generateRequest
	f, ok := s.readRequest(w, r, &req, false)
	if !ok {
		return
	}
	var p sim.Prompt
	if len(req.InputIDs) > 0 && string(req.InputIDs) != "null" {
		if err := json.Unmarshal(req.InputIDs, &p.IDs); err != nil {
			s.badRequest(w, false, "input_ids: batches are not simulated; send one list of ints")
			return
		}
	} else if err := json.Unmarshal(req.Text, &p.Text); err != nil || p.Text == "" {
		s.badRequest(w, false, "either text or input_ids should be provided (batches are not simulated)")
		return
	}
	maxTokens := sglangDefaultMaxNewTokens
	if m := req.SamplingParams.MaxNewTokens; m != nil {
		maxTokens = *m
	}
	a, ok := s.answer(w, false, &p, sim.Options{MaxTokens: maxTokens})
	if !ok {
		return
	}
	var rid string
	if json.Unmarshal(req.RID, &rid) != nil || rid == "" {
		rid = newID("sim", a)
	}
	sp := s.speculate(&p, a, req.SamplingParams.Temperature)
	out := &generateOutput{a: a, rid: rid, maxTokens: maxTokens, eos: s.cfg.Model.Config().EOS, spec: sp, weightVersion: s.cfg.Stack.WeightVersion}

	if !req.Stream {
		if err := s.produce(r.Context(), a, sp, maxTokens, func(int) error { return nil }); err != nil {
			return
		}
		if f == faultStreamError {
			s.errorStatus(w, false, http.StatusInternalServerError, "", "simulated scheduler abort")
			return
		}
		s.finished(a, sp)
		writeBody(w, f, out.chunk(len(a.Tokens), 0, true))
		return
	}

	e := startSSE(w)
	sent := 0
	err := s.produce(r.Context(), a, sp, maxTokens, func(n int) error {
		if e.streamFault(f, n, len(a.Tokens), map[string]any{"error": map[string]any{"message": "simulated abort mid-stream"}}) {
			return errStop
		}
		from := 0
		if s.cfg.Incremental {
			from = sent
		}
		sent = n
		return e.event(out.chunk(n, from, n == len(a.Tokens)))
	})
	if err != nil {
		return
	}
	s.finished(a, sp)
	e.done()
}

type generateOutput struct {
	a         *sim.Answer
	rid       string
	maxTokens int
	// eos is the id a stopped answer ends on, which finish_reason.matched
	// names.
	eos int
	// spec is the answer's speculation, nil without a drafter.
	spec *sim.Speculation
	// weightVersion is the server's, as SGLang reports it in meta_info.
	weightVersion string
}

// chunk renders tokens [from, n) in /generate's response shape.
func (o *generateOutput) chunk(n, from int, final bool) map[string]any {
	var text strings.Builder
	ids := make([]int, 0, n-from)
	for _, t := range o.a.Tokens[from:n] {
		text.WriteString(t.Text)
		ids = append(ids, t.ID)
	}
	var finish any
	if final {
		finish = o.finishReason()
	}
	return map[string]any{
		"text":       text.String(),
		"output_ids": ids,
		"meta_info":  o.metaInfo(n, finish, final),
	}
}

// finishReason is a finished answer's finish_reason in meta_info.
func (o *generateOutput) finishReason() map[string]any {
	if o.a.FinishReason == "length" {
		return map[string]any{"type": "length", "length": o.maxTokens}
	}
	return map[string]any{"type": "stop", "matched": o.eos}
}

// metaInfo is SGLang's meta_info for the first n tokens, with the
// speculation once the request is finished.
func (o *generateOutput) metaInfo(n int, finish any, finished bool) map[string]any {
	reasoning := 0
	for _, t := range o.a.Tokens[:n] {
		if t.Part == sim.PartReasoning || t.Part == sim.PartThink {
			reasoning++
		}
	}
	meta := map[string]any{
		"id":                o.rid,
		"finish_reason":     finish,
		"prompt_tokens":     o.a.PromptTokens,
		"completion_tokens": n,
		"cached_tokens":     0,
		"reasoning_tokens":  reasoning,
		"weight_version":    o.weightVersion,
	}
	if finished {
		addSpecMeta(meta, o.spec, n)
	}
	return meta
}
