package launch

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-multierror"

	"github.com/eaglet-dev/eaglet/specs"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// checkSpec decodes and checks the run options of every stage of a spec.
func checkSpec(t *testing.T, name string, src []byte) []error {
	t.Helper()
	spec, err := specs.Parse(name, src, func(string) (string, bool) { return "", false })
	if spec == nil {
		t.Fatal(err)
	}
	var errs []error
	for _, st := range spec.Stages {
		var with struct {
			Run Options `yaml:"run"`
		}
		if err := spec.Decode(st.With, &with); err != nil {
			t.Fatalf("stage %s: %v", st.Name, err)
		}
		err := with.Run.Check(spec, st, "run")
		var me *multierror.Error
		if errors.As(err, &me) {
			for _, e := range me.Errors {
				errs = append(errs, spec.WithSnippet(e))
			}
		} else if err != nil {
			t.Fatalf("stage %s: Check returned %T, not a list of spec errors", st.Name, err)
		}
	}
	return errs
}

// TestOptions_Check_Golden checks a spec full of mistakes: every problem
// is reported at once, at the value it is about.
func TestOptions_Check_Golden(t *testing.T) {
	src, err := os.ReadFile("testdata/bad.yaml")
	if err != nil {
		t.Fatal(err)
	}
	errs := checkSpec(t, "bad.yaml", src)
	for _, e := range errs {
		var se *specs.Error
		if !errors.As(e, &se) || se.Pos.Line == 0 {
			t.Errorf("not a positioned spec error: %v", e)
		}
	}
	got := specs.FormatErrors(errs) + "\n"
	golden := filepath.Join("testdata", "bad.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("errors differ from %s (go test -run %s -update to accept):\n%s", golden, t.Name(), got)
	}
}

func TestOptions_Check_Valid(t *testing.T) {
	tests := []struct{ name, run string }{
		{"torchrun", `{argv: [torchrun, --nproc_per_node, "8", scripts/prepare_hidden_states.py, --data-path, "{shard}", --output-path, "{out}/hs/{version}"], outputs: "{out}/hs/{version}/*.ckpt"}`},
		{"rank flags", `{argv: [python, data_generation_offline.py, --world-size, "{count}", --rank, "{index}"], concurrency: 4, on_interrupt: wait}`},
		{"shard only in env", `{argv: [./extract.sh], env: {SHARD: "{shard}"}, grace: 2m}`},
		{"literal braces", `{argv: [kubectl, wait, "job/x-{index}", "-o=jsonpath={.status}", "{{out}}"], on_interrupt: stop}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "version: 1\nname: ok\nstages:\n  - name: h\n    uses: handoff\n    with:\n      run: " + tt.run + "\n"
			if errs := checkSpec(t, "ok.yaml", []byte(src)); len(errs) > 0 {
				t.Errorf("valid options rejected:\n%s", specs.FormatErrors(errs))
			}
		})
	}
}

// TestOptions_Check_Outputs: an outputs glob that could not mean what it
// says (**) or that reaches outside the spec's directory is refused at its
// line before anything runs, unless the spec allows outside paths.
func TestOptions_Check_Outputs(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, outputs string
		allow         bool
		want          string // "" when valid
	}{
		{"under out", "{out}/hs/{version}/*.ckpt", false, ""},
		{"relative inside", "hs/{index}/*.pt", false, ""},
		{"beside the shard", "{shard}.pt", false, ""},
		{"absolute inside", dir + "/hs/{index}.pt", false, ""},
		{"double star", "{out}/hs/**/*.pt", false, "spec.yaml:7:88: stage h: run.outputs \"{out}/hs/**/*.pt\" has **"},
		{"double star even when allowed", "{out}/**", true, "has **"},
		{"absolute outside", "/etc/pass*", false, "spec.yaml:7:88: stage h: run.outputs \"/etc/pass*\" reaches outside the spec's directory"},
		{"climbing out of out", "{out}/../../../etc/*", false, "reaches outside"},
		{"relative outside", "../elsewhere/*.pt", false, "reaches outside"},
		{"outside, allowed", "/data/hs/{index}.pt", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			top := ""
			if tt.allow {
				top = "allow_outside: true\n"
			}
			src := "version: 1\nname: ok\n" + top + "stages:\n  - name: h\n    uses: handoff\n    with:\n      run: {argv: [x, \"{shard}\", \"{out}/hs/{version}/{index}/pt\", \"{index}\"], outputs: \"" + tt.outputs + "\"}\n"
			errs := checkSpec(t, filepath.Join(dir, "spec.yaml"), []byte(src))
			got := specs.FormatErrors(errs)
			switch {
			case tt.want == "" && len(errs) > 0:
				t.Errorf("rejected:\n%s", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("errors:\n%s\nwant %q", got, tt.want)
			}
		})
	}
}
