package dataset

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

// parseToolCalls reads a tool_calls list given as JSON, as a JSON string,
// or as a Python list repr (SWE-agent trajectories).
func parseToolCalls(raw json.RawMessage) ([]conv.ToolCall, *RowError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if isString(raw) {
		s, _ := str(raw)
		if strings.TrimSpace(s) == "" {
			return nil, nil
		}
		if json.Valid([]byte(s)) {
			raw = json.RawMessage(s)
		} else if j, err := pythonToJSON(s); err == nil {
			raw = j
		} else {
			return nil, rowErr("bad tool call", "tool_calls is a string that is neither JSON nor a Python list: %v", err)
		}
	}
	if isObject(raw) {
		call, err := parseToolCall(raw)
		if err != nil {
			return nil, err
		}
		return []conv.ToolCall{call}, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, rowErr("bad tool call", "tool_calls is a JSON %s; want a list of calls", jsonKind(raw))
	}
	calls := make([]conv.ToolCall, 0, len(list))
	for _, el := range list {
		call, err := parseToolCall(el)
		if err != nil {
			return nil, err
		}
		calls = append(calls, call)
	}
	return calls, nil
}

// parseToolCall reads one call: {id, type: function, function: {name,
// arguments}} or the bare {name, arguments} (legacy function_call,
// functionary, LLaMA-Factory).
func parseToolCall(raw json.RawMessage) (conv.ToolCall, *RowError) {
	var w struct {
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Function  *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return conv.ToolCall{}, rowErr("bad tool call", "tool call is a JSON %s; want an object with a name and arguments", jsonKind(raw))
	}
	if w.Function != nil {
		w.Name, w.Arguments = w.Function.Name, w.Function.Arguments
	}
	if w.Name == "" {
		return conv.ToolCall{}, rowErr("bad tool call", "tool call has no function name")
	}
	args, err := normalizeArgs(w.Arguments)
	if err != nil && codeTools[w.Name] {
		args, err = codeArgs(w.Arguments)
	}
	if err != nil {
		err.Reason = "tool call " + w.Name + ": " + err.Reason
		return conv.ToolCall{}, err
	}
	call := conv.ToolCall{ID: w.ID, Name: w.Name, Arguments: args}
	// Text equal to the compact object is left out: it is what a template
	// that wants a string is given anyway.
	if s, ok := str(w.Arguments); ok && isString(w.Arguments) && strings.TrimSpace(s) != "" && s != string(args) {
		call.ArgumentsText = s
	}
	return call, nil
}

// codeTools are code-interpreter tools whose arguments are, by the
// convention of functionary and OpenAI's code interpreter, the bare code.
var codeTools = map[string]bool{"python": true, "code_interpreter": true}

// codeArgs wraps bare code as {"code": ...}, the code interpreter's schema.
func codeArgs(raw json.RawMessage) (json.RawMessage, *RowError) {
	s, ok := str(raw)
	if !ok || strings.HasPrefix(strings.TrimSpace(s), "{") {
		return nil, rowErr("bad tool call", "arguments are cut off or not JSON: %.80q", s)
	}
	b, _ := json.Marshal(map[string]string{"code": s})
	return b, nil
}

// parseCallText reads the JSON text of one call or a list of calls, as
// ShareGPT function_call turns and tool_call parts carry them.
func parseCallText(s string) ([]conv.ToolCall, *RowError) {
	raw := json.RawMessage(strings.TrimSpace(s))
	if !json.Valid(raw) {
		return nil, rowErr("bad tool call", "function call text is not valid JSON (cut off?): %.80q", s)
	}
	return parseToolCalls(raw)
}

// normalizeArgs returns arguments as a compact JSON object, decoding the
// string and double-encoded string forms. Cut-off JSON is an error: a
// half call would teach the draft model a broken call.
func normalizeArgs(raw json.RawMessage) (json.RawMessage, *RowError) {
	for range 3 {
		switch {
		case len(raw) == 0 || string(raw) == "null":
			return json.RawMessage("{}"), nil
		case isObject(raw):
			var buf bytes.Buffer
			if err := json.Compact(&buf, raw); err != nil {
				return nil, rowErr("bad tool call", "arguments are not valid JSON: %v", err)
			}
			return buf.Bytes(), nil
		case isString(raw):
			s, _ := str(raw)
			s = strings.TrimSpace(s)
			if s == "" {
				return json.RawMessage("{}"), nil
			}
			if !json.Valid([]byte(s)) {
				return nil, rowErr("bad tool call", "arguments are cut off or not JSON: %.80q", s)
			}
			raw = json.RawMessage(s)
		default:
			return nil, rowErr("bad tool call", "arguments are a JSON %s; want an object", jsonKind(raw))
		}
	}
	return nil, rowErr("bad tool call", "arguments are encoded as a string more than twice")
}

// parseTools reads tool definitions given as a list or as a JSON string of
// one, each wrapped in {type: function, function: {...}} or bare. A
// built-in tool such as {type: code_interpreter} becomes a definition with
// only its name.
func parseTools(raw json.RawMessage) ([]conv.ToolDef, *RowError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if isString(raw) {
		s, _ := str(raw)
		if strings.TrimSpace(s) == "" {
			return nil, nil
		}
		if !json.Valid([]byte(s)) {
			return nil, rowErr("bad tools", "tools is a string that is not valid JSON: %.80q", s)
		}
		raw = json.RawMessage(s)
	}
	if isObject(raw) {
		raw = append(append(json.RawMessage{'['}, raw...), ']')
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, rowErr("bad tools", "tools is a JSON %s; want a list of function definitions", jsonKind(raw))
	}
	var defs []conv.ToolDef
	for i, el := range list {
		var w struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Function    json.RawMessage `json:"function"`
		}
		if err := json.Unmarshal(el, &w); err != nil {
			return nil, rowErr("bad tools", "tool %d is a JSON %s; want an object", i, jsonKind(el))
		}
		if isObject(w.Function) {
			if err := json.Unmarshal(w.Function, &w); err != nil {
				return nil, rowErr("bad tools", "tool %d: function: %v", i, err)
			}
		}
		if w.Name == "" && w.Type != "" && w.Type != "function" {
			w.Name = w.Type
		}
		if w.Name == "" {
			return nil, rowErr("bad tools", "tool %d has no name", i)
		}
		params, err := normalizeSchema(w.Parameters)
		if err != nil {
			return nil, rowErr("bad tools", "tool %s parameters: %v", w.Name, err)
		}
		defs = append(defs, conv.ToolDef{Name: w.Name, Description: w.Description, Parameters: params})
	}
	return defs, nil
}

// schemaTypes maps the Python type names some datasets write in JSON
// schemas (BFCL "dict", LLaMA-Factory "str") to JSON-schema types, as
// BFCL's own OpenAI handler does.
var schemaTypes = map[string]string{
	"dict": "object", "str": "string", "float": "number", "int": "integer",
	"bool": "boolean", "list": "array", "tuple": "array",
}

// normalizeSchema compacts a parameters schema and rewrites Python type
// names, keeping key order (chat templates print the schema as written).
func normalizeSchema(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	out := buf.Bytes()
	for py, js := range schemaTypes {
		out = bytes.ReplaceAll(out, []byte(`"type":"`+py+`"`), []byte(`"type":"`+js+`"`))
	}
	return out, nil
}
