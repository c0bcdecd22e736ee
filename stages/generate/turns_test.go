package generate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
	"github.com/eaglet-dev/eaglet/state"
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

// TestTurns_TokenIDAPIs: SGLang's /generate and /v1/completions take token
// ids, which the tokenize stage makes for the first turn only. With
// `tokenizer:` on generate, each later turn is rendered with the chat
// template, conditioned on the target's own first answer; without it the
// record fails saying what to set.
func TestTurns_TokenIDAPIs(t *testing.T) {
	tokDir, err := filepath.Abs("../../internal/tokenizer/testdata/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(tokDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, endpoint, tokenizer string
		wantFailed                bool
	}{
		{"sglang", "api: sglang, urls: [%q]", tokDir, false},
		{"completions", "api: openai, urls: [\"%s/v1\"], options: {completions: true}", tokDir, false},
		{"sglang without tokenizer", "api: sglang, urls: [%q]", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var prompts []string // each request's prompt, decoded
			url := serveRecording(t, server.Config{Model: sim.New(sim.Config{Seed: 2, MeanTokens: 30})}, func(body []byte) {
				var req struct {
					InputIDs []int `json:"input_ids"`
					Prompt   []int `json:"prompt"`
				}
				if json.Unmarshal(body, &req) == nil {
					prompts = append(prompts, tok.Decode(append(req.InputIDs, req.Prompt...)))
				}
			})
			dir := t.TempDir()
			rows := `{"messages":[{"role":"user","content":"Write a haiku about rain."},{"role":"user","content":"Now make it about snow."}]}` + "\n"
			if err := os.WriteFile(filepath.Join(dir, "mt.jsonl"), []byte(rows), 0o644); err != nil {
				t.Fatal(err)
			}
			gen := "max_tokens: 64"
			if tc.tokenizer != "" {
				gen += ", tokenizer: " + tc.tokenizer
			}
			p, store := enginetest.Open(t, dir, fmt.Sprintf(`version: 1
name: ids
state: state.db
datasets:
  mt: {source: mt.jsonl}
endpoints:
  target: {`+tc.endpoint+`}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: tokenize, uses: tokenize, needs: [load], foreach: datasets, with: {tokenizer: %s}}
  - {name: generate, uses: generate, needs: [tokenize], foreach: datasets, with: {%s}}
`, url, tokDir, gen))
			enginetest.Run(t, p, store, nil)
			counts, err := store.Counts("generate[mt]")
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantFailed {
				if len(counts) != 1 || counts[0].Status != 3 || !strings.Contains(counts[0].Reason, "set `tokenizer:` on the generate stage") {
					t.Errorf("counts %+v; want the record failed saying to set tokenizer", counts)
				}
				return
			}
			var rec conv.Record
			store.EachOutput(context.Background(), []string{"generate[mt]"}, func(row state.Row) error {
				return json.Unmarshal(row.Data, &rec)
			})
			// The last answer is the record's generation; the first joins the messages.
			if len(rec.Messages) != 3 || rec.Messages[1].Role != conv.Assistant || rec.Generation == nil || rec.Generation.Content == "" {
				t.Fatalf("record %+v, generation %+v; want question, answer, follow-up and a generated answer", rec.Messages, rec.Generation)
			}
			if len(prompts) != 2 {
				t.Fatalf("server got %d prompts; want 2", len(prompts))
			}
			second := prompts[1]
			first := rec.Messages[1].Content
			if !strings.Contains(second, "Write a haiku about rain.") || !strings.Contains(second, first) ||
				!strings.HasSuffix(second, "Now make it about snow.<|im_end|>\n<|im_start|>assistant\n") {
				t.Errorf("second prompt %q; want the first question, the target's answer %q and the follow-up, in the chat template", second, first)
			}
		})
	}
}

// TestTurns_RegenerateToolTurns: with tool_turns: regenerate the target
// answers the source's tool-call turns too; when it calls the same
// function its call takes the source's id and the recorded result follows,
// otherwise its answer ends the conversation there.
func TestTurns_RegenerateToolTurns(t *testing.T) {
	row := `{"messages": [{"role": "user", "content": "Book a table for two in Paris."}, {"role": "assistant", "content": "", "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "book_table", "arguments": "{\"city\": \"Paris\"}"}}]}, {"role": "tool", "tool_call_id": "call_9", "content": "{\"ok\": true}"}, {"role": "user", "content": "What should I wear?"}], "tools": [{"type": "function", "function": {"name": "book_table", "parameters": {"type": "object"}}}]}`
	for _, tc := range []struct {
		rate     string
		messages int // messages before the final answer
		turns    int
	}{
		{"1", 4, 1}, // the target calls book_table: spliced, the result follows
		{"0", 1, 0}, // the target answers in words: the conversation ends there
	} {
		t.Run("tool_call_rate "+tc.rate, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(row+"\n"), 0o644)
			spec := `version: 1
name: tools
state: state.db
datasets: {d: {source: d.jsonl, format: messages}}
endpoints: {sim: {api: sim, options: {seed: 4, mean_tokens: 40, tool_call_rate: ` + tc.rate + `}}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 300, turns: all, tool_turns: regenerate}}
  - {name: merge, uses: merge, needs: [generate], with: {out: out.jsonl, format: record}}
`
			enginetest.OpenAndRun(t, dir, spec)
			var got conv.Record
			if err := json.Unmarshal(bytes.TrimSpace(mustRead(t, filepath.Join(dir, "out.jsonl"))), &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Messages) != tc.messages || len(got.Generation.Turns) != tc.turns {
				t.Fatalf("%d messages and %d earlier turns before the answer; want %d and %d:\n%s", len(got.Messages), len(got.Generation.Turns), tc.messages, tc.turns, mustRead(t, filepath.Join(dir, "out.jsonl")))
			}
			if tc.turns == 1 {
				m := got.Messages[got.Generation.Turns[0].Message]
				if len(m.ToolCalls) != 1 || m.ToolCalls[0].ID != "call_9" || m.ToolCalls[0].Name != "book_table" || string(m.ToolCalls[0].Arguments) == `{"city": "Paris"}` {
					t.Errorf("spliced turn %+v: want the target's own book_table call under the source's id call_9", m)
				}
				if got.Messages[2].Role != conv.Tool || got.Messages[2].ToolCallID != "call_9" {
					t.Errorf("the recorded tool result does not follow the spliced call: %+v", got.Messages[2])
				}
			}
		})
	}
}
