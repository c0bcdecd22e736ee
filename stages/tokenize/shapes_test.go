package tokenize_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
)

// TestTokenize_OpenAIToolCycle: an OpenAI-shaped tool cycle (content null,
// arguments a string) loaded from a dataset reaches DeepSeek-V3's template
// as it expects, so the prompt holds the call instead of an empty turn.
func TestTokenize_OpenAIToolCycle(t *testing.T) {
	dir := t.TempDir()
	tokDir, _ := filepath.Abs("../../internal/tokenizer/testdata/deepseek_v3")
	row := `{"messages": [{"role": "user", "content": "Weather in Oslo?"},
{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
{"role": "tool", "tool_call_id": "c1", "content": "-3"}, {"role": "user", "content": "Thanks. Coat?"}],
"tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]}`
	os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(strings.ReplaceAll(row, "\n", " ")+"\n"), 0o644)
	spec := `version: 1
name: tok
state: state.db
datasets: {d: {source: d.jsonl}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: tokenize, uses: tokenize, needs: [load], foreach: datasets, with: {tokenizer: "` + tokDir + `"}}
  - {name: merge, uses: merge, needs: [tokenize], with: {out: out.jsonl, format: record}}
`
	enginetest.OpenAndRun(t, dir, spec)
	out, _ := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	var rec conv.Record
	if err := json.Unmarshal(bytes.TrimSpace(out), &rec); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(tokDir)
	if err != nil {
		t.Fatal(err)
	}
	text := tok.Decode(rec.PromptIDs)
	want := "<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Oslo\"}\n```<｜tool▁call▁end｜>"
	if !strings.Contains(text, want) {
		t.Errorf("prompt %q\nlacks the tool call %q", text, want)
	}
}
