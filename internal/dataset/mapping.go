package dataset

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

// field is a canonical field of a row, which a shape reads through its
// mapping (mapping.get): a value of this type and never a string, so a
// shape cannot ask for a name the mapping does not know. One that did
// (reading "context", which no mapping names) found nothing, silently,
// and the record lost the text.
type field uint8

// The canonical fields, in the order of fields.
const (
	fieldMessages field = iota
	fieldRole
	fieldContent
	fieldReasoning
	fieldToolCalls
	fieldTools
	fieldSystem
	fieldPrompt
	fieldInput
	fieldResponse
	fieldHistory
	fieldTurns
)

// fields names each canonical field, as Options.Mapping does, with the
// dataset keys eaglet tries when the mapping does not name one.
var fields = [...]struct {
	name string
	keys []string
}{
	fieldMessages:  {"messages", []string{"messages", "conversations", "conversation", "history", "dialog"}},
	fieldRole:      {"role", []string{"role", "from", "speaker"}},
	fieldContent:   {"content", []string{"content", "value", "text"}},
	fieldReasoning: {"reasoning", []string{"reasoning_content", "reasoning", "thinking"}},
	fieldToolCalls: {"tool_calls", []string{"tool_calls"}},
	fieldTools:     {"tools", []string{"tools", "functions", "function"}},
	fieldSystem:    {"system", []string{"system", "system_prompt"}},
	fieldPrompt:    {"prompt", []string{"prompt", "question", "instruction", "query", "data", "text"}},
	fieldInput:     {"input", []string{"input"}},
	fieldResponse:  {"response", []string{"response", "output", "completion", "answer", "chosen"}},
	fieldHistory:   {"history", []string{"history"}},
	fieldTurns:     {"turns", []string{"turns"}},
}

func (f field) String() string { return fields[f].name }

// MappingKeys are the canonical names Options.Mapping may map, with the
// dataset keys eaglet tries when a name is not mapped: the fields, and
// the role words (a comma-separated list of the dataset's words for a
// role), which name no keys.
var MappingKeys = func() map[string][]string {
	m := map[string][]string{"role.user": nil, "role.assistant": nil, "role.system": nil, "role.tool": nil}
	for _, f := range fields {
		m[f.name] = f.keys
	}
	return m
}()

// fieldNamed returns the field a mapping name maps.
func fieldNamed(name string) (field, bool) {
	for f := range fields {
		if fields[f].name == name {
			return field(f), true
		}
	}
	return 0, false
}

// roleWords maps every role vocabulary met in the wild onto conv roles.
// function_call is an assistant turn whose value is a call; function is
// the legacy OpenAI tool-result role.
var roleWords = map[string]string{
	"system": conv.System, "developer": conv.System,
	"user": conv.User, "human": conv.User, "prompter": conv.User, "question": conv.User,
	"assistant": conv.Assistant, "gpt": conv.Assistant, "model": conv.Assistant,
	"bot": conv.Assistant, "chatgpt": conv.Assistant, "bard": conv.Assistant, "answer": conv.Assistant,
	"function_call": conv.Assistant,
	"tool":          conv.Tool, "observation": conv.Tool, "function": conv.Tool,
	"ipython": conv.Tool, "tool_response": conv.Tool, "function_response": conv.Tool,
}

// mapping is Options.Mapping checked and ready to use.
type mapping struct {
	fields map[field]string  // the dataset's key for a field
	roles  map[string]string // dataset role word -> conv role
	// asGiven keeps messages as the row spells them (DecodeChat): no ids
	// made up for calls, no reasoning split out of content, no checks that
	// the conversation is something to train on.
	asGiven bool
}

func newMapping(in map[string]string) (mapping, error) {
	m := mapping{fields: map[field]string{}, roles: roleWords}
	custom := false
	for k, v := range in {
		if _, ok := MappingKeys[k]; !ok {
			return m, fmt.Errorf("mapping: unknown key %q (did you mean %q?)", k, closest(k, mappingKeyNames()))
		}
		if role, ok := strings.CutPrefix(k, "role."); ok {
			if !custom {
				m.roles = make(map[string]string, len(roleWords))
				for w, r := range roleWords {
					m.roles[w] = r
				}
				custom = true
			}
			for _, w := range strings.Split(v, ",") {
				if w = strings.ToLower(strings.TrimSpace(w)); w != "" {
					m.roles[w] = role
				}
			}
			continue
		}
		f, _ := fieldNamed(k)
		m.fields[f] = v
	}
	return m, nil
}

func mappingKeyNames() []string {
	names := make([]string, 0, len(MappingKeys))
	for k := range MappingKeys {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// key returns the dataset key that holds field f in obj: the mapped key
// when the mapping names one, else the first default present.
func (m mapping) key(obj map[string]json.RawMessage, f field) (string, bool) {
	if k, ok := m.fields[f]; ok {
		_, present := obj[k]
		return k, present
	}
	for _, k := range fields[f].keys {
		if _, ok := obj[k]; ok {
			return k, true
		}
	}
	return "", false
}

// get returns the raw value of field f in obj, nil if absent or JSON null.
func (m mapping) get(obj map[string]json.RawMessage, f field) json.RawMessage {
	k, ok := m.key(obj, f)
	if !ok || string(obj[k]) == "null" {
		return nil
	}
	return obj[k]
}

// role maps a dataset role word to a conv role, "" if unknown.
func (m mapping) role(word string) string {
	if r, ok := m.roles[word]; ok {
		return r
	}
	return m.roles[strings.ToLower(strings.TrimSpace(word))]
}

// closest returns the candidate with the smallest edit distance to s.
func closest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if d := editDistance(s, c); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
