package chat

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
)

const testdata = "../testdata"

var pinned = func() time.Time { return time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC) }

type testCase struct {
	Name     string         `json:"name"`
	Messages []conv.Message `json:"messages"`
	Tools    []conv.ToolDef `json:"tools"`
}

type render struct {
	Case                string `json:"case"`
	AddGenerationPrompt bool   `json:"add_generation_prompt"`
	Text                string `json:"text"`
	Error               string `json:"error"`
	IDs                 []int  `json:"ids"`
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func cases(t *testing.T) map[string]testCase {
	var list []testCase
	readJSON(t, filepath.Join(testdata, "chat", "cases.json"), &list)
	m := map[string]testCase{}
	for _, c := range list {
		m[c.Name] = c
	}
	return m
}

var (
	tokMu  sync.Mutex
	tokens = map[string]*tokenizer.Tokenizer{}
)

func loadTokenizer(t *testing.T, model string) *tokenizer.Tokenizer {
	t.Helper()
	tokMu.Lock()
	defer tokMu.Unlock()
	if tok, ok := tokens[model]; ok {
		return tok
	}
	tok, err := tokenizer.Load(filepath.Join(testdata, model))
	if err != nil {
		t.Fatal(err)
	}
	tokens[model] = tok
	return tok
}

func loadTemplate(t *testing.T, model, source string) *Template {
	t.Helper()
	tok := loadTokenizer(t, model)
	opts := []Option{WithNow(pinned)}
	if source != "" {
		opts = append(opts, WithSource(source))
	}
	tmpl, err := New(tok, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// TestRender_MatchesJinja2 compares renders and ids with Python Jinja2 set
// up as transformers sets it up, and the Rust tokenizers (gen/chat.py).
func TestRender_MatchesJinja2(t *testing.T) {
	all := cases(t)
	for _, name := range []string{"qwen3", "llama3", "deepseek_v3", "date", "gemma3"} {
		t.Run(name, func(t *testing.T) {
			var file struct {
				Model   string   `json:"model"`
				Renders []render `json:"renders"`
			}
			readJSON(t, filepath.Join(testdata, "chat", name+".json"), &file)
			// Templates not in the model's own config are files of testdata/chat.
			source := ""
			if data, err := os.ReadFile(filepath.Join(testdata, "chat", name+".jinja")); err == nil {
				source = string(data)
			}
			tmpl := loadTemplate(t, file.Model, source)
			for _, r := range file.Renders {
				c := all[r.Case]
				got, err := tmpl.Render(c.Messages, c.Tools, r.AddGenerationPrompt)
				if r.Error != "" {
					if err == nil {
						t.Errorf("%s gen=%v: no error, want %q", r.Case, r.AddGenerationPrompt, r.Error)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s gen=%v: %v", r.Case, r.AddGenerationPrompt, err)
					continue
				}
				if got != r.Text {
					t.Errorf("%s gen=%v:\n got %q\nwant %q", r.Case, r.AddGenerationPrompt, got, r.Text)
					continue
				}
				enc, err := tmpl.Encode(c.Messages, c.Tools, r.AddGenerationPrompt)
				if err != nil {
					t.Errorf("%s gen=%v: Encode: %v", r.Case, r.AddGenerationPrompt, err)
					continue
				}
				if !slices.Equal(enc.IDs, r.IDs) {
					t.Errorf("%s gen=%v: ids differ from the reference", r.Case, r.AddGenerationPrompt)
				}
			}
		})
	}
}

// maskedRuns decodes each run of masked tokens.
func maskedRuns(tmpl *Template, enc *Encoded) []string {
	var runs []string
	var cur []int
	for i, m := range append(enc.LossMask, 0) {
		if m == 1 {
			cur = append(cur, enc.IDs[i])
		} else if len(cur) > 0 {
			runs = append(runs, tmpl.tok.Decode(cur))
			cur = nil
		}
	}
	return runs
}

func TestEncode_LossMask(t *testing.T) {
	all := cases(t)
	// A Llama 2 style template: SentencePiece tokens, "▁" and byte fallback.
	const llama2 = "{{ bos_token }}{% for m in messages %}{% if m.role == 'user' %}[INST] {{ m.content }} [/INST]{% elif m.role == 'assistant' %} {{ m.content }} {{ eos_token }}{% endif %}{% endfor %}"
	tests := []struct {
		model, caseName, source string
		want                    []string
	}{
		{"llama2", "multi_turn", llama2, []string{"Paris. </s>", "Tokyo (東京). </s>"}},
		{"qwen3", "system_user_assistant", "", []string{"<think>\n\n</think>\n\n7<|im_end|>"}},
		{"qwen3", "multi_turn", "", []string{"Paris.<|im_end|>", "<think>\n\n</think>\n\nTokyo (東京).<|im_end|>"}},
		{"qwen3", "reasoning", "", []string{"<think>\nTry small primes. 91/7 = 13.\n</think>\n\nNo: 91 = 7 × 13.<|im_end|>"}},
		{"qwen3", "reasoning_multi_turn", "", []string{"42.<|im_end|>", "<think>\n42 * 2 = 84.\n</think>\n\n84.<|im_end|>"}},
		{"qwen3", "tools", "", []string{"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"z\": 1, \"city\": \"Zürich\", \"days\": 2, \"threshold\": 2.5, \"ratio\": 1.0}}\n</tool_call><|im_end|>", "<think>\n\n</think>\n\nClear, 21 °C.<|im_end|>"}},
		{"llama3", "multi_turn", "", []string{"Paris.<|eot_id|>", "Tokyo (東京).<|eot_id|>"}},
		{"deepseek_v3", "multi_turn", "", []string{"Paris.<｜end▁of▁sentence｜>", "Tokyo (東京).<｜end▁of▁sentence｜>"}},
		{"qwen3", "single_user", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.model+"/"+tt.caseName, func(t *testing.T) {
			tmpl := loadTemplate(t, tt.model, tt.source)
			c := all[tt.caseName]
			enc, err := tmpl.Encode(c.Messages, c.Tools, false)
			if err != nil {
				t.Fatal(err)
			}
			if got := maskedRuns(tmpl, enc); !slices.Equal(got, tt.want) {
				t.Errorf("masked runs:\n got %q\nwant %q", got, tt.want)
			}
			if len(enc.LossMask) != len(enc.IDs) {
				t.Errorf("mask has %d entries for %d ids", len(enc.LossMask), len(enc.IDs))
			}
		})
	}
}

func TestPromptIDs_EndsWithGenerationPrompt(t *testing.T) {
	tmpl := loadTemplate(t, "qwen3", "")
	c := cases(t)["multi_turn"]
	ids, err := tmpl.PromptIDs(c.Messages[:4], nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := tmpl.tok.Decode(ids); !strings.HasSuffix(got, "And of Japan? 日本<|im_end|>\n<|im_start|>assistant\n") {
		t.Errorf("prompt ends %q", got[max(0, len(got)-60):])
	}
}

func TestNew_Errors(t *testing.T) {
	tok := loadTokenizer(t, "llama2")
	if _, err := New(tok); err != ErrNoTemplate {
		t.Errorf("New without template: %v, want ErrNoTemplate", err)
	}
	_, err := New(tok, WithSource("hello\n{% for m in messages %}\n{{ m.content }}\n"))
	var te *TemplateError
	if !errors.As(err, &te) || te.Line != 2 {
		t.Errorf("unclosed for: %v, want a TemplateError on line 2", err)
	}
	tmpl, err := New(tok, WithSource("a\n\n{{ raise_exception(\"nope\") }}"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmpl.Render(nil, nil, false); !errors.As(err, &te) || te.Line != 3 || !strings.Contains(err.Error(), "nope") {
		t.Errorf("raise_exception: %v, want a TemplateError on line 3", err)
	}
	tmpl, err = New(tok, WithSource("a\n{{ messages[0].content.nothing() }}"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmpl.Render([]conv.Message{{Role: "user", Content: "x"}}, nil, false); !errors.As(err, &te) || te.Line != 2 {
		t.Errorf("calling a non-callable: %v, want a TemplateError on line 2", err)
	}
}
