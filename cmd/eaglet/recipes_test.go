package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestManagedEndpointRecipes validates every endpoint recipe of
// docs/managed-endpoints.md (the yaml blocks that declare a target) as a
// user pastes it into a spec: a recipe whose keys or placeholders had gone
// stale would be refused here before a user's cluster refused it. The
// schedulers themselves are faked in internal/serve's tests and by
// testdata/fake-slurm.
func TestManagedEndpointRecipes(t *testing.T) {
	doc, err := os.ReadFile("../../docs/managed-endpoints.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(  target:\n.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 6 {
		t.Fatalf("found %d endpoint recipes in docs/managed-endpoints.md, want SGLang, vLLM, the simulator, Slurm, Kubernetes and Ray", len(blocks))
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "p.jsonl"), []byte(`{"messages":[{"role":"user","content":"hi"}]}`+"\n"), 0o644)
	for _, b := range blocks {
		recipe := b[1]
		name := strings.Trim(strings.SplitN(strings.TrimSpace(strings.SplitN(recipe, "argv:", 2)[1]), ",", 2)[0], `["`)
		t.Run(name, func(t *testing.T) {
			spec := filepath.Join(dir, "spec.yaml")
			src := "version: 1\nname: recipe\nstate: s.db\ndatasets:\n  p: {source: p.jsonl, format: messages}\nendpoints:\n" + recipe +
				"stages:\n  - {name: load, uses: load, foreach: datasets}\n  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {endpoint: target, max_tokens: 16}}\n"
			if err := os.WriteFile(spec, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := eagletEnv(map[string]string{"MODEL_PATH": "/models/target"}, "validate", spec)
			if code != exitOK {
				t.Errorf("the recipe does not validate (exit %d):\n%s\n%s%s", code, recipe, out, errOut)
			}
		})
	}
}
