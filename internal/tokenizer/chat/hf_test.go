package chat

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

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
