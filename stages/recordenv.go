package stages

import (
	"github.com/eaglet-dev/eaglet/internal/conv"
)

// RecordEnv returns the environment of per-record expressions (filter's
// keep, drops by length): the record's fields under flat names, plus the
// spec's vars. Called with an empty record it is the type-checking
// environment, so a misspelt field fails at validate time.
func RecordEnv(rec *conv.Record, vars any) map[string]any {
	prompt := rec.Prompt()
	var chars, turns int
	var system string
	for _, m := range prompt {
		chars += len(m.Content)
		switch m.Role {
		case conv.User:
			turns++
		case conv.System:
			system = m.Content
		}
	}
	env := map[string]any{
		"key":               rec.Key,
		"dataset":           rec.Dataset,
		"vars":              vars,
		"num_messages":      len(rec.Messages),
		"num_turns":         turns,
		"has_tools":         len(rec.Tools) > 0,
		"system":            system,
		"prompt_chars":      chars,
		"prompt_tokens":     rec.PromptTokens,
		"generated":         rec.Generation != nil,
		"completion":        "",
		"reasoning":         "",
		"finish_reason":     "",
		"completion_tokens": 0,
		"num_tool_calls":    0,
	}
	if g := rec.Generation; g != nil {
		env["completion"] = g.Content
		env["reasoning"] = g.Reasoning
		env["finish_reason"] = g.FinishReason
		env["completion_tokens"] = g.CompletionTokens
		env["num_tool_calls"] = len(g.ToolCalls)
		if g.PromptTokens > 0 {
			env["prompt_tokens"] = g.PromptTokens
		}
	}
	return env
}
