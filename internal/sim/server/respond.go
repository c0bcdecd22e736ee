package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/eaglet-dev/eaglet/internal/sim"
)

// readRequest reads and decodes a body, deciding its fault. A false return
// means the response has been written.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request, v any, openAI bool) (fault, bool) {
	s.requests.Add(1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return noFault, false
	}
	if err := json.Unmarshal(body, v); err != nil {
		s.badRequest(w, openAI, "invalid request body: "+err.Error())
		return noFault, false
	}
	f := s.faults.decide(body)
	switch f {
	case fault500:
		s.errorStatus(w, openAI, http.StatusInternalServerError, "InternalServerError", "simulated internal server error")
	case fault429:
		w.Header().Set("Retry-After", retryAfter(s.cfg.Faults.RetryAfter))
		s.errorStatus(w, openAI, http.StatusTooManyRequests, "rate_limit_exceeded", "simulated rate limit: too many requests")
	case fault402:
		w.Header().Set("Retry-After", retryAfter(s.cfg.Faults.RetryAfter))
		writeJSON(w, http.StatusPaymentRequired, map[string]any{"error": map[string]any{
			"code":     402,
			"message":  "in_flight_budget_exhausted: running requests already fill the in-flight budget; retry after Retry-After",
			"metadata": map[string]any{"limit_source": "openrouter_in_flight_budget"},
		}})
	case faultDrop:
		panic(http.ErrAbortHandler)
	case faultHang:
		var after <-chan time.Time
		if s.cfg.Faults.HangFor > 0 {
			after = time.After(s.cfg.Faults.HangFor)
		}
		select {
		case <-r.Context().Done():
		case <-after:
		}
		panic(http.ErrAbortHandler)
	default:
		return f, true
	}
	return f, false
}

// retryAfter formats a Retry-After header in whole seconds, as HTTP says,
// except that waits under a second (for fast tests) are sent as decimals.
func retryAfter(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
	}
	return strconv.Itoa(int(math.Ceil(d.Seconds())))
}

func (s *Server) badRequest(w http.ResponseWriter, openAI bool, msg string) {
	s.errorStatus(w, openAI, http.StatusBadRequest, "BadRequestError", msg)
}

func (s *Server) errorStatus(w http.ResponseWriter, openAI bool, status int, typ, msg string) {
	if openAI {
		s.openAIError(w, status, typ, msg)
		return
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg}})
}

// answer checks the context and generates, writing a 400 when the prompt
// does not fit.
func (s *Server) answer(w http.ResponseWriter, openAI bool, p *sim.Prompt, o sim.Options) (*sim.Answer, bool) {
	if err := s.render(p); err != nil {
		s.badRequest(w, openAI, err.Error())
		return nil, false
	}
	if err := s.cfg.Model.Check(*p, o); err != nil {
		s.badRequest(w, openAI, err.Error())
		return nil, false
	}
	return s.cfg.Model.Answer(*p, o), true
}

// render counts p's tokens as a server of the real model does when it was
// given one (Config.Template): a chat prompt through the model's template,
// a text prompt encoded; token ids are taken as sent.
func (s *Server) render(p *sim.Prompt) error {
	t := s.cfg.Template
	switch {
	case t == nil || len(p.IDs) > 0:
	case len(p.Messages) > 0:
		ids, err := t.PromptIDs(p.Messages, p.Tools)
		if err != nil {
			return fmt.Errorf("chat template: %w", err)
		}
		p.Rendered = ids
	default:
		p.Rendered = t.Tokens(p.Text)
	}
	return nil
}

// produce runs an answer's n tokens out at the configured speed, faster
// by its speculation's pace, calling emit with the count produced so far
// (in StreamChunk steps when instant).
func (s *Server) produce(ctx context.Context, a *sim.Answer, sp *sim.Speculation, maxTokens int, emit func(n int) error) error {
	n := a.CompletionTokens()
	if s.sched == nil {
		for k := min(s.cfg.StreamChunk, n); ; k = min(k+s.cfg.StreamChunk, n) {
			if err := emit(k); err != nil {
				return err
			}
			if k == n {
				return nil
			}
		}
	}
	return s.sched.wait(ctx, a.PromptTokens, n, maxTokens, pace(sp), emit)
}

func (s *Server) finished(a *sim.Answer, sp *sim.Speculation) {
	s.completed.Add(1)
	s.completionTokens.Add(int64(a.CompletionTokens()))
	s.spec.add(sp)
}

// writeBody writes a complete JSON response, or a broken one when the
// request drew a body fault.
func writeBody(w http.ResponseWriter, f fault, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch f {
	case faultBadJSON:
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("<html>502 upstream hiccup</html>"))
	case faultTruncate:
		// Promise the whole body, send half: the client sees an unexpected EOF.
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		w.Write(b[:len(b)/2])
		panic(http.ErrAbortHandler)
	default:
		w.WriteHeader(http.StatusOK)
		w.Write(b)
	}
}

// sse writes server-sent events.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func startSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (e *sse) event(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return e.raw("data: " + string(b) + "\n\n")
}

func (e *sse) raw(s string) error {
	if _, err := io.WriteString(e.w, s); err != nil {
		return err
	}
	if e.f != nil {
		e.f.Flush()
	}
	return nil
}

func (e *sse) done() error { return e.raw("data: [DONE]\n\n") }

// streamFault breaks a stream half-way through, as the request's fault
// asks. It reports whether the stream must end now.
func (e *sse) streamFault(f fault, n, total int, errEvent any) bool {
	if n < total/2 || total < 2 {
		return false
	}
	switch f {
	case faultTruncate:
		panic(http.ErrAbortHandler)
	case faultBadJSON:
		// Cut inside the event: invalid JSON of no particular route's shape.
		e.raw("data: {\"id\": \n\n")
		return true
	case faultStreamError:
		e.event(errEvent)
		return true
	}
	return false
}

func newID(prefix string, a *sim.Answer) string {
	return fmt.Sprintf("%s-%016x", prefix, time.Now().UnixNano()^int64(len(a.Tokens)))
}
