package conv

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// keyJSONByEncoder is what ContentKey hashes, written by json.Encoder.
func keyJSONByEncoder(messages []Message, tools []ToolDef) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.Encode(Unspelt(messages))
	enc.Encode(tools)
	return b.Bytes()
}

// TestAppendKeyJSON_AsTheEncoder: where the fast path writes a key's JSON,
// it writes the encoder's bytes, and it takes the plain conversations it
// is for.
func TestAppendKeyJSON_AsTheEncoder(t *testing.T) {
	// The fast path must take plain text and may leave the rest to the
	// encoder, but never write other bytes than it.
	plain := map[string]bool{"": true, "plain text, with: punctuation! (and) [brackets] {braces} 'quotes' 100% ~`^|": true,
		"café ünïcödé 日本語 🙂": true, "/slash/": true}
	others := []string{"a<b", "a>b", "a&b", `say "hi"`, `back\slash`, "tab\there", "new\nline", "bell\x07", "del\x7f",
		"bad \xff utf8", "line\u2028sep", "para\u2029sep", "replacement \ufffd char"}
	texts := others
	for text := range plain {
		texts = append(texts, text)
	}
	for _, text := range texts {
		for _, msgs := range [][]Message{
			{{Role: User, Content: text}},
			{{Role: System, Content: "sys"}, {Role: User, Content: "q"}, {Role: Assistant, Content: "a", Reasoning: text}},
			{{Role: Tool, Content: "42", ToolCallID: text, Name: "calc"}},
			{{Role: text, Content: "x"}},
		} {
			want := keyJSONByEncoder(msgs, nil)
			got, ok := appendKeyJSON(nil, msgs, nil)
			if ok && !bytes.Equal(got, want) {
				t.Errorf("%q: fast path wrote\n%s\nthe encoder\n%s", text, got, want)
			}
			if !ok && plain[text] {
				t.Errorf("%q: fast path declined a plain conversation", text)
			}
		}
	}
	for _, tc := range []struct {
		name  string
		msgs  []Message
		tools []ToolDef
	}{
		{"no messages", nil, nil},
		{"empty", []Message{}, nil},
		{"tools", []Message{{Role: User, Content: "q"}}, []ToolDef{{Name: "f"}}},
		{"empty tools", []Message{{Role: User, Content: "q"}}, []ToolDef{}},
		{"tool calls", []Message{{Role: Assistant, ToolCalls: []ToolCall{{Name: "f", Arguments: json.RawMessage(`{}`)}}}}, nil},
		{"null content", []Message{{Role: Assistant, NullContent: true}}, nil},
		{"parts", []Message{{Role: User, Content: "ab", Parts: []string{"a", "b"}}}, nil},
	} {
		if got, ok := appendKeyJSON(nil, tc.msgs, tc.tools); ok && !bytes.Equal(got, keyJSONByEncoder(tc.msgs, tc.tools)) {
			t.Errorf("%s: fast path wrote %s, the encoder %s", tc.name, got, keyJSONByEncoder(tc.msgs, tc.tools))
		}
	}
}

// TestAppendKeyJSON_KnowsEveryField: a field added to Message must be
// written by appendKeyJSON (or make it decline) as the encoder writes it,
// or the keys of plain conversations would change without notice.
func TestAppendKeyJSON_KnowsEveryField(t *testing.T) {
	want := []string{"role", "content", "null_content,omitempty", "parts,omitempty", "reasoning,omitempty",
		"tool_calls,omitempty", "tool_call_id,omitempty", "name,omitempty"}
	rt := reflect.TypeFor[Message]()
	var got []string
	for i := range rt.NumField() {
		got = append(got, rt.Field(i).Tag.Get("json"))
	}
	if !slices.Equal(got, want) {
		t.Errorf("Message's JSON fields are %q; appendKeyJSON writes %q", got, want)
	}
}

// TestAppendKeyJSON_EveryByte puts every byte value at every offset of
// texts around the eight-byte steps verbatim takes: the fast path writes
// the encoder's bytes, and takes every text of printable ASCII the encoder
// writes as is.
func TestAppendKeyJSON_EveryByte(t *testing.T) {
	for n := 1; n < 20; n++ {
		for at := range n {
			for c := range 256 {
				b := []byte(strings.Repeat("a", n))
				b[at] = byte(c)
				msgs := []Message{{Role: User, Content: string(b)}}
				want := keyJSONByEncoder(msgs, nil)
				got, ok := appendKeyJSON(nil, msgs, nil)
				if ok && !bytes.Equal(got, want) {
					t.Fatalf("%q: fast path wrote\n%s\nthe encoder\n%s", b, got, want)
				}
				if !ok && c >= 0x20 && c < 0x7f && !strings.ContainsRune(`"\<>&`, rune(c)) {
					t.Fatalf("%q: fast path declined plain text", b)
				}
			}
		}
	}
}
