// Package conv defines the canonical conversation record that every stage
// reads and writes: the contract between load, tokenize, generate, filter,
// merge and handoff.
package conv

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// ThinkStart and ThinkEnd are the tags a thinking model (Qwen3,
// DeepSeek-R1) writes around its reasoning when it is inline in the
// answer: what the backends split out, the filter checks, datasets carry
// and the simulator writes.
const (
	ThinkStart = "<think>"
	ThinkEnd   = "</think>"
)

// Roles a Message may carry. Loaders map every dataset vocabulary
// (human/gpt, prompter, function_call/observation, ...) onto these.
const (
	System    = "system"
	User      = "user"
	Assistant = "assistant"
	Tool      = "tool"
)

// Record is one conversation with its provenance and the results that stages
// attach to it. Fields a stage does not produce stay empty and are omitted
// from JSON.
type Record struct {
	// Key identifies the record across runs: a hash of its content, so it
	// survives spec edits, renamed files and reordered lines.
	Key string `json:"key"`
	// Dataset is the spec's name for the dataset the record came from.
	Dataset string `json:"dataset,omitempty"`
	// Source says where in the input the record was read.
	Source Source `json:"source"`
	// Messages is the conversation, oldest first.
	Messages []Message `json:"messages"`
	// Tools are the functions the assistant may call, as JSON-schema definitions.
	Tools []ToolDef `json:"tools,omitempty"`

	// PromptIDs are the prompt's token ids with the generation prompt, set by tokenize.
	PromptIDs []int `json:"prompt_ids,omitempty"`
	// PromptTokens counts the prompt's tokens (from tokenize or the server).
	PromptTokens int `json:"prompt_tokens,omitempty"`
	// Generation is the target model's answer, set by generate.
	Generation *Generation `json:"generation,omitempty"`
}

// Source is a record's provenance.
type Source struct {
	File string `json:"file,omitempty"`
	// Line is the 1-based line of the record in a line-oriented file, else 0.
	Line int `json:"line,omitempty"`
	// Index is the 0-based position of the record in its file.
	Index int `json:"index"`
	// ID is the row's own id as the source wrote it ("id", "uuid",
	// "question_id", ...), so outputs can be joined back to the source.
	ID string `json:"id,omitempty"`
}

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// NullContent records that the source gave content as null (or left it
	// out), which some chat templates treat apart from "" (DeepSeek-V3
	// renders tool calls only then). Content is "" when it is set.
	NullContent bool `json:"null_content,omitempty"`
	// Parts are the text parts of content given as a list of several
	// parts; Content holds them joined without a separator. Templates that
	// iterate content get them as parts, as servers pass them.
	Parts []string `json:"parts,omitempty"`
	// Reasoning is the assistant's thinking, kept apart from its answer.
	Reasoning string `json:"reasoning,omitempty"`
	// ToolCalls are the calls an assistant message makes.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID ties a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a tool message.
	Name string `json:"name,omitempty"`
}

// TextPart is one text part of content given as a list, as OpenAI writes it.
type TextPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// WireContent returns content as the source spelt it, for OpenAI-shaped
// JSON: nil when it was null, text parts as a list of TextPart, else the
// string.
func (m Message) WireContent() any {
	switch {
	case m.NullContent && m.Content == "":
		return nil
	case len(m.Parts) > 0:
		parts := make([]TextPart, len(m.Parts))
		for i, p := range m.Parts {
			parts[i] = TextPart{Type: "text", Text: p}
		}
		return parts
	}
	return m.Content
}

// ToolCall is one function call made by the assistant.
type ToolCall struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
	// Arguments is a JSON object; loaders decode string and double-encoded forms.
	Arguments json.RawMessage `json:"arguments"`
	// ArgumentsText is the arguments as the source wrote them when it gave
	// them as a JSON string (the OpenAI shape): templates see that string,
	// as transformers passes it.
	ArgumentsText string `json:"arguments_text,omitempty"`
}

// ToolDef is a function the assistant may call.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Generation is one answer of the target model to a record's prompt.
type Generation struct {
	Content   string     `json:"content"`
	Reasoning string     `json:"reasoning,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// FinishReason is "stop", "length", "tool_calls" or the server's word.
	FinishReason     string `json:"finish_reason"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	CachedTokens     int    `json:"cached_tokens,omitempty"`
	// OutputIDs are the completion's token ids as the server reported them.
	OutputIDs []int `json:"output_ids,omitempty"`
	// PromptIDs are the prompt's token ids as the server rendered them,
	// when it says (vLLM's return_token_ids): what the target saw, exactly.
	PromptIDs []int `json:"prompt_ids,omitempty"`
	// SentMessages says the server was sent messages and rendered them
	// itself, so the record's PromptIDs (the tokenize stage's) are
	// eaglet's render, not ids the server read; unset on answers recorded
	// before eaglet said so.
	SentMessages bool `json:"sent_messages,omitempty"`
	// TotalCompletionTokens counts every turn generated for the record when
	// there were several (turns: all, MT-Bench follow-ups); the fields
	// above describe the final turn.
	TotalCompletionTokens int `json:"total_completion_tokens,omitempty"`
	// Turns are the earlier answers when the record was answered turn by
	// turn (turns: all, follow-up questions), oldest first; the fields
	// above describe the final turn. Each is the target's own, so handoff
	// can supervise it with the ids the server produced.
	Turns []Turn `json:"turns,omitempty"`
	// MaxTokens is the output cap that was sent with the request.
	MaxTokens int `json:"max_tokens"`
	// Model names what answered (endpoint model or "sim").
	Model string `json:"model,omitempty"`
	// CutsPrompts says the server that answered is one known to cut a
	// prompt longer than its context rather than refuse it (ollama), so
	// reading fewer prompt tokens than were sent may mean the prompt was
	// cut. Not stored.
	CutsPrompts bool `json:"-"`
	// Served is the serving stack that made the answer, as the server
	// described itself: a drafter must match the stack it will serve
	// behind, and one handoff should not mix stacks unawares.
	Served *Served `json:"served,omitempty"`
	// Timing says when the request that made the answer ran and where. It
	// is kept in the store's own columns, not in the record: output files
	// and the record's hashes stay those of the answer alone.
	Timing *Timing `json:"-"`
}

// Served describes a serving stack: what the server says of itself
// (SGLang's /get_server_info, vLLM's /version and /v1/models) and, per
// answer, the weights' version (SGLang's meta_info) and the provider that
// answered (OpenRouter). Empty fields are ones the server did not say.
type Served struct {
	// Server is the serving software and version: "sglang 0.5.3", "vllm 0.11.0".
	Server string `json:"server,omitempty"`
	// Model is the checkpoint the server loaded (a path or a hub name).
	Model         string `json:"model,omitempty"`
	Quantization  string `json:"quantization,omitempty"`
	DType         string `json:"dtype,omitempty"`
	KVCacheDType  string `json:"kv_cache_dtype,omitempty"`
	TPSize        int    `json:"tp_size,omitempty"`
	WeightVersion string `json:"weight_version,omitempty"`
	Provider      string `json:"provider,omitempty"`
}

// String names the stack in one line, for warnings and status.
func (s *Served) String() string {
	if s == nil {
		return "not recorded"
	}
	var parts []string
	add := func(label, v string) {
		if v != "" {
			parts = append(parts, label+v)
		}
	}
	add("", s.Server)
	add("provider ", s.Provider)
	add("", s.Model)
	add("quantization ", s.Quantization)
	add("dtype ", s.DType)
	add("kv cache ", s.KVCacheDType)
	if s.TPSize > 0 {
		parts = append(parts, fmt.Sprintf("tp %d", s.TPSize))
	}
	add("weights ", s.WeightVersion)
	if len(parts) == 0 {
		return "not said by the server"
	}
	return strings.Join(parts, ", ")
}

// Timing is when one answer's request was sent, showed its first token and
// finished (Unix milliseconds; FirstToken is 0 without streaming), and the
// server URL that answered ("" in process).
type Timing struct {
	Sent, FirstToken, Finished int64
	URL                        string
}

// Turn is one earlier answer of a record answered turn by turn.
type Turn struct {
	// Message is the answer's index in the record's Messages.
	Message          int    `json:"message"`
	FinishReason     string `json:"finish_reason"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	// OutputIDs are the answer's token ids as the server reported them.
	OutputIDs []int `json:"output_ids,omitempty"`
	// SentIDs counts the prompt token ids sent, when the endpoint took
	// ids rather than messages (0 otherwise), so a re-render can be checked.
	SentIDs int `json:"sent_ids,omitempty"`
	// PromptIDs are the prompt's ids as the server rendered them, when it
	// says (vLLM's return_token_ids), as for the final turn.
	PromptIDs []int `json:"prompt_ids,omitempty"`
}

// Prompt returns the messages a generation answers: everything before a
// final assistant turn, or all messages when the conversation ends elsewhere.
func (r *Record) Prompt() []Message {
	if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == Assistant {
		return r.Messages[:n-1]
	}
	return r.Messages
}

// Conversation returns the training conversation: the prompt followed by
// the target model's own answer when there is one, else the messages as loaded.
func (r *Record) Conversation() []Message {
	g := r.Generation
	if g == nil {
		return r.Messages
	}
	prompt := r.Prompt()
	out := make([]Message, len(prompt), len(prompt)+1)
	copy(out, prompt)
	return append(out, Message{Role: Assistant, Content: g.Content, Reasoning: g.Reasoning, ToolCalls: g.ToolCalls})
}

// Message returns the answer as the assistant message of a conversation
// that goes on (turn by turn generation): an answer of only tool calls has
// null content, as servers send it, so templates that branch on it render
// the calls. Conversation leaves that out: SpecForge's rows need content
// as a string (the handoff's messages rows keep the null).
func (g *Generation) Message() Message {
	return Message{Role: Assistant, Content: g.Content, NullContent: g.Content == "" && len(g.ToolCalls) > 0,
		Reasoning: g.Reasoning, ToolCalls: g.ToolCalls}
}

// ContentKey returns a stable key for a conversation: a hash of its messages
// and tools, independent of file names, line numbers and spec edits. How
// the source spelt content and arguments (NullContent, Parts,
// ArgumentsText) is left out, so keys made before those fields existed
// stay valid and resumed runs find their work.
func ContentKey(messages []Message, tools []ToolDef) string {
	buf := keyBufs.Get().(*[]byte)
	b, ok := appendKeyJSON((*buf)[:0], messages, tools)
	if ok {
		sum := sha256.Sum256(b)
		*buf = b
		keyBufs.Put(buf)
		return hex.EncodeToString(sum[:16])
	}
	keyBufs.Put(buf)
	h := sha256.New()
	enc := json.NewEncoder(h)
	// Encoding a slice of plain structs cannot fail.
	_ = enc.Encode(Unspelt(messages))
	_ = enc.Encode(tools)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Unspelt returns messages with the source-spelling fields (NullContent,
// Parts, ArgumentsText) cleared, copying only when one is set: what
// identifies a conversation, as keys made before those fields did.
func Unspelt(messages []Message) []Message {
	spelt := func(m Message) bool {
		if m.NullContent || m.Parts != nil {
			return true
		}
		for _, c := range m.ToolCalls {
			if c.ArgumentsText != "" {
				return true
			}
		}
		return false
	}
	if !slices.ContainsFunc(messages, spelt) {
		return messages
	}
	out := make([]Message, len(messages))
	for i, m := range messages {
		m.NullContent, m.Parts = false, nil
		if len(m.ToolCalls) > 0 {
			calls := make([]ToolCall, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				c.ArgumentsText = ""
				calls[j] = c
			}
			m.ToolCalls = calls
		}
		out[i] = m
	}
	return out
}
