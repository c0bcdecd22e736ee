package pool

import "testing"

// Servers' JSON is not always clean: generated text can carry a broken
// UTF-8 sequence and proxies have been seen repeating a key. Neither may
// cost an answer.
func TestUnmarshal_Lenient(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"plain", `{"text":"hi","n":1}`, "hi"},
		{"broken utf-8", "{\"text\":\"caf\xc3\"}", "caf\ufffd"},
		{"repeated key", `{"text":"a","text":"b"}`, "b"},
		{"unknown field", `{"text":"x","extra":{"y":[1,2]}}`, "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v struct {
				Text string `json:"text"`
			}
			if err := Unmarshal([]byte(tc.body), &v); err != nil {
				t.Fatalf("Unmarshal(%q): %v", tc.body, err)
			}
			if v.Text != tc.want {
				t.Errorf("text %q; want %q", v.Text, tc.want)
			}
		})
	}
	var v struct{ Text string }
	if err := Unmarshal([]byte(`{"text":`), &v); err == nil {
		t.Error("a truncated body decoded without error")
	}
}
