package generate_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
)

// TestCheck_KwargsMatchTokenize: what the server renders must be the
// prompt tokenize encoded, so their template kwargs must agree (generate's
// default to tokenize's).
func TestCheck_KwargsMatchTokenize(t *testing.T) {
	tokDir, _ := filepath.Abs("../../internal/tokenizer/testdata/qwen3")
	spec := func(endpointKwargs, tokKwargs, genKwargs string) string {
		return `version: 1
name: kw
state: state.db
datasets: {d: {source: d.jsonl}}
endpoints:
  target: {api: openai, urls: ["http://127.0.0.1:1/v1"], model: m, options: {chat_template_kwargs: ` + endpointKwargs + `}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: tokenize, uses: tokenize, needs: [load], foreach: datasets, with: {tokenizer: "` + tokDir + `", chat_template_kwargs: ` + tokKwargs + `}}
  - {name: generate, uses: generate, needs: [tokenize], foreach: datasets, with: {chat_template_kwargs: ` + genKwargs + `}}
`
	}
	tests := []struct {
		name               string
		endpoint, tok, gen string
		err                string
	}{
		{"same on the endpoint", "{enable_thinking: false}", "{enable_thinking: false}", "{}", ""},
		{"same on the stage", "{}", "{enable_thinking: false}", "{enable_thinking: false}", ""},
		{"stage over endpoint", "{enable_thinking: true}", "{enable_thinking: false}", "{enable_thinking: false}", ""},
		{"left to tokenize's", "{}", "{enable_thinking: false}", "{}", ""},
		{"contradicted on the endpoint", "{enable_thinking: true}", "{enable_thinking: false}", "{}", `chat_template_kwargs {"enable_thinking":true} differ from stage tokenize's {"enable_thinking":false}`},
		{"different", "{}", "{reasoning_effort: low}", "{reasoning_effort: high}", `differ from stage tokenize's {"reasoning_effort":"low"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(`{"prompt": "hi"}`+"\n"), 0o644)
			path := filepath.Join(dir, "spec.yaml")
			os.WriteFile(path, []byte(spec(tt.endpoint, tt.tok, tt.gen)), 0o644)
			_, err := engine.Load(path, enginetest.NoEnv)
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("error %v; want one containing %q", err, tt.err)
			}
		})
	}
}

// TestGenerate_SendsTokenizeKwargs: kwargs set once, on tokenize, reach
// the server with every chat request.
func TestGenerate_SendsTokenizeKwargs(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.NotFound(w, r) // the endpoint's probe
			return
		}
		var body struct {
			Kwargs json.RawMessage `json:"chat_template_kwargs"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		got = append(got, string(body.Kwargs))
		mu.Unlock()
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`)
	}))
	defer srv.Close()
	tokDir, _ := filepath.Abs("../../internal/tokenizer/testdata/qwen3")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(`{"prompt": "hi"}`+"\n"+`{"prompt": "bye"}`+"\n"), 0o644)
	enginetest.OpenAndRun(t, dir, `version: 1
name: kw
state: state.db
datasets: {d: {source: d.jsonl}}
endpoints:
  target: {api: openai, urls: ["`+srv.URL+`/v1"], model: m}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: tokenize, uses: tokenize, needs: [load], foreach: datasets, with: {tokenizer: "`+tokDir+`", chat_template_kwargs: {enable_thinking: false}}}
  - {name: generate, uses: generate, needs: [tokenize], foreach: datasets}
`)
	if len(got) != 2 || got[0] != `{"enable_thinking":false}` || got[1] != got[0] {
		t.Errorf("requests carried chat_template_kwargs %q; want {\"enable_thinking\":false} on both", got)
	}
}
