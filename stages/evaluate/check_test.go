package evaluate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
)

// TestCheck_Positions: each bad option is refused at its line, saying
// what to do.
func TestCheck_Positions(t *testing.T) {
	for _, tc := range []struct {
		name, with string
		line       int
		want       string
	}{
		{"no drafters", "baseline: target", 0, "evaluate needs `drafters:`"},
		{"unknown endpoint", "drafters: [{name: v1, endpoint: nope, files: v1}]", 11, "no endpoint nope in the spec"},
		{"no files", "drafters:\n        - {name: v1, endpoint: spec}", 12, "drafter v1 needs `files:`"},
		{"two names", "drafters:\n        - {name: v1, endpoint: spec, files: v1}\n        - {name: v1, endpoint: other, files: v1}", 13, "two drafters are named v1"},
		{"baseline is a drafter", "drafters: [{name: v1, endpoint: spec, files: v1}]\n      baseline: spec", 12, "baseline spec is drafter v1's endpoint"},
		{"in-process sim", "drafters: [{name: v1, endpoint: sim, files: v1}]", 11, "reports no speculative decoding"},
		{"temperature", "drafters: [{name: v1, endpoint: spec, files: v1}]\n      temperatures: [0, 3]", 12, "temperature 3 is out of range"},
		{"buckets", "drafters: [{name: v1, endpoint: spec, files: v1}]\n      buckets: [4000, 1000]", 12, "buckets [4000 1000] must rise"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(`{"messages":[{"role":"user","content":"hi"}]}`+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			spec := fmt.Sprintf(`version: 1
name: x
state: state.db
datasets: {d: {source: d.jsonl}}
endpoints: {spec: {api: sglang, urls: ["http://127.0.0.1:9"]}, other: {api: sglang, urls: ["http://127.0.0.1:9"]}, target: {api: sglang, urls: ["http://127.0.0.1:9"]}, sim: {api: sim}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - name: evaluate
    uses: evaluate
    with:
      %s
    needs: [load]
`, tc.with)
			err := enginetest.LoadErr(t, dir, spec)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want %q", err, tc.want)
			}
			if tc.line > 0 && !strings.Contains(err.Error(), fmt.Sprintf("spec.yaml:%d:", tc.line)) {
				t.Errorf("error %v; want it at line %d", err, tc.line)
			}
		})
	}
}
