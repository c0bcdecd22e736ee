package specs_test

import (
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/eaglet-dev/eaglet/specs"
)

type defaultedOptions struct {
	Name    string     `yaml:"name" default:"speculators"`
	Count   int        `yaml:"count" default:"5"`
	Ratio   float64    `yaml:"ratio" default:"0.8"`
	On      *bool      `yaml:"on" default:"true"`
	Retries *int       `yaml:"retries" default:"3"`
	Max     specs.Expr `yaml:"max" default:"4096"`
	Plain   string     `yaml:"plain"`
}

// TestWithDefaults: options whose keys the spec leaves out take their
// declared default, options written keep theirs (zero included: a value
// written is the value used), and the spec's own options are not changed,
// since the engine fingerprints them as written.
func TestWithDefaults(t *testing.T) {
	off, zero := false, 0
	cases := []struct {
		name    string
		in      defaultedOptions
		written string
		want    func(*defaultedOptions) string
	}{
		{"all left out", defaultedOptions{}, "{}", func(o *defaultedOptions) string {
			if o.Name != "speculators" || o.Count != 5 || o.Ratio != 0.8 || !*o.On || *o.Retries != 3 || o.Max.Int() != 4096 || o.Plain != "" {
				return "defaults not filled"
			}
			return ""
		}},
		{"all set", defaultedOptions{Name: "messages", Count: 2, Ratio: 0.5, On: &off, Retries: &zero, Max: resolved(t, "10"), Plain: "x"},
			"{name: messages, count: 2, ratio: 0.5, on: false, retries: 0, max: 10, plain: x}", func(o *defaultedOptions) string {
				if o.Name != "messages" || o.Count != 2 || o.Ratio != 0.5 || *o.On || *o.Retries != 0 || o.Max.Int() != 10 {
					return "a set option was replaced by its default"
				}
				return ""
			}},
		{"zeros written", defaultedOptions{On: &off, Retries: &zero}, `{name: "", count: 0, ratio: 0, on: false, retries: 0}`, func(o *defaultedOptions) string {
			if o.Name != "" || o.Count != 0 || o.Ratio != 0 || *o.On || *o.Retries != 0 || o.Max.Int() != 4096 {
				return "a written zero was replaced by its default"
			}
			return ""
		}},
		{"null is no value", defaultedOptions{}, "{count: null, name: ~}", func(o *defaultedOptions) string {
			if o.Name != "speculators" || o.Count != 5 {
				return "a null did not take the default"
			}
			return ""
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(c.written), &n); err != nil {
				t.Fatal(err)
			}
			in := c.in
			before := in
			got := specs.WithDefaults(&in, n.Content[0])
			if msg := c.want(got); msg != "" {
				t.Errorf("%s: %+v", msg, got)
			}
			if !reflect.DeepEqual(in, before) {
				t.Errorf("the spec's options changed: %+v, were %+v", in, before)
			}
			if again := specs.WithDefaults(&in, n.Content[0]); in.Retries == nil && (got.Retries == again.Retries || got.On == again.On) {
				t.Errorf("two copies share a defaulted pointer option: changing one would change the other")
			}
		})
	}
}

func resolved(t *testing.T, src string) specs.Expr {
	e, err := specs.ConstExpr(src)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestDefaults_BadTagPanics: a default that does not parse as its field's
// type is a declaration's mistake, reported when the kind or API registers.
func TestDefaults_BadTagPanics(t *testing.T) {
	type bad struct {
		N int `yaml:"n" default:"many"`
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `default "many"`) {
			t.Errorf("recovered %v, want a panic naming the bad default", r)
		}
	}()
	specs.CheckOptions[bad]()
}
