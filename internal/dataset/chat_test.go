package dataset

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeChat(t *testing.T) {
	tests := []struct {
		name, row, want, err string
	}{
		{"reasoning_content", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","reasoning_content":"r"}]}`,
			`[{"role":"user","content":"q"},{"role":"assistant","content":"a","reasoning":"r"}]`, ""},
		{"thinking", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","thinking":"r"}]}`,
			`[{"role":"user","content":"q"},{"role":"assistant","content":"a","reasoning":"r"}]`, ""},
		{"inline think kept as given", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"<think>r</think>a"}]}`,
			`[{"role":"user","content":"q"},{"role":"assistant","content":"\u003cthink\u003er\u003c/think\u003ea"}]`, ""},
		{"null content and string arguments", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"f","arguments":"{\"x\": 1}"}}]},{"role":"tool","content":"2","name":"f"}]}`,
			`[{"role":"user","content":"q"},{"role":"assistant","content":"","null_content":true,"tool_calls":[{"name":"f","arguments":{"x":1},"arguments_text":"{\"x\": 1}"}]},{"role":"tool","content":"2","name":"f"}]`, ""},
		{"empty content stays empty", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"","tool_calls":[{"id":"c","name":"f","arguments":{"x":1}}]}]}`,
			`[{"role":"user","content":"q"},{"role":"assistant","content":"","tool_calls":[{"id":"c","name":"f","arguments":{"x":1}}]}]`, ""},
		{"text parts", `{"messages":[{"role":"user","content":[{"type":"text","text":"a "},{"type":"text","text":" b"}]}]}`,
			`[{"role":"user","content":"a  b","parts":["a "," b"]}]`, ""},
		{"one text part", `{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}`,
			`[{"role":"user","content":"a"}]`, ""},
		{"system only, names kept", `{"messages":[{"role":"system","content":"s","name":"x"}]}`,
			`[{"role":"system","content":"s","name":"x"}]`, ""},
		{"image part", `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}]}]}`,
			"", "message 0: content part 1 is of type image_url"},
		{"content an object", `{"messages":[{"role":"user","content":{"a":1}}]}`, "", "content is a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := DecodeChat([]byte(tt.row))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v; want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(rec.Messages)
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestDecodeChat_Tools(t *testing.T) {
	for _, row := range []string{
		`{"messages":[{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"}}}]}`,
		`{"messages":[{"role":"user","content":"q"}],"tools":[{"name":"f","description":"d","parameters":{"type":"object"}}]}`,
	} {
		rec, err := DecodeChat([]byte(row))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(rec.Tools)
		if want := `[{"name":"f","description":"d","parameters":{"type":"object"}}]`; string(got) != want {
			t.Errorf("%s: tools %s; want %s", row, got, want)
		}
	}
}
