package dataset

import (
	"encoding/json"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

// content is a message's content split into its canonical parts.
type content struct {
	text      string
	reasoning string
	calls     []conv.ToolCall
	// null is set when content was null or absent, not "".
	null bool
	// parts are the text parts of a list of several.
	parts []string
}

// parseContent reads content given as a string, null, or a list of typed
// parts: {type: text, text|value}, {type: reasoning|thinking, ...},
// {type: tool_call, value} (LLaMA-Factory v1) or bare strings. Media parts
// are an error: eaglet trains text-only draft models, and dropping an
// image would silently change what the user asked.
func parseContent(raw json.RawMessage) (content, *RowError) {
	var c content
	switch {
	case len(raw) == 0 || string(raw) == "null":
		c.null = true
		return c, nil
	case isString(raw):
		s, _ := str(raw)
		c.text = s
		return c, nil
	case !isArray(raw):
		return c, rowErr("bad content", "content is a JSON %s; want a string or a list of parts", jsonKind(raw))
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return c, rowErr("bad content", "content parts: %v", err)
	}
	var reasoning strings.Builder
	var texts []string
	for i, p := range parts {
		if s, ok := str(p); ok && isString(p) {
			texts = append(texts, s)
			continue
		}
		var part struct {
			Type  string          `json:"type"`
			Text  *string         `json:"text"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(p, &part); err != nil {
			return c, rowErr("bad content", "content part is a JSON %s; want an object with a type", jsonKind(p))
		}
		body := ""
		if part.Text != nil {
			body = *part.Text
		} else if v, ok := str(part.Value); ok {
			body = v
		}
		switch part.Type {
		case "text", "input_text", "output_text", "":
			texts = append(texts, body)
		case "reasoning", "thinking":
			reasoning.WriteString(body)
		case "tool_call", "function_call":
			if !isString(part.Value) {
				call, err := parseToolCall(part.Value)
				if err != nil {
					return c, err
				}
				c.calls = append(c.calls, call)
				continue
			}
			calls, err := parseCallText(body)
			if err != nil {
				return c, err
			}
			c.calls = append(c.calls, calls...)
		case "image", "image_url", "input_image", "video", "video_url", "audio", "input_audio", "file":
			return c, rowErr("media content", "content part %d is of type %s; eaglet builds text-only training data: drop multimodal rows", i, part.Type)
		default:
			return c, rowErr("bad content", "content part %d has type %q, not one eaglet knows (text, reasoning, tool_call)", i, part.Type)
		}
	}
	// Joined without a separator, as before parts were kept, so record
	// keys do not change; templates and servers get the parts themselves.
	c.text, c.reasoning = strings.Join(texts, ""), reasoning.String()
	if len(texts) > 1 {
		c.parts = texts
	}
	return c, nil
}

// Inline reasoning markers: <think> (Qwen, DeepSeek-R1) and the Sky-T1 /
// Bespoke thought and solution markers.
const (
	thoughtOpen   = "<|begin_of_thought|>"
	thoughtClose  = "<|end_of_thought|>"
	solutionOpen  = "<|begin_of_solution|>"
	solutionClose = "<|end_of_solution|>"
)

// splitReasoning separates inline reasoning from an assistant's answer. A
// trace that never closes is all reasoning. A bare </think> with no opener
// is the R1 style, where the chat template already wrote <think>.
func splitReasoning(s string) (reasoning, answer string) {
	t := strings.TrimLeft(s, " \t\r\n")
	switch {
	case strings.HasPrefix(t, conv.ThinkStart):
		r, a, closed := strings.Cut(t[len(conv.ThinkStart):], conv.ThinkEnd)
		if !closed {
			return strings.TrimSpace(r), ""
		}
		return strings.TrimSpace(r), strings.TrimLeft(a, " \t\r\n")
	case strings.HasPrefix(t, thoughtOpen):
		r, a, closed := strings.Cut(t[len(thoughtOpen):], thoughtClose)
		if !closed {
			return strings.TrimSpace(r), ""
		}
		a = strings.TrimSpace(a)
		if body, ok := strings.CutPrefix(a, solutionOpen); ok {
			body, _, _ = strings.Cut(body, solutionClose)
			a = body
		}
		return strings.TrimSpace(r), strings.TrimSpace(a)
	case !strings.Contains(s, conv.ThinkStart) && strings.Contains(s, conv.ThinkEnd):
		r, a, _ := strings.Cut(s, conv.ThinkEnd)
		return strings.TrimSpace(r), strings.TrimLeft(a, " \t\r\n")
	}
	return "", s
}
