package report

import (
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/state"
)

// record is one sampled record as the browser's script reads it. Texts are
// cut so that the sample stays a few megabytes whatever the answers' size.
type record struct {
	Dataset    string    `json:"dataset"`
	Key        string    `json:"key"`
	Finish     string    `json:"finish"`
	Completion int       `json:"completion_tokens"`
	Prompt     int       `json:"prompt_tokens"`
	MaxTokens  int       `json:"max_tokens"`
	Messages   []message `json:"messages"`
	// Tokens is set when a tokenizer stage ran: the ids a handoff
	// supervises and those it does not.
	Tokens *tokenView `json:"tokens,omitempty"`
}

// tokenView is a record's last answer as a trainer sees it: the end of the
// prompt's ids (loss mask 0) then the answer's (loss mask 1), as handoff
// rows lay them out. Only the boundary is kept, maxIDs ids in all, so the
// sample stays small whatever the lengths.
type tokenView struct {
	// Prompt are the prompt's last ids, Earlier how many come before them.
	Prompt  []int `json:"prompt"`
	Earlier int   `json:"earlier,omitempty"`
	// Answer are the answer's first ids as the server returned them, Later
	// how many follow; none when the server returned no ids (handoff then
	// tokenizes the answer's text).
	Answer []int `json:"answer,omitempty"`
	Later  int   `json:"later,omitempty"`
	// Supervised counts the answer's ids (its tokens when the server
	// returned none): those the loss is taken on.
	Supervised int `json:"supervised"`
}

type message struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	Reasoning string `json:"reasoning,omitempty"`
	ToolCalls string `json:"tool_calls,omitempty"`
	// Answer marks the target's generated turn.
	Answer bool `json:"answer,omitempty"`
}

const (
	maxText = 1500
	maxIDs  = 256
	// keepPrompt is how many prompt messages a sampled record keeps: the
	// first (often the system prompt) and the last ones.
	keepPrompt = 4
)

func sampleRecords(ctx context.Context, st *state.Store, g Instance, n int) ([]record, error) {
	rows, err := st.Sample(ctx, g.ID, max(n, 1))
	if err != nil {
		return nil, err
	}
	var out []record
	for _, row := range rows {
		var rec conv.Record
		if err := json.Unmarshal(row.Data, &rec); err != nil {
			return nil, fmt.Errorf("report: record %s of %s: %w", row.Key, g.ID, err)
		}
		r := record{Dataset: g.Dataset, Key: rec.Key, Prompt: rec.PromptTokens}
		if r.Dataset == "" {
			r.Dataset = g.ID
		}
		prompt := rec.Prompt()
		if len(prompt) > keepPrompt {
			skipped := len(prompt) - keepPrompt + 1
			prompt = append([]conv.Message{prompt[0], {Role: "…", Content: fmt.Sprintf("%d more messages", skipped)}},
				prompt[len(prompt)-keepPrompt+1:]...)
		}
		for _, m := range prompt {
			r.Messages = append(r.Messages, cutMessage(m, false))
		}
		if gen := rec.Generation; gen != nil {
			r.Finish, r.Completion, r.MaxTokens = gen.FinishReason, max(gen.CompletionTokens, gen.TotalCompletionTokens), gen.MaxTokens
			if gen.PromptTokens > 0 {
				r.Prompt = gen.PromptTokens
			}
			r.Messages = append(r.Messages, cutMessage(gen.Message(), true))
		}
		r.Tokens = tokensOf(rec.PromptIDs, rec.Generation)
		out = append(out, r)
	}
	return out, nil
}

// tokensOf keeps the ids around the boundary between prompt and answer:
// up to half of maxIDs of each, more of one when the other is short. It is
// nil without prompt ids (no tokenizer stage ran) and for a record
// answered turn by turn, whose prompt ids are those of its first request,
// not the context of its last answer.
func tokensOf(prompt []int, gen *conv.Generation) *tokenView {
	if len(prompt) == 0 || (gen != nil && len(gen.Turns) > 0) {
		return nil
	}
	t := &tokenView{}
	var answer []int
	if gen != nil {
		answer, t.Supervised = gen.OutputIDs, len(gen.OutputIDs)
		if len(answer) == 0 {
			t.Supervised = gen.CompletionTokens
		}
	}
	keepAnswer := min(len(answer), max(maxIDs/2, maxIDs-len(prompt)))
	keepPrompt := min(len(prompt), maxIDs-keepAnswer)
	t.Prompt, t.Earlier = prompt[len(prompt)-keepPrompt:], len(prompt)-keepPrompt
	t.Answer, t.Later = answer[:keepAnswer], len(answer)-keepAnswer
	return t
}

func cutMessage(m conv.Message, answer bool) message {
	out := message{Role: m.Role, Content: cut(m.Content), Reasoning: cut(m.Reasoning), Answer: answer}
	if len(m.ToolCalls) > 0 {
		b, _ := json.MarshalIndent(m.ToolCalls, "", "  ")
		out.ToolCalls = cut(string(b))
	}
	return out
}

// cut shortens s to maxText bytes on a rune boundary, saying how much is left out.
func cut(s string) string {
	if len(s) <= maxText {
		return s
	}
	i := maxText
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf(" … (%d more bytes)", len(s)-i)
}

// maxTokensOf is the max_tokens the sampled answers were asked with: one
// value, or 0 when they differ or none says.
func maxTokensOf(rs []record) int {
	mt := -1
	for _, r := range rs {
		switch {
		case mt < 0:
			mt = r.MaxTokens
		case mt != r.MaxTokens:
			return 0
		}
	}
	return max(mt, 0)
}
