package dataset

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/klauspost/compress/zstd"
)

// normalized is what a quirk test compares: the record without provenance.
func normalized(t *testing.T, path string, opts Options) (string, string, error) {
	t.Helper()
	recs, r, err := readAll(t, path, opts)
	var out []string
	for _, rec := range recs {
		b, _ := json.Marshal(struct {
			M []conv.Message `json:"m"`
			T []conv.ToolDef `json:"t,omitempty"`
		}{rec.Messages, rec.Tools})
		out = append(out, string(b))
	}
	return strings.Join(out, "\n"), r.Detected(), err
}

func TestReader_Quirks(t *testing.T) {
	const hiYo = `{"m":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}`
	tests := []struct {
		name, file, content string
		opts                Options
		shape, want         string
	}{
		// Top levels.
		{"single object", "a.json", "{\n \"messages\": [\n  {\"role\": \"user\", \"content\": \"hi\"},\n  {\"role\": \"assistant\", \"content\": \"yo\"}\n ]\n}\n", Options{}, "messages", hiYo},
		{"jsonl of bare arrays", "a.jsonl", `[{"content":"hi","role":"user"},{"content":"yo","role":"assistant"}]` + "\n" + `[{"content":"hi","role":"user"},{"content":"yo","role":"assistant"}]`, Options{}, "messages-array", hiYo + "\n" + hiYo},
		{"pretty bare message array", "a.json", "[\n {\"role\": \"user\", \"content\": \"hi\"},\n {\"role\": \"assistant\", \"content\": \"yo\"}\n]", Options{}, "messages-array", hiYo},
		{"jsonl of bare strings", "a.jsonl", "\"hi\"\n\n\"yo\"\n", Options{}, "text", `{"m":[{"role":"user","content":"hi"}]}` + "\n" + `{"m":[{"role":"user","content":"yo"}]}`},
		{"concatenated pretty json", "a.jsonl", "{\n \"prompt\": \"hi\",\n \"response\": \"yo\"\n}\n{\n \"prompt\": \"hi\",\n \"response\": \"yo\"\n}\n", Options{}, "prompt", hiYo + "\n" + hiYo},
		{".json that is jsonl", "a.json", `{"prompt":"hi","response":"yo"}` + "\n" + `{"prompt":"hi","response":"yo"}`, Options{}, "prompt", hiYo + "\n" + hiYo},
		{".jsonl that is one array on one line", "a.jsonl", `[{"prompt":"hi","response":"yo"},{"prompt":"hi","response":"yo"}]`, Options{}, "prompt", hiYo + "\n" + hiYo},
		{"utf-8 bom and crlf", "a.jsonl", "\xef\xbb\xbf" + `{"prompt":"hi","response":"yo"}` + "\r\n", Options{}, "prompt", hiYo},

		// Role vocabularies.
		{"human/gpt with system field", "a.json", `{"system":"s","conversations":[{"from":"human","value":"hi"},{"from":"gpt","value":"yo"}]}`, Options{}, "sharegpt", `{"m":[{"role":"system","content":"s"},{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}`},
		{"function_call/observation and tools string", "a.json", `{"conversations":[{"from":"human","value":"hi"},{"from":"function_call","value":"{\"name\":\"f\",\"arguments\":{\"x\":1}}"},{"from":"observation","value":"42"},{"from":"gpt","value":"yo"}],"tools":"[{\"name\":\"f\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"}}]"}`, Options{},
			"sharegpt", `{"m":[{"role":"user","content":"hi"},{"role":"assistant","content":"","tool_calls":[{"id":"call_0","name":"f","arguments":{"x":1}}]},{"role":"tool","content":"42","tool_call_id":"call_0","name":"f"},{"role":"assistant","content":"yo"}],"t":[{"name":"f","description":"d","parameters":{"type":"object"}}]}`},
		{"legacy function role and function_call", "a.jsonl", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{\"x\": 1}"}},{"role":"function","name":"f","content":"42"}],"functions":[{"name":"f","parameters":{"type":"object"}}]}`, Options{},
			"messages", `{"m":[{"role":"user","content":"hi"},{"role":"assistant","content":"","null_content":true,"tool_calls":[{"id":"call_0","name":"f","arguments":{"x":1},"arguments_text":"{\"x\": 1}"}]},{"role":"tool","content":"42","tool_call_id":"call_0","name":"f"}],"t":[{"name":"f","parameters":{"type":"object"}}]}`},
		{"mapped fields and role words", "a.jsonl", `{"dialog":[{"speaker":"customer","text":"hi"},{"speaker":"agent","text":"yo"}]}`, Options{Mapping: map[string]string{"messages": "dialog", "role": "speaker", "content": "text", "role.user": "customer", "role.assistant": "agent"}}, "messages", hiYo},

		// Tools and tool calls.
		{"wrapped tools, object and double-encoded args", "a.jsonl", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":{"x":1}}},{"id":"b","type":"function","function":{"name":"f","arguments":"\"{\\\"x\\\": 2}\""}}]},{"role":"tool","tool_call_id":"b","content":"2"},{"role":"tool","tool_call_id":"a","content":"1"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"dict","properties":{"x":{"type":"float"}}}}},{"type":"code_interpreter"}]}`, Options{},
			"messages", `{"m":[{"role":"user","content":"hi"},{"role":"assistant","content":"","null_content":true,"tool_calls":[{"id":"a","name":"f","arguments":{"x":1}},{"id":"b","name":"f","arguments":{"x":2},"arguments_text":"\"{\\\"x\\\": 2}\""}]},{"role":"tool","content":"2","tool_call_id":"b","name":"f"},{"role":"tool","content":"1","tool_call_id":"a","name":"f"}],"t":[{"name":"f","parameters":{"type":"object","properties":{"x":{"type":"number"}}}},{"name":"code_interpreter"}]}`},
		{"bare code for python tool", "a.jsonl", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"function":{"name":"python","arguments":"print(1)"}}]}]}`, Options{},
			"messages", `{"m":[{"role":"user","content":"hi"},{"role":"assistant","content":"","null_content":true,"tool_calls":[{"id":"call_0","name":"python","arguments":{"code":"print(1)"},"arguments_text":"print(1)"}]}]}`},
		{"python repr tool_calls (SWE-agent)", "a.traj", `{"history":[{"role":"user","content":"hi"},{"role":"assistant","content":"t","tool_calls":"[{'function': {'arguments': '{\"p\":\"x\"}', 'name': 'find'}, 'id': 'c1', 'type': 'function'}]"},{"role":"tool","content":"found","tool_call_ids":"['c1']"}]}`, Options{},
			"messages", `{"m":[{"role":"user","content":"hi"},{"role":"assistant","content":"t","tool_calls":[{"id":"c1","name":"find","arguments":{"p":"x"}}]},{"role":"tool","content":"found","tool_call_id":"c1","name":"find"}]}`},
		{"hermes transcript", "a.json", `[{"example":"SYSTEM: s\n<tools>[{\"name\":\"f\"}]</tools>\nUSER: hi\nASSISTANT:\n<tool_call>\n{\"arguments\": {\"x\": 1}, \"name\": \"f\"}\n</tool_call>"}]`, Options{},
			"transcript", `{"m":[{"role":"system","content":"s"},{"role":"user","content":"hi"},{"role":"assistant","content":"","tool_calls":[{"id":"call_0","name":"f","arguments":{"x":1}}]}],"t":[{"name":"f"}]}`},

		// Reasoning and content parts.
		{"reasoning_content", "a.jsonl", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo","reasoning_content":"hmm"}]}`, Options{}, "messages", `{"m":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo","reasoning":"hmm"}]}`},
		{"typed parts with value", "a.jsonl", `{"messages":[{"role":"user","content":[{"type":"text","value":"hi"}]},{"role":"assistant","content":[{"type":"reasoning","value":"hmm"},{"type":"text","value":"yo"},{"type":"tool_call","value":"{\"name\":\"f\",\"arguments\":{}}"}]}]}`, Options{},
			"messages", `{"m":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo","reasoning":"hmm","tool_calls":[{"id":"call_0","name":"f","arguments":{}}]}]}`},
		{"openai text parts", "a.jsonl", `{"messages":[{"role":"user","content":[{"type":"text","text":"h"},{"type":"text","text":"i"}]},{"role":"assistant","content":"yo"}]}`, Options{}, "messages", `{"m":[{"role":"user","content":"hi","parts":["h","i"]},{"role":"assistant","content":"yo"}]}`},
		{"inline think", "a.jsonl", `{"prompt":"hi","response":"<think>\nhmm\n</think>\n\nyo"}`, Options{}, "prompt", `{"m":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo","reasoning":"hmm"}]}`},
		{"unclosed think", "a.jsonl", `{"prompt":"hi","response":"<think>hmm and hmm"}`, Options{}, "prompt", `{"m":[{"role":"user","content":"hi"},{"role":"assistant","content":"","reasoning":"hmm and hmm"}]}`},
		{"close-only think (R1)", "a.jsonl", `{"prompt":"hi","response":"hmm</think>yo"}`, Options{}, "prompt", `{"m":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo","reasoning":"hmm"}]}`},
		{"sky-t1 thought markers", "a.jsonl", `{"question":"hi","code":["<|begin_of_thought|>\nhmm\n<|end_of_thought|>\n\n<|begin_of_solution|>\nyo\n<|end_of_solution|>"]}`, Options{}, "skythought", `{"m":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo","reasoning":"hmm"}]}`},
		{"chatml prompt", "a.jsonl", `{"prompt":"<|im_start|>system\ns<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n","response":"yo<|im_end|>"}`, Options{}, "prompt", `{"m":[{"role":"system","content":"s"},{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}`},

		// Prompt-only sets and other flat shapes.
		{"mt-bench turns", "a.jsonl", `{"question_id":81,"turns":["a","b"]}`, Options{}, "prompt", `{"m":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`},
		{"ultrachat eval data", "a.json", `[{"class":"x","data":"hi"}]`, Options{}, "prompt", `{"m":[{"role":"user","content":"hi"}]}`},
		{"ultrachat dialogue data", "a.jsonl", `{"id":"1","data":["hi","yo"]}`, Options{}, "prompt", hiYo},
		{"verl prompt messages", "a.jsonl", `{"data_source":"gsm8k","prompt":[{"role":"user","content":"hi"}]}`, Options{}, "messages", `{"m":[{"role":"user","content":"hi"}]}`},
		{"alpaca with input and history", "a.json", `[{"instruction":"do","input":"this","output":"done","history":[["hi","yo"]]}]`, Options{}, "alpaca", `{"m":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"},{"role":"user","content":"do\nthis"},{"role":"assistant","content":"done"}]}`},
		{"swift query/response", "a.jsonl", `{"system":"s","query":"hi","response":"yo"}`, Options{}, "query-response", `{"m":[{"role":"system","content":"s"},{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}`},
		{"oasst tree takes the best-ranked path", "a.jsonl", `{"message_tree_id":"t","prompt":{"text":"hi","role":"prompter","replies":[{"text":"no","role":"assistant","rank":1},{"text":"yo","role":"assistant","rank":0},{"text":"gone","role":"assistant","rank":null,"deleted":true}]}}`, Options{}, "oasst-tree", hiYo},
		{"bfcl question turns and dict schema", "a.json", `{"id":"x","question":[[{"role":"user","content":"a"}],[{"role":"user","content":"b"}]],"function":[{"name":"f","parameters":{"type":"dict","properties":{}}}]}`, Options{}, "bfcl", `{"m":[{"role":"user","content":"a"},{"role":"user","content":"b"}],"t":[{"name":"f","parameters":{"type":"object","properties":{}}}]}`},
		{"forced format", "a.jsonl", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}`, Options{Format: "sharegpt"}, "sharegpt", hiYo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, tt.file, tt.content)
			got, shape, err := normalized(t, p, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if shape != tt.shape {
				t.Errorf("Detected() = %q, want %q", shape, tt.shape)
			}
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestReader_RowErrors(t *testing.T) {
	tests := []struct {
		name, file, content string
		opts                Options
		line                int
		kind, reason        string
	}{
		{"cut-off arguments", "a.jsonl", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{\"a\": [1"}}]}]}`, Options{}, 1, "bad tool call", "arguments are cut off"},
		{"media part", "a.jsonl", "\n" + `{"messages":[{"role":"user","content":[{"type":"image","image":"x.png"},{"type":"text","text":"hi"}]}]}`, Options{}, 2, "media content", "text-only"},
		{"unknown role", "a.jsonl", `{"messages":[{"role":"narrator","content":"hi"}]}`, Options{}, 1, "unknown role", `mapping: {role.user: "narrator"}`},
		{"empty gpt turn", "a.json", "{\"conversations\": [\n{\"from\": \"human\", \"value\": \"hi\"},\n{\"from\": \"gpt\", \"value\": \"\"}]}", Options{}, 1, "empty turn", "message 1 (assistant) is empty"},
		{"shape changes mid-file", "a.jsonl", `{"prompt":"hi"}` + "\n" + `{"messages":[{"role":"user","content":"hi"}]}`, Options{}, 2, "wrong shape", "no prompt"},
		{"broken document", "a.json", "[\n{\"prompt\": \"hi\"},\n{\"prompt\": \"hi\",,}\n]", Options{OnError: OnErrorSkip}, 3, "invalid JSON", "nothing after this point"},
		{"truncated document", "a.json", "[\n{\"prompt\": \"hi\"},\n{\"prompt\": ", Options{}, 3, "invalid JSON", "ends in the middle"},
		{"tool definitions file", "a.json", `{"name":"f","description":"d","parameters":{}}`, Options{}, 1, "unknown shape", "tool definitions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, tt.file, tt.content)
			_, _, err := normalized(t, p, tt.opts)
			var re *RowError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want a *RowError", err)
			}
			if re.Line != tt.line || re.Kind != tt.kind || !strings.Contains(re.Reason, tt.reason) || !strings.HasPrefix(err.Error(), p+":") {
				t.Errorf("err = %v (line %d kind %q), want line %d kind %q mentioning %q", err, re.Line, re.Kind, tt.line, tt.kind, tt.reason)
			}
		})
	}
}

func TestOpen_BadOptions(t *testing.T) {
	p := writeFile(t, "a.jsonl", `"hi"`)
	if _, err := Open(p, Options{Format: "chatml"}); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("unknown format: err = %v", err)
	}
	if _, err := Open(p, Options{Mapping: map[string]string{"mesages": "x"}}); err == nil || !strings.Contains(err.Error(), `did you mean "messages"`) {
		t.Errorf("misspelt mapping key: err = %v", err)
	}
	if _, err := Open(p, Options{OnError: "ignore"}); err == nil {
		t.Error("on_error ignore: want an error")
	}
}

func TestReader_Compressed(t *testing.T) {
	const row = `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}` + "\n"
	var gz, zs bytes.Buffer
	gw := gzip.NewWriter(&gz)
	gw.Write([]byte(row + row))
	gw.Close()
	zw, _ := zstd.NewWriter(&zs)
	zw.Write([]byte("[" + strings.TrimSpace(row) + "]"))
	zw.Close()
	for _, tc := range []struct{ name, content, container string }{
		{"a.jsonl.gz", gz.String(), "jsonl+gzip"},
		{"a.json.zst", zs.String(), "jsonl+zstd"},
	} {
		p := writeFile(t, tc.name, tc.content)
		recs, r, err := readAll(t, p, Options{})
		if err != nil || len(recs) == 0 || r.Container() != tc.container || recs[0].Messages[1].Content != "yo" {
			t.Errorf("%s: %d records, container %q, err %v", tc.name, len(recs), r.Container(), err)
		}
	}
}

func TestReader_LongLine(t *testing.T) {
	long := strings.Repeat("x", 5<<20)
	p := writeFile(t, "long.jsonl", `{"prompt":"hi"}`+"\n"+`{"prompt":"`+long+`"}`+"\n")
	recs, _, err := readAll(t, p, Options{})
	if err != nil || len(recs) != 2 || len(recs[1].Messages[0].Content) != len(long) || recs[1].Source.Line != 2 {
		t.Fatalf("got %d records, err %v", len(recs), err)
	}
	if n, err := Count(p, Options{}); n != 2 || err != nil {
		t.Errorf("Count = %d, %v", n, err)
	}
}

func TestSplitTurns(t *testing.T) {
	p := writeFile(t, "q.jsonl", `{"turns":["a","b","c"]}`)
	recs, _, err := readAll(t, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	prompt, follow := SplitTurns(recs[0].Messages)
	if len(prompt) != 1 || prompt[0].Content != "a" || len(follow) != 2 || follow[1].Content != "c" {
		t.Errorf("SplitTurns = %+v, %+v", prompt, follow)
	}
	if prompt, follow := SplitTurns(prompt); len(prompt) != 1 || follow != nil {
		t.Errorf("single turn: %+v, %+v", prompt, follow)
	}
}

// TestReader_ArrayStreams checks that a large JSON array is read element by
// element: the line counter never holds much more than one element plus the
// decoder's read-ahead.
func TestReader_ArrayStreams(t *testing.T) {
	var b strings.Builder
	b.WriteString("[\n")
	row := `{"prompt": "` + strings.Repeat("x", 1000) + `"}`
	const rows = 8000
	for i := range rows {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString(row)
	}
	b.WriteString("\n]\n")
	p := writeFile(t, "big.json", b.String())
	r, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n, most := 0, 0
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		if rec.Source.Line != n+1 {
			t.Fatalf("record %d on line %d, want %d", n, rec.Source.Line, n+1)
		}
		most = max(most, cap(r.src.(*docSource).lc.buf))
	}
	if n != rows || most > 256<<10 {
		t.Errorf("read %d rows holding up to %d bytes; want %d rows and under 256 KB for an 8 MB file", n, most, rows)
	}
}
