package conv

import (
	"encoding/json"
	"testing"
)

// TestContentKey_IgnoresSpelling pins keys made before the spelling fields
// existed: a changed key would make every resumed run redo its work.
func TestContentKey_IgnoresSpelling(t *testing.T) {
	plain := []Message{
		{Role: User, Content: "weather?"},
		{Role: Assistant, ToolCalls: []ToolCall{{ID: "c1", Name: "get", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
	}
	spelt := []Message{
		{Role: User, Content: "weather?", Parts: []string{"wea", "ther?"}},
		{Role: Assistant, NullContent: true, ToolCalls: []ToolCall{{ID: "c1", Name: "get", Arguments: json.RawMessage(`{"city":"Paris"}`), ArgumentsText: `{"city": "Paris"}`}}},
	}
	// The key this conversation had before NullContent, Parts and ArgumentsText.
	const want = "374f1b37c582030125159a6daa8d3ec9"
	if got := ContentKey(plain, nil); got != want {
		t.Errorf("key %s; want %s (keys of existing records must not change)", got, want)
	}
	if got := ContentKey(spelt, nil); got != want {
		t.Errorf("key with spelling fields %s; want %s", got, want)
	}
	if spelt[1].NullContent != true || spelt[1].ToolCalls[0].ArgumentsText == "" {
		t.Error("ContentKey changed its argument")
	}
}
