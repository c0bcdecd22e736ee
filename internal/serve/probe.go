package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// API is the protocol a server speaks, which sets its URL's path and how
// it is probed.
type API string

// APIs a launched server may speak.
const (
	SGLang API = "sglang"
	OpenAI API = "openai"
)

// path is the API's base path under the server's address.
func (a API) path() string {
	if a == OpenAI {
		return "/v1"
	}
	return ""
}

func (a API) valid() bool { return a == SGLang || a == OpenAI }

// ErrHung is the error of a server that is up but generated no token in
// the time given: its health may still answer (SGLang's /health counts any
// sign of life from its scheduler, vLLM's only that the engine process is
// alive), so only a generation tells.
var ErrHung = errors.New("no token generated")

// Server is one server as the probes see it.
type Server struct {
	API API
	// URL is the API's base: http://host:port for SGLang, with /v1 for
	// OpenAI-compatible servers.
	URL string
	// APIKey, when set, is sent as a bearer token.
	APIKey string
	// Model is the served model's name, which OpenAI-compatible requests
	// carry; Ready fills it from /v1/models when empty.
	Model string
	// Client sends the probes; nil is http.DefaultClient. Contexts bound
	// every probe, so it needs no timeout of its own.
	Client *http.Client
}

// root is the server's address, where health is served whatever the API's
// path (vLLM's /health is beside /v1, not under it).
func (s *Server) root() string { return strings.TrimSuffix(s.URL, s.API.path()) }

// Ready reports whether the server answers its API, as it does once its
// model is loaded: nil when it does, else what it answered.
//
// For SGLang: GET /health, which answers 503 while the server warms up
// (and, since it generates a token itself, may take up to
// SGLANG_HEALTH_CHECK_TIMEOUT, 20 s), then the model's info, from
// /model_info or the older /get_model_info, or for a server with neither
// (eaglet's sim) one generated token. For OpenAI-compatible servers:
// GET /health when there is one (vLLM: 503 once its engine died), then
// GET /v1/models, which must list a model.
func (s *Server) Ready(ctx context.Context) error {
	code, _, err := s.get(ctx, s.root()+"/health")
	switch {
	case err != nil:
		return err
	case code == http.StatusNotFound && s.API == OpenAI: // a server with no health route
	case code != http.StatusOK:
		return fmt.Errorf("GET /health: %s", http.StatusText(code))
	}
	if s.API == OpenAI {
		return s.models(ctx)
	}
	for _, path := range []string{"/model_info", "/get_model_info"} {
		code, _, err := s.get(ctx, s.URL+path)
		switch {
		case err != nil:
			return err
		case code == http.StatusOK:
			return nil
		case code != http.StatusNotFound:
			return fmt.Errorf("GET %s: %s", path, http.StatusText(code))
		}
	}
	return s.generate(ctx)
}

// models reads the served model's name from /v1/models.
func (s *Server) models(ctx context.Context) error {
	code, body, err := s.get(ctx, s.URL+"/models")
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s/models: %s", s.API.path(), http.StatusText(code))
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("GET %s/models: %w", s.API.path(), err)
	}
	if len(list.Data) == 0 {
		return fmt.Errorf("GET %s/models: no model listed yet", s.API.path())
	}
	if s.Model == "" {
		s.Model = list.Data[0].ID
	}
	return nil
}

// Generates asks the server for one token and reports whether it came
// within the time given: nil when it did, an error wrapping ErrHung when
// it did not, another error when the server refused or failed. A watchdog
// calls it on a server whose health answers while its requests make no
// progress.
func (s *Server) Generates(ctx context.Context, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	err := s.generate(ctx)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w within %s", ErrHung, within)
	}
	return err
}

// generate sends a one-token request. The prompt is token id 0, as
// SGLang's own /health_generate sends, which a server started without its
// tokenizer takes too.
func (s *Server) generate(ctx context.Context) error {
	path := "/generate"
	body := map[string]any{"input_ids": []int{0}, "sampling_params": map[string]any{"max_new_tokens": 1, "temperature": 0}}
	if s.API == OpenAI {
		if s.Model == "" {
			if err := s.models(ctx); err != nil {
				return err
			}
		}
		path = "/completions"
		body = map[string]any{"model": s.Model, "prompt": []int{0}, "max_tokens": 1, "temperature": 0}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	code, out, err := s.do(req)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("POST %s%s: %s: %s", s.API.path(), path, http.StatusText(code), snippet(out))
	}
	if !json.Valid(out) {
		return fmt.Errorf("POST %s%s: answer is not JSON: %s", s.API.path(), path, snippet(out))
	}
	return nil
}

func (s *Server) get(ctx context.Context, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	return s.do(req)
}

// do sends a probe and reads at most 1 MiB of its answer.
func (s *Server) do(req *http.Request) (int, []byte, error) {
	if s.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
	}
	c := s.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body, err
}

// snippet shortens a body for an error message.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
