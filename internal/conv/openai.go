package conv

// OpenAIMessage is a message in OpenAI's chat field names, the shape stock
// Hugging Face chat templates, SpecForge and speculators read:
// reasoning as reasoning_content, tool calls as {id, type: function,
// function: {name, arguments}} with the arguments a JSON string.
type OpenAIMessage struct {
	Role             string           `json:"role"`
	Content          string           `json:"content"`
	ReasoningContent string           `json:"reasoning_content,omitempty"`
	ToolCalls        []OpenAIToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string           `json:"tool_call_id,omitempty"`
	Name             string           `json:"name,omitempty"`
}

// OpenAIToolCall is one call in OpenAI's shape.
type OpenAIToolCall struct {
	ID       string         `json:"id,omitempty"`
	Type     string         `json:"type"`
	Function OpenAIFunction `json:"function"`
}

// OpenAIFunction is a called function with its arguments as a JSON string.
type OpenAIFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// OpenAITool is a tool definition in OpenAI's shape.
type OpenAITool struct {
	Type     string  `json:"type"`
	Function ToolDef `json:"function"`
}

// ToOpenAI converts messages to OpenAI's field names. Arguments keep the
// source's own text when it gave them as a string.
func ToOpenAI(msgs []Message) []OpenAIMessage {
	out := make([]OpenAIMessage, len(msgs))
	for i, m := range msgs {
		om := OpenAIMessage{Role: m.Role, Content: m.Content, ReasoningContent: m.Reasoning, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, c := range m.ToolCalls {
			args := c.ArgumentsText
			if args == "" {
				args = string(c.Arguments)
			}
			if args == "" {
				args = "{}"
			}
			om.ToolCalls = append(om.ToolCalls, OpenAIToolCall{ID: c.ID, Type: "function", Function: OpenAIFunction{Name: c.Name, Arguments: args}})
		}
		out[i] = om
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
