package specs_test

import (
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
