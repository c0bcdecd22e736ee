// Package server is eaglet's simulated inference server: SGLang's native
// /generate and the OpenAI-compatible /v1/chat/completions and
// /v1/completions, answered by the deterministic sim model, with a
// continuous-batching scheduler (running-sequence and KV-cache limits,
// retraction on overflow) and injected faults. Tests drive it over real HTTP
// through httptest; `eaglet sim-server` serves it on a port. With a
// drafter it is a speculative-decoding server as SGLang and vLLM are: it
// reports acceptance per request in SGLang's meta_info and in vLLM's
// Prometheus counters.
package server

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
)

// Reasoning formats of the OpenAI chat route, as different servers send
// a thinking model's reasoning.
const (
	ReasoningContent = "reasoning_content" // SGLang with a reasoning parser
	ReasoningField   = "reasoning"         // vLLM, OpenRouter
	ReasoningInline  = "think"             // no parser: <think>...</think> in content
)

// Config shapes a Server. Zero fields take the documented defaults.
type Config struct {
	Model *sim.Model
	// Template, when set, is a real model's tokenizer and chat template:
	// prompts are counted (prompt_tokens, return_token_ids) as a server of
	// that model counts them, so a client's tokenize stage with the same
	// model agrees with the server; nil counts sim tokens.
	Template *chat.Template
	// Name is the served model name ("sim").
	Name string
	// Speed is decode tokens per second per sequence; 0 answers at once.
	Speed float64
	// PrefillSpeed is the prompt tokens per second the server prefills
	// when sequences are admitted or re-admitted after a retraction (the
	// prompt and all its output again); decoding waits meanwhile, as in
	// SGLang. 0 makes prefill free.
	PrefillSpeed float64
	// MaxRunning caps the sequences decoding at once; 0 is unlimited.
	MaxRunning int
	// KVTokens is the KV-cache capacity in tokens (prompt plus output of
	// every running sequence); 0 is unlimited. When running sequences
	// outgrow it the newest are retracted, queued again and recomputed.
	KVTokens int
	// ClipEstimate caps the output a sequence is expected to still
	// produce when admission reserves cache for it (4096, SGLang's
	// SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION).
	ClipEstimate int
	// Slowdown is how much slower each sequence decodes at a full batch:
	// speed = Speed / (1 + Slowdown * running / MaxRunning).
	Slowdown float64
	// Reasoning is how the chat route returns reasoning (ReasoningContent).
	Reasoning string
	// Incremental makes /generate streams send deltas instead of the
	// cumulative text and ids SGLang sends by default.
	Incremental bool
	// FlatErrors sends OpenAI-route errors as {"object":"error",...}
	// (SGLang, older vLLM) instead of {"error":{...}}.
	FlatErrors bool
	// Comments sends ": OPENROUTER PROCESSING" SSE comment lines, as
	// OpenRouter does while a request waits.
	Comments bool
	// StreamChunk is how many tokens an instant stream puts in one event (8).
	StreamChunk int
	// StreamInterval is the fewest new tokens a timed stream sends in one
	// event (the last may carry fewer), as SGLang's --stream-interval;
	// 0 or 1 sends whatever each scheduler step decoded.
	StreamInterval int
	// APIKey, when set, is required as "Authorization: Bearer KEY".
	APIKey string
	Faults Faults
	// Drafter, when on, makes the server a speculative-decoding one, as
	// SGLang with --speculative-algorithm EAGLE3 or vLLM with a
	// speculative_config: answers, unchanged, decode faster by fewer
	// verify steps; /generate's final meta_info and chat's with
	// return_meta_info report spec_verify_ct and the acceptance figures;
	// /metrics adds vLLM's spec_decode counters.
	Drafter sim.Drafter
	// Stack is what the server says of itself: on SGLang's
	// /get_server_info and /get_model_info, in /generate's meta_info
	// (weight_version), and, with Provider, in every chat response as
	// OpenRouter names the provider that answered.
	Stack Stack
}

// Stack describes the simulated serving stack.
type Stack struct {
	// ModelPath is the checkpoint served (the served name when empty).
	ModelPath string
	// Quantization is SGLang's --quantization ("" is none: null).
	Quantization string
	// WeightVersion is SGLang's --weight-version ("default" when empty).
	WeightVersion string
	// Provider, when set, is sent as OpenRouter's "provider".
	Provider string
}

// Server is an http.Handler serving the simulated APIs.
type Server struct {
	cfg    Config
	mux    *http.ServeMux
	sched  *scheduler
	faults *injector
	spec   *specCounters

	requests, completed, completionTokens atomic.Int64
}

// New returns a server; Close stops its scheduler.
func New(cfg Config) (*Server, error) {
	if cfg.Model == nil {
		return nil, fmt.Errorf("sim server: no model")
	}
	if cfg.Name == "" {
		cfg.Name = "sim"
	}
	switch cfg.Reasoning {
	case "":
		cfg.Reasoning = ReasoningContent
	case ReasoningContent, ReasoningField, ReasoningInline:
	default:
		return nil, fmt.Errorf("sim server: reasoning format %q: want %s, %s or %s",
			cfg.Reasoning, ReasoningContent, ReasoningField, ReasoningInline)
	}
	if cfg.ClipEstimate <= 0 {
		cfg.ClipEstimate = 4096
	}
	if cfg.StreamChunk <= 0 {
		cfg.StreamChunk = 8
	}
	if err := cfg.Faults.validate(); err != nil {
		return nil, err
	}
	if err := cfg.Drafter.Check(); err != nil {
		return nil, fmt.Errorf("sim server: %w", err)
	}
	cfg.Drafter = cfg.Drafter.WithDefaults()
	if cfg.Stack.ModelPath == "" {
		cfg.Stack.ModelPath = cfg.Name
	}
	if cfg.Stack.WeightVersion == "" {
		cfg.Stack.WeightVersion = "default"
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), faults: newInjector(cfg.Faults), spec: newSpecCounters(cfg.Drafter)}
	if cfg.Speed > 0 {
		s.sched = newScheduler(cfg)
	}
	s.mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {})
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("GET /get_server_info", s.serverInfo)
	s.mux.HandleFunc("GET /get_model_info", s.modelInfo)
	s.mux.HandleFunc("GET /metrics", s.metrics)
	s.mux.HandleFunc("GET /sim/stats", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Stats())
	})
	s.mux.HandleFunc("POST /generate", s.auth(s.generate))
	s.mux.HandleFunc("POST /v1/chat/completions", s.auth(s.chat))
	s.mux.HandleFunc("POST /v1/completions", s.auth(s.completions))
	return s, nil
}

// Close stops the scheduler; requests still waiting fail.
func (s *Server) Close() {
	if s.sched != nil {
		s.sched.close()
	}
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Stats are the server's counters since it started.
type Stats struct {
	Requests         int64            `json:"requests"`
	Completed        int64            `json:"completed"`
	CompletionTokens int64            `json:"completion_tokens"`
	Running          int              `json:"running"`
	Queued           int              `json:"queued"`
	PeakRunning      int              `json:"peak_running"`
	KVUsed           int              `json:"kv_used"`
	Retractions      int64            `json:"retractions"`
	NewTokenRatio    float64          `json:"new_token_ratio"`
	RecomputedTokens int64            `json:"recomputed_tokens"`
	Faults           map[string]int64 `json:"faults,omitempty"`
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	var st Stats
	if s.sched != nil {
		st = s.sched.stats()
	}
	st.Requests, st.Completed, st.CompletionTokens = s.requests.Load(), s.completed.Load(), s.completionTokens.Load()
	st.Faults = s.faults.injected()
	return st
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data": []map[string]any{{
			"id": s.cfg.Name, "object": "model", "created": 0, "owned_by": "eaglet-sim",
			"max_model_len": s.cfg.Model.Config().Context,
		}},
	})
}

// SimVersion is the version the server reports on /get_server_info.
const SimVersion = "0.0.0-eaglet-sim"

// serverInfo answers as SGLang's /get_server_info does: its server
// arguments flattened beside "version" (a few of the many it has).
func (s *Server) serverInfo(w http.ResponseWriter, r *http.Request) {
	var quant any
	if q := s.cfg.Stack.Quantization; q != "" {
		quant = q
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"model_path": s.cfg.Stack.ModelPath, "tokenizer_path": s.cfg.Stack.ModelPath, "served_model_name": s.cfg.Name,
		"quantization": quant, "dtype": "auto", "kv_cache_dtype": "auto", "tp_size": 1, "dp_size": 1,
		"weight_version": s.cfg.Stack.WeightVersion, "context_length": s.cfg.Model.Config().Context,
		"internal_states": []any{}, "version": SimVersion,
	})
}

// modelInfo answers as SGLang's /get_model_info.
func (s *Server) modelInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"model_path": s.cfg.Stack.ModelPath, "tokenizer_path": s.cfg.Stack.ModelPath, "is_generation": true,
		"preferred_sampling_params": nil, "weight_version": s.cfg.Stack.WeightVersion,
	})
}

func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	if s.cfg.APIKey == "" {
		return h
	}
	want := []byte("Bearer " + s.cfg.APIKey)
	return func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			writeJSON(w, http.StatusUnauthorized, map[string]any{
				"error": map[string]any{"code": 401, "message": "No auth credentials found or invalid API key"},
			})
			return
		}
		h(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// openAIError writes an error in the OpenAI routes' shape.
func (s *Server) openAIError(w http.ResponseWriter, status int, typ, msg string) {
	if s.cfg.FlatErrors {
		writeJSON(w, status, map[string]any{"object": "error", "message": msg, "type": typ, "param": nil, "code": status})
		return
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": status}})
}

// thinkingOff reads the thinking toggles models use in chat_template_kwargs:
// enable_thinking (Qwen) and thinking (Kimi, DeepSeek).
func thinkingOff(kw map[string]any) bool {
	for _, k := range []string{"enable_thinking", "thinking"} {
		if v, ok := kw[k].(bool); ok && !v {
			return true
		}
	}
	return false
}
