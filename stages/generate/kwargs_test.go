package generate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
)

// TestCheck_KwargsMatchTokenize: what the server renders must be the
// prompt tokenize encoded, so their template kwargs must agree.
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
		{"missing on generate", "{}", "{enable_thinking: false}", "{}", `chat_template_kwargs {} differ from stage tokenize's {"enable_thinking":false}`},
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
