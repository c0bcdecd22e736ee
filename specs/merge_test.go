package specs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/specs"
)

// TestParse_MergeKeys: an endpoint may take another's keys with `<<:`,
// its own keys winning, and a problem in a merged key is reported where
// the key is written.
func TestParse_MergeKeys(t *testing.T) {
	src := `version: 1
name: merge
endpoints:
  target: &server
    api: sglang
    urls: ["http://a:30000"]
    concurrency: 64
  spec-v1:
    <<: *server
    urls: ["http://b:30000"]
  spec-v2:
    <<: [*server]
    concurrency: 8
datasets: {d: {source: d.jsonl}}
stages:
  - {name: load, uses: load, foreach: datasets}
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(`{"messages":[{"role":"user","content":"hi"}]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "spec.yaml")
	s, err := specs.Parse(path, []byte(src), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, url string
		conc      int
	}{{"target", "http://a:30000", 64}, {"spec-v1", "http://b:30000", 64}, {"spec-v2", "http://a:30000", 8}} {
		ep := s.Endpoint(tc.name)
		if ep == nil || ep.API != "sglang" || ep.URLs[0] != tc.url || ep.Concurrency.N != tc.conc {
			t.Errorf("%s: %+v; want api sglang, url %s, concurrency %d", tc.name, ep, tc.url, tc.conc)
		}
	}
	bad := strings.Replace(src, "    concurrency: 64\n", "    concurrency: lots\n", 1)
	_, err = specs.Parse(path, []byte(bad), func(string) (string, bool) { return "", false })
	if err == nil || !strings.Contains(err.Error(), "spec.yaml:7:") || strings.Contains(err.Error(), "<<") {
		t.Errorf("a bad merged value: %v; want it at line 7, where it is written", err)
	}
	notMap := strings.Replace(src, "<<: [*server]", "<<: 3", 1)
	if _, err = specs.Parse(path, []byte(notMap), func(string) (string, bool) { return "", false }); err == nil || !strings.Contains(err.Error(), "spec.yaml:12:") {
		t.Errorf("<< of a scalar: %v; want an error at line 12", err)
	}
}
