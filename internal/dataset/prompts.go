package dataset

import (
	"encoding/json"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

var shapeText = &shape{
	name: "text",
	doc:  "a bare JSON string per row: one user prompt",
	match: func(raw []byte, _ object, _ mapping) bool {
		return isString(raw)
	},
	convert: func(raw []byte, _ mapping) (*conv.Record, *RowError) {
		s, ok := str(raw)
		if !ok || !isString(raw) {
			return nil, rowErr("wrong shape", "row is a JSON %s, but the file's rows are bare strings", jsonKind(raw))
		}
		return promptRecord(nil, []string{s}, "", nil)
	},
}

var shapeBFCL = &shape{
	name: "bfcl",
	doc:  "BFCL rows {id, question: [[messages per turn]], function: [tools]}",
	match: func(_ []byte, obj object, _ mapping) bool {
		q := obj["question"]
		return isArray(q) && len(q) > 1 && strings.HasPrefix(strings.TrimLeft(string(q[1:]), " \t\r\n"), "[")
	},
	convert: func(raw []byte, m mapping) (*conv.Record, *RowError) {
		obj, err := decodeObject(raw, "bfcl")
		if err != nil {
			return nil, err
		}
		var turns []json.RawMessage
		if e := json.Unmarshal(obj["question"], &turns); e != nil {
			return nil, rowErr("wrong shape", "question is not a list of turns: %v", e)
		}
		var all []json.RawMessage
		for _, t := range turns {
			var msgs []json.RawMessage
			if e := json.Unmarshal(t, &msgs); e != nil {
				return nil, rowErr("wrong shape", "question turn is not a list of messages: %v", e)
			}
			all = append(all, msgs...)
		}
		list, _ := json.Marshal(all)
		msgs, err := convertMessages(list, m)
		if err != nil {
			return nil, err
		}
		tools, err := parseTools(obj["function"])
		if err != nil {
			return nil, err
		}
		return &conv.Record{Messages: msgs, Tools: tools}, nil
	},
}

var shapeAlpaca = &shape{
	name: "alpaca",
	doc:  "Alpaca rows {instruction, input, output, system, history: [[q, a]]}; instruction and input join with a newline",
	match: func(_ []byte, obj object, _ mapping) bool {
		return has(obj, "instruction") && (has(obj, "output") || has(obj, "input"))
	},
	convert: func(raw []byte, m mapping) (*conv.Record, *RowError) {
		obj, err := decodeObject(raw, "alpaca")
		if err != nil {
			return nil, err
		}
		instr, ok1 := str(obj["instruction"])
		input, ok2 := str(m.get(obj, fieldInput))
		if !ok1 || !ok2 {
			return nil, rowErr("wrong shape", "instruction and input must be strings")
		}
		prompt := instr
		if input != "" {
			prompt = joinNonEmpty(instr, input)
		}
		return chatWithHistory(obj, m, prompt, obj["output"])
	},
}

var shapeQueryResponse = &shape{
	name: "query-response",
	doc:  "ms-swift rows {system, query, response, history: [[q, a]]}",
	match: func(_ []byte, obj object, _ mapping) bool {
		return has(obj, "query") && has(obj, "response")
	},
	convert: func(raw []byte, m mapping) (*conv.Record, *RowError) {
		obj, err := decodeObject(raw, "query-response")
		if err != nil {
			return nil, err
		}
		q, ok := str(obj["query"])
		if !ok {
			return nil, rowErr("wrong shape", "query is not a string")
		}
		return chatWithHistory(obj, m, q, obj["response"])
	},
}

// chatWithHistory builds system, history pairs, the prompt and an optional
// response into a record.
func chatWithHistory(obj object, m mapping, prompt string, response json.RawMessage) (*conv.Record, *RowError) {
	var msgs []conv.Message
	if h := m.get(obj, fieldHistory); h != nil {
		var pairs [][]string
		if err := json.Unmarshal(h, &pairs); err != nil {
			return nil, rowErr("bad history", "history is not a list of [question, answer] pairs: %v", err)
		}
		for i, p := range pairs {
			if len(p) != 2 {
				return nil, rowErr("bad history", "history pair %d has %d items; want [question, answer]", i, len(p))
			}
			msgs = append(msgs, conv.Message{Role: conv.User, Content: p[0]}, assistantMessage(p[1]))
		}
	}
	resp, ok := str(response)
	if !ok {
		return nil, rowErr("bad response", "response is a JSON %s; want a string", jsonKind(response))
	}
	return promptRecord(msgs, []string{prompt}, resp, obj, m)
}

// promptRecord appends user turns (and an answer when there is one) to
// msgs. Several turns without answers stay consecutive user messages: see
// SplitTurns.
func promptRecord(msgs []conv.Message, turns []string, response string, obj object, ms ...mapping) (*conv.Record, *RowError) {
	for _, t := range turns {
		msgs = append(msgs, conv.Message{Role: conv.User, Content: t})
	}
	if response != "" {
		msgs = append(msgs, assistantMessage(response))
	}
	if obj != nil && len(ms) > 0 {
		var err *RowError
		if msgs, err = withSystem(obj, ms[0], msgs); err != nil {
			return nil, err
		}
	}
	if err := checkConversation(msgs); err != nil {
		return nil, err
	}
	return &conv.Record{Messages: msgs}, nil
}

// assistantMessage makes an answer, splitting off inline reasoning and a
// trailing ChatML end marker left by rollout dumps.
func assistantMessage(s string) conv.Message {
	s = strings.TrimSuffix(strings.TrimRight(s, " \n"), chatmlEnd)
	r, a := splitReasoning(s)
	return conv.Message{Role: conv.Assistant, Content: a, Reasoning: r}
}

var shapeSkyThought = &shape{
	name: "skythought",
	doc:  "SkyThought eval outputs {question, code: [response, ...]}: the first response is the answer",
	match: func(_ []byte, obj object, _ mapping) bool {
		return has(obj, "question") && isArray(obj["code"])
	},
	convert: func(raw []byte, m mapping) (*conv.Record, *RowError) {
		obj, err := decodeObject(raw, "skythought")
		if err != nil {
			return nil, err
		}
		q, ok := str(obj["question"])
		var answers []string
		if e := json.Unmarshal(obj["code"], &answers); e != nil || !ok {
			return nil, rowErr("wrong shape", "want question as a string and code as a list of strings")
		}
		resp := ""
		if len(answers) > 0 {
			resp = answers[0]
		}
		return promptRecord(nil, []string{q}, resp, obj, m)
	},
}

var shapePrompt = &shape{
	name: "prompt",
	doc:  "prompt-only or prompt/response rows: {turns: [...]}, {data}, {question}, {prompt}, {text}, with an optional response/output/completion; ChatML-templated prompts are parsed back into messages",
	match: func(_ []byte, obj object, m mapping) bool {
		if has(obj, "turns") || m.fields[fieldTurns] != "" && has(obj, m.fields[fieldTurns]) {
			return true
		}
		p := m.get(obj, fieldPrompt)
		return isString(p) || (isArray(p) && !firstElemHas(p, "role", "from"))
	},
	convert: convertPrompt,
}

func convertPrompt(raw []byte, m mapping) (*conv.Record, *RowError) {
	obj, err := decodeObject(raw, "prompt")
	if err != nil {
		return nil, err
	}
	resp, ok := str(m.get(obj, fieldResponse))
	if !ok {
		return nil, rowErr("bad response", "response is not a string")
	}
	if t := m.get(obj, fieldTurns); t != nil {
		var turns []string
		if e := json.Unmarshal(t, &turns); e != nil {
			return nil, rowErr("wrong shape", "turns is not a list of strings: %v", e)
		}
		return promptRecord(nil, turns, resp, obj, m)
	}
	p := m.get(obj, fieldPrompt)
	if isArray(p) {
		// UltraChat: data is the dialogue, user and assistant alternating.
		var lines []string
		if e := json.Unmarshal(p, &lines); e != nil {
			return nil, rowErr("wrong shape", "prompt list is not a list of strings: %v", e)
		}
		var msgs []conv.Message
		for i, l := range lines {
			if i%2 == 0 {
				msgs = append(msgs, conv.Message{Role: conv.User, Content: l})
			} else {
				msgs = append(msgs, assistantMessage(l))
			}
		}
		return promptRecord(msgs, nil, resp, obj, m)
	}
	s, ok := str(p)
	if !ok || p == nil {
		return nil, rowErr("wrong shape", "row has no prompt (looked for %v and turns)", fields[fieldPrompt].keys)
	}
	if strings.Contains(s, chatmlStart) {
		msgs, err := parseChatML(s)
		if err != nil {
			return nil, err
		}
		return promptRecord(msgs, nil, resp, obj, m)
	}
	return promptRecord(nil, []string{s}, resp, obj, m)
}

const (
	chatmlStart = "<|im_start|>"
	chatmlEnd   = "<|im_end|>"
)

// parseChatML turns a ChatML-rendered prompt back into messages, dropping
// the trailing generation prompt (<|im_start|>assistant with no end).
func parseChatML(s string) ([]conv.Message, *RowError) {
	var msgs []conv.Message
	for _, seg := range strings.Split(s, chatmlStart)[1:] {
		head, body, _ := strings.Cut(seg, "\n")
		body, closed := strings.CutSuffix(strings.TrimRight(body, "\n"), chatmlEnd)
		role := roleWords[strings.TrimSpace(head)]
		if role == "" {
			return nil, rowErr("unknown role", "ChatML prompt has role %q", head)
		}
		if !closed && role == conv.Assistant && strings.TrimSpace(body) == "" {
			continue
		}
		if role == conv.Assistant {
			msgs = append(msgs, assistantMessage(body))
			continue
		}
		msgs = append(msgs, conv.Message{Role: role, Content: body})
	}
	if len(msgs) == 0 {
		return nil, rowErr("wrong shape", "ChatML prompt has no messages")
	}
	return msgs, nil
}

// SplitTurns splits a conversation that ends in several user turns with no
// answers between them (MT-Bench, Spec-Bench, BFCL multi-turn) into the
// prompt to answer first and the user turns to send after each answer, in
// order. For any other conversation followUps is empty.
func SplitTurns(msgs []conv.Message) (prompt, followUps []conv.Message) {
	i := len(msgs)
	for i > 0 && msgs[i-1].Role == conv.User {
		i--
	}
	if len(msgs)-i <= 1 {
		return msgs, nil
	}
	return msgs[:i+1], msgs[i+1:]
}
