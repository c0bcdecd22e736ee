package handoff

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
)

// This file runs what each consumer of a handoff would train on, its
// loaders' rules restated from their source (not their code):
//
//   - speculators (vllm-project/speculators) scripts/prepare_data.py:
//     src/speculators/data_generation/preprocessing.py
//     build_speculator_training_dataset, _passthrough_pretokenized and
//     _append_row;
//   - SpecForge (sgl-project/SpecForge) online training, `specforge train`
//     with data.prompts_path: specforge/data/prompt_builder.py
//     prepare_prompt_tasks and _prompt_from_record;
//   - SpecForge online training with data.train_data_path, and offline
//     scripts/prepare_hidden_states.py: specforge/utils.py
//     safe_conversations_generator (offline only), then
//     specforge/data/preprocessing.py build_eagle3_dataset and
//     preprocess_conversations, specforge/data/parse.py GeneralParser,
//     ThinkingParser and HarmonyParser, with the templates of
//     specforge/data/template.py.
//
// A row trains exactly right when the consumer's ids are the served
// context followed by the ids the target generated (and one end-of-turn
// for an answer that stopped, none for one cut at max_tokens), with the
// loss mask 0 over the context and 1 over the rest.

// sfTemplate is a SpecForge ChatTemplate (specforge/data/template.py),
// the fields its parsers read.
type sfTemplate struct {
	assistantHeader, userHeader, systemPrompt, endOfTurn string
	parser                                               string // general, thinking or openai-harmony
	enableThinking                                       bool
	ignore                                               []string
}

// sfTemplates are the registry entries eaglet's templates map to, as
// template.py registers them.
var sfTemplates = map[string]sfTemplate{
	"qwen":           {assistantHeader: "<|im_start|>assistant\n", userHeader: "<|im_start|>user\n", systemPrompt: "You are a helpful assistant.", endOfTurn: "<|im_end|>\n", parser: "general"},
	"qwen3-thinking": {assistantHeader: "<|im_start|>assistant\n", userHeader: "<|im_start|>user\n", systemPrompt: "You are a helpful assistant.", endOfTurn: "<|im_end|>\n", parser: "thinking", enableThinking: true},
	"qwen3-instruct": {assistantHeader: "<|im_start|>assistant\n", userHeader: "<|im_start|>user\n", systemPrompt: "You are a helpful assistant.", endOfTurn: "<|im_end|>\n", parser: "general", ignore: []string{"<think>\n\n</think>\n\n"}},
	"llama3": {assistantHeader: "<|start_header_id|>assistant<|end_header_id|>\n\n", userHeader: "<|start_header_id|>user<|end_header_id|>",
		systemPrompt: "You are a helpful, respectful and honest assistant.", endOfTurn: "<|eot_id|>", parser: "general"},
	"deepseek-v3":  {assistantHeader: "<｜Assistant｜>", userHeader: "<｜User｜>", systemPrompt: "You are a helpful assistant.", endOfTurn: "<｜end▁of▁sentence｜>", parser: "general"},
	"deepseek-v32": {assistantHeader: "<｜Assistant｜>", userHeader: "<｜User｜>", systemPrompt: "", endOfTurn: "<｜end▁of▁sentence｜>", parser: "thinking", enableThinking: true},
	"gpt-oss":      {parser: "openai-harmony"},
}

// consumer reads one row of its format and returns the ids and loss mask
// it would train on.
type consumer struct {
	name   string
	format string
	read   func(c *target, line []byte) (ids, mask []int, err error)
	// exactFor says which rows docs/handoff-formats.md says the consumer
	// trains on exactly right, by target, case and turn.
	exactFor func(target string, r turn) bool
}

// turn names a row: the fixture case it came from and its turn.
type turn struct {
	name string
	n    int
}

// cut is an answer cut at max_tokens; a conversation cannot say so, and
// templates close it with an end-of-turn.
func (r turn) cut() bool { return r.name == "cut at max_tokens" }

// earlier says an assistant turn precedes the answer in its context.
func (r turn) earlier() bool {
	return r.name == "source-written turn" || r.name == "source tool call and result" || r.name == "turns all" && r.n > 0
}

func always(string, turn) bool { return true }
func never(string, turn) bool  { return false }

// target is a model eaglet hands rows off for, with the SpecForge
// templates its docs name for it.
type target struct {
	name, dir, source string
	kwargs            map[string]any
	// sfText and sfConv are SpecForge's --chat-template for the
	// specforge-text and specforge formats, as docs/handoff-formats.md says.
	sfText, sfConv string
	tmpl           *chat.Template
}

var consumers = []consumer{
	{"speculators prepare_data.py (pre-tokenized passthrough)", FormatSpeculators, func(_ *target, line []byte) ([]int, []int, error) {
		return pretokenized(line)
	}, always},
	{"specforge train, data.prompts_path (pre-tokenized)", FormatSpeculators, func(_ *target, line []byte) ([]int, []int, error) {
		return pretokenized(line)
	}, always},
	{"specforge train, data.train_data_path, is_preformatted, train_only_last_turn", FormatSpecForgeText, func(c *target, line []byte) ([]int, []int, error) {
		var row map[string]json.RawMessage
		if err := json.Unmarshal(line, &row); err != nil {
			return nil, nil, err
		}
		// build_eagle3_dataset: is_preformatted reads the "text" column.
		var text string
		if err := json.Unmarshal(row["text"], &text); err != nil || row["text"] == nil {
			return nil, nil, fmt.Errorf("expected 'text' column for is_preformatted=True")
		}
		return sfMask(c, sfTemplates[c.sfText], text, true)
	}, func(target string, r turn) bool {
		// DeepSeek-V3 writes no assistant header after a tool result and
		// harmony none between a call and its result: the last span
		// SpecForge finds is the earlier call, through the result.
		return r.name != "source tool call and result" || target != "DeepSeek-V3" && target != "gpt-oss"
	}},
	{"prepare_hidden_states.py --is-preformatted", FormatSpecForgeText, func(c *target, line []byte) ([]int, []int, error) {
		// safe_conversations_generator yields only conversations (and
		// tools): the text column never reaches build_eagle3_dataset.
		if _, err := generatorRow(line); err != nil {
			return nil, nil, err
		}
		return nil, nil, errors.New("expected 'text' column for is_preformatted=True, but found columns: conversations")
	}, never},
	{"prepare_hidden_states.py (conversations)", FormatSpecForge, func(c *target, line []byte) ([]int, []int, error) {
		row, err := generatorRow(line)
		if err != nil {
			return nil, nil, err
		}
		return sfConversation(c, row, false)
	}, func(target string, r turn) bool {
		switch target {
		case "Llama 3":
			// Its system prompt is injected into rows without one.
			return r.name == "system and reasoning"
		case "DeepSeek-V3":
			// Every assistant turn is supervised: no last-turn flag.
			return !r.cut() && !r.earlier()
		}
		// Qwen3: the system prompt is injected, and end_of_turn
		// "<|im_end|>\n" supervises the newline after every turn;
		// gpt-oss: HarmonyParser renders only its own roles.
		return false
	}},
	{"specforge train, data.train_data_path, train_only_last_turn", FormatSpecForge, func(c *target, line []byte) ([]int, []int, error) {
		// load_dataset("json") keeps every column as written.
		var row map[string]json.RawMessage
		if err := json.Unmarshal(line, &row); err != nil {
			return nil, nil, err
		}
		return sfConversation(c, row, true)
	}, func(target string, r turn) bool {
		switch target {
		case "Llama 3":
			return r.name == "system and reasoning"
		case "DeepSeek-V3":
			return !r.cut()
		}
		return false
	}},
	{"Hugging Face apply_chat_template (answer after the generation prompt)", FormatMessages, func(c *target, line []byte) ([]int, []int, error) {
		var row struct {
			Messages []json.RawMessage `json:"messages"`
			Tools    []conv.OpenAITool `json:"tools"`
		}
		if err := json.Unmarshal(line, &row); err != nil {
			return nil, nil, err
		}
		msgs, err := hfMessages(row.Messages)
		if err != nil {
			return nil, nil, err
		}
		var tools []conv.ToolDef
		for _, t := range row.Tools {
			tools = append(tools, t.Function)
		}
		// The template closes the answer with its end-of-turn marker;
		// what follows the marker belongs to no turn.
		a, err := c.tmpl.RenderAnswer(msgs, tools)
		if err != nil {
			return nil, nil, err
		}
		n := len(c.tmpl.Tokens(a.Prompt))
		ids := append(c.tmpl.Tokens(a.Prompt), c.tmpl.Tokens(a.Text)...)
		return ids, maskFrom(n, len(ids)), nil
	}, func(target string, r turn) bool {
		if target == "Qwen3" {
			// The template writes an empty think block into the last
			// answer that has no reasoning.
			return r.name == "system and reasoning" || r.name == "turns all"
		}
		return !r.cut()
	}},
}

// pretokenized is speculators' _passthrough_pretokenized and SpecForge's
// _prompt_from_record: the row's input_ids and loss_mask, as written.
func pretokenized(line []byte) ([]int, []int, error) {
	var row struct {
		InputIDs []int `json:"input_ids"`
		LossMask []int `json:"loss_mask"`
	}
	if err := json.Unmarshal(line, &row); err != nil {
		return nil, nil, err
	}
	switch {
	case row.InputIDs == nil || row.LossMask == nil:
		return nil, nil, errors.New("no input_ids and loss_mask: rendered instead of passed through")
	case len(row.InputIDs) != len(row.LossMask):
		return nil, nil, errors.New("input_ids and loss_mask lengths differ")
	}
	return row.InputIDs, row.LossMask, nil
}

// generatorRow is what safe_conversations_generator (specforge/utils.py)
// yields for a line: conversations, and tools when the line has them.
// Its stringifying of list and dict fields is undone by the parser's
// _sanitize_message, so the messages are kept as they are.
func generatorRow(line []byte) (map[string]json.RawMessage, error) {
	var row map[string]json.RawMessage
	if err := json.Unmarshal(line, &row); err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{"conversations": row["conversations"]}
	if out["conversations"] == nil {
		out["conversations"] = json.RawMessage("[]")
	}
	if t, ok := row["tools"]; ok {
		out["tools"] = t
	}
	return out, nil
}

// sfConversation is build_eagle3_dataset without is_preformatted: the
// conversations column rendered and masked by the template's parser; the
// tools column, a JSON string, parsed.
func sfConversation(c *target, row map[string]json.RawMessage, lastTurn bool) ([]int, []int, error) {
	raw, ok := row["conversations"]
	if !ok {
		return nil, nil, errors.New("expected 'conversations' column")
	}
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return nil, nil, err
	}
	if len(msgs) == 0 {
		// preprocess_conversations skips an empty source.
		return nil, nil, errors.New("empty conversation: skipped")
	}
	// The tools column is a JSON string (build_eagle3_dataset parses it).
	var tools []conv.ToolDef
	var text string
	if json.Unmarshal(row["tools"], &text) == nil && text != "" {
		var wrapped []conv.OpenAITool
		if err := json.Unmarshal([]byte(text), &wrapped); err != nil {
			return nil, nil, err
		}
		for _, w := range wrapped {
			tools = append(tools, w.Function)
		}
	}
	sf := sfTemplates[c.sfConv]
	if sf.parser == "openai-harmony" {
		// HarmonyParser.build_single_turn_prompt knows only its own
		// roles (assistant_analysis, assistant_final, ...).
		return nil, nil, errors.New("HarmonyParser: unknown role assistant")
	}
	text, err := sfRender(c, sf, msgs, tools)
	if err != nil {
		return nil, nil, err
	}
	return sfMask(c, sf, text, lastTurn)
}

// sfRender is GeneralParser.parse's rendering of a conversation
// (ThinkingParser's with its keys and enable_thinking): roles normalised,
// content "" for null (_normalize_message), the data's system turn or the
// template's system prompt first, leading non-user turns dropped, the
// conversation cut where roles break their order, each message reduced
// to the parser's keys with tool-call arguments parsed into objects
// (_sanitize_message), then the target's own chat template applied.
func sfRender(c *target, sf sfTemplate, raw []map[string]json.RawMessage, tools []conv.ToolDef) (string, error) {
	str := func(m map[string]json.RawMessage, k string) string {
		var s string
		_ = json.Unmarshal(m[k], &s)
		return s
	}
	keys := map[string]bool{"role": true, "content": true, "tool_calls": true}
	if sf.parser == "thinking" {
		for _, k := range []string{"reasoning_content", "name", "tool_call_id"} {
			keys[k] = true
		}
	}
	var msgs []conv.Message
	for _, m := range raw {
		role := str(m, "role")
		switch role {
		case "human":
			role = conv.User
		case "gpt":
			role = conv.Assistant
		}
		msg := conv.Message{Role: role, Content: str(m, "content")}
		if keys["reasoning_content"] {
			msg.Reasoning = str(m, "reasoning_content")
			msg.Name, msg.ToolCallID = str(m, "name"), str(m, "tool_call_id")
		}
		var calls []conv.OpenAIToolCall
		_ = json.Unmarshal(m["tool_calls"], &calls)
		for _, tc := range calls {
			// The arguments string is parsed into a dict: the template
			// sees an object, not the text the server returned.
			msg.ToolCalls = append(msg.ToolCalls, conv.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: json.RawMessage(tc.Function.Arguments)})
		}
		msgs = append(msgs, msg)
	}
	var out []conv.Message
	switch {
	case msgs[0].Role == conv.System:
		out = append(out, conv.Message{Role: conv.System, Content: msgs[0].Content})
		msgs = msgs[1:]
	case sf.systemPrompt != "":
		out = append(out, conv.Message{Role: conv.System, Content: sf.systemPrompt})
	}
	for len(msgs) > 0 && msgs[0].Role != conv.User {
		msgs = msgs[1:]
	}
	for j, m := range msgs {
		if j > 0 {
			prev := msgs[j-1].Role
			if m.Role == conv.Tool && prev != conv.Assistant && prev != conv.Tool ||
				m.Role == conv.Assistant && prev != conv.User && prev != conv.Tool {
				break
			}
		}
		out = append(out, m)
	}
	tmpl := c.tmpl
	if sf.enableThinking {
		// ThinkingParser.parse passes enable_thinking=True to the template.
		var err error
		if tmpl, err = loadTemplate(c, map[string]any{"enable_thinking": true}); err != nil {
			return "", err
		}
	}
	return tmpl.Render(out, tools, false)
}

// sfMask tokenizes text and builds its loss mask as the parser does.
// GeneralParser: each match of assistant_header + ([\s\S]*?(?:eot|$)) is
// supervised from len(encode(text[:start])) to len(encode(text[:end])),
// only the last with train_only_last_turn, then each ignore_token's
// occurrences are zeroed the same way. HarmonyParser: each match of
// <|start|>assistant([\s\S]*?)(?=<|start|>user<|message|>|$) supervises
// the tokens whose offsets fall inside it.
func sfMask(c *target, sf sfTemplate, text string, lastTurn bool) ([]int, []int, error) {
	tok := c.tmpl.Tokenizer()
	ids := tok.Encode(text, false)
	mask := make([]int, len(ids))
	enc := func(s string) int { return min(len(tok.Encode(s, false)), len(ids)) }
	if sf.parser == "openai-harmony" {
		spans := harmonySpans(text)
		if lastTurn && len(spans) > 0 {
			spans = spans[len(spans)-1:]
		}
		off := 0
		for i, id := range ids {
			ts, te := off, off+len(tok.TokenBytes(id))
			off = te
			for _, s := range spans {
				if ts >= s[0] && te <= s[1] {
					mask[i] = 1
				}
			}
		}
		return ids, mask, nil
	}
	spans := generalSpans(text, sf.assistantHeader, sf.endOfTurn)
	if lastTurn && len(spans) > 0 {
		spans = spans[len(spans)-1:]
	}
	for _, s := range spans {
		for i := enc(text[:s[0]]); i < enc(text[:s[1]]); i++ {
			mask[i] = 1
		}
	}
	for _, ig := range sf.ignore {
		for start := 0; ; {
			i := strings.Index(text[start:], ig)
			if i < 0 {
				break
			}
			at := start + i
			for k := enc(text[:at]); k < enc(text[:at+len(ig)]); k++ {
				mask[k] = 0
			}
			start = at + len(ig)
		}
	}
	return ids, mask, nil
}

// pyEnd reports whether Python's `$` (no MULTILINE) matches at p: at the
// end of text, or before a newline that ends it.
func pyEnd(text string, p int) bool {
	return p == len(text) || p == len(text)-1 && text[p] == '\n'
}

// generalSpans are re.finditer's group-1 spans of
// re.escape(header) + r"([\s\S]*?(?:" + re.escape(eot) + "|$))".
func generalSpans(text, header, eot string) [][2]int {
	var out [][2]int
	for pos := 0; ; {
		i := strings.Index(text[pos:], header)
		if i < 0 {
			return out
		}
		start := pos + i + len(header)
		end := start
		for p := start; p <= len(text); p++ {
			if eot != "" && strings.HasPrefix(text[p:], eot) {
				end = p + len(eot)
				break
			}
			if pyEnd(text, p) {
				end = p
				break
			}
		}
		out = append(out, [2]int{start, end})
		pos = end
	}
}

// harmonySpans are the group-1 spans of HarmonyParser's pattern.
func harmonySpans(text string) [][2]int {
	const header, user = "<|start|>assistant", "<|start|>user<|message|>"
	var out [][2]int
	for pos := 0; ; {
		i := strings.Index(text[pos:], header)
		if i < 0 {
			return out
		}
		start := pos + i + len(header)
		end := start
		for p := start; p <= len(text); p++ {
			if strings.HasPrefix(text[p:], user) || pyEnd(text, p) {
				end = p
				break
			}
		}
		out = append(out, [2]int{start, end})
		pos = end
	}
}

// hfMessages reads OpenAI-shaped messages as apply_chat_template gets
// them from json.loads: null content as None, argument strings as strings.
func hfMessages(raw []json.RawMessage) ([]conv.Message, error) {
	var out []conv.Message
	for _, r := range raw {
		var m struct {
			Role             string          `json:"role"`
			Content          json.RawMessage `json:"content"`
			ReasoningContent string          `json:"reasoning_content"`
			ToolCalls        []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
			Name       string `json:"name"`
		}
		if err := json.Unmarshal(r, &m); err != nil {
			return nil, err
		}
		msg := conv.Message{Role: m.Role, Reasoning: m.ReasoningContent, ToolCallID: m.ToolCallID, Name: m.Name}
		if string(m.Content) == "null" || m.Content == nil {
			msg.NullContent = true
		} else if err := json.Unmarshal(m.Content, &msg.Content); err != nil {
			return nil, err
		}
		for _, tc := range m.ToolCalls {
			call := conv.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
			var s string
			if json.Unmarshal(tc.Function.Arguments, &s) == nil {
				call.Arguments, call.ArgumentsText = json.RawMessage(s), s
			}
			msg.ToolCalls = append(msg.ToolCalls, call)
		}
		out = append(out, msg)
	}
	return out, nil
}

func maskFrom(n, total int) []int {
	m := make([]int, total)
	for i := n; i < total; i++ {
		m[i] = 1
	}
	return m
}

// targets are eaglet's templates, with the SpecForge templates the docs
// name for each format.
func targets(t *testing.T) []*target {
	gptOSS, err := os.ReadFile("../../internal/tokenizer/testdata/chat/gpt_oss.jinja")
	if err != nil {
		t.Fatal(err)
	}
	ts := []*target{
		{name: "Qwen3", dir: "qwen3", sfText: "qwen", sfConv: "qwen3-thinking"},
		{name: "Qwen3 enable_thinking=false", dir: "qwen3", kwargs: map[string]any{"enable_thinking": false}, sfText: "qwen3-instruct", sfConv: "qwen3-instruct"},
		{name: "Llama 3", dir: "llama3", sfText: "llama3", sfConv: "llama3"},
		{name: "DeepSeek-V3", dir: "deepseek_v3", sfText: "deepseek-v3", sfConv: "deepseek-v32"},
		{name: "gpt-oss", dir: "gpt_oss", source: string(gptOSS), sfText: "gpt-oss", sfConv: "gpt-oss"},
	}
	for _, c := range ts {
		var err error
		if c.tmpl, err = loadTemplate(c, c.kwargs); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	return ts
}

var tokenizers = map[string]*tokenizer.Tokenizer{}

func loadTemplate(c *target, kwargs map[string]any) (*chat.Template, error) {
	tok := tokenizers[c.dir]
	if tok == nil {
		var err error
		if tok, err = tokenizer.Load(filepath.Join("../../internal/tokenizer/testdata", c.dir)); err != nil {
			return nil, err
		}
		tokenizers[c.dir] = tok
	}
	return chat.Pinned(tok, c.source, "2026-03-14", kwargs, time.Now)
}

// served is one answer as a server gave it: the ids of its context and
// the ids the target wrote, its end-of-turn apart.
type served struct {
	context, wrote, end []int
	finish              string
}

// supervised is what a consumer should train on for the answer.
func (s served) supervised() []int {
	if s.finish == "length" {
		return s.wrote
	}
	return append(slices.Clone(s.wrote), s.end...)
}

// answerIDs is what the target writes for msg: its template's render of
// the answer, without an empty think block the template adds to an answer
// that has no reasoning (the model wrote none; a prompt that closed the
// think block already holds it).
func answerIDs(t *testing.T, tmpl *chat.Template, ctx []conv.Message, tools []conv.ToolDef, msg conv.Message) (wrote, end []int) {
	t.Helper()
	a, err := tmpl.RenderAnswer(append(slices.Clip(ctx), msg), tools)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.TrimSuffix(a.Text, a.End)
	if msg.Reasoning == "" {
		text = strings.TrimPrefix(text, "<think>\n\n</think>\n\n")
	}
	return tmpl.Tokens(text), tmpl.Tokens(a.End)
}

// answered builds records answered by the target, as generate stores
// them, and what was served for each of their turns (by key and turn).
func answered(t *testing.T, tmpl *chat.Template, thinks bool) ([]*conv.Record, map[string]served) {
	t.Helper()
	tools := []conv.ToolDef{{Name: "get_weather", Description: "Weather for a city",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}}
	user := func(s string) conv.Message { return conv.Message{Role: conv.User, Content: s} }
	asst := func(content, reasoning string) conv.Message {
		if !thinks {
			reasoning = ""
		}
		return conv.Message{Role: conv.Assistant, Content: content, Reasoning: reasoning}
	}
	call := conv.Message{Role: conv.Assistant, NullContent: true, ToolCalls: []conv.ToolCall{{ID: "call_1", Name: "get_weather",
		Arguments: json.RawMessage(`{"city":"Paris"}`), ArgumentsText: `{"city":"Paris"}`}}}
	long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 12)
	cases := []struct {
		name   string
		prompt []conv.Message
		tools  []conv.ToolDef
		answer conv.Message
		finish string
		// earlier are answers the target generated before the final one,
		// by their index in prompt (turns: all).
		earlier []int
	}{
		{name: "stopped", prompt: []conv.Message{user("What is 2+2?")}, answer: asst("2 + 2 = 4.", ""), finish: "stop"},
		{name: "system and reasoning", prompt: []conv.Message{{Role: conv.System, Content: "Answer tersely."}, user("Capital of France?")},
			answer: asst("Paris.", "The user asks for the capital of France. It is Paris."), finish: "stop"},
		{name: "cut at max_tokens", prompt: []conv.Message{user("Write at length.")}, answer: asst(long[:len(long)/2], ""), finish: "length"},
		{name: "tool call", prompt: []conv.Message{user("Weather in Paris?")}, tools: tools, answer: call, finish: "tool_calls"},
		{name: "source-written turn", prompt: []conv.Message{user("Hi"), asst("Hello! How can I help?", ""), user("Name a prime.")},
			answer: asst("7 is prime.", ""), finish: "stop"},
		{name: "source tool call and result", prompt: []conv.Message{user("Weather in Paris?"), call,
			{Role: conv.Tool, Content: `{"temp": 21}`, ToolCallID: "call_1", Name: "get_weather"}}, tools: tools,
			answer: asst("It is 21 degrees in Paris.", ""), finish: "stop"},
		{name: "turns all", prompt: []conv.Message{user("Pick a color."), asst("Blue.", "Any color will do; blue is common."), user("Why?")},
			answer: asst("It is calm.", "Explain the choice briefly."), finish: "stop", earlier: []int{1}},
	}
	var recs []*conv.Record
	want := map[string]served{}
	for i, tc := range cases {
		rec := &conv.Record{Key: fmt.Sprintf("k%d", i), Dataset: "d", Source: conv.Source{ID: tc.name},
			Messages: append(slices.Clone(tc.prompt), tc.answer), Tools: tc.tools}
		g := &conv.Generation{Content: tc.answer.Content, Reasoning: tc.answer.Reasoning, ToolCalls: tc.answer.ToolCalls, FinishReason: tc.finish}
		for n, at := range tc.earlier {
			ctx := tc.prompt[:at]
			wrote, end := answerIDs(t, tmpl, ctx, tc.tools, tc.prompt[at])
			prompt, err := tmpl.PromptIDs(ctx, tc.tools)
			if err != nil {
				t.Fatal(err)
			}
			g.Turns = append(g.Turns, conv.Turn{Message: at, FinishReason: "stop", PromptTokens: len(prompt), CompletionTokens: len(wrote) + 1, OutputIDs: wrote})
			want[fmt.Sprintf("%s/%d", rec.Key, n)] = served{context: prompt, wrote: wrote, end: end, finish: "stop"}
		}
		// An answer cut at max_tokens is the text the target wrote until
		// then, with no end-of-turn.
		wrote, end := answerIDs(t, tmpl, tc.prompt, tc.tools, tc.answer)
		prompt, err := tmpl.PromptIDs(tc.prompt, tc.tools)
		if err != nil {
			t.Fatal(err)
		}
		g.OutputIDs, g.PromptIDs, g.PromptTokens, g.CompletionTokens = wrote, prompt, len(prompt), len(wrote)
		rec.Generation = g
		want[fmt.Sprintf("%s/%d", rec.Key, len(tc.earlier))] = served{context: prompt, wrote: wrote, end: end, finish: tc.finish}
		recs = append(recs, rec)
	}
	return recs, want
}

// handoffRows writes the records' rows in a format, as the stage does.
func handoffRows(t *testing.T, tmpl *chat.Template, format string, recs []*conv.Record) [][]byte {
	t.Helper()
	st := &specs.Stage{Name: "handoff"}
	h := &Handoff{opts: &Options{Format: format, ToolTurns: "context", OnOverflow: "drop"}, tmpl: tmpl,
		spec: &specs.Spec{Stages: []*specs.Stage{st}}, inst: &stages.Instance{ID: "handoff", Stage: st}}
	m := &Manifest{Datasets: map[string]*DatasetCount{}}
	var lines [][]byte
	for _, rec := range recs {
		rows, err := h.rows(rec, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			lines = append(lines, r.line)
		}
	}
	return lines
}

// exact says how a consumer's ids and mask differ from what was served,
// "" when they do not.
func exact(ids, mask []int, s served) string {
	want := append(slices.Clone(s.context), s.supervised()...)
	n := len(s.context)
	switch {
	case !slices.Equal(ids[:min(n, len(ids))], s.context):
		return "context is not the served one"
	case !slices.Equal(ids, want):
		return "supervised ids are not the target's"
	case !slices.Equal(mask, maskFrom(n, len(want))):
		for i, m := range mask {
			if m != btoi(i >= n) {
				return fmt.Sprintf("loss mask %d at token %d", m, i)
			}
		}
	}
	return ""
}

var verbose = flag.Bool("consumers.v", false, "print each consumer's rows")

// dump prints a consumer's row beside what was served.
func dump(t *testing.T, c *target, s served, ids, mask []int) {
	tok := c.tmpl.Tokenizer()
	var sup []int
	for i, m := range mask {
		if m == 1 {
			sup = append(sup, ids[i])
		}
	}
	t.Logf("served context %q\nconsumer context %q\nwant supervised %q\ngot supervised %q", tok.Decode(s.context), tok.Decode(ids[:min(len(ids), len(s.context))]), tok.Decode(s.supervised()), tok.Decode(sup))
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestConsumers_TrainOnWhatWasServed runs every consumer on every format
// it reads, for every template, and checks the share of rows it trains
// on exactly right against what docs/handoff-formats.md says of that
// pairing: all of them where the docs name it exact, fewer where they say
// what it gets wrong.
func TestConsumers_TrainOnWhatWasServed(t *testing.T) {
	for _, c := range targets(t) {
		recs, want := answered(t, c.tmpl, c.kwargs["enable_thinking"] != false)
		for _, cons := range consumers {
			lines := handoffRows(t, c.tmpl, cons.format, recs)
			right, why := 0, map[string]int{}
			for _, line := range lines {
				var r struct{ Metadata metadata }
				if err := json.Unmarshal(line, &r); err != nil {
					t.Fatal(err)
				}
				s, ok := want[fmt.Sprintf("%s/%d", r.Metadata.Key, r.Metadata.Turn)]
				if !ok {
					t.Fatalf("%s: row for no served turn: %s", cons.format, line)
				}
				ids, mask, err := cons.read(c, line)
				if *verbose {
					dump(t, c, s, ids, mask)
				}
				reason := ""
				if err != nil {
					reason = err.Error()
				} else {
					reason = exact(ids, mask, s)
				}
				if reason == "" {
					right++
				} else {
					why[r.Metadata.SourceID+": "+reason]++
				}
				if want := cons.exactFor(c.name, turn{r.Metadata.SourceID, r.Metadata.Turn}); want != (reason == "") {
					t.Errorf("%s, %s row %q turn %d, %s: exact %v; the docs say %v (%s)", c.name, cons.format, r.Metadata.SourceID, r.Metadata.Turn, cons.name, reason == "", want, reason)
				}
			}
			t.Logf("%-28s %-10s %-80s %d/%d exact %v", c.name, cons.format, cons.name, right, len(lines), why)
		}
	}
}
