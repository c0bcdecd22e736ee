package main

import (
	"os"
	"strings"
	"testing"
)

// TestCLI_EndpointOptionsCheckedUsedOrNot: a misspelt backend option is a
// spec error at its position whether a stage uses the endpoint or not; it
// used to pass validate on an unused endpoint and fail once a stage used it.
func TestCLI_EndpointOptionsCheckedUsedOrNot(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"used", "options: {seed: 7, mean_tokens: 300, speed: 0}", "options: {seed: 7, mean_tokenz: 300, speed: 0}",
			`:20:24: unknown key "mean_tokenz" (did you mean "mean_tokens"?)`},
		{"unused", "  sim:\n", "  spare: {api: sim, options: {sigmaa: 0.5}}\n  sim:\n",
			`:16:31: unknown key "sigmaa" (did you mean "sigma"?)`},
		{"unused, not an API", "  sim:\n", "  spare: {api: sglangg, urls: [\"http://127.0.0.1:1\"]}\n  sim:\n",
			`:16:10: endpoint spare: unknown api "sglangg" (did you mean "sglang"?); use one of openai, sglang, sim`},
		{"unused, no urls", "  sim:\n", "  spare: {api: openai, options: {stream: true}}\n  sim:\n",
			`:16:10: endpoint spare: api openai needs ` + "`urls:`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := quickSpec(t)
			src, _ := os.ReadFile(path)
			if !strings.Contains(string(src), tc.old) {
				t.Fatalf("the quickstart has no %q", tc.old)
			}
			os.WriteFile(path, []byte(strings.Replace(string(src), tc.old, tc.new, 1)), 0o644)
			for _, cmd := range []string{"validate", "plan"} {
				code, _, errOut := eaglet(cmd, path)
				if code != exitSpec || !strings.Contains(errOut, path+tc.want) {
					t.Errorf("eaglet %s: exit %d, want %d with %s%s in:\n%s", cmd, code, exitSpec, path, tc.want, errOut)
				}
				if n := strings.Count(errOut, path+":"); n != 1 {
					t.Errorf("eaglet %s reports %d problems; want the one:\n%s", cmd, n, errOut)
				}
			}
		})
	}
}
