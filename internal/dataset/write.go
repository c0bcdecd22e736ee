package dataset

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

// ErrNotRepresentable is returned by Encode for a record the format has no
// way to hold without changing it.
var ErrNotRepresentable = errors.New("record cannot be written in this format without loss")

// Encode returns rec as one JSONL row of format "messages" (OpenAI, with
// reasoning_content and wrapped tools) or "sharegpt" (LLaMA-Factory's
// from/value with function_call and observation turns, system and tools
// as fields). Reading the row back yields the same messages and tools.
func Encode(rec *conv.Record, format string) ([]byte, error) {
	switch format {
	case "messages":
		return encodeMessages(rec)
	case "sharegpt":
		return encodeShareGPT(rec)
	}
	return nil, fmt.Errorf("encode %q: %w (want messages or sharegpt)", format, ErrUnknownFormat)
}

func encodeMessages(rec *conv.Record) ([]byte, error) {
	return json.Marshal(struct {
		Messages []conv.OpenAIMessage `json:"messages"`
		Tools    []conv.OpenAITool    `json:"tools,omitempty"`
	}{conv.WireMessages(rec.Messages), conv.ToolsToOpenAI(rec.Tools)})
}

// shareGPTFrom is the ShareGPT word for each role.
var shareGPTFrom = map[string]string{conv.System: "system", conv.User: "human", conv.Assistant: "gpt", conv.Tool: "observation"}

func encodeShareGPT(rec *conv.Record) ([]byte, error) {
	type turn struct {
		From  string `json:"from"`
		Value string `json:"value"`
	}
	row := struct {
		Conversations []turn `json:"conversations"`
		System        string `json:"system,omitempty"`
		Tools         string `json:"tools,omitempty"`
	}{}
	msgs := rec.Messages
	if len(msgs) > 0 && msgs[0].Role == conv.System {
		row.System, msgs = msgs[0].Content, msgs[1:]
	}
	type call struct{ id, name string }
	var open []call
	for i, m := range msgs {
		t := turn{From: shareGPTFrom[m.Role], Value: m.Content}
		switch m.Role {
		case conv.Assistant:
			if strings.Contains(m.Content, thinkClose) || strings.TrimLeft(m.Content, " \t\r\n") != m.Content {
				return nil, fmt.Errorf("message %d: content would read back differently: %w", i, ErrNotRepresentable)
			}
			if m.Reasoning != "" {
				if strings.TrimSpace(m.Reasoning) != m.Reasoning {
					return nil, fmt.Errorf("message %d: reasoning has surrounding space: %w", i, ErrNotRepresentable)
				}
				t.Value = thinkOpen + "\n" + m.Reasoning + "\n" + thinkClose + "\n\n" + m.Content
			}
			if len(m.ToolCalls) > 0 {
				if m.Content != "" || m.Reasoning != "" {
					return nil, fmt.Errorf("message %d: a function_call turn cannot also hold text: %w", i, ErrNotRepresentable)
				}
				calls := make([]map[string]any, len(m.ToolCalls))
				for j, tc := range m.ToolCalls {
					calls[j] = map[string]any{"id": tc.ID, "name": tc.Name, "arguments": tc.Arguments}
					open = append(open, call{tc.ID, tc.Name})
				}
				b, _ := json.Marshal(calls)
				t = turn{From: "function_call", Value: string(b)}
			}
		case conv.Tool:
			// Observations carry no id: they answer calls in order.
			if len(open) == 0 || open[0].id != m.ToolCallID || open[0].name != m.Name {
				return nil, fmt.Errorf("message %d: tool result out of call order: %w", i, ErrNotRepresentable)
			}
			open = open[1:]
		}
		row.Conversations = append(row.Conversations, t)
	}
	if len(rec.Tools) > 0 {
		b, _ := json.Marshal(rec.Tools)
		row.Tools = string(b)
	}
	return json.Marshal(row)
}
