package serve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
)

// probed is a server for the probes: eaglet's sim, with routes that
// answer as the test says (a status code, or "hang") in front of it, and
// the paths it was asked for.
type probed struct {
	routes map[string]string
	mu     sync.Mutex
	asked  []string
}

func (p *probed) serve(t *testing.T) string {
	t.Helper()
	s, err := server.New(server.Config{Model: sim.New(sim.Config{MeanTokens: 50, Sigma: 1, MaxLen: 1000}), Name: "qwen", APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.asked = append(p.asked, r.Method+" "+r.URL.Path)
		p.mu.Unlock()
		switch answer := p.routes[r.URL.Path]; answer {
		case "":
			s.ServeHTTP(w, r)
		case "hang":
			// Read to the end, or the server does not notice the client leave.
			io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		case "model":
			json.NewEncoder(w).Encode(map[string]any{"model_path": "/models/qwen"})
		case "404":
			http.NotFound(w, r)
		case "503":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "no models":
			w.Write([]byte(`{"object": "list", "data": []}`))
		}
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestServer_Ready: each API's readiness asks what its servers answer
// once loaded, and nothing more.
func TestServer_Ready(t *testing.T) {
	for _, tc := range []struct {
		name   string
		api    API
		routes map[string]string
		asked  string
		err    string
	}{
		{name: "sglang with /model_info", api: SGLang, routes: map[string]string{"/model_info": "model"},
			asked: "GET /health, GET /model_info"},
		{name: "older sglang", api: SGLang, routes: map[string]string{"/model_info": "404", "/get_model_info": "model"},
			asked: "GET /health, GET /model_info, GET /get_model_info"},
		{name: "the sim, as older sglang", api: SGLang, asked: "GET /health, GET /model_info, GET /get_model_info"},
		{name: "sglang-like with neither", api: SGLang, routes: map[string]string{"/get_model_info": "404"},
			asked: "GET /health, GET /model_info, GET /get_model_info, POST /generate"},
		{name: "sglang warming up", api: SGLang, routes: map[string]string{"/health": "503"},
			asked: "GET /health", err: "GET /health: Service Unavailable"},
		{name: "sglang that cannot generate", api: SGLang, routes: map[string]string{"/get_model_info": "404", "/generate": "503"},
			asked: "GET /health, GET /model_info, GET /get_model_info, POST /generate", err: "POST /generate: Service Unavailable"},
		{name: "vllm", api: OpenAI, asked: "GET /health, GET /v1/models"},
		{name: "openai server without /health", api: OpenAI, routes: map[string]string{"/health": "404"}, asked: "GET /health, GET /v1/models"},
		{name: "vllm whose engine died", api: OpenAI, routes: map[string]string{"/health": "503"}, asked: "GET /health", err: "Service Unavailable"},
		{name: "openai server listing nothing yet", api: OpenAI, routes: map[string]string{"/v1/models": "no models"},
			asked: "GET /health, GET /v1/models", err: "no model listed yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &probed{routes: tc.routes}
			s := &Server{API: tc.api, URL: p.serve(t) + tc.api.path(), APIKey: "sk-test"}
			err := s.Ready(context.Background())
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("Ready: %v, want %q", err, tc.err)
			}
			if got := strings.Join(p.asked, ", "); got != tc.asked {
				t.Errorf("asked %s, want %s", got, tc.asked)
			}
			if tc.api == OpenAI && tc.err == "" && s.Model != "qwen" {
				t.Errorf("model %q, want the one /v1/models lists", s.Model)
			}
		})
	}
}

// TestServer_Generates: a server whose health answers but whose
// generations hang is told from one that answers, and from one that
// fails, within the time given.
func TestServer_Generates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		api    API
		routes map[string]string
		err    error
		msg    string
	}{
		{name: "sglang generates", api: SGLang},
		{name: "openai generates", api: OpenAI},
		{name: "sglang hangs", api: SGLang, routes: map[string]string{"/generate": "hang"}, err: ErrHung},
		{name: "openai hangs", api: OpenAI, routes: map[string]string{"/v1/completions": "hang"}, err: ErrHung},
		{name: "sglang fails", api: SGLang, routes: map[string]string{"/generate": "503"}, msg: "Service Unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := &probed{routes: tc.routes}
			s := &Server{API: tc.api, URL: p.serve(t) + tc.api.path(), APIKey: "sk-test"}
			began := time.Now()
			err := s.Generates(context.Background(), 300*time.Millisecond)
			if took := time.Since(began); took > 2*time.Second {
				t.Errorf("Generates took %s, given 300ms", took)
			}
			switch {
			case tc.err == nil && tc.msg == "":
				if err != nil {
					t.Errorf("Generates: %v", err)
				}
			case tc.err != nil:
				if !errors.Is(err, tc.err) {
					t.Errorf("Generates: %v, want %v", err, tc.err)
				}
			default:
				if err == nil || errors.Is(err, ErrHung) || !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("Generates: %v, want a failure saying %q", err, tc.msg)
				}
			}
		})
	}
}
