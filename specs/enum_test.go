package specs_test

import (
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/specs"
)

func TestEnum_Check(t *testing.T) {
	src := "version: 1\nname: e\nstages:\n  - {name: s, uses: x, with: {mode: lats, deep: {mode: x}}}\n"
	spec, _ := specs.Parse("spec.yaml", []byte(src), func(string) (string, bool) { return "", false })
	if spec == nil {
		t.Fatal("the spec did not parse")
	}
	st := spec.Stages[0]
	for _, tc := range []struct {
		name  string
		label string
		enum  specs.Enum
		got   string
		path  []string
		want  string // "" for no error
	}{
		{"a value", "mode", specs.Values("last", "all"), "all", []string{"mode"}, ""},
		{"not set", "mode", specs.Values("last", "all"), "", []string{"mode"}, ""},
		{"close to one", "mode", specs.Values("last", "all"), "lats", nil,
			`spec.yaml:4:37: stage s: mode is "lats" (did you mean "last"?); use last or all`},
		{"one value", "deep mode", specs.Values("longest_first"), "shortest_first", []string{"deep", "mode"},
			`spec.yaml:4:56: stage s: deep mode is "shortest_first"; the only value is longest_first`},
		{"explained", "mode", specs.Enum{{"records", "a weight scales records"}, {"tokens", ""}, {"bytes", ""}}, "lats", []string{"mode"},
			`spec.yaml:4:37: stage s: mode is "lats"; use records (a weight scales records), tokens or bytes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.enum.Check(st, tc.label, tc.got, tc.path...)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("err = %v; want none", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Errorf("err = %v; want %s", err, tc.want)
			}
		})
	}
}
