package specs_test

import (
	"math"
	"strings"
	"testing"

	"github.com/expr-lang/expr"

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

// TestExpr_EvalIntRange: numbers too large for an int are an error saying
// so, not a wrapped negative; the largest int64 itself survives float64.
func TestExpr_EvalIntRange(t *testing.T) {
	tests := []struct {
		src  string
		want int
		err  string
	}{
		{"9223372036854775807", math.MaxInt64, ""},
		{"min(9223372036854775807, 7000)", 7000, ""},
		{"1e300", 0, `"1e300" evaluated to 1e+300, beyond the largest whole number eaglet can count to (9223372036854775807)`},
		{"-1e19", 0, "beyond the largest whole number"},
		{"1/0", 0, "a division by zero?"},
	}
	for _, tt := range tests {
		e := specs.Expr{Src: tt.src}
		if err := e.Compile(map[string]any{}, expr.AsFloat64()); err != nil {
			t.Fatal(err)
		}
		n, err := e.EvalInt(map[string]any{})
		if tt.err == "" && (err != nil || n != tt.want) {
			t.Errorf("%s: %d, %v; want %d", tt.src, n, err, tt.want)
		}
		if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: %d, %v; want an error containing %q", tt.src, n, err, tt.err)
		}
	}
}
