package dataset

import (
	"encoding/json"
	"fmt"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

var shapeMessages = &shape{
	name: "messages",
	doc:  "OpenAI chat rows {messages: [{role, content, reasoning_content, tool_calls}], tools}; also conversations/history/prompt lists of role messages",
	match: func(_ []byte, obj object, m mapping) bool {
		list, _ := messageList(obj, m)
		return firstElemHas(list, roleKeys(m, "role")...)
	},
	convert: convertChat,
}

var shapeShareGPT = &shape{
	name: "sharegpt",
	doc:  "ShareGPT rows {conversations: [{from: human/gpt/function_call/observation, value}], system, tools}",
	match: func(_ []byte, obj object, m mapping) bool {
		list, _ := messageList(obj, m)
		return firstElemHas(list, roleKeys(m, "from")...)
	},
	convert: convertChat,
}

var shapeMessagesArray = &shape{
	name: "messages-array",
	doc:  "a bare array of role messages per row: [{role, content}, ...]",
	match: func(raw []byte, _ object, _ mapping) bool {
		return isArray(raw)
	},
	convert: func(raw []byte, m mapping) (*conv.Record, *RowError) {
		if !isArray(raw) {
			return nil, rowErr("wrong shape", "row is a JSON %s, but the file's rows are bare message arrays", jsonKind(raw))
		}
		msgs, err := convertMessages(raw, m)
		if err != nil {
			return nil, err
		}
		return &conv.Record{Messages: msgs}, nil
	},
}

// roleKeys is the role key the mapping names, else the defaults given.
func roleKeys(m mapping, defaults ...string) []string {
	if k, ok := m.fields[fieldRole]; ok {
		return []string{k}
	}
	return defaults
}

// messageList finds a row's list of messages: a messages key, or a prompt
// that is a list (verl RL rows).
func messageList(obj object, m mapping) (json.RawMessage, string) {
	if obj == nil {
		return nil, ""
	}
	if k, ok := m.key(obj, fieldMessages); ok && isArray(obj[k]) {
		return obj[k], k
	}
	if p := obj["prompt"]; isArray(p) {
		return p, "prompt"
	}
	return nil, ""
}

// convertChat converts a row holding a message list, with an optional
// top-level system prompt and tool list.
func convertChat(raw []byte, m mapping) (*conv.Record, *RowError) {
	var obj object
	var lists []decodedList
	var err *RowError
	// obj and lists may be the scanner's own, reused for the next row: it
	// goes back to the pool once this row is converted.
	s := scanners.Get().(*scanner)
	defer scanners.Put(s)
	if len(m.fields) > 0 || len(raw) == 0 || raw[0] != '{' {
		obj, err = decodeObject(raw, "chat")
	} else if o, l, ok := s.chatRow(raw); ok {
		obj, lists = o, l
	} else {
		obj, err = decodeObject(raw, "chat")
	}
	if err != nil {
		return nil, err
	}
	list, key := messageList(obj, m)
	if list == nil {
		return nil, rowErr("wrong shape", "row has no message list (looked for %v); the file's first row had one", fields[fieldMessages].keys)
	}
	var msgs []conv.Message
	if raws, ok := decoded(lists, key); ok {
		msgs, err = convertRaws(raws, m)
	} else {
		msgs, err = convertMessages(list, m)
	}
	if err != nil {
		err.Reason = fmt.Sprintf("%s: %s", key, err.Reason)
		return nil, err
	}
	msgs, err = withSystem(obj, m, msgs)
	if err != nil {
		return nil, err
	}
	tools, err := parseTools(m.get(obj, fieldTools))
	if err != nil {
		return nil, err
	}
	return &conv.Record{Messages: msgs, Tools: tools}, nil
}

// withSystem prepends a row-level system prompt unless the messages
// already open with a system message.
func withSystem(obj object, m mapping, msgs []conv.Message) ([]conv.Message, *RowError) {
	sys, ok := str(m.get(obj, fieldSystem))
	if !ok {
		return nil, rowErr("bad system", "system is not a string")
	}
	if sys == "" || (len(msgs) > 0 && msgs[0].Role == conv.System) {
		return msgs, nil
	}
	return append([]conv.Message{{Role: conv.System, Content: sys}}, msgs...), nil
}

// convertMessages converts a JSON list of messages in any vocabulary,
// ties tool results to their calls and checks the conversation.
func convertMessages(list json.RawMessage, m mapping) ([]conv.Message, *RowError) {
	raws, err := decodeMessages(list, m)
	if err != nil {
		return nil, err
	}
	return convertRaws(raws, m)
}

// convertRaws is convertMessages after decoding.
func convertRaws(raws []rawMessage, m mapping) ([]conv.Message, *RowError) {
	msgs := make([]conv.Message, 0, len(raws))
	for i, r := range raws {
		msg, err := convertMessage(r, m)
		if err != nil {
			err.Reason = fmt.Sprintf("message %d: %s", i, err.Reason)
			return nil, err
		}
		msgs = append(msgs, msg)
	}
	if m.asGiven {
		return msgs, nil
	}
	tieToolResults(msgs)
	if err := checkConversation(msgs); err != nil {
		return nil, err
	}
	return msgs, nil
}

// rawMessage is one message's fields, found under whichever key the
// dataset uses, before conversion.
type rawMessage struct {
	role, content, reasoning, toolCalls, functionCall, toolCallID, toolCallIDs, name json.RawMessage
}

// wireMessage decodes every usual key of a message in one pass: the fast
// path, taken when the mapping renames no message field.
type wireMessage struct {
	Role             json.RawMessage `json:"role"`
	From             json.RawMessage `json:"from"`
	Speaker          json.RawMessage `json:"speaker"`
	Content          json.RawMessage `json:"content"`
	Value            json.RawMessage `json:"value"`
	Text             json.RawMessage `json:"text"`
	ReasoningContent json.RawMessage `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
	Thinking         json.RawMessage `json:"thinking"`
	ToolCalls        json.RawMessage `json:"tool_calls"`
	FunctionCall     json.RawMessage `json:"function_call"`
	ToolCallID       json.RawMessage `json:"tool_call_id"`
	ToolCallIDs      json.RawMessage `json:"tool_call_ids"`
	Name             json.RawMessage `json:"name"`
}

// messageFields are the mapping names that rename a key inside messages.
var messageFields = []field{fieldRole, fieldContent, fieldReasoning, fieldToolCalls}

func decodeMessages(list json.RawMessage, m mapping) ([]rawMessage, *RowError) {
	mapped := false
	for _, f := range messageFields {
		_, ok := m.fields[f]
		mapped = mapped || ok
	}
	if !mapped {
		if raws, ok := scanMessages(list); ok {
			return raws, nil
		}
		var wires []wireMessage
		if err := json.Unmarshal(list, &wires); err != nil {
			return nil, rowErr("wrong shape", "messages are not a list of objects: %v", err)
		}
		return fromWires(wires), nil
	}
	var objs []object
	if err := json.Unmarshal(list, &objs); err != nil {
		return nil, rowErr("wrong shape", "messages are not a list of objects: %v", err)
	}
	raws := make([]rawMessage, len(objs))
	for i, o := range objs {
		roleKey, _ := m.key(o, fieldRole)
		raws[i] = rawMessage{
			role:         o[roleKey],
			content:      m.get(o, fieldContent),
			reasoning:    m.get(o, fieldReasoning),
			toolCalls:    m.get(o, fieldToolCalls),
			functionCall: o["function_call"],
			toolCallID:   o["tool_call_id"],
			toolCallIDs:  o["tool_call_ids"],
			name:         o["name"],
		}
	}
	return raws, nil
}

// fromWires picks each message's fields from the keys decoded.
func fromWires(wires []wireMessage) []rawMessage {
	raws := make([]rawMessage, len(wires))
	for i, w := range wires {
		raws[i] = w.raw()
	}
	return raws
}

// raw picks the message's fields from the keys decoded.
func (w *wireMessage) raw() rawMessage {
	return rawMessage{
		role:         present(w.Role, w.From, w.Speaker),
		content:      present(w.Content, w.Value, w.Text),
		reasoning:    present(w.ReasoningContent, w.Reasoning, w.Thinking),
		toolCalls:    w.ToolCalls,
		functionCall: w.FunctionCall,
		toolCallID:   w.ToolCallID,
		toolCallIDs:  w.ToolCallIDs,
		name:         w.Name,
	}
}

// present returns the first value given that is present and not null.
func present(vs ...json.RawMessage) json.RawMessage {
	for _, v := range vs {
		if len(v) > 0 && string(v) != "null" {
			return v
		}
	}
	return nil
}

func convertMessage(o rawMessage, m mapping) (conv.Message, *RowError) {
	var msg conv.Message
	word, ok := roleWord(o.role)
	if !ok || word == "" {
		return msg, rowErr("unknown role", "no role (looked for %v); name the role key with mapping: {role: KEY}", fields[fieldRole].keys)
	}
	msg.Role = m.role(word)
	if msg.Role == "" {
		return msg, rowErr("unknown role", "role %q is not one eaglet knows; map it with mapping: {role.user: %q} (or role.assistant, role.system, role.tool)", word, word)
	}
	c, err := parseContent(o.content)
	if err != nil {
		return msg, err
	}
	msg.Content, msg.Reasoning = c.text, c.reasoning
	msg.NullContent, msg.Parts = c.null, c.parts
	msg.ToolCalls = c.calls
	if r, ok := str(o.reasoning); !ok {
		return msg, rowErr("bad reasoning", "reasoning is not a string")
	} else if r != "" {
		msg.Reasoning = joinNonEmpty(msg.Reasoning, r)
	}
	if word == "function_call" {
		// ShareGPT (LLaMA-Factory, Glaive) puts the call, as JSON, in value.
		calls, err := parseCallText(msg.Content)
		if err != nil {
			return msg, err
		}
		msg.Content, msg.NullContent, msg.ToolCalls = "", false, append(msg.ToolCalls, calls...)
	}
	calls, err := parseToolCalls(o.toolCalls)
	if err != nil {
		return msg, err
	}
	msg.ToolCalls = append(msg.ToolCalls, calls...)
	if fc := o.functionCall; len(fc) > 0 && string(fc) != "null" {
		call, err := parseToolCall(fc)
		if err != nil {
			return msg, err
		}
		msg.ToolCalls = append(msg.ToolCalls, call)
	}
	if m.asGiven {
		msg.ToolCallID, _ = str(o.toolCallID)
		msg.Name, _ = str(o.name)
		return msg, nil
	}
	if msg.Role == conv.Assistant && msg.Reasoning == "" {
		msg.Reasoning, msg.Content = splitReasoning(msg.Content)
	}
	if msg.Role == conv.Tool {
		msg.ToolCallID, _ = str(o.toolCallID)
		if msg.ToolCallID == "" {
			msg.ToolCallID = firstID(o.toolCallIDs)
		}
		msg.Name, _ = str(o.name)
	}
	return msg, nil
}

// knownWords holds each word of roleWords as its own value.
var knownWords = func() map[string]string {
	words := make(map[string]string, len(roleWords))
	for w := range roleWords {
		words[w] = w
	}
	return words
}()

// roleWord is str of a message's role: a word roleWords knows, spelt
// without escapes, is the map's string rather than a copy out of the row,
// which saves an allocation a message.
func roleWord(raw json.RawMessage) (string, bool) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		if w, ok := knownWords[string(raw[1:n-1])]; ok {
			return w, true
		}
	}
	return str(raw)
}

// firstID reads the first id of a tool_call_ids list, given as JSON or as
// a Python list repr (SWE-agent).
func firstID(raw json.RawMessage) string {
	var ids []string
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		return ids[0]
	}
	if s, ok := str(raw); ok && s != "" {
		if j, err := pythonToJSON(s); err == nil && json.Unmarshal(j, &ids) == nil && len(ids) > 0 {
			return ids[0]
		}
	}
	return ""
}

// tieToolResults gives id-less calls a stable id (call_N, by position in
// the conversation) and ties id-less tool results to the oldest unanswered
// call, so every result names the call it answers.
func tieToolResults(msgs []conv.Message) {
	type call struct{ id, name string }
	var open []call
	n := 0
	for i := range msgs {
		msg := &msgs[i]
		for j := range msg.ToolCalls {
			tc := &msg.ToolCalls[j]
			if tc.ID == "" {
				tc.ID = fmt.Sprintf("call_%d", n)
			}
			n++
			open = append(open, call{tc.ID, tc.Name})
		}
		if msg.Role != conv.Tool {
			continue
		}
		k := -1
		for j, c := range open {
			if c.id == msg.ToolCallID || (msg.ToolCallID == "" && (msg.Name == "" || msg.Name == c.name)) {
				k = j
				break
			}
		}
		if k < 0 {
			continue
		}
		if msg.ToolCallID == "" {
			msg.ToolCallID = open[k].id
		}
		if msg.Name == "" {
			msg.Name = open[k].name
		}
		open = append(open[:k], open[k+1:]...)
	}
}

// checkConversation rejects conversations later stages cannot use.
func checkConversation(msgs []conv.Message) *RowError {
	if len(msgs) == 0 {
		return rowErr("no messages", "conversation has no messages")
	}
	user := false
	for i, msg := range msgs {
		switch msg.Role {
		case conv.User:
			user = true
			if msg.Content == "" {
				return rowErr("empty turn", "message %d (user) is empty", i)
			}
		case conv.Assistant:
			if msg.Content == "" && msg.Reasoning == "" && len(msg.ToolCalls) == 0 {
				return rowErr("empty turn", "message %d (assistant) is empty: no content, reasoning or tool calls", i)
			}
		}
	}
	if !user {
		return rowErr("no user message", "conversation has no user message, so there is no prompt to answer")
	}
	return nil
}

func joinNonEmpty(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}
