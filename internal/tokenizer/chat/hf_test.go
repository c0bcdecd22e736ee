package chat

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/dataset"
)

// TestRender_ChatRowsMatchJinja2 renders chat rows as users give them
// (OpenAI/HF shapes: reasoning under three names, tools wrapped or flat,
// string or object arguments, null content, text parts) through the same
// decoder the CLI and stages use, and compares text and ids with Python
// Jinja2 and the Rust tokenizers (gen/chat_hf.py, gen/chat_ids.js) for
// Qwen3, Llama 3, DeepSeek-V3, Gemma 3 and gpt-oss, with each kwarg.
func TestRender_ChatRowsMatchJinja2(t *testing.T) {
	var list []json.RawMessage
	readJSON(t, filepath.Join(testdata, "chat", "hf_cases.json"), &list)
	rows := map[string]json.RawMessage{}
	for _, raw := range list {
		var c struct{ Name string }
		json.Unmarshal(raw, &c)
		rows[c.Name] = raw
	}
	for _, name := range []string{"qwen3", "llama3", "deepseek_v3", "gemma3", "gpt_oss"} {
		t.Run(name, func(t *testing.T) {
			var file struct {
				Model   string `json:"model"`
				Now     string `json:"now"`
				Renders []struct {
					render
					Kwargs map[string]json.RawMessage `json:"kwargs"`
				} `json:"renders"`
			}
			readJSON(t, filepath.Join(testdata, "chat", "hf", name+".json"), &file)
			now, err := time.Parse("2006-01-02T15:04:05", file.Now)
			if err != nil {
				t.Fatal(err)
			}
			source := ""
			if data, err := os.ReadFile(filepath.Join(testdata, "chat", name+".jinja")); err == nil {
				source = string(data)
			}
			templates := map[string]*Template{}
			matched, failed := 0, 0
			for _, r := range file.Renders {
				key := fmt.Sprint(r.Kwargs)
				tmpl := templates[key]
				if tmpl == nil {
					opts := []Option{WithNow(func() time.Time { return now }), WithKwargs(r.Kwargs)}
					if source != "" {
						opts = append(opts, WithSource(source))
					}
					if tmpl, err = New(loadTokenizer(t, file.Model), opts...); err != nil {
						t.Fatal(err)
					}
					templates[key] = tmpl
				}
				where := fmt.Sprintf("%s gen=%v kwargs=%s", r.Case, r.AddGenerationPrompt, key)
				rec, err := dataset.DecodeChat(rows[r.Case])
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				got, err := tmpl.Render(rec.Messages, rec.Tools, r.AddGenerationPrompt)
				switch {
				case r.Error != "":
					if err == nil {
						t.Errorf("%s: no error, want %q", where, r.Error)
						failed++
					}
					continue
				case err != nil:
					t.Errorf("%s: %v", where, err)
					failed++
					continue
				case got != r.Text:
					t.Errorf("%s:\n got %q\nwant %q", where, got, r.Text)
					failed++
					continue
				}
				if ids := tmpl.tok.Encode(got, false); !slices.Equal(ids, r.IDs) {
					t.Errorf("%s: ids differ from the reference", where)
					failed++
					continue
				}
				matched++
			}
			t.Logf("%d renders byte- and id-equal, %d reference errors matched, %d failed", matched, len(file.Renders)-matched-failed, failed)
		})
	}
}

// TestRender_Llama3TrimMatchesJinja2 renders Llama 3's template, whose
// `| trim` is Python's str.strip(), over rows whose text starts and ends
// with U+001C..U+001F (which Python strips and Go's strings.TrimSpace
// keeps) and other whitespace, and compares with Python Jinja2's render
// (gen/chat_trim.py).
func TestRender_Llama3TrimMatchesJinja2(t *testing.T) {
	var file struct {
		Model   string            `json:"model"`
		Rows    []json.RawMessage `json:"rows"`
		Renders []render          `json:"renders"`
	}
	readJSON(t, filepath.Join(testdata, "chat", "trim_llama3.json"), &file)
	rows := map[string]json.RawMessage{}
	for _, raw := range file.Rows {
		var c struct{ Name string }
		json.Unmarshal(raw, &c)
		rows[c.Name] = raw
	}
	tmpl := loadTemplate(t, file.Model, "")
	for _, r := range file.Renders {
		rec, err := dataset.DecodeChat(rows[r.Case])
		if err != nil {
			t.Fatalf("%s: %v", r.Case, err)
		}
		got, err := tmpl.Render(rec.Messages, rec.Tools, r.AddGenerationPrompt)
		if err != nil {
			t.Fatalf("%s gen=%v: %v", r.Case, r.AddGenerationPrompt, err)
		}
		if got != r.Text {
			t.Errorf("%s gen=%v:\n got %q\nwant %q", r.Case, r.AddGenerationPrompt, got, r.Text)
		}
	}
}

// TestRenderAnswer_ServerArgumentsMatchJinja2 renders a server's tool-call
// answer, stored as the store writes it (Arguments compacted and
// HTML-escaped, the server's text beside it), and compares with Python
// Jinja2's render of the row with the server's text as arguments where
// the template prints a string and the object otherwise
// (gen/chat_answer.py).
func TestRenderAnswer_ServerArgumentsMatchJinja2(t *testing.T) {
	var file struct {
		Now   string            `json:"now"`
		Tools []json.RawMessage `json:"tools"`
		Cases []struct {
			Name  string      `json:"name"`
			Calls [][2]string `json:"calls"`
		} `json:"cases"`
		Renders []struct {
			Template, Model, Case string
			Prompt, Text          string
		} `json:"renders"`
	}
	readJSON(t, filepath.Join(testdata, "chat", "answer_args.json"), &file)
	now, err := time.Parse("2006-01-02T15:04:05", file.Now)
	if err != nil {
		t.Fatal(err)
	}
	var tools []conv.ToolDef
	for _, raw := range file.Tools {
		var w struct{ Function conv.ToolDef }
		if err := json.Unmarshal(raw, &w); err != nil {
			t.Fatal(err)
		}
		tools = append(tools, w.Function)
	}
	answers := map[string]conv.Message{}
	for _, c := range file.Cases {
		m := conv.Message{Role: conv.Assistant, NullContent: true}
		for i, call := range c.Calls {
			m.ToolCalls = append(m.ToolCalls, conv.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: call[0],
				Arguments: json.RawMessage(call[1]), ArgumentsText: call[1]})
		}
		// Through the store's JSON, as handoff reads answers.
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m = conv.Message{}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		answers[c.Name] = m
	}
	for _, r := range file.Renders {
		source := ""
		if data, err := os.ReadFile(filepath.Join(testdata, "chat", r.Template+".jinja")); err == nil {
			source = string(data)
		}
		opts := []Option{WithNow(func() time.Time { return now })}
		if source != "" {
			opts = append(opts, WithSource(source))
		}
		tmpl, err := New(loadTokenizer(t, r.Model), opts...)
		if err != nil {
			t.Fatal(err)
		}
		msgs := []conv.Message{{Role: conv.User, Content: "Weather in the cities I asked about?"}, answers[r.Case]}
		a, err := tmpl.RenderAnswer(msgs, tools)
		if err != nil {
			t.Fatalf("%s %s: %v", r.Template, r.Case, err)
		}
		if a.Prompt != r.Prompt || !strings.HasPrefix(r.Text[len(r.Prompt):], a.Text) || a.Text == "" {
			t.Errorf("%s %s: answer\n got %q\nwant %q", r.Template, r.Case, a.Text, r.Text[len(r.Prompt):])
		}
	}
}
