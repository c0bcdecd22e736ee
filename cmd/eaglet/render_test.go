package main

import (
	"encoding/json"
	"strings"
	"testing"
)

type renderRow struct {
	ID       json.RawMessage `json:"id"`
	Text     string          `json:"text"`
	InputIDs []int           `json:"input_ids"`
	LossMask []int           `json:"loss_mask"`
	Error    string          `json:"error"`
}

func renderRows(t *testing.T, out string) []renderRow {
	t.Helper()
	var rows []renderRow
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var r renderRow
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows
}

// TestRender_BadRowAmongGood: a bad row costs only itself.
func TestRender_BadRowAmongGood(t *testing.T) {
	in := `{"id": 1, "messages": [{"role": "user", "content": "Hi"}]}
{"id": 2, "messages": [{"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "x.png"}}]}]}

{"id": 3, "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]}
{oops
{"id": 5, "messages": [{"role": "user", "content": "Bye"}]}
`
	code, out, stderr := runCmd(t, in, "render", "--tokenizer", testTokenizer)
	if code != exitFailure {
		t.Errorf("exit %d; want %d", code, exitFailure)
	}
	for _, want := range []string{"stdin:2: messages: message 0: content part 1 is of type image_url", "stdin:5: invalid character", "2 of 5 lines failed"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q does not say %q", stderr, want)
		}
	}
	rows := renderRows(t, out)
	if len(rows) != 5 {
		t.Fatalf("%d output rows; want 5, one per input row", len(rows))
	}
	wantText := []string{"<|im_start|>user\nHi<|im_end|>\n", "", "<|im_start|>user\na\nb<|im_end|>\n", "", "<|im_start|>user\nBye<|im_end|>\n"}
	for i, r := range rows {
		if wantText[i] == "" {
			if r.Error == "" || r.InputIDs != nil {
				t.Errorf("row %d: %+v; want an error row", i, r)
			}
			continue
		}
		if r.Text != wantText[i] || len(r.InputIDs) == 0 || len(r.LossMask) != len(r.InputIDs) {
			t.Errorf("row %d: %+v; want text %q with ids and mask", i, r, wantText[i])
		}
	}
	if string(rows[1].ID) != "2" || string(rows[3].ID) != "null" {
		t.Errorf("error rows carry ids %s and %s; want 2 and null", rows[1].ID, rows[3].ID)
	}
}

func TestRender_OpenAIShapes(t *testing.T) {
	in := `{"id": "r", "messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4", "reasoning_content": "add"}]}
{"id": "t", "messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": {"type": "object"}}}]}
`
	code, out, stderr := runCmd(t, in, "render", "--tokenizer", testTokenizer)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows := renderRows(t, out)
	if !strings.Contains(rows[0].Text, "<think>\nadd\n</think>\n\n4") {
		t.Errorf("reasoning_content not rendered: %q", rows[0].Text)
	}
	if !strings.Contains(rows[1].Text, `{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": {"type": "object"}}}`) {
		t.Errorf("wrapped tool definition lost: %q", rows[1].Text)
	}
}

func TestRender_DateAndKwargs(t *testing.T) {
	in := `{"id": 1, "messages": [{"role": "user", "content": "Hi"}]}` + "\n"
	date := "../../internal/tokenizer/testdata/chat/date.jinja"
	code, out, stderr := runCmd(t, in, "render", "--tokenizer", testTokenizer, "--chat-template", date, "--date", "2025-02-28")
	if code != exitOK || !strings.Contains(out, "28 Feb 2025") || stderr != "" {
		t.Errorf("--date: exit %d, out %s, stderr %q", code, out, stderr)
	}
	code, _, stderr = runCmd(t, in, "render", "--tokenizer", testTokenizer, "--chat-template", date)
	if code != exitOK || !strings.Contains(stderr, "prints today's date; rendering with") {
		t.Errorf("no --date: exit %d, stderr %q; want a note naming the date used", code, stderr)
	}
	code, out, stderr = runCmd(t, in, "render", "--tokenizer", testTokenizer, "--add-generation-prompt", "--template-kwargs", `{"enable_thinking": false}`)
	if code != exitOK || !strings.Contains(out, `assistant\n<think>\n\n</think>\n\n"`) {
		t.Errorf("enable_thinking false: exit %d, out %s, stderr %s", code, out, stderr)
	}
	for _, bad := range [][]string{{"--date", "28/02/2025"}, {"--template-kwargs", "[1]"}, {"--template-kwargs", `{"messages": 1}`}} {
		code, _, stderr = runCmd(t, in, append([]string{"render", "--tokenizer", testTokenizer}, bad...)...)
		if code != exitUsage || !strings.Contains(stderr, bad[0]) && !strings.Contains(stderr, "kwarg") {
			t.Errorf("%v: exit %d, stderr %q; want a usage error", bad, code, stderr)
		}
	}
}

// TestTokenize_ChatRows: a chat row gets the prompt ids render makes with
// the generation prompt.
func TestTokenize_ChatRows(t *testing.T) {
	row := `{"id": 7, "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]}` + "\n"
	_, rendered, _ := runCmd(t, row, "render", "--tokenizer", testTokenizer, "--add-generation-prompt")
	code, out, stderr := runCmd(t, row+`{"id": 8, "text": "Hi"}`+"\n", "tokenize", "--tokenizer", testTokenizer)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want, _ := json.Marshal(renderRows(t, rendered)[0].InputIDs)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[0] != `{"id":7,"ids":`+string(want)+`}` || lines[1] != `{"id":8,"ids":[13048]}` {
		t.Errorf("got %s; want the rendered prompt's ids %s, then the text's", out, want)
	}
}

func TestTokenize_ChatRowWithoutTemplate(t *testing.T) {
	in := `{"id": 1, "text": "Hi"}` + "\n" + `{"id": 2, "messages": [{"role": "user", "content": "Hi"}]}` + "\n"
	code, out, stderr := runCmd(t, in, "tokenize", "--tokenizer", "../../internal/tokenizer/testdata/llama2")
	if code != exitFailure || !strings.Contains(stderr, "stdin:2: ") || !strings.Contains(stderr, "has no chat template for chat rows") {
		t.Errorf("exit %d, stderr %q; want line 2 failed for want of a template", code, stderr)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], `{"id":1,"ids":[`) || !strings.Contains(lines[1], `"error"`) {
		t.Errorf("output %s; want the text row's ids and an error row", out)
	}
	code, _, stderr = runCmd(t, in, "tokenize", "--tokenizer", testTokenizer, "--template-kwargs", "nope")
	if code != exitUsage || !strings.Contains(stderr, "--template-kwargs") {
		t.Errorf("bad --template-kwargs: exit %d, stderr %q; want a usage error", code, stderr)
	}
}
