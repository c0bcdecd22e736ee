package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
)

// start serves a server for cfg on httptest's in-memory network, which a
// synctest bubble can run on its clock, and returns a client that sends
// every request to it, whatever the URL's host.
func start(t *testing.T, cfg Config) (*Server, *http.Client) {
	t.Helper()
	if cfg.Model == nil {
		cfg.Model = sim.New(sim.Config{Seed: 1, MeanTokens: 60, Reasoning: 0.3})
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, httptest.NewTestServer(t, s).Client()
}

// base is the URL requests are sent to; start's client ignores its host.
const base = "http://sim"

func post(t *testing.T, c *http.Client, path string, body any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := c.Post(base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// events returns the data payloads of an SSE body, comments skipped.
func events(t *testing.T, resp *http.Response) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

func TestServer_Generate_MatchesModel(t *testing.T) {
	m := sim.New(sim.Config{Seed: 2, MeanTokens: 40})
	_, c := start(t, Config{Model: m})
	resp := post(t, c, "/generate", map[string]any{"input_ids": []int{5, 6, 7}, "sampling_params": map[string]any{"max_new_tokens": 500}})
	var got struct {
		Text      string
		OutputIDs []int `json:"output_ids"`
		MetaInfo  struct {
			FinishReason     map[string]any `json:"finish_reason"`
			CompletionTokens int            `json:"completion_tokens"`
			PromptTokens     int            `json:"prompt_tokens"`
		} `json:"meta_info"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := m.Answer(sim.Prompt{IDs: []int{5, 6, 7}}, sim.Options{MaxTokens: 500})
	if got.Text != want.Content || got.MetaInfo.CompletionTokens != want.CompletionTokens() || got.MetaInfo.PromptTokens != 3 {
		t.Fatalf("got %+v, want content %q", got, want.Content)
	}
	if got.MetaInfo.FinishReason["type"] != "stop" || got.OutputIDs[len(got.OutputIDs)-1] != sim.EOS {
		t.Fatalf("finish %v, ids end %v", got.MetaInfo.FinishReason, got.OutputIDs[len(got.OutputIDs)-1])
	}
}

func TestServer_Generate_DefaultCap(t *testing.T) {
	_, c := start(t, Config{Model: sim.New(sim.Config{Seed: 2, MeanTokens: 5000, Sigma: 0.01})})
	resp := post(t, c, "/generate", map[string]any{"text": "hello"})
	var got struct {
		MetaInfo struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"meta_info"`
	}
	json.NewDecoder(resp.Body).Decode(&got)
	if got.MetaInfo.CompletionTokens != sglangDefaultMaxNewTokens {
		t.Fatalf("completion tokens %d, want SGLang's default cap", got.MetaInfo.CompletionTokens)
	}
}

func TestServer_Chat_StreamReassembles(t *testing.T) {
	m := sim.New(sim.Config{Seed: 3, MeanTokens: 80, Reasoning: 0.4})
	for _, format := range []string{ReasoningContent, ReasoningField} {
		_, c := start(t, Config{Model: m, Reasoning: format, Comments: true})
		msgs := []conv.Message{{Role: conv.User, Content: "hi " + format}}
		resp := post(t, c, "/v1/chat/completions", map[string]any{
			"messages": msgs, "max_tokens": 1000, "stream": true,
			"stream_options": map[string]any{"include_usage": true}, "return_token_ids": true})
		var content, reasoning strings.Builder
		var ids []int
		var finish string
		var usage map[string]any
		evs := events(t, resp)
		if evs[len(evs)-1] != "[DONE]" {
			t.Fatalf("stream ends with %q", evs[len(evs)-1])
		}
		for _, ev := range evs[:len(evs)-1] {
			var c struct {
				Choices []struct {
					Delta        map[string]any `json:"delta"`
					FinishReason *string        `json:"finish_reason"`
					TokenIDs     []int          `json:"token_ids"`
				}
				Usage map[string]any
			}
			if err := json.Unmarshal([]byte(ev), &c); err != nil {
				t.Fatal(err)
			}
			if c.Usage != nil {
				usage = c.Usage
			}
			for _, ch := range c.Choices {
				if s, ok := ch.Delta["content"].(string); ok {
					content.WriteString(s)
				}
				if s, ok := ch.Delta[format].(string); ok {
					reasoning.WriteString(s)
				}
				ids = append(ids, ch.TokenIDs...)
				if ch.FinishReason != nil {
					finish = *ch.FinishReason
				}
			}
		}
		want := m.Answer(sim.Prompt{Messages: msgs}, sim.Options{MaxTokens: 1000})
		if content.String() != want.Content || reasoning.String() != want.Reasoning || finish != want.FinishReason {
			t.Fatalf("%s: reassembled %q / %q / %s, want %q / %q / %s", format, content.String(), reasoning.String(), finish,
				want.Content, want.Reasoning, want.FinishReason)
		}
		if len(ids) != want.CompletionTokens() || usage["completion_tokens"] != float64(want.CompletionTokens()) {
			t.Fatalf("%s: %d ids, usage %v, want %d", format, len(ids), usage, want.CompletionTokens())
		}
	}
}

func TestServer_Scheduler_QueuesAndRetracts(t *testing.T) {
	synctest.Test(t, testServerSchedulerQueuesAndRetracts)
}

func testServerSchedulerQueuesAndRetracts(t *testing.T) {
	m := sim.New(sim.Config{Seed: 4, MeanTokens: 100, Sigma: 0.3})
	s, c := start(t, Config{Model: m, Speed: 4000, MaxRunning: 4, KVTokens: 600})
	done := make(chan struct{})
	for i := range 12 {
		go func() {
			defer func() { done <- struct{}{} }()
			b, _ := json.Marshal(map[string]any{"text": strings.Repeat("word ", 20+i), "sampling_params": map[string]any{"max_new_tokens": 300}})
			resp, err := c.Post(base+"/generate", "application/json", bytes.NewReader(b))
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	timeout := time.After(10 * time.Second)
	for range 12 {
		select {
		case <-done:
		case <-timeout:
			t.Fatal("requests did not finish")
		}
	}
	st := s.Stats()
	if st.Completed != 12 || st.PeakRunning > 4 || st.Running != 0 || st.Queued != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestServer_APIKey(t *testing.T) {
	_, c := start(t, Config{APIKey: "secret"})
	resp := post(t, c, "/v1/completions", map[string]any{"prompt": "x"})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d without a key", resp.StatusCode)
	}
}

// TestServer_SpeedAfterIdle: the first answers after the server sat idle
// take as long as the speed says. Stepping the batch by a tick buffered
// while idle once streamed some of them at 40 times the speed, which taught
// clients' auto concurrency a speed no server has.
//
// The idle spell and the answers run on synctest's clock.
func TestServer_SpeedAfterIdle(t *testing.T) {
	synctest.Test(t, testServerSpeedAfterIdle)
}

func testServerSpeedAfterIdle(t *testing.T) {
	_, c := start(t, Config{Model: sim.New(sim.Config{Seed: 2, MeanTokens: 5000, Sigma: 0.01}), Speed: 400})
	time.Sleep(time.Second)
	var wg sync.WaitGroup
	took := make([]time.Duration, 16)
	for i := range took {
		wg.Add(1)
		go func() {
			defer wg.Done()
			begin := time.Now()
			b, _ := json.Marshal(map[string]any{"model": "sim", "max_tokens": 80, "stream": true,
				"messages": []map[string]string{{"role": "user", "content": fmt.Sprintf("hello %d", i)}}})
			resp, err := c.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(b))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			took[i] = time.Since(begin)
		}()
	}
	wg.Wait()
	// 80 tokens at 400 tokens/s: 200 ms each.
	for i, d := range took {
		if d < 150*time.Millisecond {
			t.Errorf("request %d: 80 tokens at 400 tokens/s after an idle spell took %s; want about 200ms", i, d)
		}
	}
}

// TestServer_StreamInterval: a timed stream sends at least the interval's
// tokens in an event, as SGLang's --stream-interval does, and the last
// event whatever is left.
func TestServer_StreamInterval(t *testing.T) {
	synctest.Test(t, testServerStreamInterval)
}

func testServerStreamInterval(t *testing.T) {
	m := sim.New(sim.Config{Seed: 3, MeanTokens: 200, Sigma: 0.01})
	_, c := start(t, Config{Model: m, Speed: 400, StreamInterval: 7, Incremental: true})
	resp := post(t, c, "/generate", map[string]any{"text": "tell me", "stream": true,
		"sampling_params": map[string]any{"max_new_tokens": 300}})
	evs := events(t, resp)
	if len(evs) < 3 || evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("events %q", evs)
	}
	total := 0
	for i, ev := range evs[:len(evs)-1] {
		var out struct {
			OutputIDs []int `json:"output_ids"`
		}
		if err := json.Unmarshal([]byte(ev), &out); err != nil {
			t.Fatal(err)
		}
		total += len(out.OutputIDs)
		if i < len(evs)-2 && len(out.OutputIDs) < 7 {
			t.Errorf("event %d carries %d tokens; want at least 7", i, len(out.OutputIDs))
		}
	}
	if want := m.Answer(sim.Prompt{Text: "tell me"}, sim.Options{MaxTokens: 300}).CompletionTokens(); total != want {
		t.Errorf("stream carried %d tokens; the answer has %d", total, want)
	}
}

// TestServer_Metrics: /metrics reports load under SGLang's metric names,
// in Prometheus' text format, and counts retractions as Stats does. Five
// answers of 1,000 tokens, each reserving at most 100 (the clip), are all
// admitted to a 2,500-token cache and overflow it.
func TestServer_Metrics(t *testing.T) {
	synctest.Test(t, testServerMetrics)
}

func testServerMetrics(t *testing.T) {
	m := sim.New(sim.Config{Seed: 4, MeanTokens: 1000, Sigma: 0.01})
	// At 2,000 tokens/s an answer takes half a second of synctest's
	// clock, on which every scheduler step comes on time.
	s, c := start(t, Config{Model: m, Speed: 2000, KVTokens: 2500, ClipEstimate: 100})
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, _ := json.Marshal(map[string]any{"text": fmt.Sprintf("question %d", i), "sampling_params": map[string]any{"max_new_tokens": 2000}})
			resp, err := c.Post(base+"/generate", "application/json", bytes.NewReader(b))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	body := metricsText(t, c)
	got := map[string]float64{}
	for line := range strings.SplitSeq(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var name string
		var v float64
		if _, err := fmt.Sscanf(strings.Replace(line, `{model_name="sim"}`, " ", 1), "%s %g", &name, &v); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got[name] = v
	}
	st := s.Stats()
	if st.Retractions == 0 {
		t.Fatalf("no retraction with 5 answers of 1,000 tokens in a 2,500-token cache; stats %+v", st)
	}
	for name, want := range map[string]float64{
		"sglang:num_running_reqs": 0, "sglang:num_queue_reqs": 0, "sglang:token_usage": 0,
		"sglang:max_total_num_tokens": 2500, "sglang:num_retracted_requests_total": float64(st.Retractions),
		"sglang:generation_tokens_total": float64(st.CompletionTokens),
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %t); want %v\n%s", name, v, ok, want, body)
		}
	}
}

// TestServer_CountsPromptsAsTheModel: with a real model's tokenizer and
// template (sim-server -tokenizer) the server reports the prompt tokens
// that model's server would, the tools and tool calls rendered by its
// template, on chat (prompt_tokens and return_token_ids) and on a text
// completion; without one it counts sim tokens, tools' template text
// included, and never below what the messages alone count. The answer is
// the same either way.
func TestServer_CountsPromptsAsTheModel(t *testing.T) {
	tok, err := tokenizer.Load("../../tokenizer/testdata/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chat.New(tok)
	if err != nil {
		t.Fatal(err)
	}
	msgs := []conv.Message{
		{Role: conv.User, Content: "What is the weather in Paris? Answer in 0100000000000000000000000 words."},
		{Role: conv.Assistant, ToolCalls: []conv.ToolCall{{ID: "c1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
		{Role: conv.Tool, ToolCallID: "c1", Content: `{"temp": 21}`},
	}
	tools := []conv.ToolDef{{Name: "get_weather", Description: "Weather of a city.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}}
	want, err := tmpl.PromptIDs(msgs, tools)
	if err != nil {
		t.Fatal(err)
	}
	m := sim.New(sim.Config{Seed: 1, MeanTokens: 40})
	chatOf := func(c *http.Client) (int, []int, string) {
		var out struct {
			PromptTokenIDs []int `json:"prompt_token_ids"`
			Choices        []struct {
				Message struct{ Content string }
			}
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			}
		}
		// The messages as OpenAI's API writes them.
		wire := []any{
			map[string]any{"role": "user", "content": msgs[0].Content},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "c1", "type": "function",
				"function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "c1", "content": msgs[2].Content},
		}
		resp := post(t, c, "/v1/chat/completions", map[string]any{"messages": wire, "tools": []any{
			map[string]any{"type": "function", "function": tools[0]}}, "max_tokens": 50, "return_token_ids": true})
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) != 1 {
			t.Fatalf("chat: %v %+v", err, out)
		}
		return out.Usage.PromptTokens, out.PromptTokenIDs, out.Choices[0].Message.Content
	}

	_, c := start(t, Config{Model: m, Template: tmpl})
	n, ids, real := chatOf(c)
	if n != len(want) || !slices.Equal(ids, want) {
		t.Errorf("with the model's tokenizer: prompt_tokens %d, %d ids; want the template's %d", n, len(ids), len(want))
	}
	var text struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	resp := post(t, c, "/v1/completions", map[string]any{"prompt": "Hello there, Paris.", "max_tokens": 5})
	if err := json.NewDecoder(resp.Body).Decode(&text); err != nil {
		t.Fatal(err)
	}
	if w := len(tmpl.Tokens("Hello there, Paris.")); text.Usage.PromptTokens != w {
		t.Errorf("text completion: prompt_tokens %d; want the tokenizer's %d", text.Usage.PromptTokens, w)
	}

	_, c = start(t, Config{Model: m})
	n, ids, simAnswer := chatOf(c)
	bare := 3
	for _, msg := range msgs {
		bare += 4 + sim.Count(msg.Content)
	}
	// A template writes a preamble of some 70 sim tokens around the tools,
	// each tool's JSON (45) and the call's tags and JSON (20).
	if n != len(ids) || n-bare < 120 {
		t.Errorf("sim tokens: prompt_tokens %d, %d ids; want as many ids, and the tools and calls as a template writes them, over 120 more than the messages' %d", n, len(ids), bare)
	}
	if simAnswer != real {
		t.Errorf("the answer changed with the tokenizer: %q, %q", real, simAnswer)
	}
}

// TestServer_HangAll: a server with HangAll answers its health and model
// list, as a stuck SGLang or vLLM does, and no generation on any route,
// until it gives up on the client (HangFor) or the client on it.
func TestServer_HangAll(t *testing.T) {
	s, c := start(t, Config{Faults: Faults{HangAll: true, HangFor: 50 * time.Millisecond}})
	for _, path := range []string{"/health", "/v1/models"} {
		resp, err := c.Get(base + path)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %v %v; want it answered", path, resp, err)
		}
		resp.Body.Close()
	}
	for _, tc := range []struct{ path, body string }{
		{"/generate", `{"input_ids":[1,2],"sampling_params":{"max_new_tokens":4}}`},
		{"/v1/chat/completions", `{"model":"sim","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true}`},
		{"/v1/completions", `{"model":"sim","prompt":[1,2],"max_tokens":4}`},
	} {
		start := time.Now()
		resp, err := c.Post(base+tc.path, "application/json", strings.NewReader(tc.body))
		if err == nil {
			resp.Body.Close()
			t.Errorf("POST %s answered %s; want no answer", tc.path, resp.Status)
		}
		if took := time.Since(start); took < 50*time.Millisecond {
			t.Errorf("POST %s failed after %s; want it to hang for HangFor", tc.path, took)
		}
	}
	if got := s.Stats().Faults["hang"]; got != 3 {
		t.Errorf("%d hangs counted; want 3", got)
	}
}
