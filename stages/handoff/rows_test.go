package handoff

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
)

// TestEncode_RetokenizedToolCallsKeepTheServersText: an answer the server
// returned without ids is tokenized from its render, whose tool-call
// arguments are the server's text where the template prints text (Qwen3,
// DeepSeek-V3): the supervised ids are those of Python Jinja2's render of
// the row (internal/tokenizer/testdata/gen/chat_answer.py), up to the
// end-of-turn marker.
func TestEncode_RetokenizedToolCallsKeepTheServersText(t *testing.T) {
	testdata := "../../internal/tokenizer/testdata"
	b, err := os.ReadFile(filepath.Join(testdata, "chat", "answer_args.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Tools []struct{ Function conv.ToolDef } `json:"tools"`
		Cases []struct {
			Name  string      `json:"name"`
			Calls [][2]string `json:"calls"`
		} `json:"cases"`
		Renders []struct{ Template, Model, Case, Prompt, Text string } `json:"renders"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	var tools []conv.ToolDef
	for _, tl := range file.Tools {
		tools = append(tools, tl.Function)
	}
	templates := map[string]*chat.Template{}
	for _, r := range file.Renders {
		if r.Template == "gpt_oss" {
			continue // its template prints |tojson: the object, as before
		}
		tmpl := templates[r.Model]
		if tmpl == nil {
			tok, err := tokenizer.Load(filepath.Join(testdata, r.Model))
			if err != nil {
				t.Fatal(err)
			}
			if tmpl, err = chat.New(tok); err != nil {
				t.Fatal(err)
			}
			templates[r.Model] = tmpl
		}
		g := &conv.Generation{FinishReason: "tool_calls"}
		for _, c := range file.Cases {
			if c.Name != r.Case {
				continue
			}
			for _, call := range c.Calls {
				args := json.RawMessage(call[1])
				stored, _ := json.Marshal(args)
				tc := conv.ToolCall{Name: call[0], Arguments: stored}
				if string(stored) != call[1] {
					tc.ArgumentsText = call[1]
				}
				g.ToolCalls = append(g.ToolCalls, tc)
			}
		}
		ans := answer{context: []conv.Message{{Role: conv.User, Content: "Weather in the cities I asked about?"}}, msg: g.Message(), finish: g.FinishReason}
		tk, err := encode(tmpl, tools, ans)
		if err != nil {
			t.Fatalf("%s %s: %v", r.Template, r.Case, err)
		}
		text := r.Text[len(r.Prompt):]
		for _, end := range []string{"<|im_end|>", "<｜end▁of▁sentence｜>"} {
			if i := strings.LastIndex(text, end); i >= 0 {
				text = text[:i+len(end)]
				break
			}
		}
		want := tmpl.Tokens(text)
		if got := tk.ids[len(tk.ids)-tk.supervised:]; tk.from != fromTokenized || !slices.Equal(got, want) {
			t.Errorf("%s %s: supervised %q (%s), want Jinja2's %q", r.Template, r.Case,
				tmpl.Tokenizer().Decode(got), tk.from, text)
		}
	}
}

// TestEncode_StoredStopIDTrimmed: answers recorded before the stop id was
// trimmed on every path (vLLM's token_ids end in <|im_end|>) still hand
// off with one end-of-turn; an answer cut at max_tokens keeps every id.
func TestEncode_StoredStopIDTrimmed(t *testing.T) {
	tok, err := tokenizer.Load("../../internal/tokenizer/testdata/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chat.New(tok)
	if err != nil {
		t.Fatal(err)
	}
	imEnd, _ := tok.TokenID("<|im_end|>")
	model := tmpl.Tokens("Hello there.")
	for _, tc := range []struct {
		name, finish string
		stored, want []int
	}{
		{"stored with its stop id", "stop", append(slices.Clone(model), imEnd), append(slices.Clone(model), imEnd)},
		{"stored without", "stop", model, append(slices.Clone(model), imEnd)},
		{"cut at max_tokens", "length", model, model},
	} {
		a := answer{context: []conv.Message{{Role: conv.User, Content: "Hi"}},
			msg: conv.Message{Role: conv.Assistant, Content: "Hello there."}, finish: tc.finish, outputIDs: tc.stored}
		tk, err := encode(tmpl, nil, a)
		if err != nil {
			t.Fatal(err)
		}
		if got := tk.ids[len(tk.ids)-tk.supervised:]; !slices.Equal(got, tc.want) {
			t.Errorf("%s: supervised %v; want %v", tc.name, got, tc.want)
		}
	}
}
