package specs_test

import (
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/specs"
)

func TestExpr_Reads(t *testing.T) {
	env := map[string]any{"input": specs.InputInfo{}, "dataset": specs.DatasetInfo{}}
	tests := []struct {
		src  string
		want bool
	}{
		{"input.records - 1000", true},
		{"max(1, input.prompt_tokens_mean)", true},
		{"dataset.est_completion_tokens * 2", false},
		{"dataset.name == 'input'", false}, // a string, not the name
		{"4096", false},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			e := specs.NewExpr(tt.src)
			if err := e.Compile(env); err != nil {
				t.Fatal(err)
			}
			if got := e.Reads("input"); got != tt.want {
				t.Errorf("Reads(input) = %v; want %v", got, tt.want)
			}
		})
	}
}

// A misspelt name gets the closest name the environment offers.
func TestExpr_CompileSuggests(t *testing.T) {
	// Vars are a generated struct type, as Spec makes them.
	vars := struct {
		MaxSamples int `expr:"max_samples"`
	}{}
	type record struct {
		CompletionTokens int    `expr:"completion_tokens"`
		FinishReason     string `expr:"finish_reason"`
	}
	for _, tc := range []struct {
		src  string
		env  any
		want string
	}{
		{"vars.max_sample", map[string]any{"vars": vars}, `unknown var max_sample (did you mean "max_samples"?)`},
		{"completion_tokns >= 16", record{}, `unknown name completion_tokns (did you mean "completion_tokens"?)`},
		{"zzz > 1", record{}, "unknown name zzz"},
	} {
		e := specs.Expr{Src: tc.src}
		err := e.Compile(tc.env)
		if err == nil || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("Compile(%q): %v; want it to end in %s", tc.src, err, tc.want)
		}
	}
}
