package generate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/specs"
)

// TestTruncatedPrompt_CutOrCountedOtherwise: a server that read fewer
// prompt tokens than the tokenize stage counted either cut the prompt to
// its context (the answer is refused) or counts with another tokenizer
// (the answer is kept, and the run told once). It cannot have cut a prompt
// no longer than one it has read whole: its context holds that one.
func TestTruncatedPrompt_CutOrCountedOtherwise(t *testing.T) {
	type ask struct {
		url        string
		sent, read int
		refused    bool
	}
	for _, tc := range []struct {
		name  string
		asks  []ask
		warns int
	}{
		{"a server that cuts every prompt to 40 tokens", []ask{
			{"a", 10, 40, false}, {"a", 70, 40, true}, {"a", 400, 40, true}, {"a", 30, 30, false},
		}, 0},
		{"a server counting a sixth fewer than the tokenize stage", []ask{
			{"a", 600, 500, true}, // nothing read yet says its context holds 600
			{"a", 480, 400, false}, {"a", 240, 200, false}, {"a", 500, 416, false},
		}, 1},
		{"what one URL read says nothing of another's context", []ask{
			{"a", 600, 600, false}, {"b", 300, 100, true}, {"a", 300, 100, false},
		}, 1},
		{"a few tokens short is a template's difference", []ask{
			{"a", 100, 90, false}, {"a", 1000, 960, false},
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logged []string
			e := &endpoint{spec: &specs.Endpoint{Name: "target"}}
			e.guard.logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
			for i, a := range tc.asks {
				gen := &conv.Generation{PromptTokens: a.read, Timing: &conv.Timing{URL: a.url}}
				err := e.truncatedPrompt(gen, a.sent)
				if (err != nil) != a.refused {
					t.Errorf("ask %d (%s: sent %d, read %d): err %v; want refused %v", i, a.url, a.sent, a.read, err, a.refused)
				}
				if err != nil && !strings.Contains(err.Error(), "prompt truncated by the server") {
					t.Errorf("ask %d: %v; want it named truncated", i, err)
				}
			}
			if len(logged) != tc.warns {
				t.Fatalf("logged %q; want %d warnings", logged, tc.warns)
			}
			if tc.warns > 0 && !strings.Contains(logged[0], "endpoint target counts prompts otherwise than the tokenize stage") {
				t.Errorf("warning %q; want it to name the endpoint and the cause", logged[0])
			}
		})
	}
}
