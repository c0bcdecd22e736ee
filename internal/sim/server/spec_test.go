package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
)

var drafter = sim.Drafter{Quality: 0.8, Tokens: 4}

// specMeta is the speculation SGLang's meta_info reports.
type specMeta struct {
	CompletionTokens int     `json:"completion_tokens"`
	VerifyCt         *int    `json:"spec_verify_ct"`
	AcceptLength     float64 `json:"spec_accept_length"`
	AcceptRate       float64 `json:"spec_accept_rate"`
	AcceptTokenNum   int     `json:"spec_accept_token_num"`
	DraftTokenNum    int     `json:"spec_draft_token_num"`
	Histogram        []int   `json:"spec_accept_histogram"`
}

// wantMeta recomputes what the server must report for answer a.
func wantMeta(m *sim.Model, p sim.Prompt, a *sim.Answer, temperature float64) specMeta {
	sp := m.Speculate(drafter, p, a, temperature)
	n := a.CompletionTokens()
	return specMeta{CompletionTokens: n, VerifyCt: &sp.Verify, AcceptLength: float64(n) / float64(sp.Verify),
		AcceptRate: float64(sp.Accepted) / float64(sp.Drafted), AcceptTokenNum: sp.Accepted, DraftTokenNum: sp.Drafted,
		Histogram: sp.Histogram}
}

// TestServer_Generate_ReportsSpeculation: /generate's meta_info carries
// the speculation SGLang reports, on the body and on a stream's last
// event only, at the request's temperature (the server's 1 when it names
// none); the baseline's carries none.
func TestServer_Generate_ReportsSpeculation(t *testing.T) {
	m := sim.New(sim.Config{Seed: 3, MeanTokens: 80})
	_, speculating := start(t, Config{Model: m, Drafter: drafter})
	_, baseline := start(t, Config{Model: m})
	for i := range 20 {
		text := fmt.Sprintf("question %d", i)
		p := sim.Prompt{Text: text}
		a := m.Answer(p, sim.Options{MaxTokens: 500})
		for _, c := range []struct {
			stream      bool
			temperature any
			want        float64
		}{{false, 0, 0}, {true, 0.7, 0.7}, {false, nil, 1}} {
			sampling := map[string]any{"max_new_tokens": 500}
			if c.temperature != nil {
				sampling["temperature"] = c.temperature
			}
			resp := post(t, speculating, "/generate", map[string]any{"text": text, "sampling_params": sampling, "stream": c.stream})
			var metas []specMeta
			if c.stream {
				for _, e := range events(t, resp) {
					if e == "[DONE]" {
						continue
					}
					var ev struct {
						MetaInfo specMeta `json:"meta_info"`
					}
					if err := json.Unmarshal([]byte(e), &ev); err != nil {
						t.Fatal(err)
					}
					metas = append(metas, ev.MetaInfo)
				}
			} else {
				var body struct {
					MetaInfo specMeta `json:"meta_info"`
				}
				if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
					t.Fatal(err)
				}
				metas = append(metas, body.MetaInfo)
			}
			last := metas[len(metas)-1]
			if want := wantMeta(m, p, a, c.want); !reflect.DeepEqual(last, want) {
				t.Fatalf("prompt %d %+v: meta_info %+v, want %+v", i, c, last, want)
			}
			if got := float64(last.CompletionTokens) / float64(*last.VerifyCt); last.AcceptLength != got {
				t.Fatalf("prompt %d: spec_accept_length %g, completion over verify steps %g", i, last.AcceptLength, got)
			}
			for _, early := range metas[:len(metas)-1] {
				if early.VerifyCt != nil {
					t.Fatalf("prompt %d: a stream's unfinished event reports the speculation", i)
				}
			}
		}
		var plain struct {
			MetaInfo map[string]any `json:"meta_info"`
		}
		json.NewDecoder(post(t, baseline, "/generate", map[string]any{"text": text}).Body).Decode(&plain)
		for k := range plain.MetaInfo {
			if strings.HasPrefix(k, "spec_") {
				t.Fatalf("the baseline reports %s", k)
			}
		}
	}
}

// TestServer_Generate_OneToken: an answer from the prefill alone has no
// verify step, and SGLang 0.5 then sends zeros and no counts.
func TestServer_Generate_OneToken(t *testing.T) {
	_, c := start(t, Config{Drafter: drafter})
	var body struct {
		MetaInfo map[string]any `json:"meta_info"`
	}
	json.NewDecoder(post(t, c, "/generate", map[string]any{"text": "hi", "sampling_params": map[string]any{"max_new_tokens": 1}}).Body).Decode(&body)
	want := map[string]any{"spec_verify_ct": 0.0, "spec_accept_length": 0.0, "spec_accept_rate": 0.0}
	for k, v := range body.MetaInfo {
		if strings.HasPrefix(k, "spec_") && want[k] != v {
			t.Errorf("%s = %v", k, v)
		}
	}
	for k := range want {
		if _, ok := body.MetaInfo[k]; !ok {
			t.Errorf("no %s in %v", k, body.MetaInfo)
		}
	}
}

// TestServer_Chat_ReturnMetaInfo: SGLang's chat route returns a choice's
// meta_info, speculation included, when asked and not streaming; a tool
// call's finish_reason is the parser's rewrite.
func TestServer_Chat_ReturnMetaInfo(t *testing.T) {
	m := sim.New(sim.Config{Seed: 5, MeanTokens: 80, ToolCallRate: 1})
	_, c := start(t, Config{Model: m, Drafter: drafter})
	msgs := []conv.Message{{Role: conv.User, Content: "find the weather"}}
	tools := []conv.ToolDef{{Name: "search"}}
	resp := post(t, c, "/v1/chat/completions", map[string]any{
		"messages": []map[string]any{{"role": "user", "content": "find the weather"}}, "temperature": 0,
		"tools":            []map[string]any{{"type": "function", "function": map[string]any{"name": "search"}}},
		"return_meta_info": true,
	})
	var body struct {
		Choices []struct {
			MetaInfo struct {
				specMeta
				FinishReason map[string]any `json:"finish_reason"`
			} `json:"meta_info"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	p := sim.Prompt{Messages: msgs, Tools: tools}
	a := m.Answer(p, sim.Options{})
	got := body.Choices[0].MetaInfo
	if want := wantMeta(m, p, a, 0); !reflect.DeepEqual(got.specMeta, want) {
		t.Errorf("meta_info %+v, want %+v", got.specMeta, want)
	}
	if a.FinishReason != "tool_calls" || got.FinishReason["type"] != "tool_calls" || got.FinishReason["matched"] != nil {
		t.Errorf("finish %q, meta_info's %v", a.FinishReason, got.FinishReason)
	}

	resp = post(t, c, "/v1/chat/completions", map[string]any{
		"messages": []map[string]any{{"role": "user", "content": "hi"}}, "stream": true, "return_meta_info": true})
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "return_meta_info is not supported with streaming") {
		t.Errorf("a stream with return_meta_info: %d %s", resp.StatusCode, b)
	}
}

// TestServer_Metrics_vLLMSpecCounters: /metrics counts every finished
// request's speculation under vLLM's names, and only with a drafter.
func TestServer_Metrics_vLLMSpecCounters(t *testing.T) {
	m := sim.New(sim.Config{Seed: 6, MeanTokens: 60})
	_, c := start(t, Config{Model: m, Drafter: drafter})
	var want sim.Speculation
	want.PerPosition = make([]int, drafter.Tokens)
	for i := range 10 {
		text := fmt.Sprintf("prompt %d", i)
		route, body := "/generate", map[string]any{"text": text, "sampling_params": map[string]any{"max_new_tokens": 300, "temperature": 0}}
		if i%2 == 1 {
			route, body = "/v1/completions", map[string]any{"prompt": text, "max_tokens": 300, "temperature": 0}
		}
		io.Copy(io.Discard, post(t, c, route, body).Body)
		sp := m.Speculate(drafter, sim.Prompt{Text: text}, m.Answer(sim.Prompt{Text: text}, sim.Options{MaxTokens: 300}), 0)
		want.Verify += sp.Verify
		want.Drafted += sp.Drafted
		want.Accepted += sp.Accepted
		for j, n := range sp.PerPosition {
			want.PerPosition[j] += n
		}
	}
	text := metricsText(t, c)
	series := map[string]int{
		`vllm:spec_decode_num_drafts_total{model_name="sim",engine="0"}`:          want.Verify,
		`vllm:spec_decode_num_draft_tokens_total{model_name="sim",engine="0"}`:    want.Drafted,
		`vllm:spec_decode_num_accepted_tokens_total{model_name="sim",engine="0"}`: want.Accepted,
	}
	for j, n := range want.PerPosition {
		series[fmt.Sprintf(`vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="sim",engine="0",position="%d"}`, j)] = n
	}
	for s, n := range series {
		if line := fmt.Sprintf("%s %d.0\n", s, n); !strings.Contains(text, line) {
			t.Errorf("no %q in\n%s", line, text)
		}
	}
	_, baseline := start(t, Config{Model: m})
	if strings.Contains(metricsText(t, baseline), "vllm:") {
		t.Error("the baseline exports vLLM's speculative-decoding counters")
	}
}

func metricsText(t *testing.T, c *http.Client) string {
	t.Helper()
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestServer_DrafterDecodesFaster: on the scheduler's clock an answer
// with a drafter takes its speculation's pace less time than without.
// The scheduler runs on synctest's clock: the times are its own, not the
// load's.
func TestServer_DrafterDecodesFaster(t *testing.T) {
	synctest.Test(t, testServerDrafterDecodesFaster)
}

func testServerDrafterDecodesFaster(t *testing.T) {
	m := sim.New(sim.Config{Seed: 7, MeanTokens: 300, Sigma: 0.01})
	took := func(d sim.Drafter) time.Duration {
		_, c := start(t, Config{Model: m, Speed: 1000, Drafter: d})
		begin := time.Now()
		io.Copy(io.Discard, post(t, c, "/generate", map[string]any{"text": "a question", "sampling_params": map[string]any{"max_new_tokens": 1000, "temperature": 0}}).Body)
		return time.Since(begin)
	}
	a := m.Answer(sim.Prompt{Text: "a question"}, sim.Options{MaxTokens: 1000})
	pace := m.Speculate(drafter, sim.Prompt{Text: "a question"}, a, 0).Pace
	base, fast := took(sim.Drafter{}), took(drafter)
	if pace < 2 || float64(fast) > 0.75*float64(base) {
		t.Errorf("%d tokens: %v without a drafter, %v with one at pace %.2f", a.CompletionTokens(), base, fast, pace)
	}
}

func TestServer_New_BadDrafter(t *testing.T) {
	if _, err := New(Config{Model: sim.New(sim.Config{}), Drafter: sim.Drafter{Quality: 2}}); err == nil || !strings.Contains(err.Error(), "draft quality 2") {
		t.Errorf("error %v", err)
	}
}
