package filter_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	_ "github.com/eaglet-dev/eaglet/stages/all"
)

// TestRules_SpecErrors: every bad rule is reported at once, at its line
// and column, saying what to write instead.
func TestRules_SpecErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(`{"messages":[{"role":"user","content":"q"}]}`+"\n"), 0o644)
	spec := `version: 1
name: r
state: s.db
datasets: {d: {source: d.jsonl}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - name: f
    uses: filter
    needs: [load]
    foreach: datasets
    with:
      rules:
        max_repeat_ngram_ratio: 1.5
        min_completion_tokens: 100
        max_completion_tokens: 50
        think_start: "<t>"
`
	err := enginetest.LoadErr(t, dir, spec)
	if err == nil {
		t.Fatal("a spec with bad rules loaded")
	}
	for _, want := range []string{
		"spec.yaml:13:33: stage f: rules: max_repeat_ngram_ratio is 1.5; use a share between 0 and 1",
		"spec.yaml:15:32: stage f: rules: max_completion_tokens 50 is below min_completion_tokens 100",
		"spec.yaml:16:22: stage f: rules: set both think_start and think_end",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
}

// TestRules_Validate: rules alone make a filter; none at all is an error.
func TestRules_Validate(t *testing.T) {
	tests := []struct {
		with, want string
	}{
		{"{rules: {empty_answer: true}}", ""},
		{"{rules: {}}", "filter needs `rules:`, `keep:` or `drop:`"},
		{"{rules: {empty_answer: false}, keep: 'true'}", ""},
		{"{rules: {empty_answers: true}}", `spec.yaml:7:78: unknown key "empty_answers" (did you mean "empty_answer"?)`},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(`{"messages":[{"role":"user","content":"q"}]}`+"\n"), 0o644)
		spec := "version: 1\nname: r\nstate: s.db\ndatasets: {d: {source: d.jsonl}}\nstages:\n" +
			"  - {name: load, uses: load, foreach: datasets}\n" +
			"  - {name: f, uses: filter, needs: [load], foreach: datasets, with: " + tt.with + "}\n"
		err := enginetest.LoadErr(t, dir, spec)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("with %s: %v", tt.with, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("with %s: error %v; want %q", tt.with, err, tt.want)
		}
	}
}
