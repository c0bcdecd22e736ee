package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
)

// TestLoad_OutputSafety: a spec writes only inside its own directory unless
// it says otherwise, and never over a file eaglet did not write.
func TestLoad_OutputSafety(t *testing.T) {
	tests := []struct {
		name  string
		spec  func(dir string) string // the spec, given a directory outside it
		setup func(specDir, outside string)
		opts  []engine.LoadOption
		want  string // "" means valid
	}{
		{name: "inside", spec: func(string) string { return mergeBase }},
		{name: "subdirectory to be made", spec: func(string) string {
			return strings.Replace(mergeBase, "out: out.jsonl", "out: runs/x/out.jsonl", 1)
		}},
		{name: "dot-dot", spec: func(string) string {
			return strings.Replace(mergeBase, "out: out.jsonl", "out: ../../out.jsonl", 1)
		}, want: "spec.yaml:14:12: stage m: out ../../out.jsonl is outside the spec's directory (it is "},
		{name: "the advice", spec: func(string) string {
			return strings.Replace(mergeBase, "out: out.jsonl", "out: ../out.jsonl", 1)
		}, want: "); write inside it, or set `allow_outside: true` at the top of the spec (or pass --allow-outside) if this spec may write there"},
		{name: "absolute", spec: func(dir string) string {
			return strings.Replace(mergeBase, "out: out.jsonl", "out: "+dir+"/out.jsonl", 1)
		}, want: "out.jsonl is outside the spec's directory (it is "},
		{name: "through a symbolic link", spec: func(string) string {
			return strings.Replace(mergeBase, "out: out.jsonl", "out: link/out.jsonl", 1)
		}, setup: func(specDir, outside string) {
			os.Symlink(outside, filepath.Join(specDir, "link"))
		}, want: "stage m: out link/out.jsonl is outside the spec's directory"},
		{name: "state outside", spec: func(dir string) string {
			return strings.Replace(mergeBase, "name: v\n", "name: v\nstate: "+dir+"/state.db\n", 1)
		}, want: "spec.yaml:3:8: state "},
		{name: "allowed by the spec", spec: func(dir string) string {
			return "allow_outside: true\n" + strings.Replace(mergeBase, "out: out.jsonl", "out: "+dir+"/out.jsonl", 1)
		}},
		{name: "allowed by the caller", spec: func(dir string) string {
			return strings.Replace(mergeBase, "out: out.jsonl", "out: "+dir+"/out.jsonl", 1)
		}, opts: []engine.LoadOption{engine.AllowOutside()}},
		{name: "a file eaglet did not write", spec: func(string) string { return mergeBase },
			setup: func(specDir, _ string) { os.WriteFile(filepath.Join(specDir, "out.jsonl"), []byte("mine\n"), 0o644) },
			want:  "spec.yaml:14:12: stage m: " + "out.jsonl exists and eaglet did not write it (no out.jsonl.eaglet.json beside it); move it away, choose another out, or set `overwrite: true`"},
		{name: "its .prev", spec: func(string) string { return mergeBase },
			setup: func(specDir, _ string) {
				os.WriteFile(filepath.Join(specDir, "out.jsonl.prev"), []byte("mine\n"), 0o644)
			},
			want: "out.jsonl.prev exists and eaglet did not write it"},
		{name: "overwrite allowed", spec: func(string) string {
			return strings.Replace(mergeBase, "out: out.jsonl", "out: out.jsonl\n      overwrite: true", 1)
		}, setup: func(specDir, _ string) { os.WriteFile(filepath.Join(specDir, "out.jsonl"), []byte("mine\n"), 0o644) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "specs")
			outside := t.TempDir()
			os.MkdirAll(dir, 0o755)
			path := filepath.Join(dir, "spec.yaml")
			os.WriteFile(filepath.Join(dir, "a.jsonl"), nil, 0o644)
			if tt.setup != nil {
				tt.setup(dir, outside)
			}
			if err := os.WriteFile(path, []byte(tt.spec(outside)), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := engine.Load(path, func(string) (string, bool) { return "", false }, tt.opts...)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("spec validated; want %q", tt.want)
			}
			if msg := strings.ReplaceAll(err.Error(), dir+"/", ""); !strings.Contains(msg, tt.want) {
				t.Errorf("error does not contain %q:\n%s", tt.want, msg)
			}
		})
	}
}

// TestLoad_EveryProblemAtOnce: a bad expression in one stage does not hide
// another stage's bad value, which only instances evaluate.
func TestLoad_EveryProblemAtOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "spec.yaml")
	os.WriteFile(filepath.Join(dir, "a.jsonl"), nil, 0o644)
	spec := validBase +
		"  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: -3}}\n" +
		"  - {name: f, uses: filter, needs: [cap], foreach: datasets, with: {keep: \"finish_reasn == 'stop'\"}}\n"
	os.WriteFile(path, []byte(spec), 0o644)
	_, err := engine.Load(path, func(string) (string, bool) { return "", false })
	for _, want := range []string{"cap[a]: max_samples evaluates to -3", `unknown name finish_reasn`, "2 problems"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v; want it to contain %q", err, want)
		}
	}
	// A value of the wrong type, and a stage after one that fails to
	// compile, hide nothing either; a version of the wrong type is not
	// also "missing".
	spec = strings.Replace(validBase, "version: 1", "version: one", 1)
	spec = strings.Replace(spec, "a: {source: a.jsonl}", "a: {source: a.jsonl, weight: heavy}", 1) +
		"  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: \"vars.nope\"}}\n" +
		"  - {name: g, uses: generate, needs: [cap], foreach: datasets, with: {max_tokens: -1}}\n"
	os.WriteFile(path, []byte(spec), 0o644)
	_, err = engine.Load(path, func(string) (string, bool) { return "", false })
	for _, want := range []string{`expected an integer, got "one"`, `expected a number, got "heavy"`, "unknown var nope", "g[a]: max_tokens evaluates to -1", "4 problems"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v; want it to contain %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "missing `version") {
		t.Errorf("err = %v; a version of the wrong type is reported as missing too", err)
	}
}
