package conv

// OpenAIMessage is a message in OpenAI's chat field names: the one wire
// shape eaglet sends to chat servers, writes for stock Hugging Face chat
// templates, SpecForge and speculators, and the sim server reads.
// Reasoning is reasoning_content, tool calls are {id, type: function,
// function: {name, arguments}} with the arguments a JSON string.
type OpenAIMessage struct {
	Role string `json:"role"`
	// Content is a string, or as the source spelt it (WireMessages): null
	// or a list of text parts.
	Content          any              `json:"content"`
	ReasoningContent string           `json:"reasoning_content,omitempty"`
	ToolCalls        []OpenAIToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string           `json:"tool_call_id,omitempty"`
	Name             string           `json:"name,omitempty"`
}

// OpenAIToolCall is one call in OpenAI's shape, or a streamed piece of one.
type OpenAIToolCall struct {
	// Index places a streamed piece in its call; nil outside a stream.
	Index *int `json:"index,omitempty"`
	// ID, Type and the function's name come with a stream's first piece
	// of a call only, so they are left out when empty.
	ID       string         `json:"id,omitempty"`
	Type     string         `json:"type,omitempty"`
	Function OpenAIFunction `json:"function"`
}

// OpenAIFunction is a called function with its arguments as a JSON string.
type OpenAIFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// OpenAITool is a tool definition in OpenAI's shape.
type OpenAITool struct {
	Type     string  `json:"type"`
	Function ToolDef `json:"function"`
}

// WireMessages converts messages to OpenAI's shape as the source spelt
// them, so a server's template sees what eaglet's does: null content stays
// null, text parts stay parts, string arguments keep their text.
func WireMessages(msgs []Message) []OpenAIMessage {
	out := make([]OpenAIMessage, len(msgs))
	for i, m := range msgs {
		out[i] = OpenAIMessage{Role: m.Role, Content: m.WireContent(), ReasoningContent: m.Reasoning,
			ToolCallID: m.ToolCallID, Name: m.Name}
		for _, c := range m.ToolCalls {
			args := c.ArgumentsText
			if args == "" {
				args = string(c.Arguments)
			}
			out[i].ToolCalls = append(out[i].ToolCalls, OpenAIToolCall{ID: c.ID, Type: "function", Function: OpenAIFunction{Name: c.Name, Arguments: args}})
		}
	}
	return out
}

// ToOpenAI converts messages to OpenAI's field names for trainers: content
// is always a string and arguments are "{}" when the source gave none.
// Arguments keep the source's own text when it gave them as a string.
func ToOpenAI(msgs []Message) []OpenAIMessage {
	out := WireMessages(msgs)
	for i := range out {
		out[i].Content = msgs[i].Content
		for j := range out[i].ToolCalls {
			if f := &out[i].ToolCalls[j].Function; f.Arguments == "" {
				f.Arguments = "{}"
			}
		}
	}
	return out
}

// ToolsToOpenAI wraps tool definitions as {type: function, function: ...}.
func ToolsToOpenAI(tools []ToolDef) []OpenAITool {
	if len(tools) == 0 {
		return nil
	}
	out := make([]OpenAITool, len(tools))
	for i, t := range tools {
		out[i] = OpenAITool{Type: "function", Function: t}
	}
	return out
}
