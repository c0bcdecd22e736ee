package filter

import (
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/specs"
)

func generated(content, reasoning, finish string, tokens int) *conv.Record {
	return &conv.Record{Key: "k", Messages: []conv.Message{{Role: conv.User, Content: "q"}},
		Generation: &conv.Generation{Content: content, Reasoning: reasoning, FinishReason: finish, CompletionTokens: tokens}}
}

func TestRules_Apply(t *testing.T) {
	all := &Rules{ZeroSupervised: true, Truncated: true, ThinkMarkers: true, EmptyAnswer: true,
		MinCompletionTokens: 16, MaxCompletionTokens: 8000, MaxRepeatNgramRatio: 0.3}
	prose := "The capital of France is Paris, a city on the Seine known for its museums, its cafes and the tower built for the fair of 1889."
	loop := strings.Repeat("I need to check the answer again. ", 40)
	toolOnly := generated("", "", "tool_calls", 20)
	toolOnly.Generation.ToolCalls = []conv.ToolCall{{Name: "f", Arguments: []byte(`{}`)}}
	notGenerated := &conv.Record{Messages: []conv.Message{{Role: conv.User, Content: "q"}, {Role: conv.Assistant, Content: "short"}}}
	promptOnly := &conv.Record{Messages: []conv.Message{{Role: conv.User, Content: "q"}}}
	tests := []struct {
		name  string
		rules *Rules
		rec   *conv.Record
		want  string
	}{
		{"a good answer passes", all, generated(prose, "think first", "stop", 40), ""},
		{"nothing to supervise", all, generated(" ", "", "stop", 1), ruleZeroSupervised},
		{"prompt-only record", all, promptOnly, ruleZeroSupervised},
		{"cut at max_tokens", all, generated(prose, "", "length", 40), ruleTruncated},
		{"truncation allowed", &Rules{EmptyAnswer: true}, generated(prose, "", "length", 40), ""},
		{"stray end marker", all, generated("</think> "+prose, "", "stop", 40), ruleThinkMarkers},
		{"second think block", all, generated(prose+" <think>more", "r", "stop", 40), ruleThinkMarkers},
		{"marker inside reasoning", all, generated(prose, "a <think> b", "stop", 40), ruleThinkMarkers},
		{"reasoning never closed", all, generated("", "thinking on and on", "stop", 40), ruleThinkMarkers},
		{"unclosed is an empty answer without think_markers", &Rules{EmptyAnswer: true}, generated("", "thinking", "stop", 40), ruleEmptyAnswer},
		{"whitespace answer", &Rules{EmptyAnswer: true}, generated(" \n\t", "", "stop", 3), ruleEmptyAnswer},
		{"tool calls are an answer", all, toolOnly, ""},
		{"too short", all, generated(prose, "", "stop", 15), ruleMinTokens},
		{"exactly the minimum", all, generated(prose, "", "stop", 16), ""},
		{"too long", all, generated(prose, "", "stop", 8001), ruleMaxTokens},
		{"degenerate loop", all, generated(loop, "", "stop", 400), ruleRepeat},
		{"loop in the reasoning", all, generated(prose, loop, "stop", 400), ruleRepeat},
		{"source answer has no token count", all, notGenerated, ""},
		{"other markers set", &Rules{ThinkMarkers: true, ThinkStart: "<|begin_of_thought|>", ThinkEnd: "<|end_of_thought|>"},
			generated("<think> is fine here", "r", "stop", 9), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &specs.Spec{}
			if got := tt.rules.apply(tt.rec, targetMarkers(tt.rules, spec)); got != tt.want {
				t.Errorf("rule %q; want %q", got, tt.want)
			}
		})
	}
}

func TestRepeatRatio(t *testing.T) {
	tests := []struct {
		text     string
		n        int
		min, max float64
	}{
		{"one two three", 4, 0, 0},
		{"a b c d a b c d", 4, 0.2, 0.2},           // 5 four-grams, the last repeats the first
		{strings.Repeat("x y ", 100), 4, 0.98, 1},  // everything repeats
		{"The Cat sat. the cat sat.", 2, 0.4, 0.4}, // case is ignored: "the cat" and "cat sat." repeat, 2 of 5
	}
	for _, tt := range tests {
		got := repeatRatio(tt.text, tt.n)
		if got < tt.min || got > tt.max {
			t.Errorf("repeatRatio(%q, %d) = %.3f; want %.2f to %.2f", tt.text, tt.n, got, tt.min, tt.max)
		}
	}
}

// TestTargetMarkers: the markers default to those the target's endpoint
// declares, and to <think> when none does.
func TestTargetMarkers(t *testing.T) {
	node := func(src string) *yaml.Node {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(src), &n); err != nil {
			t.Fatal(err)
		}
		return n.Content[0]
	}
	declared := &specs.Spec{Endpoints: []*specs.Endpoint{{Name: "a", Options: node("{think_start: '<|begin_of_thought|>', think_end: '<|end_of_thought|>', stream: true}")}}}
	tests := []struct {
		name  string
		rules *Rules
		spec  *specs.Spec
		want  []markers
	}{
		{"no endpoint says", &Rules{}, &specs.Spec{Endpoints: []*specs.Endpoint{{Name: "a", Options: node("{stream: true}")}}}, []markers{{"<think>", "</think>"}}},
		{"the endpoint's", &Rules{}, declared, []markers{{"<|begin_of_thought|>", "<|end_of_thought|>"}}},
		{"the rule's own first", &Rules{ThinkStart: "[T]", ThinkEnd: "[/T]"}, declared, []markers{{"[T]", "[/T]"}}},
	}
	for _, tt := range tests {
		if got := targetMarkers(tt.rules, tt.spec); !slices.Equal(got, tt.want) {
			t.Errorf("%s: markers %v; want %v", tt.name, got, tt.want)
		}
	}
}
