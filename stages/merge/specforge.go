package merge

import (
	"github.com/eaglet-dev/eaglet/internal/conv"
)

// specForgeLine is one record as SpecForge's data preparation reads it:
// OpenAI-style messages under "conversations", reasoning as
// reasoning_content, tool-call arguments as a JSON string, tools wrapped
// as {type: function, function: {...}}.
type specForgeLine struct {
	ID            string             `json:"id"`
	Conversations []specForgeMessage `json:"conversations"`
	Tools         []specForgeTool    `json:"tools,omitempty"`
}

type specForgeMessage struct {
	Role             string              `json:"role"`
	Content          string              `json:"content"`
	ReasoningContent string              `json:"reasoning_content,omitempty"`
	ToolCalls        []specForgeToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string              `json:"tool_call_id,omitempty"`
	Name             string              `json:"name,omitempty"`
}

type specForgeToolCall struct {
	ID       string            `json:"id,omitempty"`
	Type     string            `json:"type"`
	Function specForgeFunction `json:"function"`
}

type specForgeFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type specForgeTool struct {
	Type     string       `json:"type"`
	Function conv.ToolDef `json:"function"`
}

func toSpecForge(rec *conv.Record) specForgeLine {
	msgs := rec.Conversation()
	out := specForgeLine{ID: rec.Key, Conversations: make([]specForgeMessage, len(msgs))}
	for i, m := range msgs {
		sm := specForgeMessage{Role: m.Role, Content: m.Content, ReasoningContent: m.Reasoning, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, c := range m.ToolCalls {
			args := string(c.Arguments)
			if args == "" {
				args = "{}"
			}
			sm.ToolCalls = append(sm.ToolCalls, specForgeToolCall{ID: c.ID, Type: "function", Function: specForgeFunction{Name: c.Name, Arguments: args}})
		}
		out.Conversations[i] = sm
	}
	for _, t := range rec.Tools {
		out.Tools = append(out.Tools, specForgeTool{Type: "function", Function: t})
	}
	return out
}
