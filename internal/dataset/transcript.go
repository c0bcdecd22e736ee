package dataset

import (
	"encoding/json"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

var shapeTranscript = &shape{
	name: "transcript",
	doc:  "one flattened text transcript per row, with SYSTEM:/USER:/ASSISTANT:/TOOL: lines (Hermes few-shot); <tools> and <tool_call> blocks become tools and calls",
	match: func(_ []byte, obj object, _ mapping) bool {
		_, ok := transcriptText(obj)
		return ok
	},
	convert: func(raw []byte, _ mapping) (*conv.Record, *RowError) {
		obj, err := decodeObject(raw, "transcript")
		if err != nil {
			return nil, err
		}
		text, ok := transcriptText(obj)
		if !ok {
			return nil, rowErr("wrong shape", "row has no string field holding a SYSTEM:/USER:/ASSISTANT: transcript")
		}
		return parseTranscript(text)
	},
}

// transcriptPrefixes are the role labels that start a turn in a flattened
// transcript.
var transcriptPrefixes = []struct{ label, role string }{
	{"SYSTEM:", conv.System},
	{"USER:", conv.User},
	{"ASSISTANT:", conv.Assistant},
	{"FUNCTION RESPONSE:", conv.Tool},
	{"TOOL:", conv.Tool},
}

// transcriptText finds the single string field of a one-field row that
// holds a transcript.
func transcriptText(obj object) (string, bool) {
	if len(obj) != 1 {
		return "", false
	}
	for _, v := range obj {
		s, ok := str(v)
		if !ok || !isString(v) {
			return "", false
		}
		if strings.Contains(s, "USER:") && strings.Contains(s, "ASSISTANT:") {
			return s, true
		}
	}
	return "", false
}

func parseTranscript(text string) (*conv.Record, *RowError) {
	text = strings.Trim(strings.TrimSpace(text), "`")
	var msgs []conv.Message
	var body []string
	flush := func() {
		if len(msgs) > 0 {
			msgs[len(msgs)-1].Content = strings.TrimSpace(strings.Join(body, "\n"))
		}
		body = body[:0]
	}
	for _, line := range strings.Split(text, "\n") {
		started := false
		for _, p := range transcriptPrefixes {
			if rest, ok := strings.CutPrefix(line, p.label); ok {
				flush()
				msgs = append(msgs, conv.Message{Role: p.role})
				body = append(body, strings.TrimSpace(rest))
				started = true
				break
			}
		}
		if !started && len(msgs) > 0 {
			body = append(body, line)
		}
	}
	flush()
	var rec conv.Record
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case conv.System:
			var blocks []string
			m.Content, blocks = cutBlocks(m.Content, "<tools>", "</tools>")
			for _, b := range blocks {
				tools, err := parseTools(json.RawMessage(b))
				if err != nil {
					return nil, err
				}
				rec.Tools = append(rec.Tools, tools...)
			}
		case conv.Assistant:
			var blocks []string
			m.Content, blocks = cutBlocks(m.Content, "<tool_call>", "</tool_call>")
			for _, b := range blocks {
				calls, err := parseCallText(b)
				if err != nil {
					return nil, err
				}
				m.ToolCalls = append(m.ToolCalls, calls...)
			}
			if m.Reasoning == "" {
				m.Reasoning, m.Content = splitReasoning(m.Content)
			}
		case conv.Tool:
			m.Content, _ = strings.CutPrefix(m.Content, "<tool_response>")
			m.Content = strings.TrimSpace(strings.TrimSuffix(m.Content, "</tool_response>"))
		}
	}
	tieToolResults(msgs)
	if err := checkConversation(msgs); err != nil {
		return nil, err
	}
	rec.Messages = msgs
	return &rec, nil
}

// cutBlocks removes every open...close block from s and returns the rest
// and the blocks' trimmed bodies.
func cutBlocks(s, open, close string) (string, []string) {
	var blocks []string
	var rest strings.Builder
	for {
		before, after, ok := strings.Cut(s, open)
		if !ok {
			rest.WriteString(s)
			break
		}
		body, tail, _ := strings.Cut(after, close)
		rest.WriteString(before)
		blocks = append(blocks, strings.TrimSpace(body))
		s = tail
	}
	return strings.TrimSpace(rest.String()), blocks
}
