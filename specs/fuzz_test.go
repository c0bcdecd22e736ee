package specs_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-multierror"

	"github.com/eaglet-dev/eaglet/specs"
)

// FuzzParse decodes arbitrary bytes as a spec: it must never panic, and
// every problem must point into the file (a line and column that exist),
// since a position past the end is a message nobody can act on. Seeds are
// the example specs and the shapes that broke before (flow mappings with
// ${VAR:-x}, aliases, tabs).
func FuzzParse(f *testing.F) {
	examples, _ := filepath.Glob("examples/*.yaml")
	for _, p := range examples {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"version: 1\nname: f\nendpoints:\n  e: {api: sim, options: {stream: ${STREAM:-false}, top: \"${TOP:-0}\"}}\n",
		"version: 1\nname: a\nvars: {n: &n 5, m: *n}\nstages: [{name: l, uses: load, foreach: datasets, bogus: ${X:-1}}]\n",
		"version: 1\n\tname: tab\n",
		"x: &a [1, 2]\ny: [*a, *a, *a]\n",
		"version: 1\nname: e\nstate: ${OUT}/s.db\n",
	} {
		f.Add([]byte(s))
	}
	env := func(k string) (string, bool) {
		if k == "SET" {
			return "value", true
		}
		return "", false
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 32<<10 {
			return
		}
		_, err := specs.Parse("spec.yaml", src, env)
		if err == nil {
			return
		}
		// Lines as YAML counts them: CR, LF and CRLF each end one.
		breaks := bytes.Count(src, []byte("\n")) + bytes.Count(src, []byte("\r")) - bytes.Count(src, []byte("\r\n"))
		lines := breaks + 1
		var errs []error
		if me := (*multierror.Error)(nil); errors.As(err, &me) {
			errs = me.Errors
		} else {
			errs = []error{err}
		}
		for _, e := range errs {
			var se *specs.Error
			if !errors.As(e, &se) {
				continue
			}
			if se.Pos.Line < 0 || se.Pos.Line > lines || se.Pos.Col < 0 {
				t.Fatalf("%v points outside the %d-line file", se, lines)
			}
		}
	})
}
