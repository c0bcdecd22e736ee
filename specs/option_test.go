package specs_test

import (
	"testing"

	"github.com/eaglet-dev/eaglet/specs"
)

const optionSpec = `version: 1
name: o
defaults: &budget {scope: run}
stages:
  - name: g
    uses: generate
    foreach: datasets
    with:
      order: shortest_first
      budget: *budget
      weights: {a: 1}
      run:
        argv: [torchrun, "{shard}"]
`

func TestStage_OptionPos(t *testing.T) {
	// The unknown top-level key is reported but the stages still decode.
	spec, _ := specs.Parse("spec.yaml", []byte(optionSpec), func(string) (string, bool) { return "", false })
	st := spec.Stages[0]
	tests := []struct {
		name string
		got  specs.Pos
		want string
	}{
		{"value of an option", st.OptionPos("order"), "spec.yaml:9:14"},
		{"nested value through an alias", st.OptionPos("budget", "scope"), "spec.yaml:3:27"},
		{"key of a mapping entry", st.OptionKeyPos("weights", "a"), "spec.yaml:11:17"},
		{"value of a mapping entry", st.OptionPos("weights", "a"), "spec.yaml:11:20"},
		{"unset option falls back to the stage", st.OptionPos("turns"), "spec.yaml:5:5"},
		{"path through a scalar falls back to the stage", st.OptionPos("order", "x"), "spec.yaml:5:5"},
		{"item of a list", st.OptionPos("run", "argv", "1"), "spec.yaml:13:26"},
		{"item past the end of a list falls back to the stage", st.OptionPos("run", "argv", "2"), "spec.yaml:5:5"},
		{"value of a stage key", st.KeyPos("foreach"), "spec.yaml:7:14"},
		{"unset stage key falls back to the stage", st.KeyPos("needs"), "spec.yaml:5:5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.got.String(); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}
