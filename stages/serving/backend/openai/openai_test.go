package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/backendtest"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
	"github.com/eaglet-dev/eaglet/stages/serving/pipenet"
)

func client(t testing.TB, url string, cfg Config) *Client {
	t.Helper()
	return clientVia(t, url, nil, cfg)
}

// clientVia is client sending through hc (nil: the pools' shared client).
func clientVia(t testing.TB, url string, hc *http.Client, cfg Config) *Client {
	t.Helper()
	p, err := pool.New(pool.Config{URLs: []string{url + "/v1"}, Client: hc, Rest: 5 * time.Millisecond, MaxRest: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Pool, cfg.Model = p, "sim"
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func conversation(i int) []conv.Message {
	return []conv.Message{
		{Role: conv.System, Content: "You are terse."},
		{Role: conv.User, Content: fmt.Sprintf("Question %d: how do rivers form?", i)},
	}
}

// serveSim serves the sim to a test in a synctest bubble, where its
// faults' hangs and Retry-After take no wall time, and returns a client
// for it.
func serveSim(t testing.TB, cfg server.Config) *http.Client {
	t.Helper()
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return pipenet.Serve(t, s)
}

var faults = server.Faults{Seed: 3, Error500: 0.08, RateLimit: 0.08, InFlight402: 0.04, Drop: 0.04, Hang: 0.02,
	HangFor: 50 * time.Millisecond, BadJSON: 0.04, Truncate: 0.08, StreamError: 0.08, RetryAfter: time.Millisecond}

func TestClient_Chat_AgainstSimServer(t *testing.T) {
	m := sim.New(sim.Config{Seed: 5, MeanTokens: 80, Reasoning: 0.3, ToolCallRate: 0.3})
	tools := []conv.ToolDef{{Name: "search", Parameters: json.RawMessage(`{"type":"object"}`)}}
	for _, format := range []string{server.ReasoningContent, server.ReasoningField, server.ReasoningInline} {
		for _, stream := range []bool{false, true} {
			for _, f := range []server.Faults{{}, faults} {
				name := fmt.Sprintf("%s/stream=%v/faults=%v", format, stream, f.Seed != 0)
				t.Run(name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						hc := serveSim(t, server.Config{Model: m, Reasoning: format, Comments: stream, Faults: f})
						c := clientVia(t, "http://sim", hc, Config{Stream: stream, ReturnTokenIDs: true, StopTokenIDs: []int{sim.EOS}})
						toolCalls := 0
						for i := range 30 {
							req := &backend.Request{Messages: conversation(i), MaxTokens: 120}
							if i%2 == 0 {
								req.Tools = tools
							}
							g, err := backendtest.Retry(c, req)
							if err != nil {
								t.Fatalf("conversation %d: %v", i, err)
							}
							prompt := sim.Prompt{Messages: req.Messages, Tools: req.Tools}
							want := m.Answer(prompt, sim.Options{MaxTokens: 120}).Generation("sim", 120)
							want.PromptTokens = g.PromptTokens
							// return_token_ids brings the prompt's ids too, in the
							// body or the stream's first event, as vLLM sends them.
							want.PromptIDs = prompt.TokenIDs()
							if len(g.PromptIDs) != g.PromptTokens {
								t.Fatalf("conversation %d: %d prompt ids for %d prompt tokens", i, len(g.PromptIDs), g.PromptTokens)
							}
							if !reflect.DeepEqual(g, want) {
								t.Fatalf("conversation %d:\n got %+v\nwant %+v", i, g, want)
							}
							toolCalls += len(g.ToolCalls)
						}
						if toolCalls == 0 {
							t.Error("no tool calls came back")
						}
					})
				})
			}
		}
	}
}

func TestClient_Completions_TokenIDs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := sim.New(sim.Config{Seed: 6, MeanTokens: 60, Reasoning: 0.3})
		for _, stream := range []bool{false, true} {
			hc := serveSim(t, server.Config{Model: m, Faults: faults})
			c := clientVia(t, "http://sim", hc, Config{Completions: true, Stream: stream, ReturnTokenIDs: true, StopTokenIDs: []int{sim.EOS}})
			for i := range 30 {
				ids := []int{7, 8, i}
				g, err := backendtest.Retry(c, &backend.Request{InputIDs: ids, MaxTokens: 100})
				if err != nil {
					t.Fatal(err)
				}
				want := m.Answer(sim.Prompt{IDs: ids}, sim.Options{MaxTokens: 100}).Generation("sim", 100)
				if !reflect.DeepEqual(g, want) {
					t.Fatalf("stream=%v prompt %d:\n got %+v\nwant %+v", stream, i, g, want)
				}
			}
		}
	})
}

func TestClient_ThinkingOff(t *testing.T) {
	m := sim.New(sim.Config{Seed: 6, MeanTokens: 60, Reasoning: 0.5})
	url := simtest.Serve(t, server.Config{Model: m})
	c := client(t, url, Config{ChatTemplateKwargs: map[string]any{"enable_thinking": false}})
	g, err := c.Generate(context.Background(), &backend.Request{Messages: conversation(1), MaxTokens: 500})
	if err != nil || g.Reasoning != "" || g.Content == "" {
		t.Fatalf("generation %+v, err %v", g, err)
	}
}

func TestClient_APIKeyNeverInErrors(t *testing.T) {
	const key = "sk-secret-123"
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"code":401,"message":"bad key %s"}}`, r.Header.Get("Authorization"))
	}))
	defer hs.Close()
	c := client(t, hs.URL, Config{APIKey: key})
	_, err := c.Generate(context.Background(), &backend.Request{Messages: conversation(1), MaxTokens: 5})
	if err == nil || strings.Contains(err.Error(), key) {
		t.Fatalf("err %v", err)
	}
	if k, _ := backend.Classify(err); k != backend.Fatal {
		t.Fatalf("kind %v, want fatal", k)
	}
}

func BenchmarkClient_Chat_Instant(b *testing.B) {
	m := sim.New(sim.Config{Seed: 1, MeanTokens: 50})
	c := client(b, simtest.Serve(b, server.Config{Model: m}), Config{})
	b.SetParallelism(500) // with GOMAXPROCS 2: 1,000 requests in flight
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			if _, err := c.Generate(context.Background(), &backend.Request{Messages: conversation(i), MaxTokens: 100}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// TestClient_ToolCallArgumentsKeepTheServersText: the arguments text a
// server returns is what the record keeps, through the store's JSON
// (which writes Arguments compacted and HTML-escaped), for templates that
// print it and for the rows handoff writes.
func TestClient_ToolCallArgumentsKeepTheServersText(t *testing.T) {
	tests := []struct {
		name, text string
		args       string // Arguments as stored
		kept       bool   // ArgumentsText set
	}{
		{"compact", `{"city":"Zürich","days":2}`, `{"city":"Zürich","days":2}`, false},
		{"spaced", `{"city": "Paris", "days": 1}`, `{"city":"Paris","days":1}`, true},
		{"html characters", `{"q":"a<b && c>d"}`, `{"q":"a\u003cb \u0026\u0026 c\u003ed"}`, true},
		{"not JSON", `{"city": "Par`, `"{\"city\": \"Par"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls, _ := json.Marshal([]conv.OpenAIToolCall{{ID: "c1", Type: "function", Function: conv.OpenAIFunction{Name: "get_weather", Arguments: tt.text}}})
				fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":%s},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":9,"completion_tokens":12}}`, calls)
			}))
			defer hs.Close()
			g, err := client(t, hs.URL, Config{}).Generate(context.Background(), &backend.Request{Messages: conversation(1), MaxTokens: 50})
			if err != nil {
				t.Fatal(err)
			}
			stored, err := json.Marshal(g)
			if err != nil {
				t.Fatal(err)
			}
			var back conv.Generation
			if err := json.Unmarshal(stored, &back); err != nil {
				t.Fatal(err)
			}
			if len(back.ToolCalls) != 1 {
				t.Fatalf("%d tool calls", len(back.ToolCalls))
			}
			c := back.ToolCalls[0]
			if string(c.Arguments) != tt.args || (c.ArgumentsText != "") != tt.kept {
				t.Errorf("stored arguments %s, text %q; want %s, text kept %v", c.Arguments, c.ArgumentsText, tt.args, tt.kept)
			}
			if got := conv.ToOpenAI([]conv.Message{back.Message()})[0].ToolCalls[0].Function.Arguments; got != tt.text {
				t.Errorf("row arguments %q, want the server's %q", got, tt.text)
			}
		})
	}
}

// TestClient_Provider: a router's "provider" (OpenRouter's, in the body and
// in every stream event) is recorded as who served the answer.
func TestClient_Provider(t *testing.T) {
	m := sim.New(sim.Config{Seed: 5, MeanTokens: 40})
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hc := serveSim(t, server.Config{Model: m, Stack: server.Stack{Provider: "DeepInfra"}})
				c := clientVia(t, "http://sim", hc, Config{Stream: stream})
				g, err := backendtest.Retry(c, &backend.Request{Messages: conversation(0), MaxTokens: 60})
				if err != nil {
					t.Fatal(err)
				}
				if g.Served == nil || g.Served.Provider != "DeepInfra" {
					t.Errorf("served %+v, want provider DeepInfra", g.Served)
				}
			})
		})
	}
}
