package endpoint

import (
	"fmt"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/specs"
)

// TestTruncatedPrompt_CutOrCountedOtherwise: a server that read fewer
// prompt tokens than the tokenize stage counted cut the prompt to its
// context only if it is one known to cut (ollama) and the read fills a
// context: at least minCutContext tokens, no fewer than it read whole of
// any prompt. Every other difference is a count of its own (vLLM and
// SGLang refuse over-long prompts; ollama's Modelfile template renders
// tools otherwise): the answer is kept, and the run told once.
func TestTruncatedPrompt_CutOrCountedOtherwise(t *testing.T) {
	type ask struct {
		url        string
		sent, read int
		refused    bool
	}
	for _, tc := range []struct {
		name  string
		cuts  bool
		asks  []ask
		warns int
	}{
		{"ollama cutting every prompt to 2048 tokens", true, []ask{
			{"a", 100, 100, false}, {"a", 3000, 2048, true}, {"a", 9000, 2048, true}, {"a", 1500, 1500, false},
		}, 0},
		{"ollama counting tool prompts a sixth fewer (its own template)", true, []ask{
			{"a", 570, 470, false}, {"a", 254, 200, false},
		}, 1},
		{"ollama reading fewer than it read whole of another prompt", true, []ask{
			{"a", 3000, 3000, false}, {"a", 2600, 2100, false},
		}, 1},
		{"what one URL read says nothing of another's context", true, []ask{
			{"a", 3000, 3000, false}, {"b", 3000, 2048, true}, {"a", 2600, 2048, false},
		}, 1},
		{"vLLM never cuts: a large difference is a count of its own", false, []ask{
			{"a", 3000, 2048, false}, {"a", 600, 500, false},
		}, 1},
		{"a few tokens short is a template's difference", true, []ask{
			{"a", 100, 90, false}, {"a", 2000, 1960, false},
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logged []string
			e := &Endpoint{Spec: &specs.Endpoint{Name: "target"}}
			e.guard.logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
			for i, a := range tc.asks {
				gen := &conv.Generation{PromptTokens: a.read, CutsPrompts: tc.cuts, Timing: &conv.Timing{URL: a.url}}
				err := e.TruncatedPrompt(gen, a.sent)
				if (err != nil) != a.refused {
					t.Errorf("ask %d (%s: sent %d, read %d): err %v; want refused %v", i, a.url, a.sent, a.read, err, a.refused)
				}
				if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("prompt truncated by the server: it read %d prompt tokens of the %d sent", a.read, a.sent)) {
					t.Errorf("ask %d: %v; want it named truncated, with both figures", i, err)
				}
			}
			if len(logged) != tc.warns {
				t.Fatalf("logged %q; want %d warnings", logged, tc.warns)
			}
			if tc.warns > 0 && !strings.Contains(logged[0], "endpoint target counts prompts otherwise than the tokenize stage: it read") {
				t.Errorf("warning %q; want it to name the endpoint, the figures and the cause", logged[0])
			}
		})
	}
}
