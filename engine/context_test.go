package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
)

// TestEndpointsInExpressions: an endpoint's context reaches instance
// expressions, so tokenize drops the prompts that cannot fit, counted by
// plan and run alike, and a misspelt endpoint is an error that says so.
func TestEndpointsInExpressions(t *testing.T) {
	tok, err := filepath.Abs("../internal/tokenizer/testdata/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	long := strings.Repeat("tell me more about rivers. ", 30)
	os.WriteFile(filepath.Join(dir, "p.jsonl"), []byte(`{"messages":[{"role":"user","content":"Hi."}]}`+"\n"+`{"messages":[{"role":"user","content":"`+long+`"}]}`+"\n"), 0o644)
	spec := `version: 1
name: ctx
state: state.db
datasets: {d: {source: p.jsonl}}
endpoints:
  target: {api: sim, context: 100}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: tok, uses: tokenize, needs: [load], foreach: datasets, with: {tokenizer: ` + tok + `, max_prompt_tokens: "endpoints.target.context - 16"}}
`
	_, store, _ := enginetest.OpenAndRun(t, dir, spec)
	counts, err := store.Counts("tok[d]")
	if err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for _, c := range counts {
		if c.Status == 1 && strings.Contains(c.Reason, "84") {
			dropped += c.N
		}
	}
	if dropped != 1 {
		t.Errorf("tokenize outcomes %+v; want the long prompt dropped against 100 - 16 = 84 tokens", counts)
	}
	path := filepath.Join(dir, "typo.yaml")
	os.WriteFile(path, []byte(strings.Replace(spec, "endpoints.target.context", "endpoints.tagret.context", 1)), 0o644)
	if _, err := engine.Load(path, enginetest.NoEnv); err == nil || !strings.Contains(err.Error(), `unknown endpoint tagret (did you mean "target"?)`) {
		t.Errorf("err = %v; want the misspelt endpoint named with a suggestion", err)
	}
}
