package specs_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/specs"
)

// TestCheckOptions_BadTagsPanic: a tag that does not fit its field is a
// declaration's mistake, reported when the kind or API registers.
func TestCheckOptions_BadTagsPanic(t *testing.T) {
	type recordKind struct {
		E specs.Expr `yaml:"e" eval:"record"`
	}
	type evalOnInt struct {
		N int `yaml:"n" eval:"int"`
	}
	type enumOnInt struct {
		N int `yaml:"n" enum:"a|b"`
	}
	type defaultNotAValue struct {
		S string `yaml:"s" enum:"a|b" default:"c"`
	}
	type minOnString struct {
		S string `yaml:"s" min:"1"`
	}
	type defaultOnMapping struct {
		M *struct {
			N int `yaml:"n"`
		} `yaml:"m" default:"1"`
	}
	type docNotInParentheses struct {
		S string `yaml:"s" enum:"a means this|b"`
	}
	for _, tc := range []struct {
		name  string
		check func()
		want  string
	}{
		{"an eval kind that does not exist", specs.CheckOptions[recordKind], `eval:"record" is no kind of expression; use one of int, number, predicate`},
		{"eval on a number", specs.CheckOptions[evalOnInt], "only a specs.Expr is an expression"},
		{"enum on a number", specs.CheckOptions[enumOnInt], "only a string option has values"},
		{"a default outside the enum", specs.CheckOptions[defaultNotAValue], `default "c" is not one of its values a | b`},
		{"min on a string", specs.CheckOptions[minOnString], "only a number has a least value"},
		{"a default for a whole mapping", specs.CheckOptions[defaultOnMapping], "declare the defaults of its keys on its own fields"},
		{"a value's meaning not in parentheses", specs.CheckOptions[docNotInParentheses], "in parentheses after its name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Errorf("recovered %v, want a panic saying %q", r, tc.want)
				}
			}()
			tc.check()
		})
	}
}

type writtenOptions struct {
	Mode    string     `yaml:"mode" enum:"last|all (every turn)"`
	Shards  int        `yaml:"shards" min:"1"`
	Sigma   *float64   `yaml:"sigma" min:">0"`
	Name    string     `yaml:"name" default:"x"`
	Plain   string     `yaml:"plain"`
	Count   int        `yaml:"count" default:"5"`
	Nested  *nestedOpt `yaml:"nested"`
	Keep    specs.Expr `yaml:"keep" eval:"predicate"`
	Ignored string     `yaml:"ignored"`
}

type nestedOpt struct {
	Action string `yaml:"action" enum:"drop|flag"`
}

// TestStage_CheckWritten: each value the tags refuse is reported at the
// value, with what to write; a key left out, a null, and values the tags
// allow (a zero included, where no tag refuses it) are not.
func TestStage_CheckWritten(t *testing.T) {
	for _, tc := range []struct {
		name, with string
		want       []string
	}{
		{"values allowed", `{mode: all, shards: 2, sigma: 0.5, name: y, count: 0, nested: {action: flag}, keep: "true", ignored: ~}`, nil},
		{"keys left out", `{}`, nil},
		{"outside the enum", `{mode: lats}`, []string{`spec.yaml:4:37: stage s: mode is "lats" (did you mean "last"?); use last or all (every turn)`}},
		{"empty where a value of the enum is wanted", `{mode: ""}`, []string{`spec.yaml:4:37: stage s: mode is ""`}},
		{"below the least value", `{shards: 0, sigma: 0}`, []string{"spec.yaml:4:39: stage s: shards is 0; use 1 or more", "spec.yaml:4:49: stage s: sigma is 0; use a number above 0"}},
		{"empty with a default", `{name: ""}`, []string{`spec.yaml:4:37: stage s: name is empty; write a value, or leave the key out for the default, x`}},
		{"empty without one", `{plain: ""}`, []string{`spec.yaml:4:38: stage s: plain is empty; write a value, or leave the key out`}},
		{"in a mapping", `{nested: {action: remove}}`, []string{`spec.yaml:4:48: stage s: nested action is "remove"; use drop or flag`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "version: 1\nname: w\nstages:\n  - {name: s, uses: x, with: " + tc.with + "}\n"
			spec, _ := specs.Parse("spec.yaml", []byte(src), func(string) (string, bool) { return "", false })
			var o writtenOptions
			if err := spec.Decode(spec.Stages[0].With, &o); err != nil {
				t.Fatal(err)
			}
			err := spec.Stages[0].CheckWritten(&o)
			if len(tc.want) == 0 && err != nil {
				t.Errorf("err = %v; want none", err)
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v; want %s", err, w)
				}
			}
		})
	}
}

// TestOptionDocs_TypesFromTags: the reference names an expression by its
// kind and an enum by its values.
func TestOptionDocs_TypesFromTags(t *testing.T) {
	got := map[string]string{}
	for _, o := range specs.OptionDocs(&writtenOptions{}) {
		got[o.Name] = o.Type
	}
	for name, want := range map[string]string{"mode": "last or all", "shards": "integer", "sigma": "number",
		"keep": "record predicate", "nested": "mapping", "name": "string"} {
		if got[name] != want {
			t.Errorf("%s: type %q, want %q", name, got[name], want)
		}
	}
}
