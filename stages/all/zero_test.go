package all_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/go-multierror"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

// baseOptions are what each kind needs written beside the option under
// test to be valid, so that what the test sees is the zero's doing.
var baseOptions = map[string][]string{
	"cap":      {"max_samples: 10"},
	"evaluate": {"drafters: [{name: v1, endpoint: spec, files: d.jsonl}]"},
	"filter":   {`keep: "true"`},
	"handoff":  {"out: out", "format: messages"},
	"merge":    {"out: out.jsonl"},
	"tokenize": {"tokenizer: " + qwen3},
}

// qwen3 is a tokenizer for the kinds that need one.
var qwen3, _ = filepath.Abs("../../internal/tokenizer/testdata/qwen3")

// zeroSpec is a spec in lines, with the line (1-based) of the option
// under test.
type zeroSpec struct {
	lines []string
	line  int
}

func (z *zeroSpec) add(lines ...string) { z.lines = append(z.lines, lines...) }

// at adds the option under test and remembers its line.
func (z *zeroSpec) at(line string) {
	z.add(line)
	z.line = len(z.lines)
}

func (z *zeroSpec) String() string { return strings.Join(z.lines, "\n") + "\n" }

// zeroLiteral is the zero value of an option as YAML, by its type as the
// reference names it ("drop or clip" is an enum, a string).
func zeroLiteral(typ string) string {
	switch typ {
	case "expression", "integer", "number":
		return "0"
	case "record predicate", "true/false":
		return "false"
	case "list":
		return "[]"
	case "mapping":
		return "{}"
	}
	return `""`
}

// TestZeroWritten_UsedOrRefused writes each option of every registered
// kind, endpoint API and dataset as its zero value (0, false, "", [] or
// {}) and checks that the zero is either the value the stage runs with or
// an error at its line, the same from validate and plan: a default is for
// a key left out, never for a zero written. A written zero accepted for an
// option whose default is not zero must also reach the fingerprint, which
// leaves zero fields out, so the option must be a pointer (or an
// expression) to tell the two apart. A new option that takes its default
// for a written zero, or a check that lets one through to a silent
// fallback, fails here.
func TestZeroWritten_UsedOrRefused(t *testing.T) {
	dir := t.TempDir()
	data := `{"messages": [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"}]}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range stages.Names() {
		kind, _ := stages.Lookup(name)
		for _, o := range kind.Docs() {
			checked++
			t.Run(name+"/"+o.Name, func(t *testing.T) {
				z := kindSpec(name, o)
				p := judge(t, dir, z)
				if p != nil {
					arrived(t, p, kind, o)
				}
			})
		}
	}
	for _, name := range specs.APINames() {
		api, _ := specs.LookupAPI(name)
		for _, o := range specs.OptionDocs(api.Options()) {
			checked++
			t.Run("api "+name+"/"+o.Name, func(t *testing.T) {
				judge(t, dir, apiSpec(api, o))
			})
		}
	}
	for _, o := range specs.OptionDocs(&specs.Dataset{}) {
		checked++
		t.Run("dataset/"+o.Name, func(t *testing.T) {
			z := &zeroSpec{}
			z.add("version: 1", "name: zero", "state: state.db", "datasets:", "  d:")
			if o.Name != "source" {
				z.add("    source: d.jsonl")
			}
			z.at("    " + o.Name + ": " + zeroLiteral(o.Type))
			z.add("stages:", "  - {name: load, uses: load, foreach: datasets}")
			if p := judge(t, dir, z); p != nil {
				ds := reflect.ValueOf(p.Spec.Datasets[0]).Elem()
				if f := fieldByKey(ds, o.Name); !isWrittenZero(f) {
					t.Errorf("%s: 0 written, the dataset holds %v", o.Name, f.Interface())
				}
			}
		})
	}
	if checked < 60 {
		t.Errorf("checked %d options, want every option of every kind, API and dataset", checked)
	}
}

// kindSpec is a spec whose stage s of the kind writes option o as zero.
func kindSpec(kind string, o specs.OptionDoc) *zeroSpec {
	z := &zeroSpec{}
	endpoints := "endpoints: {sim: {api: sim}}"
	if kind == "evaluate" { // a speculative server, which the simulator in process is not
		endpoints = `endpoints: {spec: {api: openai, urls: ["http://127.0.0.1:9/v1"], model: m}}`
	}
	z.add("version: 1", "name: zero", "state: state.db", "datasets: {d: {source: d.jsonl}}", endpoints,
		"stages:", "  - {name: load, uses: load, foreach: datasets}", "  - name: s", "    uses: "+kind)
	switch kind {
	case "handoff", "merge", "evaluate":
		z.add("    needs: [load]") // they take every dataset at once
	case "load":
		z.add("    foreach: datasets")
	default:
		z.add("    needs: [load]", "    foreach: datasets")
	}
	z.add("    with:")
	z.at("      " + o.Name + ": " + zeroLiteral(o.Type))
	for _, b := range baseOptions[kind] {
		if !strings.HasPrefix(b, o.Name+":") {
			z.add("      " + b)
		}
	}
	return z
}

// apiSpec is a spec whose endpoint of api writes option o as zero, used
// by a generate stage after a tokenize stage (for APIs taking ids).
func apiSpec(api specs.API, o specs.OptionDoc) *zeroSpec {
	z := &zeroSpec{}
	z.add("version: 1", "name: zero", "state: state.db", "datasets: {d: {source: d.jsonl}}",
		"endpoints:", "  e:", "    api: "+api.Name)
	if api.NeedsURLs {
		z.add(`    urls: ["http://127.0.0.1:9/v1"]`)
	}
	z.add("    options:")
	z.at("      " + o.Name + ": " + zeroLiteral(o.Type))
	z.add("stages:", "  - {name: load, uses: load, foreach: datasets}",
		"  - {name: tok, uses: tokenize, needs: [load], foreach: datasets, with: {tokenizer: "+qwen3+"}}",
		"  - {name: s, uses: generate, needs: [tok], foreach: datasets}")
	return z
}

// judge loads, validates and plans z. A refusal must come from every
// path that sees it and point at the zero's line, and then judge returns
// nil; otherwise it returns the pipeline, which took the zero.
func judge(t *testing.T, dir string, z *zeroSpec) *engine.Pipeline {
	t.Helper()
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(z.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := engine.Load(path, enginetest.NoEnv)
	if err == nil {
		err = p.Check()
	}
	store, serr := state.Open(filepath.Join(dir, fmt.Sprintf("plan%d.db", len(z.lines)*1000+z.line)))
	if serr != nil {
		t.Fatal(serr)
	}
	defer store.Close()
	var planErr error
	if p != nil {
		for _, s := range p.Plan(store, engine.Selection{}) {
			if s.Err != nil && planErr == nil {
				planErr = s.Err
			}
		}
	}
	switch {
	case err == nil && planErr != nil:
		t.Errorf("validate took the zero, plan refused it: %v\n%s", planErr, z)
	case err != nil && p != nil && planErr == nil:
		t.Errorf("validate refused the zero, plan took it: %v\n%s", err, z)
	case err != nil:
		atLine(t, err, z)
		return nil
	}
	return p
}

// atLine checks that err points at the zero's line, and every problem
// it places in the spec there: an instance that fails for want of what
// was refused (a load without a source) may say so without a position.
func atLine(t *testing.T, err error, z *zeroSpec) {
	t.Helper()
	errs := []error{err}
	var me *multierror.Error
	if errors.As(err, &me) {
		errs = me.Errors
	}
	found := false
	for _, e := range errs {
		var se *specs.Error
		switch {
		case !errors.As(e, &se):
		case se.Pos.Line != z.line || se.Pos.Col == 0:
			t.Errorf("refused, but at %s, not at spec.yaml:%d:col: %v\n%s", se.Pos, z.line, e, z)
		default:
			found = true
		}
	}
	if !found {
		t.Errorf("refused without pointing at spec.yaml:%d:col: %v\n%s", z.line, err, z)
	}
}

// arrived checks that a zero the kind took is what its stage runs with,
// and that the fingerprint can tell it from the key left out.
func arrived(t *testing.T, p *engine.Pipeline, kind stages.Kind, o specs.OptionDoc) {
	t.Helper()
	var n *engine.Node
	for _, c := range p.Nodes {
		if c.Stage.Spec.Name == "s" {
			n = c
		}
	}
	opts := n.Stage.Options
	v := reflect.ValueOf(opts).Elem()
	env := p.Spec.Env(n.Dataset, specs.InputInfo{})
	for i := 0; i < v.NumField(); i++ {
		if e, ok := v.Field(i).Addr().Interface().(*specs.Expr); ok && !e.IsZero() {
			if err := e.ResolveOption(env); err != nil {
				t.Fatal(err)
			}
		}
	}
	inst := &stages.Instance{ID: n.ID, Stage: n.Stage.Spec, Dataset: n.Dataset, Spec: p.Spec, Options: opts,
		Siblings: []string{n.ID}, Log: func(string, ...any) {}, Shared: &stages.Shared{}, DryRun: true}
	if _, err := kind.New(inst); err != nil {
		t.Fatalf("validate took the zero, the constructor refused it: %v", err)
	}
	f := fieldByKey(reflect.ValueOf(inst.Options).Elem(), o.Name)
	if !isWrittenZero(f) {
		t.Errorf("%s: %s written, the stage runs with %v", o.Name, zeroLiteral(o.Type), f.Interface())
	}
	field, _ := reflect.TypeOf(opts).Elem().FieldByName(fieldName(v, o.Name))
	distinct := field.Type.Kind() == reflect.Pointer || field.Type == reflect.TypeFor[specs.Expr]()
	if o.Default != "" && zeroLiteral(o.Type) != o.Default && field.Tag.Get("fp") != "-" && !distinct {
		t.Errorf("%s: a written %s runs as written but fingerprints as the key left out (default %s), so changing one to the other reruns nothing: refuse the zero in the kind's check or a min tag, or make the field a pointer",
			o.Name, zeroLiteral(o.Type), o.Default)
	}
}

// fieldName is the Go name of the field of struct v decoded from key.
func fieldName(v reflect.Value, key string) string {
	for _, f := range reflect.VisibleFields(v.Type()) {
		if strings.Split(f.Tag.Get("yaml"), ",")[0] == key {
			return f.Name
		}
	}
	return ""
}

func fieldByKey(v reflect.Value, key string) reflect.Value {
	return v.FieldByName(fieldName(v, key))
}

// isWrittenZero reports whether f holds a zero as the spec wrote it: a
// pointer set to zero, an expression "0" or "false", an empty list or
// mapping (a mapping's own defaults may fill it), or a plain zero.
func isWrittenZero(f reflect.Value) bool {
	if e, ok := f.Interface().(specs.Expr); ok {
		return e.Src == "0" || e.Src == "false"
	}
	switch f.Kind() {
	case reflect.Pointer:
		return !f.IsNil() && (f.Elem().Kind() == reflect.Struct || f.Elem().IsZero())
	case reflect.Slice, reflect.Map:
		return f.Len() == 0
	}
	return f.IsZero()
}
