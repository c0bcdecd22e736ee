package generate_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/state"
)

// fakeOpenAI serves POST /v1/chat/completions with answer (status, body)
// and counts the POSTs; anything else is a 404, as on real servers.
func fakeOpenAI(t *testing.T, status int, body string) (string, *atomic.Int64) {
	t.Helper()
	var posts atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		posts.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/v1", &posts
}

func reasons(t *testing.T, store *state.Store, id string) map[string]int {
	t.Helper()
	counts, err := store.Counts(id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, c := range counts {
		out[fmt.Sprintf("%d %s", c.Status, c.Reason)] += c.N
	}
	return out
}

// TestEndpoint_ServerThatNeverAnswers: a server that accepts connections
// and answers nothing ends the run in about the timeout (at most 30 s),
// not the timeout of every record and retry (20 s gave 59 s before; the
// default 30 minutes, hours).
func TestEndpoint_ServerThatNeverAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		url := serveInBubble(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		t.Cleanup(func() { close(release) })
		dir := t.TempDir()
		writePrompts(t, filepath.Join(dir, "prompts.jsonl"), 40)
		p, store := enginetest.Open(t, dir, fmt.Sprintf(`version: 1
name: hang
state: state.db
datasets:
  d: {source: prompts.jsonl}
endpoints:
  target: {api: openai, urls: ["%s/v1"], concurrency: 8}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 8, timeout: 1s}}
`, url))
		start := time.Now()
		enginetest.Run(t, p, store, nil)
		took := time.Since(start)
		got := reasons(t, store, "generate[d]")
		if len(got) != 1 {
			t.Errorf("records: %v; want all 40 failed alike", got)
		}
		for r, n := range got {
			if n != 40 || !strings.Contains(r, "endpoint target stopped: its server accepts connections but answered nothing in 1s") {
				t.Errorf("records: %v; want all 40 failed saying the server answered nothing", got)
			}
		}
		if took > 4*time.Second {
			t.Errorf("a server that never answers held the run %s with a 1s timeout", took)
		}
	})
}

// TestEndpoint_Same400Stops: a server that refuses every request with the
// same 400 (a server that takes no token-id prompts) is asked 8 times, not
// once per record.
func TestEndpoint_Same400Stops(t *testing.T) {
	url, posts := fakeOpenAI(t, 400, `{"error":{"message":"prompt must be a string","type":"invalid_request_error"}}`)
	dir := t.TempDir()
	writePrompts(t, filepath.Join(dir, "prompts.jsonl"), 40)
	p, store := enginetest.Open(t, dir, fmt.Sprintf(`version: 1
name: same400
state: state.db
datasets:
  d: {source: prompts.jsonl}
endpoints:
  target: {api: openai, urls: [%q], concurrency: 1}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 8}}
`, url))
	enginetest.Run(t, p, store, nil)
	if n := posts.Load(); n != 8 {
		t.Errorf("server got %d requests; want 8, then the endpoint stopped", n)
	}
	stopped := 0
	for r, n := range reasons(t, store, "generate[d]") {
		if strings.Contains(r, "endpoint target stopped: the first 8 requests all got the same answer") && strings.Contains(r, "prompt must be a string") {
			stopped += n
		}
	}
	if stopped != 32 {
		t.Errorf("records: %v; want 32 failed for the stopped endpoint, naming the server's message", reasons(t, store, "generate[d]"))
	}
}

// TestGenerate_PromptTruncatedOrTooLong: ollama (system_fingerprint
// fp_ollama) cuts a prompt to num_ctx and answers 200; an answer whose
// prompt it read only as far as its context holds is refused, not stored
// as done, while one it counted a little otherwise is kept. With
// `context:` a prompt that does not fit is skipped without being sent.
// The same counts from a server that refuses long prompts (no ollama
// fingerprint) are kept.
func TestGenerate_PromptTruncatedOrTooLong(t *testing.T) {
	tokDir, err := filepath.Abs("../../internal/tokenizer/testdata/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	rows := fmt.Sprintf(`{"messages":[{"role":"user","content":"Hi there."}]}
{"messages":[{"role":"user","content":%q}]}
{"messages":[{"role":"user","content":%q}]}
`, strings.Repeat("tell me more about rivers. ", 300), strings.Repeat("tell me much more about the mountains. ", 700))
	for _, tc := range []struct {
		name, fingerprint string
		truncated         int
	}{
		{"ollama", `"system_fingerprint":"fp_ollama",`, 1},
		{"vLLM", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The server read 1100 prompt tokens, whatever it was sent.
			url, posts := fakeOpenAI(t, 200, `{"id":"c1","object":"chat.completion",`+tc.fingerprint+`"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"fine"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1100,"completion_tokens":2,"total_tokens":1102}}`)
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "p.jsonl"), []byte(rows), 0o644)
			p, store := enginetest.Open(t, dir, fmt.Sprintf(`version: 1
name: trunc
state: state.db
datasets:
  d: {source: p.jsonl}
endpoints:
  target: {api: openai, urls: [%q], context: 3000}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: tok, uses: tokenize, needs: [load], foreach: datasets, with: {tokenizer: %q}}
  - {name: generate, uses: generate, needs: [tok], foreach: datasets, with: {max_tokens: 8}}
`, url, tokDir))
			enginetest.Run(t, p, store, nil)
			got := reasons(t, store, "generate[d]")
			var done, truncated, tooLong int
			for r, n := range got {
				switch {
				case strings.HasPrefix(r, "0 "):
					done += n
				case strings.Contains(r, "prompt truncated by the server: it read 1100 prompt tokens of the"):
					truncated += n
				case strings.Contains(r, "prompt longer than endpoint target's context (3000 tokens)"):
					tooLong += n
				}
			}
			if done != 2-tc.truncated || truncated != tc.truncated || tooLong != 1 {
				t.Errorf("records: %v; want the short prompt done, the middle one %d refused as truncated, the long one skipped", got, tc.truncated)
			}
			if n := posts.Load(); n != 2 {
				t.Errorf("server got %d requests; want 2 (the over-long prompt is never sent)", n)
			}
		})
	}
}

// TestTimeout_ShortWithoutStreamingSaysItBiases: a short timeout on a
// non-streaming endpoint fails the long answers only, and the reason says
// that what is kept is biased short (timeout: 5s cut the mean answer from
// about 250 to 142 tokens, shown only as partial).
func TestTimeout_ShortWithoutStreamingSaysItBiases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		url := serveInBubble(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				http.NotFound(w, r) // the server is up: the probe passes
				return
			}
			select {
			case <-r.Context().Done():
			case <-time.After(time.Second):
			}
		}))
		dir := t.TempDir()
		writePrompts(t, filepath.Join(dir, "prompts.jsonl"), 1)
		p, store := enginetest.Open(t, dir, fmt.Sprintf(`version: 1
name: short
state: state.db
datasets:
  d: {source: prompts.jsonl}
endpoints:
  target: {api: openai, urls: ["%s/v1"]}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 8, timeout: 300ms, retries: 0}}
`, url))
		enginetest.Run(t, p, store, nil)
		for r := range reasons(t, store, "generate[d]") {
			if !strings.Contains(r, "nothing received for 300ms; without streaming the timeout bounds the whole answer") {
				t.Errorf("reason %q; want it to say a short timeout biases the answers kept", r)
			}
		}
	})
}
