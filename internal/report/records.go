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
	PromptIDs  []int     `json:"prompt_ids,omitempty"`
	MoreIDs    int       `json:"more_ids,omitempty"`
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
		r.PromptIDs = rec.PromptIDs
		if len(r.PromptIDs) > maxIDs {
			r.PromptIDs, r.MoreIDs = r.PromptIDs[:maxIDs], len(r.PromptIDs)-maxIDs
		}
		out = append(out, r)
	}
	return out, nil
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
