package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
)

// TestIdentity_SpellingCostsNothing: the same tool-calling conversations
// spelt the OpenAI way (content null, arguments a string, text parts)
// instead of the canonical way are the same records, so their answers are
// found again rather than paid for twice. This is what keeps answers
// stored before eaglet kept the spelling.
func TestIdentity_SpellingCostsNothing(t *testing.T) {
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 40})})
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "data"), 0o755)
	canonical := `{"messages": [{"role": "user", "content": "Weather in Oslo?"}, {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "get_weather", "arguments": {"city": "Oslo"}}]}, {"role": "tool", "content": "-3", "tool_call_id": "c1", "name": "get_weather"}, {"role": "user", "content": "Coat?"}]}
{"messages": [{"role": "user", "content": "Summarize: the cat sat."}]}
`
	openai := `{"messages": [{"role": "user", "content": "Weather in Oslo?"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]}, {"role": "tool", "content": "-3", "tool_call_id": "c1", "name": "get_weather"}, {"role": "user", "content": "Coat?"}]}
{"messages": [{"role": "user", "content": [{"type": "text", "text": "Summarize: "}, {"type": "text", "text": "the cat sat."}]}]}
`
	spec := filepath.Join(dir, "spec.yaml")
	os.WriteFile(spec, []byte(identitySpec(srv.URL, "  tools: {source: data/tools.jsonl, format: messages}", "0.7")), 0o644)
	for i, data := range []string{canonical, openai} {
		os.WriteFile(filepath.Join(dir, "data", "tools.jsonl"), []byte(data), 0o644)
		code, out, errOut := eaglet("run", "--progress", "lines", spec)
		if code != 0 {
			t.Fatalf("run %d: exit %d\n%s%s", i, code, out, errOut)
		}
		want := []int{2, 0}[i]
		if got := srv.Take(); got != want {
			t.Errorf("run %d sent %d requests; want %d\n%s", i, got, want, strings.TrimSpace(out+errOut))
		}
	}
}
