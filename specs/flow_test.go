package specs_test

import (
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/specs"
)

// TestParse_RefsInFlowCollections: ${VAR:-x} works inside {...} and [...]
// as docker-compose users expect, typed by the option it fills, quoted or
// not, and errors later on the line keep their columns as written.
func TestParse_RefsInFlowCollections(t *testing.T) {
	src := `version: 1
name: f
endpoints:
  e: {api: sim, options: {stream: ${STREAM:-false}, top: ${TOP:-0}, q: "${Q:-1.5}", extra: {k: ${K:-7}, t: ${T:-hi}, l: [${A:-1}, b]}}}  # ${NOT} in a comment
stages: [{name: l, uses: load, foreach: datasets, bogus: ${X:-1}}]
`
	env := map[string]string{"TOP": "3"}
	spec, err := specs.Parse("spec.yaml", []byte(src), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	// The one problem is the unknown key, at its column as written.
	if err == nil || !strings.Contains(err.Error(), `spec.yaml:5:51: unknown key "bogus"`) || strings.Contains(err.Error(), "problems") {
		t.Fatalf("err = %v; want only the unknown key bogus at 5:51", err)
	}
	var opts struct {
		Stream bool           `yaml:"stream"`
		Top    int            `yaml:"top"`
		Q      float64        `yaml:"q"`
		Extra  map[string]any `yaml:"extra"`
	}
	if err := spec.Decode(spec.Endpoint("e").Options, &opts); err != nil {
		t.Fatal(err)
	}
	if opts.Stream || opts.Top != 3 || opts.Q != 1.5 || opts.Extra["k"] != 7 || opts.Extra["t"] != "hi" {
		t.Errorf("options = %+v; want stream false, top 3, q 1.5, k 7 (a number), t hi", opts)
	}
	if l, _ := opts.Extra["l"].([]any); len(l) != 2 || l[0] != 1 {
		t.Errorf("list in extra = %#v; want [1 b]", opts.Extra["l"])
	}
	// A quoted ${...} of a string option stays a string; a bad value says what it got.
	var typed struct {
		N bool `yaml:"n"`
	}
	bad, _ := specs.Parse("spec.yaml", []byte("version: 1\nname: f\nendpoints: {e: {api: sim, options: {n: \"${N:-maybe}\"}}}\n"), func(string) (string, bool) { return "", false })
	if err := bad.Decode(bad.Endpoint("e").Options, &typed); err == nil || !strings.Contains(err.Error(), `expected true or false, got "maybe"`) {
		t.Errorf("err = %v; want expected true or false, got \"maybe\"", err)
	}
}
