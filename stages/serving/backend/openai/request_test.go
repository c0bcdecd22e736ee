package openai

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
)

// TestClient_RequestSpelling: the server gets messages as the source spelt
// them and the template kwargs of the endpoint and the stage together.
func TestClient_RequestSpelling(t *testing.T) {
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`)
	}))
	defer srv.Close()
	c := client(t, srv.URL, Config{ChatTemplateKwargs: map[string]any{"enable_thinking": true, "reasoning_effort": "low"}})
	msgs := []conv.Message{
		{Role: conv.User, Content: "ab", Parts: []string{"a", "b"}},
		{Role: conv.Assistant, NullContent: true, Reasoning: "r", ToolCalls: []conv.ToolCall{
			{ID: "c1", Name: "f", Arguments: json.RawMessage(`{"x":1}`), ArgumentsText: `{"x": 1}`},
			{ID: "c2", Name: "f", Arguments: json.RawMessage(`{"x":2}`)}}},
		{Role: conv.Tool, Content: "", ToolCallID: "c1", Name: "f"},
	}
	req := &backend.Request{Messages: msgs, MaxTokens: 8, ChatTemplateKwargs: map[string]any{"enable_thinking": false}}
	if _, err := c.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Messages json.RawMessage `json:"messages"`
		Kwargs   json.RawMessage `json:"chat_template_kwargs"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},` +
		`{"role":"assistant","content":null,"reasoning_content":"r","tool_calls":[` +
		`{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\": 1}"}},` +
		`{"id":"c2","type":"function","function":{"name":"f","arguments":"{\"x\":2}"}}]},` +
		`{"role":"tool","content":"","tool_call_id":"c1","name":"f"}]`
	if string(got.Messages) != want {
		t.Errorf("messages\n got %s\nwant %s", got.Messages, want)
	}
	if want := `{"enable_thinking":false,"reasoning_effort":"low"}`; string(got.Kwargs) != want {
		t.Errorf("chat_template_kwargs %s; want %s (the stage's over the endpoint's)", got.Kwargs, want)
	}
}
