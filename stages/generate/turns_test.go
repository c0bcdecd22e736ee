package generate_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/stages/conv"
	"github.com/eaglet-dev/eaglet/stages/generate/sim"
)

func TestTurns_EachAnswerConditionedOnTheTargetsOwn(t *testing.T) {
	model := sim.New(sim.Config{Seed: 4, MeanTokens: 40})
	ask := func(msgs []conv.Message) conv.Message {
		g := model.Answer(sim.Prompt{Messages: msgs}, sim.Options{MaxTokens: 300}).Generation("sim", 300)
		return conv.Message{Role: conv.Assistant, Content: g.Content, Reasoning: g.Reasoning, ToolCalls: g.ToolCalls}
	}
	u := func(s string) conv.Message { return conv.Message{Role: conv.User, Content: s} }
	a := func(s string) conv.Message { return conv.Message{Role: conv.Assistant, Content: s} }
	sys := conv.Message{Role: conv.System, Content: "Be brief."}

	mtbench := []conv.Message{u("Write a haiku about rain."), u("Now make it about snow.")}
	a1 := ask(mtbench[:1])
	mtWant := []conv.Message{mtbench[0], a1, mtbench[1], ask([]conv.Message{mtbench[0], a1, mtbench[1]})}

	chat := []conv.Message{sys, u("Hi, who are you?"), a("original answer one"), u("What can you do?"), a("original answer two")}
	c1 := ask(chat[:2])
	chatAll := []conv.Message{sys, chat[1], c1, chat[3], ask([]conv.Message{sys, chat[1], c1, chat[3]})}
	chatLast := []conv.Message{sys, chat[1], chat[2], chat[3], ask(chat[:4])}

	tests := []struct {
		turns string
		in    []conv.Message
		want  []conv.Message
	}{
		{"last", mtbench, mtWant},
		{"all", mtbench, mtWant},
		{"all", chat, chatAll},
		{"last", chat, chatLast},
	}
	for _, tt := range tests {
		t.Run(tt.turns, func(t *testing.T) {
			dir := t.TempDir()
			line, _ := json.Marshal(map[string]any{"messages": tt.in})
			os.WriteFile(filepath.Join(dir, "d.jsonl"), append(line, '\n'), 0o644)
			spec := `version: 1
name: turns
state: state.db
datasets: {d: {source: d.jsonl, format: messages}}
endpoints: {sim: {api: sim, options: {seed: 4, mean_tokens: 40}}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 300, turns: ` + tt.turns + `}}
  - {name: merge, uses: merge, needs: [generate], with: {out: out.jsonl}}
`
			enginetest.OpenAndRun(t, dir, spec)
			var got struct{ Messages []conv.Message }
			if err := json.Unmarshal(bytes.TrimSpace(mustRead(t, filepath.Join(dir, "out.jsonl"))), &got); err != nil {
				t.Fatal(err)
			}
			w, _ := json.Marshal(tt.want)
			g, _ := json.Marshal(got.Messages)
			if !bytes.Equal(w, g) {
				t.Errorf("turns %s:\n got %s\nwant %s", tt.turns, g, w)
			}
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
