package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

const testTokenizer = "../../internal/tokenizer/testdata/qwen3"

func runCmd(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cmdEnv{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code := runMain(env, args)
	return code, out.String(), errb.String()
}

func TestTokenize_EncodesInOrder(t *testing.T) {
	var in strings.Builder
	for i := range 600 {
		json.NewEncoder(&in).Encode(map[string]any{"id": i, "text": strings.Repeat("hello ", i%5)})
	}
	in.WriteString("\n{\"id\": \"last\", \"text\": \"<|im_start|>hi\"}\n")
	code, out, stderr := runCmd(t, in.String(), "tokenize", "--tokenizer", testTokenizer)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 601 {
		t.Fatalf("%d output lines, want 601", len(lines))
	}
	if lines[2] != `{"id":2,"ids":[14990,23811,220]}` {
		t.Errorf("line 2 = %s", lines[2])
	}
	if lines[600] != `{"id":"last","ids":[151644,6023]}` {
		t.Errorf("last line = %s", lines[600])
	}
}

func TestTokenize_Errors(t *testing.T) {
	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
		msg   string
	}{
		{"no tokenizer flag", "", []string{"tokenize"}, exitUsage, "--tokenizer is required"},
		{"missing tokenizer", "", []string{"tokenize", "--tokenizer", "/nonexistent"}, exitFailure, "/nonexistent"},
		{"bad json", "{\"id\": 1, \"text\": \"a\"}\n{oops\n", []string{"tokenize", "--tokenizer", testTokenizer}, exitFailure, "stdin:2: invalid character"},
		{"no text", "{\"id\": 1}\n", []string{"tokenize", "--tokenizer", testTokenizer}, exitFailure, `stdin:1: missing "text"`},
		{"stray argument", "", []string{"tokenize", "--tokenizer", testTokenizer, "extra"}, exitUsage, "unexpected argument"},
		{"render without template", "", []string{"render", "--tokenizer", "../../internal/tokenizer/testdata/llama2"}, exitUsage, "no chat template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, tt.stdin, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.msg) {
				t.Errorf("exit %d, stderr %q; want exit %d mentioning %q", code, stderr, tt.code, tt.msg)
			}
		})
	}
}

func TestRender_TextIDsAndMask(t *testing.T) {
	in := `{"id": "a", "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]}` + "\n" +
		`{"id": "b", "messages": [{"role": "user", "content": "Hi"}]}` + "\n"
	code, out, stderr := runCmd(t, in, "render", "--tokenizer", testTokenizer)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows := renderRows(t, out)
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	a := rows[0]
	if a.Text != "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHello!<|im_end|>\n" {
		t.Errorf("text = %q", a.Text)
	}
	masked := 0
	for _, m := range a.LossMask {
		masked += m
	}
	if len(a.LossMask) != len(a.InputIDs) || masked == 0 || a.LossMask[len(a.LossMask)-1] != 0 || a.LossMask[len(a.LossMask)-2] != 1 {
		t.Errorf("loss mask %v for ids %v", a.LossMask, a.InputIDs)
	}
	if rows[1].Text != "<|im_start|>user\nHi<|im_end|>\n" {
		t.Errorf("b text = %q", rows[1].Text)
	}
	code, out, _ = runCmd(t, `{"id": 1, "messages": [{"role": "user", "content": "Hi"}]}`+"\n", "render", "--tokenizer", testTokenizer, "--add-generation-prompt")
	if code != exitOK || !strings.Contains(out, `"text":"<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"`) {
		t.Errorf("exit %d, out %s", code, out)
	}
}
