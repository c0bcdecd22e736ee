package specs

import "testing"

func TestEnum_Error(t *testing.T) {
	pos := Pos{File: "spec.yaml", Line: 4, Col: 37}
	for _, tc := range []struct {
		name string
		tag  string
		got  string
		want string // "" for no error
	}{
		{"a value", "last|all", "all", ""},
		{"close to one", "last|all", "lats", `spec.yaml:4:37: stage s: mode is "lats" (did you mean "last"?); use last or all`},
		{"one value", "longest_first", "shortest_first", `spec.yaml:4:37: stage s: mode is "shortest_first"; the only value is longest_first`},
		{"explained", "records (a weight scales records)|tokens|bytes", "lats", `spec.yaml:4:37: stage s: mode is "lats"; use records (a weight scales records), tokens or bytes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := parseEnum(tc.tag)
			if err != nil {
				t.Fatal(err)
			}
			if e.has(tc.got) != (tc.want == "") {
				t.Fatalf("has(%q) = %v", tc.got, e.has(tc.got))
			}
			if tc.want == "" {
				return
			}
			if got := e.errorAt(pos, "stage s", "mode", tc.got).Error(); got != tc.want {
				t.Errorf("error = %s\n want %s", got, tc.want)
			}
		})
	}
}
